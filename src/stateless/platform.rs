//! The [`Platform`](crate::registry::Platform) of a stateless call: the env's services, and
//! nothing a session would hold, except that its tool events can go to a session's event stream
//! the request names.

use futures::channel::mpsc::unbounded;
use futures::channel::oneshot;
use futures::StreamExt;
use serde_json::{json, Value};
use worker::{Env, Request};

use super::Lane;
use crate::edge::http::header;
use crate::error::{Error, Result};
use crate::mcp::modern;
use crate::registry::Caller;
use crate::server::Host;
use crate::store::services::Detached;

/// The platform of one stateless request.
pub type StatelessPlatform = Detached;

fn needs_session() -> Error {
    Error::Failed(
        "this tool keeps state in an MCP session, which 2026-07-28 requests do not have; call it from a 2025 session (initialize first)".into(),
    )
}

/// The platform of request `r` (from `caller`). When `_meta` names a session for events
/// ([`modern::META_EVENTS_SESSION`]), that session must exist and be the caller's (or
/// anonymous): its event stream then shows this call's tool events.
pub async fn open(
    env: &Env,
    host: &Lane,
    req: &Request,
    r: &modern::Request,
    caller: &Caller,
) -> Result<StatelessPlatform> {
    let address = header(req, "cf-connecting-ip").unwrap_or_else(|| "local".into());
    let platform = Detached::new(
        host.services().clone(),
        format!("stateless-{address}"),
        needs_session,
    );
    match r.meta().get(modern::META_EVENTS_SESSION) {
        None => {}
        Some(Value::String(id)) if crate::wire::valid_session_id(id) => {
            start_relay(&platform, env, id, caller).await?;
        }
        Some(_) => {
            return Err(Error::InvalidParams(format!(
                "Invalid params: _meta[{:?}] must be a session id (64 hex digits, from initialize or POST /sessions)",
                modern::META_EVENTS_SESSION
            )))
        }
    }
    Ok(platform)
}

/// Checks that session `id` takes events from `caller`, then starts the task that relays the
/// platform's events there.
async fn start_relay(platform: &Detached, env: &Env, id: &str, caller: &Caller) -> Result<()> {
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
                crate::log::error!("{}", json!({ "event_relay": e.to_string() }));
            }
        }
        let _ = done_tx.send(());
    });
    *platform.events.borrow_mut() = Some(tx);
    *platform.delivered.borrow_mut() = Some(done_rx);
    Ok(())
}
