//! MCP 2026-07-28, the modern (stateless) era: which era a request on `/mcp` belongs to, and the
//! checks every modern request passes before it is dispatched.
//!
//! **Era detection** (one endpoint serves both; README "Two protocol eras"):
//! 1. a request whose `MCP-Protocol-Version` header is 2026-07-28 is modern, and its
//!    `Mcp-Session-Id`, if any, is ignored: 2026-07-28 has no sessions, and a modern server ignores
//!    the header (never minting or echoing one), so a session id never lends a stateless request a
//!    session's state or caller;
//! 2. a request carrying `Mcp-Session-Id` belongs to its 2025 session (legacy lane, unchanged; an
//!    unknown version there is the session's "unsupported version");
//! 3. a request whose `params._meta` names `io.modelcontextprotocol/protocolVersion` is modern;
//! 4. `initialize` without that `_meta` is legacy (it opens a session);
//! 5. anything else is modern when its `MCP-Protocol-Version` header is not a 2025 version, or
//!    when it is `server/discover`; otherwise legacy.
//!
//! A GET or DELETE has no body: with a 2026-07-28 `MCP-Protocol-Version`, or without a session id
//! and with any version that is not a 2025 one, it is modern (and refused with 405, as the 2026
//! transport removed both); otherwise legacy.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{Map, Value};

use super::logging::LogLevel;
use super::message::RequestId;
use super::version;
use crate::error::{Error, Result};

/// `_meta` key of the request's protocol version.
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities for this request.
pub const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client's name and version (optional).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the lowest log level the client wants as `notifications/message`; without it
/// the server sends none.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of the server's identity in `server/discover` results.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Our `_meta` key naming a session (a 2025 MCP session or a chat session, `POST /sessions`)
/// whose event stream (`GET /sessions/:id/events`) shows this stateless call's tool events.
pub const META_EVENTS_SESSION: &str = "mcp-edge/eventsSession";
/// Our `_meta` key of a write's idempotency key: a retried write with the same key (same caller,
/// same tool) returns the first execution's result instead of running again.
pub const META_IDEMPOTENCY_KEY: &str = "mcp-edge/idempotencyKey";

/// Which protocol era serves a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-03-26 … 2025-11-25: `initialize`, sessions, the GET stream (`src/session/`).
    Legacy,
    /// 2026-07-28: every request stands alone (`src/stateless/`).
    Modern,
}

/// Whether an `MCP-Protocol-Version` header asks for the modern era: any value that is not a
/// 2025 version, so an unknown future version gets the modern "unsupported version" answer.
fn modern_header(version_header: Option<&str>) -> bool {
    version_header.is_some_and(|v| !version::is_supported(v.trim()))
}

/// Whether an `MCP-Protocol-Version` header names a modern version this server speaks: such a
/// request is modern whatever `Mcp-Session-Id` it carries.
fn modern_version(version_header: Option<&str>) -> bool {
    version_header.is_some_and(|v| version::is_modern(v.trim()))
}

/// The era of a POST when its headers decide it (rules 1 and 2 of the module doc), so its body
/// need not be read for that; `None` when the body must say.
pub fn era_of_post_headers(has_session: bool, version_header: Option<&str>) -> Option<Era> {
    if modern_version(version_header) {
        Some(Era::Modern)
    } else if has_session {
        Some(Era::Legacy)
    } else {
        None
    }
}

/// The era of a POST (see the module doc).
pub fn era_of_post(has_session: bool, version_header: Option<&str>, body: &Value) -> Era {
    if let Some(era) = era_of_post_headers(has_session, version_header) {
        return era;
    }
    let method = body.get("method").and_then(Value::as_str);
    let meta_version = body
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_VERSION));
    if meta_version.is_some() {
        Era::Modern
    } else if method == Some("initialize") {
        Era::Legacy
    } else if modern_header(version_header) || method == Some("server/discover") {
        Era::Modern
    } else {
        Era::Legacy
    }
}

/// The era of a GET or DELETE (see the module doc).
pub fn era_of_bodyless(has_session: bool, version_header: Option<&str>) -> Era {
    if modern_version(version_header) || (!has_session && modern_header(version_header)) {
        Era::Modern
    } else {
        Era::Legacy
    }
}

/// The request headers the modern checks compare with the body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mirrored {
    /// `MCP-Protocol-Version`.
    pub version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name` as sent (possibly `=?base64?…?=`).
    pub name: Option<String>,
    /// Every `Mcp-Param-{Name}` header: `{Name}` lowercased, and the value as sent.
    pub params: Vec<(String, String)>,
}

/// A modern request that passed the envelope checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Its id.
    pub id: RequestId,
    /// Its method.
    pub method: String,
    /// Its params (an object; `_meta` included).
    pub params: Map<String, Value>,
    /// The client's capabilities for this request.
    pub capabilities: Value,
    /// The log level the client asked for, if any.
    pub log_level: Option<LogLevel>,
}

impl Request {
    /// The request's `_meta` (empty when absent).
    pub fn meta(&self) -> Map<String, Value> {
        self.params
            .get("_meta")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }

    /// Whether the client declared `capability` (`sampling`, `elicitation`, `roots`).
    pub fn declares(&self, capability: &str) -> bool {
        self.capabilities.get(capability).is_some()
    }
}

/// What a modern POST body is, once its envelope is checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request to dispatch.
    Request(Request),
    /// A notification: accepted with 202 and nothing else (2026-07-28 defines none over HTTP;
    /// cancellation is closing the response stream).
    Notification,
}

/// A request refused before dispatch: the error, and the id to answer with when known.
pub type Refusal = (Option<RequestId>, Error);

/// Decodes a header value that may use the `=?base64?…?=` sentinel (transport "Value Encoding").
pub fn decode_header_value(v: &str) -> Result<String> {
    let v = v.trim();
    match v
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| {
                Error::HeaderMismatch(format!(
                    "Header mismatch: {v:?} is not valid =?base64?…?= UTF-8"
                ))
            }),
        None if v.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)) => Ok(v.to_string()),
        None => Err(Error::HeaderMismatch(
            "Header mismatch: a header value holds characters outside visible ASCII; send it as =?base64?…?=".into(),
        )),
    }
}

/// The methods whose `Mcp-Name` header is required, and the param it mirrors.
fn name_param(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The tasks extension (SEP-2663, "Routing Headers").
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// Checks a modern POST body against its headers and reads its `_meta`, in the order the
/// specification's errors are told apart: JSON-RPC shape (-32600), `Mcp-Method` and `Mcp-Name`
/// (-32020), the required `_meta` fields (-32602), `MCP-Protocol-Version` against `_meta`
/// (-32020), then the version itself (-32022).
pub fn check(body: Value, headers: &Mirrored) -> std::result::Result<Message, Refusal> {
    let Value::Object(mut msg) = body else {
        return Err((
            None,
            Error::InvalidRequest(
                "Invalid Request: the body must be one JSON-RPC request object (batches are not accepted)".into(),
            ),
        ));
    };
    if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            None,
            Error::InvalidRequest("Invalid Request: jsonrpc must be \"2.0\"".into()),
        ));
    }
    let Some(method) = msg
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return Err((
            None,
            Error::InvalidRequest(
                "Invalid Request: clients of 2026-07-28 send only requests (method required); responses to server requests travel as inputResponses of a retried request".into(),
            ),
        ));
    };
    let id = match msg.get("id") {
        None => return Ok(Message::Notification),
        Some(v) => RequestId::from_value(v).map_err(|e| (None, e))?,
    };
    let refuse = |e: Error| (Some(id.clone()), e);
    let params = match msg.remove("params") {
        None => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => {
            return Err(refuse(Error::InvalidParams(
                "Invalid params: params must be an object".into(),
            )))
        }
    };

    let mismatch = |why: String| refuse(Error::HeaderMismatch(why));
    let bad_meta = |why: String| refuse(Error::BadMeta(why));
    match headers.method.as_deref().map(str::trim) {
        None => {
            return Err(mismatch(format!(
                "Header mismatch: the Mcp-Method header is required (send Mcp-Method: {method})"
            )))
        }
        Some(m) if m != method => {
            return Err(mismatch(format!(
            "Header mismatch: Mcp-Method header value {m:?} does not match body method {method:?}"
        )))
        }
        Some(_) => {}
    }
    if let Some(param) = name_param(&method) {
        let body_name = params.get(param).and_then(Value::as_str);
        let Some(header) = headers.name.as_deref() else {
            return Err(mismatch(format!(
                "Header mismatch: the Mcp-Name header is required for {method} (the value of params.{param})"
            )));
        };
        let header_name = decode_header_value(header).map_err(&refuse)?;
        if body_name != Some(header_name.as_str()) {
            return Err(mismatch(format!(
                "Header mismatch: Mcp-Name header value {header_name:?} does not match body params.{param} {}",
                body_name.map_or("(absent)".to_string(), |n| format!("{n:?}"))
            )));
        }
    }

    let Some(Value::Object(meta)) = params.get("_meta") else {
        return Err(bad_meta(format!(
            "Invalid params: params._meta is required on every 2026-07-28 request, with {META_VERSION:?} and {META_CAPABILITIES:?}"
        )));
    };
    let Some(meta_version) = meta.get(META_VERSION).and_then(Value::as_str) else {
        return Err(bad_meta(format!(
            "Invalid params: params._meta[{META_VERSION:?}] (string) is required"
        )));
    };
    let Some(capabilities) = meta
        .get(META_CAPABILITIES)
        .filter(|c| c.is_object())
        .cloned()
    else {
        return Err(bad_meta(format!(
            "Invalid params: params._meta[{META_CAPABILITIES:?}] (object) is required; send {{}} when the client has none"
        )));
    };
    let log_level = match meta.get(META_LOG_LEVEL) {
        None => None,
        Some(Value::String(l)) => Some(LogLevel::parse(l).map_err(&refuse)?),
        Some(_) => {
            return Err(bad_meta(format!(
                "Invalid params: params._meta[{META_LOG_LEVEL:?}] must be a log level string"
            )))
        }
    };
    match headers.version.as_deref().map(str::trim) {
        None => {
            return Err(mismatch(format!(
                "Header mismatch: the MCP-Protocol-Version header is required (send MCP-Protocol-Version: {meta_version})"
            )))
        }
        Some(h) if h != meta_version => {
            return Err(mismatch(format!(
                "Header mismatch: MCP-Protocol-Version header value {h:?} does not match _meta version {meta_version:?}"
            )))
        }
        Some(_) => {}
    }
    if !version::is_modern(meta_version) {
        return Err(refuse(Error::UnsupportedVersion {
            requested: meta_version.to_string(),
        }));
    }
    Ok(Message::Request(Request {
        id,
        method,
        params,
        capabilities,
        log_level,
    }))
}

/// Checks the `Mcp-Param-{Name}` headers of a `tools/call` against its arguments: every
/// property the tool's input schema marks with `x-mcp-header` (reached through `properties`
/// only) whose argument is present must come with its header, equal after decoding (integers
/// compared as numbers, booleans as `true`/`false`).
pub fn check_param_headers(
    schema: &Value,
    args: &Value,
    headers: &[(String, String)],
) -> Result<()> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (name, prop) in props {
        let Some(arg) = args.get(name).filter(|v| !v.is_null()) else {
            continue;
        };
        if let Some(h) = prop.get("x-mcp-header").and_then(Value::as_str) {
            let sent = headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(h))
                .map(|(_, v)| v.as_str())
                .ok_or_else(|| {
                    Error::HeaderMismatch(format!(
                        "Header mismatch: argument {name:?} is mirrored in the Mcp-Param-{h} header, which is missing"
                    ))
                })?;
            let sent = decode_header_value(sent)?;
            let equal = match arg {
                Value::String(s) => *s == sent,
                Value::Bool(b) => sent == b.to_string(),
                Value::Number(n) => sent.parse::<f64>().is_ok_and(|x| n.as_f64() == Some(x)),
                _ => false,
            };
            if !equal {
                return Err(Error::HeaderMismatch(format!(
                    "Header mismatch: Mcp-Param-{h} header value {sent:?} does not match argument {name:?} ({arg})"
                )));
            }
        }
        if prop.get("properties").is_some() {
            check_param_headers(prop, arg, headers)?;
        }
    }
    Ok(())
}

/// Marks a finished result of a modern request (`resultType: "complete"`, required on every
/// 2026-07-28 result).
pub fn complete(mut result: Value) -> Value {
    if let Value::Object(m) = &mut result {
        m.insert("resultType".into(), Value::String("complete".into()));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta() -> Value {
        json!({ META_VERSION: "2026-07-28", META_CAPABILITIES: {} })
    }

    fn headers(method: &str, name: Option<&str>) -> Mirrored {
        Mirrored {
            version: Some("2026-07-28".into()),
            method: Some(method.into()),
            name: name.map(str::to_string),
            params: Vec::new(),
        }
    }

    fn refusal(body: Value, h: &Mirrored) -> (Option<RequestId>, Error) {
        check(body, h).unwrap_err()
    }

    #[test]
    fn eras_follow_the_documented_rule() {
        let modern =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}});
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}});
        let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"});
        assert_eq!(era_of_post(true, None, &modern), Era::Legacy);
        assert_eq!(era_of_post(true, Some("2025-11-25"), &modern), Era::Legacy);
        assert_eq!(
            era_of_post(true, Some("2026-07-28"), &modern),
            Era::Modern,
            "a 2026 request ignores Mcp-Session-Id"
        );
        assert_eq!(era_of_post(true, Some("2026-07-28"), &init), Era::Modern);
        assert_eq!(era_of_post(false, None, &modern), Era::Modern);
        assert_eq!(era_of_post(false, Some("2025-11-25"), &init), Era::Legacy);
        assert_eq!(era_of_post(false, None, &init), Era::Legacy);
        let modern_init =
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"_meta": meta()}});
        assert_eq!(era_of_post(false, None, &modern_init), Era::Modern);
        assert_eq!(era_of_post(false, None, &bare), Era::Legacy);
        assert_eq!(era_of_post(false, Some("2025-06-18"), &bare), Era::Legacy);
        assert_eq!(era_of_post(false, Some("2026-07-28"), &bare), Era::Modern);
        assert_eq!(era_of_post(false, Some("v999"), &bare), Era::Modern);
        assert_eq!(era_of_post(false, None, &discover), Era::Modern);
        assert_eq!(
            era_of_post(true, Some("v999"), &modern),
            Era::Legacy,
            "a session's unknown version is the session's to refuse"
        );
        assert_eq!(era_of_bodyless(false, Some("2026-07-28")), Era::Modern);
        assert_eq!(era_of_bodyless(true, Some("2026-07-28")), Era::Modern);
        assert_eq!(era_of_bodyless(false, Some("v999")), Era::Modern);
        assert_eq!(era_of_bodyless(true, Some("v999")), Era::Legacy);
        assert_eq!(era_of_bodyless(false, Some("2025-11-25")), Era::Legacy);
        assert_eq!(era_of_bodyless(false, None), Era::Legacy);
    }

    #[test]
    fn a_valid_request_passes_with_its_meta() {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "echo", "arguments": {}, "_meta": {META_VERSION: "2026-07-28", META_CAPABILITIES: {"sampling": {}}, META_LOG_LEVEL: "info"}}});
        let Message::Request(r) = check(body, &headers("tools/call", Some(" echo "))).unwrap()
        else {
            panic!("a request")
        };
        assert_eq!(r.method, "tools/call");
        assert!(r.declares("sampling") && !r.declares("elicitation"));
        assert_eq!(r.log_level, Some(LogLevel::Info));
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled"});
        assert_eq!(
            check(note, &headers("notifications/cancelled", None)).unwrap(),
            Message::Notification
        );
    }

    #[test]
    fn headers_must_mirror_the_body() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "_meta": meta()}});
        for h in [
            headers("tools/list", Some("echo")),
            headers("tools/call", Some("other")),
            headers("tools/call", None),
            Mirrored {
                method: None,
                ..headers("tools/call", Some("echo"))
            },
            Mirrored {
                version: None,
                ..headers("tools/call", Some("echo"))
            },
            Mirrored {
                version: Some("2025-11-25".into()),
                ..headers("tools/call", Some("echo"))
            },
        ] {
            let (id, e) = refusal(body.clone(), &h);
            assert_eq!(id, Some(RequestId::from_value(&json!(1)).unwrap()));
            assert_eq!((e.rpc_code(), e.http_status()), (-32020, 400), "{h:?}");
        }
        let unicode = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "grüße", "_meta": meta()}});
        let encoded = format!("=?base64?{}?=", STANDARD.encode("grüße"));
        assert!(check(unicode.clone(), &headers("tools/call", Some(&encoded))).is_ok());
        let (_, e) = refusal(unicode, &headers("tools/call", Some("grüße")));
        assert_eq!(e.rpc_code(), -32020);
        let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "test://a", "_meta": meta()}});
        assert!(check(read, &headers("resources/read", Some("test://a"))).is_ok());
    }

    #[test]
    fn meta_fields_are_required_and_versions_checked() {
        let with = |m: Value| json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": m}});
        for m in [
            json!(null),
            json!({ META_CAPABILITIES: {} }),
            json!({ META_VERSION: "2026-07-28" }),
            json!({ META_VERSION: "2026-07-28", META_CAPABILITIES: [] }),
        ] {
            let (_, e) = refusal(with(m), &headers("server/discover", None));
            assert_eq!((e.rpc_code(), e.http_status()), (-32602, 400));
        }
        let no_meta = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {}});
        assert_eq!(
            refusal(no_meta, &headers("server/discover", None))
                .1
                .rpc_code(),
            -32602
        );
        let v999 = with(json!({ META_VERSION: "v999", META_CAPABILITIES: {} }));
        let (_, e) = refusal(v999.clone(), &headers("server/discover", None));
        assert_eq!(e.rpc_code(), -32020, "header 2026-07-28, _meta v999");
        let h = Mirrored {
            version: Some("v999".into()),
            ..headers("server/discover", None)
        };
        let (_, e) = refusal(v999, &h);
        assert_eq!((e.rpc_code(), e.http_status()), (-32022, 400));
        let data = &e.to_rpc_error()["data"];
        assert_eq!(data["requested"], "v999");
        assert_eq!(data["supported"][0], "2026-07-28");
        let legacy = with(json!({ META_VERSION: "2025-11-25", META_CAPABILITIES: {} }));
        let h = Mirrored {
            version: Some("2025-11-25".into()),
            ..headers("server/discover", None)
        };
        assert_eq!(refusal(legacy, &h).1.rpc_code(), -32022);
    }

    #[test]
    fn shapes_outside_one_request_are_refused() {
        let h = headers("tools/list", None);
        assert_eq!(refusal(json!([]), &h).1.rpc_code(), -32600);
        assert_eq!(
            refusal(json!({"jsonrpc": "2.0", "id": 1, "result": {}}), &h)
                .1
                .rpc_code(),
            -32600
        );
        assert_eq!(
            refusal(
                json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"}),
                &h
            )
            .1
            .rpc_code(),
            -32600
        );
    }

    #[test]
    fn header_values_decode_only_valid_sentinels() {
        assert_eq!(decode_header_value("plain").unwrap(), "plain");
        assert_eq!(
            decode_header_value(&format!("=?base64?{}?=", STANDARD.encode(" padded "))).unwrap(),
            " padded "
        );
        assert!(decode_header_value("=?base64?***?=").is_err());
        assert_eq!(complete(json!({"a": 1}))["resultType"], "complete");
    }

    #[test]
    fn mirrored_parameters_must_match_their_headers() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "nested": {"type": "object", "properties": {"flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
            "query": {"type": "string"}
        }});
        let h = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect()
        };
        let args =
            json!({"region": "us-west1", "limit": 42, "nested": {"flag": true}, "query": "x"});
        let good = h(&[("region", "us-west1"), ("limit", "42.0"), ("flag", "true")]);
        assert!(check_param_headers(&schema, &args, &good).is_ok());
        assert!(check_param_headers(&schema, &json!({"query": "x"}), &[]).is_ok());
        assert!(check_param_headers(&schema, &json!({"region": null}), &[]).is_ok());
        for bad in [
            h(&[("limit", "42"), ("flag", "true")]),
            h(&[("region", "us-east1"), ("limit", "42"), ("flag", "true")]),
            h(&[("region", "us-west1"), ("limit", "43"), ("flag", "true")]),
            h(&[("region", "us-west1"), ("limit", "42"), ("flag", "True")]),
            h(&[
                ("region", "=?base64?%%%?="),
                ("limit", "42"),
                ("flag", "true"),
            ]),
        ] {
            let e = check_param_headers(&schema, &args, &bad).unwrap_err();
            assert_eq!(e.rpc_code(), -32020, "{bad:?}");
        }
        let encoded = format!("=?base64?{}?=", STANDARD.encode("us-west1"));
        let b64 = h(&[("REGION", &encoded), ("limit", "42"), ("flag", "true")]);
        assert!(check_param_headers(&schema, &args, &b64).is_ok());
    }
}
