//! The [`Platform`] of a stateless call: the env's services, and nothing a session would hold,
//! except that its tool events can go to a session's event stream the request names.

use std::cell::RefCell;
use std::rc::Rc;

use futures::channel::mpsc::{unbounded, UnboundedSender};
use futures::channel::oneshot;
use futures::future::LocalBoxFuture;
use futures::StreamExt;
use serde_json::{json, Value};
use worker::{Env, Request};

use crate::edge::config::Config;
use crate::edge::http::header;
use crate::error::{Error, Result};
use crate::mcp::modern;
use crate::registry::{Caller, JobMode, Platform, Registry};
use crate::store::services::{delegate_services, Services};

/// The env's services for one stateless request.
pub struct StatelessPlatform {
    services: Services,
    /// Who the rate limiter counts an anonymous caller as: there is no session, so the client's
    /// address stands in for it.
    anonymous_owner: String,
    relay: Option<Relay>,
}

/// Tool events on their way to a session's event stream, in order.
struct Relay {
    tx: RefCell<Option<UnboundedSender<Value>>>,
    done: RefCell<Option<oneshot::Receiver<()>>>,
}

impl StatelessPlatform {
    /// The platform of request `r` (from `caller`). When `_meta` names a session for events
    /// ([`modern::META_EVENTS_SESSION`]), that session must exist and be the caller's (or
    /// anonymous): its event stream then shows this call's tool events.
    pub async fn open(
        env: &Env,
        cfg: &Config,
        registry: Rc<Registry>,
        req: &Request,
        r: &modern::Request,
        caller: &Caller,
    ) -> Result<Self> {
        let address = header(req, "cf-connecting-ip").unwrap_or_else(|| "local".into());
        let relay = match r.meta().get(modern::META_EVENTS_SESSION) {
            None => None,
            Some(Value::String(id)) if crate::wire::valid_session_id(id) => {
                Some(Self::start_relay(env, id, caller).await?)
            }
            Some(_) => {
                return Err(Error::InvalidParams(format!(
                    "Invalid params: _meta[{:?}] must be a session id (64 hex digits, from initialize or POST /sessions)",
                    modern::META_EVENTS_SESSION
                )))
            }
        };
        Ok(StatelessPlatform {
            services: Services::with_config(env.clone(), registry, cfg),
            anonymous_owner: format!("stateless-{address}"),
            relay,
        })
    }

    /// Checks that session `id` takes events from `caller`, then starts the task that relays them.
    async fn start_relay(env: &Env, id: &str, caller: &Caller) -> Result<Relay> {
        let mut check = crate::wire::relay(env, id, caller, &json!([])).await?;
        if check.status_code() != 204 {
            let answer: Value = check.json().await.unwrap_or(Value::Null);
            let why = answer
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("the session refused the events");
            return Err(Error::InvalidParams(format!(
                "Invalid params: _meta[{:?}]: {why}",
                modern::META_EVENTS_SESSION
            )));
        }
        let (tx, mut rx) = unbounded::<Value>();
        let (done_tx, done_rx) = oneshot::channel();
        let (env, id, caller) = (env.clone(), id.to_string(), caller.clone());
        wasm_bindgen_futures::spawn_local(async move {
            while let Some(ev) = rx.next().await {
                if let Err(e) = crate::wire::relay(&env, &id, &caller, &json!([ev])).await {
                    worker::console_error!("{}", json!({ "event_relay": e.to_string() }));
                }
            }
            let _ = done_tx.send(());
        });
        Ok(Relay {
            tx: RefCell::new(Some(tx)),
            done: RefCell::new(Some(done_rx)),
        })
    }

    /// Waits until every event emitted so far has reached its session, so none is lost when the
    /// request ends.
    pub async fn flush(&self) {
        let Some(relay) = &self.relay else { return };
        relay.tx.borrow_mut().take();
        let done = relay.done.borrow_mut().take();
        if let Some(done) = done {
            let _ = done.await;
        }
    }

    /// The env's services (D1, KV, settings) this call uses.
    pub(super) fn services(&self) -> &Services {
        &self.services
    }
}

fn needs_session() -> Error {
    Error::ToolFailed(
        "this tool keeps state in an MCP session, which 2026-07-28 requests do not have; call it from a 2025 session (initialize first)".into(),
    )
}

impl Platform for StatelessPlatform {
    delegate_services!();

    fn session_get(&self, _key: &str) -> Result<Option<String>> {
        Err(needs_session())
    }

    fn session_set(&self, _key: &str, _value: &str) -> Result<()> {
        Err(needs_session())
    }

    fn session_id(&self) -> String {
        self.anonymous_owner.clone()
    }

    fn emit(&self, event: &str, data: Value) {
        if let Some(tx) = self.relay.as_ref().and_then(|r| r.tx.borrow().clone()) {
            let _ = tx.unbounded_send(json!({ "event": event, "data": data }));
        }
    }

    fn job_start<'a>(
        &'a self,
        _kind: &'a str,
        _id: &'a str,
        _mode: JobMode,
    ) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async { Err(needs_session()) })
    }
}
