//! The 2026-07-28 (modern, stateless) lane of `/mcp`: every request stands alone. It is served in
//! the Worker itself, with no session object: the envelope is checked (`mcp::modern`), then the
//! request is dispatched to the same registry and executor the 2025 session lane uses.
//!
//! What a session used to carry travels with the request instead: the protocol version, client
//! capabilities and log level in `_meta`; answers the server asked for in `inputResponses`, with
//! the answers of earlier rounds in a sealed, single-use `requestState` (`mcp::request_state`).
//! Tools that keep state (chain executions, the travel assistant's mode) run in Durable Objects
//! of their own for signed-in callers (`runs`).
//!
//! `subscriptions/listen` streams are held by a `Listeners` object per caller (`listen`), so that
//! changes made by other requests reach them.

mod call;
mod idempotency;
pub mod listen;
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
use crate::mcp::subscriptions;
use crate::mcp::{self as protocol, version};
use crate::registry::{Caller, Registry, Tool};
use crate::session::levels;
use crate::store::services::Services;
use crate::tools::conformance::fixtures;
use crate::tools::flowmind::levels::{self as flowmind_levels, Level, Thresholds};

/// How long clients may cache `server/discover` and list results (`ttlMs`): the tool set changes
/// with a deployment, or when a signed-in caller reaches a new FlowMind level (announced at once
/// on their `subscriptions/listen` streams; otherwise a minute late at most, and a locked call says
/// what to do).
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
        crate::log::error!("{}", json!({ "error": e.to_string() }));
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
    let registry = crate::store::registry(cfg.catalog)?;
    let id = r.id.clone();
    if let Some(change) = conformance_hook(cfg, &r) {
        return match listen::trigger(env, &listen::owner_of(caller, req), change).await {
            Ok(result) => json_response(&response(&id, modern::complete(result)), 200),
            Err(e) => refuse(Some(&id), &e),
        };
    }
    let answer = match r.method.as_str() {
        "server/discover" => Ok(discover(cfg)),
        "subscriptions/listen" => {
            return match listen::open(env, cfg, caller, req, &r).await {
                Ok(resp) => Ok(resp),
                Err(e) => refuse(Some(&id), &e),
            };
        }
        "tools/list" => {
            let standing = flowmind_standing(env, &registry, cfg, caller).await;
            tools_list(&registry, &r, cfg, caller, standing)
        }
        "tools/call"
            if r
                .params
                .get("name")
                .and_then(Value::as_str)
                .and_then(|n| registry.get(n))
                .is_some_and(|t| t.def.keeps_session_state()) =>
        {
            let platform = match platform::open(env, cfg, registry, req, &r, caller).await {
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
            let platform = match platform::open(env, cfg, registry, req, &r, caller).await {
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
            let platform = match platform::open(env, cfg, registry, req, &r, caller).await {
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
            "{m} is not a 2026-07-28 method of this server (server/discover lists what it serves; initialize, ping, logging/setLevel and resources/subscribe belong to the 2025 session lane; subscriptions/listen streams change notifications)"
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

/// The change a `tools/call` of the conformance catalog's diagnostic hooks announces
/// (`listen::hook`); `None` for every other request and in the production catalog.
fn conformance_hook(cfg: &Config, r: &modern::Request) -> Option<subscriptions::Change> {
    if !cfg.catalog.has_fixtures() || r.method != "tools/call" {
        return None;
    }
    r.params
        .get("name")
        .and_then(Value::as_str)
        .and_then(listen::hook)
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

/// What the modern lane declares: the 2025 capabilities, with `listChanged` only for the lists a
/// `subscriptions/listen` stream really announces (`listen::offer`) and no resource subscriptions
/// (the resources served never change while a deployment runs).
fn capabilities(cfg: &Config) -> Value {
    let mut caps = protocol::capabilities(cfg.catalog);
    let offer = listen::offer(cfg);
    if let Some(resources) = caps.get_mut("resources") {
        *resources = json!({});
    }
    caps["tools"] = if offer.tools {
        json!({ "listChanged": true })
    } else {
        json!({})
    };
    if let Some(prompts) = caps.get_mut("prompts") {
        *prompts = if offer.prompts {
            json!({ "listChanged": true })
        } else {
            json!({})
        };
    }
    caps
}

/// The `server/discover` result.
fn discover(cfg: &Config) -> Value {
    json!({
        "supportedVersions": version::ADVERTISED,
        "capabilities": capabilities(cfg),
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
            let services = Services::with_config(env.clone(), registry.clone(), cfg);
            levels::user_successes(&services, user)
                .await
                .unwrap_or_else(|e| {
                    crate::log::error!("{}", json!({ "flowmind_progress": e.to_string() }));
                    0
                })
        }
        None => 0,
    };
    Some((t, n, t.level(n)))
}

/// `tools/list`: the caller's tools in name order (deterministic), paged as in the 2025 lane,
/// without the tools that keep session state (`ToolDef::state`) for anonymous callers nor the FlowMind tools the caller's level
/// (`standing`) does not allow yet; both are left out before paging, so pages are full. The list
/// depends on the caller, so it is cacheable only privately.
fn tools_list(
    registry: &Registry,
    r: &modern::Request,
    cfg: &Config,
    caller: &Caller,
    standing: Option<(Thresholds, u64, Level)>,
) -> Result<Value> {
    let level = standing.map(|(_, _, l)| l);
    let anonymous = caller.user.is_none();
    // Filtered before paging, so every page but the last is full and a cursor (the last name of
    // its page) means the same position whichever tools are left out.
    let visible =
        |t: &Tool| levels::allowed(level, t) && !(anonymous && t.def.keeps_session_state());
    let mut result = registry.tools_list(&r.params, cfg.tools_page_size, caller, &visible)?;
    result["ttlMs"] = json!(LIST_TTL_MS);
    result["cacheScope"] = json!("private");
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Catalog;

    fn config(pairs: &[(&str, &str)]) -> Config {
        Config::from_lookup(|n| {
            pairs
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        })
    }

    fn list_request(cursor: Option<&str>) -> modern::Request {
        let mut params = serde_json::Map::new();
        if let Some(c) = cursor {
            params.insert("cursor".into(), json!(c));
        }
        modern::Request {
            id: RequestId::from_value(&json!(1)).expect("an integer id"),
            method: "tools/list".into(),
            params,
            capabilities: json!({}),
            log_level: None,
        }
    }

    #[test]
    fn list_changed_is_declared_only_where_a_listen_stream_delivers_it() {
        let caps = capabilities(&config(&[]));
        assert_eq!(
            caps["tools"],
            json!({ "listChanged": true }),
            "levels on by default"
        );
        assert_eq!(caps["resources"], json!({}), "the vocabulary never changes");
        assert!(caps.get("prompts").is_none());
        let off = capabilities(&config(&[("FLOWMIND_LEVELS", "off")]));
        assert_eq!(off["tools"], json!({}));
        let fixtures = capabilities(&config(&[
            ("MCP_CATALOG", "conformance"),
            ("FLOWMIND_LEVELS", "off"),
        ]));
        assert_eq!(fixtures["tools"], json!({ "listChanged": true }));
        assert_eq!(fixtures["prompts"], json!({ "listChanged": true }));
        assert_eq!(fixtures["resources"], json!({}));
    }

    #[test]
    fn anonymous_pages_are_full_until_the_last_and_hold_only_visible_tools() {
        let registry = Registry::new(crate::tools::catalog(Catalog::Production))
            .expect("the production registry builds");
        let cfg = config(&[("TOOLS_PAGE_SIZE", "3")]);
        let caller = Caller::anonymous();
        let standing = Some((Thresholds::default(), 0, Level::Beginner));
        let mut cursor: Option<String> = None;
        let mut pages: Vec<Vec<String>> = Vec::new();
        loop {
            let page = tools_list(
                &registry,
                &list_request(cursor.as_deref()),
                &cfg,
                &caller,
                standing,
            )
            .expect("a page");
            let names: Vec<String> = page["tools"]
                .as_array()
                .expect("tools")
                .iter()
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect();
            pages.push(names);
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
        let (last, full) = pages.split_last().expect("at least one page");
        assert!(full.iter().all(|p| p.len() == 3), "{pages:?}");
        assert!(!last.is_empty() && last.len() <= 3);
        let names: Vec<&String> = pages.iter().flatten().collect();
        let session_tools: Vec<&str> = registry
            .tools()
            .filter(|t| t.def.keeps_session_state())
            .map(|t| t.def.name)
            .collect();
        for hidden in session_tools
            .iter()
            .chain(&["compose_workflow", "list_available_contexts"])
        {
            assert!(!names.iter().any(|n| n == hidden), "{hidden} is listed");
        }
        assert!(names.iter().any(|n| *n == "field_request"));
        assert!(
            names.windows(2).all(|w| w[0] < w[1]),
            "name order, no repeats"
        );
    }

    #[test]
    fn session_state_and_backoff_are_declared_on_the_tools() {
        let registry = crate::registry::Registry::new(crate::tools::catalog(Catalog::Production))
            .expect("the production registry builds");
        let keeps: Vec<&str> = registry
            .tools()
            .filter(|t| t.def.keeps_session_state())
            .map(|t| t.def.name)
            .collect();
        for name in [
            "execute_chain",
            "get_chain_status",
            "resume_chain",
            "cancel_chain",
            "execute_workflow",
            "initialize_travel_assistant",
            "switch_mode",
            "get_mode_indicator",
        ] {
            assert!(keeps.contains(&name), "{name} keeps no session state");
        }
        assert_eq!(keeps.len(), 8, "{keeps:?}");
        let backs_off = |n: &str| registry.get(n).is_some_and(|t| t.def.progressive_backoff);
        assert!(backs_off("field_request") && !backs_off("get_help"));
    }
}
