//! What a tool handler may use while it runs: the platform (storage, outbound HTTP, other tools,
//! background jobs) and the caller (progress, logging, questions to the client).
//!
//! Handlers see only these traits, never worker types, so tool logic stays in the pure core and the
//! edge layer (`src/session/`) decides how each service is provided. The platform is the same for a
//! call answered to a client and for a background job; the caller part differs (a background job
//! has nobody to report progress to or to ask).

use futures::future::LocalBoxFuture;
use serde_json::Value;

use super::limits::{Admission, Limit};
use super::{Registry, ToolResult};
use crate::error::Result;
use crate::mcp::logging::LogLevel;

/// One D1 statement of a [`Platform::batch`].
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// SQL with `?1`, `?2`, … placeholders.
    pub sql: String,
    /// The values bound to them.
    pub params: Vec<Value>,
}

impl Statement {
    /// A statement.
    pub fn new(sql: impl Into<String>, params: Vec<Value>) -> Self {
        Statement {
            sql: sql.into(),
            params,
        }
    }
}

/// An outbound HTTP request.
#[derive(Debug, Clone, PartialEq)]
pub struct Outbound {
    /// `GET`, `POST`, …
    pub method: &'static str,
    /// Absolute URL.
    pub url: String,
    /// Request headers.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Option<String>,
}

/// An HTTP response to an [`Outbound`] request.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    /// Status code.
    pub status: u16,
    /// Body text.
    pub body: String,
}

/// Who is calling: the verified token's user and roles, or nobody (anonymous).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Caller {
    /// The token's `sub` (an employee id); `None` for anonymous callers.
    pub user: Option<String>,
    /// The roles the token grants (never taken from arguments).
    pub roles: Vec<String>,
}

impl Caller {
    /// A caller without a token.
    pub fn anonymous() -> Caller {
        Caller::default()
    }

    /// Whether the caller holds any of `roles`; an empty list asks for no role at all, and `"*"`
    /// in it admits any caller with a verified token.
    pub fn has_any(&self, roles: &[&str]) -> bool {
        roles.is_empty()
            || (self.user.is_some() && roles.contains(&"*"))
            || self.roles.iter().any(|r| roles.contains(&r.as_str()))
    }
}

/// How a tracked job runs (see [`Platform::job_start`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobMode {
    /// Inside the tool call that started it. If its lease lapses (the call was cancelled or the
    /// instance was reset), the session abandons it through the toolset's job hooks.
    Attached,
    /// In the background, started at once and driven by the session's alarm: if its lease lapses,
    /// the session resumes it.
    Background,
}

/// What a job's heartbeat says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heartbeat {
    /// Go on; the lease is renewed.
    Continue,
    /// Stop at the next safe point, for this reason ([`Platform::job_stop`]).
    Stop(String),
}

/// Services of the deployment that do not depend on who is calling nor on a session: one
/// implementation over the Worker's env (`store::services::Services`), one in the native tests.
pub trait EnvServices {
    /// Runs a D1 query and returns its rows as JSON objects. Parameters bind `?1`, `?2`, ….
    fn query<'a>(
        &'a self,
        sql: &'a str,
        params: Vec<Value>,
    ) -> LocalBoxFuture<'a, Result<Vec<Value>>>;

    /// Runs D1 statements as one transaction (all or none) and returns each one's rows.
    fn batch(&self, statements: Vec<Statement>) -> LocalBoxFuture<'_, Result<Vec<Vec<Value>>>>;

    /// Reads a cached text (KV, eventually consistent, shared by all sessions).
    fn cache_get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>>>;

    /// Caches a text for `ttl_secs` seconds (at least 60, the KV minimum).
    fn cache_put<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl_secs: u64,
    ) -> LocalBoxFuture<'a, Result<()>>;

    /// A deployment setting or secret (wrangler vars and secrets), when set.
    fn setting(&self, name: &str) -> Option<String>;

    /// Sends an HTTP request to another service.
    fn fetch(&self, request: Outbound) -> LocalBoxFuture<'_, Result<Inbound>>;

    /// Signs `message` with RS256 (RSASSA-PKCS1-v1_5, SHA-256) under a PKCS#8 DER private key, for
    /// credentials that mint their own bearer tokens (Google service accounts).
    fn sign_rs256<'a>(
        &'a self,
        pkcs8_der: &'a [u8],
        message: &'a [u8],
    ) -> LocalBoxFuture<'a, Result<Vec<u8>>>;

    /// The tools of this deployment, for tools that call other tools.
    fn registry(&self) -> &Registry;

    /// Waits without blocking the session's other requests.
    fn sleep(&self, ms: u32) -> LocalBoxFuture<'_, ()>;

    /// Sends `body` to the confirmation store's object of confirmation `id` (`op`: `create` or
    /// `decide`) on behalf of `caller`; returns its HTTP status and JSON answer. The store is
    /// strongly consistent (one Durable Object per confirmation), so a decision happens once.
    fn confirmation<'a>(
        &'a self,
        id: &'a str,
        op: &'a str,
        body: &'a Value,
        caller: &'a Caller,
    ) -> LocalBoxFuture<'a, Result<(u16, Value)>>;

    /// Takes a token from `caller`'s bucket of `tool` (an MCP name) in the rate limiter, under
    /// the deployment's `RATE_LIMITS`: `None` when the tool has no limit, else the limit and
    /// whether the call may run. `caller` names the bucket's owner (`user:<id>`, `session:<id>`).
    fn rate_limit<'a>(
        &'a self,
        caller: &'a str,
        tool: &'a str,
    ) -> LocalBoxFuture<'a, Result<Option<(Limit, Admission)>>>;

    /// Sends a concurrency lease request to `owner`'s rate limiter object (`user:<id>`,
    /// `session:<id>`, as for [`EnvServices::rate_limit`]); see `limiter::leases`.
    fn lease<'a>(
        &'a self,
        owner: &'a str,
        request: &'a crate::limiter::leases::LeaseRequest,
    ) -> LocalBoxFuture<'a, Result<crate::limiter::leases::LeaseAnswer>>;

    /// The deployment's timeout for `tool` (an MCP name) in milliseconds when `TOOL_TIMEOUTS`
    /// overrides the one it declares.
    fn timeout_override(&self, tool: &str) -> Option<u32>;

    /// How long, in milliseconds, this instance reuses the FlowMind catalog generation it read
    /// (`FLOWMIND_GENERATION_TTL_MS`, parsed once per isolate with the other settings).
    fn generation_ttl_ms(&self) -> u32;

    /// Whether this deployment binds Workers AI as `AI`. The default is a platform without it.
    fn ai_bound(&self) -> bool {
        false
    }

    /// Runs Workers AI model `model` (for example `@cf/baai/bge-small-en-v1.5`) on `input` through
    /// the binding `AI` and returns its answer as JSON; `Ok(None)` when there is no such binding.
    fn ai_run<'a>(
        &'a self,
        _model: &'a str,
        _input: &'a Value,
    ) -> LocalBoxFuture<'a, Result<Option<Value>>> {
        Box::pin(async { Ok(None) })
    }
}

/// What a tool's work runs on: the env-wide services ([`Platform::env`]) and the scope of the
/// session it runs in (its state, event stream and tracked jobs). A `&dyn Platform` reaches the
/// env-wide services directly (`platform.query(…)`, through `Deref`), as a platform is its env
/// plus a scope.
pub trait Platform {
    /// The env-wide services.
    fn env(&self) -> &(dyn EnvServices + 'static);

    /// Reads a value of this session's state (Durable Object storage).
    fn session_get(&self, key: &str) -> Result<Option<String>>;

    /// Writes a value of this session's state (Durable Object storage).
    fn session_set(&self, key: &str, value: &str) -> Result<()>;

    /// The MCP session this call belongs to; records a tool keeps for the caller are bound to it.
    fn session_id(&self) -> String;

    /// Records an event (`tool_call`, `tool_result`, `error`) on the session's event stream.
    fn emit(&self, event: &str, data: Value);

    /// Whether [`Platform::emit`] keeps what it is given: a 2026-07-28 request that names no
    /// session for its events drops them, so the executor need not build them (a copy of the
    /// arguments and of the result, redacted, per call).
    fn records_events(&self) -> bool {
        true
    }

    /// Tracks a job of `kind` (a toolset's job hook name) under a lease that
    /// [`Platform::job_heartbeat`] renews. A [`JobMode::Background`] job is started at once.
    fn job_start<'a>(
        &'a self,
        kind: &'a str,
        id: &'a str,
        mode: JobMode,
    ) -> LocalBoxFuture<'a, Result<()>>;

    /// How long a job's lease lasts after each heartbeat, in milliseconds. Runs heartbeat at least
    /// every third of it. The job defaults (here and below) are those of a platform that runs no
    /// jobs, whose [`Platform::job_start`] refuses: nothing is ever tracked.
    fn job_lease_ms(&self) -> u32 {
        0
    }

    /// Renews a job's lease, or says it should stop: it was asked to ([`Platform::job_stop`]), or
    /// it is no longer tracked.
    fn job_heartbeat(&self, _id: &str) -> Result<Heartbeat> {
        Ok(Heartbeat::Continue)
    }

    /// Whether a job is tracked here: a run of it is under way, or will be continued when its
    /// lease lapses.
    fn job_tracked(&self, _id: &str) -> Result<bool> {
        Ok(false)
    }

    /// Stops tracking a job (it finished, paused or was cancelled).
    fn job_finish(&self, _id: &str) -> Result<()> {
        Ok(())
    }

    /// Asks a running job to stop, saying why. True when it is running and will see the request at
    /// its next heartbeat; false when no run of it is under way.
    fn job_stop(&self, _id: &str, _reason: &str) -> Result<bool> {
        Ok(false)
    }
}

impl std::ops::Deref for dyn Platform + '_ {
    type Target = dyn EnvServices;

    fn deref(&self) -> &Self::Target {
        self.env()
    }
}

/// Services available to a tool handler during one call.
pub trait ToolContext {
    /// The caller-independent services.
    fn platform(&self) -> &dyn Platform;

    /// Reports progress to the caller. Ignored when the call carried no `progressToken`, and when
    /// `progress` does not increase (the specification requires strictly increasing values).
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>);

    /// Sends `notifications/message` to the caller if `level` passes the session's log level.
    fn log(&self, level: LogLevel, data: Value);

    /// Sends a request to the client (`sampling/createMessage`, `elicitation/create`) on this call's
    /// stream and waits for its answer, up to the server's timeout.
    fn ask_client<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, ToolResult<Value>>;

    /// Like [`ToolContext::ask_client`], under a key the tool chooses: a 2026-07-28 request returns
    /// its questions as `inputRequests` under these keys and finds the answers under them in the
    /// retried request's `inputResponses`. In a 2025 session the key is not used.
    fn ask_client_as<'a>(
        &'a self,
        key: &'a str,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, ToolResult<Value>> {
        let _ = key;
        self.ask_client(method, params)
    }

    /// Like [`ToolContext::ask_client_as`], for a question whose answer decides nothing the caller
    /// could not do anyway (no approval, no write, nothing of anyone else's): a 2026-07-28 request
    /// may also answer it before it is asked, in `inputResponses` without a `requestState`, as
    /// SEP-2322 lets stateless servers accept. Only the conformance fixtures ask such questions;
    /// every question of a real tool is sealed, so a write can never carry its own approval.
    fn ask_client_open<'a>(
        &'a self,
        key: &'a str,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, ToolResult<Value>> {
        self.ask_client_as(key, method, params)
    }

    /// An id that stays the same across the rounds of one 2026-07-28 multi-round request (it
    /// travels in the sealed `requestState`), so a tool can name what it prepared in an earlier
    /// round (a write's confirmation) instead of preparing it again. `None` in a 2025 session,
    /// where a tool's call is one round.
    fn exchange_id(&self) -> Option<String> {
        None
    }

    /// Ends the caller's HTTP connection now, leaving the call's SSE stream open in the event log:
    /// the client resumes it with `GET` and `Last-Event-ID` and receives the rest, result included
    /// (MCP 2025-11-25 stream polling, SEP-1699). For long calls that should not pin a connection.
    fn end_connection(&self);

    /// Who is calling (for a background job: the session's user).
    fn caller(&self) -> Caller;

    /// The capabilities of the client that can be asked right now ([`ToolContext::ask_client`]):
    /// what it declared in `initialize`, or nothing for a background job.
    fn client_capabilities(&self) -> Value;

    /// Whether this call asked to skip the result cache (`params._meta["mcp-edge/cache"]:
    /// "bypass"`): the tool runs, and its result replaces the cached one.
    fn cache_bypass(&self) -> bool {
        false
    }

    /// See [`EnvServices::query`].
    fn query<'a>(
        &'a self,
        sql: &'a str,
        params: Vec<Value>,
    ) -> LocalBoxFuture<'a, Result<Vec<Value>>> {
        self.platform().query(sql, params)
    }

    /// See [`EnvServices::cache_get`].
    fn cache_get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>>> {
        self.platform().cache_get(key)
    }

    /// See [`EnvServices::cache_put`].
    fn cache_put<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl_secs: u64,
    ) -> LocalBoxFuture<'a, Result<()>> {
        self.platform().cache_put(key, value, ttl_secs)
    }

    /// See [`Platform::session_id`].
    fn session_id(&self) -> String {
        self.platform().session_id()
    }

    /// See [`EnvServices::sleep`].
    fn sleep(&self, ms: u32) -> LocalBoxFuture<'_, ()> {
        self.platform().sleep(ms)
    }
}

/// What a handler returns.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A JSON object matching the tool's outputSchema; sent as `structuredContent` and as text.
    Structured(Value),
    /// Like [`ToolOutput::Structured`], with a readable line as the first text block (the JSON
    /// text follows, as the specification asks of structured results).
    Described {
        /// The structured content.
        value: Value,
        /// The readable line (a result cache hit appends `(cached)` to it).
        summary: String,
    },
    /// Ready-made MCP content blocks (text, image, audio, resource links, embedded resources).
    Content(Vec<Value>),
}

/// A tool's code: takes the context and the validated arguments.
pub type Handler = for<'a> fn(&'a dyn ToolContext, Value) -> LocalBoxFuture<'a, super::ToolResult>;
