//! The tools that keep state in a session ([`super::SESSION_TOOLS`]: chain executions, the travel
//! assistant's mode) for 2026-07-28 callers. A signed-in caller's calls of these tools run in a
//! session object of their own, named after the user and opened on first use, so chain runs are
//! addressed by their execution ids from any later request of the same user (and of nobody else:
//! the object checks the owner), background runs are driven by its alarm, and a paused step is
//! resumed with `resume_chain`. That object declares no client capabilities, so a step that would
//! ask the client's model pauses for `resume_chain` instead of replaying the chain.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use worker::{Env, Headers, Method, RequestInit, Response};

use crate::edge::http::{json_response, EVENT_STREAM};
use crate::error::{Error, Result};
use crate::mcp::message::{response, RequestId};
use crate::mcp::{modern, version, SERVER_VERSION};
use crate::registry::Caller;
use crate::session::{CREATE_HEADER, ROLES_HEADER, USER_HEADER};

/// The id of `user`'s run session: 64 hex digits like any session id, derived so every request
/// of the user finds it.
fn session_of(user: &str) -> String {
    Sha256::digest(format!("mcp-edge/stateless-runs\0{user}").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Sends one 2025 message to the run session as `caller`.
async fn send(
    env: &Env,
    session: &str,
    caller: &Caller,
    body: &Value,
    create: bool,
) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    headers.set("accept", "application/json, text/event-stream")?;
    headers.set("mcp-session-id", session)?;
    headers.set(USER_HEADER, caller.user.as_deref().unwrap_or(""))?;
    headers.set(ROLES_HEADER, &caller.roles.join(","))?;
    if create {
        headers.set(CREATE_HEADER, "1")?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(body.to_string().into()));
    let req = worker::Request::new_with_init("https://session.internal/mcp", &init)?;
    let stub = env
        .durable_object("SESSION")?
        .id_from_name(session)?
        .get_stub()?;
    Ok(stub.fetch_with_request(req).await?)
}

/// Opens the run session and turns its log messages off (a 2026 reply carries them only when
/// asked, and this object answers for many requests).
async fn open(env: &Env, session: &str, caller: &Caller) -> Result<()> {
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version::LATEST, "capabilities": {},
        "clientInfo": { "name": "mcp-edge 2026-07-28 runs", "version": SERVER_VERSION }
    }});
    let created = send(env, session, caller, &init, true).await?;
    // 400: another request opened it first, which is as good.
    if !matches!(created.status_code(), 200 | 400) {
        return Err(Error::Internal(format!(
            "run session not opened: HTTP {}",
            created.status_code()
        )));
    }
    let quiet = json!({ "jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": { "level": "emergency" } });
    send(env, session, caller, &quiet, false).await?;
    Ok(())
}

/// The JSON-RPC message of a session reply: the body, or the last message of an SSE stream.
async fn reply_of(mut resp: Response) -> Result<(u16, Value)> {
    let status = resp.status_code();
    let streamed = resp
        .headers()
        .get("content-type")?
        .is_some_and(|t| t.starts_with(EVENT_STREAM));
    let text = resp.text().await?;
    let body = if streamed {
        text.split("\n\n")
            .filter_map(|block| {
                let data: Vec<&str> = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .collect();
                serde_json::from_str::<Value>(&data.join("\n")).ok()
            })
            .filter(|m| m.get("result").is_some() || m.get("error").is_some())
            .last()
            .unwrap_or(Value::Null)
    } else {
        serde_json::from_str(&text)?
    };
    Ok((status, body))
}

/// Runs `tools/call` of a session tool for a 2026-07-28 caller in the caller's run session.
pub async fn call(
    env: &Env,
    caller: &Caller,
    id: &RequestId,
    params: &serde_json::Map<String, Value>,
) -> Result<Response> {
    let Some(user) = caller.user.as_deref() else {
        return Err(Error::InvalidParams(
            "Invalid params: this tool keeps runs or a mode for its caller, and 2026-07-28 requests without a bearer token have no caller to keep them for; send a token, or call it from a 2025 session (initialize first)".into(),
        ));
    };
    let session = session_of(user);
    let call = json!({ "jsonrpc": "2.0", "id": id.as_value(), "method": "tools/call", "params": {
        "name": params.get("name"),
        "arguments": params.get("arguments").cloned().unwrap_or_else(|| json!({})),
    }});
    let mut answer = send(env, &session, caller, &call, false).await?;
    if answer.status_code() == 404 {
        open(env, &session, caller).await?;
        answer = send(env, &session, caller, &call, false).await?;
    }
    let (status, mut body) = reply_of(answer).await?;
    if let Some(result) = body.get_mut("result") {
        *result = modern::complete(result.take());
        return json_response(&response(id, body["result"].take()), 200);
    }
    json_response(&body, status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_user_has_one_run_session_of_the_session_id_form() {
        let a = session_of("u1");
        assert_eq!(a, session_of("u1"));
        assert_ne!(a, session_of("u2"));
        assert!(crate::edge::valid_session_id(&a));
    }
}
