//! The MCP server, once for both protocol eras: every method that is answered at once (`ping`,
//! `server/discover`, `tools/list`, `logging/setLevel`, `resources/*`, `prompts/*`,
//! `completion/complete`) is handled here ([`answer`]), and `tools/call` starts here
//! ([`prepare_call`]) before a lane runs it with its `registry::call::CallContext`.
//!
//! The era is a value ([`Era`]) read through a small [`Policy`] (list TTLs, `resultType`, error
//! codes), not a folder. What differs between the lanes that serve the eras (a 2025 session object
//! in `src/session/`, the Worker itself for 2026-07-28 requests in `src/stateless/`) is behind
//! [`Host`]: where the configuration, the registry and a caller's FlowMind count live.
//!
//! Also here, shared by both lanes: how replies stream ([`stream`]), FlowMind's progressive
//! authorization ([`levels`]) and the `subscriptions/listen` streams ([`listen`]).

pub mod levels;
pub mod listen;
pub mod stream;
pub mod tasks;

use std::rc::Rc;

use serde_json::{json, Map, Value};
use worker::{Env, Response};

use crate::edge::config::Config;
use crate::edge::http::{error_response_for, json_response};
use crate::error::{code, Error, Result};
use crate::mcp::logging::LogLevel;
use crate::mcp::message::{error_response, required_str, response, RequestId};
use crate::mcp::modern::META_SERVER_INFO;
use crate::mcp::{self as protocol, version};
use crate::registry::{Caller, Registry, Tool};
use crate::store::services::Services;
use crate::tools;
use crate::tools::conformance::fixtures;
use crate::tools::flowmind::levels::Level;

pub use crate::mcp::modern::Era;

/// What an era changes in the answers of the one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The era.
    pub era: Era,
    /// How long clients may cache `server/discover`, lists and reads (`ttlMs`; `None`: the era
    /// has no caching hints). The tool set changes with a deployment, or when a signed-in
    /// caller reaches a new FlowMind level (announced at once on their `subscriptions/listen`
    /// streams; otherwise a minute late at most, and a locked call says what to do).
    pub list_ttl_ms: Option<u64>,
    /// Results carry `resultType: "complete"` (2026-07-28, where a result may also be
    /// `input_required`).
    pub marks_complete: bool,
    /// An unknown method is answered with HTTP 404 (2026-07-28 transport, "Protocol Version
    /// Header"); otherwise with the error's own status.
    pub unknown_method_is_404: bool,
    /// An unknown resource is -32602 naming the URI in `data` (2026-07-28); otherwise -32002.
    pub unknown_resource_is_invalid_params: bool,
}

const LEGACY: Policy = Policy {
    era: Era::Legacy,
    list_ttl_ms: None,
    marks_complete: false,
    unknown_method_is_404: false,
    unknown_resource_is_invalid_params: false,
};

const MODERN: Policy = Policy {
    era: Era::Modern,
    list_ttl_ms: Some(60_000),
    marks_complete: true,
    unknown_method_is_404: true,
    unknown_resource_is_invalid_params: true,
};

impl Policy {
    /// The policy of `era`.
    pub const fn of(era: Era) -> Policy {
        match era {
            Era::Legacy => LEGACY,
            Era::Modern => MODERN,
        }
    }

    /// Adds the caching hints of the era to a list or read result (`scope`: `public` or
    /// `private`, for results that depend on the caller).
    fn cacheable(self, mut result: Value, scope: &str) -> Value {
        if let Some(ttl) = self.list_ttl_ms {
            result["ttlMs"] = json!(ttl);
            result["cacheScope"] = json!(scope);
        }
        result
    }

    /// A result as the era sends it.
    pub fn complete(self, mut result: Value) -> Value {
        if self.marks_complete {
            if let Value::Object(m) = &mut result {
                m.insert("resultType".into(), json!("complete"));
            }
        }
        result
    }

    /// The HTTP status of a refused request.
    pub fn status_of(self, e: &Error) -> u16 {
        if self.unknown_method_is_404 && e.rpc_code() == code::METHOD_NOT_FOUND {
            404
        } else {
            e.http_status()
        }
    }

    /// The JSON-RPC error response to request `id` (`None`: unknown) refused with `e`.
    pub fn refuse(self, id: Option<&RequestId>, e: &Error) -> Result<Response> {
        if !e.is_public() {
            crate::log::error!("{}", json!({ "error": e.to_string() }));
        }
        match self.era {
            Era::Legacy => error_response_for(e, id),
            Era::Modern => json_response(&error_response(id, e), self.status_of(e)),
        }
    }

    /// The response to request `id` of `params` that ended with `answer`.
    pub fn reply(
        self,
        id: &RequestId,
        params: &Map<String, Value>,
        answer: Result<Value>,
    ) -> Result<Response> {
        match answer {
            Ok(result) => json_response(&response(id, self.complete(result)), 200),
            Err(Error::ResourceNotFound(m)) if self.unknown_resource_is_invalid_params => {
                let mut reply = error_response(Some(id), &Error::InvalidParams(m));
                reply["error"]["data"] = json!({ "uri": params.get("uri") });
                json_response(&reply, 200)
            }
            Err(e) => self.refuse(Some(id), &e),
        }
    }
}

/// What both lanes serve with, read once per session object or request: the deployment's
/// settings, its tools, and the env's services over them.
pub struct Deployment {
    /// The deployment's settings.
    pub cfg: Rc<Config>,
    /// The deployment's tools.
    pub registry: Rc<Registry>,
    /// The env's services.
    pub services: Services,
}

impl Deployment {
    /// The deployment of `env` with settings `cfg` and tools `registry`.
    pub fn new(env: &Env, cfg: Rc<Config>, registry: Rc<Registry>) -> Deployment {
        Deployment {
            services: Services::with_config(env.clone(), registry.clone(), &cfg),
            cfg,
            registry,
        }
    }
}

/// What the server needs from the lane it runs in.
pub trait Host {
    /// The era the lane serves.
    fn era(&self) -> Era;

    /// What the lane serves with: the deployment's settings, tools and the env's services.
    fn deployment(&self) -> &Deployment;

    /// The deployment's settings.
    fn config(&self) -> &Config {
        &self.deployment().cfg
    }

    /// The deployment's tools.
    fn registry(&self) -> &Registry {
        &self.deployment().registry
    }

    /// The env's services (D1 keeps a signed-in caller's FlowMind count).
    fn services(&self) -> &Services {
        &self.deployment().services
    }

    /// An anonymous caller's count of successful FlowMind calls, where the lane can keep one (a
    /// session); 0 where it cannot (a request that stands alone).
    fn anonymous_successes(&self) -> Result<u64> {
        Ok(0)
    }

    /// Keeps an anonymous caller's count (see [`Host::anonymous_successes`]).
    fn set_anonymous_successes(&self, _n: u64) -> Result<()> {
        Ok(())
    }

    /// Keeps the level below which log messages are not sent (`logging/setLevel`; only a session
    /// has somewhere to keep it).
    fn set_log_level(&self, _level: LogLevel) -> Result<()> {
        Err(Error::Internal(
            "logging/setLevel reached a lane without a session".into(),
        ))
    }
}

/// Answers `method` with `params` from `caller`: every method but `tools/call`, in either era.
pub async fn answer(
    host: &dyn Host,
    caller: &Caller,
    method: &str,
    params: &Map<String, Value>,
) -> Result<Value> {
    let policy = Policy::of(host.era());
    let cfg = host.config();
    let fixtures = cfg.catalog.has_fixtures();
    match (method, policy.era) {
        ("ping", Era::Legacy) => Ok(json!({})),
        ("initialize", Era::Legacy) => Err(Error::InvalidRequest(
            "Invalid Request: this session is already initialized; send initialize without Mcp-Session-Id to start a new session".into(),
        )),
        ("server/discover", Era::Modern) => Ok(discover(cfg)),
        ("tools/list", _) => {
            let level = levels::standing(host, caller).await.map(|(_, _, l)| l);
            list_tools(policy, host.registry(), cfg, caller, params, level)
        }
        ("logging/setLevel", Era::Legacy) => {
            host.set_log_level(LogLevel::parse(required_str(params, "level")?)?)?;
            Ok(json!({}))
        }
        ("resources/list", _) => {
            if !matches!(params.get("cursor"), None | Some(Value::Null)) {
                return Err(Error::InvalidParams(
                    "Invalid params: resources/list has one page; call it without a cursor".into(),
                ));
            }
            let mut resources = tools::resources();
            if fixtures {
                resources.extend(
                    fixtures::resources()
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            Ok(policy.cacheable(json!({ "resources": resources }), "public"))
        }
        ("resources/read", _) => {
            let uri = required_str(params, "uri")?;
            let contents = match tools::read_resource(uri) {
                Some(contents) => contents,
                None if fixtures => fixtures::request(method, params)?,
                None => {
                    return Err(Error::ResourceNotFound(format!(
                        "Resource not found: {uri}; resources/list shows the available URIs"
                    )))
                }
            };
            Ok(policy.cacheable(contents, "public"))
        }
        (m, Era::Legacy) if fixtures => fixtures::request(m, params),
        (m, Era::Modern) if fixtures && MODERN_FIXTURE_METHODS.contains(&m) => {
            let result = fixtures::request(m, params)?;
            Ok(if m.ends_with("/list") {
                policy.cacheable(result, "public")
            } else {
                result
            })
        }
        (m, Era::Legacy) => Err(Error::MethodNotFound(format!(
            "{m} is not served by this server"
        ))),
        (m, Era::Modern) => Err(Error::MethodNotFound(format!(
            "{m} is not a 2026-07-28 method of this server (server/discover lists what it serves; initialize, ping, logging/setLevel and resources/subscribe belong to the 2025 session lane; subscriptions/listen streams change notifications)"
        ))),
    }
}

/// The fixture methods besides `resources/*` the 2026-07-28 era serves in the conformance catalog
/// (subscriptions and `logging/setLevel` were removed in 2026-07-28).
const MODERN_FIXTURE_METHODS: &[&str] = &[
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

/// `tools/list`: the caller's tools in name order (deterministic), paged, without the FlowMind
/// tools the caller's `level` does not allow yet. They are left out before paging, so every page
/// but the last is full and a cursor (the last name of its page) means the same position whichever
/// tools are left out. The same in both eras, for anonymous callers too (a 2026-07-28 one's runs
/// and mode are kept under a sealed id, `stateless::anonymous`). The list depends on the caller,
/// so it is cacheable only privately.
fn list_tools(
    policy: Policy,
    registry: &Registry,
    cfg: &Config,
    caller: &Caller,
    params: &Map<String, Value>,
    level: Option<Level>,
) -> Result<Value> {
    let visible = |t: &Tool| levels::allowed(level, t);
    let mut result = registry.tools_list(params, cfg.tools_page_size, caller, &visible)?;
    if policy.era == Era::Legacy {
        declare_task_support(registry, &mut result);
    }
    Ok(policy.cacheable(result, "private"))
}

/// Adds 2025-11-25 `execution.taskSupport` to the listed tools that may run as tasks (the
/// 2026-07-28 `Tool` has no such field: there the server decides, `server::tasks`).
fn declare_task_support(registry: &Registry, result: &mut Value) {
    let Some(listed) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return;
    };
    for entry in listed {
        let support = entry
            .get("name")
            .and_then(Value::as_str)
            .and_then(|n| registry.get(n))
            .map(|t| t.def.task);
        if let Some(support) = support.filter(|s| s.run().is_some()) {
            entry["execution"] = json!({ "taskSupport": support.as_str() });
        }
    }
}

/// What the server declares in `initialize` (2025) and `server/discover` (2026-07-28). The
/// 2026-07-28 era declares `listChanged` only for the lists a `subscriptions/listen` stream really
/// announces (`listen::offer`) and no resource subscriptions (the resources served never change
/// while a deployment runs).
pub fn capabilities(cfg: &Config, era: Era) -> Value {
    let mut caps = protocol::capabilities(cfg.catalog);
    if era == Era::Legacy {
        return caps;
    }
    let offer = listen::offer(cfg);
    // 2026-07-28 has no `tasks` capability: tasks are the extension SEP-2663 defines, advertised
    // where the 2025 capability is (the catalog's tools run as tasks).
    if let Value::Object(m) = &mut caps {
        if m.remove("tasks").is_some() {
            m.insert("extensions".into(), json!({ tasks::EXTENSION: {} }));
        }
    }
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
    let policy = Policy::of(Era::Modern);
    policy.cacheable(
        json!({
            "supportedVersions": version::ADVERTISED,
            "capabilities": capabilities(cfg, Era::Modern),
            "instructions": protocol::INSTRUCTIONS,
            "_meta": { META_SERVER_INFO: { "name": protocol::SERVER_NAME, "title": "mcp-edge", "version": protocol::SERVER_VERSION } },
        }),
        "public",
    )
}

/// How a `tools/call` goes on after its preamble.
pub enum Prepared<'r> {
    /// Refused before it ran (a FlowMind tool the caller's level does not allow yet): the
    /// `CallToolResult` to answer with.
    Refused(Value),
    /// The call runs.
    Run {
        /// The tool.
        tool: &'r Tool,
        /// `params.arguments` (`{}` when absent).
        args: Value,
        /// `params._meta` (`null` when absent).
        meta: Value,
    },
}

/// The log line of a call refused before it ran (roles, FlowMind level): every call has one line
/// with its user, tool, outcome and duration, as the lanes write for the calls they run.
fn log_refused(tool: &Tool, caller: &Caller) {
    crate::log::info!(
        "{}",
        json!({ "user": caller.user, "tool": tool.def.id(), "outcome": "refused", "ms": 0 })
    );
}

/// The preamble of every `tools/call`, in both eras: the tool named must exist for `caller` (a
/// tool their roles do not allow is as unknown as a missing one), and a FlowMind tool must be
/// allowed at their level.
pub async fn prepare_call<'r>(
    host: &'r dyn Host,
    caller: &Caller,
    params: &Map<String, Value>,
) -> Result<Prepared<'r>> {
    let name = required_str(params, "name")?;
    let Some(tool) = host.registry().get_for(name, caller) else {
        // A domain tool the caller's roles lack stays out of their tools/list, but a direct call
        // is told why in the seed's union (INSUFFICIENT_PERMISSIONS), not "unknown tool".
        if let Some(forbidden) = host.registry().forbidden(name, caller) {
            if let Some(hidden) = host.registry().get(name) {
                log_refused(hidden, caller);
            }
            return Ok(Prepared::Refused(forbidden));
        }
        return Err(Error::InvalidParams(format!(
            "Invalid params: unknown tool {name:?}; call tools/list for the available tools"
        )));
    };
    if let Some(refused) = levels::refusal(host, caller, tool).await {
        log_refused(tool, caller);
        return Ok(Prepared::Refused(refused));
    }
    Ok(Prepared::Run {
        tool,
        args: params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| json!({})),
        meta: params.get("_meta").cloned().unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::flowmind::levels::Thresholds;
    use crate::tools::Catalog;

    fn config(pairs: &[(&str, &str)]) -> Config {
        Config::from_lookup(|n| {
            pairs
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        })
    }

    fn list_params(cursor: Option<&str>) -> Map<String, Value> {
        let mut params = Map::new();
        if let Some(c) = cursor {
            params.insert("cursor".into(), json!(c));
        }
        params
    }

    #[test]
    fn list_changed_is_declared_only_where_a_listen_stream_delivers_it() {
        let caps = capabilities(&config(&[]), Era::Modern);
        assert_eq!(
            caps["tools"],
            json!({ "listChanged": true }),
            "levels on by default"
        );
        assert_eq!(caps["resources"], json!({}), "the vocabulary never changes");
        assert!(caps.get("prompts").is_none());
        let off = capabilities(&config(&[("FLOWMIND_LEVELS", "off")]), Era::Modern);
        assert_eq!(off["tools"], json!({}));
        let fixtures = capabilities(
            &config(&[("MCP_CATALOG", "conformance"), ("FLOWMIND_LEVELS", "off")]),
            Era::Modern,
        );
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
        let level = Some(Thresholds::default().level(0));
        assert_eq!(level, Some(Level::Beginner));
        let policy = Policy::of(Era::Modern);
        let mut cursor: Option<String> = None;
        let mut pages: Vec<Vec<String>> = Vec::new();
        loop {
            let page = list_tools(
                policy,
                &registry,
                &cfg,
                &caller,
                &list_params(cursor.as_deref()),
                level,
            )
            .expect("a page");
            assert_eq!(page["cacheScope"], "private");
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
        for hidden in [
            "compose_workflow",
            "list_available_contexts",
            "execute_workflow",
        ] {
            assert!(
                !names.iter().any(|n| n.as_str() == hidden),
                "{hidden} is listed"
            );
        }
        // Tools that keep state are listed as in a 2025 session (issue 19 item 4).
        for listed in ["execute_chain", "switch_mode", "get_mode_indicator"] {
            assert!(
                names.iter().any(|n| n.as_str() == listed),
                "{listed} is not listed"
            );
        }
        assert!(names.iter().any(|n| *n == "field_request"));
        assert!(
            names.windows(2).all(|w| w[0] < w[1]),
            "name order, no repeats"
        );
    }

    #[test]
    fn the_legacy_era_has_no_caching_hints_and_lists_stateful_tools() {
        let registry = Registry::new(crate::tools::catalog(Catalog::Production))
            .expect("the production registry builds");
        let cfg = config(&[("TOOLS_PAGE_SIZE", "200")]);
        let page = list_tools(
            Policy::of(Era::Legacy),
            &registry,
            &cfg,
            &Caller::anonymous(),
            &Map::new(),
            None,
        )
        .expect("a page");
        assert!(page.get("ttlMs").is_none());
        let listed = |n: &str| {
            page["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == n)
        };
        assert!(listed("execute_chain") && listed("compose_workflow"));
        assert_eq!(Policy::of(Era::Legacy).complete(json!({})), json!({}));
        assert_eq!(
            Policy::of(Era::Modern).complete(json!({})),
            json!({ "resultType": "complete" })
        );
    }
}
