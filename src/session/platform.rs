//! The session's [`Platform`]: the env's services (D1, KV, fetch, …; `store::services`) as its
//! `env()`, and what only a session has: its state, its event stream and tracked jobs. Shared by
//! tool calls and background jobs.

use futures::future::LocalBoxFuture;
use serde_json::Value;
use worker::js_sys;

use super::Core;
use crate::clock;
use crate::error::{Error, Result};
use crate::mcp::sse::STANDALONE;
use crate::registry::{EnvServices, Heartbeat, JobMode, Platform};

impl Core {
    fn lease_end(&self) -> i64 {
        clock::now_ms() as i64 + i64::from(self.job_lease_ms())
    }

    /// Makes sure the alarm fires no later than `at_ms`.
    pub(super) async fn alarm_by(&self, at_ms: i64) -> Result<()> {
        let storage = self.state.storage();
        let current = storage.get_alarm().await.map_err(Error::from)?;
        if current.is_none_or(|c| c > at_ms) {
            let date = js_sys::Date::new(&js_sys::Number::from(at_ms as f64));
            storage
                .set_alarm(worker::ScheduledTime::new(date))
                .await
                .map_err(Error::from)?;
        }
        Ok(())
    }

    /// When the alarm must fire to catch a job whose lease lapses.
    pub(super) fn watchdog_at(&self) -> Result<Option<i64>> {
        Ok(self.db.next_lease_end()?.map(|end| end + 1000))
    }
}

impl Platform for Core {
    fn env(&self) -> &(dyn EnvServices + 'static) {
        &self.deployment.services
    }

    fn session_get(&self, key: &str) -> Result<Option<String>> {
        self.db.get(&format!("tool:{key}"))
    }

    fn session_set(&self, key: &str, value: &str) -> Result<()> {
        self.db.set(&format!("tool:{key}"), value)
    }

    fn session_id(&self) -> String {
        self.session.clone()
    }

    fn emit(&self, event: &str, data: Value) {
        if let Err(e) = self.publish(STANDALONE, event, &data.to_string()) {
            crate::log::error!("event not logged: {e}");
        }
    }

    fn job_start<'a>(
        &'a self,
        kind: &'a str,
        id: &'a str,
        mode: JobMode,
    ) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let lease = self.lease_end();
            self.db
                .job_insert(kind, id, mode == JobMode::Background, lease)?;
            super::jobs::chain_task_moved(self, id);
            self.alarm_by(lease + 1000).await?;
            if mode == JobMode::Background {
                if let Some(core) = self.me.upgrade() {
                    super::jobs::spawn(core, kind.to_string(), id.to_string());
                }
            }
            Ok(())
        })
    }

    fn job_lease_ms(&self) -> u32 {
        self.deployment.cfg.job_lease_secs.saturating_mul(1000)
    }

    fn job_heartbeat(&self, id: &str) -> Result<Heartbeat> {
        Ok(match self.db.job_renew(id, self.lease_end())? {
            Some(None) => Heartbeat::Continue,
            Some(Some(reason)) => Heartbeat::Stop(reason),
            None => Heartbeat::Stop("the run is no longer tracked by its session".into()),
        })
    }

    fn job_tracked(&self, id: &str) -> Result<bool> {
        self.db.job_exists(id)
    }

    fn job_finish(&self, id: &str) -> Result<()> {
        self.db.job_delete(id)?;
        super::jobs::chain_task_moved(self, id);
        Ok(())
    }

    fn job_stop(&self, id: &str, reason: &str) -> Result<bool> {
        let lease = self.db.job_request_stop(id, reason)?;
        Ok(lease.is_some_and(|end| end > clock::now_ms() as i64))
    }
}
