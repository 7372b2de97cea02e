//! Deployment settings, read from wrangler `[vars]` (see README, "Configuration").

use std::rc::Rc;

use crate::error::{Error, Result};
use crate::registry::limits::{Limit, RateLimits};
use crate::registry::per_tool::ToolTimeouts;
use crate::registry::Registry;
use crate::tools::flowmind::catalog::DEFAULT_GENERATION_TTL_MS;
use crate::tools::flowmind::levels::Thresholds;
use crate::tools::Catalog;

/// Settings of one deployment.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Browser origins allowed to call `/mcp` (`ALLOWED_ORIGINS`, comma-separated; `*` allows any;
    /// `http://localhost:*` allows any port of that host). Requests without `Origin` (non-browser
    /// clients) are always allowed.
    pub allowed_origins: Vec<String>,
    /// Host names (without port) the server answers to (`ALLOWED_HOSTS`, comma-separated). Empty
    /// means any; set it to `localhost,127.0.0.1,[::1]` for local deployments to stop DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// Largest accepted POST body in bytes (`MAX_BODY_BYTES`, default 1 MiB).
    pub max_body_bytes: usize,
    /// Tools per `tools/list` page (`TOOLS_PAGE_SIZE`, default 50).
    pub tools_page_size: usize,
    /// Which tools this deployment serves (`MCP_CATALOG`).
    pub catalog: Catalog,
    /// How long logged events stay resumable, in seconds (`EVENT_RETENTION_SECONDS`, default 3600).
    pub event_retention_secs: u32,
    /// Most events kept per session (`EVENT_LOG_MAX`, default 5000).
    pub event_log_max: u32,
    /// A session unused this long is deleted by its alarm, in seconds (`SESSION_IDLE_SECONDS`,
    /// default 86400).
    pub session_idle_secs: u32,
    /// Seconds between a session's housekeeping alarms, which prune the event log and delete the
    /// session once idle (`HOUSEKEEPING_SECONDS`, default 600).
    pub housekeeping_secs: u32,
    /// How long a server-to-client request (elicitation, sampling) waits for the client's answer, in
    /// milliseconds (`CLIENT_REQUEST_TIMEOUT_MS`, default 120000).
    pub client_request_timeout_ms: u32,
    /// Seconds between SSE keepalive comments (`SSE_KEEPALIVE_SECONDS`, default 15).
    pub keepalive_secs: u32,
    /// The standalone GET stream is closed after this many seconds, with a `retry:` so the client
    /// reconnects and resumes (`SSE_MAX_STREAM_SECONDS`, default 300).
    pub max_stream_secs: u32,
    /// A tracked job (a chain execution) whose run has not renewed its lease for this long is
    /// taken as interrupted: resumed when it runs in the background, abandoned and rolled back when
    /// it ran inside a call that ended (`JOB_LEASE_SECONDS`, default 30). Runs renew it every third
    /// of that.
    pub job_lease_secs: u32,
    /// Requests without a bearer token are served as anonymous callers, who see only the tools that
    /// need no identity (`ANONYMOUS_ACCESS=true`); otherwise they get 401. A token that is present
    /// but invalid is refused either way.
    pub anonymous_access: bool,
    /// Required `iss` of tokens (`JWT_ISSUER`); also named as the authorization server in the
    /// protected resource metadata.
    pub jwt_issuer: Option<String>,
    /// The audience tokens must name (`JWT_AUDIENCE`); by default this server's URL, `<origin>/mcp`.
    pub jwt_audience: Option<String>,
    /// Where the identity provider publishes its signing keys for RS256/ES256 tokens (`JWKS_URL`).
    pub jwks_url: Option<String>,
    /// HS256 tokens (signed with `JWT_SECRET`) are also accepted while a JWKS (`JWKS_URL` or
    /// `JWKS`) is configured (`JWT_ALLOW_HS256=true`). Off by default: with an identity provider in
    /// place, a shared secret that leaks (it also sits in every developer's `.dev.vars`) must not
    /// mint tokens for any user and role.
    pub jwt_allow_hs256: bool,
    /// Most model requests of one chat turn (`CHAT_MAX_STEPS`, default 8): a turn whose model still
    /// calls tools after this many stops with an error event.
    pub chat_max_steps: u32,
    /// Longest chat message a user may send, in characters (`CHAT_MAX_MESSAGE_CHARS`, default
    /// 8000).
    pub chat_max_message_chars: u32,
    /// How long a model request may wait for its response or between two chunks of it, in
    /// milliseconds (`MODEL_PROVIDER_TIMEOUT_MS`, default 60000).
    pub model_timeout_ms: u32,
    /// Per-caller, per-tool rate limits (`RATE_LIMITS`; format in `registry::limits`).
    pub rate_limits: RateLimits,
    /// Requests to `/mcp` and `/sessions…` one caller may send (`REQUEST_LIMIT`, `<count>/<period>`
    /// or `off`; default 3000/60s): a signed-in user across all their sessions, an anonymous caller
    /// per client address, so a new session resets nothing (`limiter::request_owner`).
    pub request_limit: Option<Limit>,
    /// Sessions one caller may create (`SESSION_CREATE_LIMIT`; default 100/60s), counted the same way.
    pub session_create_limit: Option<Limit>,
    /// Per-tool timeouts overriding the declared ones (`TOOL_TIMEOUTS`; format in
    /// `registry::per_tool`).
    pub tool_timeouts: ToolTimeouts,
    /// Successful FlowMind calls that make a caller intermediate and advanced (`FLOWMIND_LEVELS`,
    /// default `10,50`); `None` (`off`) gives every caller every FlowMind tool.
    pub flowmind_levels: Option<Thresholds>,
    /// How long, in milliseconds, an instance reuses the FlowMind catalog generation it read
    /// (`FLOWMIND_GENERATION_TTL_MS`, 0 to 60000; 0 reads it on every call), default
    /// [`DEFAULT_GENERATION_TTL_MS`]. Like every number here, a value that does not parse or is
    /// out of range takes the default: the bound only delays when another instance's catalog
    /// write is seen, it never widens access.
    pub flowmind_generation_ttl_ms: u32,
    /// Why a setting could not be used, naming it; while set, [`Config::check`] refuses to serve.
    pub invalid: Option<String>,
}

impl Config {
    /// Builds the config from a variable lookup; unset or unparsable numbers take their defaults.
    /// An invalid `RATE_LIMITS` or `TOOL_TIMEOUTS` is kept in [`Config::invalid`] instead: a limit silently dropped
    /// would leave tools unprotected.
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Config {
        let list = |name: &str| -> Vec<String> {
            var(name)
                .map(|s| {
                    s.split(',')
                        .map(|p| p.trim().to_ascii_lowercase())
                        .filter(|p| !p.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        let text = |name: &str| {
            var(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let num = |name: &str, default: u32| -> u32 {
            var(name)
                .and_then(|s| s.trim().parse().ok())
                .filter(|n| *n > 0)
                .unwrap_or(default)
        };
        let ms_within = |name: &str, max: u32, default: u32| -> u32 {
            var(name)
                .and_then(|s| s.trim().parse().ok())
                .filter(|n| *n <= max)
                .unwrap_or(default)
        };
        let mut invalid = None;
        let rate_limits = RateLimits::parse_setting(&var("RATE_LIMITS").unwrap_or_default())
            .unwrap_or_else(|why| {
                invalid = Some(why);
                RateLimits::default()
            });
        let mut one_limit = |name: &str, default: Limit| {
            crate::registry::limits::parse_one(name, &var(name).unwrap_or_default(), Some(default))
                .unwrap_or_else(|why| {
                    invalid.get_or_insert(why);
                    Some(default)
                })
        };
        let request_limit = one_limit(
            "REQUEST_LIMIT",
            Limit {
                capacity: 3000,
                period_ms: 60_000,
            },
        );
        let session_create_limit = one_limit(
            "SESSION_CREATE_LIMIT",
            Limit {
                capacity: 100,
                period_ms: 60_000,
            },
        );
        let tool_timeouts = ToolTimeouts::parse_setting(&var("TOOL_TIMEOUTS").unwrap_or_default())
            .unwrap_or_else(|why| {
                invalid.get_or_insert(why);
                ToolTimeouts::all(None)
            });
        let flowmind_levels = Thresholds::parse_setting(
            &var("FLOWMIND_LEVELS").unwrap_or_default(),
        )
        .unwrap_or_else(|why| {
            invalid.get_or_insert(why);
            Some(Thresholds::default())
        });
        Config {
            allowed_origins: list("ALLOWED_ORIGINS"),
            allowed_hosts: list("ALLOWED_HOSTS"),
            max_body_bytes: num("MAX_BODY_BYTES", 1 << 20) as usize,
            tools_page_size: num("TOOLS_PAGE_SIZE", 50) as usize,
            catalog: Catalog::from_var(var("MCP_CATALOG").as_deref()),
            event_retention_secs: num("EVENT_RETENTION_SECONDS", 3600),
            event_log_max: num("EVENT_LOG_MAX", 5000),
            session_idle_secs: num("SESSION_IDLE_SECONDS", 86_400),
            housekeeping_secs: num("HOUSEKEEPING_SECONDS", 600),
            client_request_timeout_ms: num("CLIENT_REQUEST_TIMEOUT_MS", 120_000),
            keepalive_secs: num("SSE_KEEPALIVE_SECONDS", 15),
            max_stream_secs: num("SSE_MAX_STREAM_SECONDS", 300),
            job_lease_secs: num("JOB_LEASE_SECONDS", 30),
            anonymous_access: var("ANONYMOUS_ACCESS").is_some_and(|v| v.trim() == "true"),
            jwt_issuer: text("JWT_ISSUER"),
            jwt_audience: text("JWT_AUDIENCE"),
            jwks_url: text("JWKS_URL"),
            jwt_allow_hs256: var("JWT_ALLOW_HS256").is_some_and(|v| v.trim() == "true"),
            chat_max_steps: num("CHAT_MAX_STEPS", 8),
            chat_max_message_chars: num("CHAT_MAX_MESSAGE_CHARS", 8000),
            model_timeout_ms: num("MODEL_PROVIDER_TIMEOUT_MS", 60_000),
            rate_limits,
            request_limit,
            session_create_limit,
            tool_timeouts,
            flowmind_levels,
            flowmind_generation_ttl_ms: ms_within(
                "FLOWMIND_GENERATION_TTL_MS",
                60_000,
                DEFAULT_GENERATION_TTL_MS,
            ),
            invalid,
        }
    }

    /// Refuses to serve with a config a setting of which is invalid; the error names it.
    pub fn check(&self) -> Result<()> {
        match &self.invalid {
            Some(why) => Err(Error::Misconfigured(format!(
                "Server misconfigured: {why}. The operator must fix this wrangler var."
            ))),
            None => Ok(()),
        }
    }

    /// [`Config::check`], and that `RATE_LIMITS` and `TOOL_TIMEOUTS` name only tools of
    /// `registry` (a typo would otherwise leave the tool at its default without a word).
    pub fn check_with(&self, registry: &Registry) -> Result<()> {
        self.check()?;
        let known = |name: &str| registry.get(name).is_some();
        for (setting, unknown) in [
            ("RATE_LIMITS", self.rate_limits.unknown_tools(known)),
            ("TOOL_TIMEOUTS", self.tool_timeouts.unknown_tools(known)),
        ] {
            if !unknown.is_empty() {
                return Err(Error::Misconfigured(format!(
                    "Server misconfigured: {setting} names tools this deployment does not have: {}; use the names tools/list shows. The operator must fix this wrangler var.",
                    unknown.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// Reads the config from the Worker's environment, once per wasm instance: a Worker's vars
    /// are fixed for the life of its isolate (a new deployment or setting starts new isolates),
    /// and reading them costs a crossing into JavaScript per variable, some 25 a request. Shared,
    /// not copied: a request takes a reference count, not a copy of every list and map.
    pub fn from_env(env: &worker::Env) -> Rc<Config> {
        thread_local! {
            static READ: std::cell::OnceCell<Rc<Config>> = const { std::cell::OnceCell::new() };
        }
        READ.with(|read| {
            read.get_or_init(|| {
                Rc::new(Config::from_lookup(|name| {
                    env.var(name).ok().map(|v| v.to_string())
                }))
            })
            .clone()
        })
    }

    /// Whether a request with this `Origin` header may proceed.
    pub fn origin_allowed(&self, origin: Option<&str>) -> bool {
        match origin {
            None => true,
            Some(o) => {
                let o = o.trim().to_ascii_lowercase();
                self.allowed_origins.iter().any(|a| origin_matches(a, &o))
            }
        }
    }

    /// Whether a request with this `Host` header may proceed.
    pub fn host_allowed(&self, host: Option<&str>) -> bool {
        if self.allowed_hosts.is_empty() {
            return true;
        }
        let Some(host) = host else { return false };
        let host = host.trim().to_ascii_lowercase();
        let name = if host.starts_with('[') {
            host.split_once(']')
                .map(|(h, _)| format!("{h}]"))
                .unwrap_or(host.clone())
        } else {
            host.split(':').next().unwrap_or_default().to_string()
        };
        self.allowed_hosts.contains(&name)
    }
}

fn origin_matches(pattern: &str, origin: &str) -> bool {
    if pattern == "*" || pattern == origin {
        return true;
    }
    let Some(base) = pattern.strip_suffix(":*") else {
        return false;
    };
    origin == base
        || origin
            .strip_prefix(base)
            .and_then(|rest| rest.strip_prefix(':'))
            .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> Config {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|n| pairs.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()))
    }

    #[test]
    fn defaults_apply_when_unset_or_bad() {
        let c = cfg(&[("MAX_BODY_BYTES", "lots"), ("TOOLS_PAGE_SIZE", "0")]);
        assert_eq!(c.max_body_bytes, 1 << 20);
        assert_eq!(c.tools_page_size, 50);
        assert_eq!(c.catalog, Catalog::Production);
    }

    #[test]
    fn the_generation_ttl_keeps_zero_and_ignores_what_is_out_of_range() {
        let ttl = |v: &str| cfg(&[("FLOWMIND_GENERATION_TTL_MS", v)]).flowmind_generation_ttl_ms;
        assert_eq!(
            cfg(&[]).flowmind_generation_ttl_ms,
            DEFAULT_GENERATION_TTL_MS
        );
        assert_eq!(ttl(" 0 "), 0, "0 reads the generation on every call");
        assert_eq!(ttl("60000"), 60_000);
        for bad in ["60001", "-1", "1.5", "soon", ""] {
            assert_eq!(ttl(bad), DEFAULT_GENERATION_TTL_MS, "{bad:?}");
        }
    }

    #[test]
    fn hs256_beside_a_jwks_is_an_explicit_opt_in() {
        assert!(!cfg(&[("JWKS_URL", "https://id.example/jwks")]).jwt_allow_hs256);
        assert!(!cfg(&[("JWT_ALLOW_HS256", "yes")]).jwt_allow_hs256);
        assert!(cfg(&[("JWT_ALLOW_HS256", " true ")]).jwt_allow_hs256);
    }

    #[test]
    fn flowmind_levels_default_to_the_seed_and_a_bad_value_stops_the_server() {
        assert_eq!(cfg(&[]).flowmind_levels, Some(Thresholds::default()));
        assert_eq!(cfg(&[("FLOWMIND_LEVELS", "off")]).flowmind_levels, None);
        let e = cfg(&[("FLOWMIND_LEVELS", "50,10")]).check().unwrap_err();
        assert!(e.public_message().contains("FLOWMIND_LEVELS"), "{e}");
    }

    #[test]
    fn a_bad_rate_limit_entry_stops_the_server_with_its_name() {
        assert!(cfg(&[]).check().is_ok());
        let c = cfg(&[("RATE_LIMITS", "*=10/m, search_flights=lots")]);
        let e = c.check().unwrap_err();
        assert_eq!(e.http_status(), 500);
        assert!(
            e.public_message().contains("\"search_flights=lots\""),
            "{e}"
        );
        let registry = Registry::new(crate::tools::catalog(Catalog::Production)).unwrap();
        let typo = cfg(&[("RATE_LIMITS", "serch_flights=1/m")]);
        assert!(typo.check().is_ok());
        let e = typo.check_with(&registry).unwrap_err().to_string();
        assert!(e.contains("serch_flights"), "{e}");
        assert!(cfg(&[("RATE_LIMITS", "search_flights=1/m")])
            .check_with(&registry)
            .is_ok());
    }

    #[test]
    fn tool_timeouts_override_declarations_and_bad_ones_stop_the_server() {
        let c = cfg(&[("TOOL_TIMEOUTS", "search_flights=30s")]);
        assert_eq!(*c.tool_timeouts.get("search_flights"), Some(30_000));
        assert_eq!(*c.tool_timeouts.get("list_events"), None);
        let registry = Registry::new(crate::tools::catalog(Catalog::Production)).unwrap();
        assert!(c.check_with(&registry).is_ok());
        let e = cfg(&[("TOOL_TIMEOUTS", "search_flights=30")])
            .check()
            .unwrap_err();
        assert_eq!(e.http_status(), 500);
        assert!(
            e.to_string()
                .contains("TOOL_TIMEOUTS entry \"search_flights=30\""),
            "{e}"
        );
        let typo = cfg(&[("TOOL_TIMEOUTS", "serch_flights=30s")]);
        let e = typo.check_with(&registry).unwrap_err().to_string();
        assert!(
            e.contains("TOOL_TIMEOUTS names tools") && e.contains("serch_flights"),
            "{e}"
        );
    }

    #[test]
    fn origins_are_matched_exactly_and_absent_origin_passes() {
        let c = cfg(&[(
            "ALLOWED_ORIGINS",
            "http://localhost:6274, https://App.example",
        )]);
        assert!(c.origin_allowed(None));
        assert!(c.origin_allowed(Some("https://app.example")));
        assert!(!c.origin_allowed(Some("http://evil.example.com")));
        assert!(!c.origin_allowed(Some("https://app.example.evil.com")));
        assert!(!cfg(&[]).origin_allowed(Some("http://localhost:6274")));
        assert!(cfg(&[("ALLOWED_ORIGINS", "*")]).origin_allowed(Some("http://x")));
        let local = cfg(&[("ALLOWED_ORIGINS", "http://localhost:*")]);
        assert!(local.origin_allowed(Some("http://localhost:6274")));
        assert!(local.origin_allowed(Some("http://localhost")));
        assert!(!local.origin_allowed(Some("http://localhost.evil.com:80")));
        assert!(!local.origin_allowed(Some("http://localhost:80@evil.com")));
    }

    #[test]
    fn hosts_ignore_ports_and_refuse_rebinding() {
        let c = cfg(&[("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")]);
        assert!(c.host_allowed(Some("localhost:8787")));
        assert!(c.host_allowed(Some("127.0.0.1")));
        assert!(c.host_allowed(Some("[::1]:8787")));
        assert!(!c.host_allowed(Some("evil.example.com")));
        assert!(!c.host_allowed(Some("localhost.evil.com:8787")));
        assert!(!c.host_allowed(None));
        assert!(cfg(&[]).host_allowed(Some("anything.example")));
    }
}
