//! The tools that keep state in a session ([`super::SESSION_TOOLS`]: chain executions, the travel
//! assistant's mode) for 2026-07-28 callers. A signed-in caller's calls of these tools run in a
//! session object of their own, named after the user and opened on first use, so chain runs are
//! addressed by their execution ids from any later request of the same user (and of nobody else:
//! the object checks the owner), background runs are driven by its alarm, and a paused step is
//! resumed with `resume_chain`. That object declares no client capabilities, so a step that would
//! ask the client's model pauses; when the request declared `sampling`, the pause is answered as an
//! `input_required` round (see [`call`]) instead of leaving the client to call `resume_chain`.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use worker::{Env, Headers, Method, RequestInit, Response};

use super::call;
use super::platform::StatelessPlatform;
use crate::clock;
use crate::edge::http::{json_response, EVENT_STREAM};
use crate::error::{Error, Result};
use crate::mcp::message::{response, RequestId};
use crate::mcp::modern::Request;
use crate::mcp::request_state::{self, arguments_hash, Binding, PausedStep, State};
use crate::mcp::{modern, version, SERVER_VERSION};
use crate::random;
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

/// The tools whose run can pause at a step that asks the client's model.
const PAUSING: &[&str] = &["execute_chain", "resume_chain"];

/// Sends `tools/call name(arguments)` to the caller's run session, opening it on first use;
/// returns the HTTP status and the JSON-RPC reply.
async fn call_tool(
    env: &Env,
    session: &str,
    caller: &Caller,
    id: &RequestId,
    name: &str,
    arguments: Value,
) -> Result<(u16, Value)> {
    let call = json!({ "jsonrpc": "2.0", "id": id.as_value(), "method": "tools/call", "params": {
        "name": name, "arguments": arguments,
    }});
    let mut answer = send(env, session, caller, &call, false).await?;
    if answer.status_code() == 404 {
        open(env, session, caller).await?;
        answer = send(env, session, caller, &call, false).await?;
    }
    reply_of(answer).await
}

/// The execution id a chain tool's text names when it reports a paused run.
fn execution_in(result: &Value) -> Option<String> {
    let text = result["content"].as_array()?.iter().find_map(|c| {
        let t = c["text"]
            .as_str()
            .filter(|t| t.contains("awaiting_input"))?;
        let at = t.find("exec-")?;
        t.get(at..at + 37).map(str::to_string)
    })?;
    let hex = text.strip_prefix("exec-")?;
    (hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(text)
}

/// The steps of `execution` paused in `awaiting_input`, as sampling requests by key.
async fn paused_steps(
    env: &Env,
    session: &str,
    caller: &Caller,
    id: &RequestId,
    execution: &str,
) -> Result<(Map<String, Value>, Vec<PausedStep>)> {
    let (_, status) = call_tool(
        env,
        session,
        caller,
        id,
        "get_chain_status",
        json!({ "execution_id": execution }),
    )
    .await?;
    let report = &status["result"]["structuredContent"];
    let mut asked = Map::new();
    let mut steps = Vec::new();
    if report["status"] != "awaiting_input" {
        return Ok((asked, steps));
    }
    for step in report["steps"].as_array().into_iter().flatten() {
        let awaiting = &step["awaiting"];
        let Some(outputs) = awaiting["output_variables"].as_array() else {
            continue;
        };
        let outputs: Vec<String> = outputs
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        let key = format!("step-{}", step["id"]);
        // The same request a 2025 session's run sends its client's model (`chains/host.rs`).
        asked.insert(
            key.clone(),
            json!({ "method": "sampling/createMessage", "params": {
                "systemPrompt": format!(
                    "{}\n\nAnswer with one JSON object and nothing else. Its keys: {}.",
                    awaiting["instructions"].as_str().unwrap_or(""),
                    outputs.join(", ")
                ),
                "messages": [{ "role": "user", "content": { "type": "text", "text": awaiting["input"] } }],
                "maxTokens": 1000
            }}),
        );
        steps.push(PausedStep {
            key,
            execution: execution.to_string(),
            outputs,
        });
    }
    Ok((asked, steps))
}

/// The outputs the client's answers supply for the paused steps of a state: each answer is a
/// sampling result whose text holds a JSON object with the step's output variables.
fn outputs_of(params: &Map<String, Value>, steps: &[PausedStep]) -> Result<(String, Value)> {
    let responses = params.get("inputResponses").and_then(Value::as_object);
    let mut outputs = Map::new();
    let mut execution = String::new();
    for step in steps {
        let text = responses
            .and_then(|r| r.get(&step.key))
            .and_then(|a| a.pointer("/content/text"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Error::InvalidParams(format!(
                    "Invalid params: inputResponses[{:?}] must be the sampling/createMessage result asked under that key (content.text: a JSON object with {})",
                    step.key,
                    step.outputs.join(", ")
                ))
            })?;
        let answer = crate::tools::chains::json_object_in(text).ok_or_else(|| {
            Error::InvalidParams(format!(
                "Invalid params: inputResponses[{:?}].content.text must hold a JSON object with {}",
                step.key,
                step.outputs.join(", ")
            ))
        })?;
        for name in &step.outputs {
            let value = answer.get(name).ok_or_else(|| {
                Error::InvalidParams(format!(
                    "Invalid params: inputResponses[{:?}].content.text lacks the output {name:?}",
                    step.key
                ))
            })?;
            outputs.insert(name.clone(), value.clone());
        }
        execution.clone_from(&step.execution);
    }
    Ok((execution, Value::Object(outputs)))
}

/// Runs `tools/call` of a session tool for a 2026-07-28 caller in the caller's run session.
///
/// When `execute_chain` or `resume_chain` leaves its run paused at steps that need a model and
/// the request declared `sampling`, the answer is `input_required`: one `sampling/createMessage`
/// per paused step and a sealed `requestState` naming the execution and steps. The retry (same
/// tool, same arguments, the answers in `inputResponses`) supplies the outputs as `resume_chain`
/// would and continues the run, which may pause again the same way.
pub async fn call(
    env: &Env,
    platform: &StatelessPlatform,
    caller: &Caller,
    r: &Request,
) -> Result<Response> {
    let Some(user) = caller.user.as_deref() else {
        return Err(Error::InvalidParams(
            "Invalid params: this tool keeps runs or a mode for its caller, and 2026-07-28 requests without a bearer token have no caller to keep them for; send a token, or call it from a 2025 session (initialize first)".into(),
        ));
    };
    let session = session_of(user);
    let id = &r.id;
    let name = crate::mcp::message::required_str(&r.params, "name")?;
    let arguments = r
        .params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let binding = Binding {
        user: user.to_string(),
        call: format!("tools/call {name}"),
        args: arguments_hash(&arguments),
    };
    let (status, mut body) = match r.params.get("requestState") {
        None => call_tool(env, &session, caller, id, name, arguments).await?,
        Some(token) => {
            let token = token.as_str().ok_or_else(|| {
                Error::InvalidParams(
                    "Invalid params: requestState must be the string the server returned".into(),
                )
            })?;
            let state = request_state::open(
                &call::state_key(platform)?,
                token,
                &binding,
                clock::now_ms(),
            )?;
            if state.steps.is_empty() {
                return Err(Error::InvalidParams(
                    "Invalid params: requestState rejected (it names no paused chain step); send the original request again without requestState and inputResponses".into(),
                ));
            }
            // Checked before the state is spent, so a malformed answer can be corrected.
            let (execution, outputs) = outputs_of(&r.params, &state.steps)?;
            if !call::redeem(platform, &state).await? {
                return Err(call::replayed());
            }
            let resume = json!({ "execution_id": execution, "outputs": outputs });
            call_tool(env, &session, caller, id, "resume_chain", resume).await?
        }
    };
    let Some(result) = body.get_mut("result") else {
        return json_response(&body, status);
    };
    let paused = match execution_in(result) {
        Some(execution) if PAUSING.contains(&name) && r.declares("sampling") => {
            Some(paused_steps(env, &session, caller, id, &execution).await?)
        }
        _ => None,
    };
    let result = match paused {
        Some((asked, steps)) if !steps.is_empty() => {
            let state = State {
                v: 1,
                nonce: random::hex(16)?,
                exchange: steps[0].execution.clone(),
                user: binding.user,
                call: binding.call,
                args: binding.args,
                exp: clock::now_ms() + call::lifetime_ms(platform),
                answers: Map::new(),
                steps,
            };
            json!({
                "resultType": "input_required",
                "inputRequests": asked,
                "requestState": request_state::seal(&call::state_key(platform)?, &state)?,
            })
        }
        _ => modern::complete(result.take()),
    };
    json_response(&response(id, result), 200)
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
