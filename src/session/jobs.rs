//! Tracked jobs of a session (chain executions): background runs, and the alarm's watchdog that
//! resumes background runs whose lease lapsed and abandons runs whose call ended.
//!
//! A background run starts at once in this instance. Nothing but its lease ties it to the instance:
//! if the instance is evicted or reset mid-run, the lease stops being renewed and the next alarm
//! starts a new run, which continues from the job's last checkpoint (kept by its toolset in D1).
//!
//! Each job fails on its own: a job whose watchdog step (abandoning it, starting its new run) or
//! run fails is retried one lease later, and after [`MAX_JOB_FAILURES`] failures in a row it is no
//! longer tracked (logged), so one broken job never stops the alarm or the other jobs, and never
//! keeps the alarm firing in a loop.

use std::rc::Rc;

use futures::future::{AbortHandle, Abortable, LocalBoxFuture};
use serde_json::json;

use super::Core;
use crate::clock;
use crate::error::{Error, Result};
use crate::registry::call::CallContext;

/// Failures in a row after which a job is no longer tracked.
pub const MAX_JOB_FAILURES: i64 = 3;

fn failures_key(id: &str) -> String {
    format!("job_failures:{id}")
}

/// Counts a failure of job `id`: retried a lease later, or dropped after [`MAX_JOB_FAILURES`]. A
/// storage failure here is logged too; the alarm goes on either way.
fn job_failed(core: &Core, id: &str, kind: &str, e: &Error) {
    let key = failures_key(id);
    let count = core
        .db
        .get(&key)
        .ok()
        .flatten()
        .and_then(|n| n.parse::<i64>().ok())
        .unwrap_or(0)
        + 1;
    let give_up = count >= MAX_JOB_FAILURES;
    crate::log::error!(
        "{}",
        json!({ "job": id, "kind": kind, "error": e.to_string(), "failures": count, "dropped": give_up })
    );
    let kept = if give_up {
        core.db.job_delete(id).and_then(|()| core.db.set(&key, ""))
    } else {
        let retry_at =
            clock::now_ms() as i64 + i64::from(core.deployment.cfg.job_lease_secs) * 1000;
        core.db
            .set(&key, &count.to_string())
            .and_then(|()| core.db.job_renew(id, retry_at).map(drop))
    };
    if let Err(e) = kept {
        crate::log::error!(
            "{}",
            json!({ "job": id, "failure_not_recorded": e.to_string() })
        );
    }
}

/// A job's watchdog step or run succeeded: its failure count starts again.
fn job_ok(core: &Core, id: &str) {
    let key = failures_key(id);
    if core
        .db
        .get(&key)
        .ok()
        .flatten()
        .is_some_and(|n| !n.is_empty())
    {
        if let Err(e) = core.db.set(&key, "") {
            crate::log::error!(
                "{}",
                json!({ "job": id, "failure_not_recorded": e.to_string() })
            );
        }
    }
}

/// The context of a background run: the session's platform, acting for the session's user.
fn unattended(core: &Core) -> CallContext<'_> {
    CallContext::unattended(core, core.stored_caller(), "a background run")
}

/// A run of a background job; finishes when the job's hook returns (or the session shuts down).
fn run(core: Rc<Core>, kind: String, id: String) -> Option<LocalBoxFuture<'static, ()>> {
    let (abort, registration) = AbortHandle::new_pair();
    if !core.hub.job_begin(&id, abort) {
        return None;
    }
    Some(Box::pin(async move {
        let ctx = unattended(&core);
        let outcome = Abortable::new(crate::tools::run_job(&ctx, &kind, &id), registration).await;
        core.hub.job_end(&id);
        match outcome {
            Ok(Err(e)) => job_failed(&core, &id, &kind, &e),
            Ok(Ok(())) => job_ok(&core, &id),
            Err(_) => {}
        }
    }))
}

/// Starts a background job's run in this instance now (unless it is already running here).
pub fn spawn(core: Rc<Core>, kind: String, id: String) {
    if let Some(fut) = run(core, kind, id) {
        wasm_bindgen_futures::spawn_local(fut);
    }
}

/// The watchdog: claims every lapsed background job for a new run (returned, for the alarm to
/// await) and abandons every lapsed job whose call has ended. Never fails: each job's failure is
/// its own ([`job_failed`]), and a storage failure listing them is logged for the next alarm.
pub async fn lapsed(core: &Rc<Core>) -> Vec<LocalBoxFuture<'static, ()>> {
    let now = clock::now_ms() as i64;
    let jobs = match core.db.jobs_lapsed(now) {
        Ok(jobs) => jobs,
        Err(e) => {
            crate::log::error!("{}", json!({ "watchdog": e.to_string() }));
            return Vec::new();
        }
    };
    let mut runs = Vec::new();
    for job in jobs {
        if core.hub.job_is_live(&job.id) {
            continue;
        }
        match watch(core, &job, now).await {
            Ok(run) => runs.extend(run),
            Err(e) => job_failed(core, &job.id, &job.kind, &e),
        }
    }
    runs
}

/// The watchdog's step for one lapsed job: a new run of a background job, or closing an attached
/// one.
async fn watch(
    core: &Rc<Core>,
    job: &crate::store::session_db::Job,
    now: i64,
) -> Result<Option<LocalBoxFuture<'static, ()>>> {
    let lease = i64::from(core.deployment.cfg.job_lease_secs) * 1000;
    if job.background != 0 {
        core.db.job_renew(&job.id, now + lease)?;
        return Ok(run(core.clone(), job.kind.clone(), job.id.clone()));
    }
    crate::tools::abandon_job(&unattended(core), &job.kind, &job.id).await?;
    core.db.job_delete(&job.id)?;
    job_ok(core, &job.id);
    Ok(None)
}

/// The session is ending: every toolset closes what it keeps open for it.
pub async fn session_ending(core: &Rc<Core>) {
    if let Err(e) = crate::tools::session_ending(&unattended(core)).await {
        crate::log::error!("session end: {e}");
    }
}

fn chain_task_key(id: &str) -> String {
    format!("chain_task:{id}")
}

/// Chain execution `id` may have changed status (a run of it started, paused or ended; called by
/// the session's `job_start` and `job_finish`). When it is a task of this session's 2025-11-25
/// client ([`task_call`] noted it with the status its `CreateTaskResult` said), the session sends
/// `notifications/tasks/status` (the task) on its stream once the status differs from the last
/// one its client was told, and forgets the task when it ended.
pub fn chain_task_moved(core: &Core, id: &str) {
    let noted = core.db.get(&chain_task_key(id)).ok().flatten();
    if noted.is_none_or(|s| s.is_empty()) {
        return;
    }
    let Some(core) = core.me.upgrade() else {
        return;
    };
    let id = id.to_string();
    wasm_bindgen_futures::spawn_local(async move {
        if let Err(e) = announce(&core, &id).await {
            crate::log::error!(
                "{}",
                json!({ "task_status_not_sent": id, "error": e.to_string() })
            );
        }
    });
}

/// Sends chain task `id`'s status when it is not the one last sent (read after the execution, so
/// two announcements racing each other send each status once).
async fn announce(core: &Core, id: &str) -> Result<()> {
    let ctx = unattended(core);
    let (view, result) = crate::tools::chains::task_state(&ctx, id).await?;
    let task = crate::server::tasks::chain_task("", &view, result, clock::now_ms());
    let key = chain_task_key(id);
    let noted = core.db.get(&key)?.unwrap_or_default();
    if noted.is_empty() || noted == task.status.as_str() {
        return Ok(());
    }
    let kept = if task.status.is_terminal() {
        ""
    } else {
        task.status.as_str()
    };
    core.db.set(&key, kept)?;
    let notification = json!({
        "jsonrpc": "2.0",
        "method": "notifications/tasks/status",
        "params": task.legacy_task(),
    });
    core.publish(
        crate::mcp::sse::STANDALONE,
        "message",
        &notification.to_string(),
    )
}

/// Session-storage key of the ids of the session's tasks, oldest first.
const TASK_IDS: &str = "task_ids";

fn task_key(id: &str) -> String {
    format!("task:{id}")
}

/// A session keeps its tasks (2025-11-25 tasks of its client; on a 2026-07-28 task's own object,
/// that one task) in its storage, beside its other state.
impl crate::server::tasks::TaskStore for Core {
    fn load(&self, id: &str) -> Result<Option<crate::server::tasks::Task>> {
        match self.db.get(&task_key(id))? {
            Some(s) if !s.is_empty() => Ok(Some(serde_json::from_str(&s)?)),
            _ => Ok(None),
        }
    }

    fn save(&self, task: &crate::server::tasks::Task) -> Result<()> {
        let mut ids = self.ids()?;
        let record = serde_json::to_string(task)?;
        if ids.contains(&task.id) {
            return self.db.set(&task_key(&task.id), &record);
        }
        ids.push(task.id.clone());
        let ids = serde_json::to_string(&ids)?;
        self.db
            .set_all(&[(task_key(&task.id).as_str(), &record), (TASK_IDS, &ids)])
    }

    fn delete(&self, id: &str) -> Result<()> {
        let ids: Vec<String> = self.ids()?.into_iter().filter(|i| i != id).collect();
        let ids = serde_json::to_string(&ids)?;
        self.db
            .set_all(&[(task_key(id).as_str(), ""), (TASK_IDS, &ids)])
    }

    fn ids(&self) -> Result<Vec<String>> {
        match self.db.get(TASK_IDS)? {
            Some(s) if !s.is_empty() => Ok(serde_json::from_str(&s)?),
            _ => Ok(Vec::new()),
        }
    }
}

/// A `tasks/*` request to this session (`None`: not one): the 2026-07-28 lane's requests to a
/// task's own object, or a 2025-11-25 client's.
pub async fn tasks_request(
    core: &Rc<Core>,
    caller: &crate::registry::Caller,
    method: &str,
    params: &serde_json::Map<String, serde_json::Value>,
) -> Option<Result<serde_json::Value>> {
    use crate::server::tasks;
    let owner = caller.user.as_deref().unwrap_or("");
    if let Some(answer) = chain_task_request(core, caller, method, params, None).await {
        return Some(answer);
    }
    if let Some(answer) = tasks::object(&**core, &core.deployment.registry, owner, method, params) {
        return Some(answer);
    }
    let sleep = |ms: u32| -> LocalBoxFuture<'static, ()> {
        Box::pin(worker::Delay::from(std::time::Duration::from_millis(
            u64::from(ms),
        )))
    };
    tasks::legacy(&**core, owner, method, params, &sleep).await
}

/// A `tasks/*` request about a chain execution (`server::tasks::is_chain_task`; `None`: not
/// one): the task is the execution record, read with `get_chain_status`'s view, cancelled as
/// `cancel_chain` cancels, and (2026-07-28 `tasks/update`) continued as `resume_chain` continues
/// it. An execution this caller cannot see is an unknown task. `asker`: the context whose
/// client a 2025-11-25 `tasks/result` puts a paused step's question to ([`chain_task_result`]).
pub async fn chain_task_request(
    core: &Rc<Core>,
    caller: &crate::registry::Caller,
    method: &str,
    params: &serde_json::Map<String, serde_json::Value>,
    asker: Option<&CallContext<'_>>,
) -> Option<Result<serde_json::Value>> {
    use crate::server::tasks;
    let modern = match method {
        tasks::OBJECT_GET | tasks::OBJECT_CANCEL | tasks::OBJECT_UPDATE => true,
        "tasks/get" | "tasks/cancel" | "tasks/result" => false,
        _ => return None,
    };
    let id = chain_task_id(params)?;
    let ctx = unattended_for(core, caller);
    let owner = caller.user.as_deref().unwrap_or("");
    let chain = ChainTask {
        ctx: &ctx,
        id: &id,
        owner,
    };
    let ack = || json!({ "resultType": "complete" });
    Some(match method {
        tasks::OBJECT_GET => chain.state().await.map(|t| t.modern_detailed()),
        "tasks/get" => chain.state().await.map(|t| t.legacy_task()),
        tasks::OBJECT_CANCEL | "tasks/cancel" => {
            let task = match chain.state().await {
                Ok(t) => t,
                Err(e) => return Some(Err(e)),
            };
            if task.status.is_terminal() {
                // 2026-07-28: cancel is idempotent; 2025-11-25: an ended task cannot be cancelled.
                return Some(if modern {
                    Ok(ack())
                } else {
                    Err(Error::InvalidParams(format!(
                        "Invalid params: task {id:?} already ended ({}); only a working task can be cancelled",
                        task.status.as_str()
                    )))
                });
            }
            let cancelled =
                crate::tools::chains::cancel(&ctx, &id, "cancelled: tasks/cancel", 10_000).await;
            match cancelled {
                Err(e) => Err(e.into()),
                Ok(_) if modern => Ok(ack()),
                Ok(_) => chain.state().await.map(|t| t.legacy_task()),
            }
        }
        tasks::OBJECT_UPDATE => {
            (async {
                // Only a paused execution has questions; answers to any other change nothing.
                let questions = tasks::step_questions(&chain.read().await?.0);
                if questions.is_empty() {
                    return Ok(ack());
                }
                let outputs = tasks::step_outputs(
                    questions
                        .iter()
                        .map(|q| (q.key.as_str(), q.outputs.as_slice())),
                    Some(&tasks::input_responses(params)?),
                )?;
                crate::tools::chains::resume(&ctx, &id, &outputs, true).await?;
                Ok(ack())
            })
            .await
        }
        _ => chain_task_result(core, &chain, asker).await,
    })
}

/// The chain execution a `tasks/*` request names, if it names one.
pub fn chain_task_id(params: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    params
        .get("taskId")
        .and_then(serde_json::Value::as_str)
        .filter(|id| crate::server::tasks::is_chain_task(id))
        .map(str::to_string)
}

/// A chain execution as a caller's task.
struct ChainTask<'a> {
    ctx: &'a CallContext<'a>,
    id: &'a str,
    owner: &'a str,
}

impl ChainTask<'_> {
    /// Its `get_chain_status` view and result; one the caller cannot see is an unknown task.
    async fn read(&self) -> Result<(serde_json::Value, Option<serde_json::Value>)> {
        crate::tools::chains::task_state(self.ctx, self.id)
            .await
            .map_err(|e| match e {
                crate::registry::ToolError::NotFound { .. } => {
                    crate::server::tasks::unknown(self.id)
                }
                e => e.into(),
            })
    }

    /// The task it is now.
    async fn state(&self) -> Result<crate::server::tasks::Task> {
        let (view, result) = self.read().await?;
        Ok(crate::server::tasks::chain_task(
            self.owner,
            &view,
            result,
            clock::now_ms(),
        ))
    }
}

/// 2025-11-25 `tasks/result` of a chain task: its result once the execution ended (waiting up to
/// the same bound as a scripted task's). A paused execution's question goes to the client of
/// `asker` on this request's stream (`server::tasks::legacy_question`), and its answer resumes the
/// run as `resume_chain` would; the wait then goes on, to the result or the next question. A
/// client that can answer neither way is told how to continue it. While another `tasks/result`
/// of the session has the question with the client ([`QuestionClaim`]), this one waits for that
/// outcome instead of asking too, so the user is asked once and the run resumes once.
async fn chain_task_result(
    core: &Core,
    chain: &ChainTask<'_>,
    asker: Option<&CallContext<'_>>,
) -> Result<serde_json::Value> {
    use crate::registry::ToolContext;
    use crate::server::tasks::{self, Status};
    let id = chain.id;
    let mut began = clock::now_ms();
    // The question keys another call had with the client while this one waited.
    let mut waited_on: Option<Vec<String>> = None;
    loop {
        let (view, result) = chain.read().await?;
        let task = tasks::chain_task(chain.owner, &view, result, clock::now_ms());
        match task.legacy_result() {
            Some(Ok(result)) => return Ok(result),
            Some(Err(e)) => {
                return Err(Error::InvalidRequest(
                    e["message"]
                        .as_str()
                        .unwrap_or("the task ended without a result")
                        .to_string(),
                ))
            }
            None if task.status == Status::InputRequired => {
                let questions = tasks::step_questions(&view);
                let asked: Option<Vec<_>> = asker.and_then(|a| {
                    let capabilities = a.client_capabilities();
                    questions
                        .iter()
                        .map(|q| tasks::legacy_question(q, &capabilities, id).map(|m| (q, m)))
                        .collect()
                });
                let (Some(asker), Some(asked)) = (asker, asked.filter(|a| !a.is_empty())) else {
                    return Err(Error::InvalidRequest(format!(
                        "Invalid Request: task {id:?} (chain execution {id}) waits for input: declare the client capability sampling or elicitation in initialize and call tasks/result again to be asked for it, or supply the outputs its paused step waits for with resume_chain {{\"execution_id\": \"{id}\", \"outputs\": {{…}}}} (a FlowMind workflow's run: execute_workflow {{\"workflow_uri\": …, \"session_id\": \"{id}\", \"step_outputs\": {{…}}}}; get_chain_status shows what it waits for), then call tasks/result again; or cancel it"
                    )));
                };
                let keys: Vec<String> = questions.iter().map(|q| q.key.clone()).collect();
                let Some(claim) = QuestionClaim::take(core, id) else {
                    // Another tasks/result has it with the client: its answer resumes the run.
                    waited_on = Some(keys);
                    if clock::now_ms() - began > tasks::RESULT_WAIT_MS {
                        return Err(Error::Unavailable(format!(
                            "Task {id:?} waits for the answer to its question, which another tasks/result call has with the client; call tasks/result again"
                        )));
                    }
                    worker::Delay::from(std::time::Duration::from_millis(tasks::POLL_MS)).await;
                    continue;
                };
                if waited_on.as_ref() == Some(&keys) {
                    // That call ended and the same steps still wait: it got no usable answer.
                    drop(claim);
                    return Err(Error::InvalidRequest(format!(
                        "Invalid Request: the question of task {id:?}, which another tasks/result call put to the client, was not answered; the task still waits for input: call tasks/result again to be asked again, supply its outputs with resume_chain {{\"execution_id\": \"{id}\", \"outputs\": {{…}}}}, or cancel the task"
                    )));
                }
                let mut outputs = serde_json::Map::new();
                for (q, (method, params)) in asked {
                    let answer = asker.ask_client(method, params).await?;
                    outputs.extend(tasks::answered_outputs(q, method, &answer)?);
                }
                crate::tools::chains::resume(chain.ctx, id, &outputs, true).await?;
                drop(claim);
                waited_on = None;
                began = clock::now_ms();
            }
            None if clock::now_ms() - began > tasks::RESULT_WAIT_MS => {
                return Err(Error::Unavailable(format!(
                    "Task {id:?} is still working; call tasks/result again"
                )))
            }
            None => {
                worker::Delay::from(std::time::Duration::from_millis(tasks::POLL_MS)).await;
            }
        }
    }
}

/// A 2025-11-25 `tasks/result`'s hold on a chain task's question while it is with the client
/// (`Core::asking`): taken only when no other call holds it (the check and the insert run with no
/// await between, so two requests of the object cannot both take it), and given back when it is
/// dropped, however the asking ends (answer, decline, error, the ask's timeout).
struct QuestionClaim<'a> {
    core: &'a Core,
    id: String,
}

impl<'a> QuestionClaim<'a> {
    /// The hold on task `id`'s question; `None` while another call has it.
    fn take(core: &'a Core, id: &str) -> Option<Self> {
        core.asking
            .borrow_mut()
            .insert(id.to_string())
            .then(|| Self {
                core,
                id: id.to_string(),
            })
    }
}

impl Drop for QuestionClaim<'_> {
    fn drop(&mut self) {
        self.core.asking.borrow_mut().remove(&self.id);
    }
}

/// The context a task request about a chain acts in: the session's platform, as the caller.
fn unattended_for<'a>(core: &'a Core, caller: &crate::registry::Caller) -> CallContext<'a> {
    CallContext::unattended(core, caller.clone(), "a task request")
}

/// A 2025-11-25 `tools/call` of `tool` as a task (`params.task` present): the `CreateTaskResult`
/// (or, for a chain that could not start, the call's error result), or `None` when the call runs
/// as an ordinary call. A tool that runs only as a task is refused without `params.task` (-32601,
/// as that revision says).
pub async fn task_call(
    core: &Core,
    caller: &crate::registry::Caller,
    tool: &crate::registry::Tool,
    args: &serde_json::Value,
    params: &serde_json::Map<String, serde_json::Value>,
) -> Result<Option<serde_json::Value>> {
    use crate::registry::task::{TaskRun, TaskSupport};
    use crate::server::tasks;
    let asked = params.get("task").filter(|t| t.is_object());
    let run = match (tool.def.task, asked) {
        (TaskSupport::Required(_), None) => {
            return Err(Error::MethodNotFound(format!(
                "{} runs only as a task: call it with params.task (the server declares capabilities.tasks)",
                tool.def.name
            )))
        }
        (support, Some(_)) => support.run(),
        (_, None) => None,
    };
    let owner = caller.user.as_deref().unwrap_or("");
    match run {
        None => Ok(None),
        // A chain runs as a task only for a client that declared tasks at initialize; any other
        // gets the synchronous call it always got.
        Some(TaskRun::Chain(_) | TaskRun::Linked(..))
            if core.client_capabilities().get("tasks").is_none() =>
        {
            Ok(None)
        }
        Some(TaskRun::Chain(background) | TaskRun::Linked(background, _)) => {
            // The execution starts in the background as execute_chain's async_execution would,
            // under the session's job lease; its id is the task's. The start decides by what the
            // session's client declared (an autonomous workflow needs a model: its sampling), as
            // the synchronous call would; the run itself asks no client, its paused steps are
            // asked through tasks/result.
            let ctx = unattended_for(core, caller).with_capabilities(core.client_capabilities());
            let done = crate::registry::execute(tool, &ctx, background(args.clone())).await;
            let Some(id) = crate::tools::chains::started_execution(&done.result) else {
                return Ok(Some(done.result));
            };
            let (view, result) = crate::tools::chains::task_state(&ctx, &id).await?;
            let task = tasks::chain_task(owner, &view, result, clock::now_ms());
            if !task.status.is_terminal() {
                // Its client hears of each later change (chain_task_moved).
                core.db.set(&chain_task_key(&id), task.status.as_str())?;
            }
            Ok(Some(json!({ "task": task.legacy_task() })))
        }
        Some(TaskRun::Script(_)) => {
            let ttl = asked
                .and_then(|t| t.get("ttl"))
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(tasks::TTL_MS);
            let task = tasks::create(
                core,
                &core.deployment.registry,
                &tasks::new_id()?,
                owner,
                tool.def.name,
                args.clone(),
                serde_json::Map::new(),
                ttl,
                clock::now_ms(),
            )?;
            Ok(Some(json!({ "task": task.legacy_task() })))
        }
    }
}
