//! `POST /sessions/:id/chat`: a chat turn run by the session's object, and `POST /sessions` (a
//! chat-only session) and `GET /sessions/:id/chat` (the stored conversation).
//!
//! A turn: the user's message and the stored conversation go to the model provider with a system
//! prompt listing the tools the session's user may use (`engine::chat::prompt`). The streamed
//! answer is decoded (`engine::chat::stream`) and parsed (`engine::chat::parser`); its text goes
//! to the client as `text` events while the tool call tags are held back. The calls of one answer
//! to tools annotated read-only run in parallel through the executor (roles, validation, timeouts,
//! redaction, the session's event log), their results go back to the model (neutralised: tool
//! output is data, `engine::chat`), and the loop asks again until the model answers without a call
//! or `CHAT_MAX_STEPS` model requests were made.
//!
//! Any other call waits for the user: the turn stores the step, sends an `approval_required` event
//! naming the held calls and a random approval id, and ends (`done` with reason
//! `approval_required`). Only a later request of the user decides: `{"approve": "<id>"}` runs the
//! held calls (with the roles of that request) and goes on with the model, `{"deny": "<id>"}` tells
//! the model they were refused; a new `{"message": …}` drops them. The model never sees the id, and
//! nothing it writes can decide, so an instruction planted in a ticket runs nothing unasked.
//!
//! What is stored: each step is written in one statement once it is complete — the user's message
//! with the first step, then the model's answer with the results of its calls — so the
//! conversation never holds a call without its results. A step that fails (the provider refuses,
//! times out, breaks off) stores nothing: when the first step fails the turn left no trace and the
//! same message can simply be sent again.
//!
//! One turn at a time per session: a second `POST` while one runs gets 409. Who may chat follows
//! the dashboard's rule: a session opened with a token only with a token of the same user (tools
//! then run with that token's roles), an anonymous one by whoever holds its id (tools run as
//! anonymous, whoever asks).

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::time::Duration;

use futures::channel::mpsc::{unbounded, UnboundedSender};
use futures::future::{join_all, select, Either};
use futures::stream::LocalBoxStream;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use worker::web_sys::AbortSignal;
use worker::{Delay, Env, Fetch, Headers, Method, Request, RequestInit, Response};

use super::{Core, Session};
use crate::clock;
use crate::edge::http::{json_response, JSON};
use crate::engine::chat::parser::{Item, Parser};
use crate::engine::chat::stream::{chunk_of, Chunk, Decoder};
use crate::engine::chat::{
    feedback_message, next, prompt, provider_messages, result_text, Feedback, Message, Next, Step,
};
use crate::error::{Error, Result};
use crate::mcp::sse::unnumbered_frame;
use crate::registry::call::CallContext;
use crate::registry::{execute, Caller, EnvServices};
use crate::server::levels;
use crate::server::stream::{sse_response, StreamPlan};

/// The model Workers AI runs when `MODEL_PROVIDER_MODEL` names none.
const WORKERS_AI_DEFAULT_MODEL: &str = "@cf/meta/llama-3.1-8b-instruct";

thread_local! {
    /// Sessions with a turn under way in this wasm instance. An instance reset ends the turns too,
    /// so memory is the right place for it.
    static RUNNING: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
}

/// The running turn of a session; released when the turn ends however it ends.
struct TurnLock(String);

impl TurnLock {
    fn take(session: &str) -> Result<TurnLock> {
        if RUNNING.with(|r| r.borrow_mut().insert(session.to_string())) {
            Ok(TurnLock(session.to_string()))
        } else {
            Err(Error::Conflict(
                "Conflict: a chat turn of this session is still running; wait for its done event, then send the next message".into(),
            ))
        }
    }
}

impl Drop for TurnLock {
    fn drop(&mut self) {
        RUNNING.with(|r| r.borrow_mut().remove(&self.0));
    }
}

/// Where the model runs.
enum Provider {
    /// An OpenAI-compatible chat completions URL (`MODEL_PROVIDER_URL`).
    Http {
        url: String,
        key: Option<String>,
        model: String,
    },
    /// The Workers AI binding `AI`.
    WorkersAi { model: String },
}

impl Provider {
    /// The configured provider: `MODEL_PROVIDER_URL` first, else a Workers AI binding named `AI`.
    fn configured(core: &Core, env: &Env) -> Result<Provider> {
        let setting = |name: &str| core.deployment.services.setting(name);
        if let Some(url) = setting("MODEL_PROVIDER_URL") {
            return Ok(Provider::Http {
                url,
                key: setting("MODEL_PROVIDER_KEY"),
                model: setting("MODEL_PROVIDER_MODEL").unwrap_or_else(|| "default".into()),
            });
        }
        if env.ai("AI").is_ok() {
            return Ok(Provider::WorkersAi {
                model: setting("MODEL_PROVIDER_MODEL")
                    .unwrap_or_else(|| WORKERS_AI_DEFAULT_MODEL.into()),
            });
        }
        Err(Error::Unavailable(
            "Service Unavailable: no model provider is configured for chat; set MODEL_PROVIDER_URL (an OpenAI-compatible chat completions URL), MODEL_PROVIDER_KEY (as a secret) and MODEL_PROVIDER_MODEL, or bind Workers AI as AI".into(),
        ))
    }
}

/// What a `POST /sessions/:id/chat` asks for.
#[derive(Debug, PartialEq)]
enum Input {
    /// A user's message: a new turn (dropping any call still awaiting approval).
    Message(String),
    /// The user's decision on the calls held under an approval id.
    Decision { approval: String, approved: bool },
}

const BODY_SHAPE: &str = "Bad Request: the body must be a JSON object {\"message\": \"…\"}, or {\"approve\": \"<approval id>\"} / {\"deny\": \"<approval id>\"} to decide the calls an approval_required event named";

/// The request body, checked.
fn chat_input(body: &str, max_chars: u32) -> Result<Input> {
    let req: serde_json::Map<String, Value> = serde_json::from_str(body)
        .map_err(|e| Error::InvalidRequest(format!("{BODY_SHAPE} ({e})")))?;
    for (key, approved) in [("approve", true), ("deny", false)] {
        if let Some(v) = req.get(key) {
            let Some(approval) = v.as_str().filter(|a| !a.is_empty()) else {
                return Err(Error::InvalidRequest(format!(
                    "Bad Request: {key} must be the approval id (a string) of an approval_required event"
                )));
            };
            if req.len() != 1 {
                return Err(Error::InvalidRequest(format!(
                    "Bad Request: send {key} alone; a decision carries no message"
                )));
            }
            return Ok(Input::Decision {
                approval: approval.to_string(),
                approved,
            });
        }
    }
    let Some(message) = req.get("message") else {
        return Err(Error::InvalidRequest(BODY_SHAPE.into()));
    };
    let Value::String(message) = message else {
        return Err(Error::InvalidRequest(
            "Bad Request: message must be a string".into(),
        ));
    };
    if message.trim().is_empty() {
        return Err(Error::InvalidRequest(
            "Bad Request: message is empty; send the text of the user's message".into(),
        ));
    }
    let chars = message.chars().count();
    if chars > max_chars as usize {
        return Err(Error::InvalidRequest(format!(
            "Bad Request: message is {chars} characters long; at most {max_chars} are accepted (CHAT_MAX_MESSAGE_CHARS)"
        )));
    }
    Ok(Input::Message(message.clone()))
}

/// Where the calls awaiting the user's approval are kept (one set per session at a time).
const PENDING_KEY: &str = "chat_pending";

/// Calls of a step held until the user decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Pending {
    /// The approval id the user's decision must name (random, 128 bits, never shown to the model).
    approval: String,
    /// The held calls: event id, tool name, arguments.
    calls: Vec<(String, String, Value)>,
}

/// Takes the held calls out of storage (single use): those under `approval` for a decision, and
/// any for a new message, which drops them.
fn take_pending(core: &Core, input: &Input) -> Result<Option<Pending>> {
    let stored = core
        .db
        .get(PENDING_KEY)?
        .filter(|s| !s.is_empty())
        .and_then(|s| serde_json::from_str::<Pending>(&s).ok());
    match input {
        Input::Message(_) => {
            if stored.is_some() {
                core.db.set(PENDING_KEY, "")?;
            }
            Ok(None)
        }
        Input::Decision { approval, .. } => match stored {
            Some(p) if p.approval == *approval => {
                core.db.set(PENDING_KEY, "")?;
                Ok(Some(p))
            }
            _ => Err(Error::Conflict(format!(
                "Conflict: no tool call of this session awaits approval {approval:?} (it was decided already, or a newer message replaced it); send a new message instead"
            ))),
        },
    }
}

/// The held calls as the client sees them (arguments redacted as in events).
fn shown_calls(core: &Core, calls: &[(String, String, Value)]) -> Vec<Value> {
    calls
        .iter()
        .map(|(id, name, args)| {
            let arguments = core
                .deployment
                .registry
                .get(name)
                .map_or_else(|| args.clone(), |t| t.redact(args));
            json!({ "id": id, "tool": name, "arguments": arguments })
        })
        .collect()
}

/// Who the chat's tools act for: the session's user (with the caller's current roles) for a
/// session opened with a token, which only that user may use; anonymous for an anonymous session,
/// which anyone holding its id may use.
pub(super) fn acting_caller(core: &Core, caller: &Caller) -> Result<Caller> {
    if core.db.get("created_at")?.is_none() {
        return Err(Error::SessionNotFound);
    }
    let owner = core.db.get("user")?.unwrap_or_default();
    if owner.is_empty() {
        core.touch(None)?;
        return Ok(Caller::anonymous());
    }
    if caller.user.as_deref() != Some(owner.as_str()) {
        return Err(Error::Forbidden(
            "Forbidden: this session was started by another user (or you sent no token); use a session of your own (POST /sessions)".into(),
        ));
    }
    core.touch(Some(&super::stored_roles(caller)))?;
    Ok(caller.clone())
}

impl Session {
    /// `POST /sessions`: a session without an MCP client, for chatting; its id (minted by the
    /// Worker) names it everywhere (`/mcp`, `/sessions/:id/events`, `/sessions/:id/chat`).
    pub(super) async fn create_chat(&self, core: &Rc<Core>, caller: &Caller) -> Result<Response> {
        if core.db.get("created_at")?.is_some() {
            return Err(Error::InvalidRequest(
                "Invalid Request: session already exists".into(),
            ));
        }
        self.open(core, caller, &[]).await?;
        let id = &core.session;
        json_response(
            &json!({
                "session_id": id,
                "chat": format!("/sessions/{id}/chat"),
                "events": format!("/sessions/{id}/events"),
            }),
            201,
        )
    }

    /// `GET /sessions/:id/chat`: the stored conversation, and the calls awaiting approval if any
    /// (`pending`), so a reopened page can show their card again.
    pub(super) fn chat_history(&self, core: &Rc<Core>, caller: &Caller) -> Result<Response> {
        acting_caller(core, caller)?;
        let messages: Vec<Value> = core
            .db
            .chat_history()?
            .into_iter()
            .map(|r| json!({ "seq": r.seq, "role": r.role, "content": r.content, "at": r.at }))
            .collect();
        let mut body = json!({ "session_id": core.session, "messages": messages });
        let held = core
            .db
            .get(PENDING_KEY)?
            .filter(|s| !s.is_empty())
            .and_then(|s| serde_json::from_str::<Pending>(&s).ok());
        if let Some(p) = held {
            body["pending"] =
                json!({ "approval": p.approval, "calls": shown_calls(core, &p.calls) });
        }
        json_response(&body, 200)
    }

    /// `POST /sessions/:id/chat`: starts a turn and answers with its SSE stream.
    pub(super) fn chat(
        &self,
        core: &Rc<Core>,
        body: &str,
        signal: Option<AbortSignal>,
        caller: &Caller,
    ) -> Result<Response> {
        let acting = acting_caller(core, caller)?;
        let input = chat_input(body, core.deployment.cfg.chat_max_message_chars)?;
        let provider = Provider::configured(core, &self.env)?;
        let lock = TurnLock::take(&core.session)?;
        let held = take_pending(core, &input)?;
        let (tx, rx) = unbounded();
        let mut turn = Turn {
            core: core.clone(),
            env: self.env.clone(),
            provider,
            caller: acting,
            system: String::new(),
            out: tx,
            signal,
        };
        wasm_bindgen_futures::spawn_local(async move {
            let _lock = lock;
            // The model is offered what tools/list would show: the caller's roles and FlowMind level.
            let level = levels::standing(&*turn.core, &turn.caller)
                .await
                .map(|(_, _, l)| l);
            let tools = turn
                .core
                .deployment
                .registry
                .page_where(None, usize::MAX, &turn.caller, &|t| {
                    levels::allowed(level, t)
                })
                .map(|(tools, _)| tools)
                .unwrap_or_default();
            turn.system = prompt::system_prompt(&tools);
            turn.run(input, held).await;
        });
        sse_response(
            StreamPlan {
                prefix: b": chat turn started\n\n".to_vec(),
                keepalive_secs: core.deployment.cfg.keepalive_secs,
                max_secs: None,
            },
            rx,
        )
    }
}

/// One chat turn in progress.
struct Turn {
    core: Rc<Core>,
    env: Env,
    provider: Provider,
    caller: Caller,
    system: String,
    out: UnboundedSender<Vec<u8>>,
    signal: Option<AbortSignal>,
}

/// Why a model request failed, and whether trying again soon may help.
struct ModelError {
    message: String,
    transient: bool,
}

impl ModelError {
    fn transient(message: String) -> Self {
        ModelError {
            message,
            transient: true,
        }
    }
}

type ByteStream = LocalBoxStream<'static, std::result::Result<Vec<u8>, String>>;

impl Turn {
    /// Sends an event to the client; a client that has gone is not an error (the turn finishes
    /// and is stored).
    fn send(&self, event: &str, data: Value) {
        let _ = self
            .out
            .unbounded_send(unnumbered_frame(event, &data.to_string()));
    }

    fn finish(&self, reason: &str, steps: u32) {
        self.send("done", json!({ "reason": reason, "steps": steps }));
    }

    async fn run(self, input: Input, held: Option<Pending>) {
        let mut history: Vec<Message> = match self.core.db.chat_history() {
            Ok(rows) => rows
                .into_iter()
                .map(|r| Message {
                    role: r.role,
                    content: r.content,
                })
                .collect(),
            Err(e) => return self.storage_failed(&e, 0),
        };
        let mut unsaved = 0;
        match input {
            Input::Message(message) => {
                history.push(Message {
                    role: "user".into(),
                    content: message,
                });
                unsaved = 1;
            }
            Input::Decision { approved, .. } => {
                let calls = held.map(|p| p.calls).unwrap_or_default();
                let feedback = self.decide(&calls, approved).await;
                let content = feedback_message(&feedback);
                if let Err(e) = self
                    .core
                    .db
                    .chat_append(&[("tool", content.as_str())], clock::now_ms() as i64)
                {
                    return self.storage_failed(&e, 0);
                }
                history.push(Message {
                    role: "tool".into(),
                    content,
                });
            }
        }
        let max_steps = self.core.deployment.cfg.chat_max_steps;
        for step_no in 1..=max_steps {
            if self.signal.as_ref().is_some_and(AbortSignal::aborted) {
                return;
            }
            let step = match self.ask_model(&history).await {
                Ok(step) => step,
                Err(e) => {
                    let saved = if step_no == 1 {
                        "Nothing of this turn was saved: send the same message again to retry."
                    } else {
                        "The earlier steps of this turn (tool calls and their results) are saved: send a message such as \"continue\" to go on."
                    };
                    let retry = if e.transient {
                        "The provider may be busy or unreachable; try again in a moment."
                    } else {
                        "Check MODEL_PROVIDER_URL, MODEL_PROVIDER_KEY and MODEL_PROVIDER_MODEL."
                    };
                    self.send(
                        "error",
                        json!({ "kind": "provider", "message": format!("{} {retry} {saved}", e.message) }),
                    );
                    return self.finish("error", step_no);
                }
            };
            history.push(Message {
                role: "assistant".into(),
                content: step.raw.clone(),
            });
            unsaved += 1;
            let mut held = Vec::new();
            if step.needs_feedback() {
                let (feedback, waiting) = self.run_calls(&step, step_no).await;
                held = waiting;
                history.push(Message {
                    role: "tool".into(),
                    content: feedback_message(&feedback),
                });
                unsaved += 1;
            }
            let new = &history[history.len() - unsaved..];
            let rows: Vec<(&str, &str)> = new
                .iter()
                .map(|m| (m.role.as_str(), m.content.as_str()))
                .collect();
            if let Err(e) = self.core.db.chat_append(&rows, clock::now_ms() as i64) {
                return self.storage_failed(&e, step_no);
            }
            unsaved = 0;
            if !held.is_empty() {
                return self.ask_user(held, step_no);
            }
            match next(&step, step_no, max_steps) {
                Next::Answered => return self.finish("answered", step_no),
                Next::Continue => {}
                Next::StepLimit => {
                    self.send(
                        "error",
                        json!({ "kind": "step_limit", "message": format!(
                            "The model was still calling tools after {max_steps} steps, the most one turn may take (CHAT_MAX_STEPS); the results so far are saved: send a message such as \"continue\" to go on."
                        ) }),
                    );
                    return self.finish("step_limit", step_no);
                }
            }
        }
    }

    fn storage_failed(&self, e: &Error, steps: u32) {
        crate::log::error!("chat storage: {e}");
        self.send(
            "error",
            json!({ "kind": "storage", "message": format!("{} The last step was not saved; send your message again.", e.public_message()) }),
        );
        self.finish("error", steps);
    }

    /// Stores `calls` as awaiting the user's approval under a new random id, tells the client
    /// which calls wait (arguments redacted as in events) and how to decide, and ends the turn.
    fn ask_user(&self, calls: Vec<(String, String, Value)>, steps: u32) {
        let approval = match crate::random::hex(16) {
            Ok(a) => a,
            Err(e) => return self.storage_failed(&e, steps),
        };
        let shown = shown_calls(&self.core, &calls);
        let pending = Pending { approval, calls };
        let stored = serde_json::to_string(&pending)
            .map_err(Error::from)
            .and_then(|p| self.core.db.set(PENDING_KEY, &p));
        if let Err(e) = stored {
            return self.storage_failed(&e, steps);
        }
        self.send(
            "approval_required",
            json!({
                "approval": pending.approval,
                "calls": shown,
                "message": "These tools change data, so they run only if you approve: POST {\"approve\": \"<approval>\"} to this chat to run them, or {\"deny\": \"<approval>\"} to refuse; a new message drops them.",
            }),
        );
        self.finish("approval_required", steps);
    }

    /// The user decided on held calls: runs them (approved) or tells the model they were refused.
    async fn decide(&self, calls: &[(String, String, Value)], approved: bool) -> Vec<Feedback> {
        let ctx = self.context();
        let runs = calls.iter().map(|(id, name, args)| {
            let ctx = &ctx;
            async move {
                if approved {
                    return self.run_one(ctx, id, name, args).await;
                }
                let text = "The user declined this call, so it was not run. Do not call it again unless the user asks for it.";
                self.send(
                    "tool_result",
                    json!({ "id": id, "tool": name, "is_error": true, "duration_ms": 0.0,
                            "result": { "content": [{ "type": "text", "text": text }], "isError": true } }),
                );
                Feedback::Result {
                    name: name.clone(),
                    is_error: true,
                    text: text.into(),
                }
            }
        });
        join_all(runs.collect::<Vec<_>>()).await
    }

    fn context(&self) -> CallContext<'_> {
        CallContext::unattended(&*self.core, self.caller.clone(), "a chat turn")
    }

    /// Runs a step's calls to read-only tools in parallel (results stream out as each finishes)
    /// and holds the others for the user's approval. Returns what goes back to the model, in the
    /// order the model wrote the calls, malformed ones last, and the held calls.
    async fn run_calls(
        &self,
        step: &Step,
        step_no: u32,
    ) -> (Vec<Feedback>, Vec<(String, String, Value)>) {
        let ctx = self.context();
        let mut held = Vec::new();
        let mut calls = Vec::new();
        for (i, (name, args)) in step.calls.iter().enumerate() {
            let id = format!("{step_no}.{}", i + 1);
            let asks_first = self
                .core
                .deployment
                .registry
                .get_for(name, &self.caller)
                // A domain write already waits for the user's approval (its confirmation
                // card), so holding it too would ask twice.
                .is_some_and(|t| !t.def.annotations.read_only && !t.def.asks_user());
            if asks_first {
                held.push((id, name.clone(), args.clone()));
                calls.push(Either::Left(futures::future::ready(Feedback::Held {
                    name: name.clone(),
                })));
            } else {
                let ctx = &ctx;
                calls.push(Either::Right(async move {
                    self.run_one(ctx, &id, name, args).await
                }));
            }
        }
        let mut feedback: Vec<Feedback> = join_all(calls).await;
        for (raw, reason) in &step.malformed {
            self.send(
                "error",
                json!({ "kind": "malformed_tool_call", "message": format!("the model wrote a tool call that could not be read: {reason}; it was told and may try again"), "raw": raw }),
            );
            feedback.push(Feedback::Malformed {
                raw: raw.clone(),
                reason: reason.clone(),
            });
        }
        (feedback, held)
    }

    /// Runs one call through the executor (an unknown tool is an error for the model), with its
    /// `tool_call` and `tool_result` events (sensitive values hidden); the model gets the result.
    async fn run_one(&self, ctx: &CallContext<'_>, id: &str, name: &str, args: &Value) -> Feedback {
        let tool = self.core.deployment.registry.get_for(name, &self.caller);
        let shown = tool.map_or_else(|| args.clone(), |t| t.redact(args));
        self.send(
            "tool_call",
            json!({ "id": id, "tool": name, "arguments": shown, "name": name, "args": shown }),
        );
        let (result, duration_ms, outcome) = match tool {
            // FlowMind's levels hold in chat too; its tools are fixed for the turn (the system
            // prompt), so a level change needs no notification here.
            Some(tool) => match levels::refusal(&*self.core, &self.caller, tool).await {
                Some(refused) => (refused, 0.0, "refused"),
                None => {
                    let mut done = execute(tool, ctx, args.clone()).await;
                    levels::after_call(&*self.core, &self.caller, tool, &mut done.result, &|_| {})
                        .await;
                    (done.result, done.duration_ms, done.outcome)
                }
            },
            // A domain tool this user's roles lack: the seed's INSUFFICIENT_PERMISSIONS, which
            // the model can explain, rather than "unknown tool".
            None => match self.core.deployment.registry.forbidden(name, &self.caller) {
                Some(forbidden) => (forbidden, 0.0, "refused"),
                None => {
                    let text = format!(
                    "unknown tool {name:?}: it does not exist or this user may not use it; use one of the tools listed in the system prompt"
                );
                    self.send(
                        "error",
                        json!({ "kind": "unknown_tool", "id": id, "tool": name, "message": text }),
                    );
                    (
                        json!({ "content": [{ "type": "text", "text": text }], "isError": true }),
                        0.0,
                        "unknown_tool",
                    )
                }
            },
        };
        // The call's log line, as on the MCP lanes: whose, which tool, how it went, no arguments.
        crate::log::info!(
            "{}",
            json!({ "user": self.caller.user, "tool": tool.map_or_else(|| name.to_string(), |t| t.def.id()),
                    "outcome": outcome, "ms": duration_ms, "via": "chat" })
        );
        let (is_error, text) = result_text(&result);
        // The chat's stream goes only to the user who asked, who may see what the tool showed
        // them (the model sees it too); the session's event log, which others may watch, keeps
        // it hidden (the executor redacts there).
        self.send(
            "tool_result",
            json!({ "id": id, "tool": name, "is_error": is_error, "duration_ms": duration_ms, "result": result }),
        );
        Feedback::Result {
            name: name.to_string(),
            is_error,
            text,
        }
    }

    /// One model request: streams the answer's text out as it arrives and returns the whole step.
    async fn ask_model(&self, history: &[Message]) -> std::result::Result<Step, ModelError> {
        let mut bytes = self.open(history).await?;
        let timeout = self.core.deployment.cfg.model_timeout_ms;
        let mut decoder = Decoder::new();
        let mut parser = Parser::new();
        let mut step = Step::default();
        let mut chunks = Vec::new();
        loop {
            let wait = Delay::from(Duration::from_millis(u64::from(timeout)));
            match select(bytes.next(), wait).await {
                Either::Left((Some(Ok(b)), _)) => chunks.extend(decoder.push(&b)),
                Either::Left((Some(Err(e)), _)) => {
                    return Err(ModelError::transient(format!(
                        "The connection to the model provider broke off: {e}."
                    )))
                }
                Either::Left((None, _)) => {
                    chunks.extend(std::mem::take(&mut decoder).finish());
                    break;
                }
                Either::Right(_) => {
                    return Err(ModelError::transient(format!(
                    "The model provider sent nothing for {timeout} ms (MODEL_PROVIDER_TIMEOUT_MS)."
                )))
                }
            }
            if self.take_chunks(&mut chunks, &mut parser, &mut step)? {
                break;
            }
        }
        self.take_chunks(&mut chunks, &mut parser, &mut step)?;
        for item in parser.finish() {
            self.show(&item, &mut step);
        }
        Ok(step)
    }

    /// Feeds decoded chunks to the parser; true once the provider said the answer is complete.
    fn take_chunks(
        &self,
        chunks: &mut Vec<Chunk>,
        parser: &mut Parser,
        step: &mut Step,
    ) -> std::result::Result<bool, ModelError> {
        for chunk in chunks.drain(..) {
            match chunk {
                Chunk::Text(t) => {
                    for item in parser.push(&t) {
                        self.show(&item, step);
                    }
                }
                Chunk::Done => return Ok(true),
                Chunk::Error(e) => return Err(ModelError::transient(format!("{e}."))),
            }
        }
        Ok(false)
    }

    fn show(&self, item: &Item, step: &mut Step) {
        if let Item::Text(t) = item {
            self.send("text", json!({ "text": t }));
        }
        step.add(item);
    }

    /// Starts the model request, trying once more after a second when the provider is busy or
    /// unreachable (429, 5xx, network) — nothing has been shown of it yet, so a retry is invisible.
    async fn open(&self, history: &[Message]) -> std::result::Result<ByteStream, ModelError> {
        match self.open_once(history).await {
            Err(e) if e.transient => {
                Delay::from(Duration::from_millis(1000)).await;
                self.open_once(history).await
            }
            other => other,
        }
    }

    async fn open_once(&self, history: &[Message]) -> std::result::Result<ByteStream, ModelError> {
        let timeout = self.core.deployment.cfg.model_timeout_ms;
        let request = async {
            match &self.provider {
                Provider::Http { url, key, model } => {
                    self.open_http(url, key.as_deref(), model, history).await
                }
                Provider::WorkersAi { model } => self.open_workers_ai(model, history).await,
            }
        };
        let wait = Delay::from(Duration::from_millis(u64::from(timeout)));
        match select(Box::pin(request), wait).await {
            Either::Left((r, _)) => r,
            Either::Right(_) => Err(ModelError::transient(format!(
                "The model provider did not answer within {timeout} ms (MODEL_PROVIDER_TIMEOUT_MS)."
            ))),
        }
    }

    async fn open_http(
        &self,
        url: &str,
        key: Option<&str>,
        model: &str,
        history: &[Message],
    ) -> std::result::Result<ByteStream, ModelError> {
        let unreachable = |e: worker::Error| {
            ModelError::transient(format!("The model provider could not be reached: {e}."))
        };
        let body = json!({
            "model": model,
            "messages": provider_messages(&self.system, history),
            "stream": true,
        });
        let headers = Headers::new();
        headers.set("content-type", JSON).map_err(unreachable)?;
        headers
            .set("accept", "text/event-stream")
            .map_err(unreachable)?;
        if let Some(key) = key {
            headers
                .set("authorization", &format!("Bearer {key}"))
                .map_err(unreachable)?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_body(Some(body.to_string().into()));
        let req = Request::new_with_init(url, &init).map_err(unreachable)?;
        let mut resp = Fetch::Request(req).send().await.map_err(unreachable)?;
        let status = resp.status_code();
        if !(200..300).contains(&status) {
            let text = resp.text().await.unwrap_or_default();
            let excerpt: String = text.chars().take(300).collect();
            let message = format!("The model provider answered HTTP {status}: {excerpt}");
            return Err(ModelError {
                message,
                transient: status == 429 || status >= 500,
            });
        }
        let content_type = resp
            .headers()
            .get("content-type")
            .ok()
            .flatten()
            .unwrap_or_default();
        if content_type.starts_with(JSON) {
            // A provider that ignores `stream: true` answers with one completion: read it as one
            // chunk of the stream.
            let text = resp.text().await.map_err(unreachable)?;
            let v: Value = serde_json::from_str(&text).map_err(|_| {
                ModelError::transient("The model provider's answer is not JSON.".into())
            })?;
            let line = match chunk_of(&v) {
                Some(_) => format!("data: {v}\n"),
                None => String::new(),
            };
            return Ok(futures::stream::once(async move { Ok(line.into_bytes()) }).boxed_local());
        }
        let stream = resp.stream().map_err(unreachable)?;
        Ok(stream.map(|r| r.map_err(|e| e.to_string())).boxed_local())
    }

    async fn open_workers_ai(
        &self,
        model: &str,
        history: &[Message],
    ) -> std::result::Result<ByteStream, ModelError> {
        /// Workers AI's input; a struct, because `Ai::run_bytes` converts with
        /// serde-wasm-bindgen, which would turn a `serde_json::Value` object into a JS `Map`.
        #[derive(Serialize)]
        struct Input<'a> {
            messages: Vec<AiMessage<'a>>,
            stream: bool,
        }
        #[derive(Serialize)]
        struct AiMessage<'a> {
            role: &'a str,
            content: &'a str,
        }
        let roles = provider_messages(&self.system, history);
        let messages = roles
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|m| AiMessage {
                        role: m["role"].as_str().unwrap_or("user"),
                        content: m["content"].as_str().unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let ai = self.env.ai("AI").map_err(|e| ModelError {
            message: format!("The Workers AI binding AI is not usable: {e}."),
            transient: false,
        })?;
        let stream = ai
            .run_bytes(
                model,
                Input {
                    messages,
                    stream: true,
                },
            )
            .await
            .map_err(|e| ModelError::transient(format!("Workers AI failed: {e}.")))?;
        Ok(stream.map(|r| r.map_err(|e| e.to_string())).boxed_local())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_must_be_a_non_empty_string_within_the_limit() {
        assert_eq!(
            chat_input(r#"{"message":"Hi"}"#, 10).ok(),
            Some(Input::Message("Hi".into()))
        );
        assert_eq!(
            chat_input(r#"{"message":"ééé"}"#, 3).ok(),
            Some(Input::Message("ééé".into()))
        );
        for (body, want) in [
            ("nope", "must be a JSON object"),
            (r#"{"text":"Hi"}"#, "must be a JSON object"),
            (r#"{"message":5}"#, "must be a string"),
            (r#"{"message":" \n"}"#, "is empty"),
            (r#"{"message":"abcd"}"#, "4 characters long; at most 3"),
            (r#"{"approve":5}"#, "approve must be the approval id"),
            (r#"{"deny":""}"#, "deny must be the approval id"),
            (
                r#"{"approve":"a1","message":"and this"}"#,
                "send approve alone",
            ),
        ] {
            let Err(e) = chat_input(body, 3) else {
                panic!("{body} was accepted")
            };
            assert_eq!(e.http_status(), 400);
            assert!(e.to_string().contains(want), "{body}: {e}");
        }
    }

    #[test]
    fn a_decision_names_its_approval() {
        assert_eq!(
            chat_input(r#"{"approve":"a1"}"#, 3).ok(),
            Some(Input::Decision {
                approval: "a1".into(),
                approved: true
            })
        );
        assert_eq!(
            chat_input(r#"{"deny":"a1"}"#, 3).ok(),
            Some(Input::Decision {
                approval: "a1".into(),
                approved: false
            })
        );
    }

    #[test]
    fn one_turn_per_session_until_it_ends() {
        let first = TurnLock::take("s1").unwrap();
        assert!(matches!(TurnLock::take("s1"), Err(Error::Conflict(_))));
        let other = TurnLock::take("s2");
        assert!(other.is_ok());
        drop(first);
        assert!(TurnLock::take("s1").is_ok());
    }
}
