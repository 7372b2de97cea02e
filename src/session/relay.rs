//! Tool events of a 2026-07-28 run object shown on another session's event stream.
//!
//! A run object (`stateless::runs`) has no client watching it: the caller's dashboard watches a
//! chat or MCP session of theirs, which a call names in `_meta["mcp-edge/eventsSession"]`. The
//! Worker checks that the caller may send events there before forwarding the call; the object
//! then keeps that session as its relay target ([`EVENTS_SETTING`]) and sends every tool event it
//! logs (the call's own, its chain steps', a background run's) to the target, in order, as its
//! owner, so the target checks the owner again. A failed delivery is logged and dropped: the
//! run's own event log still has the event.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{select, Either};
use serde_json::{json, Value};
use worker::{Delay, Env};

use crate::registry::Caller;

/// The session setting naming the relay target (empty: none).
pub const EVENTS_SETTING: &str = "events_session";

/// How long a reply waits for its events to reach the target before it is sent anyway.
const FLUSH_LIMIT: Duration = Duration::from_secs(5);

/// One event on its way.
struct Pending {
    target: String,
    caller: Caller,
    event: Value,
}

/// The queue of events to relay, drained by one task at a time so they arrive in order.
#[derive(Default)]
pub struct Relay {
    queue: RefCell<VecDeque<Pending>>,
    draining: Cell<bool>,
    idle: RefCell<Vec<oneshot::Sender<()>>>,
}

impl Relay {
    /// Queues `event` (`{event, data}`) for session `target`, sent as `caller`, and starts the
    /// task that delivers the queue unless it is running.
    pub fn push(self: &Rc<Self>, env: &Env, target: String, caller: Caller, event: Value) {
        self.queue.borrow_mut().push_back(Pending {
            target,
            caller,
            event,
        });
        if self.draining.replace(true) {
            return;
        }
        let (me, env) = (self.clone(), env.clone());
        wasm_bindgen_futures::spawn_local(async move {
            loop {
                let next = me.queue.borrow_mut().pop_front();
                let Some(p) = next else { break };
                let events = json!([p.event]);
                match crate::wire::relay(&env, &p.target, &p.caller, &events).await {
                    Ok(resp) if resp.status_code() == 204 => {}
                    Ok(resp) => crate::log::error!(
                        "{}",
                        json!({ "event_relay": format!("HTTP {}", resp.status_code()), "to": p.target })
                    ),
                    Err(e) => crate::log::error!(
                        "{}",
                        json!({ "event_relay": e.to_string(), "to": p.target })
                    ),
                }
            }
            me.draining.set(false);
            for waiter in me.idle.borrow_mut().drain(..) {
                let _ = waiter.send(());
            }
        });
    }

    /// Waits until every event queued so far has been delivered (or [`FLUSH_LIMIT`] passed), so a
    /// call's reply does not overtake its events.
    pub async fn flush(&self) {
        if !self.draining.get() {
            return;
        }
        let (tx, rx) = oneshot::channel();
        self.idle.borrow_mut().push(tx);
        let limit = Delay::from(FLUSH_LIMIT);
        if let Either::Right(_) = select(rx, limit).await {
            crate::log::error!("{}", json!({ "event_relay": "flush timed out" }));
        }
    }
}
