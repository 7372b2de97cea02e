//! Fixtures of the conformance suite's tasks scenarios (SEP-2663, `tasks-*`): a tool that is never
//! a task (`greet`), tools that may be (`slow_compute`, `protocol_error_job`, `confirm_delete`,
//! `multi_input`) and tools that must be (`failing_job`, `test_tool_with_task`).
//!
//! As tasks they run by script (`registry::task::TaskRun::Script`): their work is a wait whose
//! result is known when it starts, or a question to the client, so the task record holds all of
//! it and is advanced when read (`server::tasks`). Called without tasks, the same tools run as
//! ordinary calls: they sleep, or ask through the call's own rounds.

use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

use super::{content, fixture, text, NO_ARGUMENTS};
use crate::error::Error;
use crate::registry::task::{Outcome, Step, TaskRun, TaskSupport};
use crate::registry::{ToolContext, ToolDef, ToolError, ToolResult};

/// The longest `slow_compute` wait, in seconds.
const MAX_SECONDS: f64 = 3600.0;

fn text_result(s: &str) -> Value {
    json!({ "content": [text(s)] })
}

/// A text-only `CallToolResult` as the handler's output.
fn blocks(result: Value) -> ToolResult {
    content(result["content"].as_array().cloned().unwrap_or_default())
}

fn form(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { field: { "type": kind } },
                "required": [field]
            }
        }
    })
}

fn accepted(answer: Option<&Value>) -> bool {
    answer.and_then(|a| a.get("action")).and_then(Value::as_str) == Some("accept")
}

fn seconds(args: &Value) -> f64 {
    args.get("seconds")
        .and_then(Value::as_f64)
        .unwrap_or(1.0)
        .clamp(0.0, MAX_SECONDS)
}

fn label(args: &Value) -> String {
    args.get("label")
        .and_then(Value::as_str)
        .unwrap_or("computation")
        .to_string()
}

fn filename(args: &Value) -> String {
    args.get("filename")
        .and_then(Value::as_str)
        .unwrap_or("file.txt")
        .to_string()
}

fn computed(args: &Value) -> Value {
    text_result(&format!("Computed {} in {} s", label(args), seconds(args)))
}

fn failed_on_purpose() -> Value {
    json!({ "content": [text("failing_job failed, as it always does")], "isError": true })
}

const PROTOCOL_ERROR: &str = "protocol_error_job ended in an internal error, as it always does";

fn slow_compute_script(args: &Value, _: &Map<String, Value>) -> Step {
    Step::After(
        (seconds(args) * 1000.0) as u64,
        Outcome::Result(computed(args)),
    )
}

fn failing_job_script(_: &Value, _: &Map<String, Value>) -> Step {
    Step::After(1000, Outcome::Result(failed_on_purpose()))
}

fn protocol_error_script(_: &Value, _: &Map<String, Value>) -> Step {
    Step::After(
        200,
        Outcome::Error {
            code: crate::error::code::INTERNAL_ERROR,
            message: PROTOCOL_ERROR.into(),
        },
    )
}

fn deleted(args: &Value, answer: Option<&Value>) -> Value {
    let confirmed = accepted(answer)
        && answer
            .and_then(|a| a.pointer("/content/confirm"))
            .is_some_and(|c| c.as_bool() != Some(false));
    text_result(&if confirmed {
        format!("Deleted {}", filename(args))
    } else {
        format!("Kept {}: the deletion was not confirmed", filename(args))
    })
}

fn confirm_question(args: &Value) -> Value {
    form(&format!("Delete {}?", filename(args)), "confirm", "boolean")
}

fn confirm_delete_script(args: &Value, answers: &Map<String, Value>) -> Step {
    match answers.get("confirm") {
        Some(answer) => Step::After(0, Outcome::Result(deleted(args, Some(answer)))),
        None => Step::Ask(crate::engine::sort::object([(
            "confirm".to_string(),
            confirm_question(args),
        )])),
    }
}

fn multi_input_questions() -> [(&'static str, Value); 2] {
    [
        ("name", form("What is your name?", "name", "string")),
        ("confirm", form("Shall I go on?", "confirm", "boolean")),
    ]
}

fn multi_input_script(_: &Value, answers: &Map<String, Value>) -> Step {
    let open = crate::engine::sort::object(
        multi_input_questions()
            .into_iter()
            .filter(|(k, _)| !answers.contains_key(*k))
            .map(|(k, q)| (k.to_string(), q)),
    );
    if !open.is_empty() {
        return Step::Ask(open);
    }
    let name = answers
        .get("name")
        .and_then(|a| a.pointer("/content/name"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    Step::After(
        0,
        Outcome::Result(text_result(&format!("Both answers in: name {name}"))),
    )
}

fn greeting(answers: &Map<String, Value>) -> Option<String> {
    let answer = answers.get("user_name")?;
    let name = answer.pointer("/content/name").and_then(Value::as_str)?;
    Some(format!("Hello, {name}!"))
}

fn with_task_script(_: &Value, answers: &Map<String, Value>) -> Step {
    match greeting(answers) {
        Some(hello) => Step::After(0, Outcome::Result(text_result(&hello))),
        None => Step::Rounds(crate::engine::sort::object([(
            "user_name".to_string(),
            form("What is your name?", "name", "string"),
        )])),
    }
}

fn greet(_: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let name = args.get("name").and_then(Value::as_str).unwrap_or("World");
        content(vec![text(&format!("Hello, {name}!"))])
    })
}

fn slow_compute(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        ctx.sleep((seconds(&args) * 1000.0) as u32).await;
        blocks(computed(&args))
    })
}

fn failing_job(_: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async { Err(ToolError::failed("failing_job failed, as it always does")) })
}

fn protocol_error_job(_: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async { Err(Error::Internal(PROTOCOL_ERROR.into()).into()) })
}

fn confirm_delete(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let q = confirm_question(&args);
        let answer = ctx
            .ask_client_open("confirm", "elicitation/create", q["params"].clone())
            .await?;
        blocks(deleted(&args, Some(&answer)))
    })
}

fn multi_input(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let mut answers = Map::new();
        for (key, q) in multi_input_questions() {
            let answer = ctx
                .ask_client_open(key, "elicitation/create", q["params"].clone())
                .await?;
            answers.insert(key.to_string(), answer);
        }
        match multi_input_script(&Value::Null, &answers) {
            Step::After(_, Outcome::Result(r)) => blocks(r),
            _ => Err(Error::Internal("multi_input: answers missing".into()).into()),
        }
    })
}

/// The handler of a tool that only runs as a task: never called (the preamble refuses a client
/// without tasks), and refusing if it were.
fn task_only(_: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async {
        Err(Error::InvalidRequest(
            "Invalid Request: this tool runs only as a task; declare the io.modelcontextprotocol/tasks extension".into(),
        )
        .into())
    })
}

const fn task_fixture(
    name: &'static str,
    description: &'static str,
    input: &'static str,
    handler: crate::registry::Handler,
    task: TaskSupport,
) -> ToolDef {
    ToolDef {
        task,
        ..fixture(name, description, input, handler)
    }
}

/// The tasks fixture tools.
pub static TOOLS: &[ToolDef] = &[
    fixture(
        "greet",
        "Greets by name; never a task.",
        include_str!("../../../schema/conformance/greet.input.json"),
        greet,
    ),
    task_fixture(
        "slow_compute",
        "Computes for `seconds` seconds; a task for clients that declared tasks.",
        include_str!("../../../schema/conformance/slow_compute.input.json"),
        slow_compute,
        TaskSupport::Optional(TaskRun::Script(slow_compute_script)),
    ),
    task_fixture(
        "failing_job",
        "Always ends in a tool error after a second; only as a task.",
        NO_ARGUMENTS,
        failing_job,
        TaskSupport::Required(TaskRun::Script(failing_job_script)),
    ),
    task_fixture(
        "protocol_error_job",
        "Always ends in a protocol error.",
        NO_ARGUMENTS,
        protocol_error_job,
        TaskSupport::Optional(TaskRun::Script(protocol_error_script)),
    ),
    task_fixture(
        "confirm_delete",
        "Asks the user to confirm before it deletes `filename` (elicitation).",
        include_str!("../../../schema/conformance/confirm_delete.input.json"),
        confirm_delete,
        TaskSupport::Optional(TaskRun::Script(confirm_delete_script)),
    ),
    task_fixture(
        "multi_input",
        "Asks two questions at once (elicitation), then ends.",
        NO_ARGUMENTS,
        multi_input,
        TaskSupport::Optional(TaskRun::Script(multi_input_script)),
    ),
    task_fixture(
        "test_tool_with_task",
        "Asks for a name in the call's rounds, then greets in a task; only as a task.",
        NO_ARGUMENTS,
        task_only,
        TaskSupport::Required(TaskRun::Script(with_task_script)),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(content: Value) -> Value {
        json!({ "action": "accept", "content": content })
    }

    #[test]
    fn slow_compute_waits_its_seconds_then_completes() {
        let step = slow_compute_script(&json!({ "seconds": 2, "label": "x" }), &Map::new());
        let Step::After(ms, Outcome::Result(r)) = step else {
            panic!("{step:?}");
        };
        assert_eq!(ms, 2000);
        assert_eq!(r["content"][0]["text"], "Computed x in 2 s");
    }

    #[test]
    fn confirm_delete_asks_then_deletes_on_a_confirmation() {
        let args = json!({ "filename": "a.txt" });
        assert!(
            matches!(confirm_delete_script(&args, &Map::new()), Step::Ask(q) if q.contains_key("confirm"))
        );
        let answers = Map::from_iter([("confirm".into(), accept(json!({ "confirm": true })))]);
        let Step::After(0, Outcome::Result(r)) = confirm_delete_script(&args, &answers) else {
            panic!("no result");
        };
        assert_eq!(r["content"][0]["text"], "Deleted a.txt");
    }

    #[test]
    fn multi_input_asks_what_is_still_open() {
        let Step::Ask(both) = multi_input_script(&Value::Null, &Map::new()) else {
            panic!("asks");
        };
        assert_eq!(both.len(), 2);
        let one = Map::from_iter([("name".into(), accept(json!({ "name": "Ann" })))]);
        let Step::Ask(rest) = multi_input_script(&Value::Null, &one) else {
            panic!("asks the rest");
        };
        assert_eq!(rest.keys().collect::<Vec<_>>(), ["confirm"]);
    }

    #[test]
    fn the_composed_fixture_asks_in_rounds_before_its_task_exists() {
        assert!(matches!(
            with_task_script(&Value::Null, &Map::new()),
            Step::Rounds(_)
        ));
        let answers = Map::from_iter([("user_name".into(), accept(json!({ "name": "Alice" })))]);
        let Step::After(_, Outcome::Result(r)) = with_task_script(&Value::Null, &answers) else {
            panic!("a task");
        };
        assert_eq!(r["content"][0]["text"], "Hello, Alice!");
    }
}
