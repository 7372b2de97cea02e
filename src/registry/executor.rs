//! Runs one tool call: validate → run with a timeout → shape the MCP result, recording events around it.

use futures::future::{select, Either};
use serde_json::{json, Value};

use super::{Tool, ToolContext, ToolOutput};
use crate::clock;
use crate::error::{Error, Result};

/// How a call ended, for the invocation log line and the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The `CallToolResult` to send.
    pub result: Value,
    /// `ok`, `invalid_arguments`, `timeout`, `unavailable` (storage, internal or client faults: worth
    /// another try) or `tool_error`.
    pub outcome: &'static str,
    /// Wall time of the call in milliseconds.
    pub duration_ms: f64,
}

/// Executes `tool` with `args`, recording `tool_call`, `tool_result` and `error` events on the
/// session's event stream. Never fails: every failure becomes an `isError: true` result whose text
/// says what went wrong and what to do, because MCP reports tool failures to the model, not as
/// protocol errors (2025-11-25, SEP-1303).
pub async fn execute(tool: &Tool, ctx: &dyn ToolContext, args: Value) -> CallOutcome {
    let started = clock::now_ms();
    let name = tool.def.name;
    let events = |event: &str, data: Value| ctx.platform().emit(event, data);
    events(
        "tool_call",
        json!({ "tool": name, "arguments": tool.redact(&args) }),
    );

    let mut cached = false;
    let outcome = match tool.check_input(&args) {
        Err(e) => Err(e),
        Ok(()) => {
            let run = (tool.def.handler)(ctx, args);
            let limit = tool.def.timeout_ms;
            match select(run, ctx.sleep(limit)).await {
                Either::Left((r, _)) => r,
                Either::Right(_) => Err(Error::Timeout(format!(
                    "tool {name} did not finish within {limit} ms and was stopped; try again, or narrow the request"
                ))),
            }
        }
    }
    .and_then(|out| {
        cached = matches!(out, ToolOutput::Described { cached: true, .. });
        shape(tool, out)
    });
    let duration_ms = clock::now_ms() - started;

    match outcome {
        Ok(result) => {
            events(
                "tool_result",
                json!({ "tool": name, "duration_ms": duration_ms, "cached": cached, "result": result }),
            );
            CallOutcome {
                result,
                outcome: "ok",
                duration_ms,
            }
        }
        Err(e) => {
            let label = match e {
                Error::InvalidArguments(_) => "invalid_arguments",
                Error::Timeout(_) => "timeout",
                Error::Storage(_) | Error::Internal(_) | Error::Client(_) => "unavailable",
                _ => "tool_error",
            };
            let text = e.public_message();
            events(
                "error",
                json!({ "tool": name, "duration_ms": duration_ms, "error": text }),
            );
            let result = json!({ "content": [{ "type": "text", "text": text }], "isError": true });
            CallOutcome {
                result,
                outcome: label,
                duration_ms,
            }
        }
    }
}

fn shape(tool: &Tool, out: ToolOutput) -> Result<Value> {
    match out {
        ToolOutput::Structured(v) => {
            tool.check_output(&v)?;
            let text = serde_json::to_string_pretty(&v)?;
            Ok(json!({ "content": [{ "type": "text", "text": text }], "structuredContent": v }))
        }
        ToolOutput::Described { value, summary, .. } => {
            tool.check_output(&value)?;
            let text = serde_json::to_string_pretty(&value)?;
            Ok(json!({
                "content": [{ "type": "text", "text": summary }, { "type": "text", "text": text }],
                "structuredContent": value,
            }))
        }
        ToolOutput::Content(blocks) if !tool.has_output_schema() => {
            Ok(json!({ "content": blocks }))
        }
        ToolOutput::Content(_) => Err(Error::Internal(format!(
            "tool {} has an outputSchema but returned plain content",
            tool.def.id()
        ))),
    }
}
