//! The chain runner: executes a [`Plan`] through a [`StepHost`], with conditions, retries with
//! exponential backoff and jitter, per-attempt timeouts, `on_failure` policies, an overall deadline
//! and rollback. Time and sleeping come from the host, so tests drive them with an injected clock.
//!
//! - A step runs when all its dependencies have finished (done, skipped, warned or fallen back).
//!   A skipped step's outputs are simply absent for the steps after it.
//! - `conditional_execution` false → the step is skipped (`condition false`).
//! - Attempts: the first plus `retry_config.max_retries`; the delay before attempt n+1 is
//!   `backoff_ms × 2^(n-1)`, plus up to 25 % jitter. Validation and permission errors are never
//!   retried; with `retry_on_errors`, only errors of those codes are.
//! - After the last attempt: `fail` stops the chain, `warn` and `skip` record it and go on,
//!   `fallback` runs the `fallback_step` in its place (its failure fails the chain).
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

use super::chain::{OnFailure, Plan, PlannedStep, StepDef, StepType};
use super::expr::{truthy, Limits};
use super::template::RenderOptions;

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
            ErrorClass::Transient(code) => only.is_none_or(|codes| codes.contains(code)),
            ErrorClass::Validation | ErrorClass::Permission | ErrorClass::AwaitingInput => false,
        }
    }
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
    pub input: Option<String>,
    /// Attempts in order.
    pub attempts: Vec<Attempt>,
    /// Outputs it produced.
    pub outputs: Map<String, Value>,
    /// Completion order (for rollback), when done.
    pub completed: Option<usize>,
    /// While awaiting input: what the client needs to produce the outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Value>,
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
            let out: Map<String, Value> = s
                .def
                .output_variables
                .iter()
                .filter_map(|k| outputs.get(k).map(|v| (k.clone(), v.clone())))
                .collect();
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
async fn attempt_step(
    host: &dyn StepHost,
    step: &StepDef,
    input: Option<String>,
    vars: &Value,
    rng: &mut u64,
    report: &mut StepReport,
    deadline: f64,
) -> StepOutcome {
    let retry = step.retry_config.clone();
    let max = retry.as_ref().map_or(0, |r| r.max_retries);
    let mut n = 0;
    loop {
        let started = host.now_ms();
        let run = host.run_step(step, input.clone(), vars);
        let result = match step.timeout_ms {
            Some(limit) => match select(run, host.sleep(limit)).await {
                Either::Left((r, _)) => r,
                Either::Right(_) => Err(StepError::transient(
                    "timeout",
                    format!("attempt took longer than {limit} ms"),
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
        run_batch(plan, &batch, &mut report, host, deadline).await;
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

/// Decides conditions and inputs of a batch against the variables as they are before it, runs its
/// steps (concurrently) and records their outcomes.
async fn run_batch(
    plan: &Plan,
    batch: &[usize],
    report: &mut RunReport,
    host: &dyn StepHost,
    deadline: f64,
) {
    let vars = &mut report.variables;
    let reports = &mut report.steps;
    let mut jobs = Vec::new();
    for &i in batch {
        let step = &plan.steps[i];
        if let Some(cond) = &step.condition {
            match cond.eval(vars, Limits::default()) {
                Ok(v) if !truthy(&v.value) => {
                    reports[i].state = StepState::Skipped;
                    reports[i].reason = Some("condition false".into());
                    host.on_step(&reports[i]);
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    reports[i].state = StepState::Failed;
                    reports[i].reason = Some(format!("conditional_execution: {e}"));
                    continue;
                }
            }
        }
        let input = match &step.input {
            Some(t) => match t.render(vars, RenderOptions::default()) {
                Ok(r) => {
                    let text = r.text();
                    if text.len() > MAX_STEP_INPUT_BYTES {
                        // Not kept: the execution's record must stay within a D1 row.
                        reports[i].state = StepState::Failed;
                        reports[i].reason = Some(format!(
                            "input_template rendered {} bytes; a step's input is limited to {MAX_STEP_INPUT_BYTES} bytes (the execution's record keeps it)",
                            text.len()
                        ));
                        continue;
                    }
                    Some(text)
                }
                Err(e) => {
                    reports[i].state = StepState::Failed;
                    reports[i].reason = Some(format!("input_template: {e}"));
                    continue;
                }
            },
            None => None,
        };
        reports[i].input = input.clone();
        jobs.push((i, input));
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
            )
            .await;
            (*i, r, report)
        }
    }))
    .await;
    for (i, result, step_report) in outcomes {
        reports[i] = step_report;
        let step: &PlannedStep = &plan.steps[i];
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
                OnFailure::Warn | OnFailure::Skip => {
                    reports[i].state = if step.def.on_failure == OnFailure::Warn {
                        StepState::Warned
                    } else {
                        StepState::Skipped
                    };
                    reports[i].reason = Some(e.message);
                }
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
                OnFailure::Fail => {
                    reports[i].state = StepState::Failed;
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
    done.sort_by_key(|&i| std::cmp::Reverse(report.steps[i].completed));
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

#[cfg(test)]
mod tests;
