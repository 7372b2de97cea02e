//! Decoder of a model provider's streamed answer: Server-Sent Events whose `data:` lines carry
//! OpenAI chat-completion chunks (`{"choices":[{"delta":{"content":"…"}}]}`) or Workers AI chunks
//! (`{"response":"…"}`), ending with `data: [DONE]`.
//!
//! Bytes arrive split anywhere, including inside a line and inside a UTF-8 character, so bytes are
//! held until a line is complete and only whole lines are decoded. Each `data:` line is one JSON
//! chunk (what OpenAI-compatible servers send); comments, `event:`, `id:` and `retry:` lines are
//! ignored.

use serde_json::Value;

/// The longest line held while waiting for its end; a provider sending more is broken.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What a decoded line says.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    /// More answer text.
    Text(String),
    /// The provider says the answer is complete (`[DONE]`).
    Done,
    /// The provider reported an error inside the stream, or sent something that is not a chunk.
    Error(String),
}

/// The streaming decoder. Feed bytes with [`Decoder::push`], then call [`Decoder::finish`].
#[derive(Debug, Default)]
pub struct Decoder {
    line: Vec<u8>,
}

impl Decoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns what the lines they complete say.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Chunk> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                out.extend(decode_line(&line));
            } else if self.line.len() < MAX_LINE_BYTES {
                self.line.push(b);
            } else {
                self.line.clear();
                out.push(Chunk::Error(format!(
                    "the model provider sent a line longer than {MAX_LINE_BYTES} bytes"
                )));
            }
        }
        out
    }

    /// Ends the stream: a last line without a newline is decoded too.
    pub fn finish(self) -> Vec<Chunk> {
        decode_line(&self.line).into_iter().collect()
    }
}

fn decode_line(line: &[u8]) -> Option<Chunk> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let data = line.strip_prefix(b"data:")?;
    let data = data.strip_prefix(b" ").unwrap_or(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return Some(Chunk::Error(
            "the model provider sent a line that is not UTF-8".into(),
        ));
    };
    let text = text.trim();
    if text == "[DONE]" {
        return Some(Chunk::Done);
    }
    if text.is_empty() {
        return None;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v) => chunk_of(&v),
        Err(_) => Some(Chunk::Error(format!(
            "the model provider sent a data line that is not JSON: {}",
            text.chars().take(200).collect::<String>()
        ))),
    }
}

/// The text or error of one parsed chunk; chunks with neither (role announcements, usage, a
/// finish reason) say nothing.
pub fn chunk_of(v: &Value) -> Option<Chunk> {
    if let Some(err) = v.get("error") {
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string());
        return Some(Chunk::Error(format!(
            "the model provider reported an error: {message}"
        )));
    }
    let text = v
        .pointer("/choices/0/delta/content")
        .or_else(|| v.pointer("/choices/0/message/content"))
        .or_else(|| v.get("response"))
        .and_then(Value::as_str)?;
    (!text.is_empty()).then(|| Chunk::Text(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = concat!(
        ": keepalive\n",
        "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"Grü\"}}]}\r\n\r\n",
        "event: chunk\n",
        "data:{\"choices\":[{\"delta\":{\"content\":\"ße 🚀\"}}]}\n\n",
        "data: {\"response\":\"!\"}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );

    fn want() -> Vec<Chunk> {
        vec![
            Chunk::Text("Grü".into()),
            Chunk::Text("ße 🚀".into()),
            Chunk::Text("!".into()),
            Chunk::Done,
        ]
    }

    #[test]
    fn every_byte_split_gives_the_same_chunks() {
        let bytes = STREAM.as_bytes();
        for i in 0..=bytes.len() {
            let mut d = Decoder::new();
            let mut got = d.push(&bytes[..i]);
            got.extend(d.push(&bytes[i..]));
            got.extend(d.finish());
            assert_eq!(got, want(), "split at {i}");
        }
        let mut d = Decoder::new();
        let mut got: Vec<Chunk> = bytes.iter().flat_map(|b| d.push(&[*b])).collect();
        got.extend(d.finish());
        assert_eq!(got, want());
    }

    #[test]
    fn a_last_line_without_newline_counts() {
        let mut d = Decoder::new();
        assert_eq!(d.push(b"data: [DONE]"), vec![]);
        assert_eq!(d.finish(), vec![Chunk::Done]);
    }

    #[test]
    fn errors_in_the_stream_are_reported() {
        let mut d = Decoder::new();
        let got = d.push(b"data: {\"error\":{\"message\":\"overloaded\"}}\ndata: nope\n");
        assert_eq!(
            got,
            vec![
                Chunk::Error("the model provider reported an error: overloaded".into()),
                Chunk::Error("the model provider sent a data line that is not JSON: nope".into()),
            ]
        );
    }

    #[test]
    fn a_whole_completion_is_read_too() {
        let v: Value =
            serde_json::from_str(r#"{"choices":[{"message":{"content":"hi"}}]}"#).unwrap();
        assert_eq!(chunk_of(&v), Some(Chunk::Text("hi".into())));
    }
}
