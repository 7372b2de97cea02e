//! The tools that keep state in a session ([`super::SESSION_TOOLS`]: chain executions, the travel
//! assistant's mode) for 2026-07-28 callers, who have no session. Two kinds of object hold it:
//!
//! - **Run objects.** Every `execute_chain` or `execute_workflow` call of a signed-in caller opens
//!   a session object of its own for the run it starts (a fresh 64-hex-digit name, the caller as
//!   its owner), recorded in D1 `run_objects`. The run's execution id is its handle: its
//!   `chain_executions.owner` is that object, so `get_chain_status`, `resume_chain`,
//!   `cancel_chain` and `execute_workflow` with `session_id` find the object from the id, for
//!   the caller who owns it. Each run has the object's job lease, alarm (background runs,
//!   interrupted runs) and event log to itself.
//! - **The caller's own object**, named after the user: the travel assistant's mode, which
//!   belongs to the caller rather than to a run. It also answers every execution id the caller
//!   does not own, so an unknown id and another caller's get the same answer.
//!
//! Calls that run chain steps (`execute_chain`, `resume_chain`, `execute_workflow`) are answered
//! with an SSE stream that starts at once, the final JSON-RPC response its last event (progress
//! notifications before it when the request has a `progressToken`): a client that closes it
//! cancels the run at its next step boundary, with rollback, as `cancel_chain` would (status
//! `cancelled`, "client closed the stream"). A reply that has not started yet cannot tell the
//! server its client left, hence the stream; and a Durable Object request with a body is not
//! aborted when the Worker's client leaves, hence a bodyless watch request beside the call
//! (`wire::Op::RunWatch`; docs/decisions.md has the measurements).
//!
//! Run objects declare no client capabilities, so a step that would ask the client's model
//! pauses; when the request declared `sampling`, the pause is answered as an `input_required`
//! round (see [`call`]) instead of leaving the client to call `resume_chain`.

use futures::channel::mpsc::{unbounded, UnboundedSender};
use futures::future::{select, Either};
use futures::StreamExt;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use worker::web_sys::AbortSignal;
use worker::{Env, Response};

use super::call;
use super::platform::StatelessPlatform;
use crate::clock;
use crate::edge::http::{json_response, EVENT_STREAM};
use crate::error::{Error, Result};
use crate::mcp::message::{error_response, response, RequestId};
use crate::mcp::modern::{self, Request, META_EVENTS_SESSION};
use crate::mcp::request_state::{self, arguments_hash, Binding, PausedStep, State};
use crate::mcp::sse::unnumbered_frame;
use crate::mcp::{version, SERVER_VERSION};
use crate::random;
use crate::registry::{Caller, Platform, SessionState, Statement};
use crate::server::stream::{sse_response, StreamPlan};
use crate::tools::chains::ENDED_OWNER;
use crate::wire::{Lane, ObjectRequest, Op};

/// Seconds between keepalive comments on a run call's stream. workerd notices that the client
/// closed the stream when the Worker next writes to it, so this bounds how late a cancellation is
/// seen (with the run watch's own tick, `wire::Op::RunWatch`).
const KEEPALIVE_SECS: u32 = 1;

/// How old a run object with no execution (its `execute_chain` was refused) gets before its D1
/// row is pruned.
const UNUSED_RUN_OBJECT_MS: f64 = 24.0 * 3600.0 * 1000.0;

/// What tool `name` keeps in a session (`ToolDef::state`).
fn state_of(platform: &dyn Platform, name: &str) -> SessionState {
    platform
        .registry()
        .get(name)
        .map_or(SessionState::None, |t| t.def.state)
}

/// The id of `user`'s own object: 64 hex digits like any session id, derived so every request
/// of the user finds it.
fn session_of(user: &str) -> String {
    Sha256::digest(format!("mcp-edge/stateless-runs\0{user}").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where a call goes.
struct Target {
    /// The object's session id.
    session: String,
    /// A run object (else the caller's own object).
    run: bool,
}

/// The execution id a call of a tool that keeps `state` addresses: `execution_id`, or
/// `execute_workflow`'s `session_id` (which continues the workflow run it names).
fn addressed(state: SessionState, arguments: &Value) -> Option<String> {
    let SessionState::Run {
        addressed_by: Some(field),
        ..
    } = state
    else {
        return None;
    };
    arguments
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// A run object holds an execution it owns, and one it handed over when it ended idle
/// (`tools::chains::ENDED_OWNER`, a signed-in caller's paused run): the execution id still leads
/// back to the run's own object, and that object's row is no unused object's. The SQL of the
/// sessions that may hold `chain_executions e`, for `run_objects.session IN (…)`: so written, the
/// lookup stays on the key (`e.owner IN (r.session, 'ended:' || r.session)` scans `run_objects`).
fn holders_of_e() -> String {
    let len = ENDED_OWNER.len();
    format!(
        "e.owner, CASE WHEN substr(e.owner, 1, {len}) = '{ENDED_OWNER}' THEN substr(e.owner, {}) END",
        len + 1
    )
}

/// The run object of `execution`, when `user` owns it.
async fn run_object_of(
    platform: &dyn Platform,
    user: &str,
    execution: &str,
) -> Result<Option<String>> {
    let rows = platform
        .query(
            &format!(
                "SELECT r.session FROM chain_executions e JOIN run_objects r ON r.session IN ({})
                 WHERE e.id = ?1 AND r.user = ?2",
                holders_of_e()
            ),
            vec![json!(execution), json!(user)],
        )
        .await?;
    Ok(rows
        .first()
        .and_then(|r| r["session"].as_str())
        .map(str::to_string))
}

/// A fresh run object for `user`, recorded in D1 (pruning objects that never got a run).
async fn new_run_object(platform: &dyn Platform, user: &str) -> Result<String> {
    let session = random::hex(32)?;
    let now = clock::now_ms();
    platform
        .batch(vec![
            Statement::new(
                // An object that handed its run over is not unused ([`holders_of_e`]); the owner
                // index answers both probes.
                format!(
                    "DELETE FROM run_objects WHERE created_ms < ?1
                     AND NOT EXISTS (SELECT 1 FROM chain_executions e
                       WHERE e.owner IN (run_objects.session, '{ENDED_OWNER}' || run_objects.session))"
                ),
                vec![json!((now - UNUSED_RUN_OBJECT_MS) as i64)],
            ),
            Statement::new(
                "INSERT INTO run_objects (session, user, created_ms) VALUES (?1, ?2, ?3)",
                vec![json!(session), json!(user), json!(now as i64)],
            ),
        ])
        .await?;
    Ok(session)
}

/// Which object serves `name(arguments)` for `user`: a new run object for a tool that starts a
/// run, the run's object for an execution id the user owns, else the user's own object (the mode
/// tools, and execution ids that are unknown or another caller's: that object answers "not found"
/// for them, the same answer either way).
async fn target_of(
    platform: &dyn Platform,
    user: &str,
    name: &str,
    arguments: &Value,
) -> Result<Target> {
    let own = Target {
        session: session_of(user),
        run: false,
    };
    let state = state_of(platform, name);
    if let Some(execution) = addressed(state, arguments) {
        return Ok(match run_object_of(platform, user, &execution).await? {
            Some(session) => Target { session, run: true },
            None => own,
        });
    }
    if matches!(state, SessionState::Run { starts: true, .. }) {
        return Ok(Target {
            session: new_run_object(platform, user).await?,
            run: true,
        });
    }
    Ok(own)
}

/// How a call is sent to its object.
struct Send<'a> {
    env: &'a Env,
    session: &'a str,
    caller: &'a Caller,
    /// What the run lane asks of the object's `tools/call`.
    lane: Lane,
    /// The client request's signal: the forwarded request is aborted with it.
    signal: Option<&'a AbortSignal>,
}

impl<'a> Send<'a> {
    /// To `session` as `caller`, in the default lane and with no signal.
    fn to(env: &'a Env, session: &'a str, caller: &'a Caller) -> Send<'a> {
        Send {
            env,
            session,
            caller,
            lane: Lane::default(),
            signal: None,
        }
    }

    /// To the same object as the same caller, in the default lane and with no signal.
    fn plain(&self) -> Send<'a> {
        Send::to(self.env, self.session, self.caller)
    }
}

/// Sends one 2025 message to a run or own object as `caller` (`create`: the `initialize` that
/// opens it).
async fn send(to: &Send<'_>, body: &Value, create: bool) -> Result<Response> {
    let op = if create {
        Op::Create
    } else {
        Op::Mcp(to.lane.clone())
    };
    request(to, &op, Some(body)).await
}

/// A request to the object as `caller` asking `op`: a POST of `body`, or a bodyless GET.
async fn request(to: &Send<'_>, op: &Op, body: Option<&Value>) -> Result<Response> {
    let mut r = ObjectRequest::session(to.session, op, to.caller)
        .header("accept", "application/json, text/event-stream")
        .signal(to.signal);
    if let Some(body) = body {
        r = r.json(body)?;
    }
    r.send(to.env).await
}

/// Opens an object for `to.caller` and turns its log messages off (a 2026 reply carries them only
/// when asked, and nothing reads the object's own streams).
async fn open(to: &Send<'_>) -> Result<()> {
    let bare = to.plain();
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version::LATEST, "capabilities": {},
        "clientInfo": { "name": "mcp-edge 2026-07-28 runs", "version": SERVER_VERSION }
    }});
    let created = send(&bare, &init, true).await?;
    // 400: another request opened it first, which is as good.
    if !matches!(created.status_code(), 200 | 400) {
        return Err(Error::Internal(format!(
            "run object not opened: HTTP {}",
            created.status_code()
        )));
    }
    let quiet = json!({ "jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": { "level": "emergency" } });
    send(&bare, &quiet, false).await?;
    Ok(())
}

/// The JSON-RPC messages in complete SSE blocks at the start of `buf`, which keeps the rest.
fn messages_in(buf: &mut Vec<u8>) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
        let block: Vec<u8> = buf.drain(..end + 2).collect();
        let text = String::from_utf8_lossy(&block);
        let data: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
            .collect();
        if let Ok(msg) = serde_json::from_str::<Value>(&data.join("\n")) {
            out.push(msg);
        }
    }
    out
}

/// The reply of an object: the HTTP status and the final JSON-RPC message, the body or the last
/// message of an SSE stream. Notifications on the stream go to `notify` as they arrive.
async fn reply_of(
    mut resp: Response,
    notify: Option<&UnboundedSender<Vec<u8>>>,
) -> Result<(u16, Value)> {
    let status = resp.status_code();
    let streamed = resp
        .headers()
        .get("content-type")?
        .is_some_and(|t| t.starts_with(EVENT_STREAM));
    if !streamed {
        return Ok((status, serde_json::from_str(&resp.text().await?)?));
    }
    let mut body = resp.stream()?;
    let mut buf = Vec::new();
    while let Some(chunk) = body.next().await {
        buf.extend(chunk?);
        for msg in messages_in(&mut buf) {
            if msg.get("result").is_some() || msg.get("error").is_some() {
                return Ok((status, msg));
            }
            if let (Some(tx), Some("notifications/progress")) =
                (notify, msg.get("method").and_then(Value::as_str))
            {
                let _ = tx.unbounded_send(unnumbered_frame("message", &msg.to_string()));
            }
        }
    }
    Err(Error::Internal(
        "the run object's stream ended without a reply".into(),
    ))
}

/// Reads a response to its end (or until the reader is dropped).
async fn drain(mut resp: Response) {
    let Ok(mut body) = resp.stream() else { return };
    while let Some(Ok(_)) = body.next().await {}
}

/// Sends `tools/call name(arguments)` to the object, opening it on first use (or again, after it
/// ended idle: the caller's ownership was checked in D1 or is the object's name); returns the
/// HTTP status and the JSON-RPC reply.
///
/// With `notify` (a driving call), the call goes under an id of its own and is watched: a
/// bodyless request ([`RUN_WATCH_HEADER`]) stays open beside it, so that when the client goes
/// away, the Worker's requests to the object are cancelled and the object sees it. Notifications
/// go to `notify`.
async fn call_tool(
    to: &Send<'_>,
    id: &RequestId,
    name: &str,
    arguments: Value,
    meta: Value,
    notify: Option<&UnboundedSender<Vec<u8>>>,
) -> Result<(u16, Value)> {
    let inner = match notify {
        Some(_) => json!(format!("run-{}", random::hex(12)?)),
        None => id.as_value().clone(),
    };
    let call = json!({ "jsonrpc": "2.0", "id": inner, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": meta,
    }});
    let mut answer = send(to, &call, false).await?;
    if answer.status_code() == 404 {
        open(to).await?;
        answer = send(to, &call, false).await?;
    }
    let (status, mut reply) = match (notify, inner.as_str()) {
        (Some(_), Some(key)) if answer.status_code() == 200 => {
            let bare = Send {
                lane: Lane::default(),
                ..*to
            };
            let watch = request(&bare, &Op::RunWatch(key.to_string()), None).await?;
            let reply = Box::pin(reply_of(answer, notify));
            match select(reply, Box::pin(drain(watch))).await {
                Either::Left((reply, _)) => reply?,
                Either::Right((_, reply)) => reply.await?,
            }
        }
        _ => reply_of(answer, notify).await?,
    };
    if reply.get("id").is_some() {
        reply["id"] = id.as_value().clone();
    }
    Ok((status, reply))
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
    to: &Send<'_>,
    id: &RequestId,
    execution: &str,
) -> Result<(Map<String, Value>, Vec<PausedStep>)> {
    let (_, status) = call_tool(
        to,
        id,
        "get_chain_status",
        json!({ "execution_id": execution }),
        json!({}),
        None,
    )
    .await?;
    let report = &status["result"]["structuredContent"];
    let mut asked = Map::new();
    let mut steps = Vec::new();
    for q in crate::server::tasks::step_questions(report) {
        asked.insert(q.key.clone(), q.request);
        steps.push(PausedStep {
            key: q.key,
            execution: execution.to_string(),
            outputs: q.outputs,
        });
    }
    Ok((asked, steps))
}

/// The outputs the client's answers supply for the paused steps of a state: each answer is a
/// sampling result whose text holds a JSON object with the step's output variables.
fn outputs_of(params: &Map<String, Value>, steps: &[PausedStep]) -> Result<(String, Value)> {
    let outputs = crate::server::tasks::step_outputs(
        steps.iter().map(|s| (s.key.as_str(), s.outputs.as_slice())),
        params.get("inputResponses").and_then(Value::as_object),
    )?;
    let execution = steps
        .last()
        .map(|s| s.execution.clone())
        .unwrap_or_default();
    Ok((execution, Value::Object(outputs)))
}

/// Runs `tools/call` of a session tool for a 2026-07-28 caller in its object (see the module
/// doc): at once as JSON for calls that run no steps, else on an SSE stream.
///
/// When `execute_chain` or `resume_chain` leaves its run paused at steps that need a model and
/// the request declared `sampling`, the answer is `input_required`: one `sampling/createMessage`
/// per paused step and a sealed `requestState` naming the execution and steps. The retry (same
/// tool, same arguments, the answers in `inputResponses`) supplies the outputs as `resume_chain`
/// would and continues the run, which may pause again the same way.
///
/// `user` owns the runs and the mode: the signed-in user's id, or an anonymous caller's sealed id
/// (`super::anonymous`).
pub async fn call(
    env: &Env,
    platform: StatelessPlatform,
    caller: &Caller,
    user: &str,
    r: &Request,
    signal: AbortSignal,
) -> Result<Response> {
    let name = crate::mcp::message::required_str(&r.params, "name")?.to_string();
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
    // A retry with a requestState continues the paused run it names, through resume_chain.
    let (tool, arguments) = match r.params.get("requestState") {
        None => (name.clone(), arguments),
        Some(token) => {
            let token = token.as_str().ok_or_else(|| {
                Error::InvalidParams(
                    "Invalid params: requestState must be the string the server returned".into(),
                )
            })?;
            let state = request_state::open(
                &call::state_key(&platform)?,
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
            if !call::redeem(&platform, &state).await? {
                return Err(call::replayed());
            }
            let resume = json!({ "execution_id": execution, "outputs": outputs });
            ("resume_chain".to_string(), resume)
        }
    };
    let target = target_of(&platform, user, &tool, &arguments).await?;
    let mut lane = Lane {
        stream_at_once: false,
        events: match r.meta().get(META_EVENTS_SESSION).and_then(Value::as_str) {
            // Checked by `StatelessPlatform::open`: the session exists and takes the caller's
            // events.
            Some(events) => Some(events.to_string()),
            // The caller's own object relays only for the calls that ask; a run object keeps
            // relaying its run's events to the session named before.
            None if !target.run => Some(String::new()),
            None => None,
        },
    };
    let mut meta = Map::new();
    if let Some(token) = r.meta().get("progressToken") {
        meta.insert("progressToken".into(), token.clone());
    }
    let pauses = matches!(
        state_of(&platform, &name),
        SessionState::Run { pauses: true, .. }
    );
    let job = Job {
        pauses,
        platform,
        caller: caller.clone(),
        session: target.session,
        id: r.id.clone(),
        binding,
        sampling: r.declares("sampling"),
    };
    if !matches!(
        state_of(&job.platform, &tool),
        SessionState::Run { drives: true, .. }
    ) {
        let to = job.to(env, lane, None);
        let (status, body) =
            call_tool(&to, &job.id, &tool, arguments, Value::Object(meta), None).await?;
        let (status, reply) = job.answer(&to, status, body).await?;
        return json_response(&reply, status);
    }
    lane.stream_at_once = true;
    let (tx, rx) = unbounded();
    let env = env.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let to = job.to(&env, lane, Some(&signal));
        let reply = match call_tool(
            &to,
            &job.id,
            &tool,
            arguments,
            Value::Object(meta),
            Some(&tx),
        )
        .await
        {
            Ok((status, body)) => job.answer(&to, status, body).await.map(|(_, reply)| reply),
            Err(e) => Err(e),
        };
        let reply = reply.unwrap_or_else(|e| {
            if !e.is_public() {
                crate::log::error!("{}", json!({ "run_lane": e.to_string() }));
            }
            error_response(Some(&job.id), &e)
        });
        let _ = tx.unbounded_send(unnumbered_frame("message", &reply.to_string()));
    });
    let resp = sse_response(
        StreamPlan {
            prefix: b": run started\n\n".to_vec(),
            keepalive_secs: KEEPALIVE_SECS,
            max_secs: None,
        },
        rx,
    )?;
    let resp_headers = crate::edge::http::mutable_headers(&resp)?;
    resp_headers.set("x-accel-buffering", "no")?;
    Ok(resp.with_headers(resp_headers))
}

/// One call on its way to its object, and what its answer needs.
struct Job {
    platform: StatelessPlatform,
    caller: Caller,
    session: String,
    id: RequestId,
    /// The tool the client called (`execute_chain` for a retry that resumes its run) can pause
    /// at a step that asks the client's model.
    pauses: bool,
    binding: Binding,
    sampling: bool,
}

impl Job {
    fn to<'a>(&'a self, env: &'a Env, lane: Lane, signal: Option<&'a AbortSignal>) -> Send<'a> {
        Send {
            lane,
            signal,
            ..Send::to(env, &self.session, &self.caller)
        }
    }

    /// The 2026 reply to the object's reply: `input_required` for a run paused at model steps
    /// when the request declared `sampling`, else the result marked complete (or the error).
    async fn answer(&self, to: &Send<'_>, status: u16, mut body: Value) -> Result<(u16, Value)> {
        let Some(result) = body.get_mut("result") else {
            return Ok((status, body));
        };
        let plain = to.plain();
        let paused = match execution_in(result) {
            Some(execution) if self.pauses && self.sampling => {
                Some(paused_steps(&plain, &self.id, &execution).await?)
            }
            _ => None,
        };
        let result = match paused {
            Some((asked, steps)) if !steps.is_empty() => {
                let state = State {
                    v: 1,
                    nonce: random::hex(16)?,
                    exchange: steps[0].execution.clone(),
                    user: self.binding.user.clone(),
                    call: self.binding.call.clone(),
                    args: self.binding.args.clone(),
                    exp: clock::now_ms() + call::lifetime_ms(&self.platform),
                    answers: Map::new(),
                    asked: steps.iter().map(|s| s.key.clone()).collect(),
                    steps,
                };
                json!({
                    "resultType": "input_required",
                    "inputRequests": asked,
                    "requestState": request_state::seal(&call::state_key(&self.platform)?, &state)?,
                })
            }
            _ => modern::complete(result.take()),
        };
        Ok((200, response(&self.id, result)))
    }
}

/// The session id of the object that keeps 2026-07-28 task `id` (`server::tasks`): derived from
/// the id, so every request naming the task finds it, and opened for the caller who created it.
fn task_object(id: &str) -> String {
    Sha256::digest(format!("mcp-edge/task\0{id}").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `id` has the form of a task id this server hands out (`task-` and 32 hex digits).
fn task_id_form(id: &str) -> bool {
    id.strip_prefix("task-")
        .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Sends task object request `method(params)` as `to.caller`; its result, or the error it
/// answered (an object that does not exist, or belongs to another caller, is an unknown task).
/// `reopen`: the object is a run object the caller's ownership was checked for in D1, opened
/// again when it ended idle (as [`call_tool`] does), since its run outlives it.
async fn task_request(
    to: &Send<'_>,
    id: &str,
    method: &str,
    params: Value,
    reopen: bool,
) -> Result<Value> {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let mut resp = send(to, &body, false).await?;
    if reopen && resp.status_code() == 404 {
        open(to).await?;
        resp = send(to, &body, false).await?;
    }
    if resp.status_code() != 200 {
        drain(resp).await;
        return Err(crate::server::tasks::unknown(id));
    }
    let (_, mut reply) = reply_of(resp, None).await?;
    if let Some(result) = reply.get_mut("result") {
        return Ok(result.take());
    }
    let message = reply["error"]["message"]
        .as_str()
        .unwrap_or("the task's object refused the request")
        .to_string();
    Err(match reply["error"]["code"].as_i64() {
        Some(crate::error::code::INVALID_PARAMS) => Error::InvalidParams(message),
        _ => Error::Internal(message),
    })
}

/// Creates a scripted task of tool `name` for `caller` in an object of its own (2026-07-28,
/// `server::tasks`): its `CreateTaskResult`, answered once the task is kept.
pub async fn create_task(
    env: &Env,
    caller: &Caller,
    name: &str,
    arguments: Value,
    answers: Map<String, Value>,
) -> Result<Value> {
    let id = crate::server::tasks::new_id()?;
    let session = task_object(&id);
    let to = Send::to(env, &session, caller);
    open(&to).await?;
    let params = json!({ "taskId": id, "name": name, "arguments": arguments, "answers": answers });
    task_request(&to, &id, crate::server::tasks::OBJECT_CREATE, params, false).await
}

/// Runs a chain tool (`r`, a `tools/call`) as a 2026-07-28 task for `user`: the execution
/// starts in the background in a run object of its own, with the arguments rewritten by the
/// tool's declared `background` (`registry::task::TaskRun`), and its id is the task's. Answers the
/// JSON-RPC reply: the `CreateTaskResult`, or the call's own answer when no run started (a
/// refusal, a chain that does not validate).
pub async fn create_chain_task(
    env: &Env,
    platform: &StatelessPlatform,
    caller: &Caller,
    user: &str,
    background: crate::registry::task::Background,
    r: &Request,
) -> Result<Value> {
    let name = crate::mcp::message::required_str(&r.params, "name")?;
    let arguments = background(
        r.params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| json!({})),
    );
    let target = target_of(platform, user, name, &arguments).await?;
    let to = Send::to(env, &target.session, caller);
    let (_, mut reply) = call_tool(&to, &r.id, name, arguments, json!({}), None).await?;
    let Some(result) = reply.get_mut("result") else {
        return Ok(reply);
    };
    let Some(execution) = crate::tools::chains::started_execution(result) else {
        *result = modern::complete(result.take());
        return Ok(reply);
    };
    let params = json!({ "taskId": execution });
    let detailed = task_request(
        &to,
        &execution,
        crate::server::tasks::OBJECT_GET,
        params,
        true,
    )
    .await?;
    Ok(response(&r.id, crate::server::tasks::created_of(detailed)))
}

/// 2026-07-28 `tasks/get`, `tasks/update` or `tasks/cancel` from `caller`, answered by the task's
/// object: a scripted task's own, or (`runner`: the platform and the user who owns the runs, as in
/// [`call`]) a chain task's run object, the execution's when that user owns it.
pub async fn task(
    env: &Env,
    caller: &Caller,
    runner: Option<(&StatelessPlatform, &str)>,
    r: &Request,
) -> Result<Value> {
    let id = crate::server::tasks::task_id(&r.params)?;
    let method = crate::server::tasks::object_method(&r.method)
        .ok_or_else(|| Error::MethodNotFound(format!("{} is not a tasks method", r.method)))?;
    let (session, run) = match runner {
        Some((platform, user)) if crate::server::tasks::is_chain_task(id) => (
            run_object_of(platform, user, id)
                .await?
                .ok_or_else(|| crate::server::tasks::unknown(id))?,
            true,
        ),
        None if task_id_form(id) => (task_object(id), false),
        _ => return Err(crate::server::tasks::unknown(id)),
    };
    let to = Send::to(env, &session, caller);
    let mut params = r.params.clone();
    params.remove("_meta");
    task_request(&to, id, method, Value::Object(params), run).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_task_has_its_own_object_of_the_session_id_form() {
        let id = "task-0123456789abcdef0123456789abcdef";
        assert!(task_id_form(id));
        assert!(!task_id_form("task-1") && !task_id_form("exec-0123456789abcdef0123456789abcdef"));
        assert!(crate::wire::valid_session_id(&task_object(id)));
        assert_ne!(task_object(id), session_of(id));
    }

    #[test]
    fn each_user_has_one_own_object_of_the_session_id_form() {
        let a = session_of("u1");
        assert_eq!(a, session_of("u1"));
        assert_ne!(a, session_of("u2"));
        assert!(crate::wire::valid_session_id(&a));
    }

    #[test]
    fn calls_address_runs_by_execution_id_or_workflow_session_id() {
        let registry = crate::registry::Registry::new(crate::tools::catalog(
            crate::tools::Catalog::Production,
        ))
        .expect("the production registry builds");
        let addressed = |name: &str, arguments: &Value| {
            let state = registry
                .get(name)
                .map_or(SessionState::None, |t| t.def.state);
            super::addressed(state, arguments)
        };
        let id = json!({ "execution_id": "exec-1", "session_id": "exec-2" });
        assert_eq!(addressed("cancel_chain", &id).as_deref(), Some("exec-1"));
        assert_eq!(
            addressed("execute_workflow", &id).as_deref(),
            Some("exec-2")
        );
        assert_eq!(addressed("execute_workflow", &json!({})), None);
        assert_eq!(addressed("execute_chain", &id), None);
        assert_eq!(
            addressed("get_chain_status", &json!({ "execution_id": 7 })),
            None
        );
    }

    #[test]
    fn stream_blocks_yield_their_messages_and_keep_the_rest() {
        let mut buf =
            b": run started\n\nevent: message\ndata: {\"a\":1}\n\nevent: message\ndata: {\"b\""
                .to_vec();
        assert_eq!(messages_in(&mut buf), vec![json!({ "a": 1 })]);
        assert_eq!(buf, b"event: message\ndata: {\"b\"".to_vec());
        buf.extend(b":2}\n\n");
        assert_eq!(messages_in(&mut buf), vec![json!({ "b": 2 })]);
        assert!(buf.is_empty());
    }
}
