//! MCP tasks, for both eras: the 2026-07-28 extension `io.modelcontextprotocol/tasks` (SEP-2663)
//! and the experimental tasks of 2025-11-25 (docs/decisions.md, "Tasks on both eras").
//!
//! A [`Task`] is a record with a small state machine (`working → input_required ⇄ working →
//! completed | failed | cancelled`; terminal states never change again), rendered in either era's
//! wire shape. Records live in Durable Object storage behind [`TaskStore`] (the session's object
//! on 2025, an object of the task's own on 2026-07-28), so an isolate reset loses nothing. A
//! scripted task (`registry::task::TaskRun::Script`) is advanced whenever it is read
//! ([`Task::advance`]), so no timer has to survive a restart. A task of a chain tool
//! (`TaskRun::Chain`: `execute_chain`, `resume_chain`; `TaskRun::Linked`: `execute_workflow`)
//! has no record of its own: its id is the execution id ([`is_chain_task`]) and [`chain_task`]
//! renders the execution record as a task.
//!
//! What each lane does with a task is [`legacy`] (a 2025 session's `tasks/*` and task-augmented
//! `tools/call`) and [`object`] (the requests the 2026-07-28 lane sends a task's own object).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::clock;
use crate::error::{code, Error, Result};
use crate::registry::task::{Outcome, Script, Step, TaskRun};
use crate::registry::Registry;

/// The extension's identifier (2026-07-28 `capabilities.extensions`).
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How long a task is kept after its last change, in milliseconds (`ttlMs`): one hour.
pub const TTL_MS: u64 = 3_600_000;

/// How often a client should poll `tasks/get`, in milliseconds (`pollIntervalMs`).
pub const POLL_MS: u64 = 500;

/// The `_meta` key of 2025-11-25 results that belong to a task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The work goes on.
    Working,
    /// The work waits for the client's answers to `inputRequests`.
    InputRequired,
    /// Ended with a result (a tool error included).
    Completed,
    /// Ended with a protocol error.
    Failed,
    /// Cancelled by its client.
    Cancelled,
}

impl Status {
    /// Whether the status never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// How a task ends, as stored ([`Outcome`] is what a script says).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ending {
    /// The tool's `CallToolResult`.
    Result {
        /// The result.
        result: Value,
    },
    /// A protocol error.
    Error {
        /// The JSON-RPC error code.
        code: i64,
        /// The message.
        message: String,
    },
}

impl From<Outcome> for Ending {
    fn from(o: Outcome) -> Self {
        match o {
            Outcome::Result(result) => Ending::Result { result },
            Outcome::Error { code, message } => Ending::Error { code, message },
        }
    }
}

/// A task: the record kept in storage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The task id (`task-` and 32 hex digits).
    pub id: String,
    /// The user who created it; empty: an anonymous caller.
    pub owner: String,
    /// The tool called.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// The status.
    pub status: Status,
    /// Created, in ms since the epoch.
    pub created_ms: f64,
    /// Last changed, in ms since the epoch.
    pub updated_ms: f64,
    /// Kept this long after its last change.
    pub ttl_ms: u64,
    /// A working task ends at this time (ms since the epoch) with [`Task::then`].
    pub due_ms: Option<f64>,
    /// How a working task ends at [`Task::due_ms`].
    pub then: Option<Ending>,
    /// How the task ended (terminal statuses but `cancelled`).
    pub ending: Option<Ending>,
    /// The questions still open (key → `{method, params}`).
    pub asked: Map<String, Value>,
    /// The answers given so far (key → the client's result).
    pub answers: Map<String, Value>,
}

impl Task {
    /// A new working task.
    pub fn new(id: &str, owner: &str, tool: &str, arguments: Value, now: f64, ttl_ms: u64) -> Self {
        Task {
            id: id.to_string(),
            owner: owner.to_string(),
            tool: tool.to_string(),
            arguments,
            status: Status::Working,
            created_ms: now,
            updated_ms: now,
            ttl_ms,
            due_ms: None,
            then: None,
            ending: None,
            asked: Map::new(),
            answers: Map::new(),
        }
    }

    fn set(&mut self, status: Status, now: f64) {
        self.status = status;
        self.updated_ms = now;
    }

    /// Applies what a script said to do next. A `Rounds` step belongs before a task exists and
    /// is refused here.
    pub fn apply(&mut self, step: Step, now: f64) -> Result<()> {
        if self.status.is_terminal() {
            return Ok(());
        }
        match step {
            Step::Rounds(_) => {
                return Err(Error::Internal(format!(
                    "task {}: a script asked for call rounds after the task was created",
                    self.id
                )))
            }
            Step::Ask(questions) => {
                self.asked = questions;
                self.due_ms = None;
                self.then = None;
                self.set(Status::InputRequired, now);
            }
            Step::After(ms, outcome) => {
                self.asked = Map::new();
                self.due_ms = Some(now + ms as f64);
                self.then = Some(outcome.into());
                self.set(Status::Working, now);
                self.advance(now);
            }
        }
        Ok(())
    }

    /// Ends a working task whose time has come. Returns whether the status changed.
    pub fn advance(&mut self, now: f64) -> bool {
        match (self.status, self.due_ms) {
            (Status::Working, Some(due)) if due <= now => {
                let ending = self.then.take();
                self.due_ms = None;
                self.end(ending, due.max(self.updated_ms));
                true
            }
            _ => false,
        }
    }

    /// Ends the task with `ending` (`None`: an empty result).
    pub fn end(&mut self, ending: Option<Ending>, now: f64) {
        if self.status.is_terminal() {
            return;
        }
        let ending = ending.unwrap_or(Ending::Result {
            result: json!({ "content": [] }),
        });
        let status = match ending {
            Ending::Result { .. } => Status::Completed,
            Ending::Error { .. } => Status::Failed,
        };
        self.asked = Map::new();
        self.ending = Some(ending);
        self.set(status, now);
    }

    /// Cancels the task unless it already ended. Returns whether it was cancelled now.
    pub fn cancel(&mut self, now: f64) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        self.asked = Map::new();
        self.due_ms = None;
        self.then = None;
        self.set(Status::Cancelled, now);
        true
    }

    /// Takes the client's answers: each answers the open question of its key (other keys are
    /// ignored). Returns whether every question is answered now, so the task works again and its
    /// script says what comes next.
    pub fn answer(&mut self, responses: &Map<String, Value>, now: f64) -> bool {
        if self.status != Status::InputRequired {
            return false;
        }
        let mut took = false;
        for (key, answer) in responses {
            if self.asked.remove(key).is_some() {
                self.answers.insert(key.clone(), answer.clone());
                took = true;
            }
        }
        if took {
            self.updated_ms = now;
        }
        if self.asked.is_empty() {
            self.set(Status::Working, now);
            return true;
        }
        false
    }

    /// Whether the task is past its TTL (counted from its last change).
    pub fn expired(&self, now: f64) -> bool {
        now > self.updated_ms + self.ttl_ms as f64
    }

    fn times(&self) -> (String, String) {
        (
            clock::iso(self.created_ms as i64),
            clock::iso(self.updated_ms as i64),
        )
    }

    /// The 2026-07-28 `Task` fields.
    fn modern_fields(&self) -> Map<String, Value> {
        let (created, updated) = self.times();
        let mut m = Map::new();
        m.insert("taskId".into(), json!(self.id));
        m.insert("status".into(), json!(self.status.as_str()));
        m.insert("createdAt".into(), json!(created));
        m.insert("lastUpdatedAt".into(), json!(updated));
        m.insert("ttlMs".into(), json!(self.ttl_ms));
        m.insert("pollIntervalMs".into(), json!(POLL_MS));
        m
    }

    /// The 2026-07-28 `CreateTaskResult` (flat: `Result & Task`).
    pub fn modern_created(&self) -> Value {
        let mut m = self.modern_fields();
        m.insert("resultType".into(), json!("task"));
        Value::Object(m)
    }

    /// The 2026-07-28 `tasks/get` result (`DetailedTask`): the result, error or open questions
    /// inlined.
    pub fn modern_detailed(&self) -> Value {
        let mut m = self.modern_fields();
        m.insert("resultType".into(), json!("complete"));
        match (&self.status, &self.ending) {
            (Status::Completed, Some(Ending::Result { result })) => {
                m.insert("result".into(), result.clone());
            }
            (Status::Failed, Some(Ending::Error { code, message })) => {
                m.insert("error".into(), json!({ "code": code, "message": message }));
            }
            (Status::InputRequired, _) => {
                m.insert("inputRequests".into(), Value::Object(self.asked.clone()));
            }
            _ => {}
        }
        Value::Object(m)
    }

    /// The 2025-11-25 `Task`.
    pub fn legacy_task(&self) -> Value {
        let (created, updated) = self.times();
        json!({
            "taskId": self.id,
            "status": self.status.as_str(),
            "createdAt": created,
            "lastUpdatedAt": updated,
            "ttl": self.ttl_ms,
            "pollInterval": POLL_MS,
        })
    }

    /// What 2025-11-25 `tasks/result` answers for an ended task: the tool's result with the
    /// related-task `_meta`, or the protocol error; `None` while it is not terminal.
    pub fn legacy_result(&self) -> Option<std::result::Result<Value, Value>> {
        let related = json!({ RELATED_TASK: { "taskId": self.id } });
        match (&self.status, &self.ending) {
            (Status::Completed, Some(Ending::Result { result })) => {
                let mut r = result.clone();
                if let Value::Object(m) = &mut r {
                    let meta = m.entry("_meta").or_insert_with(|| json!({}));
                    if let (Value::Object(meta), Value::Object(rel)) = (meta, related) {
                        meta.extend(rel);
                    }
                }
                Some(Ok(r))
            }
            (Status::Failed, Some(Ending::Error { code, message })) => {
                Some(Err(json!({ "code": code, "message": message })))
            }
            (Status::Cancelled, _) => Some(Err(json!({
                "code": code::INVALID_REQUEST,
                "message": format!("Task {} was cancelled", self.id),
            }))),
            _ => None,
        }
    }
}

/// A new task id: `task-` and 32 random hex digits (the id is also what a 2026-07-28 anonymous
/// caller holds as the capability to the task).
pub fn new_id() -> Result<String> {
    Ok(format!("task-{}", crate::random::hex(16)?))
}

/// The answer to a task id that is unknown, expired or another caller's: all the same.
pub fn unknown(id: &str) -> Error {
    Error::InvalidParams(format!(
        "Invalid params: unknown task {id:?} (tasks expire {} minutes after their last change, and only their creator sees them)",
        TTL_MS / 60_000
    ))
}

/// Where tasks are kept: Durable Object storage.
pub trait TaskStore {
    /// The task `id`, if kept.
    fn load(&self, id: &str) -> Result<Option<Task>>;
    /// Keeps `task` (replacing the record of its id).
    fn save(&self, task: &Task) -> Result<()>;
    /// Forgets task `id`.
    fn delete(&self, id: &str) -> Result<()>;
    /// The ids of the kept tasks, oldest first.
    fn ids(&self) -> Result<Vec<String>>;
}

/// The task `id` of `owner`, advanced to `now`: expired tasks are deleted, and a task of another
/// owner is as unknown as a missing one.
pub fn find(store: &dyn TaskStore, id: &str, owner: &str, now: f64) -> Result<Task> {
    let Some(mut task) = store.load(id)? else {
        return Err(unknown(id));
    };
    if task.owner != owner {
        return Err(unknown(id));
    }
    if task.expired(now) {
        store.delete(id)?;
        return Err(unknown(id));
    }
    if task.advance(now) {
        store.save(&task)?;
    }
    Ok(task)
}

/// The script of tool `name`, if it runs its tasks by one.
pub fn script_of(registry: &Registry, name: &str) -> Option<Script> {
    match registry.get(name)?.def.task.run()? {
        TaskRun::Script(script) => Some(script),
        TaskRun::Chain(_) | TaskRun::Linked(..) => None,
    }
}

/// Creates and keeps a scripted task of tool `name` for `owner`; `answers` are the ones the
/// call's rounds gathered before (2026-07-28 composition of `input_required` and tasks).
#[allow(clippy::too_many_arguments)]
pub fn create(
    store: &dyn TaskStore,
    registry: &Registry,
    id: &str,
    owner: &str,
    name: &str,
    arguments: Value,
    answers: Map<String, Value>,
    ttl_ms: u64,
    now: f64,
) -> Result<Task> {
    let script = script_of(registry, name).ok_or_else(|| {
        Error::InvalidParams(format!(
            "Invalid params: tool {name:?} does not run as a scripted task"
        ))
    })?;
    let mut task = Task::new(id, owner, name, arguments, now, ttl_ms.clamp(1, TTL_MS));
    let step = script(&task.arguments, &answers);
    task.answers = answers;
    task.apply(step, now)?;
    store.save(&task)?;
    Ok(task)
}

/// Gives task `id` the client's `responses`; when every question is answered, its script says
/// what comes next.
pub fn update(
    store: &dyn TaskStore,
    registry: &Registry,
    id: &str,
    owner: &str,
    responses: &Map<String, Value>,
    now: f64,
) -> Result<Task> {
    let mut task = find(store, id, owner, now)?;
    if task.answer(responses, now) {
        let step = match script_of(registry, &task.tool) {
            Some(script) => script(&task.arguments, &task.answers),
            None => Step::After(0, Outcome::Result(json!({ "content": [] }))),
        };
        task.apply(step, now)?;
    }
    store.save(&task)?;
    Ok(task)
}

/// Cancels task `id` (nothing changes for an ended one).
pub fn cancel(store: &dyn TaskStore, id: &str, owner: &str, now: f64) -> Result<Task> {
    let mut task = find(store, id, owner, now)?;
    if task.cancel(now) {
        store.save(&task)?;
    }
    Ok(task)
}

/// The `taskId` param of a `tasks/*` request.
pub fn task_id(params: &Map<String, Value>) -> Result<&str> {
    params.get("taskId").and_then(Value::as_str).ok_or_else(|| {
        Error::InvalidParams(
            "Invalid params: taskId must be the string a CreateTaskResult returned".into(),
        )
    })
}

/// The `inputResponses` param of `tasks/update`.
pub fn input_responses(params: &Map<String, Value>) -> Result<Map<String, Value>> {
    match params.get("inputResponses") {
        Some(Value::Object(m)) => Ok(m.clone()),
        _ => Err(Error::InvalidParams(
            "Invalid params: tasks/update needs inputResponses, an object of answers keyed like the task's inputRequests".into(),
        )),
    }
}

/// The longest a 2025-11-25 `tasks/result` waits for its task to end before it answers that the
/// task is still working (the client asks again).
pub const RESULT_WAIT_MS: f64 = 50_000.0;

/// Whether a 2026-07-28 request declared the tasks extension in its client capabilities.
pub fn declared(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .is_some()
}

/// The -32021 refusal of a 2026-07-28 request that needs the extension it did not declare: the
/// JSON-RPC error object, `data.requiredCapabilities` naming the extension.
pub fn missing_extension(what: &str) -> Value {
    json!({
        "code": code::MISSING_CAPABILITY,
        "message": format!("Missing required client capability: {what} needs the {EXTENSION} extension; declare it in _meta[\"io.modelcontextprotocol/clientCapabilities\"].extensions"),
        "data": { "requiredCapabilities": { "extensions": { EXTENSION: {} } } },
    })
}

/// A 2025-11-25 session's `tasks/*` request (`None`: not a tasks method). `owner` is the
/// session's user; `sleep` waits while `tasks/result` waits for the end.
pub async fn legacy(
    store: &dyn TaskStore,
    owner: &str,
    method: &str,
    params: &Map<String, Value>,
    sleep: &dyn Fn(u32) -> futures::future::LocalBoxFuture<'static, ()>,
) -> Option<Result<Value>> {
    let now = clock::now_ms();
    Some(match method {
        "tasks/get" => task_id(params)
            .and_then(|id| find(store, id, owner, now))
            .map(|t| t.legacy_task()),
        "tasks/cancel" => task_id(params).and_then(|id| {
            let mut task = find(store, id, owner, now)?;
            if !task.cancel(now) {
                return Err(Error::InvalidParams(format!(
                    "Invalid params: task {id:?} already ended ({}); only a working task can be cancelled",
                    task.status.as_str()
                )));
            }
            store.save(&task)?;
            Ok(task.legacy_task())
        }),
        "tasks/list" => list(store, owner, params, now),
        "tasks/result" => {
            let id = match task_id(params) {
                Ok(id) => id.to_string(),
                Err(e) => return Some(Err(e)),
            };
            loop {
                let task = match find(store, &id, owner, clock::now_ms()) {
                    Ok(t) => t,
                    Err(e) => return Some(Err(e)),
                };
                match task.legacy_result() {
                    Some(Ok(result)) => return Some(Ok(result)),
                    Some(Err(e)) => {
                        return Some(Err(Error::Internal(
                            e["message"].as_str().unwrap_or("the task failed").to_string(),
                        )))
                    }
                    None if task.status == Status::InputRequired => {
                        return Some(Err(Error::InvalidRequest(format!(
                            "Invalid Request: task {id:?} waits for input this session cannot ask for on 2025-11-25 tasks; answer it on the 2026-07-28 lane or cancel it"
                        ))))
                    }
                    None if clock::now_ms() - now > RESULT_WAIT_MS => {
                        return Some(Err(Error::Unavailable(format!(
                            "Task {id:?} is still working; call tasks/result again"
                        ))))
                    }
                    None => sleep(POLL_MS as u32).await,
                }
            }
        }
        _ => return None,
    })
}

/// 2025-11-25 `tasks/list`: the session's tasks, oldest first, in pages of 50 (the cursor is
/// the last id of the page before).
fn list(
    store: &dyn TaskStore,
    owner: &str,
    params: &Map<String, Value>,
    now: f64,
) -> Result<Value> {
    const PAGE: usize = 50;
    let ids = store.ids()?;
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => {
            ids.iter()
                .position(|i| i == c)
                .map(|p| p + 1)
                .ok_or_else(|| {
                    Error::InvalidParams(
                        "Invalid params: unknown cursor; call tasks/list without one".into(),
                    )
                })?
        }
        Some(_) => {
            return Err(Error::InvalidParams(
                "Invalid params: cursor must be the nextCursor string of the page before".into(),
            ))
        }
    };
    let mut tasks = Vec::new();
    let mut last = None;
    for id in ids.iter().skip(start) {
        if tasks.len() == PAGE {
            break;
        }
        last = Some(id.clone());
        if let Ok(t) = find(store, id, owner, now) {
            tasks.push(t.legacy_task());
        }
    }
    let mut result = json!({ "tasks": tasks });
    if let Some(last) = last.filter(|l| ids.last() != Some(l)) {
        result["nextCursor"] = json!(last);
    }
    Ok(result)
}

/// The requests a 2026-07-28 task's own object serves for the Worker (`None`: not one of them),
/// answered in that era's shapes: `mcp-edge/tasks/create` (`taskId`, `name`, `arguments`,
/// `answers`) a `CreateTaskResult`; `mcp-edge/tasks/get` the `DetailedTask`;
/// `mcp-edge/tasks/update` and `mcp-edge/tasks/cancel` the empty acknowledgement.
pub fn object(
    store: &dyn TaskStore,
    registry: &Registry,
    owner: &str,
    method: &str,
    params: &Map<String, Value>,
) -> Option<Result<Value>> {
    let now = clock::now_ms();
    let ack = || json!({ "resultType": "complete" });
    Some(match method {
        OBJECT_CREATE => (|| {
            let id = task_id(params)?;
            let name = params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let arguments = params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({}));
            let answers = params
                .get("answers")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let task = create(
                store, registry, id, owner, name, arguments, answers, TTL_MS, now,
            )?;
            Ok(task.modern_created())
        })(),
        OBJECT_GET => task_id(params)
            .and_then(|id| find(store, id, owner, now))
            .map(|t| t.modern_detailed()),
        OBJECT_UPDATE => task_id(params).and_then(|id| {
            update(store, registry, id, owner, &input_responses(params)?, now).map(|_| ack())
        }),
        OBJECT_CANCEL => task_id(params)
            .and_then(|id| cancel(store, id, owner, now))
            .map(|_| ack()),
        _ => return None,
    })
}

/// Whether task id `id` names a chain execution (`exec-` and 32 hex digits): a task of
/// `execute_chain` is the execution itself, read and cancelled through its record
/// (`tools::chains::task_state`, `cancel_chain`), never a [`TaskStore`] record.
pub fn is_chain_task(id: &str) -> bool {
    id.strip_prefix("exec-")
        .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A question a paused chain step asks as a task's input request: the step's outputs, asked of
/// the client's model.
#[derive(Debug, Clone, PartialEq)]
pub struct StepQuestion {
    /// The input request's key (`step-<id>`).
    pub key: String,
    /// The `sampling/createMessage` request.
    pub request: Value,
    /// The output variables the answer must hold.
    pub outputs: Vec<String>,
    /// Whether only the caller's user may answer (an `explicit` step: an approval), never a model.
    pub human: bool,
    /// The step's instructions and input, as a person reads them.
    pub message: String,
}

/// The questions of the steps a `get_chain_status` view shows paused in `awaiting_input`: one
/// `sampling/createMessage` per step, the same request a 2025 session's run sends its client's
/// model (`tools/chains/host.rs`).
pub fn step_questions(view: &Value) -> Vec<StepQuestion> {
    if view["status"] != "awaiting_input" {
        return Vec::new();
    }
    let steps = view["steps"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    steps
        .iter()
        .filter_map(|step| {
            let awaiting = &step["awaiting"];
            let outputs: Vec<String> = awaiting["output_variables"]
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            let request = json!({ "method": "sampling/createMessage", "params": {
                "systemPrompt": format!(
                    "{}\n\nAnswer with one JSON object and nothing else. Its keys: {}.",
                    awaiting["instructions"].as_str().unwrap_or(""),
                    outputs.join(", ")
                ),
                "messages": [{ "role": "user", "content": { "type": "text", "text": awaiting["input"] } }],
                "maxTokens": 1000
            }});
            Some(StepQuestion {
                key: format!("step-{}", step["id"]),
                request,
                human: awaiting["ask"] == "explicit",
                message: format!(
                    "{}\n\n{}",
                    awaiting["instructions"].as_str().unwrap_or(""),
                    awaiting["input"].as_str().unwrap_or("")
                )
                .trim()
                .to_string(),
                outputs,
            })
        })
        .collect()
}

/// How a 2025-11-25 `tasks/result` puts a paused step's question to a client that declared
/// `capabilities`, tagged as task `task_id`'s: `sampling/createMessage` (the 2026-07-28 lane's
/// request) when a model may answer and the client samples, else `elicitation/create` with a form
/// of the step's outputs when the client elicits; `None` when it can do neither.
pub fn legacy_question(
    q: &StepQuestion,
    capabilities: &Value,
    task_id: &str,
) -> Option<(&'static str, Value)> {
    let (method, mut params) = if !q.human && capabilities.get("sampling").is_some() {
        ("sampling/createMessage", q.request["params"].clone())
    } else if capabilities.get("elicitation").is_some() {
        let properties: Map<String, Value> = crate::engine::sort::object(
            q.outputs
                .iter()
                .map(|name| (name.clone(), json!({ "type": "string", "title": name }))),
        );
        let params = json!({
            "message": q.message,
            "requestedSchema": { "type": "object", "properties": properties, "required": q.outputs },
        });
        ("elicitation/create", params)
    } else {
        return None;
    };
    params["_meta"] = json!({ RELATED_TASK: { "taskId": task_id } });
    Some((method, params))
}

/// The outputs the client's answer to [`legacy_question`]'s `method` supplies for step `q`: a
/// sampled message whose text holds a JSON object with them, or an accepted form. A declined or
/// cancelled form supplies none: the step still waits (docs/decisions.md).
pub fn answered_outputs(
    q: &StepQuestion,
    method: &str,
    answer: &Value,
) -> Result<Map<String, Value>> {
    let wanted = q.outputs.join(", ");
    let given = if method == "elicitation/create" {
        match answer["action"].as_str() {
            Some("accept") => answer["content"].as_object().cloned().unwrap_or_default(),
            action => {
                return Err(Error::InvalidRequest(format!(
                    "Invalid Request: the user did not accept the question of {} ({}); the task still waits for input: call tasks/result again to be asked again, supply {wanted} with resume_chain, or cancel the task",
                    q.key,
                    action.unwrap_or("no action")
                )))
            }
        }
    } else {
        answer
            .pointer("/content/text")
            .and_then(Value::as_str)
            .and_then(crate::engine::chat::parser::json_object_in)
            .ok_or_else(|| {
                Error::Failed(format!(
                    "the client's sampling answer to {} holds no JSON object with {wanted}; the task still waits for input",
                    q.key
                ))
            })?
    };
    let mut outputs = Map::new();
    for name in &q.outputs {
        let Some(v) = given.get(name) else {
            return Err(Error::Failed(format!(
                "the client's answer to {} lacks the output {name:?} (wanted: {wanted}); the task still waits for input",
                q.key
            )));
        };
        outputs.insert(name.clone(), v.clone());
    }
    Ok(outputs)
}

/// The outputs the client's `responses` supply for paused steps (`key` → the output variables
/// its answer must hold): each answer is a `sampling/createMessage` result whose text holds a
/// JSON object with them.
pub fn step_outputs<'a>(
    steps: impl IntoIterator<Item = (&'a str, &'a [String])>,
    responses: Option<&Map<String, Value>>,
) -> Result<Map<String, Value>> {
    let mut outputs = Map::new();
    for (key, wanted) in steps {
        let text = responses
            .and_then(|r| r.get(key))
            .and_then(|a| a.pointer("/content/text"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Error::InvalidParams(format!(
                    "Invalid params: inputResponses[{key:?}] must be the sampling/createMessage result asked under that key (content.text: a JSON object with {})",
                    wanted.join(", ")
                ))
            })?;
        let answer = crate::engine::chat::parser::json_object_in(text).ok_or_else(|| {
            Error::InvalidParams(format!(
                "Invalid params: inputResponses[{key:?}].content.text must hold a JSON object with {}",
                wanted.join(", ")
            ))
        })?;
        for name in wanted {
            let value = answer.get(name).ok_or_else(|| {
                Error::InvalidParams(format!(
                    "Invalid params: inputResponses[{key:?}].content.text lacks the output {name:?}"
                ))
            })?;
            outputs.insert(name.clone(), value.clone());
        }
    }
    Ok(outputs)
}

/// A time of an execution record (RFC 3339) in ms since the epoch.
fn ms_of(time: &Value) -> Option<f64> {
    let text = time.as_str()?;
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_millis() as f64)
}

/// The task of chain execution `view` (its `get_chain_status` view; `result`: the
/// `CallToolResult` once it ended): `running` is `working`, `awaiting_input` is `input_required`
/// (its paused steps' questions), `cancelled` is `cancelled`, and every other end is `completed`
/// with the result (`isError` when the run did not complete: a chain's failure is the tool's
/// error, not a protocol error). It lives as long as the execution record.
pub fn chain_task(owner: &str, view: &Value, result: Option<Value>, now: f64) -> Task {
    let created = ms_of(&view["started_at"]).unwrap_or(now);
    let updated = ms_of(&view["finished_at"]).unwrap_or(created);
    let mut task = Task::new(
        view["execution_id"].as_str().unwrap_or_default(),
        owner,
        "execute_chain",
        Value::Null,
        created,
        TTL_MS,
    );
    match view["status"].as_str() {
        Some("running") => {}
        Some("awaiting_input") => {
            task.asked = crate::engine::sort::object(
                step_questions(view).into_iter().map(|q| (q.key, q.request)),
            );
            task.status = Status::InputRequired;
        }
        Some("cancelled") => {
            task.cancel(updated);
        }
        _ => task.end(result.map(|result| Ending::Result { result }), updated),
    }
    task.updated_ms = updated;
    task
}

/// The 2026-07-28 `CreateTaskResult` of a task whose `tasks/get` answer (`DetailedTask`) is
/// `detailed`.
pub fn created_of(detailed: Value) -> Value {
    let Value::Object(mut m) = detailed else {
        return detailed;
    };
    for inlined in ["result", "error", "inputRequests"] {
        m.remove(inlined);
    }
    m.insert("resultType".into(), json!("task"));
    Value::Object(m)
}

/// The object request that creates a 2026-07-28 task.
pub const OBJECT_CREATE: &str = "mcp-edge/tasks/create";
/// The object request behind 2026-07-28 `tasks/get`.
pub const OBJECT_GET: &str = "mcp-edge/tasks/get";
/// The object request behind 2026-07-28 `tasks/update`.
pub const OBJECT_UPDATE: &str = "mcp-edge/tasks/update";
/// The object request behind 2026-07-28 `tasks/cancel`.
pub const OBJECT_CANCEL: &str = "mcp-edge/tasks/cancel";

/// The object request behind 2026-07-28 `method` (`tasks/get`, `tasks/update`, `tasks/cancel`).
pub fn object_method(method: &str) -> Option<&'static str> {
    match method {
        "tasks/get" => Some(OBJECT_GET),
        "tasks/update" => Some(OBJECT_UPDATE),
        "tasks/cancel" => Some(OBJECT_CANCEL),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    /// Storage in memory, for the pure tests.
    #[derive(Default)]
    struct Memory(RefCell<BTreeMap<String, Task>>);

    impl TaskStore for Memory {
        fn load(&self, id: &str) -> Result<Option<Task>> {
            Ok(self.0.borrow().get(id).cloned())
        }
        fn save(&self, task: &Task) -> Result<()> {
            self.0.borrow_mut().insert(task.id.clone(), task.clone());
            Ok(())
        }
        fn delete(&self, id: &str) -> Result<()> {
            self.0.borrow_mut().remove(id);
            Ok(())
        }
        fn ids(&self) -> Result<Vec<String>> {
            Ok(self.0.borrow().keys().cloned().collect())
        }
    }

    fn done(text: &str) -> Outcome {
        Outcome::Result(json!({ "content": [{ "type": "text", "text": text }] }))
    }

    fn task() -> Task {
        Task::new("task-1", "u1", "slow_compute", json!({}), 1000.0, TTL_MS)
    }

    fn questions(keys: &[&str]) -> Map<String, Value> {
        keys.iter()
            .map(|k| {
                (
                    k.to_string(),
                    json!({ "method": "elicitation/create", "params": {} }),
                )
            })
            .collect()
    }

    #[test]
    fn a_timed_task_works_until_it_is_due_then_completes() {
        let mut t = task();
        t.apply(Step::After(2000, done("ok")), 1000.0).unwrap();
        assert_eq!(t.status, Status::Working);
        assert!(!t.advance(2999.0));
        assert_eq!(t.modern_detailed().get("result"), None);
        assert!(t.advance(3000.0));
        assert_eq!(t.status, Status::Completed);
        assert_eq!(t.updated_ms, 3000.0);
        assert_eq!(t.modern_detailed()["result"]["content"][0]["text"], "ok");
        assert!(!t.advance(9999.0), "a terminal task never changes again");
    }

    #[test]
    fn a_task_due_at_once_ends_when_the_step_is_applied() {
        let mut t = task();
        t.apply(Step::After(0, done("now")), 1000.0).unwrap();
        assert_eq!(t.status, Status::Completed);
    }

    #[test]
    fn protocol_errors_fail_and_tool_errors_complete() {
        let mut t = task();
        t.apply(
            Step::After(
                0,
                Outcome::Error {
                    code: -32603,
                    message: "boom".into(),
                },
            ),
            1000.0,
        )
        .unwrap();
        let d = t.modern_detailed();
        assert_eq!(d["status"], "failed");
        assert_eq!(d["error"], json!({ "code": -32603, "message": "boom" }));
        assert!(d.get("result").is_none());
        let mut t = task();
        let tool_error = Outcome::Result(json!({ "content": [], "isError": true }));
        t.apply(Step::After(0, tool_error), 1000.0).unwrap();
        assert_eq!(t.modern_detailed()["status"], "completed");
        assert_eq!(t.modern_detailed()["result"]["isError"], true);
    }

    #[test]
    fn cancel_ends_a_running_task_once_and_leaves_ended_ones_alone() {
        let mut t = task();
        t.apply(Step::After(60_000, done("late")), 1000.0).unwrap();
        assert!(t.cancel(2000.0));
        assert_eq!(t.status, Status::Cancelled);
        assert!(
            !t.advance(100_000.0),
            "a cancelled task does not complete later"
        );
        assert!(!t.cancel(3000.0));
        assert_eq!(t.updated_ms, 2000.0);
        let mut t = task();
        t.apply(Step::After(0, done("ok")), 1000.0).unwrap();
        assert!(!t.cancel(2000.0));
        assert_eq!(t.status, Status::Completed);
    }

    #[test]
    fn answers_remove_exactly_their_keys_and_the_task_works_again_when_none_is_open() {
        let mut t = task();
        t.apply(Step::Ask(questions(&["a", "b"])), 1000.0).unwrap();
        assert_eq!(t.status, Status::InputRequired);
        let open = |t: &Task| {
            t.modern_detailed()["inputRequests"]
                .as_object()
                .map(|m| m.keys().cloned().collect::<Vec<_>>())
        };
        assert_eq!(open(&t), Some(vec!["a".to_string(), "b".to_string()]));
        let mut answer = Map::new();
        answer.insert("a".into(), json!({ "action": "accept" }));
        answer.insert("unknown".into(), json!({ "ignored": true }));
        assert!(!t.answer(&answer, 1500.0));
        assert_eq!(t.status, Status::InputRequired);
        assert_eq!(open(&t), Some(vec!["b".to_string()]));
        assert!(t.answers.contains_key("a") && !t.answers.contains_key("unknown"));
        let mut rest = Map::new();
        rest.insert("b".into(), json!({ "action": "accept" }));
        assert!(t.answer(&rest, 1600.0));
        assert_eq!(t.status, Status::Working);
    }

    #[test]
    fn both_wire_shapes_carry_the_fields_their_revision_names() {
        let mut t = task();
        t.apply(Step::After(5000, done("x")), 1000.0).unwrap();
        let created = t.modern_created();
        assert_eq!(created["resultType"], "task");
        assert_eq!(created["taskId"], "task-1");
        assert_eq!(created["ttlMs"], TTL_MS);
        assert_eq!(created["pollIntervalMs"], POLL_MS);
        assert_eq!(created["createdAt"], "1970-01-01T00:00:01.000Z");
        for absent in [
            "result",
            "error",
            "inputRequests",
            "requestState",
            "ttl",
            "pollInterval",
            "task",
        ] {
            assert!(created.get(absent).is_none(), "{absent}");
        }
        let legacy = t.legacy_task();
        assert_eq!(legacy["ttl"], TTL_MS);
        assert_eq!(legacy["pollInterval"], POLL_MS);
        assert!(legacy.get("ttlMs").is_none());
        assert_eq!(t.legacy_result(), None);
        t.advance(6000.0);
        let Some(Ok(r)) = t.legacy_result() else {
            panic!("a completed task has a result");
        };
        assert_eq!(r["_meta"][RELATED_TASK]["taskId"], "task-1");
    }

    #[test]
    fn tasks_are_found_only_by_their_owner_and_only_until_their_ttl() {
        let store = Memory::default();
        let mut t = Task::new("task-2", "u1", "x", json!({}), 1000.0, 10_000);
        t.apply(Step::After(60_000, done("x")), 1000.0).unwrap();
        store.save(&t).unwrap();
        assert!(find(&store, "task-2", "u1", 2000.0).is_ok());
        let other = find(&store, "task-2", "u2", 2000.0).unwrap_err();
        let missing = find(&store, "task-9", "u1", 2000.0).unwrap_err();
        assert_eq!(other.rpc_code(), code::INVALID_PARAMS);
        assert_eq!(
            other.to_string().replace("task-2", "ID"),
            missing.to_string().replace("task-9", "ID"),
            "another caller's task answers like an unknown one"
        );
        assert!(find(&store, "task-2", "u1", 11_000.0).is_ok());
        assert!(find(&store, "task-2", "u1", 11_001.0).is_err());
        assert!(
            store.load("task-2").unwrap().is_none(),
            "an expired task is deleted"
        );
    }

    #[test]
    fn a_due_task_is_saved_ended_when_it_is_read() {
        let store = Memory::default();
        let mut t = task();
        t.apply(Step::After(100, done("ok")), 1000.0).unwrap();
        store.save(&t).unwrap();
        assert_eq!(
            find(&store, "task-1", "u1", 1200.0).unwrap().status,
            Status::Completed
        );
        assert_eq!(
            store.load("task-1").unwrap().unwrap().status,
            Status::Completed
        );
        cancel(&store, "task-1", "u1", 1300.0).unwrap();
        assert_eq!(
            store.load("task-1").unwrap().unwrap().status,
            Status::Completed
        );
    }

    fn view(status: &str, finished: Option<&str>) -> Value {
        json!({
            "execution_id": "exec-0123456789abcdef0123456789abcdef",
            "status": status,
            "started_at": "2026-11-27T10:00:00.000Z",
            "finished_at": finished,
            "steps": [
                { "id": 1, "state": "done" },
                { "id": 2, "state": "awaiting_input", "awaiting": {
                    "instructions": "Decide", "input": "Approve ADA?", "output_variables": ["status", "note"] } },
            ],
        })
    }

    #[test]
    fn a_chain_execution_maps_onto_a_task_of_the_same_id() {
        let id = "exec-0123456789abcdef0123456789abcdef";
        assert!(is_chain_task(id));
        assert!(
            !is_chain_task("exec-1") && !is_chain_task("task-0123456789abcdef0123456789abcdef")
        );
        let now = 1.0e13;
        let running = chain_task("u1", &view("running", None), None, now);
        assert_eq!((running.id.as_str(), running.status), (id, Status::Working));
        assert_eq!(
            running.legacy_task()["createdAt"],
            "2026-11-27T10:00:00.000Z"
        );
        assert_eq!(
            running.legacy_task()["lastUpdatedAt"],
            "2026-11-27T10:00:00.000Z"
        );
        let paused = chain_task("u1", &view("awaiting_input", None), None, now);
        assert_eq!(paused.status, Status::InputRequired);
        let asked = &paused.modern_detailed()["inputRequests"]["step-2"];
        assert_eq!(asked["method"], "sampling/createMessage");
        assert!(asked["params"]["systemPrompt"]
            .as_str()
            .unwrap()
            .ends_with("Its keys: status, note."));
        let result = json!({ "content": [{ "type": "text", "text": "failed" }], "isError": true });
        let failed = chain_task(
            "u1",
            &view("failed", Some("2026-11-27T10:00:05.000Z")),
            Some(result.clone()),
            now,
        );
        assert_eq!(
            failed.status,
            Status::Completed,
            "a chain's failure is the tool's error"
        );
        assert_eq!(failed.modern_detailed()["result"], result);
        assert_eq!(
            failed.legacy_task()["lastUpdatedAt"],
            "2026-11-27T10:00:05.000Z"
        );
        let cancelled = chain_task(
            "u1",
            &view("cancelled", Some("2026-11-27T10:00:05.000Z")),
            Some(result),
            now,
        );
        assert_eq!(cancelled.status, Status::Cancelled);
        assert!(cancelled.modern_detailed().get("result").is_none());
        let created = created_of(paused.modern_detailed());
        assert_eq!(created["resultType"], "task");
        assert!(created.get("inputRequests").is_none());
    }

    #[test]
    fn step_answers_must_hold_every_output_their_step_waits_for() {
        let wanted = ["status".to_string()];
        let answer = |text: &str| {
            let mut m = Map::new();
            m.insert(
                "step-2".into(),
                json!({ "content": { "type": "text", "text": text } }),
            );
            m
        };
        let ok = step_outputs(
            [("step-2", &wanted[..])],
            Some(&answer("{\"status\": \"approved\"}")),
        )
        .unwrap();
        assert_eq!(ok["status"], "approved");
        for bad in [answer("no JSON"), answer("{\"other\": 1}"), Map::new()] {
            let e = step_outputs([("step-2", &wanted[..])], Some(&bad)).unwrap_err();
            assert_eq!(e.rpc_code(), code::INVALID_PARAMS);
        }
    }

    fn question(ask: &str) -> StepQuestion {
        let mut v = view("awaiting_input", None);
        v["steps"][1]["awaiting"]["ask"] = json!(ask);
        step_questions(&v).remove(0)
    }

    #[test]
    fn a_2025_question_is_sampled_when_a_model_may_answer_and_elicited_of_the_user_otherwise() {
        let both = json!({ "sampling": {}, "elicitation": {} });
        let (method, params) = legacy_question(&question("model"), &both, "exec-1").unwrap();
        assert_eq!(method, "sampling/createMessage");
        assert_eq!(params["_meta"][RELATED_TASK]["taskId"], "exec-1");
        assert_eq!(params["messages"][0]["content"]["text"], "Approve ADA?");
        let (method, params) = legacy_question(&question("explicit"), &both, "exec-1").unwrap();
        assert_eq!(method, "elicitation/create", "only the user approves");
        assert_eq!(
            params["requestedSchema"]["required"],
            json!(["status", "note"])
        );
        assert_eq!(params["message"], "Decide\n\nApprove ADA?");
        assert_eq!(params["_meta"][RELATED_TASK]["taskId"], "exec-1");
        let elicits = json!({ "elicitation": {} });
        assert_eq!(
            legacy_question(&question("client"), &elicits, "e").map(|q| q.0),
            Some("elicitation/create")
        );
        let samples = json!({ "sampling": {} });
        assert!(legacy_question(&question("explicit"), &samples, "e").is_none());
        assert!(legacy_question(&question("model"), &json!({}), "e").is_none());
    }

    #[test]
    fn a_2025_answer_must_accept_and_hold_every_output() {
        let q = question("explicit");
        let form = |v: Value| answered_outputs(&q, "elicitation/create", &v);
        let ok = form(json!({ "action": "accept", "content": { "status": "ok", "note": "n" } }))
            .unwrap();
        assert_eq!(
            (ok["status"].as_str(), ok["note"].as_str()),
            (Some("ok"), Some("n"))
        );
        for declined in ["decline", "cancel"] {
            let e = form(json!({ "action": declined })).unwrap_err();
            assert_eq!(e.rpc_code(), code::INVALID_REQUEST);
            assert!(e.to_string().contains(declined) && e.to_string().contains("still waits"));
        }
        assert!(
            form(json!({ "action": "accept", "content": { "status": "ok" } }))
                .unwrap_err()
                .to_string()
                .contains("\"note\"")
        );
        let sampled = |text: &str| {
            answered_outputs(
                &q,
                "sampling/createMessage",
                &json!({ "content": { "type": "text", "text": text } }),
            )
        };
        assert_eq!(sampled("{\"status\": 1, \"note\": 2}").unwrap()["note"], 2);
        assert!(sampled("no JSON").is_err());
    }

    #[test]
    fn records_survive_a_round_trip_through_json() {
        let mut t = task();
        t.apply(Step::Ask(questions(&["q"])), 1000.0).unwrap();
        let back: Task = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }
}
