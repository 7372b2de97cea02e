//! Reads a stored [`RunReport`] (the `chain_executions.report` column) back, by hand from the
//! parsed `Value` instead of through `#[derive(Deserialize)]`. The derive compiled a reader of its
//! own for each of the eight report types over serde_json's text reader (23 KiB more wasm,
//! docs/decisions.md, "Derived readers"); these reuse the one `Value` parser the Worker already
//! has. What they accept is what the derive accepted from the text this crate writes: a missing
//! `Option` field or `null` is `None`, a missing `#[serde(default)]` field is its default, unknown
//! fields are ignored, and a missing or mistyped required field is an error naming it.

use serde_json::{Map, Value};

use super::{
    Attempt, ErrorClass, Rollback, RunReport, RunStatus, StepError, StepReport, StepState,
};

use crate::engine::read::{
    defaulted, f64, list, object, optional, required, string, u32, u64, unknown, usize, Read,
};

/// The report stored as `text`.
pub fn report(text: &str) -> Read<RunReport> {
    let mut m = object(serde_json::from_str(text)?, "RunReport")?;
    Ok(RunReport {
        status: run_status(required(&mut m, "status")?)?,
        steps: list(required(&mut m, "steps")?, step)?,
        variables: required(&mut m, "variables")?,
        failed_step: optional(&mut m, "failed_step", string)?,
        rollbacks: list(required(&mut m, "rollbacks")?, rollback)?,
        error: optional(&mut m, "error", string)?,
        completed: defaulted(&mut m, "completed", usize)?,
        elapsed_ms: defaulted(&mut m, "elapsed_ms", f64)?,
        rng: defaulted(&mut m, "rng", u64)?,
    })
}

fn step(v: Value) -> Read<StepReport> {
    let mut m = object(v, "StepReport")?;
    Ok(StepReport {
        id: u32(required(&mut m, "id")?)?,
        name: string(required(&mut m, "name")?)?,
        state: step_state(required(&mut m, "state")?)?,
        reason: optional(&mut m, "reason", string)?,
        input: optional(&mut m, "input", string)?,
        attempts: match m.remove("attempts") {
            Some(v) => list(v, attempt)?,
            None => Vec::new(),
        },
        outputs: match m.remove("outputs") {
            Some(v) => object(v, "a map")?,
            None => Map::new(),
        },
        completed: optional(&mut m, "completed", usize)?,
        prompt: optional(&mut m, "prompt", Ok)?,
        warnings: match m.remove("warnings") {
            Some(v) => list(v, string)?,
            None => Vec::new(),
        },
    })
}

fn attempt(v: Value) -> Read<Attempt> {
    let mut m = object(v, "Attempt")?;
    Ok(Attempt {
        started_ms: f64(required(&mut m, "started_ms")?)?,
        duration_ms: f64(required(&mut m, "duration_ms")?)?,
        error: optional(&mut m, "error", step_error)?,
    })
}

fn step_error(v: Value) -> Read<StepError> {
    let mut m = object(v, "StepError")?;
    Ok(StepError {
        class: error_class(required(&mut m, "class")?)?,
        message: string(required(&mut m, "message")?)?,
        prompt: optional(&mut m, "prompt", Ok)?,
    })
}

/// `ErrorClass` is stored adjacently tagged: `{"class": "transient", "code": "timeout"}`, and
/// `{"class": "validation"}` for the variants without a code.
fn error_class(v: Value) -> Read<ErrorClass> {
    let mut m = object(v, "ErrorClass")?;
    Ok(match string(required(&mut m, "class")?)?.as_str() {
        "transient" => ErrorClass::Transient(string(required(&mut m, "code")?)?),
        "validation" => ErrorClass::Validation,
        "permission" => ErrorClass::Permission,
        "awaiting_input" => ErrorClass::AwaitingInput,
        other => return Err(unknown(other, "an error class")),
    })
}

fn rollback(v: Value) -> Read<Rollback> {
    let mut m = object(v, "Rollback")?;
    Ok(Rollback {
        id: u32(required(&mut m, "id")?)?,
        outcome: string(required(&mut m, "outcome")?)?,
        error: optional(&mut m, "error", string)?,
    })
}

fn run_status(v: Value) -> Read<RunStatus> {
    Ok(match string(v)?.as_str() {
        "running" => RunStatus::Running,
        "awaiting_input" => RunStatus::AwaitingInput,
        "completed" => RunStatus::Completed,
        "failed" => RunStatus::Failed,
        "timed_out" => RunStatus::TimedOut,
        "cancelled" => RunStatus::Cancelled,
        other => return Err(unknown(other, "a run status")),
    })
}

fn step_state(v: Value) -> Read<StepState> {
    Ok(match string(v)?.as_str() {
        "pending" => StepState::Pending,
        "done" => StepState::Done,
        "skipped" => StepState::Skipped,
        "warned" => StepState::Warned,
        "fell_back" => StepState::FellBack,
        "failed" => StepState::Failed,
        "awaiting_input" => StepState::AwaitingInput,
        "not_run" => StepState::NotRun,
        other => return Err(unknown(other, "a step state")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn both(text: &str) -> (Option<RunReport>, Option<RunReport>) {
        (
            report(text).ok(),
            serde_json::from_str::<RunReport>(text).ok(),
        )
    }

    /// Reports with every state, status and error class, optional fields present, `null` and
    /// absent, read the same as the derived `Deserialize` reads them; so do broken ones (both
    /// refuse them).
    #[test]
    fn reads_what_the_derive_reads() {
        let classes = [
            json!({ "class": "transient", "code": "timeout" }),
            json!({ "class": "validation" }),
            json!({ "class": "permission" }),
            json!({ "class": "awaiting_input" }),
        ];
        let states = [
            "pending",
            "done",
            "skipped",
            "warned",
            "fell_back",
            "failed",
            "awaiting_input",
            "not_run",
        ];
        let statuses = [
            "running",
            "awaiting_input",
            "completed",
            "failed",
            "timed_out",
            "cancelled",
        ];
        let mut cases = Vec::new();
        for (i, status) in statuses.iter().enumerate() {
            let steps: Vec<Value> = states
                .iter()
                .enumerate()
                .map(|(k, state)| {
                    let mut error =
                        json!({ "class": classes[(i + k) % 4], "message": format!("m{k}") });
                    if k % 3 == 0 {
                        error["prompt"] = json!({ "ask": k });
                    }
                    let mut s = json!({
                        "id": k, "name": format!("s{k}"), "state": state,
                        "reason": if k % 2 == 0 { Value::Null } else { json!("why") },
                        "input": if k % 3 == 1 { json!("in") } else { Value::Null },
                        "attempts": [{ "started_ms": 1.5, "duration_ms": k, "error": error },
                                     { "started_ms": 2, "duration_ms": 0.25, "error": null }],
                        "outputs": { "a": k, "b": [1, { "c": null }] },
                        "completed": if k % 2 == 1 { json!(k) } else { Value::Null },
                        "prompt": if k == 6 { json!({ "p": 1 }) } else { Value::Null },
                        "warnings": ["w"],
                    });
                    // Every field the derive defaults or takes as None, absent in turn.
                    for key in [
                        "reason",
                        "input",
                        "attempts",
                        "outputs",
                        "completed",
                        "prompt",
                        "warnings",
                    ]
                    .iter()
                    .skip(k % 7)
                    .take(i % 3)
                    {
                        s.as_object_mut().unwrap().remove(*key);
                    }
                    s
                })
                .collect();
            let mut r = json!({
                "status": status, "steps": steps, "variables": { "x": i },
                "failed_step": if i % 2 == 0 { json!("s1") } else { Value::Null },
                "rollbacks": [{ "id": 1, "outcome": "rolled_back", "error": null },
                              { "id": 2, "outcome": "rollback_failed", "error": "e" }],
                "error": "stopped", "completed": 3, "elapsed_ms": 12.5, "rng": u64::MAX,
                "unknown": true,
            });
            for key in ["error", "completed", "elapsed_ms", "rng", "failed_step"]
                .iter()
                .take(i)
            {
                r.as_object_mut().unwrap().remove(*key);
            }
            cases.push(r);
        }
        let good = cases.len();
        // Broken: a required field missing, a wrong type, an unknown name, a number out of range.
        let broken: [(&str, &[&str], Value); 8] = [
            ("status", &[], json!("paused")),
            ("steps", &[], json!({})),
            ("rollbacks", &[], json!(null)),
            ("completed", &[], json!(-1)),
            ("rng", &[], json!(1.5)),
            ("id", &["steps", "0"], json!(1u64 << 33)),
            ("state", &["steps", "1"], json!("done_now")),
            ("attempts", &["steps", "2"], json!(null)),
        ];
        for (key, path, value) in broken {
            let mut r = cases[0].clone();
            let mut at = &mut r;
            for p in path {
                at = match p.parse::<usize>() {
                    Ok(n) => &mut at[n],
                    Err(_) => &mut at[*p],
                };
            }
            at[key] = value;
            cases.push(r);
        }
        for key in ["status", "steps", "variables", "rollbacks"] {
            let mut r = cases[0].clone();
            r.as_object_mut().unwrap().remove(key);
            cases.push(r);
        }
        for key in ["message", "class"] {
            let mut r = cases[1].clone();
            r["steps"][0]["attempts"][0]["error"]
                .as_object_mut()
                .unwrap()
                .remove(key);
            cases.push(r);
        }
        let mut r = cases[0].clone();
        r["steps"][0]["attempts"][0]["error"] =
            json!({ "class": { "class": "transient" }, "message": "m" });
        cases.push(r);
        for (n, case) in cases.iter().enumerate() {
            let text = case.to_string();
            let (ours, derived) = both(&text);
            assert_eq!(ours, derived, "case {n}: {text}");
            assert_eq!(ours.is_some(), n < good, "case {n}: {text}");
        }
        assert!(report("[1]").is_err() && report("{").is_err());
    }
}
