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
use crate::server::call::CallContext;

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
