//! `subscriptions/listen` (2026-07-28): a long-lived SSE response to the POST that carries the
//! change notifications the client opted in to, starting with the acknowledgement.
//!
//! A listen stream must be reachable from other requests (the call that changes a caller's tool
//! list ends in another Worker invocation), so it is hosted by a [`Listeners`] Durable Object: one
//! per caller, named by [`owner_of`]: `user:<id>` for a signed-in caller, `address:<ip>` for an
//! anonymous one. The changes this server has are per caller (a FlowMind level reached, the
//! conformance suite's hooks), so one object per caller sees all of them and no object holds more
//! than one caller's streams. A deployment-wide change needs no fan-out: it comes with a new
//! deployment, which restarts the objects and so ends every stream without a completion result,
//! the specification's signal to reconnect (and list again).
//!
//! A stream ends when the client closes it (workerd aborts the request's signal; the object drops
//! it), or after `SSE_MAX_STREAM_SECONDS`, when the server sends the `subscriptions/listen`
//! completion result first (graceful closure).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use futures::channel::mpsc::{unbounded, UnboundedSender};
use futures::future::{select, Either};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use worker::web_sys::AbortSignal;
use worker::{durable_object, DurableObject, Env, Request, Response, State};

use crate::edge::config::Config;
use crate::edge::http::header;
use crate::error::{Error, Result};
use crate::mcp::modern;
use crate::mcp::sse::unnumbered_frame;
use crate::mcp::subscriptions::{self, Change, Filter, Offer};
use crate::registry::Caller;
use crate::server::stream::{sse_response, StreamPlan};
use crate::wire::ObjectRequest;

/// Where the Worker opens a stream in the object (the host is never resolved).
const LISTEN_URL: &str = "https://listeners.internal/listen";
/// Where a change is announced to the object's streams.
const NOTIFY_URL: &str = "https://listeners.internal/notify";
/// Open listen streams one caller may hold: one per kind of change is all a client needs, and a
/// bound keeps a runaway client from filling its object's memory. Opening one more ends the
/// oldest gracefully rather than refusing the new one: a client that closed a stream and opens
/// another at once must not be refused because its close has not reached the object yet.
pub const MAX_STREAMS: usize = 16;

/// What this deployment delivers on listen streams, for `server/discover` and the
/// acknowledgement alike: tool-list changes when FlowMind's progressive authorization is on (a
/// signed-in caller's list grows with their level) or in the conformance catalog (its hook),
/// prompt-list changes only in the conformance catalog (its hook; production serves no prompts).
pub fn offer(cfg: &Config) -> Offer {
    Offer {
        tools: cfg.flowmind_levels.is_some() || cfg.catalog.has_fixtures(),
        prompts: cfg.catalog.has_fixtures(),
    }
}

/// The listen object of `caller`: their user id when signed in, else the client's address (the
/// stand-in the stateless lane uses for anonymous callers elsewhere too).
pub fn owner_of(caller: &Caller, req: &Request) -> String {
    match &caller.user {
        Some(user) => user_owner(user),
        None => format!(
            "address:{}",
            header(req, "cf-connecting-ip").unwrap_or_else(|| "local".into())
        ),
    }
}

/// The listen object of signed-in user `user`.
pub fn user_owner(user: &str) -> String {
    format!("user:{user}")
}

/// What the Worker sends the object to open a stream.
#[derive(Serialize, Deserialize)]
struct Open {
    /// The JSON-RPC id of the `subscriptions/listen` request: the subscription's id.
    id: Value,
    /// The acknowledged filter ([`Filter::to_json`]).
    notifications: Value,
    keepalive_secs: u32,
    max_secs: u32,
}

/// What the Worker sends the object to announce a change.
#[derive(Serialize, Deserialize)]
struct Notify {
    method: String,
}

/// Serves `subscriptions/listen` request `r`: checks its filter, then opens the stream in the
/// caller's listen object. The client's abort signal goes with it, so the object sees the client
/// close the stream.
pub async fn open(
    env: &Env,
    cfg: &Config,
    caller: &Caller,
    req: &Request,
    r: &modern::Request,
) -> Result<Response> {
    let mut offered = offer(cfg);
    // Levels are kept for signed-in users only: an anonymous caller's list never changes, so
    // their stream is not promised a change that cannot come (the conformance hook aside).
    offered.tools &= caller.user.is_some() || cfg.catalog.has_fixtures();
    let filter = Filter::from_params(&r.params, offered)?;
    let body = serde_json::to_string(&Open {
        id: r.id.as_value().clone(),
        notifications: filter.to_json(),
        keepalive_secs: cfg.keepalive_secs,
        max_secs: cfg.max_stream_secs,
    })?;
    let signal = req.inner().signal();
    let mut resp = ObjectRequest::listeners(&owner_of(caller, req), LISTEN_URL)
        .header("content-type", "application/json")
        .body(body)
        .signal(Some(&signal))
        .send(env)
        .await?;
    match resp.status_code() {
        200 => Ok(resp),
        status => Err(Error::Internal(format!(
            "listen object answered HTTP {status}: {}",
            resp.text().await.unwrap_or_default()
        ))),
    }
}

/// Announces `change` to the open listen streams of `owner` ([`owner_of`]) that asked for it;
/// returns how many got it.
pub async fn announce(env: &Env, owner: &str, change: Change) -> Result<u64> {
    let notify = Notify {
        method: change.method().into(),
    };
    let mut resp = ObjectRequest::listeners(owner, NOTIFY_URL)
        .json(&notify)?
        .send(env)
        .await?;
    let answer: Value = serde_json::from_str(&resp.text().await?)?;
    if resp.status_code() != 200 {
        return Err(Error::Internal(format!(
            "listen object answered HTTP {}: {answer}",
            resp.status_code()
        )));
    }
    Ok(answer["delivered"].as_u64().unwrap_or(0))
}

/// [`announce`], for callers that must not fail because of it (a tool call that changed a level):
/// a fault is logged, and the streams' clients see the change at their next `tools/list`.
pub async fn announce_logged(env: &Env, owner: &str, change: Change) {
    if let Err(e) = announce(env, owner, change).await {
        crate::log::error!(
            "{}",
            json!({ "listen": "announce failed", "change": change.method(), "error": e.to_string() })
        );
    }
}

/// The `tools/call` result of the diagnostic hooks of the conformance catalog
/// (`test_trigger_tool_change`, `test_trigger_prompt_change`): the suite calls them to see a
/// list-changed notification arrive on an open stream. The fixture lists themselves are fixed, so
/// the hook announces the change a live reconfiguration would, to the caller's streams, and
/// says how many received it.
pub async fn trigger(env: &Env, owner: &str, change: Change) -> Result<Value> {
    let delivered = announce(env, owner, change).await?;
    Ok(json!({
        "content": [{ "type": "text", "text": format!("Announced {} to {delivered} open listen stream(s).", change.method()) }],
        "structuredContent": { "announced": change.method(), "delivered": delivered },
    }))
}

/// The conformance catalog's diagnostic hook named `name`, if it is one.
pub fn hook(name: &str) -> Option<Change> {
    match name {
        "test_trigger_tool_change" => Some(Change::Tools),
        "test_trigger_prompt_change" => Some(Change::Prompts),
        _ => None,
    }
}

/// One open listen stream.
struct Listener {
    /// Tells this stream apart in the object (subscription ids are the client's and may repeat).
    key: u64,
    /// The subscription's id.
    id: Value,
    filter: Filter,
    tx: UnboundedSender<Vec<u8>>,
    signal: AbortSignal,
}

impl Listener {
    fn gone(&self) -> bool {
        self.tx.is_closed() || self.signal.aborted()
    }
}

/// The streams of one object.
#[derive(Default)]
struct Streams {
    open: RefCell<Vec<Listener>>,
    next: Cell<u64>,
}

impl Streams {
    /// Drops the streams whose client has gone, then ends the oldest ones (with their completion
    /// result) until there is room for one more.
    fn make_room(&self) {
        let ended: Vec<Listener> = {
            let mut open = self.open.borrow_mut();
            open.retain(|l| !l.gone());
            let excess = (open.len() + 1).saturating_sub(MAX_STREAMS);
            open.drain(..excess).collect()
        };
        for l in ended {
            let _ = l.tx.unbounded_send(unnumbered_frame(
                "message",
                &subscriptions::closed(&l.id).to_string(),
            ));
            crate::log::info!(
                "{}",
                json!({ "listen": "ended by the server", "reason": "a newer stream took its place", "subscription": l.id })
            );
        }
    }

    /// Takes stream `key` out, if it is still there.
    fn remove(&self, key: u64) -> Option<Listener> {
        let mut open = self.open.borrow_mut();
        let at = open.iter().position(|l| l.key == key)?;
        Some(open.remove(at))
    }

    /// Sends `change` to the streams that asked for it, dropping those whose client has gone.
    fn deliver(&self, change: Change) -> u64 {
        let mut delivered = 0;
        self.open.borrow_mut().retain(|l| {
            if l.gone() {
                return false;
            }
            if l.filter.wants(change) {
                let frame = subscriptions::announcement(&l.id, change);
                if l.tx
                    .unbounded_send(unnumbered_frame("message", &frame.to_string()))
                    .is_err()
                {
                    return false;
                }
                delivered += 1;
            }
            true
        });
        delivered
    }
}

/// The Durable Object class holding one caller's listen streams (`class_name = "Listeners"` in
/// wrangler.toml). Streams are connections, so they live in memory only: an instance reset ends
/// them, and clients reconnect.
#[durable_object]
pub struct Listeners {
    streams: Rc<Streams>,
}

impl DurableObject for Listeners {
    fn new(_state: State, _env: Env) -> Self {
        Listeners {
            streams: Rc::new(Streams::default()),
        }
    }

    async fn fetch(&self, mut req: Request) -> worker::Result<Response> {
        let path = req.path();
        let answer = match req.text().await.map_err(Error::from) {
            Ok(body) => match path.as_str() {
                "/listen" => self.listen(&body, req.inner().signal()),
                "/notify" => self.notify(&body),
                other => Err(Error::NotFound(format!("listen object: no route {other}"))),
            },
            Err(e) => Err(e),
        };
        match answer {
            Ok(resp) => Ok(resp),
            Err(e) => Ok(crate::edge::http::json_response(
                &json!({ "error": e.to_string() }),
                e.http_status().max(400),
            )?),
        }
    }
}

impl Listeners {
    /// Opens a stream: the acknowledgement goes first (as the response's first bytes, before the
    /// stream can receive anything), then the stream is registered for announcements.
    fn listen(&self, body: &str, signal: AbortSignal) -> Result<Response> {
        let open: Open = serde_json::from_str(body)
            .map_err(|e| Error::InvalidRequest(format!("listen object: open request: {e}")))?;
        let filter = Filter::from_json(&open.notifications);
        self.streams.make_room();
        let ack = subscriptions::acknowledged(&open.id, filter);
        let (tx, rx) = unbounded();
        let key = self.streams.next.get() + 1;
        self.streams.next.set(key);
        self.streams.open.borrow_mut().push(Listener {
            key,
            id: open.id.clone(),
            filter,
            tx,
            signal: signal.clone(),
        });
        crate::log::info!(
            "{}",
            json!({ "listen": "opened", "subscription": open.id, "notifications": filter.to_json(), "streams": self.streams.open.borrow().len() })
        );
        let streams = self.streams.clone();
        wasm_bindgen_futures::spawn_local(close_when_done(
            streams,
            key,
            open.id,
            signal,
            open.max_secs,
        ));
        let resp = sse_response(
            StreamPlan {
                prefix: unnumbered_frame("message", &ack.to_string()),
                keepalive_secs: open.keepalive_secs,
                max_secs: None,
            },
            rx,
        )?;
        Ok(resp)
    }

    /// Announces a change to this object's streams.
    fn notify(&self, body: &str) -> Result<Response> {
        let n: Notify = serde_json::from_str(body)
            .map_err(|e| Error::InvalidRequest(format!("listen object: notify request: {e}")))?;
        let change = Change::from_method(&n.method).ok_or_else(|| {
            Error::InvalidRequest(format!(
                "listen object: {} is not a change a listen stream carries",
                n.method
            ))
        })?;
        let delivered = self.streams.deliver(change);
        crate::log::info!(
            "{}",
            json!({ "listen": "announced", "change": change.method(), "delivered": delivered, "streams": self.streams.open.borrow().len() })
        );
        crate::edge::http::json_response(&json!({ "delivered": delivered }), 200)
    }
}

/// Ends stream `key`: when its client goes away (it is dropped), or after `max_secs` (the
/// completion result is sent, then the stream closes).
async fn close_when_done(
    streams: Rc<Streams>,
    key: u64,
    id: Value,
    signal: AbortSignal,
    max_secs: u32,
) {
    let deadline = worker::Delay::from(Duration::from_secs(u64::from(max_secs)));
    let ended = select(Box::pin(client_gone(signal)), deadline).await;
    let Some(listener) = streams.remove(key) else {
        return;
    };
    let how = match ended {
        Either::Left(_) => "closed by the client",
        Either::Right(_) => {
            let end = subscriptions::closed(&id);
            let _ = listener
                .tx
                .unbounded_send(unnumbered_frame("message", &end.to_string()));
            "ended by the server"
        }
    };
    drop(listener);
    crate::log::info!(
        "{}",
        json!({ "listen": how, "subscription": id, "streams": streams.open.borrow().len() })
    );
}

/// Resolves once the client has gone away: workerd aborts the request's signal
/// (`enable_request_signal`) but does not cancel the response stream.
async fn client_gone(signal: AbortSignal) {
    while !signal.aborted() {
        worker::Delay::from(Duration::from_secs(1)).await;
    }
}
