//! The chain runner: executes a [`Plan`] through a [`StepHost`], with conditions, retries with
//! exponential backoff and jitter, per-attempt timeouts, `on_failure` policies, an overall deadline
//! and rollback. Time and sleeping come from the host, so tests drive them with an injected clock.
//!
//! - A step runs when all its dependencies have finished (done, skipped, warned or fallen back).
//!   A skipped step's outputs are simply absent for the steps after it.
//! - `conditional_execution` false → the step is skipped (`condition false`, naming the variables
//!   it read that had no value and why).
//! - `input_variables` are checked before the step runs: each one without a value is a warning in
//!   the step's report naming the step that should have produced it (or an error, with
//!   [`RunOptions::strict_inputs`]); so is a placeholder of its `input_template` that had no value.
//! - Attempts: the first plus `retry_config.max_retries`; the delay before attempt n+1 is
//!   `backoff_ms × 2^(n-1)`, plus up to 25 % jitter. Validation and permission errors are never
//!   retried; with `retry_on_errors`, only errors of those codes are ([`codes`]). A step without
//!   `retry_config` retries transient errors with the seed's defaults when
//!   [`RunOptions::auto_retry`] is on.
//! - After the last attempt: `fail` stops the chain, `warn` and `skip` record it and go on,
//!   `fallback` runs the `fallback_step` in its place (its failure fails the chain). A condition
//!   that cannot be evaluated and an `input_template` that cannot be rendered are failures of the
//!   step like any other, under the same `on_failure`.
//! - A completed run's variables are checked against the chain's `output_schema`; a missing or
//!   mistyped output fails the run (and rolls it back).
//! - Past the deadline no further step starts and the chain ends `timed_out`.
//! - A step that needs input nobody can give now (an `instruction_set` step without a model) ends
//!   its batch and pauses the run (`awaiting_input`); [`RunReport::supply`] takes the outputs and
//!   the run continues from there.
//! - Before each batch and each retry the runner asks the host whether to go on; a stop request
//!   ends the run `cancelled` (a step under way finishes first).
//! - After each batch the host gets a checkpoint: a run interrupted later continues from the last one
//!   (a step under way at the interruption runs again).
//! - A chain that ends `failed`, `timed_out` or `cancelled` with rollback enabled runs the `rollback_action` of
//!   its completed steps in reverse completion order (a `database_operation` step, or one whose
//!   fallback is one, is always undone, with or without one); each rollback failure is reported.

use futures::future::{join_all, select, Either, LocalBoxFuture};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::chain::{OnFailure, Plan, PlannedStep, RetryConfig, StepDef, StepType};
use super::expr::{truthy, Limits};
use super::template::RenderOptions;
use super::variables::get_path;

/// Why a step attempt failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "class", content = "code")]
pub enum ErrorClass {
    /// Worth retrying (`api_timeout`, `vendor_unavailable`, `timeout`, …).
    Transient(String),
    /// Bad input: retrying cannot help.
    Validation,
    /// Not allowed: retrying cannot help.
    Permission,
    /// The step needs outputs that only the client can supply now; the run pauses.
    AwaitingInput,
}

/// A failed attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepError {
    /// Its class.
    pub class: ErrorClass,
    /// What happened.
    pub message: String,
    /// For [`ErrorClass::AwaitingInput`]: what the client needs to produce the outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Value>,
}

impl StepError {
    /// A transient error with a code.
    pub fn transient(code: &str, message: impl Into<String>) -> Self {
        StepError {
            class: ErrorClass::Transient(code.to_string()),
            message: message.into(),
            prompt: None,
        }
    }

    /// An error of a class that is never retried.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        StepError {
            class,
            message: message.into(),
            prompt: None,
        }
    }

    fn retryable(&self, only: Option<&Vec<String>>) -> bool {
        match &self.class {
            ErrorClass::Transient(code) => {
                only.is_none_or(|listed| listed.iter().any(|l| codes::covers(l, code)))
            }
            ErrorClass::Validation | ErrorClass::Permission | ErrorClass::AwaitingInput => false,
        }
    }
}

/// The codes of transient step errors, as `retry_on_errors` names them (docs/chains.md, "Error
/// codes"). The seed's own names are the ones steps produce.
pub mod codes {
    /// An attempt ran past the step's `timeout_ms`, or the tool or model it called timed out.
    pub const API_TIMEOUT: &str = "api_timeout";
    /// The outside service a step reaches through a tool (Duffel, Google, a domain database)
    /// was unavailable, or a model reported that a vendor was.
    pub const VENDOR_UNAVAILABLE: &str = "vendor_unavailable";
    /// The model provider (`MODEL_PROVIDER_URL`) answered 429 or 5xx, or could not be reached.
    pub const MODEL_UNAVAILABLE: &str = "model_unavailable";
    /// The model's answer was not a JSON object with the step's output variables.
    pub const MODEL_OUTPUT: &str = "model_output";
    /// The nested tool call was over the caller's rate limit.
    pub const RATE_LIMITED: &str = "rate_limited";
    /// A record changed between the step's read and its write; nothing was written.
    pub const CONFLICT: &str = "conflict";
    /// This server's storage (D1) failed.
    pub const STORAGE: &str = "storage";
    /// The client failed to answer a sampling request.
    pub const CLIENT: &str = "client";

    /// Every code steps produce, for documentation and checks.
    pub const ALL: [&str; 8] = [
        API_TIMEOUT,
        VENDOR_UNAVAILABLE,
        MODEL_UNAVAILABLE,
        MODEL_OUTPUT,
        RATE_LIMITED,
        CONFLICT,
        STORAGE,
        CLIENT,
    ];

    /// The code an earlier name stands for: `timeout` and `unavailable` were produced before the
    /// seed's names, and chains saved then still list them.
    pub fn canonical(code: &str) -> &str {
        match code {
            "timeout" => API_TIMEOUT,
            "unavailable" => VENDOR_UNAVAILABLE,
            other => other,
        }
    }

    /// Whether `listed` (an entry of `retry_on_errors`) covers an error of code `code`:
    /// the same code under either name, and `vendor_unavailable` also covers the model
    /// provider's outages (the vendor an instruction step calls).
    pub fn covers(listed: &str, code: &str) -> bool {
        let (listed, code) = (canonical(listed), canonical(code));
        listed == code || (listed == VENDOR_UNAVAILABLE && code == MODEL_UNAVAILABLE)
    }

    /// A code as a model might write it (`"Vendor unavailable"`, `"API-Timeout"`) in the form
    /// `retry_on_errors` uses: lowercase, `_` between words, at most 64 characters; `None` when
    /// nothing of it is left.
    pub fn normalize(text: &str) -> Option<String> {
        let mut out = String::new();
        for c in text.trim().chars().take(64) {
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_lowercase());
            } else if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
        }
        let out = out.trim_end_matches('_').to_string();
        (!out.is_empty()).then_some(out)
    }
}

/// The retry rules of a step without `retry_config` when transient failures are retried
/// automatically (`configuration.auto_retry_transient_failures`): the seed's defaults.
pub fn auto_retry_config() -> RetryConfig {
    RetryConfig {
        max_retries: 3,
        backoff_ms: 1000,
        retry_on_errors: None,
    }
}

/// A model's (or client's) answer for an instruction step, made to mean what the model meant:
/// the text `"true"` or `"false"` becomes the boolean, since conditions compare with `true` and
/// templates declare booleans. Returns a warning per value changed.
pub fn normalize_answer(outputs: &mut Map<String, Value>) -> Vec<String> {
    let mut warnings = Vec::new();
    for (k, v) in outputs.iter_mut() {
        let Some(b) = v
            .as_str()
            .and_then(|t| match t.trim().to_ascii_lowercase().as_str() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            })
        else {
            continue;
        };
        warnings.push(format!(
            "{k}: the answer was the text {v}; taken as the boolean {b}"
        ));
        *v = Value::Bool(b);
    }
    warnings
}

/// Largest rendered input of a step, in bytes: the execution's record keeps every step's input,
/// and a D1 row holds at most 2 MB. A larger one fails the step and is not kept.
pub const MAX_STEP_INPUT_BYTES: usize = 256 * 1024;

/// A step attempt's result: its output variables, or why it failed.
pub type StepOutcome = Result<Map<String, Value>, StepError>;

/// What the runner needs from the world.
pub trait StepHost {
    /// Runs one attempt of a step with its rendered input; returns the step's output variables.
    fn run_step<'a>(
        &'a self,
        step: &'a StepDef,
        input: Option<String>,
        vars: &'a Value,
    ) -> LocalBoxFuture<'a, StepOutcome>;
    /// Undoes a completed step (its `rollback_action`, and a `database_operation`'s writes).
    /// `vars` are the chain's variables when the chain ended; `outputs` are the step's own.
    fn rollback_step<'a>(
        &'a self,
        step: &'a StepDef,
        outputs: &'a Map<String, Value>,
        vars: &'a Value,
    ) -> LocalBoxFuture<'a, Result<(), StepError>>;
    /// Waits.
    fn sleep(&self, ms: u64) -> LocalBoxFuture<'_, ()>;
    /// Milliseconds on the host's clock.
    fn now_ms(&self) -> f64;
    /// Called when a step changes state (for progress notifications and events).
    fn on_step(&self, report: &StepReport);
    /// Whether to go on; false stops the run at the next batch or retry (`cancelled`).
    fn should_continue(&self) -> bool;
    /// Keeps the run's state after a batch, so an interrupted run can continue from it.
    fn checkpoint<'a>(&'a self, report: &'a RunReport) -> LocalBoxFuture<'a, ()>;
    /// What the host noted about the step's last attempts (an answer it had to convert, say),
    /// taken once: it goes into the step's report as warnings.
    fn take_warnings(&self, _step: &StepDef) -> Vec<String> {
        Vec::new()
    }
}

/// How to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// Ready steps marked `parallel_execution` run concurrently.
    pub parallel: bool,
    /// Roll back completed steps when the chain fails.
    pub rollback: bool,
    /// Overall limit in milliseconds.
    pub max_execution_ms: u64,
    /// Seed of the backoff jitter (fixed in tests).
    pub jitter_seed: u64,
    /// Steps without `retry_config` retry transient errors with [`auto_retry_config`].
    pub auto_retry: bool,
    /// A missing input variable or `input_template` value fails the step instead of warning.
    pub strict_inputs: bool,
}

/// A step's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    /// Not started.
    Pending,
    /// Finished; outputs merged.
    Done,
    /// Not run (`condition false`) or failed with `on_failure: skip`.
    Skipped,
    /// Failed with `on_failure: warn`.
    Warned,
    /// Failed; its fallback step produced the outputs.
    FellBack,
    /// Failed; the chain failed.
    Failed,
    /// Waits for outputs from the client ([`RunReport::supply`]).
    AwaitingInput,
    /// Not started because the chain ended first.
    NotRun,
}

/// One attempt's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// Start, on the host clock.
    pub started_ms: f64,
    /// Duration.
    pub duration_ms: f64,
    /// The error, when it failed.
    pub error: Option<StepError>,
}

/// A step's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// Step id.
    pub id: u32,
    /// Step name.
    pub name: String,
    /// State.
    pub state: StepState,
    /// Why it was skipped, warned or failed.
    pub reason: Option<String>,
    /// Rendered input, when it had an input_template.
    #[serde(default)]
    pub input: Option<String>,
    /// Attempts in order (absent from a final report that keeps no intermediate results).
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    /// Outputs it produced (absent like `attempts`).
    #[serde(default)]
    pub outputs: Map<String, Value>,
    /// Completion order (for rollback), when done.
    pub completed: Option<usize>,
    /// While awaiting input: what the client needs to produce the outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Value>,
    /// What went less than right without failing the step: inputs without a value, answers
    /// that had to be converted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl StepState {
    /// The state's name, as in reports (`done`, `not_run`, …).
    pub fn as_str(&self) -> &'static str {
        match self {
            StepState::Pending => "pending",
            StepState::Done => "done",
            StepState::Skipped => "skipped",
            StepState::Warned => "warned",
            StepState::FellBack => "fell_back",
            StepState::Failed => "failed",
            StepState::AwaitingInput => "awaiting_input",
            StepState::NotRun => "not_run",
        }
    }
}

/// Where the chain is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Under way (or interrupted, to be continued from its checkpoint).
    Running,
    /// Paused until the client supplies a step's outputs.
    AwaitingInput,
    /// Every step finished.
    Completed,
    /// A step failed, or the run was interrupted for good.
    Failed,
    /// The deadline passed.
    TimedOut,
    /// Stopped on request.
    Cancelled,
}

impl RunStatus {
    /// The status's name, as in reports and `chain_executions.status`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::AwaitingInput => "awaiting_input",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::TimedOut => "timed_out",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the run is over for good.
    pub fn is_final(self) -> bool {
        !matches!(self, RunStatus::Running | RunStatus::AwaitingInput)
    }
}

/// One rollback's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollback {
    /// Step id.
    pub id: u32,
    /// `rolled_back` or `rollback_failed`.
    pub outcome: String,
    /// The error, when it failed.
    pub error: Option<String>,
}

/// The whole run, and the checkpoint it continues from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Where it is.
    pub status: RunStatus,
    /// Step reports in position order.
    pub steps: Vec<StepReport>,
    /// The chain's variables at the end (inputs plus outputs).
    pub variables: Value,
    /// The failing step, when failed.
    pub failed_step: Option<String>,
    /// Rollbacks performed, in the order run.
    pub rollbacks: Vec<Rollback>,
    /// Why the run as a whole ended early (cancelled, interrupted), when it did.
    #[serde(default)]
    pub error: Option<String>,
    /// Steps completed so far (the next completion number).
    #[serde(default)]
    pub completed: usize,
    /// Time spent running, over all its runs (pauses excluded), in milliseconds.
    #[serde(default)]
    pub elapsed_ms: f64,
    /// Jitter generator state.
    #[serde(default)]
    pub rng: u64,
}

impl RunReport {
    /// A run that has not started: every step pending.
    pub fn start(plan: &Plan, inputs: Value, jitter_seed: u64) -> RunReport {
        RunReport {
            status: RunStatus::Running,
            steps: plan
                .steps
                .iter()
                .map(|s| StepReport {
                    id: s.def.id,
                    name: s.def.name.clone(),
                    state: StepState::Pending,
                    reason: None,
                    input: None,
                    attempts: Vec::new(),
                    outputs: Map::new(),
                    completed: None,
                    prompt: None,
                    warnings: Vec::new(),
                })
                .collect(),
            variables: if inputs.is_object() {
                inputs
            } else {
                Value::Object(Map::new())
            },
            failed_step: None,
            rollbacks: Vec::new(),
            error: None,
            completed: 0,
            elapsed_ms: 0.0,
            rng: jitter_seed,
        }
    }

    /// The output variables the paused steps wait for.
    pub fn awaited(&self, plan: &Plan) -> Vec<String> {
        self.steps
            .iter()
            .zip(&plan.steps)
            .filter(|(r, _)| r.state == StepState::AwaitingInput)
            .flat_map(|(_, s)| s.def.output_variables.iter().cloned())
            .collect()
    }

    /// Completes the paused steps with outputs the client supplies, so the run can go on. Every
    /// awaited variable must be given, and nothing else.
    pub fn supply(&mut self, plan: &Plan, outputs: &Map<String, Value>) -> Result<(), Vec<String>> {
        if self.status != RunStatus::AwaitingInput {
            return Err(vec![format!(
                "the execution is {}, not awaiting_input",
                self.status.as_str()
            )]);
        }
        let awaited = self.awaited(plan);
        let mut problems: Vec<String> = awaited
            .iter()
            .filter(|k| !outputs.contains_key(*k))
            .map(|k| format!("outputs.{k} is missing"))
            .collect();
        problems.extend(outputs.keys().filter(|k| !awaited.contains(k)).map(|k| {
            format!(
                "outputs.{k} is not awaited (awaited: {})",
                awaited.join(", ")
            )
        }));
        if !problems.is_empty() {
            return Err(problems);
        }
        for (i, s) in plan.steps.iter().enumerate() {
            if self.steps[i].state != StepState::AwaitingInput {
                continue;
            }
            let mut out = crate::engine::sort::object(
                s.def
                    .output_variables
                    .iter()
                    .filter_map(|k| outputs.get(k).map(|v| (k.clone(), v.clone()))),
            );
            let converted = normalize_answer(&mut out);
            self.steps[i].warnings.extend(converted);
            self.steps[i].prompt = None;
            self.steps[i].reason = Some("outputs supplied by the client".into());
            finish_step(
                &mut self.steps[i],
                &mut self.variables,
                out,
                StepState::Done,
                &mut self.completed,
            );
        }
        self.status = RunStatus::Running;
        Ok(())
    }
}

/// xorshift64*: a small deterministic generator for jitter.
fn next_random(state: &mut u64) -> f64 {
    let mut x = (*state).max(1);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

/// Delay before attempt `n + 1` (n ≥ 1): exponential from `base`, plus up to 25 % jitter.
pub fn backoff_ms(base: u64, n: u32, jitter: f64) -> u64 {
    let exp = base.saturating_mul(1u64 << (n - 1).min(20));
    exp.saturating_add((exp as f64 * 0.25 * jitter) as u64)
}

/// Attempts a step until it succeeds, fails for good or runs out of retries. No retry starts past
/// the run's `deadline` (nor one whose backoff would end past it): the run's time limit bounds
/// its retries too.
#[allow(clippy::too_many_arguments)]
async fn attempt_step(
    host: &dyn StepHost,
    step: &StepDef,
    input: Option<String>,
    vars: &Value,
    rng: &mut u64,
    report: &mut StepReport,
    deadline: f64,
    auto_retry: bool,
) -> StepOutcome {
    let retry = step
        .retry_config
        .clone()
        .or_else(|| auto_retry.then(auto_retry_config));
    let max = retry.as_ref().map_or(0, |r| r.max_retries);
    let mut n = 0;
    loop {
        let started = host.now_ms();
        let run = host.run_step(step, input.clone(), vars);
        let result = match step.timeout_ms {
            Some(limit) => match select(run, host.sleep(limit)).await {
                Either::Left((r, _)) => r,
                Either::Right(_) => Err(StepError::transient(
                    codes::API_TIMEOUT,
                    format!("attempt took longer than {limit} ms (timeout_ms)"),
                )),
            },
            None => run.await,
        };
        let duration = host.now_ms() - started;
        report.attempts.push(Attempt {
            started_ms: started,
            duration_ms: duration,
            error: result.as_ref().err().cloned(),
        });
        match result {
            Ok(out) => return Ok(out),
            Err(e)
                if n < max
                    && e.retryable(retry.as_ref().and_then(|r| r.retry_on_errors.as_ref()))
                    && host.should_continue() =>
            {
                n += 1;
                let base = retry.as_ref().map_or(1000, |r| r.backoff_ms);
                let wait = backoff_ms(base, n, next_random(rng));
                if host.now_ms() + wait as f64 >= deadline {
                    return Err(e);
                }
                host.sleep(wait).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Runs a planned chain over `inputs` (an object of the chain's input variables) from the start.
pub async fn run(plan: &Plan, inputs: Value, host: &dyn StepHost, opts: RunOptions) -> RunReport {
    proceed(
        plan,
        RunReport::start(plan, inputs, opts.jitter_seed),
        host,
        opts,
    )
    .await
}

/// Runs a chain on from `report` (a fresh start, a checkpoint, or a paused run whose outputs were
/// supplied) until it ends or pauses.
pub async fn proceed(
    plan: &Plan,
    mut report: RunReport,
    host: &dyn StepHost,
    opts: RunOptions,
) -> RunReport {
    let mut mark = host.now_ms();
    let deadline = mark + (opts.max_execution_ms as f64 - report.elapsed_ms).max(0.0);
    report.status = RunStatus::Running;
    // A step interrupted mid-run (its checkpoint still says pending) simply runs again.
    loop {
        let ready: Vec<usize> = (0..plan.steps.len())
            .filter(|&i| report.steps[i].state == StepState::Pending)
            .filter(|&i| {
                plan.steps[i].deps.iter().all(|&d| {
                    !matches!(
                        report.steps[d].state,
                        StepState::Pending | StepState::AwaitingInput
                    )
                })
            })
            .collect();
        if ready.is_empty() {
            break;
        }
        if host.now_ms() >= deadline {
            report.status = RunStatus::TimedOut;
            break;
        }
        if !host.should_continue() {
            report.status = RunStatus::Cancelled;
            break;
        }
        let batch: Vec<usize> = if opts.parallel && plan.steps[ready[0]].def.parallel_execution {
            ready
                .iter()
                .copied()
                .filter(|&i| plan.steps[i].def.parallel_execution)
                .collect()
        } else {
            vec![ready[0]]
        };
        run_batch(plan, &batch, &mut report, host, deadline, opts).await;
        if let Some(f) = report.steps.iter().find(|r| r.state == StepState::Failed) {
            // A step that failed once the time was up (its retries stopped at the deadline)
            // ends the run as timed out, not as an ordinary failure.
            report.status = if host.now_ms() >= deadline {
                RunStatus::TimedOut
            } else {
                RunStatus::Failed
            };
            report.failed_step = Some(f.name.clone());
            break;
        }
        if report
            .steps
            .iter()
            .any(|r| r.state == StepState::AwaitingInput)
        {
            report.status = RunStatus::AwaitingInput;
            break;
        }
        let now = host.now_ms();
        report.elapsed_ms += now - mark;
        mark = now;
        host.checkpoint(&report).await;
    }
    report.elapsed_ms += host.now_ms() - mark;
    if report.status == RunStatus::Running {
        report.status = RunStatus::Completed;
        let problems = output_problems(plan, &report.variables);
        if !problems.is_empty() {
            report.status = RunStatus::Failed;
            report.error = Some(format!(
                "the run's outputs do not match the chain's output_schema: {}; make the steps that produce them answer as declared, or correct the output_schema",
                problems.join("; ")
            ));
        }
    }
    if report.status.is_final() {
        for r in report
            .steps
            .iter_mut()
            .filter(|r| r.state == StepState::Pending)
        {
            r.state = StepState::NotRun;
        }
        if report.status != RunStatus::Completed && opts.rollback {
            rollback(plan, &mut report, host).await;
        }
    }
    report
}

/// Why each of the chain's declared outputs (`output_schema`) is missing or of another type in a
/// completed run's variables.
pub fn output_problems(plan: &Plan, vars: &Value) -> Vec<String> {
    plan.outputs
        .iter()
        .filter_map(
            |(name, kind)| match get_path(vars, name).filter(|v| !v.is_null()) {
                None => Some(format!("{name} is missing")),
                Some(v) if !kind.accepts(v) => Some(format!(
                    "{name} must be of type {}, got {}",
                    kind.as_str(),
                    super::clip(&v.to_string(), 80)
                )),
                Some(_) => None,
            },
        )
        .collect()
}

fn step_label(def: &StepDef) -> String {
    format!("step {} '{}'", def.id, def.name)
}

/// Why variable `root` has no value when step `i` is about to run: the step that outputs it was
/// skipped, warned or has not run, or nothing outputs it at all; with the fix.
fn why_missing(plan: &Plan, reports: &[StepReport], i: usize, root: &str) -> String {
    let producer = (0..plan.steps.len())
        .filter(|&j| j != i && plan.steps[j].def.output_variables.iter().any(|o| o == root))
        .min_by_key(|&j| (j > i, i.abs_diff(j)));
    let Some(j) = producer else {
        if plan.inputs.iter().any(|i| i == root) {
            return "it is an optional input of the chain and was not given; pass it in execute_chain's variables (or give it a default in the chain's input_schema)".into();
        }
        return "it is not among the chain's input variables and no step outputs it; pass it in execute_chain's variables (or give it a default in the chain's input_schema)".into();
    };
    let by = step_label(&plan.steps[j].def);
    let reason = reports[j]
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    let what = match reports[j].state {
        StepState::Skipped => format!("{by}, which outputs it, was skipped{reason}"),
        StepState::Warned => format!("{by}, which outputs it, failed (on_failure: warn){reason}"),
        StepState::Done | StepState::FellBack => {
            format!("{by}, which outputs it, finished without a value for it")
        }
        _ => format!("{by}, which outputs it, has not run before this step (add it to depends_on)"),
    };
    format!("{what}; give it a default (a default in the chain's input_schema, or `default(…)` in the template), or guard this step with conditional_execution")
}

/// The warnings of step `i`'s declared `input_variables` that have no value.
fn missing_inputs(plan: &Plan, reports: &[StepReport], i: usize, vars: &Value) -> Vec<String> {
    plan.steps[i]
        .def
        .input_variables
        .iter()
        .filter(|name| get_path(vars, name).is_none_or(Value::is_null))
        .map(|name| {
            let root = name.split(['.', '[']).next().unwrap_or(name);
            format!(
                "input variable {name} has no value: {}",
                why_missing(plan, reports, i, root)
            )
        })
        .collect()
}

/// The reason of a step skipped by its condition: `condition false`, and the variables the
/// condition read that had no value, with why.
fn skip_reason(plan: &Plan, reports: &[StepReport], i: usize, vars: &Value) -> String {
    let mut reason = "condition false".to_string();
    let Some(cond) = &plan.steps[i].condition else {
        return reason;
    };
    let mut seen: Vec<String> = Vec::new();
    for var in cond.variables() {
        let root = var.split(['.', '[']).next().unwrap_or(&var).to_string();
        if seen.contains(&root) || get_path(vars, &root).is_some_and(|v| !v.is_null()) {
            continue;
        }
        reason.push_str(&format!(
            " ({root} has no value: {})",
            why_missing(plan, reports, i, &root)
        ));
        seen.push(root);
    }
    reason
}

/// Step `i`'s input: its `input_template` rendered over `vars` (none without one), adding to
/// `warnings` each variable it does not declare that rendered as empty text; `Err`: why the step
/// cannot run.
fn step_input(
    plan: &Plan,
    reports: &[StepReport],
    i: usize,
    vars: &Value,
    strict: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<String>, String> {
    let step = &plan.steps[i];
    let Some(template) = &step.input else {
        return Ok(None);
    };
    let render = RenderOptions {
        strict,
        ..RenderOptions::default()
    };
    let r = template
        .render(vars, render)
        .map_err(|e| format!("input_template: {e}"))?;
    for path in &r.missing {
        let root = path.split(['.', '[']).next().unwrap_or(path);
        let declared = step
            .def
            .input_variables
            .iter()
            .any(|v| v == path || v.split(['.', '[']).next() == Some(root));
        if !declared {
            warnings.push(format!(
                "input_template: {path} has no value and rendered as empty text: {}",
                why_missing(plan, reports, i, root)
            ));
        }
    }
    let text = r.text();
    if text.len() > MAX_STEP_INPUT_BYTES {
        // Not kept: the execution's record must stay within a D1 row.
        return Err(format!(
            "input_template rendered {} bytes; a step's input is limited to {MAX_STEP_INPUT_BYTES} bytes (the execution's record keeps it)",
            text.len()
        ));
    }
    Ok(Some(text))
}

/// Decides conditions and inputs of a batch against the variables as they are before it, runs its
/// steps (concurrently) and records their outcomes. A condition or input that fails is the step's
/// failure, under its `on_failure`.
async fn run_batch(
    plan: &Plan,
    batch: &[usize],
    report: &mut RunReport,
    host: &dyn StepHost,
    deadline: f64,
    opts: RunOptions,
) {
    let vars = &mut report.variables;
    let reports = &mut report.steps;
    let mut jobs = Vec::new();
    let mut settled: Vec<(usize, StepOutcome)> = Vec::new();
    let invalid = |why: String| -> StepOutcome { Err(StepError::new(ErrorClass::Validation, why)) };
    for &i in batch {
        let step = &plan.steps[i];
        if let Some(cond) = &step.condition {
            match cond.eval(vars, Limits::default()) {
                Ok(v) if !truthy(&v.value) => {
                    reports[i].reason = Some(skip_reason(plan, reports, i, vars));
                    reports[i].state = StepState::Skipped;
                    host.on_step(&reports[i]);
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    settled.push((i, invalid(format!("conditional_execution: {e}"))));
                    continue;
                }
            }
        }
        let mut warnings = missing_inputs(plan, reports, i, vars);
        if opts.strict_inputs && !warnings.is_empty() {
            let why = warnings.join("; ") + " (the chain is strict: configuration.strict_inputs)";
            settled.push((i, invalid(why)));
            continue;
        }
        match step_input(plan, reports, i, vars, opts.strict_inputs, &mut warnings) {
            Ok(input) => {
                reports[i].warnings.extend(warnings);
                reports[i].input = input.clone();
                jobs.push((i, input));
            }
            Err(why) => settled.push((i, invalid(why))),
        }
    }
    let snapshot = vars.clone();
    let mut seeds: Vec<u64> = jobs
        .iter()
        .map(|_| {
            next_random(&mut report.rng);
            report.rng
        })
        .collect();
    let outcomes = join_all(jobs.iter().zip(seeds.iter_mut()).map(|((i, input), seed)| {
        let step = &plan.steps[*i];
        let snapshot = &snapshot;
        let mut report = reports[*i].clone();
        async move {
            let r = attempt_step(
                host,
                &step.def,
                input.clone(),
                snapshot,
                seed,
                &mut report,
                deadline,
                opts.auto_retry,
            )
            .await;
            (*i, r, report)
        }
    }))
    .await;
    for (i, result, step_report) in outcomes {
        reports[i] = step_report;
        let noted = host.take_warnings(&plan.steps[i].def);
        reports[i].warnings.extend(noted);
        settled.push((i, result));
    }
    for (i, result) in settled {
        let step: &PlannedStep = &plan.steps[i];
        let result = result.map(|mut out| {
            if step.def.kind == StepType::InstructionSet {
                let converted = normalize_answer(&mut out);
                reports[i].warnings.extend(converted);
            }
            out
        });
        // A failure after warnings about missing inputs is likely their doing: say so.
        let result = result.map_err(|mut e| {
            let missing: Vec<&str> = reports[i]
                .warnings
                .iter()
                .map(String::as_str)
                .filter(|w| w.contains(" has no value"))
                .collect();
            if !missing.is_empty() && e.class != ErrorClass::AwaitingInput {
                e.message = format!(
                    "{}. Inputs without a value: {}",
                    e.message.trim_end_matches('.'),
                    missing.join("; ")
                );
            }
            e
        });
        match result {
            Ok(out) => {
                finish_step(
                    &mut reports[i],
                    vars,
                    out,
                    StepState::Done,
                    &mut report.completed,
                );
            }
            Err(e) if e.class == ErrorClass::AwaitingInput => {
                reports[i].state = StepState::AwaitingInput;
                reports[i].reason = Some(e.message);
                reports[i].prompt = e.prompt;
            }
            Err(e) => match step.def.on_failure {
                OnFailure::Fallback => {
                    let fallback = fallback_def(&step.def);
                    match host
                        .run_step(&fallback, reports[i].input.clone(), vars)
                        .await
                    {
                        Ok(out) => {
                            reports[i].reason = Some(e.message);
                            finish_step(
                                &mut reports[i],
                                vars,
                                out,
                                StepState::FellBack,
                                &mut report.completed,
                            );
                        }
                        Err(fe) => {
                            reports[i].state = StepState::Failed;
                            reports[i].reason =
                                Some(format!("{}; fallback failed: {}", e.message, fe.message));
                        }
                    }
                }
                other => {
                    reports[i].state = match other {
                        OnFailure::Warn => StepState::Warned,
                        OnFailure::Skip => StepState::Skipped,
                        OnFailure::Fail | OnFailure::Fallback => StepState::Failed,
                    };
                    reports[i].reason = Some(e.message);
                }
            },
        }
        host.on_step(&reports[i]);
    }
}

impl RunReport {
    /// Ends the run early with `status` (cancelled, or failed when interrupted for good): steps not
    /// finished become `not_run`. Rollback is the caller's to run.
    pub fn stop(&mut self, status: RunStatus, reason: &str) {
        for r in self
            .steps
            .iter_mut()
            .filter(|r| matches!(r.state, StepState::Pending | StepState::AwaitingInput))
        {
            r.state = StepState::NotRun;
            r.prompt = None;
        }
        self.status = status;
        self.error = Some(reason.to_string());
    }
}

/// Undoes the completed steps of a run that did not complete, in reverse completion order: each
/// step's `rollback_action` (and a `database_operation` step's own changes), with one retry; every
/// failure is reported.
pub async fn rollback(plan: &Plan, report: &mut RunReport, host: &dyn StepHost) {
    let mut done: Vec<usize> = (0..report.steps.len())
        .filter(|&i| report.steps[i].completed.is_some())
        .collect();
    crate::engine::sort::sort_by_key(&mut done, |&i| std::cmp::Reverse(report.steps[i].completed));
    for i in done {
        let step = &plan.steps[i].def;
        let wrote = step.kind == StepType::DatabaseOperation
            || step
                .fallback_step
                .as_ref()
                .is_some_and(|f| f.kind == "database_operation");
        if step.rollback_action.is_none() && !wrote {
            continue;
        }
        let outputs = &report.steps[i].outputs;
        let vars = &report.variables;
        let mut outcome = host.rollback_step(step, outputs, vars).await;
        if outcome.is_err() {
            outcome = host.rollback_step(step, outputs, vars).await;
        }
        report.rollbacks.push(match outcome {
            Ok(()) => Rollback {
                id: step.id,
                outcome: "rolled_back".into(),
                error: None,
            },
            Err(e) => Rollback {
                id: step.id,
                outcome: "rollback_failed".into(),
                error: Some(e.message),
            },
        });
        // A rolled-back step no longer counts as completed, so a second rollback skips it.
        report.steps[i].completed = None;
    }
}

fn finish_step(
    report: &mut StepReport,
    vars: &mut Value,
    out: Map<String, Value>,
    state: StepState,
    completed: &mut usize,
) {
    if let Value::Object(v) = vars {
        for (k, val) in &out {
            v.insert(k.clone(), val.clone());
        }
    }
    report.outputs = out;
    report.state = state;
    report.completed = Some(*completed);
    *completed += 1;
}

fn fallback_def(step: &StepDef) -> StepDef {
    let mut def = step.clone();
    if let Some(f) = &step.fallback_step {
        def.name = f.name.clone();
        def.instruction_set = f.instruction_set.clone().or(def.instruction_set);
        def.template_id = f.template_id.clone().or(def.template_id);
        if let Ok(kind) = serde_json::from_value(Value::String(f.kind.clone())) {
            def.kind = kind;
        }
    }
    def.retry_config = None;
    def.fallback_step = None;
    def
}

pub mod stored;
#[cfg(test)]
mod tests;
