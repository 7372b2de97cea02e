//! The `Session` Durable Object: one per MCP session, addressed by its `Mcp-Session-Id`.
//!
//! It owns the session's protocol state and event log (SQLite), runs tool calls, and serves the
//! session's SSE streams. The Worker (`src/edge/`) has already checked headers, origin and body size,
//! and forwards only requests that belong to a session (or create one).
//!
//! The 2026-07-28 lane has no sessions but uses the same class for its run objects (one per chain
//! or workflow run) and for each caller's own object (`stateless::runs`): to them the Worker's run
//! lane is an MCP client like any other, plus the internal requests of `crate::wire`.

mod call;
mod chat;
mod hub;
mod jobs;
mod platform;
mod relay;

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::time::Duration;

use futures::channel::mpsc::{unbounded, UnboundedSender};
use futures::future::{join_all, AbortHandle, Abortable};
use serde_json::{json, Value};
use worker::web_sys::AbortSignal;
use worker::{durable_object, Delay, DurableObject, Env, Method, Request, Response, State};

use crate::clock;
use crate::edge::config::Config;
use crate::edge::http::{error_response_for, header, json_response};
use crate::error::{Error, Result};
use crate::mcp::logging::LogLevel;
use crate::mcp::message::{error_response, params_object, response, Incoming, RequestId};
use crate::mcp::sse::{self, EventId, STANDALONE};
use crate::mcp::{version, Initialize};
use crate::registry::call::CallContext;
use crate::registry::{execute, Caller};
use crate::server::stream::{self, sse_replay_response, sse_response, First, Outbox, StreamPlan};
use crate::server::{levels, Deployment, Era, Host, Policy, Prepared};
use crate::store::session_db::SessionDb;
use crate::wire::{Lane, Op, CORRELATION_HEADER};
use call::{Live, Logged};
use hub::Hub;

/// Seconds between comments on a run watch: workerd tells a Durable Object that the Worker's
/// request went away when the object next writes to its response, so this bounds how late a
/// closed stream is noticed.
const RUN_WATCH_TICK_SECS: u32 = 1;
/// Why a run stops when the client of the call driving it closed the response stream.
pub const STREAM_CLOSED: &str = "client closed the stream";

/// Session-storage key of when the session ended while background runs of its user went on
/// ([`Session::end`]).
const ENDED_AT: &str = "ended_at";

/// Reconnection delay announced on streams (SSE `retry:`), in milliseconds.
const RETRY_MS: u32 = 1000;

/// State shared by the object's requests.
pub struct Core {
    /// The session id (the object's name).
    session: String,
    db: SessionDb,
    /// The deployment's settings, tools and services.
    deployment: Deployment,
    hub: Hub,
    /// The object's state, for alarms.
    state: State,
    /// This core, for work it starts that outlives the request (background jobs).
    me: Weak<Core>,
    /// The env, for relaying tool events to another session (`relay`).
    env: Env,
    /// Tool events on their way to the session a 2026-07-28 call named (`relay`).
    relay: Rc<relay::Relay>,
    /// When this instance last served the session's client (ms; 0 for none yet): the stored
    /// `last_seen` is written only when it lags by more than [`Core::seen_slack_ms`].
    seen: Cell<i64>,
    /// Chain tasks whose paused step's question a 2025-11-25 `tasks/result` of this instance has
    /// with the client now (`jobs::QuestionClaim`): another `tasks/result` waits for its outcome
    /// instead of asking again. Kept in memory, so it lasts no longer than the asking request
    /// (which the client's answer, its timeout or the instance's end ends).
    asking: RefCell<std::collections::HashSet<String>>,
}

impl Core {
    /// Writes an event to the log, then a JSON-RPC message to the live reader of its stream, or a
    /// tool event to the session's dashboards (and to the session a 2026-07-28 call named for its
    /// events).
    fn publish(&self, stream: &str, event: &str, data: &str) -> Result<()> {
        self.publish_from(stream, event, data, true)
    }

    /// [`Core::publish`]; `relay` false for events relayed here, which go no further, so no chain
    /// of relays can loop.
    fn publish_from(&self, stream: &str, event: &str, data: &str, relay: bool) -> Result<()> {
        // A JSON-RPC message is written before it is delivered (a resumed stream must replay it);
        // a tool event only feeds dashboards, which may miss it in a crash, so it waits for the
        // batch write, off the call's response.
        let seq = self.db.append(
            stream,
            event,
            data,
            clock::now_ms() as i64,
            is_mcp_message(event),
        )?;
        let id = EventId {
            stream: stream.to_string(),
            seq,
        };
        if is_mcp_message(event) {
            self.hub.deliver(stream, sse::frame(&id, event, data));
        } else if stream == STANDALONE && is_tool_event(event) {
            // Tool events are for dashboards only: an MCP stream carries JSON-RPC messages alone.
            self.hub
                .deliver_to_watchers(|| sse::frame(&id, event, data));
            if relay {
                self.relay_event(event, data);
            }
        }
        Ok(())
    }

    /// Sends a tool event to the session a 2026-07-28 call named for its events, if one did.
    fn relay_event(&self, event: &str, data: &str) {
        let Some(target) = self
            .setting(relay::EVENTS_SETTING)
            .filter(|t| !t.is_empty() && *t != self.session)
        else {
            return;
        };
        let data = serde_json::from_str::<Value>(data).unwrap_or_else(|_| json!(data));
        let event = json!({ "event": event, "data": data });
        self.relay
            .push(&self.env, target, self.stored_caller(), event);
    }

    /// A session setting; a storage failure is logged and reads as unset, so callers fall back to
    /// the protocol default instead of failing the request.
    fn setting(&self, key: &str) -> Option<String> {
        self.db.get(key).unwrap_or_else(|e| {
            crate::log::error!("session setting {key}: {e}");
            None
        })
    }

    /// Log messages below this level are not sent (`logging/setLevel`; everything until set).
    fn log_level(&self) -> LogLevel {
        self.setting("log_level")
            .and_then(|l| LogLevel::parse(&l).ok())
            .unwrap_or(LogLevel::Debug)
    }

    fn client_capabilities(&self) -> Value {
        self.setting("client_capabilities")
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_else(|| json!({}))
    }

    /// The session's user and the roles of its latest request: who a background job acts for.
    fn stored_caller(&self) -> Caller {
        Caller {
            user: self.setting("user").filter(|u| !u.is_empty()),
            roles: self
                .setting("roles")
                .and_then(|r| serde_json::from_str(&r).ok())
                .unwrap_or_default(),
        }
    }

    /// How far the stored `last_seen` may lag behind the last request: a tenth of the idle timeout,
    /// at most ten minutes, so a busy session writes it rarely, not on every call.
    fn seen_slack_ms(&self) -> i64 {
        (i64::from(self.deployment.cfg.session_idle_secs) * 100).min(600_000)
    }

    /// When the session was last used: this instance's memory, or, after a reset, the stored time
    /// plus the most it may lag, so an idle session is never ended early.
    fn last_active(&self, stored: i64) -> i64 {
        match self.seen.get() {
            0 => stored + self.seen_slack_ms(),
            seen => seen.max(stored),
        }
    }

    /// Records a use of the session: in memory, and in storage when the stored time lags by more
    /// than the slack or the caller's roles changed (`None`: a caller without roles to keep, an
    /// anonymous session's). Every lane that uses the session (MCP, chat, relayed events) records
    /// it here, so none writes `last_seen` more often than the others.
    fn touch(&self, roles: Option<&str>) -> Result<()> {
        let now = clock::now_ms() as i64;
        self.seen.set(now);
        let stored = self
            .db
            .get("last_seen")?
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0);
        let moved = now - stored > self.seen_slack_ms();
        let now = now.to_string();
        let mut changed = Vec::new();
        if moved {
            changed.push(("last_seen", now.as_str()));
        }
        if let Some(roles) = roles {
            if self.db.get("roles")?.as_deref() != Some(roles) {
                changed.push(("roles", roles));
            }
        }
        if changed.is_empty() {
            return Ok(());
        }
        self.db.set_all(&changed)
    }

    fn version(&self) -> String {
        self.setting("version")
            .unwrap_or_else(|| version::ASSUMED_WITHOUT_HEADER.to_string())
    }
}

/// Session-storage key of an anonymous caller's count of successful FlowMind calls: in the tools'
/// namespace (the session's `Platform` prefixes its keys with `tool:`), where FlowMind's tools read
/// their caller's level (`tools::flowmind::levels::of_caller`) and chain steps their runner's.
const FLOWMIND_SUCCESSES: &str = "tool:flowmind_successes";

/// The 2025 lane: an anonymous caller is their session, whose FlowMind count and log level the
/// session keeps.
impl Host for Core {
    fn era(&self) -> Era {
        Era::Legacy
    }

    fn deployment(&self) -> &Deployment {
        &self.deployment
    }

    fn anonymous_successes(&self) -> Result<u64> {
        Ok(self
            .db
            .get(FLOWMIND_SUCCESSES)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    fn set_anonymous_successes(&self, n: u64) -> Result<()> {
        self.db.set(FLOWMIND_SUCCESSES, &n.to_string())
    }

    fn set_log_level(&self, level: LogLevel) -> Result<()> {
        self.db.set("log_level", level.as_str())
    }
}

/// How a session keeps its caller's roles for background jobs: a JSON list, so each role comes
/// back whole (read back by `stored_caller`).
pub(crate) fn stored_roles(caller: &Caller) -> String {
    json!(caller.roles).to_string()
}

/// The replay of `from.stream` after `from.seq`, up to the last event logged now, of the events
/// `keep` accepts; read page by page as the client takes them (`stream::Replay`). Taken right
/// before the live subscription, with no await between, so no event is missed or repeated.
fn replay(core: &Core, from: &EventId, keep: fn(&str) -> bool) -> Result<stream::Replay> {
    Ok(stream::Replay {
        db: core.db.clone(),
        stream: from.stream.clone(),
        after: from.seq,
        upto: core.db.replay_upto(&from.stream)?,
        keep,
    })
}

/// The events an MCP stream (`GET /mcp`, a POST's reply) carries: JSON-RPC messages, never the
/// session's tool events, which clients would not know (the Python SDK warns of each).
fn is_mcp_message(event: &str) -> bool {
    event == "message"
}

/// The events a dashboard sees: what tools did, not the protocol's messages.
fn is_tool_event(event: &str) -> bool {
    matches!(event, "tool_call" | "tool_result" | "error")
}

/// Stops the runs a call drives (its attached jobs) at their next step boundary, with rollback as
/// `cancel_chain` does, when the client of the watch request (`signal`) goes away before the call
/// (`key`) ends; then ends the watch (`_tx`). The object of a 2026-07-28 run holds that one run, so
/// its attached jobs are the call's.
async fn stop_runs_when_gone(
    core: Rc<Core>,
    key: String,
    signal: AbortSignal,
    _tx: UnboundedSender<Vec<u8>>,
) {
    while core.hub.is_in_flight(&key) {
        if signal.aborted() {
            stop_attached_jobs(&core);
            return;
        }
        Delay::from(Duration::from_millis(100)).await;
    }
}

/// Asks the object's attached jobs to stop at their next step boundary ([`STREAM_CLOSED`]).
fn stop_attached_jobs(core: &Core) {
    match core.db.stop_attached_jobs(STREAM_CLOSED) {
        Ok(jobs) => {
            for job in jobs {
                crate::log::info!(
                    "{}",
                    json!({ "run_stopping": job.id, "reason": STREAM_CLOSED, "session": core.session })
                );
            }
        }
        Err(e) => crate::log::error!("{}", json!({ "run_stop": e.to_string() })),
    }
}

/// The Durable Object class (`class_name = "Session"` in wrangler.toml).
#[durable_object]
pub struct Session {
    state: State,
    env: Env,
    /// Built on first use (tables created); dropped when the session ends, so a later request
    /// starts from empty storage and finds no session.
    core: RefCell<Option<Rc<Core>>>,
}

impl DurableObject for Session {
    fn new(state: State, env: Env) -> Self {
        Session {
            state,
            env,
            core: RefCell::new(None),
        }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        let correlation = header(&req, CORRELATION_HEADER).unwrap_or_default();
        match self.route(req, &correlation).await {
            Ok(resp) => Ok(resp),
            Err(e) => {
                if !e.is_public() {
                    crate::log::error!("{}", json!({ "cid": correlation, "error": e.to_string() }));
                }
                Ok(error_response_for(&e, None)?)
            }
        }
    }

    async fn alarm(&self) -> worker::Result<Response> {
        let runs = self.on_alarm().await;
        join_all(runs).await;
        Response::empty()
    }
}

impl Session {
    fn core(&self) -> Result<Rc<Core>> {
        if let Some(core) = self.core.borrow().as_ref() {
            return Ok(core.clone());
        }
        let cfg = Config::from_env(&self.env);
        let db = SessionDb::open(self.state.storage().sql())?;
        let registry = crate::store::registry(cfg.catalog)?;
        cfg.check_with(&registry)?;
        let core = Rc::new_cyclic(|me| Core {
            session: self.state.id().name().unwrap_or_default(),
            db,
            deployment: Deployment::new(&self.env, cfg, registry),
            hub: Hub::default(),
            state: State::from(worker::wasm_bindgen::JsCast::unchecked_into::<
                worker::worker_sys::DurableObjectState,
            >(worker::wasm_bindgen::JsValue::from(
                self.state.as_raw(),
            ))),
            me: me.clone(),
            env: self.env.clone(),
            relay: Rc::default(),
            seen: Cell::new(0),
            asking: RefCell::default(),
        });
        *self.core.borrow_mut() = Some(core.clone());
        Ok(core)
    }

    async fn route(&self, mut req: Request, correlation: &str) -> Result<Response> {
        let core = self.core()?;
        let caller = crate::wire::caller_of(&req);
        let op = Op::of(&req);
        match req.method() {
            Method::Post => {
                let body = req
                    .text()
                    .await
                    .map_err(|e| Error::Internal(format!("read forwarded body: {e}")))?;
                let signal = Some(req.inner().signal());
                match op {
                    Op::Relay => Self::relay(&core, &body, &caller),
                    Op::CreateChat => self.create_chat(&core, &caller).await,
                    Op::Chat => self.chat(&core, &body, signal, &caller),
                    Op::Create => self.create(&core, &body, &caller).await,
                    Op::Mcp(lane) => {
                        self.post(&core, &body, signal, correlation, &caller, lane)
                            .await
                    }
                    Op::Watch | Op::RunWatch(_) => Err(Error::MethodNotAllowed(
                        "Method Not Allowed: POST; a watch is a GET".into(),
                    )),
                }
            }
            Method::Get => {
                let last = header(&req, "last-event-id");
                let signal = Some(req.inner().signal());
                match op {
                    Op::Chat => self.chat_history(&core, &caller),
                    Op::RunWatch(call) => self.run_watch(&core, &call, signal, &caller),
                    Op::Watch => self.watch(&core, last.as_deref(), signal, &caller),
                    _ => self.get(&core, last.as_deref(), signal, &caller),
                }
            }
            Method::Delete => self.delete(&core, &caller).await,
            other => Err(Error::MethodNotAllowed(format!(
                "Method Not Allowed: {other:?} is not served on /mcp"
            ))),
        }
    }

    /// The session exists and belongs to `caller`: a session started by one user (or anonymously)
    /// is refused to everyone else. Keeps the caller's current roles for background jobs.
    fn require_session(core: &Core, caller: &Caller) -> Result<()> {
        if core.db.get("created_at")?.is_none() {
            return Err(Error::SessionNotFound);
        }
        let owner = core.db.get("user")?.unwrap_or_default();
        if owner != caller.user.clone().unwrap_or_default() {
            return Err(Error::Forbidden(
                "Forbidden: this session was started by another user (or without a token); send initialize without Mcp-Session-Id to start your own session".into(),
            ));
        }
        core.touch(Some(&stored_roles(caller)))
    }

    /// `initialize` without a session id: the Worker minted the id; store the session's state.
    async fn create(&self, core: &Rc<Core>, body: &str, caller: &Caller) -> Result<Response> {
        let Incoming::Request { id, method, params } = Incoming::parse(body)? else {
            return Err(Error::InvalidRequest(
                "Invalid Request: expected initialize".into(),
            ));
        };
        if method != "initialize" {
            return Err(Error::InvalidRequest(
                "Invalid Request: expected initialize".into(),
            ));
        }
        if core.db.get("created_at")?.is_some() {
            return Err(Error::InvalidRequest(
                "Invalid Request: session already initialized".into(),
            ));
        }
        let init = match Initialize::from_params(&params_object(params.as_ref())) {
            Ok(i) => i,
            Err(e) => return error_response_for(&e, Some(&id)),
        };
        self.open(
            core,
            caller,
            &[
                ("version", init.negotiated()),
                ("client_capabilities", &init.client_capabilities.to_string()),
                ("client_info", &init.client_info.to_string()),
            ],
        )
        .await?;
        json_response(
            &response(&id, init.result(core.deployment.cfg.catalog)),
            200,
        )
    }

    /// Records a new session of `caller` (its owner from now on) with `details`, in one statement
    /// so a failure leaves no half-created session, and starts its housekeeping alarm.
    async fn open(&self, core: &Rc<Core>, caller: &Caller, details: &[(&str, &str)]) -> Result<()> {
        let now_ms = clock::now_ms() as i64;
        let now = now_ms.to_string();
        let roles = stored_roles(caller);
        let mut meta = details.to_vec();
        meta.extend([
            ("last_seen", now.as_str()),
            ("user", caller.user.as_deref().unwrap_or("")),
            ("roles", roles.as_str()),
            ("created_at", now.as_str()),
        ]);
        core.db.set_all(&meta)?;
        core.seen.set(now_ms);
        self.schedule_housekeeping(core).await
    }

    async fn post(
        &self,
        core: &Rc<Core>,
        body: &str,
        signal: Option<worker::web_sys::AbortSignal>,
        correlation: &str,
        caller: &Caller,
        lane: Lane,
    ) -> Result<Response> {
        Self::require_session(core, caller)?;
        let msg = Incoming::parse(body)?;
        match msg {
            Incoming::Notification { method, params } => {
                match method.as_str() {
                    "notifications/initialized" => core.db.set("initialized", "1")?,
                    "notifications/cancelled" => {
                        if let Some(id) = params.as_ref().and_then(|p| p.get("requestId")) {
                            core.hub.cancel(&id.to_string());
                        }
                    }
                    // Other notifications (roots/list_changed, progress of client work) need no
                    // action.
                    _ => {}
                }
                Ok(Response::empty()?.with_status(202))
            }
            Incoming::Response { id, outcome } => {
                if let Value::String(key) = id.as_value() {
                    core.hub.answer(key, outcome);
                }
                Ok(Response::empty()?.with_status(202))
            }
            Incoming::Request { id, method, params } if method == "tools/call" => {
                match self
                    .tools_call(core, id.clone(), params, signal, correlation, caller, lane)
                    .await
                {
                    Ok(resp) => Ok(resp),
                    Err(e) => error_response_for(&e, Some(&id)),
                }
            }
            Incoming::Request { id, method, params }
                if method == "tasks/result"
                    && jobs::chain_task_id(&params_object(params.as_ref())).is_some() =>
            {
                self.chain_task_result(core, id, params, signal, caller)
                    .await
            }
            Incoming::Request { id, method, params } => {
                let params = params_object(params.as_ref());
                let answer = match jobs::tasks_request(core, caller, &method, &params).await {
                    Some(answer) => answer,
                    None => crate::server::answer(&**core, caller, &method, &params).await,
                };
                Policy::of(Era::Legacy).reply(&id, &params, answer)
            }
        }
    }

    /// `tools/call`: validated and run in the background, answered as JSON or as an SSE stream
    /// (at once for the run lane, which also stops the call's runs when the stream's client goes).
    #[allow(clippy::too_many_arguments)]
    async fn tools_call(
        &self,
        core: &Rc<Core>,
        id: RequestId,
        params: Option<Value>,
        signal: Option<AbortSignal>,
        correlation: &str,
        caller: &Caller,
        lane: Lane,
    ) -> Result<Response> {
        if let Some(events) = &lane.events {
            if !events.is_empty() && !crate::wire::valid_session_id(events) {
                return Err(Error::Internal(format!(
                    "run lane: events session {events:?} is not a session id"
                )));
            }
            // Written only when it changes: most calls name the same session as the one before.
            if core.db.get(relay::EVENTS_SETTING)?.as_deref() != Some(events.as_str()) {
                core.db.set(relay::EVENTS_SETTING, events)?;
            }
        }
        let params = params_object(params.as_ref());
        let (tool, args, meta) = match crate::server::prepare_call(&**core, caller, &params).await?
        {
            Prepared::Refused(refused) => return json_response(&response(&id, refused), 200),
            Prepared::Run { tool, args, meta } => (tool, args, meta),
        };
        if let Some(created) = jobs::task_call(core, caller, tool, &args, &params).await? {
            return json_response(&response(&id, created), 200);
        }
        let name = tool.def.name;
        let (outbox, first) = Outbox::new(Logged::new(core.clone(), signal));
        let outbox = Rc::new(outbox);
        let call = CallContext::attended(
            core.clone(),
            caller.clone(),
            core.client_capabilities(),
            name,
            &meta,
            Some(core.log_level()),
            outbox.clone(),
            Rc::new(Live(core.clone())),
        )?;
        if lane.stream_at_once {
            outbox.open_stream()?;
        }
        let (abort, registration) = AbortHandle::new_pair();
        let key = id.key();
        let ticket = core.hub.track(&key, abort);
        let core2 = core.clone();
        let correlation = correlation.to_string();
        wasm_bindgen_futures::spawn_local(async move {
            let Some(tool) = core2.deployment.registry.get_for(name, call.caller_ref()) else {
                return;
            };
            let run = Abortable::new(execute(tool, &call, args), registration).await;
            core2.hub.untrack(&key, ticket);
            let (reply, outcome, ms) = match run {
                Ok(mut done) => {
                    levels::after_call(
                        &*core2,
                        call.caller_ref(),
                        tool,
                        &mut done.result,
                        &|msg| call.notify(msg),
                    )
                    .await;
                    (response(&id, done.result), done.outcome, done.duration_ms)
                }
                Err(_) => (
                    error_response(Some(&id), &Error::Cancelled),
                    "cancelled",
                    0.0,
                ),
            };
            crate::log::info!(
                "{}",
                json!({ "cid": correlation, "user": call.caller_ref().user, "tool": tool.def.id(), "ms": ms, "outcome": outcome })
            );
            core2.relay.flush().await;
            outbox.finish(reply, 200);
        });
        Self::reply(core, first).await
    }

    /// 2025-11-25 `tasks/result` of a chain task, answered as a tool call is: JSON, or an SSE
    /// stream once a paused step's question goes to the client on it (the task's multi-round
    /// composition, `jobs::chain_task_request`), its answer matched by the same [`Live`] asking
    /// a tool's questions uses.
    async fn chain_task_result(
        &self,
        core: &Rc<Core>,
        id: RequestId,
        params: Option<Value>,
        signal: Option<AbortSignal>,
        caller: &Caller,
    ) -> Result<Response> {
        let params = params_object(params.as_ref());
        let (outbox, first) = Outbox::new(Logged::new(core.clone(), signal));
        let outbox = Rc::new(outbox);
        let asker = CallContext::attended(
            core.clone(),
            caller.clone(),
            core.client_capabilities(),
            "tasks/result",
            &Value::Null,
            None,
            outbox.clone(),
            Rc::new(Live(core.clone())),
        )?;
        let core2 = core.clone();
        let caller = caller.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let answer =
                jobs::chain_task_request(&core2, &caller, "tasks/result", &params, Some(&asker))
                    .await
                    .unwrap_or_else(|| Err(Error::Internal("not a chain task".into())));
            // An error here is an answer about the task (still working, waiting, declined), not
            // a refusal of the transport: the client's SDK reads it as the request's JSON-RPC
            // error only with 200, as it does once the reply is a stream.
            let reply = match answer {
                Ok(result) => response(&id, result),
                Err(e) => {
                    if !e.is_public() {
                        crate::log::error!("{}", json!({ "error": e.to_string() }));
                    }
                    error_response(Some(&id), &e)
                }
            };
            outbox.finish(reply, 200);
        });
        Self::reply(core, first).await
    }

    /// The HTTP response of a reply that began as `first`: JSON, or an SSE stream (primed where
    /// the session's protocol version wants it).
    async fn reply(
        core: &Core,
        first: futures::channel::oneshot::Receiver<First>,
    ) -> Result<Response> {
        match first.await {
            Ok(First::Json(v, status)) => json_response(&v, status),
            Ok(First::Stream(stream, rx)) => {
                let prefix = if version::primes_streams(&core.version()) {
                    let stream = stream.unwrap_or_default();
                    sse::priming(&EventId { stream, seq: 0 }, RETRY_MS)
                } else {
                    Vec::new()
                };
                sse_response(
                    StreamPlan {
                        prefix,
                        keepalive_secs: core.deployment.cfg.keepalive_secs,
                        max_secs: None,
                    },
                    rx,
                )
            }
            Err(_) => Err(Error::Internal("tool call ended without a reply".into())),
        }
    }

    /// The run lane's watch of call `call` (its JSON-RPC id string; `wire::Op::RunWatch`): an SSE
    /// stream of keepalive comments that ends with the call, or sooner, when its client goes away,
    /// stops the call's runs. A call not running (any more) ends it at once.
    fn run_watch(
        &self,
        core: &Rc<Core>,
        call: &str,
        signal: Option<AbortSignal>,
        caller: &Caller,
    ) -> Result<Response> {
        Self::require_session(core, caller)?;
        let key = RequestId::from_value(&Value::String(call.to_string()))?.key();
        let (tx, rx) = unbounded();
        if let Some(signal) = signal.filter(|_| core.hub.is_in_flight(&key)) {
            wasm_bindgen_futures::spawn_local(stop_runs_when_gone(core.clone(), key, signal, tx));
        }
        sse_response(
            StreamPlan {
                prefix: b": watching\n\n".to_vec(),
                keepalive_secs: RUN_WATCH_TICK_SECS,
                max_secs: None,
            },
            rx,
        )
    }

    /// `GET /mcp`: the standalone stream, or the resumption of any stream with `Last-Event-ID`.
    fn get(
        &self,
        core: &Rc<Core>,
        last_event_id: Option<&str>,
        signal: Option<worker::web_sys::AbortSignal>,
        caller: &Caller,
    ) -> Result<Response> {
        Self::require_session(core, caller)?;
        let from = match last_event_id {
            Some(s) => EventId::parse(s)?,
            None => EventId {
                stream: STANDALONE.to_string(),
                seq: core.db.last_seq()?,
            },
        };
        let mut prefix = Vec::new();
        if version::primes_streams(&core.version()) {
            prefix.extend(sse::priming(&from, RETRY_MS));
        }
        let replayed = replay(core, &from, is_mcp_message)?;
        let (tx, rx) = unbounded();
        let standalone = from.stream == STANDALONE;
        if standalone || core.hub.is_running(&from.stream) {
            // Replay and subscription happen without an await between them, so no event is missed.
            core.hub.subscribe(&from.stream, tx, signal);
        } else {
            drop(tx);
        }
        let max_secs = standalone.then_some(core.deployment.cfg.max_stream_secs);
        sse_replay_response(
            StreamPlan {
                prefix,
                keepalive_secs: core.deployment.cfg.keepalive_secs,
                max_secs,
            },
            Some(replayed),
            rx,
        )
    }

    /// `GET /sessions/:id/events`: the session's tool events (`tool_call`, `tool_result`, `error`)
    /// for dashboards, live, or from after `Last-Event-ID` (an id of this stream) first. A session
    /// opened with a token is watched with a token of the same user; an anonymous one by whoever
    /// holds its id. Any number of dashboards may watch, beside the MCP client's own streams.
    fn watch(
        &self,
        core: &Rc<Core>,
        last_event_id: Option<&str>,
        signal: Option<worker::web_sys::AbortSignal>,
        caller: &Caller,
    ) -> Result<Response> {
        if core.db.get("created_at")?.is_none() {
            return Err(Error::SessionNotFound);
        }
        let owner = core.db.get("user")?.unwrap_or_default();
        if !owner.is_empty() && caller.user.as_deref() != Some(owner.as_str()) {
            return Err(Error::Forbidden(
                "Forbidden: this session's events are shown only to the user who started it".into(),
            ));
        }
        let after = match last_event_id {
            Some(s) => {
                let id = EventId::parse(s)?;
                if id.stream != STANDALONE {
                    return Err(Error::BadHeader(format!(
                        "Bad Request: Last-Event-ID {s:?} is not an event of this stream"
                    )));
                }
                id.seq
            }
            None => core.db.last_seq()?,
        };
        let from = EventId {
            stream: STANDALONE.to_string(),
            seq: after,
        };
        let prefix = sse::priming(&from, RETRY_MS);
        let replayed = replay(core, &from, is_tool_event)?;
        let (tx, rx) = unbounded();
        // Replay, the events not written yet and subscription happen without an await between
        // them, so no event is missed or repeated.
        for ev in core.db.pending_after(STANDALONE, after) {
            if is_tool_event(&ev.event) {
                let id = EventId {
                    stream: STANDALONE.to_string(),
                    seq: ev.seq,
                };
                // The receiver is held right here, so the send cannot fail.
                let _ = tx.unbounded_send(sse::frame(&id, &ev.event, &ev.data));
            }
        }
        core.hub.watch(tx, signal);
        sse_replay_response(
            StreamPlan {
                prefix,
                keepalive_secs: core.deployment.cfg.keepalive_secs,
                max_secs: Some(core.deployment.cfg.max_stream_secs),
            },
            Some(replayed),
            rx,
        )
    }

    /// Tool events of 2026-07-28 calls (which have no session of their own) that asked to be shown
    /// on this session's event stream: only the session's signed-in user may send them. An
    /// anonymous session takes none: its id is all a watcher needs, so anyone who can see its
    /// dashboard could otherwise write to it. An empty list only checks that.
    fn relay(core: &Rc<Core>, body: &str, caller: &Caller) -> Result<Response> {
        if core.db.get("created_at")?.is_some()
            && core.db.get("user")?.unwrap_or_default().is_empty()
        {
            return Err(Error::Forbidden(
                "Forbidden: an anonymous session's event stream shows only its own calls; no other request may add events to it (whoever can see its dashboard holds its id). Name a session you started with your token".into(),
            ));
        }
        chat::acting_caller(core, caller)?;
        let events: Vec<Value> = serde_json::from_str(body)
            .map_err(|e| Error::InvalidRequest(format!("Invalid Request: relayed events: {e}")))?;
        for ev in events {
            if let (Some(event), Some(data)) =
                (ev.get("event").and_then(Value::as_str), ev.get("data"))
            {
                if is_tool_event(event) {
                    core.publish_from(STANDALONE, event, &data.to_string(), false)?;
                }
            }
        }
        Ok(Response::empty()?.with_status(204))
    }

    /// `DELETE /mcp`: ends the session ([`Session::end`]).
    async fn delete(&self, core: &Rc<Core>, caller: &Caller) -> Result<Response> {
        Self::require_session(core, caller)?;
        self.end(core).await?;
        Ok(Response::empty()?.with_status(204))
    }

    /// Ends the session: its connections and calls stop, and its toolsets close or hand over what
    /// they keep open for it (executions). A signed-in user's background runs under way go on:
    /// their results belong to the user, who reads them from other sessions. Until they are over
    /// the object stays as an ended session (`created_at` removed, so every request finds no
    /// session, as for an unknown id) that runs them, its alarm minding them as before; the alarm
    /// then ends it again, for good. Otherwise, and always for an anonymous caller (whose runs
    /// nobody could reach again), its runs stop and its storage and alarm are deleted now.
    async fn end(&self, core: &Rc<Core>) -> Result<()> {
        let signed_in = core.stored_caller().user.is_some();
        if signed_in {
            core.hub.close_connections();
        } else {
            core.hub.shut_down();
        }
        jobs::session_ending(core).await;
        if signed_in && core.db.next_lease_end()?.is_some() {
            core.db.remove("created_at")?;
            core.db
                .set(ENDED_AT, &(clock::now_ms() as i64).to_string())?;
            return self.schedule_housekeeping(core).await;
        }
        let storage = self.state.storage();
        storage.delete_alarm().await.map_err(Error::from)?;
        storage.delete_all().await.map_err(Error::from)?;
        core.db.close();
        *self.core.borrow_mut() = None;
        Ok(())
    }

    /// Alarm work: the job watchdog (whose resumed runs the alarm then awaits), pruning the event
    /// log, and deleting the session once it has been idle too long (or has ended) with no job
    /// running.
    ///
    /// Never fails as a whole: each job fails on its own (`jobs`), every other failure is logged
    /// and skips only its own part, and the alarm is always set again while the session exists,
    /// so housekeeping never stops and no execution is left `running` because another failed.
    async fn on_alarm(&self) -> Vec<futures::future::LocalBoxFuture<'static, ()>> {
        let core = match self.core() {
            Ok(core) => core,
            Err(e) => {
                crate::log::error!("{}", json!({ "session_alarm": e.to_string() }));
                // Without the configuration the object cannot say when; try again in a minute.
                if let Err(e) = self.state.storage().set_alarm(60_000).await {
                    crate::log::error!("{}", json!({ "session_alarm_not_set": e.to_string() }));
                }
                return Vec::new();
            }
        };
        let logged = |what: &str, r: Result<()>| {
            if let Err(e) = r {
                crate::log::error!(
                    "{}",
                    json!({ "session_alarm": what, "error": e.to_string() })
                );
            }
        };
        let last_seen = match core.db.get("last_seen") {
            Ok(None) => return Vec::new(),
            Ok(Some(v)) => core.last_active(v.parse::<i64>().unwrap_or(0)),
            Err(e) => {
                logged("read last_seen", Err(e));
                clock::now_ms() as i64
            }
        };
        let runs = jobs::lapsed(&core).await;
        let now = clock::now_ms() as i64;
        let idle_ms = now - last_seen;
        let ended = matches!(core.db.get(ENDED_AT), Ok(Some(_)));
        if (ended || idle_ms > i64::from(core.deployment.cfg.session_idle_secs) * 1000)
            && runs.is_empty()
            && matches!(core.db.next_lease_end(), Ok(None))
        {
            match self.end(&core).await {
                Ok(()) => return Vec::new(),
                Err(e) => logged("end idle session", Err(e)),
            }
        }
        logged(
            "prune events",
            core.db.prune(
                now - i64::from(core.deployment.cfg.event_retention_secs) * 1000,
                i64::from(core.deployment.cfg.event_log_max),
            ),
        );
        logged("schedule", self.schedule_housekeeping(&core).await);
        runs
    }

    /// Sets the alarm for the next housekeeping, or earlier when a job's lease ends first.
    async fn schedule_housekeeping(&self, core: &Core) -> Result<()> {
        let next = clock::now_ms() as i64 + i64::from(core.deployment.cfg.housekeeping_secs) * 1000;
        // Unable to read the leases, housekeeping still comes back, and the watchdog with it.
        let at = core
            .watchdog_at()
            .unwrap_or_else(|e| {
                crate::log::error!("{}", json!({ "watchdog_at": e.to_string() }));
                None
            })
            .map_or(next, |w| w.min(next));
        self.state
            .storage()
            .set_alarm(at - clock::now_ms() as i64)
            .await
            .map_err(Error::from)
    }
}
