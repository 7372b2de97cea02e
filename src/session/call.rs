//! What a tool call in a session needs beside the shared [`CallContext`]: its reply's line, which
//! logs every message before delivering it ([`Logged`]), and its live questions to the client
//! ([`Live`]).
//!
//! A request is answered with plain JSON when its result is the first thing it produces. The moment
//! it has something to send before the result (progress, a log message, an elicitation), it switches
//! to an SSE stream (`server::stream::Outbox`): the stream gets an id (`r<n>`), every message on it
//! is written to the event log first and then delivered to whoever reads the stream, so a client
//! that loses the connection can resume it with `Last-Event-ID` and still receive the result.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures::channel::mpsc::{unbounded, UnboundedReceiver};
use futures::future::{select, Either, LocalBoxFuture};
use serde_json::Value;
use worker::web_sys::AbortSignal;
use worker::Delay;

use super::Core;
use crate::error::Result;
use crate::mcp::message::server_request;
use crate::registry::call::{capability_of, Ask, Question};
use crate::registry::{ToolContext, ToolError, ToolResult};
use crate::server::stream::Line;

/// The line of a session call's reply: logged in the session, resumable.
pub struct Logged {
    core: Rc<Core>,
    signal: Option<AbortSignal>,
    stream: RefCell<Option<String>>,
}

impl Logged {
    /// The line of a call whose client's request is aborted through `signal`.
    pub fn new(core: Rc<Core>, signal: Option<AbortSignal>) -> Self {
        Logged {
            core,
            signal,
            stream: RefCell::default(),
        }
    }

    fn publish(&self, msg: &Value) -> Result<()> {
        let stream = self.stream.borrow().clone().unwrap_or_default();
        self.core.publish(&stream, "message", &msg.to_string())
    }
}

impl Line for Logged {
    const DETACHES: bool = true;

    fn open(&self) -> Result<(Option<String>, UnboundedReceiver<Vec<u8>>)> {
        let stream = format!("r{}", self.core.db.next_counter("streams")?);
        let (tx, rx) = unbounded();
        self.core.hub.subscribe(&stream, tx, self.signal.clone());
        self.core.hub.start(&stream);
        *self.stream.borrow_mut() = Some(stream.clone());
        Ok((Some(stream), rx))
    }

    fn write(&self, msg: &Value) -> Result<()> {
        self.publish(msg)
    }

    fn close(&self, last: &Value) {
        if let Err(e) = self.publish(last) {
            crate::log::error!("final response not logged: {e}");
        }
        if let Some(stream) = self.stream.borrow().as_deref() {
            self.core.hub.close(stream);
        }
    }

    fn detach(&self) {
        if let Some(stream) = self.stream.borrow().as_deref() {
            self.core.hub.detach(stream);
        }
    }
}

/// A session call's questions: sent to the client on the call's stream as server requests, and
/// answered by the client's POSTed responses, up to the server's timeout.
pub struct Live(pub Rc<Core>);

impl Ask for Live {
    fn ask<'a>(&'a self, q: Question<'a>) -> LocalBoxFuture<'a, ToolResult<Value>> {
        Box::pin(async move {
            let core = &self.0;
            let capability = capability_of(q.method)?;
            if q.call.client_capabilities().get(capability).is_none() {
                return Err(ToolError::Client(format!(
                    "this tool needs the client capability {capability:?}, which the client did not declare in initialize"
                )));
            }
            let server_id = format!("srv-{}", core.db.next_counter("server_requests")?);
            let answer = core.hub.expect_answer(&server_id);
            let _forget = Forget {
                core,
                id: &server_id,
            };
            q.call
                .send(&server_request(&server_id, q.method, q.params))?;
            let limit = core.deployment.cfg.client_request_timeout_ms;
            let method = q.method;
            match select(answer, Delay::from(Duration::from_millis(u64::from(limit)))).await {
                Either::Left((Ok(Ok(result)), _)) => Ok(result),
                Either::Left((Ok(Err(error)), _)) => Err(ToolError::Client(format!(
                    "the client answered {method} with an error: {}",
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("no message")
                ))),
                Either::Left((Err(_), _)) => Err(ToolError::Client(format!(
                    "the session ended before the client answered {method}"
                ))),
                Either::Right(_) => Err(ToolError::Timeout(format!(
                    "the client did not answer {method} within {limit} ms"
                ))),
            }
        })
    }
}

/// Stops waiting for a client answer however the wait ends (answer, timeout or cancellation).
struct Forget<'a> {
    core: &'a Core,
    id: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.core.hub.forget_answer(self.id);
    }
}
