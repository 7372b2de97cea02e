use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use futures::executor::block_on;
use futures::future::{pending, ready};
use serde_json::json;

use super::*;
use crate::engine::chain::{plan, ChainDef};

/// A scripted host: a virtual clock that sleeping advances, and per-step scripts of results.
#[derive(Default)]
struct Host {
    now: Cell<f64>,
    scripts: RefCell<HashMap<String, Vec<StepOutcome>>>,
    hang: RefCell<Vec<String>>,
    calls: RefCell<Vec<String>>,
    rollbacks: RefCell<Vec<String>>,
    failing_rollbacks: RefCell<Vec<String>>,
    step_ms: Cell<f64>,
    in_flight: Cell<u32>,
    max_in_flight: Cell<u32>,
    /// `should_continue` answers false once it has been asked this many times.
    stop_after: Cell<Option<u32>>,
    asked: Cell<u32>,
    checkpoints: RefCell<Vec<RunReport>>,
}

impl Host {
    fn script(&self, step: &str, results: Vec<StepOutcome>) {
        self.scripts.borrow_mut().insert(step.to_string(), results);
    }
}

/// A transient failure of a step's attempt.
fn transient(code: &str, message: &str) -> StepOutcome {
    Err(StepError::transient(code, message))
}

fn out(v: Value) -> StepOutcome {
    Ok(v.as_object().cloned().unwrap_or_default())
}

impl StepHost for Host {
    fn run_step<'a>(
        &'a self,
        step: &'a StepDef,
        _input: Option<String>,
        _vars: &'a Value,
    ) -> LocalBoxFuture<'a, StepOutcome> {
        self.calls.borrow_mut().push(step.name.clone());
        if self.hang.borrow().contains(&step.name) {
            return Box::pin(pending());
        }
        let next = self
            .scripts
            .borrow_mut()
            .get_mut(&step.name)
            .filter(|s| !s.is_empty())
            .map(|s| s.remove(0));
        self.in_flight.set(self.in_flight.get() + 1);
        self.max_in_flight
            .set(self.max_in_flight.get().max(self.in_flight.get()));
        Box::pin(async move {
            // Yield once so concurrent steps overlap.
            let mut yielded = false;
            futures::future::poll_fn(|cx| {
                if yielded {
                    std::task::Poll::Ready(())
                } else {
                    yielded = true;
                    cx.waker().wake_by_ref();
                    std::task::Poll::Pending
                }
            })
            .await;
            self.now.set(self.now.get() + self.step_ms.get());
            self.in_flight.set(self.in_flight.get() - 1);
            next.unwrap_or_else(|| out(json!({ format!("{}_out", step.name): true })))
        })
    }

    fn rollback_step<'a>(
        &'a self,
        step: &'a StepDef,
        _outputs: &'a Map<String, Value>,
        _vars: &'a Value,
    ) -> LocalBoxFuture<'a, Result<(), StepError>> {
        self.rollbacks.borrow_mut().push(step.name.clone());
        let fail = self.failing_rollbacks.borrow().contains(&step.name);
        Box::pin(ready(if fail {
            Err(StepError::transient("io", "store unavailable"))
        } else {
            Ok(())
        }))
    }

    fn sleep(&self, ms: u64) -> LocalBoxFuture<'_, ()> {
        self.now.set(self.now.get() + ms as f64);
        Box::pin(ready(()))
    }

    fn now_ms(&self) -> f64 {
        self.now.get()
    }

    fn on_step(&self, _report: &StepReport) {}

    fn should_continue(&self) -> bool {
        self.asked.set(self.asked.get() + 1);
        self.stop_after.get().is_none_or(|n| self.asked.get() <= n)
    }

    fn checkpoint<'a>(&'a self, report: &'a RunReport) -> LocalBoxFuture<'a, ()> {
        self.checkpoints.borrow_mut().push(report.clone());
        Box::pin(ready(()))
    }
}

fn chain(steps: Value) -> Plan {
    let def: ChainDef =
        serde_json::from_value(json!({ "name": "c", "title": "Chain", "steps": steps })).unwrap();
    plan(&def).unwrap()
}

/// A chain of the one step `s(1, name, extra)`.
fn one(name: &str, extra: Value) -> Plan {
    chain(json!([s(1, name, extra)]))
}

fn s(id: u32, name: &str, extra: Value) -> Value {
    let mut v =
        json!({ "id": id, "name": name, "type": "data_transformation", "rollback_action": "undo" });
    if let (Some(v), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        v.extend(e.clone());
    }
    v
}

const OPTS: RunOptions = RunOptions {
    parallel: true,
    rollback: true,
    max_execution_ms: 600_000,
    jitter_seed: 42,
    auto_retry: false,
    strict_inputs: false,
};

fn state_of(r: &RunReport, name: &str) -> StepState {
    r.steps
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.state.clone())
        .unwrap_or(StepState::Pending)
}

#[test]
fn runs_in_dependency_order_and_merges_outputs() {
    let p = chain(json!([
        s(1, "a", json!({ "output_variables": ["x"] })),
        s(
            2,
            "b",
            json!({ "input_template": "x is {x}", "output_variables": ["y"] })
        ),
    ]));
    let host = Host::default();
    host.script("a", vec![out(json!({ "x": 7 }))]);
    let r = block_on(run(&p, json!({ "given": 1 }), &host, OPTS));
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(*host.calls.borrow(), vec!["a", "b"]);
    assert_eq!(r.steps[1].input.as_deref(), Some("x is 7"));
    assert_eq!(r.variables["x"], 7);
    assert_eq!(r.variables["given"], 1);
}

#[test]
fn transient_failures_are_retried_with_exponential_backoff() {
    let p = one(
        "flaky",
        json!({ "retry_config": { "max_retries": 3, "backoff_ms": 1000 } }),
    );
    let host = Host::default();
    host.script(
        "flaky",
        vec![
            transient("api_timeout", "slow"),
            transient("api_timeout", "slow"),
            out(json!({})),
        ],
    );
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.status, RunStatus::Completed);
    let starts: Vec<f64> = r.steps[0].attempts.iter().map(|a| a.started_ms).collect();
    assert_eq!(starts.len(), 3);
    let (d1, d2) = (starts[1] - starts[0], starts[2] - starts[1]);
    assert!((1000.0..=1250.0).contains(&d1), "first delay {d1}");
    assert!((2000.0..=2500.0).contains(&d2), "second delay {d2}");
    assert_eq!(backoff_ms(1000, 3, 0.0), 4000);
}

#[test]
fn validation_errors_and_unlisted_codes_are_not_retried() {
    let p = chain(json!([
        s(
            1,
            "bad",
            json!({ "retry_config": { "max_retries": 3, "backoff_ms": 100 }, "on_failure": "warn" })
        ),
        s(
            2,
            "picky",
            json!({ "retry_config": { "max_retries": 3, "backoff_ms": 100, "retry_on_errors": ["vendor_unavailable"] }, "on_failure": "skip" })
        ),
    ]));
    let host = Host::default();
    host.script(
        "bad",
        vec![Err(StepError::new(ErrorClass::Validation, "no"))],
    );
    host.script("picky", vec![transient("api_timeout", "slow")]);
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.steps[0].attempts.len(), 1);
    assert_eq!(r.steps[1].attempts.len(), 1);
    assert_eq!(state_of(&r, "bad"), StepState::Warned);
    assert_eq!(state_of(&r, "picky"), StepState::Skipped);
    assert_eq!(r.status, RunStatus::Completed);
}

#[test]
fn an_attempt_timeout_is_a_transient_error() {
    let p = one(
        "slow",
        json!({ "timeout_ms": 500, "retry_config": { "max_retries": 1, "backoff_ms": 100 } }),
    );
    let host = Host::default();
    host.hang.borrow_mut().push("slow".into());
    let r = block_on(run(
        &p,
        json!({}),
        &host,
        RunOptions {
            rollback: false,
            ..OPTS
        },
    ));
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(r.steps[0].attempts.len(), 2);
    assert!(r.steps[0]
        .reason
        .as_deref()
        .unwrap()
        .contains("longer than 500 ms"));
}

#[test]
fn failure_rolls_back_completed_steps_in_reverse_order_only() {
    let p = chain(json!([
        s(1, "one", json!({})),
        s(2, "two", json!({ "depends_on": [1] })),
        s(3, "three", json!({ "depends_on": [2] })),
        s(4, "four", json!({ "depends_on": [3] })),
    ]));
    let host = Host::default();
    host.script("three", vec![transient("boom", "broke")]);
    host.failing_rollbacks.borrow_mut().push("one".into());
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(r.failed_step.as_deref(), Some("three"));
    assert_eq!(state_of(&r, "four"), StepState::NotRun);
    assert_eq!(
        *host.rollbacks.borrow(),
        vec!["two", "one", "one"],
        "two, then one (retried once)"
    );
    assert_eq!(
        r.rollbacks
            .iter()
            .map(|b| (b.id, b.outcome.as_str()))
            .collect::<Vec<_>>(),
        vec![(2, "rolled_back"), (1, "rollback_failed")]
    );
}

#[test]
fn fallback_replaces_a_failed_step() {
    let p = one(
        "main",
        json!({ "on_failure": "fallback", "fallback_step": { "name": "backup", "type": "data_transformation" } }),
    );
    let host = Host::default();
    host.script("main", vec![transient("down", "unavailable")]);
    host.script("backup", vec![out(json!({ "result": "from backup" }))]);
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(state_of(&r, "main"), StepState::FellBack);
    assert_eq!(r.variables["result"], "from backup");
}

#[test]
fn false_conditions_skip_and_dependents_still_run() {
    let p = chain(json!([
        s(1, "check", json!({ "output_variables": ["status"] })),
        s(
            2,
            "gated",
            json!({ "conditional_execution": "{status} == 'approved'", "output_variables": ["gated_out"] })
        ),
        s(3, "after", json!({ "depends_on": [2] })),
    ]));
    let host = Host::default();
    host.script("check", vec![out(json!({ "status": "rejected" }))]);
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(state_of(&r, "gated"), StepState::Skipped);
    assert_eq!(r.steps[1].reason.as_deref(), Some("condition false"));
    assert_eq!(state_of(&r, "after"), StepState::Done);
}

#[test]
fn parallel_steps_overlap_only_when_allowed() {
    let steps = json!([
        s(1, "p1", json!({ "parallel_execution": true })),
        s(2, "p2", json!({ "parallel_execution": true })),
        s(3, "p3", json!({ "parallel_execution": true })),
    ]);
    let host = Host::default();
    block_on(run(&chain(steps.clone()), json!({}), &host, OPTS));
    assert_eq!(host.max_in_flight.get(), 3);
    let host = Host::default();
    block_on(run(
        &chain(steps),
        json!({}),
        &host,
        RunOptions {
            parallel: false,
            ..OPTS
        },
    ));
    assert_eq!(host.max_in_flight.get(), 1);
}

#[test]
fn the_deadline_stops_new_steps() {
    let p = chain(json!([
        s(1, "a", json!({})),
        s(2, "b", json!({ "depends_on": [1] })),
        s(3, "c", json!({ "depends_on": [2] }))
    ]));
    let host = Host::default();
    host.step_ms.set(600.0);
    let r = block_on(run(
        &p,
        json!({}),
        &host,
        RunOptions {
            max_execution_ms: 1000,
            ..OPTS
        },
    ));
    assert_eq!(r.status, RunStatus::TimedOut);
    assert_eq!(*host.calls.borrow(), vec!["a", "b"]);
    assert_eq!(state_of(&r, "c"), StepState::NotRun);
    assert_eq!(*host.rollbacks.borrow(), vec!["b", "a"]);
}

/// Security case 22: retries stop at the run's deadline, and the run ends timed out (rolled back),
/// not failed after every retry.
#[test]
fn no_retry_starts_past_the_deadline() {
    let p = chain(json!([
        s(1, "a", json!({})),
        s(
            2,
            "b",
            json!({ "depends_on": [1], "retry_config": { "max_retries": 5, "backoff_ms": 100 } })
        )
    ]));
    let host = Host::default();
    host.step_ms.set(300.0);
    host.script(
        "b",
        (0..6).map(|_| transient("api_timeout", "slow")).collect(),
    );
    let r = block_on(run(
        &p,
        json!({}),
        &host,
        RunOptions {
            max_execution_ms: 1000,
            ..OPTS
        },
    ));
    assert_eq!(r.status, RunStatus::TimedOut);
    let attempts = host.calls.borrow().iter().filter(|c| *c == "b").count();
    assert!(attempts < 6, "{attempts} attempts of b");
    assert!(
        host.now.get() < 1000.0 + 300.0,
        "no attempt started past the deadline"
    );
    assert_eq!(*host.rollbacks.borrow(), vec!["a"]);
}

#[test]
fn state_names_match_the_serialized_reports() {
    use serde_json::to_value;
    for s in [
        StepState::Pending,
        StepState::Done,
        StepState::Skipped,
        StepState::Warned,
        StepState::FellBack,
        StepState::Failed,
        StepState::NotRun,
    ] {
        assert_eq!(to_value(&s).unwrap(), json!(s.as_str()));
    }
    for s in [RunStatus::Completed, RunStatus::Failed, RunStatus::TimedOut] {
        assert_eq!(to_value(s).unwrap(), json!(s.as_str()));
    }
}

fn awaiting(outputs: &[&str]) -> StepOutcome {
    let mut e = StepError::new(ErrorClass::AwaitingInput, "needs input");
    e.prompt = Some(json!({ "input": "question", "output_variables": outputs }));
    Err(e)
}

#[test]
fn a_step_without_a_model_pauses_the_run_and_supplied_outputs_continue_it() {
    let p = chain(json!([
        s(1, "first", json!({ "output_variables": ["a"] })),
        s(
            2,
            "ask",
            json!({ "type": "data_transformation", "depends_on": [1], "output_variables": ["answer", "why"] })
        ),
        s(
            3,
            "after",
            json!({ "depends_on": [2], "input_template": "{answer}" })
        ),
    ]));
    let host = Host::default();
    host.script("ask", vec![awaiting(&["answer", "why"])]);
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.status, RunStatus::AwaitingInput);
    assert_eq!(state_of(&r, "ask"), StepState::AwaitingInput);
    assert_eq!(
        state_of(&r, "after"),
        StepState::Pending,
        "not run, not given up"
    );
    assert_eq!(r.steps[1].prompt.as_ref().unwrap()["input"], "question");
    assert!(r.rollbacks.is_empty(), "a pause is not a failure");
    assert_eq!(r.awaited(&p), vec!["answer", "why"]);

    // The paused state survives a round trip through its stored form.
    let mut paused: RunReport = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
    let missing = paused
        .supply(&p, json!({ "answer": 42 }).as_object().unwrap())
        .unwrap_err();
    assert_eq!(missing, vec!["outputs.why is missing"]);
    let extra = paused
        .supply(
            &p,
            json!({ "answer": 42, "why": "x", "zz": 1 })
                .as_object()
                .unwrap(),
        )
        .unwrap_err();
    assert!(
        extra[0].starts_with("outputs.zz is not awaited"),
        "{extra:?}"
    );
    paused
        .supply(
            &p,
            json!({ "answer": 42, "why": "because" })
                .as_object()
                .unwrap(),
        )
        .unwrap();
    assert_eq!(paused.status, RunStatus::Running);
    let done = block_on(proceed(&p, paused, &host, OPTS));
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.variables["answer"], 42);
    assert_eq!(done.steps[2].input.as_deref(), Some("42"));
    assert_eq!(
        host.calls.borrow().iter().filter(|c| *c == "first").count(),
        1,
        "finished steps do not run again"
    );
    let mut again = done.clone();
    assert!(
        again.supply(&p, &Map::new()).is_err(),
        "only a paused run takes outputs"
    );
}

#[test]
fn a_stop_request_cancels_before_the_next_batch_and_rolls_back() {
    let p = chain(json!([
        s(1, "one", json!({})),
        s(2, "two", json!({ "depends_on": [1] })),
        s(3, "three", json!({ "depends_on": [2] })),
    ]));
    let host = Host::default();
    host.stop_after.set(Some(2));
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.status, RunStatus::Cancelled);
    assert_eq!(state_of(&r, "two"), StepState::Done);
    assert_eq!(state_of(&r, "three"), StepState::NotRun);
    assert_eq!(*host.rollbacks.borrow(), vec!["two", "one"]);
}

#[test]
fn a_stop_request_ends_retries() {
    let p = one(
        "flaky",
        json!({ "retry_config": { "max_retries": 5, "backoff_ms": 100 } }),
    );
    let host = Host::default();
    host.script(
        "flaky",
        vec![
            transient("x", "1"),
            transient("x", "2"),
            transient("x", "3"),
        ],
    );
    host.stop_after.set(Some(2));
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(
        r.steps[0].attempts.len(),
        2,
        "stopped before the third attempt"
    );
    assert_eq!(r.status, RunStatus::Failed);
}

#[test]
fn an_interrupted_run_continues_from_its_last_checkpoint() {
    let p = chain(json!([
        s(1, "one", json!({ "output_variables": ["x"] })),
        s(2, "two", json!({ "depends_on": [1] })),
        s(3, "three", json!({ "depends_on": [2] })),
    ]));
    let host = Host::default();
    host.step_ms.set(1000.0);
    host.script("one", vec![out(json!({ "x": 7 }))]);
    let full = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(full.status, RunStatus::Completed);
    let checkpoints = host.checkpoints.borrow().clone();
    assert_eq!(checkpoints.len(), 3, "after each batch");
    // Interrupted after the first checkpoint: a new host continues from it.
    let cp = checkpoints[0].clone();
    assert_eq!(cp.status, RunStatus::Running);
    assert!(
        cp.elapsed_ms >= 1000.0,
        "running time is kept: {}",
        cp.elapsed_ms
    );
    let later = Host::default();
    let r = block_on(proceed(&p, cp, &later, OPTS));
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(*later.calls.borrow(), vec!["two", "three"]);
    assert_eq!(r.variables["x"], 7);
    assert_eq!(r.steps[0].completed, Some(0));
}

#[test]
fn the_deadline_counts_running_time_across_runs() {
    let p = chain(json!([
        s(1, "one", json!({})),
        s(2, "two", json!({ "depends_on": [1] })),
    ]));
    let host = Host::default();
    let mut cp = RunReport::start(&p, json!({}), 1);
    cp.elapsed_ms = 600_000.0;
    let r = block_on(proceed(&p, cp, &host, OPTS));
    assert_eq!(r.status, RunStatus::TimedOut);
    assert!(host.calls.borrow().is_empty());
}

#[test]
fn stopping_a_paused_run_leaves_nothing_pending() {
    let p = chain(json!([
        s(1, "one", json!({})),
        s(2, "ask", json!({ "depends_on": [1] })),
    ]));
    let host = Host::default();
    host.script("ask", vec![awaiting(&["a"])]);
    let mut r = block_on(run(&p, json!({}), &host, OPTS));
    r.stop(RunStatus::Cancelled, "cancelled by the client");
    block_on(rollback(&p, &mut r, &host));
    assert_eq!(state_of(&r, "ask"), StepState::NotRun);
    assert!(r.steps[1].prompt.is_none());
    assert_eq!(r.error.as_deref(), Some("cancelled by the client"));
    assert_eq!(*host.rollbacks.borrow(), vec!["one"]);
    block_on(rollback(&p, &mut r, &host));
    assert_eq!(
        *host.rollbacks.borrow(),
        vec!["one"],
        "a second rollback undoes nothing again"
    );
}

#[test]
fn an_input_too_large_to_keep_fails_its_step_and_is_not_kept() {
    let p = one(
        "big",
        json!({ "input_template": "{text}", "output_variables": ["x"] }),
    );
    let host = Host::default();
    let text = "x".repeat(MAX_STEP_INPUT_BYTES + 1);
    let r = block_on(run(&p, json!({ "text": text }), &host, OPTS));
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(state_of(&r, "big"), StepState::Failed);
    assert_eq!(r.steps[0].input, None);
    assert!(r.steps[0]
        .reason
        .as_deref()
        .unwrap_or_default()
        .contains(&format!(
            "input_template rendered {} bytes; a step's input is limited to {MAX_STEP_INPUT_BYTES} bytes",
            MAX_STEP_INPUT_BYTES + 1
        )));
    assert!(host.calls.borrow().is_empty(), "the step never ran");
}

#[test]
fn inputs_without_a_value_are_warnings_naming_the_step_that_should_have_given_them() {
    let p = chain(json!([
        s(
            1,
            "check",
            json!({ "conditional_execution": "{flag} == true", "output_variables": ["status"] })
        ),
        s(
            2,
            "use",
            json!({ "input_variables": ["status", "extra"], "input_template": "{status}/{other.part}", "output_variables": ["done"] })
        ),
    ]));
    let host = Host::default();
    host.script("use", vec![out(json!({ "done": 1 }))]);
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(
        r.steps[0].reason.as_deref(),
        Some("condition false (flag has no value: it is not among the chain's input variables and no step outputs it; pass it in execute_chain's variables (or give it a default in the chain's input_schema))")
    );
    let w = &r.steps[1].warnings;
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(w[0].starts_with("input variable status has no value: step 1 'check', which outputs it, was skipped: condition false"), "{}", w[0]);
    assert!(
        w[0].ends_with("or guard this step with conditional_execution"),
        "{}",
        w[0]
    );
    assert!(
        w[1].starts_with(
            "input variable extra has no value: it is not among the chain's input variables"
        ),
        "{}",
        w[1]
    );
    assert!(
        w[2].starts_with("input_template: other has no value and rendered as empty text"),
        "{}",
        w[2]
    );
    assert_eq!(r.steps[1].input.as_deref(), Some("/"));
    // A report without warnings does not carry the field.
    let saved = serde_json::to_value(&r.steps[0]).unwrap();
    assert!(saved.get("warnings").is_none());
}

#[test]
fn strict_chains_fail_a_step_whose_input_has_no_value_and_on_failure_still_applies() {
    let p = chain(json!([
        s(
            1,
            "need",
            json!({ "input_variables": ["x"], "output_variables": ["a"] })
        ),
        s(
            2,
            "tolerant",
            json!({ "input_template": "{y}", "on_failure": "warn", "output_variables": ["b"] })
        ),
    ]));
    let strict = RunOptions {
        strict_inputs: true,
        rollback: false,
        ..OPTS
    };
    let host = Host::default();
    let r = block_on(run(&p, json!({ "y": "given" }), &host, strict));
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(r.failed_step.as_deref(), Some("need"));
    let reason = r.steps[0].reason.as_deref().unwrap();
    assert!(
        reason.starts_with(
            "input variable x has no value: it is not among the chain's input variables"
        ),
        "{reason}"
    );
    assert!(
        reason.contains("(the chain is strict: configuration.strict_inputs)"),
        "{reason}"
    );
    assert_eq!(
        *host.calls.borrow(),
        Vec::<String>::new(),
        "the step never ran"
    );

    let host = Host::default();
    let r = block_on(run(&p, json!({ "x": 1 }), &host, strict));
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.steps[1].state, StepState::Warned);
    assert!(
        r.steps[1]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("input_template: "),
        "{:?}",
        r.steps[1].reason
    );
}

#[test]
fn on_failure_covers_a_condition_that_cannot_be_evaluated() {
    let p = chain(json!([
        s(
            1,
            "odd",
            json!({ "conditional_execution": "{-label} > 0", "on_failure": "skip" })
        ),
        s(2, "after", json!({})),
    ]));
    let host = Host::default();
    let r = block_on(run(&p, json!({ "label": "a" }), &host, OPTS));
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.steps[0].state, StepState::Skipped);
    assert!(
        r.steps[0]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("conditional_execution: "),
        "{:?}",
        r.steps[0].reason
    );
    assert_eq!(r.steps[1].state, StepState::Done);
    let failing = one("odd", json!({ "conditional_execution": "{-label} > 0" }));
    let r = block_on(run(
        &failing,
        json!({ "label": "a" }),
        &Host::default(),
        OPTS,
    ));
    assert_eq!(r.status, RunStatus::Failed);
}

#[test]
fn steps_without_retry_config_retry_transient_errors_when_auto_retry_is_on() {
    let p = one("flaky", json!({}));
    let script = || {
        vec![
            transient("api_timeout", "slow"),
            transient("vendor_unavailable", "down"),
            out(json!({ "ok": true })),
        ]
    };
    let host = Host::default();
    host.script("flaky", script());
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.status, RunStatus::Failed, "off: one attempt");
    assert_eq!(r.steps[0].attempts.len(), 1);

    let host = Host::default();
    host.script("flaky", script());
    let auto = RunOptions {
        auto_retry: true,
        ..OPTS
    };
    let r = block_on(run(&p, json!({}), &host, auto));
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.steps[0].attempts.len(), 3);
    // The seed's defaults: 1000 ms, then 2000 ms (plus jitter up to 25 %).
    let gap = r.steps[0].attempts[1].started_ms - r.steps[0].attempts[0].started_ms;
    assert!((1000.0..=1250.0).contains(&gap), "{gap}");

    let host = Host::default();
    host.script(
        "flaky",
        vec![Err(StepError::new(ErrorClass::Validation, "bad"))],
    );
    let r = block_on(run(&p, json!({}), &host, auto));
    assert_eq!(r.steps[0].attempts.len(), 1, "bad input is never retried");
}

#[test]
fn retry_on_errors_takes_the_seeds_codes_and_the_earlier_names() {
    assert!(codes::covers("api_timeout", "api_timeout"));
    assert!(codes::covers("timeout", "api_timeout"));
    assert!(codes::covers("api_timeout", "timeout"));
    assert!(codes::covers("unavailable", "vendor_unavailable"));
    assert!(codes::covers("vendor_unavailable", "model_unavailable"));
    assert!(!codes::covers("model_unavailable", "vendor_unavailable"));
    assert!(!codes::covers("api_timeout", "vendor_unavailable"));
    assert_eq!(
        codes::normalize(" Vendor unavailable! ").as_deref(),
        Some("vendor_unavailable")
    );
    assert_eq!(
        codes::normalize("API-Timeout").as_deref(),
        Some("api_timeout")
    );
    assert_eq!(codes::normalize("--"), None);
    let p = one(
        "search",
        json!({ "retry_config": { "max_retries": 2, "backoff_ms": 100, "retry_on_errors": ["api_timeout", "vendor_unavailable"] } }),
    );
    let host = Host::default();
    host.script(
        "search",
        vec![
            transient("timeout", "an attempt from a stored run"),
            transient("model_unavailable", "provider 503"),
            out(json!({ "vendor_options": [] })),
        ],
    );
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.steps[0].attempts.len(), 3);
}

#[test]
fn instruction_answers_of_true_and_false_as_text_become_booleans() {
    let p = chain(json!([
        s(
            1,
            "ask",
            json!({ "type": "instruction_set", "instruction_set": "x", "output_variables": ["approval_required", "note"] })
        ),
        s(
            2,
            "approve",
            json!({ "conditional_execution": "{approval_required} == true" })
        ),
    ]));
    let host = Host::default();
    host.script(
        "ask",
        vec![out(
            json!({ "approval_required": " TRUE", "note": "true story" }),
        )],
    );
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.variables["approval_required"], json!(true));
    assert_eq!(r.variables["note"], json!("true story"));
    assert_eq!(
        r.steps[1].state,
        StepState::Done,
        "the condition saw the boolean"
    );
    assert_eq!(
        r.steps[0].warnings,
        vec!["approval_required: the answer was the text \" TRUE\"; taken as the boolean true"]
    );
}

#[test]
fn a_completed_run_is_checked_against_the_output_schema() {
    let def: ChainDef = serde_json::from_value(json!({ "name": "c", "title": "Chain", "steps": [
        s(1, "make", json!({ "output_variables": ["summary", "count"] })),
    ], "output_schema": { "type": "object", "properties": { "summary": { "type": "string" }, "count": { "type": "integer" }, "next": { "type": "array" } } } }))
    .unwrap();
    let p = plan(&def).unwrap();
    let host = Host::default();
    host.script("make", vec![out(json!({ "summary": "ok", "count": 2.5 }))]);
    let r = block_on(run(&p, json!({}), &host, OPTS));
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(
        r.error.as_deref(),
        Some("the run's outputs do not match the chain's output_schema: count must be of type integer, got 2.5; next is missing; make the steps that produce them answer as declared, or correct the output_schema")
    );
    assert_eq!(
        *host.rollbacks.borrow(),
        vec!["make"],
        "a failed run is rolled back"
    );
    let host = Host::default();
    host.script("make", vec![out(json!({ "summary": "ok", "count": 2 }))]);
    let r = block_on(run(&p, json!({ "next": [] }), &host, OPTS));
    assert_eq!(r.status, RunStatus::Completed);
}
