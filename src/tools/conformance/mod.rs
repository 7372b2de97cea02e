//! Fixtures of the official MCP conformance suite (`@modelcontextprotocol/conformance`): the tools,
//! resources and prompts its server scenarios call, with the contents they check. Served only by
//! the `conformance` wrangler environment (`npm run dev:conformance`).

pub mod fixtures;
pub mod mrtr;
pub mod tasks;

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use crate::mcp::logging::LogLevel;
use crate::registry::{
    Annotations, Handler, ToolContext, ToolDef, ToolError, ToolOutput, ToolResult,
};

const TOOLSET: &str = "conformance";
const NO_ARGUMENTS: &str = include_str!("../../../schema/conformance/no_arguments.input.json");

/// A 1×1 PNG, base64.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file, base64.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

fn text(s: &str) -> Value {
    json!({ "type": "text", "text": s })
}

fn image() -> Value {
    json!({ "type": "image", "data": PNG, "mimeType": "image/png" })
}

fn content(blocks: Vec<Value>) -> ToolResult {
    Ok(ToolOutput::Content(blocks))
}

fn simple_text(_: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async { content(vec![text("This is a simple text response for testing.")]) })
}

fn image_content(_: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async { content(vec![image()]) })
}

fn audio_content(_: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async {
        content(vec![
            json!({ "type": "audio", "data": WAV, "mimeType": "audio/wav" }),
        ])
    })
}

fn embedded_resource(_: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async {
        content(vec![json!({ "type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."
        }})])
    })
}

fn multiple_content_types(_: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async {
        content(vec![
            text("Multiple content types test:"),
            image(),
            json!({ "type": "resource", "resource": {
                "uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"
            }}),
        ])
    })
}

fn tool_with_logging(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        ctx.log(LogLevel::Info, json!("Tool execution started"));
        ctx.sleep(50).await;
        ctx.log(LogLevel::Info, json!("Tool processing data"));
        ctx.sleep(50).await;
        ctx.log(LogLevel::Info, json!("Tool execution completed"));
        content(vec![text("Tool with logging executed successfully")])
    })
}

fn tool_with_progress(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if i > 0 {
                ctx.sleep(50).await;
            }
            ctx.progress(p, Some(100.0), None);
        }
        content(vec![text("Progress test completed")])
    })
}

fn error_handling(_: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async {
        Err(ToolError::failed(
            "This tool intentionally returns an error for testing",
        ))
    })
}

fn sampling(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let prompt = args
            .get("prompt")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let answer = ctx
            .ask_client(
                "sampling/createMessage",
                json!({ "messages": [{ "role": "user", "content": text(prompt) }], "maxTokens": 100 }),
            )
            .await?;
        sampled(&answer)
    })
}

/// The answer of a sampling test tool: the text the client's model gave.
fn sampled(answer: &Value) -> ToolResult {
    let reply = answer
        .pointer("/content/text")
        .and_then(Value::as_str)
        .unwrap_or("");
    content(vec![text(&format!("LLM response: {reply}"))])
}

async fn elicit(ctx: &dyn ToolContext, message: &str, schema: Value) -> ToolResult {
    let answer = ctx
        .ask_client(
            "elicitation/create",
            json!({ "message": message, "requestedSchema": schema }),
        )
        .await?;
    let action = answer
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let fields = answer.get("content").cloned().unwrap_or_else(|| json!({}));
    content(vec![text(&format!(
        "User response: action={action}, content={fields}"
    ))])
}

fn elicitation(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let message = args
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("Please provide your information");
        let schema = json!({
            "type": "object",
            "properties": {
                "username": { "type": "string", "description": "User's response" },
                "email": { "type": "string", "description": "User's email address" }
            },
            "required": ["username", "email"]
        });
        elicit(ctx, message, schema).await
    })
}

fn elicitation_defaults(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "User name", "default": "John Doe" },
                "age": { "type": "integer", "description": "User age", "default": 30 },
                "score": { "type": "number", "description": "User score", "default": 95.5 },
                "status": { "type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active" },
                "verified": { "type": "boolean", "description": "Verification status", "default": true }
            },
            "required": []
        });
        elicit(
            ctx,
            "Please review and update the form fields with defaults",
            schema,
        )
        .await
    })
}

fn elicitation_enums(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let schema = json!({
            "type": "object",
            "properties": {
                "untitledSingle": { "type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"] },
                "titledSingle": { "type": "string", "description": "Select one option with titles", "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" }
                ]},
                "legacyEnum": { "type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"] },
                "untitledMulti": { "type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
                    "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                "titledMulti": { "type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3,
                    "items": { "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" }
                    ]}}
            },
            "required": []
        });
        elicit(ctx, "Please select options from the enum fields", schema).await
    })
}

fn reconnection(ctx: &dyn ToolContext, _: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        ctx.end_connection();
        ctx.sleep(100).await;
        content(vec![text(
            "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
        )])
    })
}

fn json_schema_tool(_: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move { content(vec![text(&format!("Received: {args}"))]) })
}

const fn fixture(
    name: &'static str,
    description: &'static str,
    input: &'static str,
    handler: Handler,
) -> ToolDef {
    ToolDef {
        toolset: TOOLSET,
        name,
        title: name,
        description,
        annotations: Annotations::READ_ONLY,
        input_schema: input,
        timeout_ms: 60_000,
        roles: &[],
        handler,
        ..ToolDef::DEFAULTS
    }
}

/// The fixture tools.
pub static TOOLS: &[ToolDef] = &[
    fixture("test_simple_text", "Returns a fixed text block.", NO_ARGUMENTS, simple_text),
    fixture("test_image_content", "Returns a PNG image block.", NO_ARGUMENTS, image_content),
    fixture("test_audio_content", "Returns a WAV audio block.", NO_ARGUMENTS, audio_content),
    fixture("test_embedded_resource", "Returns an embedded text resource.", NO_ARGUMENTS, embedded_resource),
    fixture("test_multiple_content_types", "Returns text, image and resource blocks.", NO_ARGUMENTS, multiple_content_types),
    fixture("test_tool_with_logging", "Sends three log messages before its result.", NO_ARGUMENTS, tool_with_logging),
    fixture("test_tool_with_progress", "Reports progress 0, 50, 100 of 100 before its result.", NO_ARGUMENTS, tool_with_progress),
    fixture("test_error_handling", "Always fails with isError: true.", NO_ARGUMENTS, error_handling),
    fixture(
        "test_sampling",
        "Asks the client's model to answer a prompt (sampling/createMessage).",
        include_str!("../../../schema/conformance/test_sampling.input.json"),
        sampling,
    ),
    fixture(
        "test_elicitation",
        "Asks the user for a username and email (elicitation/create).",
        include_str!("../../../schema/conformance/test_elicitation.input.json"),
        elicitation,
    ),
    fixture("test_elicitation_sep1034_defaults", "Elicitation with default values (SEP-1034).", NO_ARGUMENTS, elicitation_defaults),
    fixture("test_elicitation_sep1330_enums", "Elicitation with titled and multi-select enums (SEP-1330).", NO_ARGUMENTS, elicitation_enums),
    fixture(
        "test_reconnection",
        "Closes its connection after the priming event; the result arrives when the client resumes with Last-Event-ID.",
        NO_ARGUMENTS,
        reconnection,
    ),
    fixture(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        include_str!("../../../schema/conformance/json_schema_2020_12_tool.input.json"),
        json_schema_tool,
    ),
];
