//! The 2026-07-28 (modern, stateless) lane of `/mcp`: every request stands alone. It is served in
//! the Worker itself, with no session object: the envelope is checked (`mcp::modern`), then the
//! request is dispatched to the same registry and executor the 2025 session lane uses.
//!
//! What a session used to carry travels with the request instead: the protocol version, client
//! capabilities and log level in `_meta`; answers the server asked for in `inputResponses`, with
//! the answers of earlier rounds in a sealed, single-use `requestState` (`mcp::request_state`).
//! Tools that keep state (chain executions, the travel assistant's mode) run in Durable Objects
//! of their own for signed-in callers (`runs`).

mod call;
mod idempotency;
mod platform;
mod runs;

use std::rc::Rc;

use serde_json::{json, Value};
use worker::{Env, Request, Response};

use crate::edge::config::Config;
use crate::edge::http::{header, json_response};
use crate::error::{code, Error, Result};
use crate::mcp::message::{error_response, params_object, response, RequestId};
use crate::mcp::modern::{self, Message, Mirrored, META_SERVER_INFO};
use crate::mcp::{self as protocol, version};
use crate::registry::{Caller, Registry};
use crate::session::levels;
use crate::store::services::Services;
use crate::tools::conformance::fixtures;
use crate::tools::flowmind::levels::{self as flowmind_levels, Level, Thresholds};
use crate::tools::Catalog;
pub(crate) use platform::relay_to;
use platform::StatelessPlatform;

/// Tools that keep state in an MCP session, which 2026-07-28 requests do not have: chain
/// executions (FlowMind's workflow runs among them) run under the session's job leases and are
/// bound to it, and the travel assistant's mode is the session's. For a signed-in caller they run in a run object per run, or the caller's own object for the mode (`runs`);
/// anonymous 2026 callers are refused before anything is recorded.
pub const SESSION_TOOLS: &[&str] = &[
    "execute_chain",
    "get_chain_status",
    "resume_chain",
    "cancel_chain",
    "execute_workflow",
    "initialize_travel_assistant",
    "switch_mode",
    "get_mode_indicator",
];

/// How long clients may cache `server/discover` and list results (`ttlMs`): the tool set changes
/// with a deployment, or when a signed-in caller reaches a new FlowMind level (a minute late at
/// most, and a locked call says what to do).
const LIST_TTL_MS: u64 = 60_000;

/// The HTTP status of a refused modern request: as in the 2025 lane, except that an unknown
/// method is 404 (2026-07-28 transport, "Protocol Version Header").
fn status_of(e: &Error) -> u16 {
    if e.rpc_code() == code::METHOD_NOT_FOUND {
        404
    } else {
        e.http_status()
    }
}

/// A JSON-RPC error response of the modern lane.
pub(crate) fn refuse(id: Option<&RequestId>, e: &Error) -> Result<Response> {
    if !e.is_public() {
        worker::console_error!("{}", json!({ "error": e.to_string() }));
    }
    json_response(&error_response(id, e), status_of(e))
}

/// Serves a POST of the modern era. `body` is the parsed body, or the parse error.
pub async fn serve(
    req: &Request,
    env: &Env,
    cfg: &Config,
    caller: &Caller,
    body: std::result::Result<Value, Error>,
) -> Result<Response> {
    let body = match body {
        Ok(b) => b,
        Err(e) => return refuse(None, &e),
    };
    let mirrored = Mirrored {
        version: header(req, "mcp-protocol-version"),
        method: header(req, "mcp-method"),
        name: header(req, "mcp-name"),
        params: req
            .headers()
            .entries()
            .filter_map(|(k, v)| {
                let k = k.to_ascii_lowercase();
                k.strip_prefix("mcp-param-").map(|n| (n.to_string(), v))
            })
            .collect(),
    };
    let r = match modern::check(body, &mirrored) {
        Ok(Message::Request(r)) => r,
        Ok(Message::Notification) => return Ok(Response::empty()?.with_status(202)),
        Err((id, e)) => return refuse(id.as_ref(), &e),
    };
    let registry = crate::session::registry(cfg.catalog)?;
    let id = r.id.clone();
    let answer = match r.method.as_str() {
        "server/discover" => Ok(discover(cfg.catalog)),
        "tools/list" => {
            let standing = flowmind_standing(env, &registry, cfg, caller).await;
            tools_list(&registry, &r, cfg, caller, standing)
        }
        "tools/call"
            if r
                .params
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| SESSION_TOOLS.contains(&n)) =>
        {
            let platform = match StatelessPlatform::open(env, registry, req, &r, caller).await {
                Ok(p) => p,
                Err(e) => return refuse(Some(&id), &e),
            };
            return match runs::call(env, platform, caller, &r, req.inner().signal()).await {
                Ok(resp) => Ok(resp),
                Err(e) => refuse(Some(&id), &e),
            };
        }
        "tools/call" => {
            let started = crate::clock::now_ms();
            let gated = r
                .params
                .get("name")
                .and_then(Value::as_str)
                .and_then(|n| registry.get_for(n, caller))
                .filter(|t| flowmind_levels::is_gated(t.def.toolset, t.def.name));
            if let Some(tool) = gated {
                if let Some(standing) = flowmind_standing(env, &registry, cfg, caller).await {
                    if let Some(refused) = levels::locked(&registry, tool, standing, started) {
                        return json_response(&response(&id, modern::complete(refused)), 200);
                    }
                }
            }
            let platform = match StatelessPlatform::open(env, registry, req, &r, caller).await {
                Ok(p) => p,
                Err(e) => return refuse(Some(&id), &e),
            };
            return call::tools_call(platform, r, &mirrored, caller.clone(), req.inner().signal())
                .await;
        }
        "prompts/get"
            if cfg.catalog.has_fixtures()
                && r.params.get("name").and_then(Value::as_str) == Some(fixtures::INPUT_PROMPT) =>
        {
            let platform = match StatelessPlatform::open(env, registry, req, &r, caller).await {
                Ok(p) => p,
                Err(e) => return refuse(Some(&id), &e),
            };
            return match call::input_prompt(&platform, &r, caller).await {
                Ok(result) => json_response(&response(&id, result), 200),
                Err(e) => refuse(Some(&id), &e),
            };
        }
        m if cfg.catalog.has_fixtures() && FIXTURE_METHODS.contains(&m) => {
            fixture(m, &params_object(Some(&Value::Object(r.params.clone()))))
        }
        m => Err(Error::MethodNotFound(format!(
            "{m} is not a 2026-07-28 method of this server (server/discover lists what it serves; initialize, ping, logging/setLevel and resources/subscribe belong to the 2025 session lane)"
        ))),
    };
    match answer {
        Ok(result) => json_response(&response(&id, modern::complete(result)), 200),
        // An unknown resource is -32602 in 2026-07-28 (it was -32002), naming the URI in `data`.
        Err(Error::ResourceNotFound(m)) => {
            let mut reply = error_response(Some(&id), &Error::InvalidParams(m));
            reply["error"]["data"] = json!({ "uri": r.params.get("uri") });
            json_response(&reply, 200)
        }
        Err(e) => refuse(Some(&id), &e),
    }
}

/// The fixture methods the modern lane serves in the conformance catalog (subscriptions and
/// `logging/setLevel` were removed in 2026-07-28).
const FIXTURE_METHODS: &[&str] = &[
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

/// A fixture method's result, with the caching hints 2026-07-28 requires on lists and reads.
fn fixture(method: &str, params: &serde_json::Map<String, Value>) -> Result<Value> {
    let mut result = fixtures::request(method, params)?;
    if method.ends_with("/list") || method == "resources/read" {
        result["ttlMs"] = json!(LIST_TTL_MS);
        result["cacheScope"] = json!("public");
    }
    Ok(result)
}

/// What the modern lane declares: the 2025 capabilities without subscriptions (2026-07-28 moved
/// them to `subscriptions/listen`, which this server does not serve).
fn capabilities(catalog: Catalog) -> Value {
    let mut caps = protocol::capabilities(catalog);
    if let Some(resources) = caps.get_mut("resources") {
        *resources = json!({});
    }
    caps["tools"] = json!({});
    caps
}

/// The `server/discover` result.
fn discover(catalog: Catalog) -> Value {
    json!({
        "supportedVersions": version::ADVERTISED,
        "capabilities": capabilities(catalog),
        "instructions": protocol::INSTRUCTIONS,
        "ttlMs": LIST_TTL_MS,
        "cacheScope": "public",
        "_meta": { META_SERVER_INFO: { "name": protocol::SERVER_NAME, "title": "mcp-edge", "version": protocol::SERVER_VERSION } },
    })
}

/// FlowMind's progressive authorization on this lane (`None`: off): a signed-in caller's level
/// follows their count in D1, the same count their 2025 sessions keep; an anonymous caller has no
/// identity to count under between requests, so stays a beginner. When the count cannot be read
/// the caller is taken as a beginner: a storage fault never widens access.
async fn flowmind_standing(
    env: &Env,
    registry: &Rc<Registry>,
    cfg: &Config,
    caller: &Caller,
) -> Option<(Thresholds, u64, Level)> {
    let t = cfg.flowmind_levels?;
    let n = match &caller.user {
        Some(user) => {
            let services = Services::new(env.clone(), registry.clone());
            levels::user_successes(&services, user)
                .await
                .unwrap_or_else(|e| {
                    worker::console_error!("{}", json!({ "flowmind_progress": e.to_string() }));
                    0
                })
        }
        None => 0,
    };
    Some((t, n, t.level(n)))
}

/// `tools/list`: the caller's tools in name order (deterministic), paged as in the 2025 lane,
/// without the [`SESSION_TOOLS`] for anonymous callers nor the FlowMind tools the caller's level
/// (`standing`) does not allow yet. The list depends on the caller, so it is cacheable only
/// privately.
fn tools_list(
    registry: &Registry,
    r: &modern::Request,
    cfg: &Config,
    caller: &Caller,
    standing: Option<(Thresholds, u64, Level)>,
) -> Result<Value> {
    let cursor = match r.params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.as_str()),
        Some(_) => {
            return Err(Error::InvalidParams(
                "Invalid params: cursor must be a string".into(),
            ))
        }
    };
    let (mut tools, next) = registry.page(cursor, cfg.tools_page_size, caller)?;
    let level = standing.map(|(_, _, l)| l);
    tools.retain(|t| {
        t.get("name")
            .and_then(Value::as_str)
            .and_then(|n| registry.get(n))
            .is_none_or(|tool| levels::allowed(level, tool))
    });
    if caller.user.is_none() {
        tools.retain(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .is_none_or(|n| !SESSION_TOOLS.contains(&n))
        });
    }
    let mut result = json!({ "tools": tools, "ttlMs": LIST_TTL_MS, "cacheScope": "private" });
    if let Some(n) = next {
        result["nextCursor"] = json!(n);
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_tools_are_production_tools() {
        let registry = crate::registry::Registry::new(crate::tools::catalog(Catalog::Production))
            .expect("the production registry builds");
        for name in SESSION_TOOLS {
            assert!(registry.get(name).is_some(), "{name} is not a tool");
        }
    }
}
