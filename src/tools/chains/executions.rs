//! Chain executions: their records in D1 (`chain_executions`) and the drivers that run, continue,
//! pause, cancel and abandon them.
//!
//! A tracked execution keeps its step report in its record: a checkpoint after every batch while it
//! runs, the paused state while it awaits input, the final report after. The record also keeps the
//! chain definition and run options it started with, so a resumed run follows the same plan even
//! if the chain has been edited since. While a run is under way it holds a job lease in the session
//! (`Platform::job_start`); the session's alarm resumes a background run whose lease lapsed, and
//! abandons (fails and rolls back) a synchronous one whose call ended first.

use futures::future::{select, Either};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::guard::{self, Author, Hidden};
use super::host::{report_max_bytes, ChainHost};
use super::JOB_KIND;
use crate::engine::chain::{self, ChainDef, Plan};
use crate::engine::read::{self, Read};
use crate::engine::run::{self, RunOptions, RunReport, RunStatus, StepState};
use crate::error::{Error, Result};
use crate::limiter::leases::LeaseRequest;
use crate::random;
use crate::registry::{JobMode, Registry, ToolContext, ToolError, ToolOutput, ToolResult};
use crate::tools::domain::HIDDEN;

/// A background execution whose run is interrupted this many times (since it was started or last
/// resumed) is failed, not continued again.
const MAX_RUNS: i64 = 3;

/// The prefix of an execution's `owner` once the session that held it has ended and nothing runs
/// it (it is paused, or its background run could not go on): a signed-in user's run outlives its
/// session, and any of their sessions may take it up (`resume_chain`) or cancel it.
pub const ENDED_OWNER: &str = "ended:";

/// Where an execution runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Inside the `execute_chain` (or `resume_chain`) call.
    Sync,
    /// In the background, followed with `get_chain_status`.
    Async,
}

impl Mode {
    /// The stored `mode` column, read by hand as `Options::read` is.
    fn read(v: Value) -> Read<Mode> {
        match read::string(v)?.as_str() {
            "sync" => Ok(Mode::Sync),
            "async" => Ok(Mode::Async),
            other => Err(read::unknown(other, "one of `sync`, `async`")),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Mode::Sync => "sync",
            Mode::Async => "async",
        }
    }
}

/// The run options an execution started with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Ready `parallel_execution` steps run concurrently.
    pub parallel: bool,
    /// Completed steps are rolled back when the run does not complete.
    pub rollback: bool,
    /// Overall limit of running time (pauses excluded).
    pub max_execution_ms: u64,
    /// The final report keeps every step's input, outputs and attempts.
    pub save_intermediate_results: bool,
    /// Steps without `retry_config` retry transient failures
    /// (`configuration.auto_retry_transient_failures`); off in records from before it existed.
    #[serde(default)]
    pub auto_retry: bool,
    /// A missing input fails its step (`configuration.strict_inputs`).
    #[serde(default)]
    pub strict_inputs: bool,
    /// `execute_chain`'s `context_metadata` (`agent_id`, `session_id`, `client_id`,
    /// `source_channel`), kept for `list_chain_executions` to filter on.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub context: Map<String, Value>,
    /// The signed-in user who started the run, if any: their runs are theirs in every session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// The caller's concurrency lease the execution holds (FlowMind workflows), given back when
    /// it ends for good, whichever way it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
    /// What the toolset that linked the chain (`run_linked`) keeps with the run to answer for it
    /// once it ended, as an MCP task's result (`registry::task::Render`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<Value>,
}

/// A concurrency lease held in a caller's rate limiter object (`limiter::leases`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lease {
    /// The limiter object (`user:<id>`, `session:<id>`): kept, because the run may end where
    /// the caller is not known (the session's alarm, its end).
    pub owner: String,
    /// What it counts (a tool name).
    pub kind: String,
}

impl Lease {
    /// The lease of a stored `Options`, read by hand as `Options::read` is.
    fn read(v: Value) -> Read<Lease> {
        let mut m = read::object(v, "struct Lease")?;
        Ok(Lease {
            owner: read::string(read::required(&mut m, "owner")?)?,
            kind: read::string(read::required(&mut m, "kind")?)?,
        })
    }
}

impl Options {
    /// The options as `load` reads them from the stored `options` column: by hand, not through the
    /// derive, which compiled a reader of its own for this one place (docs/decisions.md, "Derived
    /// readers"). It accepts what the derive accepts; the native tests compare the two.
    fn read(v: Value) -> Read<Options> {
        let mut m = read::object(v, "struct Options")?;
        Ok(Options {
            parallel: read::bool(read::required(&mut m, "parallel")?)?,
            rollback: read::bool(read::required(&mut m, "rollback")?)?,
            max_execution_ms: read::u64(read::required(&mut m, "max_execution_ms")?)?,
            save_intermediate_results: read::bool(read::required(
                &mut m,
                "save_intermediate_results",
            )?)?,
            auto_retry: read::defaulted(&mut m, "auto_retry", read::bool)?,
            strict_inputs: read::defaulted(&mut m, "strict_inputs", read::bool)?,
            context: read::defaulted(&mut m, "context", |v| read::object(v, "a map"))?,
            runner: read::optional(&mut m, "runner", read::string)?,
            lease: read::optional(&mut m, "lease", Lease::read)?,
            kept: read::optional(&mut m, "kept", Ok)?,
        })
    }

    fn run_options(&self) -> RunOptions {
        RunOptions {
            parallel: self.parallel,
            rollback: self.rollback,
            max_execution_ms: self.max_execution_ms,
            jitter_seed: 1,
            auto_retry: self.auto_retry,
            strict_inputs: self.strict_inputs,
        }
    }
}

/// One execution of a chain, ready to run.
pub struct Run {
    /// The execution id (`exec-…`).
    pub id: String,
    /// The chain's name.
    pub chain: String,
    /// The chain's title.
    pub title: String,
    /// The planned chain.
    pub plan: Plan,
    /// How it runs.
    pub options: Options,
    /// Where it runs.
    pub mode: Mode,
    /// Whether it has a record (`track_progress`).
    pub tracked: bool,
    /// Who saved the chain, as recorded when the run started (`None`: a chain the server ships
    /// or builds, whose steps act with the runner's own rights).
    pub author: Option<Author>,
}

/// A fresh, unguessable execution id.
pub fn new_id() -> Result<String> {
    Ok(format!("exec-{}", random::hex(16)?))
}

/// A fresh run state over `variables`, with a random jitter seed.
pub fn fresh(plan: &Plan, variables: Value) -> Result<RunReport> {
    let seed = u64::from_str_radix(&random::hex(8)?, 16).unwrap_or(1);
    Ok(RunReport::start(plan, variables, seed))
}

/// The execution's record as stored.
struct Record {
    run: Run,
    status: String,
    variables: Value,
    report: Option<RunReport>,
    started_at: Value,
    finished_at: Value,
    runs: i64,
    /// Whether the record belongs to this session (as opposed to another session of the same
    /// signed-in user).
    here: bool,
    /// Whether the session that held it has ended ([`ENDED_OWNER`]): nothing runs it until one of
    /// its user's sessions resumes it.
    orphaned: bool,
    /// Why another session asked the run to stop ([`cancel`]), if one did.
    stop_request: Option<String>,
}

/// Whose executions a lookup may find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// This session's only: what the session's own machinery (its watchdog, its end) acts on.
    Session,
    /// This session's, and those the same signed-in user started in any other session: what the
    /// user asks about (`get_chain_status`, `resume_chain`, `cancel_chain`, listings).
    Caller,
}

/// The SQL condition (over `chain_executions e`, parameters from `?{first}`) that an execution is
/// in `scope` for this caller, with its parameters.
fn in_scope(ctx: &dyn ToolContext, scope: Scope, first: usize) -> (String, Vec<Value>) {
    let session = json!(ctx.session_id());
    match (scope, ctx.caller().user) {
        (Scope::Caller, Some(user)) => (
            format!(
                "(e.owner = ?{first} OR json_extract(e.options, '$.runner') = ?{})",
                first + 1
            ),
            vec![session, json!(user)],
        ),
        _ => (format!("e.owner = ?{first}"), vec![session]),
    }
}

/// Loads an execution in `scope`. One out of scope is indistinguishable from one that does not
/// exist.
async fn load(ctx: &dyn ToolContext, id: &str, scope: Scope) -> ToolResult<Record> {
    let (mine, params) = in_scope(ctx, scope, 2);
    let all = [vec![json!(id)], params].concat();
    let row = ctx
        .query(
            &format!(
                "SELECT e.id, c.name AS chain, c.title, e.status, e.mode, e.definition, e.options, e.runs,
                    e.variables, e.report, e.started_at, e.finished_at, e.author, e.author_roles,
                    e.stop_request, e.owner = ?2 AS here, substr(e.owner, 1, {len}) = '{ENDED_OWNER}' AS orphaned
             FROM chain_executions e JOIN execution_chains c ON c.id = e.chain_id
             WHERE e.id = ?1 AND {mine}",
                len = ENDED_OWNER.len()
            ),
            all,
        )
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| {
            ToolError::not_found(format!(
                "execution {id} not found in this session{}; use an execution id execute_chain returned here",
                if scope == Scope::Caller && ctx.caller().user.is_some() { " or your other sessions" } else { "" }
            ))
        })?;
    let text = |k: &str| row[k].as_str().unwrap_or_default().to_string();
    let json_of = |k: &str| serde_json::from_str::<Value>(row[k].as_str().unwrap_or("null"));
    let def: ChainDef = serde_json::from_value(json_of("definition")?)?;
    let plan = chain::plan(&def).map_err(|e| {
        Error::Internal(format!(
            "execution {id}: stored definition does not plan: {}",
            e.join("; ")
        ))
    })?;
    Ok(Record {
        run: Run {
            id: text("id"),
            chain: text("chain"),
            title: text("title"),
            plan,
            options: Options::read(json_of("options")?)?,
            mode: Mode::read(row["mode"].clone())?,
            tracked: true,
            author: Author::from_row(&row),
        },
        status: text("status"),
        variables: json_of("variables")?,
        report: match row["report"].as_str() {
            Some(r) => Some(crate::engine::run::stored::report(r)?),
            None => None,
        },
        started_at: row["started_at"].clone(),
        finished_at: row["finished_at"].clone(),
        runs: row["runs"].as_i64().unwrap_or(1),
        here: row["here"].as_i64() == Some(1),
        orphaned: row["orphaned"].as_i64() == Some(1),
        stop_request: row["stop_request"].as_str().map(str::to_string),
    })
}

/// The run count an execution starts a leg with (at `execute_chain` or `resume_chain`): a background
/// run counts itself as it starts; a synchronous one is running already. Only further starts in
/// the same leg are continuations after an interruption.
fn first_runs(mode: Mode) -> i64 {
    match mode {
        Mode::Async => 0,
        Mode::Sync => 1,
    }
}

/// Stores a new execution record (status `running`).
pub async fn insert(
    ctx: &dyn ToolContext,
    run: &Run,
    chain_row: &Value,
    definition: &Value,
    variables: &Value,
) -> Result<()> {
    let [author_user, author_roles] = Author::columns(run.author.as_ref());
    ctx.query(
        "INSERT INTO chain_executions (id, chain_id, chain_revision, owner, status, mode, definition, options, runs, variables, author, author_roles)
         VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        vec![
            json!(run.id),
            chain_row["id"].clone(),
            chain_row["revision"].clone(),
            json!(ctx.session_id()),
            json!(run.mode.as_str()),
            json!(definition.to_string()),
            json!(serde_json::to_string(&run.options)?),
            json!(first_runs(run.mode)),
            json!(variables.to_string()),
            author_user,
            author_roles,
        ],
    )
    .await?;
    Ok(())
}

/// Drops every step's input, outputs and attempts from a stored report.
fn trim_steps(stored: &mut Value) {
    if let Some(steps) = stored.get_mut("steps").and_then(Value::as_array_mut) {
        for s in steps.iter_mut().filter_map(Value::as_object_mut) {
            s.remove("input");
            s.remove("outputs");
            s.remove("attempts");
        }
    }
}

/// Stores where a run got to: its status and report (trimmed of step details at the end when the
/// execution does not keep intermediate results). A report too large to store is cut (step
/// details and variables dropped) and the run failed, saying why, so the record never stays
/// `running` because its save failed.
async fn save(ctx: &dyn ToolContext, run: &Run, report: &mut RunReport) -> Result<()> {
    let mut stored = serde_json::to_value(&*report)?;
    if report.status.is_final() && !run.options.save_intermediate_results {
        trim_steps(&mut stored);
    }
    let max = report_max_bytes(ctx);
    let mut text = stored.to_string();
    if text.len() > max {
        let reason = format!(
            "the run's report came to {} bytes, more than the {max} an execution keeps (CHAIN_REPORT_MAX_BYTES), so it was cut (step inputs, outputs and variables dropped) and the run failed; make the steps return less, or raise the limit",
            text.len()
        );
        report.stop(RunStatus::Failed, &reason);
        stored = serde_json::to_value(&*report)?;
        trim_steps(&mut stored);
        stored["variables"] = json!({});
        text = stored.to_string();
    }
    ctx.query(
        "UPDATE chain_executions SET status = ?2, report = ?3,
           updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
           finished_at = CASE WHEN ?4 THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END
         WHERE id = ?1",
        vec![
            json!(run.id),
            json!(report.status.as_str()),
            json!(text),
            json!(report.status.is_final()),
        ],
    )
    .await?;
    Ok(())
}

/// Runs `work` while renewing the job's lease, so that the session's watchdog sees the run alive
/// even while one step takes long.
async fn with_heartbeat<F: std::future::Future>(
    ctx: &dyn ToolContext,
    id: &str,
    work: F,
) -> F::Output {
    let every = (ctx.platform().job_lease_ms() / 3).max(100);
    let ticker = Box::pin(async move {
        loop {
            ctx.sleep(every).await;
            if let Err(e) = ctx.platform().job_heartbeat(id) {
                crate::log::error!("job heartbeat {id}: {e}");
            }
        }
    });
    match select(Box::pin(work), ticker).await {
        Either::Left((out, _)) => out,
        Either::Right((never, _)) => never,
    }
}

impl Run {
    fn host<'a>(&self, ctx: &'a dyn ToolContext, report: &RunReport) -> ChainHost<'a> {
        ChainHost::new(
            ctx,
            &self.chain,
            &self.id,
            self.tracked,
            self.plan.steps.len(),
            self.author.clone(),
            self.hidden(ctx.platform().registry()),
            super::host::kept(report),
        )
    }

    /// What of its steps events and answers may not show.
    pub fn hidden(&self, registry: &Registry) -> Hidden {
        guard::hidden_steps(&self.plan, registry)
    }

    /// Runs on from `report` until the run ends or pauses; a tracked run's record and job lease
    /// follow it.
    pub async fn drive(&self, ctx: &dyn ToolContext, report: RunReport) -> Result<RunReport> {
        let host = self.host(ctx, &report);
        let work = run::proceed(&self.plan, report, &host, self.options.run_options());
        if !self.tracked {
            let report = work.await;
            host.forget_changes().await;
            return Ok(report);
        }
        let mut report = with_heartbeat(ctx, &self.id, work).await;
        if report.status == RunStatus::Cancelled && report.error.is_none() {
            report.error = host.stop_reason();
        }
        // The lease is released only once the record says where the run got to: if saving fails,
        // the lapsed lease brings the watchdog back to it.
        save(ctx, self, &mut report).await?;
        if report.status.is_final() {
            host.forget_changes().await;
            self.release(ctx).await;
        }
        ctx.platform().job_finish(&self.id)?;
        Ok(report)
    }

    /// Gives back the execution's lease, if it holds one. Failing only delays the slot until the
    /// lease lapses (or a refused start finds the run ended), so it is logged, not raised.
    async fn release(&self, ctx: &dyn ToolContext) {
        let Some(lease) = &self.options.lease else {
            return;
        };
        let request = LeaseRequest::Release {
            kind: lease.kind.clone(),
            id: self.id.clone(),
        };
        if let Err(e) = ctx.platform().lease(&lease.owner, &request).await {
            crate::log::error!("lease release {}: {e}", self.id);
        }
    }

    /// Ends a run that will not go on (`cancelled`, or `failed` when interrupted for good): rolls
    /// back its completed steps when rollback is on, and stores the final report.
    async fn close(
        &self,
        ctx: &dyn ToolContext,
        mut report: RunReport,
        status: RunStatus,
        reason: &str,
    ) -> Result<RunReport> {
        report.stop(status, reason);
        let host = self.host(ctx, &report);
        if self.options.rollback {
            run::rollback(&self.plan, &mut report, &host).await;
        }
        save(ctx, self, &mut report).await?;
        host.forget_changes().await;
        self.release(ctx).await;
        ctx.platform().job_finish(&self.id)?;
        Ok(report)
    }
}

impl Record {
    /// The checkpoint to go on from (a fresh state when the run never reached one).
    fn checkpoint(&mut self) -> Result<RunReport> {
        match self.report.take() {
            Some(r) => Ok(r),
            None => fresh(&self.run.plan, self.variables.clone()),
        }
    }
}

/// Continues a background execution (its first run, or one after an interruption).
pub async fn run_background(ctx: &dyn ToolContext, id: &str) -> Result<()> {
    let mut rec = load(ctx, id, Scope::Session).await?;
    if rec.status != "running" {
        return ctx.platform().job_finish(id);
    }
    let runs = ctx
        .query(
            "UPDATE chain_executions SET runs = runs + 1 WHERE id = ?1 RETURNING runs",
            vec![json!(id)],
        )
        .await?
        .first()
        .and_then(|r| r["runs"].as_i64())
        .unwrap_or(rec.runs + 1);
    let report = rec.checkpoint()?;
    if let Some(reason) = rec.stop_request.take() {
        // Asked to stop while nothing ran it (its instance was reset): it stops here.
        rec.run
            .close(ctx, report, RunStatus::Cancelled, &reason)
            .await?;
        return Ok(());
    }
    if runs > MAX_RUNS {
        let reason = format!(
            "interrupted {} times (the server restarted or was overloaded); not resumed again",
            runs - 1
        );
        rec.run
            .close(ctx, report, RunStatus::Failed, &reason)
            .await?;
        return Ok(());
    }
    rec.run.drive(ctx, report).await?;
    Ok(())
}

/// Closes a synchronous execution whose call ended before its run did.
pub async fn abandon(ctx: &dyn ToolContext, id: &str) -> Result<()> {
    let mut rec = load(ctx, id, Scope::Session).await?;
    if rec.status != "running" {
        return Ok(());
    }
    let report = rec.checkpoint()?;
    rec.run
        .close(
            ctx,
            report,
            RunStatus::Failed,
            "interrupted: the call running it ended first (cancelled by the client, or the server restarted)",
        )
        .await?;
    Ok(())
}

/// The session is ending (or, once its background runs are over, its object is being deleted).
/// A signed-in user's runs are theirs, not the connection's:
///
/// - a background run still under way here (its job tracked by the session) goes on: the session
///   object keeps running it after the session ended, and the record stays the session's, so its
///   result is recorded where the user's other sessions read it and they can cancel it;
/// - a paused run, or a background run that nothing runs any more, is handed over (its owner
///   becomes [`ENDED_OWNER`]), and the user's other sessions see, resume and cancel it.
///
/// Every other open execution of the session is cancelled: an anonymous caller's (nobody can reach
/// it again), a synchronous run (its call is gone) and a run holding a concurrency lease that
/// nothing runs (given back now rather than held for nobody).
pub async fn session_ending(ctx: &dyn ToolContext) -> Result<()> {
    let open = ctx
        .query(
            "SELECT id FROM chain_executions WHERE owner = ?1 AND status IN ('running', 'awaiting_input')",
            vec![json!(ctx.session_id())],
        )
        .await?;
    for id in open.iter().filter_map(|r| r["id"].as_str()) {
        let mut rec = load(ctx, id, Scope::Session).await?;
        let options = &rec.run.options;
        let background = rec.run.mode == Mode::Async;
        if options.runner.is_some()
            && background
            && rec.status == "running"
            && ctx.platform().job_tracked(id)?
        {
            continue;
        }
        let outlives = options.runner.is_some()
            && options.lease.is_none()
            && (rec.status == "awaiting_input" || background);
        if outlives {
            ctx.query(
                "UPDATE chain_executions SET owner = ?2, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
                 WHERE id = ?1 AND owner = ?3",
                vec![
                    json!(id),
                    json!(format!("{ENDED_OWNER}{}", ctx.session_id())),
                    json!(ctx.session_id()),
                ],
            )
            .await?;
            continue;
        }
        let report = rec.checkpoint()?;
        rec.run
            .close(ctx, report, RunStatus::Cancelled, "the session ended")
            .await?;
    }
    Ok(())
}

/// Cancels an execution of the caller's: at once when it is paused or nothing runs it, at the next
/// step boundary when a run is under way (waiting up to `wait_ms` for it; if the step takes longer,
/// the view says the stop is pending). A run under way in another session (another of the user's,
/// or one that ended and still runs its background runs) is asked through its record.
pub async fn cancel(
    ctx: &dyn ToolContext,
    id: &str,
    reason: &str,
    wait_ms: u32,
) -> ToolResult<Value> {
    let mut rec = load(ctx, id, Scope::Caller).await?;
    if rec.status == "running" && !rec.orphaned {
        let asked = if rec.here {
            ctx.platform().job_stop(id, reason)?
        } else {
            ask_to_stop(ctx, id, reason).await?
        };
        if asked {
            let now = wait_for_stop(ctx, id, wait_ms).await?;
            match now.status.as_str() {
                // It paused at the boundary instead: closed below, as any paused execution.
                "awaiting_input" => rec = now,
                "running" => {
                    let mut view = now.view(ctx.platform().registry());
                    view["note"] = json!(format!(
                        "A step is still under way; the run stops before its next step (within {} s at most per step attempt). Follow it with get_chain_status.",
                        wait_ms / 1000
                    ));
                    return Ok(view);
                }
                _ => return Ok(now.view(ctx.platform().registry())),
            }
        } else if !rec.here {
            // It paused or ended between the two reads.
            rec = load(ctx, id, Scope::Caller).await?;
        }
    }
    if !matches!(rec.status.as_str(), "running" | "awaiting_input") {
        return Err(ToolError::failed(format!(
            "Execution {id} has already ended ({}); there is nothing to cancel.",
            rec.status
        )));
    }
    if rec.status == "running" && !rec.here && !rec.orphaned {
        return Err(ToolError::failed(format!(
            "Execution {id} was resumed by another call just now; call cancel_chain again to stop it."
        )));
    }
    // Nothing is running it: close it here. Stop tracking first, so the watchdog does not resume it.
    ctx.platform().job_finish(id)?;
    let report = rec.checkpoint()?;
    rec.run
        .close(ctx, report, RunStatus::Cancelled, reason)
        .await?;
    Ok(load(ctx, id, Scope::Caller)
        .await?
        .view(ctx.platform().registry()))
}

/// Asks the run of execution `id` under way in another session to stop, through its record (that
/// session's job lease is out of this one's reach): the run reads the request at its next
/// checkpoint, or as it is continued after an interruption. False when it is no longer running.
async fn ask_to_stop(ctx: &dyn ToolContext, id: &str, reason: &str) -> Result<bool> {
    let asked = ctx
        .query(
            "UPDATE chain_executions SET stop_request = ?2 WHERE id = ?1 AND status = 'running' RETURNING id",
            vec![json!(id), json!(reason)],
        )
        .await?;
    Ok(!asked.is_empty())
}

/// Execution `id` once its run stopped running (ended or paused), or as it is after `wait_ms`.
async fn wait_for_stop(ctx: &dyn ToolContext, id: &str, wait_ms: u32) -> Result<Record> {
    let mut waited = 0;
    loop {
        ctx.sleep(200).await;
        waited += 200;
        let now = load(ctx, id, Scope::Caller).await?;
        if now.status != "running" || waited >= wait_ms {
            return Ok(now);
        }
    }
}

/// Supplies the outputs a paused execution waits for and continues it: in this call when it ran
/// synchronously, in the background otherwise, or when `background` says so (the execution is a
/// background one from then on: `resume_chain`'s `in_background`, and a resume as an MCP task).
pub async fn resume(
    ctx: &dyn ToolContext,
    id: &str,
    outputs: &serde_json::Map<String, Value>,
    background: bool,
) -> ToolResult {
    let (mut run, report) = claim(ctx, id, outputs).await?;
    if background && run.mode == Mode::Sync {
        // Claimed: this session holds it and nothing runs it yet, so the switch races nobody.
        ctx.query(
            "UPDATE chain_executions SET mode = ?2, runs = ?3 WHERE id = ?1",
            vec![
                json!(id),
                json!(Mode::Async.as_str()),
                json!(first_runs(Mode::Async)),
            ],
        )
        .await?;
        run.mode = Mode::Async;
    }
    if run.mode == Mode::Async {
        ctx.platform()
            .job_start(JOB_KIND, id, JobMode::Background)
            .await?;
        return Ok(started_text(&run, "resumed in the background", None));
    }
    ctx.platform()
        .job_start(JOB_KIND, id, JobMode::Attached)
        .await?;
    let report = run.drive(ctx, report).await?;
    summary(&run, &report, &run.hidden(ctx.platform().registry()))
}

/// Supplies the outputs a paused synchronous execution waits for and runs it on in this call, to
/// its end or next pause: how FlowMind's `execute_workflow` continues a workflow.
pub async fn resume_here(
    ctx: &dyn ToolContext,
    id: &str,
    outputs: &serde_json::Map<String, Value>,
) -> Result<RunReport> {
    let (run, report) = claim(ctx, id, outputs).await?;
    ctx.platform()
        .job_start(JOB_KIND, id, JobMode::Attached)
        .await?;
    run.drive(ctx, report).await
}

/// The paused state of execution `id` with `outputs` supplied (or the last checkpoint of a running
/// one whose session ended, [`take_up`]), claimed for one caller: its status is `running` again.
async fn claim(
    ctx: &dyn ToolContext,
    id: &str,
    outputs: &serde_json::Map<String, Value>,
) -> ToolResult<(Run, RunReport)> {
    let mut rec = load(ctx, id, Scope::Caller).await?;
    if rec.status == "running" && rec.orphaned {
        return take_up(ctx, rec, outputs).await;
    }
    let Some(mut report) = rec.report.take().filter(|_| rec.status == "awaiting_input") else {
        return Err(ToolError::failed(format!(
            "Execution {id} is {}, not awaiting_input; only a paused execution, or a running one that nothing runs any more (get_chain_status then says so in its note), can be resumed.",
            rec.status
        )));
    };
    let size = serde_json::to_string(outputs)?.len();
    if size > super::host::MAX_STEP_OUTPUT_BYTES {
        return Err(ToolError::failed(format!(
            "Outputs rejected: they are {size} bytes of JSON; a step's outputs are limited to {} bytes (the execution's record keeps them).",
            super::host::MAX_STEP_OUTPUT_BYTES
        )));
    }
    report.supply(&rec.run.plan, outputs).map_err(|problems| {
        ToolError::failed(format!("Outputs rejected: {}", problems.join("; ")))
    })?;
    // Claim the pause atomically: of two concurrent resumes only one goes on. The run goes on in
    // this session, which now holds it (its end hands it over or cancels it, its watchdog minds it).
    let claimed = ctx
        .query(
            "UPDATE chain_executions SET status = 'running', report = ?2, runs = ?3, owner = ?4,
               stop_request = NULL, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
             WHERE id = ?1 AND status = 'awaiting_input' RETURNING id",
            vec![
                json!(id),
                json!(serde_json::to_string(&report)?),
                json!(first_runs(rec.run.mode)),
                json!(ctx.session_id()),
            ],
        )
        .await?;
    if claimed.is_empty() {
        return Err(ToolError::failed(format!(
            "Execution {id} was resumed or cancelled by another call just now."
        )));
    }
    Ok((rec.run, report))
}

/// Takes up, in this session, a running execution whose session ended: it goes on from its last
/// checkpoint (a step under way when the session ended runs again). It waits for no outputs.
async fn take_up(
    ctx: &dyn ToolContext,
    mut rec: Record,
    outputs: &serde_json::Map<String, Value>,
) -> ToolResult<(Run, RunReport)> {
    let id = rec.run.id.clone();
    if !outputs.is_empty() {
        return Err(ToolError::failed(format!(
            "Execution {id} waits for no outputs: it was running when its session ended. Call resume_chain with \"outputs\": {{}} to continue it here from its last checkpoint."
        )));
    }
    let report = rec.checkpoint()?;
    // Atomic, like a paused execution's claim: of two sessions taking it up, only one goes on.
    let claimed = ctx
        .query(
            "UPDATE chain_executions SET report = ?2, runs = ?3, owner = ?4, stop_request = NULL,
               updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
             WHERE id = ?1 AND status = 'running' AND owner LIKE ?5 RETURNING id",
            vec![
                json!(id),
                json!(serde_json::to_string(&report)?),
                json!(first_runs(rec.run.mode)),
                json!(ctx.session_id()),
                json!(format!("{ENDED_OWNER}%")),
            ],
        )
        .await?;
    if claimed.is_empty() {
        return Err(ToolError::failed(format!(
            "Execution {id} was resumed or cancelled by another call just now."
        )));
    }
    Ok((rec.run, report))
}

/// The answer of an execution started (or resumed) in the background, with the estimate of its
/// duration when it starts (`Plan::estimate_ms`): the readable text first, and the execution's
/// id, chain and step count as structured content, which a task call reads its id from
/// ([`started_execution`]).
pub fn started_text(run: &Run, what: &str, estimate_ms: Option<u64>) -> ToolOutput {
    let estimate = estimate_ms
        .map(|ms| format!("\n- Estimated Duration: {ms}ms"))
        .unwrap_or_default();
    let mut value = json!({
        "execution_id": run.id,
        "chain": run.chain,
        "status": "running",
        "total_steps": run.plan.steps.len(),
    });
    if let Some(ms) = estimate_ms {
        value["estimated_duration_ms"] = json!(ms);
    }
    ToolOutput::Described {
        value,
        summary: format!(
            "Chain execution {what}.\n\n**Execution Details:**\n- Chain: {} ({})\n- Execution ID: {}\n- Total Steps: {}{estimate}\n\nUse 'get_chain_status' with the execution ID to track progress, 'cancel_chain' to stop it.",
            run.title, run.chain, run.id, run.plan.steps.len()
        ),
    }
}

/// The id of the execution a tool call's answer (a `CallToolResult`) says is running: the
/// `execution_id` of its structured content ([`started_text`]), or of its `result` (FlowMind's
/// `execute_workflow`), when its `status` is `running`; `None` for any other answer (a refusal, a
/// failure, a run that ended within the call).
pub fn started_execution(result: &Value) -> Option<String> {
    if result.get("isError") == Some(&json!(true)) {
        return None;
    }
    let structured = result.get("structuredContent")?;
    let run = match structured.get("result") {
        Some(inner) if inner.is_object() => inner,
        _ => structured,
    };
    if run["status"] != "running" {
        return None;
    }
    run["execution_id"]
        .as_str()
        .filter(|id| crate::server::tasks::is_chain_task(id))
        .map(str::to_string)
}

fn short(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.chars().count() > 200 {
        format!("{}...", text.chars().take(200).collect::<String>())
    } else {
        text
    }
}

/// A paused step's prompt as answers show it: its rendered input hidden when the step waits for
/// one that may carry a sensitive value.
fn shown_prompt(hidden: &Hidden, id: u32, prompt: &Value) -> Value {
    let mut p = prompt.clone();
    if hidden.tainted.contains(&id) && p.get("input").is_some() {
        p["input"] = json!(HIDDEN);
    }
    p
}

/// The answer of a synchronous run: completed, paused for input, or failed (an error result).
/// The outputs of `hidden` steps are not shown: the answer is also recorded on the event stream.
pub fn summary(run: &Run, report: &RunReport, hidden: &Hidden) -> ToolResult {
    let title = &run.title;
    let duration = report.elapsed_ms.round();
    let total = report.steps.len();
    let finished = report
        .steps
        .iter()
        .filter(|s| {
            matches!(
                s.state,
                StepState::Done | StepState::FellBack | StepState::Warned | StepState::Skipped
            )
        })
        .count();
    let outputs: Vec<String> = report
        .steps
        .iter()
        .flat_map(|s| s.outputs.iter().map(move |o| (s.id, o)))
        .map(|(id, (k, v))| {
            let v = if hidden.outputs(id) {
                json!(HIDDEN)
            } else {
                v.clone()
            };
            format!("\n- {k}: {}", short(&v))
        })
        .collect();
    let notes: Vec<String> = report
        .steps
        .iter()
        .filter(|s| s.state != StepState::AwaitingInput)
        .filter_map(|s| {
            s.reason
                .as_ref()
                .map(|r| format!("\n- {} ({}): {r}", s.name, s.state.as_str()))
        })
        .collect();
    let warnings: Vec<String> = report
        .steps
        .iter()
        .flat_map(|s| {
            s.warnings
                .iter()
                .map(move |w| format!("\n- {}: {w}", s.name))
        })
        .collect();
    let id_line = if run.tracked {
        format!("\n\n**Execution ID:** {}", run.id)
    } else {
        String::new()
    };
    let text = |t: String| {
        Ok(ToolOutput::Content(vec![
            json!({ "type": "text", "text": t }),
        ]))
    };
    // A titled list of lines, when there are any.
    let section = |t: &mut String, title: &str, lines: &[String]| {
        if !lines.is_empty() {
            t.push_str(&format!("\n\n**{title}:**{}", lines.concat()));
        }
    };
    match report.status {
        RunStatus::Completed => {
            let mut t = format!(
                "Chain execution completed successfully.\n\n**Execution Results:**\n- Chain: {title}\n- Duration: {duration}ms\n- Steps Completed: {finished}/{total}\n- Final Status: completed"
            );
            section(&mut t, "Key Outputs", &outputs);
            section(&mut t, "Step Notes", &notes);
            section(&mut t, "Warnings", &warnings);
            if run.tracked {
                t.push_str(&format!("{id_line} (saved for reference)"));
            }
            text(t)
        }
        RunStatus::AwaitingInput | RunStatus::Running => {
            let mut t = format!(
                "Chain execution paused: a step needs input.\n\n**Progress:**\n- Chain: {title}\n- Steps Completed: {finished}/{total}\n- Status: awaiting_input{id_line}"
            );
            for s in report
                .steps
                .iter()
                .filter(|s| s.state == StepState::AwaitingInput)
            {
                let p = shown_prompt(hidden, s.id, s.prompt.as_ref().unwrap_or(&Value::Null));
                t.push_str(&format!(
                    "\n\n**Step '{}' waits for:** {}\n\n**Instructions:**\n{}\n\n**Input:**\n{}",
                    s.name,
                    crate::tools::strings(&p["output_variables"]).join(", "),
                    p["instructions"].as_str().unwrap_or(""),
                    p["input"].as_str().unwrap_or(""),
                ));
            }
            let awaited = crate::engine::sort::object(
                run.plan
                    .steps
                    .iter()
                    .zip(&report.steps)
                    .filter(|(_, r)| r.state == StepState::AwaitingInput)
                    .flat_map(|(s, _)| s.def.output_variables.iter())
                    .map(|k| (k.clone(), json!("…"))),
            );
            t.push_str(&format!(
                "\n\nProduce the outputs, then call resume_chain({}) to continue, or cancel_chain to stop.",
                json!({ "execution_id": run.id, "outputs": awaited })
            ));
            text(t)
        }
        status => {
            let status = status.as_str();
            let failed = report.steps.iter().find(|s| s.state == StepState::Failed);
            let error = failed
                .and_then(|s| s.reason.clone())
                .or_else(|| report.error.clone())
                .unwrap_or_else(|| match status {
                    "timed_out" => "the chain ran past its time limit".into(),
                    _ => "unknown".into(),
                });
            let mut t = format!(
                "Chain execution failed.\n\n**Failure Details:**\n- Chain: {title}\n- Duration: {duration}ms\n- Steps Completed: {finished}/{total}\n- Final Status: {status}\n- Failed Step: {}\n- Error: {error}",
                report.failed_step.as_deref().unwrap_or(match status {
                    "timed_out" => "none (the time limit was reached)",
                    _ => "none",
                }),
            );
            let rollbacks: Vec<String> = report
                .rollbacks
                .iter()
                .map(|r| {
                    let error = r.error.as_ref().map(|e| format!(" ({e})"));
                    format!(
                        "\n- step {}: {}{}",
                        r.id,
                        r.outcome,
                        error.unwrap_or_default()
                    )
                })
                .collect();
            section(&mut t, "Rollback", &rollbacks);
            section(&mut t, "Partial Results", &outputs);
            section(&mut t, "Warnings", &warnings);
            t.push_str(&id_line);
            Err(ToolError::failed(t))
        }
    }
}

impl Record {
    /// The `get_chain_status` view of the execution. Outputs of steps that may carry a sensitive
    /// value (`guard::hidden_steps`) are not shown: the answer is also recorded on the event stream.
    fn view(&self, registry: &Registry) -> Value {
        let hidden = self.run.hidden(registry);
        let report = self.report.as_ref();
        let steps: Vec<Value> = report
            .map(|r| {
                r.steps
                    .iter()
                    .map(|s| {
                        let outputs = if hidden.outputs(s.id) {
                            guard::hide(&s.outputs)
                        } else {
                            json!(s.outputs)
                        };
                        let mut v = json!({
                            "id": s.id, "name": s.name, "state": s.state.as_str(), "reason": s.reason,
                            "attempts": s.attempts.len(), "outputs": outputs,
                        });
                        if !s.warnings.is_empty() {
                            v["warnings"] = json!(s.warnings);
                        }
                        if let Some(p) = &s.prompt {
                            v["awaiting"] = shown_prompt(&hidden, s.id, p);
                        }
                        v
                    })
                    .collect()
            })
            .unwrap_or_else(|| {
                self.run
                    .plan
                    .steps
                    .iter()
                    .map(|s| json!({ "id": s.def.id, "name": s.def.name, "state": "pending", "reason": null, "attempts": 0, "outputs": {} }))
                    .collect()
            });
        let finished = steps
            .iter()
            .filter(|s| {
                !matches!(
                    s["state"].as_str(),
                    Some("pending" | "not_run" | "awaiting_input")
                )
            })
            .count();
        let mut view = json!({
            "execution_id": self.run.id,
            "chain": self.run.chain,
            "mode": self.run.mode.as_str(),
            "status": self.status,
            "runs": self.runs,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "steps_finished": finished,
            "steps_total": steps.len(),
            "failed_step": report.and_then(|r| r.failed_step.clone()),
            "error": report.and_then(|r| r.error.clone()),
            "steps": steps,
            "rollbacks": report.map(|r| json!(r.rollbacks)).unwrap_or_else(|| json!([])),
        });
        if self.status == "running" && self.orphaned {
            view["note"] = json!("The MCP session that ran it ended; nothing runs it now. resume_chain (with \"outputs\": {}) continues it in your session from its last checkpoint; cancel_chain cancels it.");
        }
        view
    }
}

/// `get_chain_status`: the status view of an execution of this session, or of another session
/// of the same signed-in user.
pub async fn status(ctx: &dyn ToolContext, id: &str) -> Result<Value> {
    Ok(load(ctx, id, Scope::Caller)
        .await?
        .view(ctx.platform().registry()))
}

/// Execution `id` as an MCP task sees it (`server::tasks`): its `get_chain_status` view and, once
/// it ended, the `CallToolResult` a synchronous `execute_chain` would have answered (an error
/// result when the run did not complete).
pub async fn task_state(ctx: &dyn ToolContext, id: &str) -> ToolResult<(Value, Option<Value>)> {
    let rec = load(ctx, id, Scope::Caller).await?;
    let registry = ctx.platform().registry();
    let view = rec.view(registry);
    if matches!(rec.status.as_str(), "running" | "awaiting_input") {
        return Ok((view, None));
    }
    if let Some(result) = linked_result(ctx, &rec).await? {
        return Ok((view, Some(result)));
    }
    let text = |t: String| json!([{ "type": "text", "text": t }]);
    let result = match &rec.report {
        Some(report) => match summary(&rec.run, report, &rec.run.hidden(registry)) {
            Ok(ToolOutput::Content(blocks)) => json!({ "content": blocks }),
            Ok(_) => {
                return Err(ToolError::Internal(Error::Internal(format!(
                    "execution {id}: a chain's summary is text"
                ))))
            }
            Err(e) => json!({ "content": text(e.public_message()), "isError": true }),
        },
        None => json!({
            "content": text(format!("Chain execution {id} ended ({}) before its first step.", rec.status)),
            "isError": true,
        }),
    };
    Ok((view, Some(result)))
}

/// The task result of an ended execution of a linked chain (`run_linked`): the answer of the tool
/// that runs it as a task (`TaskRun::Linked`), rendered by that tool's toolset from what it kept
/// with the run, so it is the answer the tool's synchronous call gives. `None` for any other
/// chain.
async fn linked_result(ctx: &dyn ToolContext, rec: &Record) -> Result<Option<Value>> {
    if !super::is_linked_name(&rec.run.chain) {
        return Ok(None);
    }
    let registry = ctx.platform().registry();
    let Some((tool, render)) = registry.tools().find_map(|t| match t.def.task.run() {
        Some(crate::registry::task::TaskRun::Linked(_, render)) => Some((t, render)),
        _ => None,
    }) else {
        return Ok(None);
    };
    let kept = rec.run.options.kept.clone().unwrap_or(Value::Null);
    let out = match render(ctx, &rec.run.id, &kept).await {
        Ok(out) => out,
        Err(e) => return Ok(Some(crate::registry::render(tool, &e))),
    };
    crate::registry::result_of(tool, out).map(Some)
}

/// The `context_metadata` fields `list_chain_executions` filters on.
pub const CONTEXT_FIELDS: [&str; 4] = ["agent_id", "session_id", "client_id", "source_channel"];

/// Most executions one listing returns.
pub const MAX_LISTED: u64 = 100;

/// `list_chain_executions`: the caller's executions (this session's, and a signed-in user's from
/// every session), newest first, filtered by chain, status and `context_metadata` fields.
pub async fn list(ctx: &dyn ToolContext, filter: &Value) -> Result<Value> {
    let (mine, mut params) = in_scope(ctx, Scope::Caller, 1);
    let mut conditions = vec![mine];
    let mut add = |sql: &str, value: Value| {
        params.push(value);
        conditions.push(sql.replace('?', &format!("?{}", params.len())));
    };
    if let Some(chain) = filter.get("chain_name").and_then(Value::as_str) {
        add("c.name = ?", json!(chain));
    }
    if let Some(status) = filter.get("status").and_then(Value::as_str) {
        add("e.status = ?", json!(status));
    }
    for field in CONTEXT_FIELDS {
        if let Some(v) = filter.get(field).and_then(Value::as_str) {
            add(
                &format!("json_extract(e.options, '$.context.{field}') = ?"),
                json!(v),
            );
        }
    }
    let limit = filter
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(20)
        .clamp(1, MAX_LISTED);
    let rows = ctx
        .query(
            &format!(
                "SELECT e.id, c.name AS chain, e.status, e.mode, e.started_at, e.finished_at,
                        json_extract(e.options, '$.context') AS context, e.owner = ?1 AS here
                 FROM chain_executions e JOIN execution_chains c ON c.id = e.chain_id
                 WHERE {} ORDER BY e.started_at DESC, e.id LIMIT {limit}",
                conditions.join(" AND ")
            ),
            params,
        )
        .await?;
    let executions: Vec<Value> = rows
        .iter()
        .map(|r| {
            let context = r["context"]
                .as_str()
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .unwrap_or_else(|| json!({}));
            json!({
                "execution_id": r["id"],
                "chain": r["chain"],
                "status": r["status"],
                "mode": r["mode"],
                "started_at": r["started_at"],
                "finished_at": r["finished_at"],
                "context_metadata": context,
                "this_session": r["here"].as_i64() == Some(1),
            })
        })
        .collect();
    Ok(json!({ "count": executions.len(), "executions": executions }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::assert_same_as_derive as same;

    /// Stored options read by hand are what the derive reads: every field present, the defaulted
    /// and optional ones absent or `null`, mistyped fields, extra fields, and a value that is not
    /// an object.
    #[test]
    fn options_read_as_their_derive_reads_them() {
        let full = json!({
            "parallel": true, "rollback": false, "max_execution_ms": 30000,
            "save_intermediate_results": true, "auto_retry": true, "strict_inputs": false,
            "context": { "agent_id": "a" }, "runner": "u1",
            "lease": { "owner": "user:u1", "kind": "execute_workflow" }, "kept": { "k": [1] },
        });
        let mut rows = vec![full.clone(), json!(null), json!("options"), json!({})];
        let base = json!({
            "parallel": false, "rollback": true, "max_execution_ms": 0,
            "save_intermediate_results": false,
        });
        rows.push(base.clone());
        let with = |key: &str, v: Value| {
            let mut o = base.clone();
            o[key] = v;
            o
        };
        let without = |key: &str| {
            let mut o = full.clone();
            o.as_object_mut().map(|m| m.remove(key));
            o
        };
        for key in [
            "parallel",
            "rollback",
            "max_execution_ms",
            "save_intermediate_results",
            "auto_retry",
            "strict_inputs",
            "context",
            "runner",
            "lease",
            "kept",
        ] {
            rows.push(without(key));
            rows.push(with(key, json!(null)));
            rows.push(with(key, json!("x")));
            rows.push(with(key, json!(1)));
        }
        rows.push(with("max_execution_ms", json!(-1)));
        rows.push(with("max_execution_ms", json!(1.5)));
        rows.push(with("lease", json!({ "owner": "o" })));
        rows.push(with("lease", json!({ "owner": "o", "kind": 2 })));
        rows.push(with(
            "lease",
            json!({ "owner": "o", "kind": "k", "more": 1 }),
        ));
        rows.push(with("extra", json!(true)));
        same(Options::read, &rows);
    }

    /// The stored `mode` column read by hand is what the derive reads.
    #[test]
    fn mode_reads_as_its_derive_reads_it() {
        same(
            Mode::read,
            &[
                json!("sync"),
                json!("async"),
                json!("Sync"),
                json!(""),
                json!(1),
                json!(null),
            ],
        );
    }
}
