//! Fixtures of the conformance suite's 2026-07-28 scenarios: tools that ask the client for input
//! under the keys the scenarios expect (multi-round-trip requests, SEP-2322), the capability and
//! logging probes of the stateless scenario (SEP-2575), and a tool whose `region` argument is
//! mirrored into the `Mcp-Param-Region` header (SEP-2243). The three single-question fixtures ask
//! open questions (`ask_client_open`): the suite answers them before they are asked, which a
//! stateless server may accept; every real tool's question is sealed in the `requestState`.

use futures::future::{join_all, LocalBoxFuture};
use serde_json::{json, Value};

use super::{content, fixture, sampled, text, NO_ARGUMENTS};
use crate::mcp::logging::LogLevel;
use crate::registry::{ToolContext, ToolDef, ToolResult};

fn form(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { field: { "type": kind } },
            "required": [field]
        }
    })
}

fn sample(prompt: &str, max_tokens: u32) -> Value {
    json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
        "maxTokens": max_tokens
    })
}

/// A form answer's field, or `?` when the user gave none.
fn field(answer: &Value, name: &str) -> String {
    match answer.pointer(&format!("/content/{name}")) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "?".into(),
    }
}

fn elicitation(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let answer = ctx
            .ask_client_open(
                "user_name",
                "elicitation/create",
                form("What is your name?", "name", "string"),
            )
            .await?;
        content(vec![text(&format!("Hello, {}!", field(&answer, "name")))])
    })
}

fn sampling(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let answer = ctx
            .ask_client_open(
                "capital_question",
                "sampling/createMessage",
                sample("What is the capital of France?", 100),
            )
            .await?;
        sampled(&answer)
    })
}

fn list_roots(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let answer = ctx
            .ask_client_open("client_roots", "roots/list", json!({}))
            .await?;
        let roots: Vec<&str> = answer
            .get("roots")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|root| root.get("uri").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        content(vec![text(&format!("Client roots: {}", roots.join(", ")))])
    })
}

fn confirm(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let answer = ctx
            .ask_client_as(
                "confirm",
                "elicitation/create",
                form("Please confirm", "ok", "boolean"),
            )
            .await?;
        content(vec![text(&format!(
            "state-ok: the request state was verified; confirmed={}",
            field(&answer, "ok")
        ))])
    })
}

fn multiple_inputs(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        // Asked together, so one round returns all three questions.
        let answers = join_all([
            ctx.ask_client_as(
                "user_name",
                "elicitation/create",
                form("What is your name?", "name", "string"),
            ),
            ctx.ask_client_as(
                "greeting",
                "sampling/createMessage",
                sample("Generate a greeting", 50),
            ),
            ctx.ask_client_as("client_roots", "roots/list", json!({})),
        ])
        .await;
        let mut got = Vec::new();
        for a in answers {
            got.push(a?);
        }
        content(vec![text(&format!(
            "Hello, {}! Greeting: {}. Roots: {}",
            field(&got[0], "name"),
            got[1]
                .pointer("/content/text")
                .and_then(Value::as_str)
                .unwrap_or(""),
            got[2]
                .get("roots")
                .map(Value::to_string)
                .unwrap_or_default()
        ))])
    })
}

fn multi_round(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let name = ctx
            .ask_client_as(
                "step1",
                "elicitation/create",
                form("Step 1: What is your name?", "name", "string"),
            )
            .await?;
        let color = ctx
            .ask_client_as(
                "step2",
                "elicitation/create",
                form("Step 2: What is your favorite color?", "color", "string"),
            )
            .await?;
        content(vec![text(&format!(
            "{} likes {}",
            field(&name, "name"),
            field(&color, "color")
        ))])
    })
}

fn capabilities(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let caps = ctx.client_capabilities();
        let mut asks = Vec::new();
        if caps.get("sampling").is_some() {
            asks.push(ctx.ask_client_as(
                "sampled",
                "sampling/createMessage",
                sample("Say hello", 20),
            ));
        }
        if caps.get("elicitation").is_some() {
            asks.push(ctx.ask_client_as(
                "elicited",
                "elicitation/create",
                form("What is your name?", "name", "string"),
            ));
        }
        let n = asks.len();
        for a in join_all(asks).await {
            a?;
        }
        content(vec![text(&format!(
            "{n} inputs from the declared capabilities"
        ))])
    })
}

fn missing_capability(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        ctx.ask_client("sampling/createMessage", sample("Say hello", 20))
            .await?;
        content(vec![text("sampled")])
    })
}

fn logging(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        ctx.log(LogLevel::Info, json!("Tool execution started"));
        ctx.log(LogLevel::Info, json!("Tool execution completed"));
        content(vec![text("Tool with logging executed successfully")])
    })
}

fn streaming_elicitation(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        ctx.progress(0.0, Some(1.0), Some("asking"));
        let answer = ctx
            .ask_client_as(
                "user_name",
                "elicitation/create",
                form("What is your name?", "name", "string"),
            )
            .await?;
        content(vec![text(&format!("Hello, {}!", field(&answer, "name")))])
    })
}

fn mirrored_header(_: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move { content(vec![text(&format!("Received: {args}"))]) })
}

/// The 2026-07-28 fixture tools.
pub static TOOLS: &[ToolDef] = &[
    fixture(
        "test_input_required_result_elicitation",
        "Asks for a name (input key user_name).",
        NO_ARGUMENTS,
        elicitation,
    ),
    fixture(
        "test_input_required_result_sampling",
        "Asks the client's model a question (input key capital_question).",
        NO_ARGUMENTS,
        sampling,
    ),
    fixture(
        "test_input_required_result_list_roots",
        "Asks for the client's roots (input key client_roots).",
        NO_ARGUMENTS,
        list_roots,
    ),
    fixture(
        "test_input_required_result_request_state",
        "Asks for a confirmation; the answer comes back with the sealed request state.",
        NO_ARGUMENTS,
        confirm,
    ),
    fixture(
        "test_input_required_result_tampered_state",
        "Asks for a confirmation; a changed request state is rejected.",
        NO_ARGUMENTS,
        confirm,
    ),
    fixture(
        "test_input_required_result_multiple_inputs",
        "Asks for a name, a sampled greeting and the roots in one round.",
        NO_ARGUMENTS,
        multiple_inputs,
    ),
    fixture(
        "test_input_required_result_multi_round",
        "Asks two questions in two rounds.",
        NO_ARGUMENTS,
        multi_round,
    ),
    fixture(
        "test_input_required_result_capabilities",
        "Asks only what the declared client capabilities allow.",
        NO_ARGUMENTS,
        capabilities,
    ),
    fixture(
        "test_missing_capability",
        "Needs the sampling capability.",
        NO_ARGUMENTS,
        missing_capability,
    ),
    fixture(
        "test_logging_tool",
        "Logs two messages (sent only when the request asks for a log level).",
        NO_ARGUMENTS,
        logging,
    ),
    fixture(
        "test_streaming_elicitation",
        "Reports progress, then asks for a name.",
        NO_ARGUMENTS,
        streaming_elicitation,
    ),
    fixture(
        "test_mirrored_header",
        "Echoes its arguments; region is mirrored into the Mcp-Param-Region header.",
        include_str!("../../../schema/conformance/test_mirrored_header.input.json"),
        mirrored_header,
    ),
];
