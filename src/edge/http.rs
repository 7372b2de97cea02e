//! HTTP header rules of Streamable HTTP, CORS, and the one place errors become responses.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::error::Category;
use serde_json::Value;
use worker::{Headers, Request, Response};

use crate::error::{Error, Result};
use crate::mcp::message::{error_response, RequestId};

/// `Content-Type` of JSON replies.
pub const JSON: &str = "application/json";
/// `Content-Type` of SSE replies.
pub const EVENT_STREAM: &str = "text/event-stream";

/// Request headers a browser client may send (CORS preflight): those of both eras (2026-07-28
/// mirrors the method and name into `Mcp-Method` and `Mcp-Name`).
const ALLOW_HEADERS: &str = "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name";
/// Response headers a browser client may read.
const EXPOSE_HEADERS: &str = "Mcp-Session-Id, MCP-Protocol-Version";
/// Methods served on `/mcp`.
pub const ALLOW_METHODS: &str = "GET, POST, DELETE, OPTIONS";

/// A request header's value, if present.
pub fn header(req: &Request, name: &str) -> Option<String> {
    req.headers().get(name).ok().flatten()
}

/// Whether an `Accept` header admits `wanted` (exact type, `type/*` or `*/*`; `q=0` excludes).
pub fn accepts(accept: Option<&str>, wanted: &str) -> bool {
    let Some(accept) = accept else { return false };
    let (wanted_type, _) = wanted.split_once('/').unwrap_or((wanted, ""));
    accept.split(',').any(|range| {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let refused = parts.any(|p| {
            let p = p.trim().replace(' ', "");
            p == "q=0" || p == "q=0.0" || p == "q=0.00" || p == "q=0.000"
        });
        !refused && (media == wanted || media == "*/*" || media == format!("{wanted_type}/*"))
    })
}

/// POST needs both reply types listed (the server picks JSON or SSE per request).
pub fn check_post_accept(accept: Option<&str>) -> Result<()> {
    if accepts(accept, JSON) && accepts(accept, EVENT_STREAM) {
        Ok(())
    } else {
        Err(Error::NotAcceptable(
            "Not Acceptable: the Accept header must list both application/json and text/event-stream".into(),
        ))
    }
}

/// GET opens an SSE stream, so it needs `text/event-stream`.
pub fn check_get_accept(accept: Option<&str>) -> Result<()> {
    if accepts(accept, EVENT_STREAM) {
        Ok(())
    } else {
        Err(Error::NotAcceptable(
            "Not Acceptable: the Accept header must list text/event-stream".into(),
        ))
    }
}

/// POST bodies are JSON (`application/json`, optionally with parameters such as charset).
pub fn check_content_type(content_type: Option<&str>) -> Result<()> {
    let media = content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase());
    if media.as_deref() == Some(JSON) {
        Ok(())
    } else {
        Err(Error::UnsupportedMediaType(format!(
            "Unsupported Media Type: Content-Type must be application/json, got {}",
            content_type.unwrap_or("none")
        )))
    }
}

/// Refuses a body in which some object names a key twice (`{"method":"ping","method":"tools/call"}`),
/// as a parse error: parsers disagree on which one wins (serde_json keeps the last, many keep the
/// first), so a body that a proxy or a log reads one way must not run another way here. Other
/// syntax errors pass: the body's real parse reports them. Linear in the body's size, and bounded
/// by serde_json's nesting limit like that parse.
pub fn check_unique_keys(body: &str) -> Result<()> {
    match serde_json::from_str::<UniqueKeys>(body) {
        Err(e) if e.classify() == Category::Data => Err(Error::Parse(format!(
            "{e}; send every key of an object once"
        ))),
        _ => Ok(()),
    }
}

/// Any JSON value whose objects name each key at most once; a repeated key is a data error (the
/// only one this type raises).
struct UniqueKeys;

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(UniqueKeys)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_unit<E>(self) -> std::result::Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            map.next_value::<UniqueKeys>()?;
            seen.insert(key);
        }
        Ok(UniqueKeys)
    }
}

/// A JSON response with a status.
pub fn json_response(body: &Value, status: u16) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", JSON)?;
    Ok(Response::from_bytes(body.to_string().into_bytes())?
        .with_status(status)
        .with_headers(headers))
}

/// The response for an error: a JSON-RPC error object (with the request id when known) and the
/// error's HTTP status, plus `Allow` on 405.
pub fn error_response_for(err: &Error, id: Option<&RequestId>) -> Result<Response> {
    let resp = json_response(&error_response(id, err), err.http_status())?;
    if matches!(err, Error::MethodNotAllowed(_)) {
        resp.headers().set("allow", ALLOW_METHODS)?;
    }
    Ok(resp)
}

/// A mutable copy of a response's headers, to pass to `Response::with_headers`.
///
/// Responses that come back from the Durable Object have immutable headers, so they are rebuilt
/// around the same body (a stream passes through without copying).
pub fn mutable_headers(resp: &Response) -> Result<Headers> {
    let headers = Headers::new();
    for (k, v) in resp.headers().entries() {
        headers.append(&k, &v)?;
    }
    Ok(headers)
}

/// Adds CORS headers for an allowed `origin`.
pub fn with_cors(resp: Response, origin: Option<&str>) -> Result<Response> {
    let Some(origin) = origin else {
        return Ok(resp);
    };
    let headers = mutable_headers(&resp)?;
    headers.set("access-control-allow-origin", origin)?;
    headers.set("access-control-expose-headers", EXPOSE_HEADERS)?;
    headers.append("vary", "Origin")?;
    Ok(resp.with_headers(headers))
}

/// The answer to a CORS preflight.
pub fn preflight(origin: Option<&str>) -> Result<Response> {
    let headers = Headers::new();
    headers.set("access-control-allow-methods", ALLOW_METHODS)?;
    headers.set("access-control-allow-headers", ALLOW_HEADERS)?;
    headers.set("access-control-max-age", "86400")?;
    with_cors(
        Response::empty()?.with_status(204).with_headers(headers),
        origin,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_needs_both_types_for_post() {
        assert!(check_post_accept(Some("application/json, text/event-stream")).is_ok());
        assert!(check_post_accept(Some("*/*")).is_ok());
        assert!(check_post_accept(Some("application/json;q=0.9, text/*")).is_ok());
        assert!(check_post_accept(Some("application/json")).is_err());
        assert!(check_post_accept(Some("application/json, text/event-stream;q=0")).is_err());
        assert!(check_post_accept(None).is_err());
        assert!(check_get_accept(Some("text/event-stream")).is_ok());
        assert!(check_get_accept(Some("application/json")).is_err());
    }

    #[test]
    fn a_key_named_twice_in_any_object_is_a_parse_error() {
        assert!(check_unique_keys(r#"{"a":1,"b":[{"a":2},{"a":3}],"c":{"a":{"a":4}}}"#).is_ok());
        let twice = check_unique_keys(r#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"x"}"#);
        assert!(
            matches!(&twice, Err(Error::Parse(m)) if m.starts_with("duplicate key \"method\" at line 1")),
            "{twice:?}"
        );
        assert_eq!(twice.unwrap_err().rpc_code(), -32700);
        let nested = check_unique_keys(r#"{"params":{"arguments":[{"id":"a","id":"b"}]}}"#);
        assert!(matches!(nested, Err(Error::Parse(m)) if m.contains("\"id\"")));
        // Syntax errors, and nesting beyond serde_json's limit, are left to the body's real parse.
        assert!(check_unique_keys("{not json").is_ok());
        assert!(check_unique_keys(&"[".repeat(100_000)).is_ok());
    }

    #[test]
    fn content_type_must_be_json() {
        assert!(check_content_type(Some("application/json")).is_ok());
        assert!(check_content_type(Some("Application/JSON; charset=utf-8")).is_ok());
        assert_eq!(
            check_content_type(Some("text/plain"))
                .unwrap_err()
                .http_status(),
            415
        );
        assert!(check_content_type(None).is_err());
    }
}
