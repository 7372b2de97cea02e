//! What a tool handler may use while it runs: storage, the session, and the caller's stream.
//!
//! Handlers see only this trait, never worker types, so tool logic stays in the pure core and the
//! edge layer (`src/session/`) decides how each service is provided.

use futures::future::LocalBoxFuture;
use serde_json::Value;

use crate::error::Result;
use crate::mcp::logging::LogLevel;

/// Services available to a tool handler during one call.
pub trait ToolContext {
    /// Runs a D1 query and returns its rows as JSON objects. Parameters bind `?1`, `?2`, ….
    fn query<'a>(
        &'a self,
        sql: &'a str,
        params: Vec<Value>,
    ) -> LocalBoxFuture<'a, Result<Vec<Value>>>;

    /// Reads a cached text (KV, eventually consistent, shared by all sessions).
    fn cache_get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>>>;

    /// Caches a text for `ttl_secs` seconds (at least 60, the KV minimum).
    fn cache_put<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl_secs: u64,
    ) -> LocalBoxFuture<'a, Result<()>>;

    /// Reads a value of this session's state (Durable Object storage).
    fn session_get(&self, key: &str) -> Result<Option<String>>;

    /// Writes a value of this session's state (Durable Object storage).
    fn session_set(&self, key: &str, value: &str) -> Result<()>;

    /// Reports progress to the caller. Ignored when the call carried no `progressToken`, and when
    /// `progress` does not increase (the specification requires strictly increasing values).
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>);

    /// Sends `notifications/message` to the caller if `level` passes the session's log level.
    fn log(&self, level: LogLevel, data: Value);

    /// Sends a request to the client (`sampling/createMessage`, `elicitation/create`) on this call's
    /// stream and waits for its answer, up to the server's timeout.
    fn ask_client<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, Result<Value>>;

    /// Ends the caller's HTTP connection now, leaving the call's SSE stream open in the event log:
    /// the client resumes it with `GET` and `Last-Event-ID` and receives the rest, result included
    /// (MCP 2025-11-25 stream polling, SEP-1699). For long calls that should not pin a connection.
    fn end_connection(&self);

    /// The MCP session this call belongs to; records a tool keeps for the caller are bound to it.
    fn session_id(&self) -> String;

    /// The capabilities the client declared in `initialize`.
    fn client_capabilities(&self) -> Value;

    /// Waits without blocking the session's other requests.
    fn sleep(&self, ms: u32) -> LocalBoxFuture<'_, ()>;
}

/// What a handler returns.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A JSON object matching the tool's outputSchema; sent as `structuredContent` and as text.
    Structured(Value),
    /// Ready-made MCP content blocks (text, image, audio, resource links, embedded resources).
    Content(Vec<Value>),
}

/// A tool's code: takes the context and the validated arguments.
pub type Handler = for<'a> fn(&'a dyn ToolContext, Value) -> LocalBoxFuture<'a, Result<ToolOutput>>;
