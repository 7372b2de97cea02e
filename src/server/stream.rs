//! How a reply goes out, in both eras: plain JSON until the first message before the result, then
//! an SSE stream ([`Outbox`] over a [`Line`]: the session's logged, resumable line or a request's
//! own [`Direct`] one), and the SSE response bodies themselves: replayed events page by page, then
//! frames from a channel, keepalive comments while idle, and a lifetime cap.

use std::time::Duration;

use std::cell::RefCell;

use futures::channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures::channel::oneshot;
use futures::future::{select, Either};
use futures::{stream, StreamExt};
use serde_json::Value;
use worker::{Delay, Headers, Response};

use crate::clock;
use crate::edge::http::EVENT_STREAM;
use crate::error::{Error, Result};
use crate::mcp::sse::{self, unnumbered_frame, EventId, KEEPALIVE};
use crate::registry::call::Outlet;
use crate::store::session_db::SessionDb;

/// Events replayed per page: a page is read from storage only when the client has taken the one
/// before, so a resume from far back holds one page in memory, never the whole log.
pub const REPLAY_PAGE: i64 = 100;

/// The logged events a resumed stream replays: those of `stream` after `after` and up to `upto`
/// (the last event logged when the live subscription began, so live frames follow without a gap
/// or a repeat) that `keep` accepts.
pub struct Replay {
    /// The session's storage.
    pub db: SessionDb,
    /// The stream replayed.
    pub stream: String,
    /// The last event the client has.
    pub after: i64,
    /// The last event to replay.
    pub upto: i64,
    /// Which events (by name) the reader sees.
    pub keep: fn(&str) -> bool,
}

impl Replay {
    /// The next page's frames; `None` when the replay is done (or storage failed, logged: the
    /// client resumes again from the last event it got).
    fn next_page(&mut self) -> Option<Vec<u8>> {
        while self.after < self.upto {
            let page = match self
                .db
                .replay_page(&self.stream, self.after, self.upto, REPLAY_PAGE)
            {
                Ok(page) => page,
                Err(e) => {
                    crate::log::error!("replay: {e}");
                    return None;
                }
            };
            self.after = page.last()?.seq;
            let mut frames = Vec::new();
            for ev in page.iter().filter(|ev| (self.keep)(&ev.event)) {
                let id = EventId {
                    stream: self.stream.clone(),
                    seq: ev.seq,
                };
                frames.extend(sse::frame(&id, &ev.event, &ev.data));
            }
            if !frames.is_empty() {
                return Some(frames);
            }
        }
        None
    }
}

/// How an SSE body behaves.
pub struct StreamPlan {
    /// Bytes sent first (the priming event).
    pub prefix: Vec<u8>,
    /// Seconds between keepalive comments while nothing else is sent.
    pub keepalive_secs: u32,
    /// Close the connection after this many seconds (the client reconnects with `Last-Event-ID`).
    pub max_secs: Option<u32>,
}

struct State {
    rx: UnboundedReceiver<Vec<u8>>,
    prefix: Option<Vec<u8>>,
    replay: Option<Replay>,
    keepalive: Duration,
    deadline: Option<f64>,
}

/// A `text/event-stream` response that ends when every sender of `rx` is dropped (the stream was
/// closed by the session), when the lifetime cap is reached, or when the client goes away.
pub fn sse_response(plan: StreamPlan, rx: UnboundedReceiver<Vec<u8>>) -> Result<Response> {
    sse_replay_response(plan, None, rx)
}

/// [`sse_response`] that sends `replay`'s logged events, page by page as the client takes them,
/// after the prefix and before the channel's frames.
pub fn sse_replay_response(
    plan: StreamPlan,
    replay: Option<Replay>,
    rx: UnboundedReceiver<Vec<u8>>,
) -> Result<Response> {
    let state = State {
        rx,
        prefix: (!plan.prefix.is_empty()).then_some(plan.prefix),
        replay,
        keepalive: Duration::from_secs(u64::from(plan.keepalive_secs)),
        deadline: plan
            .max_secs
            .map(|s| clock::now_ms() + f64::from(s) * 1000.0),
    };
    let body = stream::unfold(state, |mut st| async move {
        if let Some(prefix) = st.prefix.take() {
            return Some((Ok::<Vec<u8>, worker::Error>(prefix), st));
        }
        if let Some(page) = st.replay.as_mut().and_then(Replay::next_page) {
            return Some((Ok(page), st));
        }
        st.replay = None;
        let tick = Delay::from(st.keepalive);
        match select(st.rx.next(), tick).await {
            Either::Left((Some(frame), _)) => Some((Ok(frame), st)),
            Either::Left((None, _)) => None,
            Either::Right(_) if st.deadline.is_some_and(|d| clock::now_ms() >= d) => None,
            Either::Right(_) => Some((Ok(KEEPALIVE.to_vec()), st)),
        }
    });
    let headers = Headers::new();
    headers.set("content-type", EVENT_STREAM)?;
    headers.set("cache-control", "no-cache, no-transform")?;
    // Reverse proxies (nginx) must pass events on as they come (2026-07-28 transport, a SHOULD).
    headers.set("x-accel-buffering", "no")?;
    Ok(Response::from_stream(body)?.with_headers(headers))
}

/// How a reply starts.
pub enum First {
    /// The whole reply, as one JSON-RPC message, and its HTTP status.
    Json(Value, u16),
    /// The reply is an SSE stream: its id when its events are logged, and its frames.
    Stream(Option<String>, UnboundedReceiver<Vec<u8>>),
}

/// Where a streamed reply's messages go once the reply is a stream.
pub trait Line {
    /// Whether [`Outbox::end_connection`] may end the HTTP connection and leave the stream to be
    /// resumed (only a logged line can be resumed).
    const DETACHES: bool = false;

    /// Opens the stream: its id when logged, and the receiver of its frames.
    fn open(&self) -> Result<(Option<String>, UnboundedReceiver<Vec<u8>>)>;

    /// Sends a message on the open stream.
    fn write(&self, msg: &Value) -> Result<()>;

    /// Sends the final message and ends the stream.
    fn close(&self, last: &Value);

    /// Ends the HTTP connection, leaving the stream open (see [`Line::DETACHES`]).
    fn detach(&self) {}
}

enum Stage {
    Waiting(oneshot::Sender<First>),
    Streaming,
    Done,
}

/// One reply: JSON until the first message before the result, then a stream on `L`.
pub struct Outbox<L: Line> {
    line: L,
    stage: RefCell<Stage>,
}

impl<L: Line> Outbox<L> {
    /// An outbox on `line`; the receiver yields how the reply begins.
    pub fn new(line: L) -> (Self, oneshot::Receiver<First>) {
        let (tx, rx) = oneshot::channel();
        let outbox = Outbox {
            line,
            stage: RefCell::new(Stage::Waiting(tx)),
        };
        (outbox, rx)
    }

    /// The line, for what only its owner knows of it.
    pub fn line(&self) -> &L {
        &self.line
    }

    /// Makes the reply a stream, if it is not one yet.
    pub fn open_stream(&self) -> Result<()> {
        let mut stage = self.stage.borrow_mut();
        match &*stage {
            Stage::Streaming => return Ok(()),
            Stage::Done => return Err(Error::Internal("message after the final response".into())),
            Stage::Waiting(_) => {}
        }
        let (id, rx) = self.line.open()?;
        if let Stage::Waiting(first) = std::mem::replace(&mut *stage, Stage::Streaming) {
            // The HTTP side may have gone; a logged stream stays resumable.
            let _ = first.send(First::Stream(id, rx));
        }
        Ok(())
    }

    /// Sends a message (notification or server request) before the final response.
    pub fn send(&self, msg: &Value) -> Result<()> {
        self.open_stream()?;
        self.line.write(msg)
    }

    /// Sends the final response (as JSON with `status`, when nothing was sent before it) and ends
    /// the stream, if one was opened.
    pub fn finish(&self, response: Value, status: u16) {
        match std::mem::replace(&mut *self.stage.borrow_mut(), Stage::Done) {
            Stage::Waiting(first) => {
                let _ = first.send(First::Json(response, status));
            }
            Stage::Streaming => self.line.close(&response),
            Stage::Done => {}
        }
    }

    /// Ends the HTTP connection now and leaves the stream to be resumed, where the line allows.
    pub fn end_connection(&self) {
        if !L::DETACHES {
            return;
        }
        match self.open_stream() {
            Ok(()) => self.line.detach(),
            Err(e) => crate::log::error!("connection not ended: {e}"),
        }
    }
}

/// A client's call reports on its reply (`registry::call`'s outlet of an attended call).
impl<L: Line> Outlet for Outbox<L> {
    fn send(&self, msg: &Value) -> Result<()> {
        Outbox::send(self, msg)
    }

    fn end_connection(&self) {
        Outbox::end_connection(self);
    }
}

/// The line of a reply nobody can resume: frames go straight to the one HTTP response, unnumbered.
#[derive(Default)]
pub struct Direct {
    tx: RefCell<Option<UnboundedSender<Vec<u8>>>>,
}

impl Line for Direct {
    fn open(&self) -> Result<(Option<String>, UnboundedReceiver<Vec<u8>>)> {
        let (tx, rx) = unbounded();
        *self.tx.borrow_mut() = Some(tx);
        Ok((None, rx))
    }

    fn write(&self, msg: &Value) -> Result<()> {
        if let Some(tx) = self.tx.borrow().as_ref() {
            let _ = tx.unbounded_send(unnumbered_frame("message", &msg.to_string()));
        }
        Ok(())
    }

    fn close(&self, last: &Value) {
        let _ = self.write(last);
        self.tx.borrow_mut().take();
    }
}
