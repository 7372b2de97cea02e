//! The error type of the transport and the protocol, and the one place that maps it to JSON-RPC
//! codes and HTTP statuses.
//!
//! Every failure, from a bad `Accept` header to a missing D1 table, becomes an [`Error`]; what a
//! tool call ends in is `registry::ToolError`, which wraps the `Error` a handler's `?` meets. Its
//! `Display` is the message a client sees: short, naming what was wrong and what to do. Internal
//! details (SQL errors, JS exceptions) are logged by the edge layer and never echoed verbatim to
//! clients.

use std::fmt;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// JSON-RPC error codes used by MCP (JSON-RPC 2.0 plus the MCP and SDK conventions).
pub mod code {
    /// The body is not valid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a valid JSON-RPC message (or a batch where batches are not allowed).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Parameters do not match what the method takes.
    pub const INVALID_PARAMS: i64 = -32602;
    /// A fault on our side.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Transport-level refusal (SDK convention): bad headers, missing session id.
    pub const SERVER_ERROR: i64 = -32000;
    /// The session id is unknown or was terminated (SDK convention).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// `resources/read` of a URI the server does not have (MCP 2025-11-25).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// The request was cancelled by `notifications/cancelled` before it finished.
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// 2026-07-28: the HTTP headers do not match the body, or a required one is missing.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request needs a client capability it did not declare.
    pub const MISSING_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the request's protocol version is not served.
    pub const UNSUPPORTED_VERSION: i64 = -32022;
}

/// Everything that can go wrong while serving MCP.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The `Accept` header does not list what the method needs (HTTP 406).
    NotAcceptable(String),
    /// The body is not `application/json` (HTTP 415).
    UnsupportedMediaType(String),
    /// The body is larger than the configured cap, in bytes (HTTP 413).
    PayloadTooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// The `Origin` or `Host` header is not allowed, or the session belongs to another user (HTTP
    /// 403).
    Forbidden(String),
    /// No bearer token where one is required, or an invalid one (HTTP 401 with `WWW-Authenticate`).
    Unauthorized {
        /// What is wrong, for the client.
        message: String,
        /// Whether a token was presented (`error="invalid_token"`), as opposed to missing.
        invalid_token: bool,
    },
    /// The HTTP method is not served on this path (HTTP 405).
    MethodNotAllowed(String),
    /// No route for this path (HTTP 404).
    NotFound(String),
    /// A request other than `initialize` came without `Mcp-Session-Id` (HTTP 400).
    SessionRequired,
    /// The session id is unknown or terminated (HTTP 404).
    SessionNotFound,
    /// A bad transport header, such as an unsupported `MCP-Protocol-Version` (HTTP 400).
    BadHeader(String),
    /// Invalid JSON (HTTP 400, JSON-RPC -32700).
    Parse(String),
    /// Not a valid JSON-RPC message for this point of the protocol (HTTP 400, JSON-RPC -32600).
    InvalidRequest(String),
    /// Unknown method (JSON-RPC -32601).
    MethodNotFound(String),
    /// Bad parameters, unknown tool or invalid cursor (JSON-RPC -32602).
    InvalidParams(String),
    /// 2026-07-28: the request's `_meta` lacks a required field (JSON-RPC -32602, HTTP 400).
    BadMeta(String),
    /// 2026-07-28: a request header is missing or does not match the body (JSON-RPC -32020,
    /// HTTP 400).
    HeaderMismatch(String),
    /// 2026-07-28: the request names a protocol version this server does not serve statelessly
    /// (JSON-RPC -32022, HTTP 400); `data` lists the supported ones and echoes `requested`.
    UnsupportedVersion {
        /// The version the request named.
        requested: String,
    },
    /// 2026-07-28: the request needs a client capability it did not declare (JSON-RPC -32021,
    /// HTTP 400); `data.requiredCapabilities` names it.
    MissingCapability {
        /// The capability (`sampling`, `elicitation`, `roots`).
        capability: String,
    },
    /// Unknown resource URI (JSON-RPC -32002).
    ResourceNotFound(String),
    /// The request was cancelled by the client (JSON-RPC -32800).
    Cancelled,
    /// The request could not be done, for a reason the client may read and act on (JSON-RPC
    /// -32603, HTTP 200): a platform service's refusal (a tool a 2026-07-28 request cannot run,
    /// an unusable key), or a tool's error ending a protocol request (`tasks/*`).
    Failed(String),
    /// The resource is busy with another request, such as a chat turn already running (HTTP 409).
    Conflict(String),
    /// A service this request needs is not configured, such as a model provider (HTTP 503).
    Unavailable(String),
    /// A deployment setting is invalid; the text names it and what is expected (HTTP 500). Shown
    /// to clients, since it holds no secret and tells the operator what to fix.
    Misconfigured(String),
    /// A storage binding (D1, KV, Durable Object SQLite) failed. The text is for logs, not clients.
    Storage(String),
    /// Anything else on our side. The text is for logs, not clients.
    Internal(String),
}

impl Error {
    /// The JSON-RPC error code for this error.
    pub fn rpc_code(&self) -> i64 {
        match self {
            Error::Parse(_) => code::PARSE_ERROR,
            Error::InvalidRequest(_) => code::INVALID_REQUEST,
            Error::MethodNotFound(_) => code::METHOD_NOT_FOUND,
            Error::InvalidParams(_) | Error::BadMeta(_) => code::INVALID_PARAMS,
            Error::HeaderMismatch(_) => code::HEADER_MISMATCH,
            Error::UnsupportedVersion { .. } => code::UNSUPPORTED_VERSION,
            Error::MissingCapability { .. } => code::MISSING_CAPABILITY,
            Error::ResourceNotFound(_) => code::RESOURCE_NOT_FOUND,
            Error::SessionNotFound => code::SESSION_NOT_FOUND,
            Error::Cancelled => code::REQUEST_CANCELLED,
            Error::NotAcceptable(_)
            | Error::UnsupportedMediaType(_)
            | Error::PayloadTooLarge { .. }
            | Error::Forbidden(_)
            | Error::Unauthorized { .. }
            | Error::MethodNotAllowed(_)
            | Error::NotFound(_)
            | Error::SessionRequired
            | Error::BadHeader(_)
            | Error::Conflict(_)
            | Error::Unavailable(_) => code::SERVER_ERROR,
            Error::Failed(_) | Error::Misconfigured(_) | Error::Storage(_) | Error::Internal(_) => {
                code::INTERNAL_ERROR
            }
        }
    }

    /// The HTTP status of a reply that carries only this error.
    ///
    /// Errors about one well-formed JSON-RPC request inside a live session (unknown method, bad
    /// params) are ordinary JSON-RPC answers and travel with 200; transport refusals get 4xx.
    pub fn http_status(&self) -> u16 {
        match self {
            Error::NotAcceptable(_) => 406,
            Error::UnsupportedMediaType(_) => 415,
            Error::PayloadTooLarge { .. } => 413,
            Error::Forbidden(_) => 403,
            Error::Unauthorized { .. } => 401,
            Error::MethodNotAllowed(_) => 405,
            Error::NotFound(_) | Error::SessionNotFound => 404,
            Error::Conflict(_) => 409,
            Error::Unavailable(_) => 503,
            Error::SessionRequired
            | Error::BadHeader(_)
            | Error::Parse(_)
            | Error::InvalidRequest(_)
            | Error::BadMeta(_)
            | Error::HeaderMismatch(_)
            | Error::UnsupportedVersion { .. }
            | Error::MissingCapability { .. } => 400,
            Error::MethodNotFound(_)
            | Error::InvalidParams(_)
            | Error::ResourceNotFound(_)
            | Error::Cancelled
            | Error::Failed(_) => 200,
            Error::Misconfigured(_) | Error::Storage(_) | Error::Internal(_) => 500,
        }
    }

    /// Whether the message may be shown to the client as is. Storage and internal faults are
    /// replaced by a generic text so that SQL, stack traces or binding names never leak.
    pub fn is_public(&self) -> bool {
        !matches!(self, Error::Storage(_) | Error::Internal(_))
    }

    /// The text a client sees.
    pub fn public_message(&self) -> String {
        if self.is_public() {
            self.to_string()
        } else {
            "internal error: the server could not complete the request; it was logged, try again later"
                .to_string()
        }
    }

    /// The JSON-RPC `error` object for this error.
    pub fn to_rpc_error(&self) -> serde_json::Value {
        let mut e =
            serde_json::json!({ "code": self.rpc_code(), "message": self.public_message() });
        match self {
            Error::UnsupportedVersion { requested } => {
                e["data"] = serde_json::json!({
                    "supported": crate::mcp::version::ADVERTISED,
                    "requested": requested,
                });
            }
            Error::MissingCapability { capability } => {
                let mut caps = serde_json::Map::new();
                caps.insert(capability.clone(), serde_json::json!({}));
                e["data"] = serde_json::json!({ "requiredCapabilities": caps });
            }
            _ => {}
        }
        e
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotAcceptable(m)
            | Error::UnsupportedMediaType(m)
            | Error::Forbidden(m)
            | Error::MethodNotAllowed(m)
            | Error::NotFound(m)
            | Error::BadHeader(m)
            | Error::InvalidRequest(m)
            | Error::InvalidParams(m)
            | Error::BadMeta(m)
            | Error::HeaderMismatch(m)
            | Error::ResourceNotFound(m)
            | Error::Failed(m)
            | Error::Conflict(m)
            | Error::Unavailable(m)
            | Error::Misconfigured(m)
            | Error::Storage(m)
            | Error::Internal(m)
            | Error::Unauthorized { message: m, .. } => f.write_str(m),
            Error::PayloadTooLarge { limit } => {
                write!(f, "request body is larger than {limit} bytes; send a smaller message")
            }
            Error::SessionRequired => f.write_str(
                "Mcp-Session-Id header is required: send initialize first and echo the session id it returns",
            ),
            Error::SessionNotFound => f.write_str(
                "Session not found: it was terminated or never existed; send initialize without Mcp-Session-Id to start a new one",
            ),
            Error::Parse(m) => write!(f, "Parse error: body is not valid JSON ({m})"),
            Error::MethodNotFound(m) => write!(f, "Method not found: {m}"),
            Error::Cancelled => f.write_str("Request cancelled by the client"),
            Error::UnsupportedVersion { requested } => write!(
                f,
                "Unsupported protocol version {requested:?}: this endpoint serves {} per request, and {} through initialize",
                crate::mcp::version::MODERN.join(", "),
                crate::mcp::version::SUPPORTED.join(", ")
            ),
            Error::MissingCapability { capability } => write!(
                f,
                "Missing required client capability: this request needs {capability:?}; declare it in _meta[\"io.modelcontextprotocol/clientCapabilities\"] and send the request again"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Internal(format!("JSON: {e}"))
    }
}

impl From<worker::Error> for Error {
    fn from(e: worker::Error) -> Self {
        match &e {
            // D1's Display is a Debug dump; its cause is the readable message.
            worker::Error::D1(d1) => Error::Storage(format!("D1: {}", d1.cause())),
            worker::Error::KvError(k) => Error::Storage(format!("KV: {k}")),
            other => Error::Internal(other.to_string()),
        }
    }
}

impl From<Error> for worker::Error {
    fn from(e: Error) -> Self {
        worker::Error::RustError(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_errors_are_4xx_and_request_errors_are_200() {
        assert_eq!(Error::NotAcceptable("x".into()).http_status(), 406);
        assert_eq!(Error::UnsupportedMediaType("x".into()).http_status(), 415);
        assert_eq!(Error::PayloadTooLarge { limit: 1 }.http_status(), 413);
        assert_eq!(Error::SessionNotFound.http_status(), 404);
        assert_eq!(Error::SessionNotFound.rpc_code(), -32001);
        assert_eq!(Error::Parse("x".into()).http_status(), 400);
        assert_eq!(Error::Parse("x".into()).rpc_code(), -32700);
        assert_eq!(Error::MethodNotFound("x".into()).http_status(), 200);
        assert_eq!(Error::InvalidParams("x".into()).rpc_code(), -32602);
        assert_eq!(Error::Conflict("x".into()).http_status(), 409);
        assert_eq!(Error::Unavailable("x".into()).http_status(), 503);
    }

    #[test]
    fn internal_details_never_reach_clients() {
        let e = Error::Storage("D1: no such table: secrets".into());
        assert!(!e.public_message().contains("secrets"));
        assert_eq!(e.to_rpc_error()["code"], -32603);
    }
}
