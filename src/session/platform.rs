//! The session's [`Platform`]: D1, KV, outbound fetch, the event stream and tracked jobs, shared by
//! tool calls and background jobs.

use std::time::Duration;

use futures::future::LocalBoxFuture;
use serde_json::Value;
use worker::{js_sys, Delay, Fetch, Headers, Method, Request, RequestInit};

use super::Core;
use crate::clock;
use crate::error::{Error, Result};
use crate::mcp::sse::STANDALONE;
use crate::registry::{Heartbeat, Inbound, JobMode, Outbound, Platform, Registry, Statement};
use crate::store::d1;

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
    fn query<'a>(
        &'a self,
        sql: &'a str,
        params: Vec<Value>,
    ) -> LocalBoxFuture<'a, Result<Vec<Value>>> {
        Box::pin(async move { d1::query(&self.db_binding()?, sql, &params).await })
    }

    fn batch(&self, statements: Vec<Statement>) -> LocalBoxFuture<'_, Result<Vec<Vec<Value>>>> {
        Box::pin(async move {
            let pairs: Vec<(String, Vec<Value>)> =
                statements.into_iter().map(|s| (s.sql, s.params)).collect();
            d1::batch(&self.db_binding()?, &pairs).await
        })
    }

    fn cache_get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            self.cache()?
                .get(key)
                .text()
                .await
                .map_err(|e| Error::Storage(format!("KV get: {e}")))
        })
    }

    fn cache_put<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl_secs: u64,
    ) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.cache()?
                .put(key, value)
                .map_err(|e| Error::Storage(format!("KV put: {e}")))?
                .expiration_ttl(ttl_secs.max(60))
                .execute()
                .await
                .map_err(|e| Error::Storage(format!("KV put: {e}")))
        })
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

    fn setting(&self, name: &str) -> Option<String> {
        self.env
            .secret(name)
            .or_else(|_| self.env.var(name))
            .ok()
            .map(|v| v.to_string())
            .filter(|v| !v.is_empty())
    }

    fn fetch(&self, request: Outbound) -> LocalBoxFuture<'_, Result<Inbound>> {
        Box::pin(async move {
            let unavailable = |e: worker::Error| Error::Client(format!("{}: {e}", request.url));
            let headers = Headers::new();
            for (k, v) in &request.headers {
                headers.set(k, v).map_err(unavailable)?;
            }
            let mut init = RequestInit::new();
            init.with_method(Method::from(request.method.to_string()))
                .with_headers(headers);
            if let Some(body) = &request.body {
                init.with_body(Some(body.as_str().into()));
            }
            let req = Request::new_with_init(&request.url, &init).map_err(unavailable)?;
            let mut resp = Fetch::Request(req).send().await.map_err(unavailable)?;
            let body = resp.text().await.map_err(unavailable)?;
            Ok(Inbound {
                status: resp.status_code(),
                body,
            })
        })
    }

    fn emit(&self, event: &str, data: Value) {
        if let Err(e) = self.publish(STANDALONE, event, &data.to_string()) {
            worker::console_error!("event not logged: {e}");
        }
    }

    fn registry(&self) -> &Registry {
        &self.registry
    }

    fn sleep(&self, ms: u32) -> LocalBoxFuture<'_, ()> {
        Box::pin(Delay::from(Duration::from_millis(u64::from(ms))))
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
        self.cfg.job_lease_secs.saturating_mul(1000)
    }

    fn job_heartbeat(&self, id: &str) -> Result<Heartbeat> {
        Ok(match self.db.job_renew(id, self.lease_end())? {
            Some(None) => Heartbeat::Continue,
            Some(Some(reason)) => Heartbeat::Stop(reason),
            None => Heartbeat::Stop("the run is no longer tracked by its session".into()),
        })
    }

    fn job_finish(&self, id: &str) -> Result<()> {
        self.db.job_delete(id)
    }

    fn job_stop(&self, id: &str, reason: &str) -> Result<bool> {
        let lease = self.db.job_request_stop(id, reason)?;
        Ok(lease.is_some_and(|end| end > clock::now_ms() as i64))
    }
}
