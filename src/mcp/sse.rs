//! Server-Sent Events framing for Streamable HTTP, and the event ids that make streams resumable.
//!
//! Event ids are `<stream>-<seq>`: `seq` is the session-wide position in the event log (so ids are
//! unique across all streams of a session) and `<stream>` names the stream the event belongs to, so a
//! `Last-Event-ID` tells which stream to resume and from where (MCP 2025-11-25, "Resumability").

use crate::error::{Error, Result};

/// The stream id of the session's standalone GET stream.
pub const STANDALONE: &str = "g";

/// A position in one stream of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventId {
    /// Stream id: [`STANDALONE`] or `r<n>` for the stream of the n-th streamed POST.
    pub stream: String,
    /// Session-wide sequence number; 0 means "before the first event".
    pub seq: i64,
}

impl EventId {
    /// Parses a `Last-Event-ID` header value.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || {
            Error::BadHeader(format!(
                "Last-Event-ID {s:?} is not an event id of this server; reconnect without Last-Event-ID"
            ))
        };
        let (stream, seq) = s.rsplit_once('-').ok_or_else(bad)?;
        let valid_stream = stream == STANDALONE
            || (stream.len() > 1
                && stream.starts_with('r')
                && stream[1..].bytes().all(|b| b.is_ascii_digit()));
        let seq: i64 = seq.parse().map_err(|_| bad())?;
        if !valid_stream || seq < 0 {
            return Err(bad());
        }
        Ok(EventId {
            stream: stream.to_string(),
            seq,
        })
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.stream, self.seq)
    }
}

/// One SSE event. `data` is split on newlines into several `data:` lines, so no payload can end an
/// event early or forge another one; serde_json output never contains raw newlines anyway.
pub fn frame(id: &EventId, event: &str, data: &str) -> Vec<u8> {
    let mut out = format!("id: {id}\n");
    push_event(&mut out, event, data);
    out.into_bytes()
}

/// One SSE event without an id, for streams that are not resumable (a chat turn's reply); `data`
/// is split as in [`frame`].
pub fn unnumbered_frame(event: &str, data: &str) -> Vec<u8> {
    let mut out = String::new();
    push_event(&mut out, event, data);
    out.into_bytes()
}

fn push_event(out: &mut String, event: &str, data: &str) {
    out.push_str(&format!("event: {event}\n"));
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.trim_end_matches('\r'));
        out.push('\n');
    }
    out.push('\n');
}

/// The priming event of 2025-11-25: an id and empty data, plus the reconnection delay.
pub fn priming(id: &EventId, retry_ms: u32) -> Vec<u8> {
    format!("id: {id}\nretry: {retry_ms}\ndata: \n\n").into_bytes()
}

/// A comment line that keeps proxies from closing an idle stream.
pub const KEEPALIVE: &[u8] = b": keepalive\n\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_round_trip_and_reject_garbage() {
        let id = EventId {
            stream: "r12".into(),
            seq: 40,
        };
        assert_eq!(EventId::parse(&id.to_string()).unwrap(), id);
        assert_eq!(EventId::parse("g-0").unwrap().stream, "g");
        for bad in ["", "g", "x-1", "r-1", "rx-2", "g--1", "g-1a", "r1-"] {
            assert!(EventId::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn data_with_newlines_cannot_forge_events() {
        let f = String::from_utf8(frame(
            &EventId {
                stream: "g".into(),
                seq: 1,
            },
            "message",
            "a\n\ndata: {}",
        ))
        .unwrap();
        assert_eq!(
            f,
            "id: g-1\nevent: message\ndata: a\ndata: \ndata: data: {}\n\n"
        );
        assert_eq!(f.matches("\n\n").count(), 1);
        assert_eq!(
            String::from_utf8(unnumbered_frame("text", "a\nb")).unwrap(),
            "event: text\ndata: a\ndata: b\n\n"
        );
    }
}
