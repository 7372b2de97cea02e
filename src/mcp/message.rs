//! JSON-RPC 2.0 messages as MCP uses them: parsing from text with precise errors, and building replies.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};

/// A JSON-RPC request id: a string or an integer, never null (MCP `basic/index`).
///
/// Kept as the original JSON value so that large integers and exact string forms round-trip.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestId(Value);

impl RequestId {
    /// Accepts a string or an integer; anything else is an invalid request.
    pub fn from_value(v: &Value) -> Result<Self> {
        match v {
            Value::String(_) => Ok(RequestId(v.clone())),
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(RequestId(v.clone())),
            Value::Null => Err(Error::InvalidRequest(
                "Invalid Request: id must not be null; use a string or an integer".into(),
            )),
            _ => Err(Error::InvalidRequest(
                "Invalid Request: id must be a string or an integer".into(),
            )),
        }
    }

    /// The id as JSON.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// A stable text key for maps (`"7"` and `7` stay distinct).
    pub fn key(&self) -> String {
        self.0.to_string()
    }
}

/// One message a client POSTs.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request, which gets exactly one response.
    Request {
        /// Its id.
        id: RequestId,
        /// Method name.
        method: String,
        /// Parameters (an object), if any.
        params: Option<Value>,
    },
    /// A notification, which gets none.
    Notification {
        /// Method name.
        method: String,
        /// Parameters (an object), if any.
        params: Option<Value>,
    },
    /// The client's answer to a request the server sent (elicitation, sampling).
    Response {
        /// The id the server chose.
        id: RequestId,
        /// `result` on success, or the error object as `Err`.
        outcome: std::result::Result<Value, Value>,
    },
}

impl Incoming {
    /// Parses one message from the body text.
    ///
    /// A JSON array (a batch) is refused: MCP removed batching in 2025-06-18. serde_json's recursion
    /// limit (128) stays on, so deeply nested bodies fail cleanly as parse errors.
    pub fn parse(body: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(body).map_err(|e| Error::Parse(e.to_string()))?;
        Self::from_value(value)
    }

    /// Classifies an already parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self> {
        let mut obj = match value {
            Value::Object(o) => o,
            Value::Array(_) => {
                return Err(Error::InvalidRequest(
                    "Invalid Request: JSON-RPC batches are not supported (removed in MCP 2025-06-18); send one message per POST".into(),
                ))
            }
            _ => {
                return Err(Error::InvalidRequest(
                    "Invalid Request: the body must be one JSON-RPC message object".into(),
                ))
            }
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(Error::InvalidRequest(
                "Invalid Request: \"jsonrpc\" must be \"2.0\"".into(),
            ));
        }
        if let Some(method) = obj.remove("method") {
            let Value::String(method) = method else {
                return Err(Error::InvalidRequest(
                    "Invalid Request: \"method\" must be a string".into(),
                ));
            };
            let params = match obj.remove("params") {
                None => None,
                Some(p @ Value::Object(_)) => Some(p),
                Some(_) => {
                    return Err(Error::InvalidRequest(
                        "Invalid Request: \"params\" must be an object".into(),
                    ))
                }
            };
            return Ok(match obj.get("id") {
                None => Incoming::Notification { method, params },
                Some(id) => Incoming::Request {
                    id: RequestId::from_value(id)?,
                    method,
                    params,
                },
            });
        }
        let Some(id) = obj.get("id") else {
            return Err(Error::InvalidRequest(
                "Invalid Request: a message needs \"method\" (request or notification) or \"id\" with \"result\"/\"error\" (response)".into(),
            ));
        };
        let id = RequestId::from_value(id)?;
        let outcome = match (obj.remove("result"), obj.remove("error")) {
            (Some(r), None) => Ok(r),
            (None, Some(e)) => Err(e),
            _ => {
                return Err(Error::InvalidRequest(
                    "Invalid Request: a response needs exactly one of \"result\" and \"error\""
                        .into(),
                ))
            }
        };
        Ok(Incoming::Response { id, outcome })
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Incoming::Request { method, .. } | Incoming::Notification { method, .. } => {
                Some(method)
            }
            Incoming::Response { .. } => None,
        }
    }
}

/// A successful response.
pub fn response(id: &RequestId, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.as_value(), "result": result })
}

/// An error response; `id` is `None` when the request could not be read far enough to know it.
pub fn error_response(id: Option<&RequestId>, err: &Error) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.map(RequestId::as_value).unwrap_or(&Value::Null),
        "error": err.to_rpc_error(),
    })
}

/// A notification the server sends.
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// The `notifications/progress` of one call, for every `ToolContext` that reports progress: sent
/// only when the request asked for it (`progressToken` in `_meta`), and only for finite values
/// that increase, as the specification requires.
pub struct Progress {
    token: Option<Value>,
    last: std::cell::Cell<Option<f64>>,
}

impl Progress {
    /// The progress of a call whose request carried `meta`.
    pub fn of(meta: &Value) -> Self {
        Progress {
            token: meta.get("progressToken").cloned(),
            last: std::cell::Cell::new(None),
        }
    }

    /// The notification to send for `progress`, or `None` when none is due.
    pub fn notification(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Option<Value> {
        let token = self.token.as_ref()?;
        if !progress.is_finite() || self.last.get().is_some_and(|l| progress <= l) {
            return None;
        }
        self.last.set(Some(progress));
        let num = crate::engine::expr::num;
        let mut params = json!({ "progressToken": token, "progress": num(progress) });
        if let Some(t) = total {
            params["total"] = num(t);
        }
        if let Some(m) = message {
            params["message"] = json!(m);
        }
        Some(notification("notifications/progress", params))
    }
}

/// The `notifications/message` of a log line of tool `tool`.
pub fn log_message(tool: &str, level: crate::mcp::logging::LogLevel, data: Value) -> Value {
    let params = json!({ "level": level.as_str(), "logger": tool, "data": data });
    notification("notifications/message", params)
}

/// A request the server sends to the client.
pub fn server_request(id: &str, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// Reads `params` as an object, treating absent params as empty.
pub fn params_object(params: Option<&Value>) -> Map<String, Value> {
    params
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// A required string parameter; missing or mistyped is `-32602` naming it.
pub fn required_str<'a>(params: &'a Map<String, Value>, name: &str) -> Result<&'a str> {
    params
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParams(format!("Invalid params: {name} (string) is required")))
}

/// An optional object parameter (absent means `{}`); any other type is `-32602` naming it.
pub fn optional_object(params: &Map<String, Value>, name: &str) -> Result<Value> {
    match params.get(name) {
        None => Ok(json!({})),
        Some(v @ Value::Object(_)) => Ok(v.clone()),
        Some(_) => Err(Error::InvalidParams(format!(
            "Invalid params: {name} must be an object"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_requests_notifications_and_responses() {
        let r = Incoming::parse(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        assert!(matches!(r, Incoming::Request { ref method, .. } if method == "ping"));
        let n =
            Incoming::parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(n, Incoming::Notification { .. }));
        let s = Incoming::parse(r#"{"jsonrpc":"2.0","id":"s-1","result":{"action":"accept"}}"#)
            .unwrap();
        assert!(matches!(s, Incoming::Response { outcome: Ok(_), .. }));
    }

    #[test]
    fn rejects_bad_messages_with_the_right_code() {
        assert_eq!(Incoming::parse("{nope").unwrap_err().rpc_code(), -32700);
        assert_eq!(Incoming::parse("[]").unwrap_err().rpc_code(), -32600);
        assert_eq!(Incoming::parse("42").unwrap_err().rpc_code(), -32600);
        assert_eq!(
            Incoming::parse(r#"{"id":1,"method":"ping"}"#)
                .unwrap_err()
                .rpc_code(),
            -32600
        );
        assert_eq!(
            Incoming::parse(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#)
                .unwrap_err()
                .rpc_code(),
            -32600
        );
        assert_eq!(
            Incoming::parse(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#)
                .unwrap_err()
                .rpc_code(),
            -32600
        );
        assert_eq!(
            Incoming::parse(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#)
                .unwrap_err()
                .rpc_code(),
            -32600
        );
    }

    #[test]
    fn deep_nesting_is_a_parse_error_not_a_crash() {
        let body = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(Incoming::parse(&body).unwrap_err().rpc_code(), -32700);
    }

    #[test]
    fn big_integer_ids_round_trip_exactly() {
        let r =
            Incoming::parse(r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}"#).unwrap();
        let Incoming::Request { id, .. } = r else {
            panic!("not a request")
        };
        assert_eq!(
            response(&id, json!({})).to_string(),
            r#"{"id":9007199254740993,"jsonrpc":"2.0","result":{}}"#
        );
    }
}
