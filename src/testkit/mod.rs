//! Native tests of real tool handlers: a [`Platform`] whose D1 is real SQLite with the project's
//! migrations ([`db`]), and a [`ToolContext`] for one call, so a handler's SQL and control flow run
//! under `cargo test`, through the registry and the executor exactly as a session calls them.
//!
//! Everything else the platform offers is kept in memory or recorded for the test to look at: KV
//! and session state in maps, `emit`ted events, outbound requests (answered by the test's stand-in,
//! else refused), jobs and confirmations (recorded; the confirmation store answers 503), leases
//! (decided by `limiter::leases::decide`), settings from a map. Nothing is rate limited, `sleep`
//! returns at once, and there is no Workers AI binding. What differs from D1 is in
//! docs/decisions.md ("Native handler tests on real SQLite").

mod db;

mod chains;
mod epic_tide;
mod flights;
mod flowmind;
mod hr;
mod templates;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::OnceLock;

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

pub use db::Db;

use crate::edge::config::Config;
use crate::error::{Error, Result};
use crate::limiter::leases::{self, Held, LeaseAnswer, LeaseRequest};
use crate::mcp::logging::LogLevel;
use crate::registry::call::{Ask, CallContext, Outlet, Question};
use crate::registry::limits::{Admission, Limit};
use crate::registry::{
    self, Caller, EnvServices, Inbound, JobMode, Outbound, Platform, Registry, Statement,
    ToolError, ToolResult,
};
use crate::tools::{self, Catalog};

/// The production catalog's registry, compiled once per test binary.
fn shared_registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        Registry::new(tools::catalog(Catalog::Production)).expect("every tool compiles")
    })
}

/// Answers a test's outbound HTTP requests.
type Fetcher = Box<dyn Fn(&Outbound) -> Result<Inbound>>;

/// The services of one test: a fresh migrated database and empty stores.
pub struct TestPlatform {
    /// The test's database, for arranging data and for asserting what a call wrote.
    pub db: Db,
    kv: RefCell<BTreeMap<String, String>>,
    session: RefCell<BTreeMap<String, String>>,
    session_id: String,
    settings: BTreeMap<String, String>,
    fetcher: Option<Fetcher>,
    /// Every outbound request, in order.
    pub fetched: RefCell<Vec<Outbound>>,
    /// Every `emit`ted event (`tool_call`, `tool_result`, `error`), in order.
    pub events: RefCell<Vec<(String, Value)>>,
    /// Every job started: (kind, id, mode).
    pub jobs: RefCell<Vec<(String, String, JobMode)>>,
    /// Every confirmation request: (id, op, body).
    pub confirmations: RefCell<Vec<(String, String, Value)>>,
    /// Milliseconds handlers asked to sleep (the executor's own timeout race never gets that far).
    pub slept_ms: Cell<u64>,
    leases: RefCell<HashMap<String, Vec<Held>>>,
}

impl Default for TestPlatform {
    fn default() -> Self {
        Self::new()
    }
}

impl TestPlatform {
    /// A platform with a fresh database, session `test-session`, a cursor secret set and FlowMind's
    /// levels off (`FLOWMIND_LEVELS=off`, as the integration tests' harness has it: calls here do
    /// not pass the server's level gate, so the tools should not hold callers to a level either).
    pub fn new() -> TestPlatform {
        let settings = [
            ("CURSOR_SECRET", "testkit-cursor-secret"),
            ("FLOWMIND_LEVELS", "off"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        TestPlatform {
            db: Db::migrated(),
            kv: RefCell::default(),
            session: RefCell::default(),
            session_id: "test-session".into(),
            settings,
            fetcher: None,
            fetched: RefCell::default(),
            events: RefCell::default(),
            jobs: RefCell::default(),
            confirmations: RefCell::default(),
            slept_ms: Cell::new(0),
            leases: RefCell::default(),
        }
    }

    /// Sets (or, with `None`, removes) a deployment setting.
    pub fn with_setting(mut self, name: &str, value: Option<&str>) -> TestPlatform {
        match value {
            Some(v) => self.settings.insert(name.into(), v.into()),
            None => self.settings.remove(name),
        };
        self
    }

    /// Answers outbound requests with `f` (without one, every request fails as unreachable).
    pub fn with_fetch(mut self, f: impl Fn(&Outbound) -> Result<Inbound> + 'static) -> Self {
        self.fetcher = Some(Box::new(f));
        self
    }

    /// The KV keys that start with `prefix`, in order.
    pub fn kv_keys(&self, prefix: &str) -> Vec<String> {
        self.kv
            .borrow()
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// Calls tool `name` as `caller` the way a session's `tools/call` does: a tool the caller's
    /// roles do not allow is unknown to them (`None`); else the executor validates the arguments
    /// against the tool's schema, runs the handler and shapes its result.
    pub fn call(&self, caller: &Caller, name: &str, args: Value) -> Option<Called> {
        let tool = self.registry().get_for(name, caller)?;
        let client = Rc::new(TestClient::default());
        let platform: &dyn Platform = self;
        let ctx = CallContext::attended(
            platform,
            caller.clone(),
            json!({}),
            name,
            &Value::Null,
            Some(LogLevel::Debug),
            client.clone(),
            client.clone(),
        )
        .expect("no cache directive to refuse");
        let outcome = futures::executor::block_on(registry::execute(tool, &ctx, args));
        Some(Called {
            result: outcome.result,
            outcome: outcome.outcome,
            logs: client.logs(),
        })
    }

    /// [`TestPlatform::call`] of a tool the caller may use.
    pub fn call_ok(&self, caller: &Caller, name: &str, args: Value) -> Called {
        self.call(caller, name, args)
            .unwrap_or_else(|| panic!("{name} is hidden from {caller:?}"))
    }
}

/// A signed-in caller with `roles`.
pub fn user(id: &str, roles: &[&str]) -> Caller {
    caller(Some(id), roles)
}

/// A caller with `roles`, signed in as `user` or anonymous.
pub fn caller(user: Option<&str>, roles: &[&str]) -> Caller {
    Caller {
        user: user.map(str::to_string),
        roles: roles.iter().map(|r| r.to_string()).collect(),
    }
}

/// The end of one call.
#[derive(Debug)]
pub struct Called {
    /// The `CallToolResult`.
    pub result: Value,
    /// The executor's outcome label (`ok`, `invalid_arguments`, `tool_error`, …).
    pub outcome: &'static str,
    /// `notifications/message` the call sent, in order.
    pub logs: Vec<(LogLevel, Value)>,
}

impl Called {
    /// Whether the result is a tool error (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.result["isError"] == json!(true)
    }

    /// The structured content (`Null` when there is none).
    pub fn structured(&self) -> &Value {
        &self.result["structuredContent"]
    }

    /// Every text block, joined by newlines.
    pub fn text(&self) -> String {
        self.result["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }
}

impl EnvServices for TestPlatform {
    fn query<'a>(
        &'a self,
        sql: &'a str,
        params: Vec<Value>,
    ) -> LocalBoxFuture<'a, Result<Vec<Value>>> {
        Box::pin(async move { self.db.query(sql, &params) })
    }

    fn batch(&self, statements: Vec<Statement>) -> LocalBoxFuture<'_, Result<Vec<Vec<Value>>>> {
        Box::pin(async move { self.db.batch(&statements) })
    }

    fn cache_get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move { Ok(self.kv.borrow().get(key).cloned()) })
    }

    fn cache_put<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        _ttl_secs: u64,
    ) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.kv.borrow_mut().insert(key.into(), value.into());
            Ok(())
        })
    }

    fn setting(&self, name: &str) -> Option<String> {
        self.settings.get(name).cloned()
    }

    fn fetch(&self, request: Outbound) -> LocalBoxFuture<'_, Result<Inbound>> {
        Box::pin(async move {
            let answer = match &self.fetcher {
                Some(f) => f(&request),
                None => Err(Error::Unavailable(format!(
                    "{} is unreachable from this test (no stand-in answers it)",
                    request.url
                ))),
            };
            self.fetched.borrow_mut().push(request);
            answer
        })
    }

    fn sign_rs256<'a>(
        &'a self,
        _pkcs8_der: &'a [u8],
        _message: &'a [u8],
    ) -> LocalBoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(async { Err(Error::Misconfigured("no RS256 signing in tests".into())) })
    }

    fn registry(&self) -> &Registry {
        shared_registry()
    }

    fn sleep(&self, ms: u32) -> LocalBoxFuture<'_, ()> {
        Box::pin(async move { self.slept_ms.set(self.slept_ms.get() + u64::from(ms)) })
    }

    fn confirmation<'a>(
        &'a self,
        id: &'a str,
        op: &'a str,
        body: &'a Value,
        _caller: &'a Caller,
    ) -> LocalBoxFuture<'a, Result<(u16, Value)>> {
        Box::pin(async move {
            self.confirmations
                .borrow_mut()
                .push((id.into(), op.into(), body.clone()));
            Ok((
                503,
                json!({ "error": "no confirmation store in this test" }),
            ))
        })
    }

    fn rate_limit<'a>(
        &'a self,
        _caller: &'a str,
        _tool: &'a str,
    ) -> LocalBoxFuture<'a, Result<Option<(Limit, Admission)>>> {
        Box::pin(async { Ok(None) })
    }

    fn lease<'a>(
        &'a self,
        owner: &'a str,
        request: &'a LeaseRequest,
    ) -> LocalBoxFuture<'a, Result<LeaseAnswer>> {
        Box::pin(async move {
            let now = crate::clock::now_ms();
            let mut all = self.leases.borrow_mut();
            Ok(match request {
                LeaseRequest::Acquire {
                    kind,
                    id,
                    max,
                    ttl_ms,
                    admitted,
                } => {
                    let held = all.entry(format!("{owner}/{kind}")).or_default();
                    let d = leases::decide(held, id, *max, *admitted, now);
                    if d.granted {
                        held.retain(|h| &h.id != id && h.expires_ms > now);
                        held.push(Held {
                            id: id.clone(),
                            taken_ms: now,
                            expires_ms: now + *ttl_ms as f64,
                        });
                    }
                    LeaseAnswer {
                        allowed: d.granted,
                        holders: d.holders,
                    }
                }
                LeaseRequest::Release { kind, id } => {
                    let held = all.entry(format!("{owner}/{kind}")).or_default();
                    held.retain(|h| &h.id != id);
                    LeaseAnswer {
                        allowed: true,
                        holders: held.iter().map(|h| h.id.clone()).collect(),
                    }
                }
            })
        })
    }

    fn timeout_override(&self, _tool: &str) -> Option<u32> {
        None
    }

    /// Parsed by `Config` from this platform's settings, as a deployment's are.
    fn generation_ttl_ms(&self) -> u32 {
        Config::from_lookup(|name| self.settings.get(name).cloned()).flowmind_generation_ttl_ms
    }
}

impl Platform for TestPlatform {
    fn env(&self) -> &(dyn EnvServices + 'static) {
        self
    }

    fn session_get(&self, key: &str) -> Result<Option<String>> {
        Ok(self.session.borrow().get(key).cloned())
    }

    fn session_set(&self, key: &str, value: &str) -> Result<()> {
        self.session.borrow_mut().insert(key.into(), value.into());
        Ok(())
    }

    fn session_id(&self) -> String {
        self.session_id.clone()
    }

    fn emit(&self, event: &str, data: Value) {
        self.events.borrow_mut().push((event.into(), data));
    }

    fn job_start<'a>(
        &'a self,
        kind: &'a str,
        id: &'a str,
        mode: JobMode,
    ) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.jobs.borrow_mut().push((kind.into(), id.into(), mode));
            Ok(())
        })
    }
}

/// The client of one test call: it takes every message the call sends, and declared no
/// capabilities, so it is asked nothing.
#[derive(Default)]
struct TestClient {
    messages: RefCell<Vec<Value>>,
}

impl Outlet for TestClient {
    fn send(&self, msg: &Value) -> Result<()> {
        self.messages.borrow_mut().push(msg.clone());
        Ok(())
    }

    fn end_connection(&self) {}
}

impl Ask for TestClient {
    fn ask<'a>(&'a self, q: Question<'a>) -> LocalBoxFuture<'a, ToolResult<Value>> {
        Box::pin(async move {
            Err(ToolError::Client(format!(
                "the test client does not answer {}",
                q.method
            )))
        })
    }
}

impl TestClient {
    /// The `notifications/message` the call sent: (level, data), in order.
    fn logs(&self) -> Vec<(LogLevel, Value)> {
        self.messages
            .borrow()
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .filter_map(|m| {
                let level = LogLevel::parse(m["params"]["level"].as_str()?).ok()?;
                Some((level, m["params"]["data"].clone()))
            })
            .collect()
    }
}

mod tests {
    use super::*;
    use crate::registry::ToolContext;

    #[test]
    fn the_test_client_records_log_messages_and_refuses_questions() {
        let p = TestPlatform::new();
        let client = Rc::new(TestClient::default());
        let platform: &dyn Platform = &p;
        let ctx = CallContext::attended(
            platform,
            Caller::anonymous(),
            json!({}),
            "get_help",
            &Value::Null,
            Some(LogLevel::Debug),
            client.clone(),
            client.clone(),
        )
        .expect("a context");
        ctx.log(LogLevel::Warning, json!("careful"));
        assert_eq!(client.logs(), vec![(LogLevel::Warning, json!("careful"))]);
        let asked = futures::executor::block_on(ctx.ask_client("roots/list", json!({})));
        assert!(asked.is_err_and(|e| e.to_string().contains("does not answer roots/list")));
    }
}
