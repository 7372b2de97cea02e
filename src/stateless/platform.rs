//! The [`Platform`] of a stateless call: the env's services, and nothing a session would hold.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use serde_json::Value;
use worker::{Env, Request};

use crate::edge::http::header;
use crate::error::{Error, Result};
use crate::mcp::modern;
use crate::registry::{Caller, Heartbeat, JobMode, Platform, Registry};
use crate::store::services::{delegate_services, Services};

/// The env's services for one stateless request.
pub struct StatelessPlatform {
    services: Services,
    /// Who the rate limiter counts an anonymous caller as: there is no session, so the client's
    /// address stands in for it.
    anonymous_owner: String,
}

impl StatelessPlatform {
    /// The platform of request `req` (from `caller`).
    pub fn new(
        env: &Env,
        registry: Rc<Registry>,
        req: &Request,
        _r: &modern::Request,
        _caller: &Caller,
    ) -> Self {
        let address = header(req, "cf-connecting-ip").unwrap_or_else(|| "local".into());
        StatelessPlatform {
            services: Services::new(env.clone(), registry),
            anonymous_owner: format!("stateless-{address}"),
        }
    }

    fn services(&self) -> &Services {
        &self.services
    }
}

fn needs_session() -> Error {
    Error::ToolFailed(
        "this tool keeps state in an MCP session, which 2026-07-28 requests do not have; call it from a 2025 session (initialize first)".into(),
    )
}

impl Platform for StatelessPlatform {
    delegate_services!();

    fn session_get(&self, _key: &str) -> Result<Option<String>> {
        Err(needs_session())
    }

    fn session_set(&self, _key: &str, _value: &str) -> Result<()> {
        Err(needs_session())
    }

    fn session_id(&self) -> String {
        self.anonymous_owner.clone()
    }

    fn emit(&self, _event: &str, _data: Value) {}

    fn job_start<'a>(
        &'a self,
        _kind: &'a str,
        _id: &'a str,
        _mode: JobMode,
    ) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async { Err(needs_session()) })
    }

    fn job_lease_ms(&self) -> u32 {
        0
    }

    fn job_heartbeat(&self, _id: &str) -> Result<Heartbeat> {
        Ok(Heartbeat::Continue)
    }

    fn job_finish(&self, _id: &str) -> Result<()> {
        Ok(())
    }

    fn job_stop(&self, _id: &str, _reason: &str) -> Result<bool> {
        Ok(false)
    }
}
