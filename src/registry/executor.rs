//! Runs one tool call: validate → rate limit → result cache → run with a timeout → shape the MCP
//! result, recording events around it.

use futures::future::{select, Either};
use serde_json::{json, Value};

use super::cache::{self, CachePolicy};
use super::limits::Admission;
use super::{Tool, ToolContext, ToolError, ToolOutput, ToolResult};
use crate::clock;
use crate::error::{Error, Result};

/// How a call ended, for the invocation log line and the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The `CallToolResult` to send.
    pub result: Value,
    /// `ok`, `invalid_arguments`, `rate_limited`, `timeout`, `unavailable` (storage, internal or
    /// client faults: worth another try) or `tool_error`.
    pub outcome: &'static str,
    /// Wall time of the call in milliseconds.
    pub duration_ms: f64,
}

/// Executes `tool` with `args`, recording `tool_call`, `tool_result` and `error` events on the
/// session's event stream, with what the tool's schemas mark sensitive hidden from all three
/// ([`Tool::redact`], [`Tool::redact_output`]); the returned result is the caller's and keeps it. Never fails: every failure becomes an `isError: true` result whose text
/// says what went wrong and what to do, because MCP reports tool failures to the model, not as
/// protocol errors (2025-11-25, SEP-1303).
///
/// Arguments are validated before the rate limit is consulted, so a malformed call costs the
/// caller no token; every valid call takes one, whether the cache answers it or the handler does
/// (a limit counts calls, not work).
pub async fn execute(tool: &Tool, ctx: &dyn ToolContext, args: Value) -> CallOutcome {
    let started = clock::now_ms();
    let name = tool.def.name;
    // Events nobody keeps are not built: each is a redacted copy of the arguments or the result.
    let recorded = ctx.platform().records_events();
    let events = |event: &str, data: &dyn Fn() -> Value| {
        if recorded {
            ctx.platform().emit(event, data());
        }
    };
    // `name`/`args` are seed 003's field names; `tool`/`arguments` stay for existing readers.
    // Built by hand: `json!` would copy each value into the event once more.
    events("tool_call", &|| {
        let shown = tool.redact(&args);
        event_of([
            ("tool", json!(name)),
            ("arguments", shown.clone()),
            ("name", json!(name)),
            ("args", shown),
        ])
    });

    // Only a recorded event of a tool with sensitive fields needs the arguments again, to hide
    // their values.
    let secret_args = if recorded && tool.has_sensitive() {
        args.clone()
    } else {
        Value::Null
    };
    let checked = if tool.validates_itself() {
        Ok(())
    } else {
        tool.check_input(&args)
    };
    let outcome = match checked {
        Err(e) => Err(e),
        Ok(()) => match admit(tool, ctx).await {
            Err(e) => Err(e),
            Ok(()) => match tool.def.cache {
                Some(policy) => cached(tool, ctx, args, policy).await,
                None => run(tool, ctx, args)
                    .await
                    .map(|(result, _)| (result, false)),
            },
        },
    };
    let duration_ms = clock::now_ms() - started;

    match outcome {
        Ok((result, cached)) => {
            events("tool_result", &|| {
                event_of([
                    ("tool", json!(name)),
                    ("duration_ms", json!(duration_ms)),
                    ("cached", json!(cached)),
                    ("result", tool.redact_output(&secret_args, &result)),
                ])
            });
            CallOutcome {
                result,
                outcome: "ok",
                duration_ms,
            }
        }
        Err(e) => {
            events("error", &|| {
                let shown = tool.redact_output(&secret_args, &json!(e.public_message()));
                json!({ "tool": name, "duration_ms": duration_ms,
                        "message": format!("Tool execution error: {}", shown.as_str().unwrap_or_default()),
                        "error": shown })
            });
            CallOutcome {
                result: render(tool, &e),
                outcome: e.label(),
                duration_ms,
            }
        }
    }
}

/// An event's object from its fields, each value moved in (not copied again, as `json!` would).
fn event_of<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// The `CallToolResult` (`isError: true`) of a call of `tool` that ended in `e`: in the tool's
/// dialect when it has one, so a client reads one shape for every answer; else the error's text,
/// with `structuredContent.error` for a coded one in the shape the tool's outputSchema admits
/// (clients validate structured content).
pub fn render(tool: &Tool, e: &ToolError) -> Value {
    if let Some(dialect) = tool.def.dialect {
        return refused(tool, (dialect.render)(tool.def, e));
    }
    let mut result =
        json!({ "content": [{ "type": "text", "text": e.public_message() }], "isError": true });
    if let Some(structured) = e.structured().filter(|s| tool.check_output(s).is_ok()) {
        result["structuredContent"] = structured;
    }
    result
}

/// Takes a rate-limit token for this call. Buckets belong to the caller, not the MCP session: a
/// signed-in user shares them across sessions (and with background runs acting for them); an
/// anonymous caller, who has no identity beyond the session, gets the session's.
async fn admit(tool: &Tool, ctx: &dyn ToolContext) -> ToolResult<()> {
    let owner = crate::limiter::owner(&ctx.caller(), &ctx.session_id());
    match ctx.platform().rate_limit(&owner, tool.def.name).await {
        Ok(Some((limit, Admission::Refused { retry_after_secs }))) => Err(ToolError::RateLimited {
            tool: tool.def.name,
            limit,
            retry_after_secs,
            progressive: tool.def.progressive_backoff,
        }),
        Ok(_) => Ok(()),
        // Fail open: the limiter guards capacity, it is not an access rule, so losing it for a
        // moment must not take every tool down with it. The line makes an outage visible.
        Err(e) => {
            crate::log::error!(
                "{}",
                json!({ "rate_limiter_unavailable": e.to_string(), "tool": tool.def.name })
            );
            Ok(())
        }
    }
}

/// Answers from the result cache when it holds this call, else runs the tool and stores a
/// successful result. The cache failing never fails the call: it only costs the handler's work.
async fn cached(
    tool: &Tool,
    ctx: &dyn ToolContext,
    args: Value,
    policy: CachePolicy,
) -> ToolResult<(Value, bool)> {
    let key = match cache_key(tool, ctx, &args, policy).await {
        Ok(k) => Some(k),
        Err(e) => {
            log_cache_fault("key", &e);
            None
        }
    };
    let bypass = ctx.cache_bypass();
    if let (Some(k), false) = (&key, bypass) {
        match ctx.cache_get(k).await {
            Ok(Some(stored)) => {
                if let Some(hit) = cache::hit(&stored) {
                    return Ok((hit, true));
                }
            }
            Ok(None) => {}
            Err(e) => log_cache_fault("get", &e),
        }
    }
    let (mut result, summarized) = run(tool, ctx, args).await?;
    if let (Some(k), true) = (&key, cache::storable(&result)) {
        let entry = cache::entry(&result, summarized);
        if let Err(e) = ctx.cache_put(k, &entry, policy.ttl_secs).await {
            log_cache_fault("put", &e);
        }
    }
    cache::mark(&mut result, if bypass { "bypass" } else { "miss" });
    Ok((result, false))
}

/// The cache key of this call under `policy`: scoped by the caller and the data generation when
/// the policy says the result depends on them.
async fn cache_key(
    tool: &Tool,
    ctx: &dyn ToolContext,
    args: &Value,
    policy: CachePolicy,
) -> Result<String> {
    let generation = match policy.generation {
        Some(read) => Some(read(ctx).await?),
        None => None,
    };
    let caller = policy.per_caller.then(|| ctx.caller());
    Ok(cache::key(
        &tool.def.id(),
        args,
        caller.as_ref(),
        generation,
    ))
}

fn log_cache_fault(op: &str, e: &Error) {
    crate::log::error!("{}", json!({ "result_cache": op, "error": e.to_string() }));
}

/// Runs the handler under the tool's timeout (the deployment's `TOOL_TIMEOUTS`, else the one it
/// declares) and shapes its output; also says whether the result's first text block is a summary
/// line.
async fn run(tool: &Tool, ctx: &dyn ToolContext, args: Value) -> ToolResult<(Value, bool)> {
    let name = tool.def.name;
    let limit = ctx
        .platform()
        .timeout_override(name)
        .unwrap_or(tool.def.timeout_ms);
    let out = match select((tool.def.handler)(ctx, args), ctx.sleep(limit)).await {
        Either::Left((r, _)) => r?,
        Either::Right(_) => {
            return Err(ToolError::Timeout(format!(
                "tool {name} did not finish within {limit} ms and was stopped; try again, or narrow the request"
            )))
        }
    };
    let summarized = matches!(out, ToolOutput::Described { .. });
    Ok((shape(tool, out)?, summarized))
}

/// The `CallToolResult` of a coded refusal that did not come from running the handler (marked
/// `isError: true`); should the refusal not fit the tool's outputSchema, its plain text.
pub fn refused(tool: &Tool, out: ToolOutput) -> Value {
    let mut result = shape(tool, out)
        .unwrap_or_else(|e| json!({ "content": [{ "type": "text", "text": e.public_message() }] }));
    result["isError"] = json!(true);
    result
}

/// The `CallToolResult` of `tool`'s answer `out`, as a call of it gives it (an MCP task's result
/// rendered after the call, `registry::task::Render`).
pub fn result_of(tool: &Tool, out: ToolOutput) -> Result<Value> {
    shape(tool, out)
}

fn shape(tool: &Tool, out: ToolOutput) -> Result<Value> {
    match out {
        ToolOutput::Structured(v) => {
            tool.check_output(&v)?;
            let text = serde_json::to_string(&v)?;
            Ok(json!({ "content": [{ "type": "text", "text": text }], "structuredContent": v }))
        }
        ToolOutput::Described { value, summary } => {
            tool.check_output(&value)?;
            let text = serde_json::to_string(&value)?;
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
