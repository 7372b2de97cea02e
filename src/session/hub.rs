//! The live side of a session: open SSE streams, in-flight calls and the client's pending answers.
//!
//! All of this is memory of one Durable Object instance. It is only about connections that exist
//! right now: whatever must survive an instance reset (the event log) is in SQLite.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use futures::channel::{mpsc::UnboundedSender, oneshot};
use futures::future::AbortHandle;
use serde_json::Value;
use worker::web_sys::AbortSignal;

/// The client's answer to a server-to-client request: `result`, or the `error` object.
pub type ClientAnswer = Result<Value, Value>;

struct Subscriber {
    tx: UnboundedSender<Vec<u8>>,
    /// The HTTP request's abort signal: workerd does not cancel a response stream when the client
    /// goes away, but it does abort the request signal (`enable_request_signal`).
    signal: Option<AbortSignal>,
}

impl Subscriber {
    fn gone(&self) -> bool {
        self.tx.is_closed() || self.signal.as_ref().is_some_and(AbortSignal::aborted)
    }
}

/// Live connections and waiters of one session.
#[derive(Default)]
pub struct Hub {
    subscribers: RefCell<HashMap<String, Subscriber>>,
    running: RefCell<HashSet<String>>,
    inflight: RefCell<HashMap<String, Vec<(u64, AbortHandle)>>>,
    next_token: std::cell::Cell<u64>,
    pending: RefCell<HashMap<String, oneshot::Sender<ClientAnswer>>>,
    jobs: RefCell<HashMap<String, AbortHandle>>,
    /// Dashboards reading the session's tool events (`GET /sessions/:id/events`); unlike a
    /// stream's reader, any number of them.
    watchers: RefCell<Vec<Subscriber>>,
}

impl Hub {
    /// Makes `tx` the live reader of `stream`. An earlier reader is dropped (its connection closes),
    /// so each message goes to exactly one connection; a client that resumes a stream replaces the
    /// connection it lost.
    pub fn subscribe(
        &self,
        stream: &str,
        tx: UnboundedSender<Vec<u8>>,
        signal: Option<AbortSignal>,
    ) {
        self.subscribers
            .borrow_mut()
            .insert(stream.to_string(), Subscriber { tx, signal });
    }

    /// Sends a frame to the live reader of `stream`, if any, dropping it when it has gone.
    pub fn deliver(&self, stream: &str, frame: Vec<u8>) {
        let mut subs = self.subscribers.borrow_mut();
        if let Some(s) = subs.get(stream) {
            if s.gone() || s.tx.unbounded_send(frame).is_err() {
                subs.remove(stream);
            }
        }
    }

    /// Adds a dashboard reader of the session's tool events.
    pub fn watch(&self, tx: UnboundedSender<Vec<u8>>, signal: Option<AbortSignal>) {
        self.watchers.borrow_mut().push(Subscriber { tx, signal });
    }

    /// Sends a tool event frame to every dashboard reader, dropping those that have gone; the
    /// frame is built only when someone watches (most calls have no dashboard open).
    pub fn deliver_to_watchers(&self, frame: impl FnOnce() -> Vec<u8>) {
        let mut watchers = self.watchers.borrow_mut();
        if watchers.is_empty() {
            return;
        }
        let frame = frame();
        watchers.retain(|w| !w.gone() && w.tx.unbounded_send(frame.clone()).is_ok());
    }

    /// Marks a POST stream as still producing events (its call is running).
    pub fn start(&self, stream: &str) {
        self.running.borrow_mut().insert(stream.to_string());
    }

    /// Whether a POST stream's call is still running, so a resumed reader should stay attached.
    pub fn is_running(&self, stream: &str) -> bool {
        self.running.borrow().contains(stream)
    }

    /// Closes the connections reading `stream` but keeps the stream running: later events go to the
    /// log only, until a client resumes it.
    pub fn detach(&self, stream: &str) {
        self.subscribers.borrow_mut().remove(stream);
    }

    /// Ends a stream: its readers' connections close after the frames already sent.
    pub fn close(&self, stream: &str) {
        self.running.borrow_mut().remove(stream);
        self.subscribers.borrow_mut().remove(stream);
    }

    /// Registers an in-flight request so `notifications/cancelled` can stop it. Returns a token for
    /// [`Hub::untrack`]; two concurrent requests may share a JSON-RPC id, so the id alone is not enough.
    pub fn track(&self, request_key: &str, handle: AbortHandle) -> u64 {
        let token = self.next_token.get() + 1;
        self.next_token.set(token);
        self.inflight
            .borrow_mut()
            .entry(request_key.to_string())
            .or_default()
            .push((token, handle));
        token
    }

    /// Whether a request with this key is running.
    pub fn is_in_flight(&self, request_key: &str) -> bool {
        self.inflight.borrow().contains_key(request_key)
    }

    /// Forgets a finished request.
    pub fn untrack(&self, request_key: &str, token: u64) {
        let mut map = self.inflight.borrow_mut();
        if let Some(list) = map.get_mut(request_key) {
            list.retain(|(t, _)| *t != token);
            if list.is_empty() {
                map.remove(request_key);
            }
        }
    }

    /// Cancels every in-flight request with this id. Unknown ids are ignored (they may have finished).
    pub fn cancel(&self, request_key: &str) {
        if let Some(list) = self.inflight.borrow_mut().remove(request_key) {
            list.iter().for_each(|(_, h)| h.abort());
        }
    }

    /// Waits for the client's answer to the server request `id`.
    pub fn expect_answer(&self, id: &str) -> oneshot::Receiver<ClientAnswer> {
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id.to_string(), tx);
        rx
    }

    /// Stops waiting for `id` (after a timeout or cancellation).
    pub fn forget_answer(&self, id: &str) {
        self.pending.borrow_mut().remove(id);
    }

    /// Delivers a client answer; false when nobody waits for that id any more.
    pub fn answer(&self, id: &str, answer: ClientAnswer) -> bool {
        match self.pending.borrow_mut().remove(id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Registers a background job's run in this instance; false when one is already running here.
    pub fn job_begin(&self, id: &str, handle: AbortHandle) -> bool {
        let mut jobs = self.jobs.borrow_mut();
        if jobs.contains_key(id) {
            return false;
        }
        jobs.insert(id.to_string(), handle);
        true
    }

    /// Forgets a finished background run.
    pub fn job_end(&self, id: &str) {
        self.jobs.borrow_mut().remove(id);
    }

    /// Whether a background run of `id` is under way in this instance.
    pub fn job_is_live(&self, id: &str) -> bool {
        self.jobs.borrow().contains_key(id)
    }

    /// Drops every connection, waiter and in-flight call (the session ended); background runs go on.
    pub fn close_connections(&self) {
        self.inflight
            .borrow_mut()
            .drain()
            .for_each(|(_, l)| l.iter().for_each(|(_, h)| h.abort()));
        self.pending.borrow_mut().clear();
        self.subscribers.borrow_mut().clear();
        self.watchers.borrow_mut().clear();
        self.running.borrow_mut().clear();
    }

    /// Drops every connection, waiter, in-flight call and background run.
    pub fn shut_down(&self) {
        self.jobs.borrow_mut().drain().for_each(|(_, h)| h.abort());
        self.close_connections();
    }
}
