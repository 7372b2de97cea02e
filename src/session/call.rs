//! One running request of a session and where its messages go.
//!
//! A request is answered with plain JSON when its result is the first thing it produces. The moment
//! it has something to send before the result (progress, a log message, an elicitation), it switches
//! to an SSE stream: the stream gets an id (`r<n>`), every message on it is written to the event log
//! first and then delivered to whoever reads the stream, so a client that loses the connection can
//! resume it with `Last-Event-ID` and still receive the result.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures::channel::mpsc::{unbounded, UnboundedReceiver};
use futures::channel::oneshot;
use futures::future::{select, Either, LocalBoxFuture};
use serde_json::Value;
use worker::web_sys::AbortSignal;
use worker::Delay;

use super::Core;
use crate::error::{Error, Result};
use crate::mcp::logging::LogLevel;
use crate::mcp::message::{log_message, server_request, Progress, RequestId};
use crate::registry::{cache, Caller, Platform, ToolContext};

/// How a request's reply starts.
pub enum First {
    /// The whole reply, as one JSON-RPC message.
    Json(Value),
    /// The reply is an SSE stream; frames arrive on `rx`.
    Stream {
        /// The stream id.
        stream: String,
        /// Frames for the HTTP response.
        rx: UnboundedReceiver<Vec<u8>>,
    },
}

enum Outbox {
    Waiting(oneshot::Sender<First>),
    Streaming(String),
    Done,
}

/// A request in progress; the [`ToolContext`] its tool sees.
pub struct Call {
    core: Rc<Core>,
    id: RequestId,
    tool: String,
    progress: Progress,
    log_level: LogLevel,
    signal: Option<AbortSignal>,
    outbox: RefCell<Outbox>,
    caller: Caller,
    cache_bypass: bool,
}

impl Call {
    /// Starts a call with the request's `params._meta` (`progressToken`, and the cache directive
    /// `"mcp-edge/cache": "bypass"`); the receiver yields how its reply begins. An unknown cache
    /// directive is invalid params, so a typo does not silently serve a cached result.
    pub fn new(
        core: Rc<Core>,
        id: RequestId,
        tool: &str,
        meta: &Value,
        signal: Option<AbortSignal>,
        caller: Caller,
    ) -> Result<(Call, oneshot::Receiver<First>)> {
        let cache_bypass = cache::bypass_requested(meta)?;
        let (tx, rx) = oneshot::channel();
        let log_level = core.log_level();
        let call = Call {
            core,
            id,
            tool: tool.to_string(),
            progress: Progress::of(meta),
            log_level,
            signal,
            outbox: RefCell::new(Outbox::Waiting(tx)),
            caller,
            cache_bypass,
        };
        Ok((call, rx))
    }

    /// The stream of this call, opening it on first use.
    fn stream(&self) -> Result<String> {
        let mut outbox = self.outbox.borrow_mut();
        match &*outbox {
            Outbox::Streaming(s) => return Ok(s.clone()),
            Outbox::Done => return Err(Error::Internal("message after the final response".into())),
            Outbox::Waiting(_) => {}
        }
        let stream = format!("r{}", self.core.db.next_counter("streams")?);
        let (tx, rx) = unbounded();
        self.core.hub.subscribe(&stream, tx, self.signal.clone());
        self.core.hub.start(&stream);
        if let Outbox::Waiting(first) =
            std::mem::replace(&mut *outbox, Outbox::Streaming(stream.clone()))
        {
            // The HTTP side may have gone; the stream stays resumable from the log.
            let _ = first.send(First::Stream {
                stream: stream.clone(),
                rx,
            });
        }
        Ok(stream)
    }

    /// Answers with an SSE stream now, before the call has anything to send: the run lane's
    /// calls, whose client closing the stream is what cancels them.
    pub fn open_stream(&self) -> Result<()> {
        self.stream().map(drop)
    }

    /// Sends a message (notification or server request) before the final response.
    fn send(&self, msg: &Value) -> Result<()> {
        let stream = self.stream()?;
        self.core.publish(&stream, "message", &msg.to_string())
    }

    /// Sends a notification on this call's stream, before its result; a failure is logged, as the
    /// result still follows.
    pub fn notify(&self, msg: &Value) {
        if let Err(e) = self.send(msg) {
            crate::log::error!("notification not sent: {e}");
        }
    }

    /// Sends the final response and ends the stream, if one was opened.
    pub fn finish(&self, response: Value) {
        let outbox = std::mem::replace(&mut *self.outbox.borrow_mut(), Outbox::Done);
        match outbox {
            Outbox::Waiting(first) => {
                let _ = first.send(First::Json(response));
            }
            Outbox::Streaming(stream) => {
                if let Err(e) = self.core.publish(&stream, "message", &response.to_string()) {
                    crate::log::error!("final response not logged: {e}");
                }
                self.core.hub.close(&stream);
            }
            Outbox::Done => {}
        }
    }

    /// The request id this call answers.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// Who made the request.
    pub fn caller_ref(&self) -> &Caller {
        &self.caller
    }
}

impl ToolContext for Call {
    fn platform(&self) -> &dyn Platform {
        &*self.core
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(msg) = self.progress.notification(progress, total, message) else {
            return;
        };
        if let Err(e) = self.send(&msg) {
            crate::log::error!("progress not sent: {e}");
        }
    }

    fn log(&self, level: LogLevel, data: Value) {
        if level < self.log_level {
            return;
        }
        if let Err(e) = self.send(&log_message(&self.tool, level, data)) {
            crate::log::error!("log message not sent: {e}");
        }
    }

    fn ask_client<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let capability = match method {
                "sampling/createMessage" => "sampling",
                "elicitation/create" => "elicitation",
                "roots/list" => "roots",
                other => return Err(Error::Internal(format!("unknown client method {other}"))),
            };
            if self.client_capabilities().get(capability).is_none() {
                return Err(Error::Client(format!(
                    "this tool needs the client capability {capability:?}, which the client did not declare in initialize"
                )));
            }
            let server_id = format!("srv-{}", self.core.db.next_counter("server_requests")?);
            let answer = self.core.hub.expect_answer(&server_id);
            let _forget = Forget {
                core: &self.core,
                id: &server_id,
            };
            self.send(&server_request(&server_id, method, params))?;
            let limit = self.core.cfg.client_request_timeout_ms;
            match select(answer, Delay::from(Duration::from_millis(u64::from(limit)))).await {
                Either::Left((Ok(Ok(result)), _)) => Ok(result),
                Either::Left((Ok(Err(error)), _)) => Err(Error::Client(format!(
                    "the client answered {method} with an error: {}",
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("no message")
                ))),
                Either::Left((Err(_), _)) => Err(Error::Client(format!(
                    "the session ended before the client answered {method}"
                ))),
                Either::Right(_) => Err(Error::Timeout(format!(
                    "the client did not answer {method} within {limit} ms"
                ))),
            }
        })
    }

    fn end_connection(&self) {
        match self.stream() {
            Ok(stream) => self.core.hub.detach(&stream),
            Err(e) => crate::log::error!("connection not ended: {e}"),
        }
    }

    fn caller(&self) -> Caller {
        self.caller.clone()
    }

    fn client_capabilities(&self) -> Value {
        self.core.client_capabilities()
    }

    fn cache_bypass(&self) -> bool {
        self.cache_bypass
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
