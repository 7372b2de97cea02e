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

use futures::channel::oneshot;
use futures::future::{pending, select, Either, LocalBoxFuture};
use serde_json::{json, Map, Value};
use worker::web_sys::AbortSignal;
use worker::{Delay, Response};

use super::idempotency::{self, Claim};
use super::platform::StatelessPlatform;
use super::{Lane, POLICY};
use crate::clock;
use crate::edge::http::json_response;
use crate::error::{Error, Result};
use crate::mcp::message::{error_response, response, RequestId};
use crate::mcp::modern::{self, Mirrored, Request};
use crate::mcp::request_state::{self, arguments_hash, Binding, State};
use crate::random;
use crate::registry::call::{capability_of, Ask, CallContext, Question};
use crate::registry::{execute, Caller, Platform, Statement, ToolContext, ToolResult};
use crate::server::stream::{sse_response, Direct, First, Outbox, StreamPlan};
use crate::server::{levels, Host};

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
    let mut answers: Map<String, Value> = crate::engine::sort::object(
        responses
            .into_iter()
            .filter(|(key, _)| state.asked.contains(key)),
    );
    answers.extend(state.answers);
    Ok(Round {
        answers,
        unsolicited: Map::new(),
        exchange: state.exchange,
    })
}

/// Why a run stopped before its result.
enum Pause {
    /// It needs answers the request does not carry.
    Input,
    /// It needs a capability the client did not declare.
    Capability(String),
}

/// A modern call's questions: answered from the request (`inputResponses` under the keys an
/// earlier round's sealed state asked), or else collected, and the run stopped, so the request is
/// answered with `input_required`.
struct Rounds {
    round: Round,
    /// Questions asked this round without an answer, by key.
    asked: RefCell<Map<String, Value>>,
    /// Keys for questions asked without one ([`ToolContext::ask_client`]).
    asks: Cell<u32>,
    pause: RefCell<Option<oneshot::Sender<Pause>>>,
}

impl Rounds {
    fn stop(&self, why: Pause) {
        if let Some(tx) = self.pause.borrow_mut().take() {
            let _ = tx.send(why);
        }
    }
}

impl Ask for Rounds {
    fn ask<'a>(&'a self, q: Question<'a>) -> LocalBoxFuture<'a, ToolResult<Value>> {
        let n = q.key.is_none().then(|| {
            let n = self.asks.get();
            self.asks.set(n + 1);
            n
        });
        Box::pin(async move {
            let capability = capability_of(q.method)?;
            let key = match (q.key, n) {
                (Some(key), _) => key.to_string(),
                (None, n) => format!("{capability}-{}", n.unwrap_or_default()),
            };
            if q.open && !self.round.answers.contains_key(&key) {
                if let Some(answer) = self.round.unsolicited.get(&key) {
                    return Ok(answer.clone());
                }
            }
            if q.call.client_capabilities().get(capability).is_none() {
                self.stop(Pause::Capability(capability.to_string()));
                return pending().await;
            }
            if let Some(answer) = self.round.answers.get(&key) {
                return Ok(answer.clone());
            }
            self.asked
                .borrow_mut()
                .insert(key, json!({ "method": q.method, "params": q.params }));
            self.stop(Pause::Input);
            pending().await
        })
    }

    fn exchange_id(&self) -> Option<String> {
        Some(self.round.exchange.clone())
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

/// What the shared preamble (`server::prepare_call`) found: the tool's name, the arguments and
/// `_meta`.
pub type Run = (&'static str, Value, Value);

/// Serves a modern `tools/call` that passed the preamble.
pub async fn tools_call(
    host: Lane,
    platform: StatelessPlatform,
    r: Request,
    run: Run,
    headers: &Mirrored,
    caller: Caller,
    signal: AbortSignal,
) -> Result<Response> {
    let id = r.id.clone();
    match start(host, platform, r, run, headers, caller, signal).await {
        Ok(First::Json(v, status)) => json_response(&v, status),
        Ok(First::Stream(_, rx)) => sse_response(
            StreamPlan {
                prefix: Vec::new(),
                keepalive_secs: KEEPALIVE_SECS,
                max_secs: None,
            },
            rx,
        ),
        Err(e) => POLICY.refuse(Some(&id), &e),
    }
}

async fn start(
    host: Lane,
    platform: StatelessPlatform,
    r: Request,
    (name, args, meta): Run,
    headers: &Mirrored,
    caller: Caller,
    signal: AbortSignal,
) -> Result<First> {
    let write = match host.registry().get(name) {
        Some(tool) => {
            modern::check_param_headers(tool.input_schema(), &args, &headers.params)?;
            tool.def.may_write(&args)
        }
        None => false,
    };
    let user = state_owner(&platform, &caller);
    // Anonymous callers are told apart by address, so one's retry never gets another's result.
    let owner = caller.user.clone().unwrap_or_else(|| platform.session_id());
    let dedup = match write {
        true => Some(idempotency::key(
            &owner,
            name,
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
    let (pause_tx, pause_rx) = oneshot::channel();
    let rounds = Rc::new(Rounds {
        round,
        asked: RefCell::new(Map::new()),
        asks: Cell::new(0),
        pause: RefCell::new(Some(pause_tx)),
    });
    let (outbox, first) = Outbox::new(Direct::default());
    let outbox = Rc::new(outbox);
    let platform = Rc::new(platform);
    let call = CallContext::attended(
        platform.clone(),
        caller,
        r.capabilities.clone(),
        name,
        &meta,
        r.log_level,
        outbox.clone(),
        rounds.clone(),
    )?;
    let run = Drive {
        host,
        platform,
        outbox,
        rounds,
        binding,
        dedup,
    };
    wasm_bindgen_futures::spawn_local(run.drive(call, r.id, args, pause_rx, signal));
    first
        .await
        .map_err(|_| Error::Internal("tool call ended without a reply".into()))
}

/// A modern call on its way, and what its end needs.
struct Drive {
    host: Lane,
    platform: Rc<StatelessPlatform>,
    outbox: Rc<Outbox<Direct>>,
    rounds: Rc<Rounds>,
    binding: Binding,
    dedup: Option<String>,
}

impl Drive {
    /// Runs the tool until it finishes, pauses for input, or the client goes away.
    async fn drive(
        self,
        call: CallContext<'static>,
        id: RequestId,
        args: Value,
        pause: oneshot::Receiver<Pause>,
        signal: AbortSignal,
    ) {
        let Some(tool) = self.host.registry().get_for(call.tool(), call.caller_ref()) else {
            return;
        };
        let started = crate::clock::now_ms();
        let run = Box::pin(execute(tool, &call, args));
        let stop = select(pause, Box::pin(gone(signal)));
        let mut ended = select(run, stop).await;
        if let Either::Left((done, _)) = &mut ended {
            levels::after_call(
                &self.host,
                call.caller_ref(),
                tool,
                &mut done.result,
                &|_| {},
            )
            .await;
        }
        let platform = &*self.platform;
        if let Some(key) = &self.dedup {
            // Only a write that happened answers its retries; an error, or a confirmation that is
            // pending, denied or expired, leaves the retry free to ask again.
            let kept = match &ended {
                Either::Left((done, _)) if idempotency::succeeded(&done.result) => {
                    idempotency::record(platform, key, &modern::complete(done.result.clone())).await
                }
                _ => idempotency::release(platform, key).await,
            };
            if let Err(e) = kept {
                crate::log::error!(
                    "{}",
                    json!({ "idempotency": e.to_string(), "tool": call.tool() })
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
                let asked = self.rounds.asked.borrow().clone();
                match input_required(platform, &self.rounds.round, self.binding, asked) {
                    Ok(result) => (response(&id, result), 200, "input_required"),
                    Err(e) => (
                        error_response(Some(&id), &e),
                        POLICY.status_of(&e),
                        "unavailable",
                    ),
                }
            }
            Either::Right((Either::Left((Ok(Pause::Capability(capability)), _)), _)) => {
                let e = Error::MissingCapability { capability };
                (
                    error_response(Some(&id), &e),
                    POLICY.status_of(&e),
                    "missing_capability",
                )
            }
            Either::Right((Either::Left((Err(_), _)), _)) => return,
            // The client closed the stream: that is cancellation, and nothing more is sent.
            Either::Right((Either::Right(_), _)) => {
                platform.flush().await;
                crate::log::info!(
                    "{}",
                    json!({ "user": call.caller_ref().user, "tool": tool.def.id(), "outcome": "cancelled",
                            "ms": crate::clock::now_ms() - started, "era": "2026-07-28" })
                );
                return;
            }
        };
        crate::log::info!(
            "{}",
            json!({ "user": call.caller_ref().user, "tool": tool.def.id(), "outcome": outcome,
                    "ms": crate::clock::now_ms() - started, "era": "2026-07-28" })
        );
        platform.flush().await;
        self.outbox.finish(reply, status);
    }
}
