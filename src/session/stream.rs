//! SSE response bodies: frames from a channel, keepalive comments while idle, and a lifetime cap.

use std::time::Duration;

use futures::channel::mpsc::UnboundedReceiver;
use futures::future::{select, Either};
use futures::{stream, StreamExt};
use worker::{Delay, Headers, Response};

use crate::clock;
use crate::edge::http::EVENT_STREAM;
use crate::error::Result;
use crate::mcp::sse::KEEPALIVE;

/// How an SSE body behaves.
pub struct StreamPlan {
    /// Bytes sent first (priming event, replayed events).
    pub prefix: Vec<u8>,
    /// Seconds between keepalive comments while nothing else is sent.
    pub keepalive_secs: u32,
    /// Close the connection after this many seconds (the client reconnects with `Last-Event-ID`).
    pub max_secs: Option<u32>,
}

struct State {
    rx: UnboundedReceiver<Vec<u8>>,
    prefix: Option<Vec<u8>>,
    keepalive: Duration,
    deadline: Option<f64>,
}

/// A `text/event-stream` response that ends when every sender of `rx` is dropped (the stream was
/// closed by the session), when the lifetime cap is reached, or when the client goes away.
pub fn sse_response(plan: StreamPlan, rx: UnboundedReceiver<Vec<u8>>) -> Result<Response> {
    let state = State {
        rx,
        prefix: (!plan.prefix.is_empty()).then_some(plan.prefix),
        keepalive: Duration::from_secs(u64::from(plan.keepalive_secs)),
        deadline: plan
            .max_secs
            .map(|s| clock::now_ms() + f64::from(s) * 1000.0),
    };
    let body = stream::unfold(state, |mut st| async move {
        if let Some(prefix) = st.prefix.take() {
            return Some((Ok::<Vec<u8>, worker::Error>(prefix), st));
        }
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
