//! Tracked jobs of a session (chain executions): background runs, and the alarm's watchdog that
//! resumes background runs whose lease lapsed and abandons runs whose call ended.
//!
//! A background run starts at once in this instance. Nothing but its lease ties it to the instance:
//! if the instance is evicted or reset mid-run, the lease stops being renewed and the next alarm
//! starts a new run, which continues from the job's last checkpoint (kept by its toolset in D1).

use std::rc::Rc;

use futures::future::{AbortHandle, Abortable, LocalBoxFuture};
use serde_json::json;

use super::Core;
use crate::clock;
use crate::error::Result;
use crate::registry::Unattended;

/// The context of a background run: the session's platform, acting for the session's user.
fn unattended(core: &Core) -> Unattended<'_> {
    Unattended {
        platform: core,
        caller: core.stored_caller(),
        what: "a background run",
    }
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
        if let Ok(Err(e)) = outcome {
            worker::console_error!(
                "{}",
                json!({ "job": id, "kind": kind, "error": e.to_string() })
            );
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
/// await) and abandons every lapsed job whose call has ended.
pub async fn lapsed(core: &Rc<Core>) -> Result<Vec<LocalBoxFuture<'static, ()>>> {
    let now = clock::now_ms() as i64;
    let lease = i64::from(core.cfg.job_lease_secs) * 1000;
    let mut runs = Vec::new();
    for job in core.db.jobs_lapsed(now)? {
        if core.hub.job_is_live(&job.id) {
            continue;
        }
        if job.background != 0 {
            core.db.job_renew(&job.id, now + lease)?;
            runs.extend(run(core.clone(), job.kind, job.id));
        } else {
            crate::tools::abandon_job(&unattended(core), &job.kind, &job.id).await?;
            core.db.job_delete(&job.id)?;
        }
    }
    Ok(runs)
}

/// The session is ending: every toolset closes what it keeps open for it.
pub async fn session_ending(core: &Rc<Core>) {
    if let Err(e) = crate::tools::session_ending(&unattended(core)).await {
        worker::console_error!("session end: {e}");
    }
}
