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
//! - A chain that ends `failed` or `timed_out` with rollback enabled runs the `rollback_action` of
//!   its completed steps in reverse completion order (a `database_operation` step, or one whose
//!   fallback is one, is always undone, with or without one); each rollback failure is reported.

use futures::future::{join_all, select, Either, LocalBoxFuture};
use serde::Serialize;
use serde_json::{Map, Value};

use super::chain::{OnFailure, Plan, PlannedStep, StepDef, StepType};
use super::expr::{truthy, Limits};
use super::template::RenderOptions;

/// Why a step attempt failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "class", content = "code")]
pub enum ErrorClass {
    /// Worth retrying (`api_timeout`, `vendor_unavailable`, `timeout`, …).
    Transient(String),
    /// Bad input: retrying cannot help.
    Validation,
    /// Not allowed: retrying cannot help.
    Permission,
}

/// A failed attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepError {
    /// Its class.
    pub class: ErrorClass,
    /// What happened.
    pub message: String,
}

impl StepError {
    /// A transient error with a code.
    pub fn transient(code: &str, message: impl Into<String>) -> Self {
        StepError {
            class: ErrorClass::Transient(code.to_string()),
            message: message.into(),
        }
    }

    fn retryable(&self, only: Option<&Vec<String>>) -> bool {
        match &self.class {
            ErrorClass::Transient(code) => only.is_none_or(|codes| codes.contains(code)),
            ErrorClass::Validation | ErrorClass::Permission => false,
        }
    }
}

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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// Not started because the chain ended first.
    NotRun,
}

/// One attempt's record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    /// Start, on the host clock.
    pub started_ms: f64,
    /// Duration.
    pub duration_ms: f64,
    /// The error, when it failed.
    pub error: Option<StepError>,
}

/// A step's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
            StepState::NotRun => "not_run",
        }
    }
}

/// How the chain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every step finished.
    Completed,
    /// A step failed.
    Failed,
    /// The deadline passed.
    TimedOut,
}

impl RunStatus {
    /// The status's name, as in reports and `chain_executions.status`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::TimedOut => "timed_out",
        }
    }
}

/// One rollback's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rollback {
    /// Step id.
    pub id: u32,
    /// `rolled_back` or `rollback_failed`.
    pub outcome: &'static str,
    /// The error, when it failed.
    pub error: Option<String>,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// How it ended.
    pub status: RunStatus,
    /// Step reports in position order.
    pub steps: Vec<StepReport>,
    /// The chain's variables at the end (inputs plus outputs).
    pub variables: Value,
    /// The failing step, when failed.
    pub failed_step: Option<String>,
    /// Rollbacks performed, in the order run.
    pub rollbacks: Vec<Rollback>,
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

async fn attempt_step(
    host: &dyn StepHost,
    step: &StepDef,
    input: Option<String>,
    vars: &Value,
    rng: &mut u64,
    report: &mut StepReport,
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
                    && e.retryable(retry.as_ref().and_then(|r| r.retry_on_errors.as_ref())) =>
            {
                n += 1;
                let base = retry.as_ref().map_or(1000, |r| r.backoff_ms);
                host.sleep(backoff_ms(base, n, next_random(rng))).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Runs a planned chain over `inputs` (an object of the chain's input variables).
pub async fn run(plan: &Plan, inputs: Value, host: &dyn StepHost, opts: RunOptions) -> RunReport {
    let started = host.now_ms();
    let deadline = started + opts.max_execution_ms as f64;
    let mut vars = if inputs.is_object() {
        inputs
    } else {
        Value::Object(Map::new())
    };
    let mut reports: Vec<StepReport> = plan
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
        })
        .collect();
    let mut rng = opts.jitter_seed;
    let mut completed = 0usize;
    let mut status = RunStatus::Completed;
    let mut failed_step = None;

    loop {
        let ready: Vec<usize> = (0..plan.steps.len())
            .filter(|&i| reports[i].state == StepState::Pending)
            .filter(|&i| {
                plan.steps[i]
                    .deps
                    .iter()
                    .all(|&d| reports[d].state != StepState::Pending)
            })
            .collect();
        if ready.is_empty() {
            break;
        }
        if host.now_ms() >= deadline {
            status = RunStatus::TimedOut;
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
        // Conditions and inputs are decided against the variables as they are before the batch.
        let mut jobs = Vec::new();
        for &i in &batch {
            let step = &plan.steps[i];
            if let Some(cond) = &step.condition {
                match cond.eval(&vars, Limits::default()) {
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
                Some(t) => match t.render(&vars, RenderOptions::default()) {
                    Ok(r) => Some(r.text()),
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
                next_random(&mut rng);
                rng
            })
            .collect();
        let outcomes = join_all(jobs.iter().zip(seeds.iter_mut()).map(|((i, input), seed)| {
            let step = &plan.steps[*i];
            let snapshot = &snapshot;
            let mut report = reports[*i].clone();
            async move {
                let r =
                    attempt_step(host, &step.def, input.clone(), snapshot, seed, &mut report).await;
                (*i, r, report)
            }
        }))
        .await;
        for (i, result, report) in outcomes {
            reports[i] = report;
            let step: &PlannedStep = &plan.steps[i];
            match result {
                Ok(out) => {
                    finish_step(
                        &mut reports[i],
                        &mut vars,
                        out,
                        StepState::Done,
                        &mut completed,
                    );
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
                            .run_step(&fallback, reports[i].input.clone(), &vars)
                            .await
                        {
                            Ok(out) => {
                                reports[i].reason = Some(e.message);
                                finish_step(
                                    &mut reports[i],
                                    &mut vars,
                                    out,
                                    StepState::FellBack,
                                    &mut completed,
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
        if let Some(f) = reports.iter().find(|r| r.state == StepState::Failed) {
            status = RunStatus::Failed;
            failed_step = Some(f.name.clone());
            break;
        }
    }

    for r in reports.iter_mut().filter(|r| r.state == StepState::Pending) {
        r.state = StepState::NotRun;
    }
    let mut rollbacks = Vec::new();
    if status != RunStatus::Completed && opts.rollback {
        let mut done: Vec<usize> = (0..reports.len())
            .filter(|&i| reports[i].completed.is_some())
            .collect();
        done.sort_by_key(|&i| std::cmp::Reverse(reports[i].completed));
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
            let mut outcome = host.rollback_step(step, &reports[i].outputs, &vars).await;
            if outcome.is_err() {
                outcome = host.rollback_step(step, &reports[i].outputs, &vars).await;
            }
            rollbacks.push(match outcome {
                Ok(()) => Rollback {
                    id: step.id,
                    outcome: "rolled_back",
                    error: None,
                },
                Err(e) => Rollback {
                    id: step.id,
                    outcome: "rollback_failed",
                    error: Some(e.message),
                },
            });
        }
    }
    RunReport {
        status,
        steps: reports,
        variables: vars,
        failed_step,
        rollbacks,
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
