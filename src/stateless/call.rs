//! `tools/call` in the modern lane, with multi-round-trip requests (MRTR).
//!
//! The tool runs through the same executor as in a 2025 session. When it asks the client
//! something (a confirmation form, a sampling request) whose answer the request does not carry,
//! the run is dropped at that point and the request is answered with an `input_required` result:
//! the questions as `inputRequests`, and a sealed `requestState` holding the answers so far. The
//! client retries with the answers; the tool runs again from the start and this time finds them.
//! Tools are written so that a rerun finds what an earlier round prepared
//! ([`ToolContext::exchange_id`]), so nothing happens twice.
//!
//! A `requestState` works once: its nonce is recorded in D1 (`request_state_redeemed`) when it
//! is redeemed, and a second redemption is refused.
//!
//! The reply is JSON, or an SSE stream once the tool sends progress or log messages (log messages
//! only when `_meta` asked for a level). Closing that stream cancels the call.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use futures::channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures::channel::oneshot;
use futures::future::{pending, select, Either, LocalBoxFuture};
use serde_json::{json, Map, Value};
use worker::web_sys::AbortSignal;
use worker::{Delay, Response};

use super::idempotency::{self, Claim};
use super::platform::StatelessPlatform;
use super::{refuse, status_of};
use crate::clock;
use crate::edge::http::json_response;
use crate::error::{Error, Result};
use crate::mcp::logging::LogLevel;
use crate::mcp::message::{error_response, log_message, response, Progress, RequestId};
use crate::mcp::modern::{self, Mirrored, Request};
use crate::mcp::request_state::{self, arguments_hash, Binding, State};
use crate::mcp::sse::unnumbered_frame;
use crate::random;
use crate::registry::{cache, execute, Caller, Platform, Statement, Tool, ToolContext};
use crate::session::stream::{sse_response, StreamPlan};
use crate::tools::flowmind::levels::is_gated;

/// Seconds between keepalive comments on a streamed reply.
const KEEPALIVE_SECS: u32 = 15;

/// The key `requestState` is sealed with: `REQUEST_STATE_SECRET`, else a key derived from
/// `JWT_SECRET` (or `CURSOR_SECRET`) for this purpose alone, so it never equals the key that signs
/// tokens or cursors ([`request_state::derive_key`]).
pub(super) fn state_key(p: &dyn Platform) -> Result<Vec<u8>> {
    if let Some(own) = p.setting("REQUEST_STATE_SECRET") {
        return Ok(own.into_bytes());
    }
    ["JWT_SECRET", "CURSOR_SECRET"]
        .iter()
        .find_map(|name| p.setting(name))
        .map(|shared| request_state::derive_key(shared.as_bytes(), "request-state"))
        .ok_or_else(|| {
            Error::Misconfigured(
                "this server cannot pause a request for input: no REQUEST_STATE_SECRET (or JWT_SECRET) is configured; ask the operator to set it".into(),
            )
        })
}

/// How long a paused request can be resumed: `REQUEST_STATE_TTL_SECONDS`, else 5 minutes.
pub(super) fn lifetime_ms(p: &dyn Platform) -> f64 {
    p.setting("REQUEST_STATE_TTL_SECONDS")
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(request_state::LIFETIME_MS, |s| s * 1000.0)
}

/// The capability a client request method needs.
fn capability_of(method: &str) -> Result<&'static str> {
    match method {
        "sampling/createMessage" => Ok("sampling"),
        "elicitation/create" => Ok("elicitation"),
        "roots/list" => Ok("roots"),
        other => Err(Error::Internal(format!("unknown client method {other}"))),
    }
}

/// Records `state`'s nonce as redeemed; false when it already was (a replay).
pub(super) async fn redeem(p: &dyn Platform, state: &State) -> Result<bool> {
    let rows = p
        .batch(vec![
            Statement::new(
                "DELETE FROM request_state_redeemed WHERE expires_ms < ?1",
                vec![json!(clock::now_ms() as i64)],
            ),
            Statement::new(
                "INSERT INTO request_state_redeemed (nonce, expires_ms) VALUES (?1, ?2) ON CONFLICT (nonce) DO NOTHING RETURNING nonce",
                vec![json!(state.nonce), json!(state.exp as i64)],
            ),
        ])
        .await?;
    Ok(rows.get(1).is_some_and(|r| !r.is_empty()))
}

/// Who a `requestState` is bound to: the signed-in user's id, else the anonymous caller's
/// address (`cf-connecting-ip`), the one thing an anonymous caller presents that a caller
/// elsewhere cannot. Callers behind one address (a NAT) are not told apart; docs/decisions.md.
pub(super) fn state_owner(p: &dyn Platform, caller: &Caller) -> String {
    match &caller.user {
        Some(user) => user.clone(),
        None => format!("anonymous:{}", p.session_id()),
    }
}

/// The refusal of a state presented a second time.
pub(super) fn replayed() -> Error {
    Error::InvalidParams(
        "Invalid params: requestState rejected (it was already used; each state works once); send the original request again without requestState and inputResponses to start over".into(),
    )
}

/// What the request brings from earlier rounds.
struct Round {
    answers: Map<String, Value>,
    /// Responses of a request without a state: answers only to open questions
    /// ([`ToolContext::ask_client_open`]), never to sealed ones.
    unsolicited: Map<String, Value>,
    exchange: String,
}

/// Reads `inputResponses` and `requestState`: a state must open for this caller, tool and
/// arguments and be redeemed for the first time. The tool finds the state's answers of earlier
/// rounds, which a retry cannot change, plus the request's responses under the keys that state
/// asked, and nothing else: responses without a state, or under keys the state did not ask, were
/// never asked for (a client cannot answer a question before it exists) and are ignored, so the
/// tool asks again.
async fn resume(p: &dyn Platform, params: &Map<String, Value>, binding: &Binding) -> Result<Round> {
    let responses = match params.get("inputResponses") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            return Err(Error::InvalidParams(
                "Invalid params: inputResponses must be an object mapping each inputRequests key to the client's result".into(),
            ))
        }
    };
    if let Some((key, _)) = responses.iter().find(|(_, v)| !v.is_object()) {
        return Err(Error::InvalidParams(format!(
            "Invalid params: inputResponses[{key:?}] must be the result object of the request asked under that key"
        )));
    }
    let token = match params.get("requestState") {
        None => {
            return Ok(Round {
                answers: Map::new(),
                unsolicited: responses,
                exchange: random::hex(16)?,
            })
        }
        Some(Value::String(t)) => t,
        Some(_) => {
            return Err(Error::InvalidParams(
                "Invalid params: requestState must be the string the server returned".into(),
            ))
        }
    };
    let state = request_state::open(&state_key(p)?, token, binding, clock::now_ms())?;
    if !redeem(p, &state).await? {
        return Err(replayed());
    }
    let mut answers: Map<String, Value> = responses
        .into_iter()
        .filter(|(key, _)| state.asked.contains(key))
        .collect();
    answers.extend(state.answers);
    Ok(Round {
        answers,
        unsolicited: Map::new(),
        exchange: state.exchange,
    })
}

/// How the reply starts.
enum First {
    /// The whole reply and its HTTP status.
    Json(Value, u16),
    /// An SSE stream.
    Stream(UnboundedReceiver<Vec<u8>>),
}

enum Out {
    Waiting(oneshot::Sender<First>),
    Streaming(UnboundedSender<Vec<u8>>),
    Done,
}

/// Why a run stopped before its result.
enum Pause {
    /// It needs answers the request does not carry.
    Input,
    /// It needs a capability the client did not declare.
    Capability(String),
}

/// One modern `tools/call`: the [`ToolContext`] its tool sees.
struct ModernCall {
    platform: StatelessPlatform,
    caller: Caller,
    capabilities: Value,
    log_level: Option<LogLevel>,
    tool: String,
    progress: Progress,
    cache_bypass: bool,
    out: RefCell<Out>,
    round: Round,
    /// Questions asked this round without an answer, by key.
    asked: RefCell<Map<String, Value>>,
    /// Keys for questions asked without one ([`ToolContext::ask_client`]).
    asks: Cell<u32>,
    pause: RefCell<Option<oneshot::Sender<Pause>>>,
}

impl ModernCall {
    fn stop(&self, why: Pause) {
        if let Some(tx) = self.pause.borrow_mut().take() {
            let _ = tx.send(why);
        }
    }

    /// Sends a notification before the result, switching the reply to SSE.
    fn send(&self, msg: &Value) {
        let frame = unnumbered_frame("message", &msg.to_string());
        let mut out = self.out.borrow_mut();
        if let Out::Waiting(_) = &*out {
            let (tx, rx) = unbounded();
            if let Out::Waiting(first) = std::mem::replace(&mut *out, Out::Streaming(tx)) {
                let _ = first.send(First::Stream(rx));
            }
        }
        if let Out::Streaming(tx) = &*out {
            let _ = tx.unbounded_send(frame);
        }
    }

    /// Sends the final message and ends the reply.
    fn finish(&self, msg: Value, status: u16) {
        match std::mem::replace(&mut *self.out.borrow_mut(), Out::Done) {
            Out::Waiting(first) => {
                let _ = first.send(First::Json(msg, status));
            }
            Out::Streaming(tx) => {
                let _ = tx.unbounded_send(unnumbered_frame("message", &msg.to_string()));
            }
            Out::Done => {}
        }
    }
}

impl ToolContext for ModernCall {
    fn platform(&self) -> &dyn Platform {
        &self.platform
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(msg) = self.progress.notification(progress, total, message) {
            self.send(&msg);
        }
    }

    fn log(&self, level: LogLevel, data: Value) {
        if self.log_level.is_some_and(|min| level >= min) {
            self.send(&log_message(&self.tool, level, data));
        }
    }

    fn ask_client<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, Result<Value>> {
        let n = self.asks.get();
        self.asks.set(n + 1);
        Box::pin(async move {
            let key = format!("{}-{n}", capability_of(method)?);
            self.ask_client_as(&key, method, params).await
        })
    }

    fn ask_client_as<'a>(
        &'a self,
        key: &'a str,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let capability = capability_of(method)?;
            if self.capabilities.get(capability).is_none() {
                self.stop(Pause::Capability(capability.to_string()));
                return pending().await;
            }
            if let Some(answer) = self.round.answers.get(key) {
                return Ok(answer.clone());
            }
            self.asked.borrow_mut().insert(
                key.to_string(),
                json!({ "method": method, "params": params }),
            );
            self.stop(Pause::Input);
            pending().await
        })
    }

    fn ask_client_open<'a>(
        &'a self,
        key: &'a str,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, Result<Value>> {
        match self.round.unsolicited.get(key) {
            Some(answer) if !self.round.answers.contains_key(key) => {
                let answer = answer.clone();
                Box::pin(async move { Ok(answer) })
            }
            _ => self.ask_client_as(key, method, params),
        }
    }

    fn exchange_id(&self) -> Option<String> {
        Some(self.round.exchange.clone())
    }

    fn end_connection(&self) {}

    fn caller(&self) -> Caller {
        self.caller.clone()
    }

    fn client_capabilities(&self) -> Value {
        self.capabilities.clone()
    }

    fn cache_bypass(&self) -> bool {
        self.cache_bypass
    }
}

/// Resolves once the client has gone away (workerd aborts the request's signal).
async fn gone(signal: AbortSignal) {
    while !signal.aborted() {
        Delay::from(Duration::from_millis(250)).await;
    }
}
/// The `input_required` result asking `asked`, with the sealed state of the answers so far.
fn input_required(
    p: &dyn Platform,
    round: &Round,
    binding: Binding,
    asked: Map<String, Value>,
) -> Result<Value> {
    let state = State {
        v: 1,
        nonce: random::hex(16)?,
        exchange: round.exchange.clone(),
        user: binding.user,
        call: binding.call,
        args: binding.args,
        exp: clock::now_ms() + lifetime_ms(p),
        answers: round.answers.clone(),
        asked: asked.keys().cloned().collect(),
        steps: Vec::new(),
    };
    Ok(json!({
        "resultType": "input_required",
        "inputRequests": asked,
        "requestState": request_state::seal(&state_key(p)?, &state)?,
    }))
}

/// The conformance prompt that needs input (`test_input_required_result_prompt`, SEP-2322 on
/// `prompts/get`): the same rounds as a tool's, around a prompt that has no handler of its own.
pub async fn input_prompt(
    platform: &StatelessPlatform,
    r: &Request,
    caller: &Caller,
) -> Result<Value> {
    const KEY: &str = "user_context";
    let args = r
        .params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let binding = Binding {
        user: state_owner(platform, caller),
        call: format!(
            "prompts/get {}",
            crate::tools::conformance::fixtures::INPUT_PROMPT
        ),
        args: arguments_hash(&args),
    };
    let round = resume(platform, &r.params, &binding).await?;
    if !r.declares("elicitation") {
        return Err(Error::MissingCapability {
            capability: "elicitation".into(),
        });
    }
    match round.answers.get(KEY) {
        Some(answer) => {
            let context = answer
                .pointer("/content/context")
                .and_then(Value::as_str)
                .unwrap_or("none");
            Ok(modern::complete(
                crate::tools::conformance::fixtures::input_prompt(context),
            ))
        }
        None => {
            let form = json!({
                "method": "elicitation/create",
                "params": {
                    "message": "What context should the prompt use?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": { "context": { "type": "string" } },
                        "required": ["context"]
                    }
                }
            });
            input_required(
                platform,
                &round,
                binding,
                Map::from_iter([(KEY.to_string(), form)]),
            )
        }
    }
}

/// Serves a modern `tools/call`.
pub async fn tools_call(
    platform: StatelessPlatform,
    r: Request,
    headers: &Mirrored,
    caller: Caller,
    signal: AbortSignal,
) -> Result<Response> {
    let id = r.id.clone();
    match start(platform, r, headers, caller, signal).await {
        Ok(First::Json(v, status)) => json_response(&v, status),
        Ok(First::Stream(rx)) => sse_response(
            StreamPlan {
                prefix: Vec::new(),
                keepalive_secs: KEEPALIVE_SECS,
                max_secs: None,
            },
            rx,
        ),
        Err(e) => refuse(Some(&id), &e),
    }
}

async fn start(
    platform: StatelessPlatform,
    r: Request,
    headers: &Mirrored,
    caller: Caller,
    signal: AbortSignal,
) -> Result<First> {
    let name = crate::mcp::message::required_str(&r.params, "name")?.to_string();
    let args = r
        .params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let write = match platform.registry().get_for(&name, &caller) {
        None => {
            return Err(Error::InvalidParams(format!(
                "Invalid params: unknown tool {name:?}; call tools/list for the available tools"
            )))
        }
        Some(tool) => {
            modern::check_param_headers(tool.input_schema(), &args, &headers.params)?;
            !tool.def.annotations.read_only
        }
    };
    let user = state_owner(&platform, &caller);
    // Anonymous callers are told apart by address, so one's retry never gets another's result.
    let owner = caller.user.clone().unwrap_or_else(|| platform.session_id());
    let dedup = match write {
        true => Some(idempotency::key(
            &owner,
            &name,
            &r.meta(),
            &args,
            r.params.get("requestState"),
        )?),
        false => None,
    };
    if let Some(key) = &dedup {
        match idempotency::claim(&platform, key).await? {
            Claim::Mine => {}
            Claim::Done(result) => return Ok(First::Json(response(&r.id, result), 200)),
            Claim::Running => return Err(idempotency::still_running()),
        }
    }
    let meta = Value::Object(r.meta());
    let binding = Binding {
        user,
        call: format!("tools/call {name}"),
        args: arguments_hash(&args),
    };
    let round = match resume(&platform, &r.params, &binding).await {
        Ok(round) => round,
        Err(e) => {
            if let Some(key) = &dedup {
                let _ = idempotency::release(&platform, key).await;
            }
            return Err(e);
        }
    };
    let (first_tx, first_rx) = oneshot::channel();
    let (pause_tx, pause_rx) = oneshot::channel();
    let call = Rc::new(ModernCall {
        cache_bypass: cache::bypass_requested(&meta)?,
        progress: Progress::of(&meta),
        platform,
        caller,
        capabilities: r.capabilities.clone(),
        log_level: r.log_level,
        tool: name,
        out: RefCell::new(Out::Waiting(first_tx)),
        round,
        asked: RefCell::new(Map::new()),
        asks: Cell::new(0),
        pause: RefCell::new(Some(pause_tx)),
    });
    let id = r.id;
    wasm_bindgen_futures::spawn_local(drive(call, id, args, binding, dedup, pause_rx, signal));
    first_rx
        .await
        .map_err(|_| Error::Internal("tool call ended without a reply".into()))
}

/// Counts a signed-in caller's successful FlowMind call towards their level, as their 2025
/// sessions do (`session::levels`); the next `tools/list` shows what it unlocked.
async fn count_flowmind_success(
    platform: &StatelessPlatform,
    tool: &Tool,
    user: &str,
    result: &Value,
) {
    let succeeded = result.get("isError") != Some(&Value::Bool(true))
        && result.pointer("/structuredContent/success") != Some(&Value::Bool(false));
    if !succeeded || !is_gated(tool.def.toolset, tool.def.name) {
        return;
    }
    if let Err(e) = crate::session::levels::record_user(platform.services(), user).await {
        crate::log::error!("{}", json!({ "flowmind_progress": e.to_string() }));
    }
}

/// Runs the tool until it finishes, pauses for input, or the client goes away.
async fn drive(
    call: Rc<ModernCall>,
    id: RequestId,
    args: Value,
    binding: Binding,
    dedup: Option<String>,
    pause: oneshot::Receiver<Pause>,
    signal: AbortSignal,
) {
    let registry = call.platform.registry();
    let Some(tool) = registry.get_for(&call.tool, &call.caller) else {
        return;
    };
    let run = Box::pin(execute(tool, &*call, args));
    let stop = select(pause, Box::pin(gone(signal)));
    let ended = select(run, stop).await;
    if let (Either::Left((done, _)), Some(user)) = (&ended, &call.caller.user) {
        count_flowmind_success(&call.platform, tool, user, &done.result).await;
    }
    if let Some(key) = &dedup {
        // Only a write that happened answers its retries; an error, or a confirmation that is
        // pending, denied or expired, leaves the retry free to ask again.
        let kept = match &ended {
            Either::Left((done, _)) if idempotency::succeeded(&done.result) => {
                idempotency::record(&call.platform, key, &modern::complete(done.result.clone()))
                    .await
            }
            _ => idempotency::release(&call.platform, key).await,
        };
        if let Err(e) = kept {
            crate::log::error!(
                "{}",
                json!({ "idempotency": e.to_string(), "tool": call.tool })
            );
        }
    }
    let (reply, status, outcome) = match ended {
        Either::Left((done, _)) => (
            response(&id, modern::complete(done.result)),
            200,
            done.outcome,
        ),
        Either::Right((Either::Left((Ok(Pause::Input), _)), _)) => {
            let asked = call.asked.borrow().clone();
            match input_required(&call.platform, &call.round, binding, asked) {
                Ok(result) => (response(&id, result), 200, "input_required"),
                Err(e) => (error_response(Some(&id), &e), status_of(&e), "unavailable"),
            }
        }
        Either::Right((Either::Left((Ok(Pause::Capability(capability)), _)), _)) => {
            let e = Error::MissingCapability { capability };
            (
                error_response(Some(&id), &e),
                status_of(&e),
                "missing_capability",
            )
        }
        Either::Right((Either::Left((Err(_), _)), _)) => return,
        // The client closed the stream: that is cancellation, and nothing more is sent.
        Either::Right((Either::Right(_), _)) => {
            call.platform.flush().await;
            crate::log::info!(
                "{}",
                json!({ "tool": tool.def.id(), "outcome": "cancelled", "era": "2026-07-28" })
            );
            return;
        }
    };
    crate::log::info!(
        "{}",
        json!({ "tool": tool.def.id(), "outcome": outcome, "era": "2026-07-28" })
    );
    call.platform.flush().await;
    call.finish(reply, status);
}
