//! SSE response bodies: replayed events page by page, then frames from a channel, keepalive
//! comments while idle, and a lifetime cap.

use std::time::Duration;

use futures::channel::mpsc::UnboundedReceiver;
use futures::future::{select, Either};
use futures::{stream, StreamExt};
use worker::{Delay, Headers, Response};

use crate::clock;
use crate::edge::http::EVENT_STREAM;
use crate::error::Result;
use crate::mcp::sse::{self, EventId, KEEPALIVE};
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
