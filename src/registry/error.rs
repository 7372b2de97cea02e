//! What a tool answers when it cannot do what was asked: one [`ToolError`], whichever toolset
//! refuses, rendered into a `CallToolResult` by the executor in the tool's own dialect
//! ([`super::Dialect::render`]) or, for tools without one, as text plus a coded
//! `structuredContent.error`.
//!
//! MCP reports tool failures to the model as results (`isError: true`), never as JSON-RPC errors
//! (2025-11-25, SEP-1303); [`crate::error::Error`] stays the transport's and the protocol's.

use std::fmt;

use serde_json::{json, Value};

use super::limits::Limit;
use crate::error::Error;

/// What a handler returns: its answer, or why there is none.
pub type ToolResult<T = super::ToolOutput> = std::result::Result<T, ToolError>;

/// Why a tool call has no answer. The text of every variant but [`ToolError::Internal`] is for the
/// model: what was wrong and what to do.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolError {
    /// The arguments are wrong (schema failures found by the executor included).
    Invalid {
        /// What is wrong with them, and how to correct them.
        message: String,
    },
    /// A record the caller named does not exist.
    NotFound {
        /// A stable code a client may branch on (`PATH_NOT_FOUND`); `None`: text only.
        code: Option<&'static str>,
        /// Which record is missing, and where to find the right name.
        message: String,
    },
    /// A rule of the toolset said no, with a stable, machine-readable code.
    Refused {
        /// The code the toolset declares (`NO_ACTIVE_TIDE`, …).
        code: &'static str,
        /// What was refused and why, and what to do instead.
        message: String,
        /// Further fields of the structured error (the unknown works, the active tide's id): an
        /// object, or `Null` for none.
        details: Value,
    },
    /// The tool could not do it (an upstream service failed or refused).
    Failed {
        /// What failed and what to do about it.
        message: String,
    },
    /// The call did not finish within its time limit.
    Timeout(String),
    /// The caller used up the tool's rate limit; the text says which limit and when to retry.
    RateLimited {
        /// The tool's MCP name.
        tool: &'static str,
        /// The limit the caller reached.
        limit: Limit,
        /// Seconds until a call may be allowed.
        retry_after_secs: u64,
        /// Whether each call before then lengthens the wait (`ToolDef::progressive_backoff`).
        progressive: bool,
    },
    /// The client did not answer a server-to-client request, or declined it.
    Client(String),
    /// A fault on our side (storage, a bug) or a protocol error raised inside the handler; shown as
    /// the error's public message only ([`Error::public_message`]).
    Internal(Error),
}

impl ToolError {
    /// Arguments that are wrong, the message saying what and how to correct them.
    pub fn invalid(message: impl Into<String>) -> Self {
        ToolError::Invalid {
            message: message.into(),
        }
    }

    /// The tool could not do it; the message says what failed and what to do about it.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed {
            message: message.into(),
        }
    }

    /// A record the caller named that does not exist, the message saying where to find the right
    /// name.
    pub fn not_found(message: impl Into<String>) -> Self {
        ToolError::NotFound {
            code: None,
            message: message.into(),
        }
    }

    /// The code a client may branch on, for the variants that carry one.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            ToolError::Refused { code, .. } => Some(code),
            ToolError::NotFound { code, .. } => *code,
            _ => None,
        }
    }

    /// The outcome in the invocation log: `invalid_arguments`, `rate_limited`, `timeout`,
    /// `unavailable` (storage, internal or client faults: worth another try) or `tool_error`.
    pub fn label(&self) -> &'static str {
        match self {
            ToolError::Invalid { .. } => "invalid_arguments",
            ToolError::RateLimited { .. } => "rate_limited",
            ToolError::Timeout(_) => "timeout",
            ToolError::Client(_) => "unavailable",
            ToolError::Internal(e) if !e.is_public() => "unavailable",
            _ => "tool_error",
        }
    }

    /// The text a client sees; an internal fault's details stay in the logs.
    pub fn public_message(&self) -> String {
        match self {
            ToolError::Internal(e) => e.public_message(),
            other => other.to_string(),
        }
    }

    /// The structured content of a coded error, `{"error": {"code", "message", …details}}`;
    /// `None` for errors without a code.
    pub fn structured(&self) -> Option<Value> {
        let code = self.code()?;
        let (message, details) = match self {
            ToolError::Refused {
                message, details, ..
            } => (message, details),
            ToolError::NotFound { message, .. } => (message, &Value::Null),
            _ => return None,
        };
        let mut error = json!({ "code": code, "message": message });
        if let (Some(e), Some(extra)) = (error.as_object_mut(), details.as_object()) {
            for (k, v) in extra {
                e.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        Some(json!({ "error": error }))
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (code, message) = match self {
            ToolError::NotFound { code, message } => (*code, message),
            ToolError::Refused { code, message, .. } => (Some(*code), message),
            ToolError::Invalid { message }
            | ToolError::Failed { message }
            | ToolError::Timeout(message)
            | ToolError::Client(message) => (None, message),
            ToolError::RateLimited {
                tool,
                limit,
                retry_after_secs,
                progressive,
            } => {
                write!(f, "Rate limit reached for tool {tool}: {limit} per caller. Try again in {retry_after_secs} s.")?;
                if *progressive {
                    f.write_str(" Each call before then adds to the wait (progressive backoff).")?;
                }
                return Ok(());
            }
            ToolError::Internal(e) => return e.fmt(f),
        };
        if let Some(code) = code {
            write!(f, "{code}: ")?;
        }
        f.write_str(message)
    }
}

impl std::error::Error for ToolError {}

/// `?` on a platform call in a handler: a tool-level [`Error`] keeps its kind, anything else is
/// [`ToolError::Internal`].
impl From<Error> for ToolError {
    fn from(e: Error) -> Self {
        match e {
            Error::Failed(message) => ToolError::Failed { message },
            other => ToolError::Internal(other),
        }
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        ToolError::Internal(e.into())
    }
}

/// The way back, for a tool's error that ends a protocol request rather than a tool call (a
/// `tasks/*` request resuming a chain): the same text, and the JSON-RPC code and HTTP status the
/// tool variants of [`Error`] carry.
impl From<ToolError> for Error {
    fn from(e: ToolError) -> Self {
        match e {
            ToolError::Invalid { .. } => Error::InvalidParams(e.to_string()),
            ToolError::Internal(e) => e,
            other => Error::Failed(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limit_refusal_says_which_limit_and_when_to_retry() {
        let refused = |progressive| ToolError::RateLimited {
            tool: "get_help",
            limit: Limit {
                capacity: 1,
                period_ms: 2000,
            },
            retry_after_secs: 2,
            progressive,
        };
        assert_eq!(
            refused(false).public_message(),
            "Rate limit reached for tool get_help: 1 call per 2 s per caller. Try again in 2 s."
        );
        assert_eq!(
            refused(true).public_message(),
            "Rate limit reached for tool get_help: 1 call per 2 s per caller. Try again in 2 s. Each call before then adds to the wait (progressive backoff)."
        );
        assert_eq!(refused(false).label(), "rate_limited");
    }

    #[test]
    fn errors_from_the_platform_keep_their_text_and_kind() {
        for (e, label) in [
            (Error::Failed("upstream".into()), "tool_error"),
            (Error::Storage("D1: secret".into()), "unavailable"),
            (Error::Forbidden("not yours".into()), "tool_error"),
        ] {
            let tool = ToolError::from(e.clone());
            assert_eq!(tool.public_message(), e.public_message());
            assert_eq!(tool.label(), label);
            assert!(tool.structured().is_none());
            assert_eq!(Error::from(tool), e);
        }
        let bad = ToolError::invalid("bad");
        assert_eq!(bad.label(), "invalid_arguments");
        assert_eq!(Error::from(bad), Error::InvalidParams("bad".into()));
        let gone = ToolError::not_found("gone");
        assert_eq!(gone.label(), "tool_error");
        assert_eq!(Error::from(gone), Error::Failed("gone".into()));
        for (e, label) in [
            (ToolError::Timeout("slow".into()), "timeout"),
            (ToolError::Client("declined".into()), "unavailable"),
        ] {
            assert_eq!(e.label(), label);
            let back = Error::from(e.clone());
            assert_eq!((back.rpc_code(), back.http_status()), (-32603, 200));
            assert_eq!(back.public_message(), e.public_message());
        }
    }

    #[test]
    fn coded_refusals_carry_their_code_in_text_and_structure() {
        let e = ToolError::Refused {
            code: "PATH_NOT_FOUND",
            message: "PATH 'x' does not exist.".into(),
            details: json!({ "path_name": "x", "code": "overridden?" }),
        };
        assert_eq!(e.to_string(), "PATH_NOT_FOUND: PATH 'x' does not exist.");
        let s = e.structured().unwrap();
        assert_eq!(s["error"]["code"], "PATH_NOT_FOUND");
        assert_eq!(s["error"]["path_name"], "x");
    }
}
