//! FlowMind's progressive authorization, written once for every lane (`tools::flowmind::levels`
//! has the rules): counts the caller's successful FlowMind calls, hides and refuses the tools
//! their level does not allow, and announces a level change with `_unlocks` and
//! `notifications/tools/list_changed`.
//!
//! The caller is the token's user, whose count lives in D1 (`flowmind_progress`) and follows them
//! into every session and lane; an anonymous caller is counted where the [`Host`] can keep a count
//! (a 2025 session, in its own storage, so a new anonymous session starts as a beginner) and is a
//! beginner where it cannot (a 2026-07-28 request stands alone).

use serde_json::{json, Value};

use super::listen;
use super::{Era, Host};
use crate::clock;
use crate::error::Result;
use crate::mcp::message::notification;
use crate::mcp::subscriptions::Change;
use crate::registry::{Caller, EnvServices, Registry, Tool};
use crate::store::services::Services;
use crate::tools::flowmind::levels::{self, Level, Thresholds};
use crate::tools::flowmind::{insights, performance};

/// The FlowMind tools this deployment has, by name.
fn known(registry: &Registry) -> Vec<&'static str> {
    registry
        .tools()
        .filter(|t| levels::is_gated(t.def.toolset, t.def.name))
        .map(|t| t.def.name)
        .collect()
}

/// A signed-in user's count of successful FlowMind calls, kept in D1 for every session and lane.
pub(crate) async fn user_successes(services: &Services, user: &str) -> Result<u64> {
    let rows = services
        .query(
            "SELECT successes FROM flowmind_progress WHERE caller = ?1",
            vec![json!(user)],
        )
        .await?;
    Ok(rows
        .first()
        .and_then(|r| r["successes"].as_u64())
        .unwrap_or(0))
}

/// Adds one successful call to a signed-in user's count and returns the new count, in one upsert,
/// so concurrent sessions (and 2026-07-28 calls) of the same user never lose a count. When the
/// count reaches a new level, the user's open `subscriptions/listen` streams are told their tool
/// list changed, whichever lane the call came from.
pub(crate) async fn record_user(services: &Services, user: &str) -> Result<u64> {
    let rows = services
        .query(
            "INSERT INTO flowmind_progress (caller, successes, updated_at) VALUES (?1, 1, ?2) \
             ON CONFLICT (caller) DO UPDATE SET successes = successes + 1, updated_at = ?2 \
             RETURNING successes",
            vec![json!(user), json!(clock::now_ms() as i64)],
        )
        .await?;
    let n = rows
        .first()
        .and_then(|r| r["successes"].as_u64())
        .unwrap_or(0);
    if let Some(t) = services.flowmind_levels() {
        if t.level(n) > t.level(n.saturating_sub(1)) {
            listen::announce_logged(services.env(), &listen::user_owner(user), Change::Tools).await;
        }
    }
    Ok(n)
}

async fn successes(host: &dyn Host, caller: &Caller) -> Result<u64> {
    match &caller.user {
        Some(user) => user_successes(host.services(), user).await,
        None => host.anonymous_successes(),
    }
}

/// Adds one successful call and returns the new count.
async fn record(host: &dyn Host, caller: &Caller) -> Result<u64> {
    match &caller.user {
        Some(user) => record_user(host.services(), user).await,
        None => {
            let n = successes(host, caller).await? + 1;
            host.set_anonymous_successes(n)?;
            Ok(n)
        }
    }
}

/// The caller's count and level, or `None` when progressive authorization is off. When the count
/// cannot be read the caller is taken as a beginner: a storage fault never widens access.
pub async fn standing(host: &dyn Host, caller: &Caller) -> Option<(Thresholds, u64, Level)> {
    let t = host.config().flowmind_levels?;
    let n = successes(host, caller).await.unwrap_or_else(|e| {
        crate::log::error!("{}", json!({ "flowmind_progress": e.to_string() }));
        0
    });
    Some((t, n, t.level(n)))
}

/// Whether a caller at `level` (`None`: no gating) may see and call `tool`.
pub(crate) fn allowed(level: Option<Level>, tool: &Tool) -> bool {
    match level {
        Some(l) if levels::is_gated(tool.def.toolset, tool.def.name) => {
            levels::allows(l, tool.def.name)
        }
        _ => true,
    }
}

/// The `tools/call` result refusing a FlowMind tool the caller's level does not allow yet, or
/// `None` when the call may go ahead. An `isError` result rather than "unknown tool": the model
/// learns what the tool needs and how to get there (the seed's errors teach), and structured in
/// FlowMind's error format when the tool's outputSchema admits it.
pub async fn refusal(host: &dyn Host, caller: &Caller, tool: &Tool) -> Option<Value> {
    if !levels::is_gated(tool.def.toolset, tool.def.name) {
        return None;
    }
    let started = clock::now_ms();
    let standing = standing(host, caller).await?;
    locked(host.registry(), tool, standing, started)
}

/// The refusal of `tool` for a caller of `standing` (thresholds, count, level), or `None` when the
/// level allows it. `started`: when the call began, for `_performance`.
fn locked(
    registry: &Registry,
    tool: &Tool,
    (t, n, level): (Thresholds, u64, Level),
    started: f64,
) -> Option<Value> {
    let name = tool.def.name;
    if levels::allows(level, name) {
        return None;
    }
    let known = known(registry);
    let message = levels::locked_message(name, level, &t, n, &known);
    let needed = levels::needed_for(name);
    let example = json!({
        "query": "The checkout API is returning 500 errors in production and customers cannot pay",
        "extracted_variables": { "domain": "technical", "technology": "nodejs", "urgency": "critical" },
        "confidence_level": 0.7,
    });
    let mut structured = json!({
        "success": false,
        "error": {
            "code": "TOOL_LOCKED",
            "message": message,
            "fix": {
                "instruction": format!("Use field_request or get_help successfully {} more time(s) to reach {}.", t.needed(needed).saturating_sub(n), needed.as_str()),
                "example": { "tool": "field_request", "arguments": example },
                "why": "FlowMind unlocks its tools progressively (beginner, intermediate, advanced) as a caller shows it can use the simpler ones well.",
            },
        },
        "guidance": { "level": level.as_str(), "needed_level": needed.as_str(), "successful_calls": n, "max_complexity": level.max_complexity() },
        "partial_results": { "message": format!("{name} was not run."), "blocked_by": "authorization_level" },
        "teaching": {
            "tip": levels::teaching_note(level, &t, n),
            "pattern": "field_request to find a context, get_help when stuck; each successful call counts towards the next level",
            "confidence_calibration": "Not measured: the call was refused before it ran.",
            "level": level.as_str(),
        },
        "next_actions": [
            { "tool": "field_request", "reason": "Available at your level: find the context that fits the request", "parameters": example },
            { "tool": "get_help", "reason": "Explains FlowMind's tools and levels", "parameters": { "help_type": "concept", "specific_question": name } },
        ],
        "_performance": performance(started, 0.0),
    });
    structured["_insights"] = insights(&structured);
    let mut result = json!({ "content": [{ "type": "text", "text": message }], "isError": true });
    if tool.check_output(&structured).is_ok() {
        result["structuredContent"] = structured;
    }
    Some(result)
}

/// After a FlowMind call: counts it when it succeeded, marks the answer with the caller's level
/// (`teaching.level`) and, when this call took the caller to a new level, adds `_unlocks` and tells
/// the client its tool list changed through `notify` (an MCP call's own stream, before the result).
///
/// A 2026-07-28 call only counts a signed-in caller's success: its next `tools/list` (or their
/// `subscriptions/listen` stream) shows what it unlocked.
pub async fn after_call(
    host: &dyn Host,
    caller: &Caller,
    tool: &Tool,
    result: &mut Value,
    notify: &dyn Fn(&Value),
) {
    if !levels::is_gated(tool.def.toolset, tool.def.name) {
        return;
    }
    let succeeded = result.get("isError") != Some(&Value::Bool(true))
        && result.pointer("/structuredContent/success") != Some(&Value::Bool(false));
    if host.era() == Era::Modern {
        if let (true, Some(user)) = (succeeded, &caller.user) {
            if let Err(e) = record_user(host.services(), user).await {
                crate::log::error!("{}", json!({ "flowmind_progress": e.to_string() }));
            }
        }
        return;
    }
    let Some(t) = host.config().flowmind_levels else {
        return;
    };
    let counted = if succeeded {
        record(host, caller).await
    } else {
        successes(host, caller).await
    };
    let n = match counted {
        Ok(n) => n,
        Err(e) => {
            crate::log::error!("{}", json!({ "flowmind_progress": e.to_string() }));
            return;
        }
    };
    let level = t.level(n);
    let before = if succeeded {
        t.level(n.saturating_sub(1))
    } else {
        level
    };
    let Some(structured) = result.get("structuredContent").cloned() else {
        return;
    };
    let mut updated = structured.clone();
    if let Some(teaching) = updated.get_mut("teaching").and_then(Value::as_object_mut) {
        teaching.insert("level".into(), json!(level.as_str()));
        teaching.insert(
            "progress".into(),
            json!(levels::teaching_note(level, &t, n)),
        );
    }
    let unlocked = level > before;
    if unlocked {
        let u = levels::unlocks(before, level, &known(host.registry()), &t, n);
        if let Some(teaching) = updated.get_mut("teaching").and_then(Value::as_object_mut) {
            teaching.insert("unlock".into(), json!(u["message"].clone()));
        }
        updated["_unlocks"] = u;
    }
    if let Some(blocks) = result.get_mut("content").and_then(Value::as_array_mut) {
        for b in blocks.iter_mut() {
            let same = b["text"]
                .as_str()
                .and_then(|s| serde_json::from_str::<Value>(s).ok())
                .is_some_and(|v| v == structured);
            if same {
                if let Ok(text) = serde_json::to_string(&updated) {
                    b["text"] = json!(text);
                }
            }
        }
    }
    result["structuredContent"] = updated;
    if unlocked {
        notify(&notification("notifications/tools/list_changed", json!({})));
    }
}
