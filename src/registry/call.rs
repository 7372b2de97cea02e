//! The one [`ToolContext`]: [`CallContext`], what a tool sees while it runs, in either era, for
//! work nobody waits on, and as a chain step.
//!
//! A context is put together from two parts its maker provides:
//! - an [`Outlet`], where progress and log messages go before the result: a session's logged,
//!   resumable stream, a request's own reply (both `server::stream::Outbox`), the enclosing call
//!   (a chain step's tool), or nowhere (unattended work);
//! - an [`Ask`], how a question to the client is answered: a live server→client request on the
//!   session's stream, the multi-round `input_required` of a 2026-07-28 request, the enclosing
//!   call's own asking (a chain step's tool), or nobody.
//!
//! Everything else (the caller, the client's capabilities, `progressToken`, the log level, the
//! cache directive) is the same in every case and lives here once. It lives in `registry`, beside
//! the trait, so that a toolset (chains) can make one for the tools its steps call without
//! importing the server above it.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use super::{cache, Caller, Platform, ToolContext, ToolError, ToolResult};
use crate::error::{Error, Result};
use crate::mcp::logging::LogLevel;
use crate::mcp::message::{log_message, Progress};

/// Where a call's messages go before its result.
pub trait Outlet {
    /// Sends a notification or server request.
    fn send(&self, msg: &Value) -> Result<()>;

    /// Sends a log message of `tool` (one the call's log level lets through).
    fn log(&self, tool: &str, level: LogLevel, data: Value) -> Result<()> {
        self.send(&log_message(tool, level, data))
    }

    /// Ends the HTTP connection and leaves the reply to be resumed, where that is possible.
    fn end_connection(&self);
}

/// A question to the client, on its way.
pub struct Question<'a> {
    /// The call asking.
    pub call: &'a CallContext<'a>,
    /// The key the tool chose (`None`: [`ToolContext::ask_client`], which has none).
    pub key: Option<&'a str>,
    /// Whether the client may answer it before it is asked ([`ToolContext::ask_client_open`]).
    pub open: bool,
    /// The client method (`sampling/createMessage`, `elicitation/create`, `roots/list`).
    pub method: &'a str,
    /// Its params.
    pub params: Value,
}

/// How a call's questions to the client are answered.
pub trait Ask {
    /// Asks `q`, and waits for the answer (or never returns, when the request is answered in
    /// another way, as `input_required` is).
    fn ask<'a>(&'a self, q: Question<'a>) -> LocalBoxFuture<'a, ToolResult<Value>>;

    /// See [`ToolContext::exchange_id`].
    fn exchange_id(&self) -> Option<String> {
        None
    }
}

/// The capability a client request method needs.
pub fn capability_of(method: &str) -> Result<&'static str> {
    match method {
        "sampling/createMessage" => Ok("sampling"),
        "elicitation/create" => Ok("elicitation"),
        "roots/list" => Ok("roots"),
        other => Err(Error::Internal(format!("unknown client method {other}"))),
    }
}

/// Nobody to ask: work nobody waits on (a background run, a chat turn, a confirmed write).
struct Nobody(&'static str);

impl Ask for Nobody {
    fn ask<'a>(&'a self, q: Question<'a>) -> LocalBoxFuture<'a, ToolResult<Value>> {
        Box::pin(async move {
            Err(ToolError::Client(format!(
                "{} cannot send {}: no client request is waiting for it",
                self.0, q.method
            )))
        })
    }
}

/// The call a chain step runs in, for the tool the step calls: its log lines are the enclosing
/// call's (under that call's log level and tool name, as the client asked to hear them), and its
/// questions are asked as the enclosing call asks (without a key: a step's question is not one of
/// the call's own `input_required` rounds). Nothing else is sent: a step's tool has no
/// `progressToken` (the chain reports one unit per step, and a nested tool's counts would break
/// that sequence), and ending the connection is the chain's decision, not its step's.
struct Enclosing<'a>(&'a dyn ToolContext);

impl Outlet for Enclosing<'_> {
    fn send(&self, _msg: &Value) -> Result<()> {
        Ok(())
    }

    fn log(&self, _tool: &str, level: LogLevel, data: Value) -> Result<()> {
        self.0.log(level, data);
        Ok(())
    }

    fn end_connection(&self) {}
}

impl Ask for Enclosing<'_> {
    fn ask<'a>(&'a self, q: Question<'a>) -> LocalBoxFuture<'a, ToolResult<Value>> {
        self.0.ask_client(q.method, q.params)
    }
}

/// The platform a context uses: its own (a call answered after its request's handler returned),
/// or one it borrows for a while.
pub enum Held<'a> {
    /// Shared with whoever else holds it.
    Owned(Rc<dyn Platform + 'a>),
    /// Borrowed.
    Borrowed(&'a dyn Platform),
}

impl<'a, P: Platform + 'a> From<Rc<P>> for Held<'a> {
    fn from(p: Rc<P>) -> Self {
        Held::Owned(p)
    }
}

impl<'a> From<&'a dyn Platform> for Held<'a> {
    fn from(p: &'a dyn Platform) -> Self {
        Held::Borrowed(p)
    }
}

/// What a tool handler sees during one call (see the module doc).
pub struct CallContext<'a> {
    platform: Held<'a>,
    caller: Caller,
    capabilities: Value,
    tool: String,
    progress: Progress,
    /// Log messages below this level are not sent; `None`: none are.
    log_level: Option<LogLevel>,
    cache_bypass: bool,
    outlet: Option<Rc<dyn Outlet + 'a>>,
    asker: Rc<dyn Ask + 'a>,
}

impl<'a> CallContext<'a> {
    /// The context of a client's call of `tool` with `params._meta` (`progressToken`, and the
    /// cache directive `"mcp-edge/cache": "bypass"`). An unknown cache directive is invalid
    /// params, so a typo does not silently serve a cached result.
    #[allow(clippy::too_many_arguments)]
    pub fn attended(
        platform: impl Into<Held<'a>>,
        caller: Caller,
        capabilities: Value,
        tool: &str,
        meta: &Value,
        log_level: Option<LogLevel>,
        outlet: Rc<dyn Outlet + 'a>,
        asker: Rc<dyn Ask + 'a>,
    ) -> Result<Self> {
        Ok(CallContext {
            platform: platform.into(),
            caller,
            capabilities,
            tool: tool.to_string(),
            progress: Progress::of(meta),
            log_level,
            cache_bypass: cache::bypass_requested(meta)?,
            outlet: Some(outlet),
            asker,
        })
    }

    /// The context of work nobody waits on (`what`, for the error when a tool tries to ask the
    /// client): it has the platform and acts for `caller`, but reports to nobody and cannot ask.
    pub fn unattended(platform: &'a dyn Platform, caller: Caller, what: &'static str) -> Self {
        CallContext {
            platform: Held::Borrowed(platform),
            caller,
            capabilities: json!({}),
            tool: String::new(),
            progress: Progress::of(&Value::Null),
            log_level: None,
            cache_bypass: false,
            outlet: None,
            asker: Rc::new(Nobody(what)),
        }
    }

    /// This context with the client capabilities `capabilities` (a session's declared ones), for
    /// a call that decides by them but asks the client nothing itself.
    pub fn with_capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The context of a tool a chain step calls within the call `enclosing` (see [`Enclosing`]),
    /// acting for `caller`: the rights both the chain's author and its runner hold.
    pub fn within(enclosing: &'a dyn ToolContext, caller: Caller) -> Self {
        let to = Rc::new(Enclosing(enclosing));
        CallContext {
            platform: Held::Borrowed(enclosing.platform()),
            caller,
            capabilities: enclosing.client_capabilities(),
            tool: String::new(),
            progress: Progress::of(&Value::Null),
            // The enclosing call's level decides.
            log_level: Some(LogLevel::Debug),
            cache_bypass: false,
            outlet: Some(to.clone()),
            asker: to,
        }
    }

    /// Sends a message before the result, on the call's outlet.
    pub fn send(&self, msg: &Value) -> Result<()> {
        match &self.outlet {
            Some(outlet) => outlet.send(msg),
            None => Ok(()),
        }
    }

    /// Sends a notification before the result; a failure is logged, as the result still follows.
    pub fn notify(&self, msg: &Value) {
        if let Err(e) = self.send(msg) {
            crate::log::error!("notification not sent: {e}");
        }
    }

    /// Who made the request.
    pub fn caller_ref(&self) -> &Caller {
        &self.caller
    }

    /// The tool called.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    fn question<'b>(
        &'b self,
        key: Option<&'b str>,
        open: bool,
        method: &'b str,
        params: Value,
    ) -> LocalBoxFuture<'b, ToolResult<Value>> {
        self.asker.ask(Question {
            call: self,
            key,
            open,
            method,
            params,
        })
    }
}

impl ToolContext for CallContext<'_> {
    fn platform(&self) -> &dyn Platform {
        match &self.platform {
            Held::Owned(p) => &**p,
            Held::Borrowed(p) => *p,
        }
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
        if self.log_level.is_none_or(|min| level < min) {
            return;
        }
        let Some(outlet) = &self.outlet else {
            return;
        };
        if let Err(e) = outlet.log(&self.tool, level, data) {
            crate::log::error!("log message not sent: {e}");
        }
    }

    fn ask_client<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, ToolResult<Value>> {
        self.question(None, false, method, params)
    }

    fn ask_client_as<'a>(
        &'a self,
        key: &'a str,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, ToolResult<Value>> {
        self.question(Some(key), false, method, params)
    }

    fn ask_client_open<'a>(
        &'a self,
        key: &'a str,
        method: &'a str,
        params: Value,
    ) -> LocalBoxFuture<'a, ToolResult<Value>> {
        self.question(Some(key), true, method, params)
    }

    fn exchange_id(&self) -> Option<String> {
        self.asker.exchange_id()
    }

    fn end_connection(&self) {
        if let Some(outlet) = &self.outlet {
            outlet.end_connection();
        }
    }

    fn caller(&self) -> Caller {
        self.caller.clone()
    }

    fn client_capabilities(&self) -> Value {
        self.capabilities.clone()
    }

    fn cache_bypass(&self) -> bool {
        self.cache_bypass
    }
}
