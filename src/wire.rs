//! The contract between the Worker and its Durable Objects, in one place: the internal header
//! names, the verified caller's encoding both ways, the typed internal requests a session object
//! serves ([`Op`]), and the one client every request to an object is built with
//! ([`ObjectRequest`]).
//!
//! Clients never reach an object: every request an object receives is built here, by the Worker
//! (or by another object), so the internal headers can be trusted on arrival.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Serialize;
use serde_json::{json, Value};
use worker::wasm_bindgen::JsValue;
use worker::web_sys::{self, AbortSignal};
use worker::{Env, Method, Request, Response};

use crate::engine::read;
use crate::error::{Error, Result};
use crate::registry::Caller;

/// The prefix of an anonymous 2026-07-28 caller's sealed owner id (`stateless::anonymous`); the
/// Worker refuses tokens whose `sub` starts with it, so no signed-in user is one.
pub const ANONYMOUS_OWNER_PREFIX: &str = "anonymous:";

/// Internal header carrying the verified caller ([`encode_caller`], [`caller_of`]).
pub const CALLER_HEADER: &str = "x-mcp-edge-caller";
/// Internal header: correlation id for log lines.
pub const CORRELATION_HEADER: &str = "x-correlation-id";
/// Internal header ([`Op::Create`], [`Op::CreateChat`]): this POST creates the session named in
/// `Mcp-Session-Id`.
const CREATE_HEADER: &str = "x-mcp-edge-create";
/// Internal header ([`Op::Watch`]): this GET is a dashboard watching the session's tool events.
const WATCH_HEADER: &str = "x-mcp-edge-watch";
/// Internal header ([`Op::Relay`]): this POST carries tool events of 2026-07-28 calls that named
/// this session for its event stream.
const RELAY_HEADER: &str = "x-mcp-edge-relay";
/// Internal header ([`Op::Chat`], [`Op::CreateChat`]): this request is for the session's chat.
const CHAT_HEADER: &str = "x-mcp-edge-chat";
/// Internal header ([`Lane::stream_at_once`]): answer this `tools/call` with an SSE stream at once.
const RUN_HEADER: &str = "x-mcp-edge-run";
/// Internal header ([`Op::RunWatch`]): the id of a running `tools/call` of this object.
const RUN_WATCH_HEADER: &str = "x-mcp-edge-run-watch";
/// Internal header ([`Lane::events`]): the session whose event stream shows this object's tool
/// events from now on; empty stops relaying.
const EVENTS_HEADER: &str = "x-mcp-edge-events";

/// Session ids are 256 random bits as 64 lowercase hex digits; nothing else can name a session.
pub fn valid_session_id(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The caller as the value of [`CALLER_HEADER`]: the JSON `{"user": …, "roles": […]}`,
/// base64url-encoded so any user id or role (a comma, a quote, non-ASCII) crosses unchanged as
/// header-safe ASCII. A role `"x,executive"` stays one role named `x,executive`.
pub fn encode_caller(caller: &Caller) -> String {
    let json = json!({ "user": caller.user, "roles": caller.roles });
    URL_SAFE_NO_PAD.encode(json.to_string())
}

/// The caller fields of [`decode_caller`]'s header, read by hand from the parsed `Value` (the one
/// parser of JSON bytes the Worker has) rather than by a derived reader of its own
/// (docs/decisions.md, "Derived readers").
fn wire_of(bytes: &[u8]) -> read::Read<(Option<String>, Vec<String>)> {
    let mut m = read::object(serde_json::from_slice(bytes)?, "Wire")?;
    Ok((
        read::optional(&mut m, "user", read::string)?,
        read::list(read::required(&mut m, "roles")?, read::string)?,
    ))
}

/// The caller of an internal request, from its [`CALLER_HEADER`] value. Only the Worker sets it
/// (clients cannot reach the objects); a missing or unreadable value is the anonymous caller, never
/// a guess.
pub fn decode_caller(value: Option<&str>) -> Caller {
    value
        .and_then(|v| URL_SAFE_NO_PAD.decode(v.trim()).ok())
        .and_then(|bytes| wire_of(&bytes).ok())
        .map_or_else(Caller::anonymous, |(user, roles)| Caller {
            user: user.filter(|u| !u.is_empty()),
            roles,
        })
}

/// The caller the Worker verified, from an internal request's header.
pub fn caller_of(req: &Request) -> Caller {
    decode_caller(header(req, CALLER_HEADER).as_deref())
}

fn header(req: &Request, name: &str) -> Option<String> {
    req.headers().get(name).ok().flatten()
}

/// What the Worker's 2026-07-28 run lane asks of a `tools/call` it forwards to a session object
/// (`stateless::runs`); the default is a 2025 client's call.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Lane {
    /// Answer with an SSE stream at once, so closing it can cancel the run.
    pub stream_at_once: bool,
    /// The session whose event stream shows this object's tool events from now on (the Worker
    /// checked the caller may send events there); empty stops relaying, `None` keeps the target.
    pub events: Option<String>,
}

/// What a request to a session object asks, beside its method and body.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// An MCP message (`POST`), stream (`GET`) or end (`DELETE`) of the session's client.
    Mcp(Lane),
    /// `POST` of the `initialize` that creates the session.
    Create,
    /// `POST /sessions`: creates a chat-only session.
    CreateChat,
    /// A chat turn (`POST`) or the stored conversation (`GET`).
    Chat,
    /// `GET /sessions/:id/events`: a dashboard watching the session's tool events.
    Watch,
    /// `POST` of tool events another object relays to this session's event stream.
    Relay,
    /// The run lane's bodyless `GET` beside running `tools/call` (its JSON-RPC id string): when
    /// this request's client goes away before the call ends, the runs the call drives stop. The
    /// call's own POST cannot tell: workerd does not abort a Durable Object request that came with
    /// a body when the Worker's client disconnects (docs/decisions.md), a bodyless one it does.
    RunWatch(String),
}

impl Op {
    /// What a 2025 client's own request asks.
    pub const CLIENT: Op = Op::Mcp(Lane {
        stream_at_once: false,
        events: None,
    });

    /// The op of a request the Worker built with [`ObjectRequest::session`].
    pub fn of(req: &Request) -> Op {
        let has = |name| header(req, name).is_some();
        if has(RELAY_HEADER) {
            return Op::Relay;
        }
        match (has(CHAT_HEADER), has(CREATE_HEADER)) {
            (true, true) => return Op::CreateChat,
            (true, false) => return Op::Chat,
            (false, true) => return Op::Create,
            _ => {}
        }
        if let Some(call) = header(req, RUN_WATCH_HEADER) {
            return Op::RunWatch(call);
        }
        if has(WATCH_HEADER) {
            return Op::Watch;
        }
        Op::Mcp(Lane {
            stream_at_once: has(RUN_HEADER),
            events: header(req, EVENTS_HEADER),
        })
    }

    /// The internal headers that say this op.
    fn headers(&self) -> Vec<(&'static str, String)> {
        let one = |h: &'static str| (h, "1".to_string());
        match self {
            Op::Mcp(lane) => {
                let mut h = Vec::new();
                if lane.stream_at_once {
                    h.push(one(RUN_HEADER));
                }
                if let Some(events) = &lane.events {
                    h.push((EVENTS_HEADER, events.clone()));
                }
                h
            }
            Op::Create => vec![one(CREATE_HEADER)],
            Op::CreateChat => vec![one(CREATE_HEADER), one(CHAT_HEADER)],
            Op::Chat => vec![one(CHAT_HEADER)],
            Op::Watch => vec![one(WATCH_HEADER)],
            Op::Relay => vec![one(RELAY_HEADER)],
            Op::RunWatch(call) => vec![(RUN_WATCH_HEADER, call.clone())],
        }
    }
}

/// The Durable Object classes the Worker speaks to, by binding.
const SESSION: &str = "SESSION";
const CONFIRMATIONS: &str = "CONFIRMATIONS";
const RATE_LIMITER: &str = "RATE_LIMITER";
const LISTENERS: &str = "LISTENERS";

/// One request to a Durable Object, the only way the Worker (or an object) sends one.
pub struct ObjectRequest {
    binding: &'static str,
    name: String,
    url: String,
    method: Method,
    headers: Vec<(String, String)>,
    body: Option<String>,
    signal: Option<AbortSignal>,
}

impl ObjectRequest {
    fn to(binding: &'static str, name: &str, url: String) -> Self {
        ObjectRequest {
            binding,
            name: name.to_string(),
            url,
            method: Method::Get,
            headers: Vec::new(),
            body: None,
            signal: None,
        }
    }

    /// A request to session object `session` as `caller`, asking `op`.
    pub fn session(session: &str, op: &Op, caller: &Caller) -> Self {
        let path = if *op == Op::Relay { "relay" } else { "mcp" };
        let mut r = Self::to(SESSION, session, format!("https://session.internal/{path}"))
            .header("mcp-session-id", session)
            .header(CALLER_HEADER, &encode_caller(caller));
        for (k, v) in op.headers() {
            r = r.header(k, &v);
        }
        r
    }

    /// A request to confirmation object `id` as `caller` (`op`: `create` or `decide`).
    pub fn confirmation(id: &str, op: &str, caller: &Caller) -> Self {
        Self::to(
            CONFIRMATIONS,
            id,
            format!("https://confirmation.internal/{op}"),
        )
        .header(CALLER_HEADER, &encode_caller(caller))
    }

    /// A request to the rate limiter object of `owner` at `url`.
    pub fn limiter(owner: &str, url: &str) -> Self {
        Self::to(RATE_LIMITER, owner, url.to_string())
    }

    /// A request to the listen object of `owner` at `url`.
    pub fn listeners(owner: &str, url: &str) -> Self {
        Self::to(LISTENERS, owner, url.to_string())
    }

    /// Adds header `name`.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Sends it with `method`.
    pub fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// A `POST` of `body` as it is (its content type is the caller's to set).
    pub fn body(mut self, body: String) -> Self {
        self.method = Method::Post;
        self.body = Some(body);
        self
    }

    /// A `POST` of `body` as JSON.
    pub fn json(self, body: &impl Serialize) -> Result<Self> {
        Ok(self
            .header("content-type", "application/json")
            .body(serde_json::to_string(body)?))
    }

    /// Aborts the request with `signal` (a client's), so the object notices the client leave.
    pub fn signal(mut self, signal: Option<&AbortSignal>) -> Self {
        self.signal = signal.cloned();
        self
    }

    /// Sends it; the object's response.
    pub async fn send(self, env: &Env) -> Result<Response> {
        let headers = web_sys::Headers::new().map_err(|_| Error::Internal("headers".into()))?;
        for (k, v) in &self.headers {
            headers
                .set(k, v)
                .map_err(|_| Error::Internal(format!("header {k}")))?;
        }
        let init = web_sys::RequestInit::new();
        init.set_method(self.method.as_ref());
        init.set_headers(&headers);
        init.set_signal(self.signal.as_ref());
        if let Some(b) = &self.body {
            init.set_body(&JsValue::from_str(b));
        }
        let inner = web_sys::Request::new_with_str_and_init(&self.url, &init)
            .map_err(|e| Error::Internal(format!("build request to {}: {e:?}", self.url)))?;
        let stub = env
            .durable_object(self.binding)?
            .id_from_name(&self.name)?
            .get_stub()?;
        Ok(stub.fetch_with_request(Request::from(inner)).await?)
    }

    /// Sends it; the HTTP status and the JSON answer.
    pub async fn send_json(self, env: &Env) -> Result<(u16, Value)> {
        let what = self.url.clone();
        let mut resp = self.send(env).await?;
        let text = resp.text().await?;
        let answer = serde_json::from_str(&text)
            .map_err(|e| Error::Internal(format!("answer of {what}: {e}")))?;
        Ok((resp.status_code(), answer))
    }
}

/// Sends `events` (`[{event, data}]`) to session `id`'s event stream as `caller`; its answer (204
/// when the session took them).
pub async fn relay(env: &Env, id: &str, caller: &Caller, events: &Value) -> Result<Response> {
    ObjectRequest::session(id, &Op::Relay, caller)
        .json(events)?
        .send(env)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_id_shape_names_a_session() {
        assert!(valid_session_id(&"a1".repeat(32)));
        assert!(!valid_session_id(&"A1".repeat(32)));
        assert!(!valid_session_id("garbage"));
        assert!(!valid_session_id(&"a".repeat(65)));
    }

    #[test]
    fn the_caller_crosses_unchanged() {
        let tricky = Caller {
            user: Some("E1, \"quoted\" ü".into()),
            roles: vec!["x,executive".into(), "hr read".into(), String::new()],
        };
        let header = encode_caller(&tricky);
        assert!(header.bytes().all(|b| b.is_ascii_graphic()), "{header}");
        assert_eq!(decode_caller(Some(&header)), tricky);
        let anonymous = Caller::anonymous();
        assert_eq!(decode_caller(Some(&encode_caller(&anonymous))), anonymous);
        for (json, user) in [
            (r#"{"roles":["r"]}"#, None),
            (r#"{"user":"","roles":["r"]}"#, None),
        ] {
            let caller = decode_caller(Some(&URL_SAFE_NO_PAD.encode(json)));
            assert_eq!((caller.user, caller.roles), (user, vec!["r".to_string()]));
        }
        for unreadable in [None, Some(""), Some("x,executive"), Some("e30")] {
            assert_eq!(decode_caller(unreadable), anonymous, "{unreadable:?}");
        }
    }
}
