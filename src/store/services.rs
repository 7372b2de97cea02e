//! The Worker environment's services as tools use them — D1, KV, settings and secrets, outbound
//! fetch, timers, the tool registry, the confirmation store and the rate limiter: the one
//! [`EnvServices`] over the env, which every `Platform` the edge layer provides (a session
//! object's, a request's, a confirmation object's) hands out as its `env()`.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use futures::channel::oneshot;
use futures::future::LocalBoxFuture;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{js_sys, Delay, Env, Fetch, Headers, Method, Request, RequestInit};

use super::d1;
use crate::edge::config::Config;
use crate::error::{Error, Result};
use crate::limiter::leases::{LeaseAnswer, LeaseRequest};
use crate::limiter::{Take, LEASE_URL};
use crate::registry::limits::{Admission, Limit};
use crate::registry::{Caller, EnvServices, Inbound, Outbound, Registry, Statement};
use crate::tools::flowmind::levels::Thresholds;

/// Env-backed services.
#[derive(Clone)]
pub struct Services {
    env: Env,
    registry: Rc<Registry>,
    cfg: Rc<Config>,
}

impl Services {
    /// Services over `env`, with the deployment's tools and the `RATE_LIMITS`, `TOOL_TIMEOUTS`
    /// and FlowMind levels of `cfg`: the configuration the caller has already read from `env`,
    /// so no request parses its settings twice.
    pub fn with_config(env: Env, registry: Rc<Registry>, cfg: &Rc<Config>) -> Self {
        Services {
            env,
            registry,
            cfg: cfg.clone(),
        }
    }

    /// FlowMind's level thresholds (`FLOWMIND_LEVELS`), `None` when progressive authorization is
    /// off.
    pub fn flowmind_levels(&self) -> Option<Thresholds> {
        self.cfg.flowmind_levels
    }

    /// The Worker's bindings, for services beside these (the listen streams of `server::listen`).
    pub fn env(&self) -> &Env {
        &self.env
    }

    fn db(&self) -> Result<worker::D1Database> {
        self.env
            .d1("DB")
            .map_err(|e| Error::Storage(format!("D1 binding DB: {e}")))
    }

    fn kv(&self) -> Result<worker::kv::KvStore> {
        self.env
            .kv("CACHE")
            .map_err(|e| Error::Storage(format!("KV binding CACHE: {e}")))
    }

    /// The Workers AI binding `AI`, when the env has one.
    fn ai_binding(&self) -> Option<JsValue> {
        js_sys::Reflect::get(self.env.as_ref(), &JsValue::from_str("AI"))
            .ok()
            .filter(|b| !b.is_undefined() && !b.is_null())
    }
}

impl EnvServices for Services {
    fn query<'a>(
        &'a self,
        sql: &'a str,
        params: Vec<Value>,
    ) -> LocalBoxFuture<'a, Result<Vec<Value>>> {
        Box::pin(async move { d1::query(&self.db()?, sql, &params).await })
    }

    fn batch(&self, statements: Vec<Statement>) -> LocalBoxFuture<'_, Result<Vec<Vec<Value>>>> {
        Box::pin(async move {
            let pairs: Vec<(String, Vec<Value>)> =
                statements.into_iter().map(|s| (s.sql, s.params)).collect();
            d1::batch(&self.db()?, &pairs).await
        })
    }

    fn cache_get<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            self.kv()?
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
            self.kv()?
                .put(key, value)
                .map_err(|e| Error::Storage(format!("KV put: {e}")))?
                .expiration_ttl(ttl_secs.max(60))
                .execute()
                .await
                .map_err(|e| Error::Storage(format!("KV put: {e}")))
        })
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
            let unavailable =
                |e: worker::Error| Error::Unavailable(format!("{}: {e}", request.url));
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

    fn sign_rs256<'a>(
        &'a self,
        pkcs8_der: &'a [u8],
        message: &'a [u8],
    ) -> LocalBoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(crate::edge::auth::sign_rs256(pkcs8_der, message))
    }

    fn registry(&self) -> &Registry {
        &self.registry
    }

    fn sleep(&self, ms: u32) -> LocalBoxFuture<'_, ()> {
        Box::pin(Delay::from(Duration::from_millis(u64::from(ms))))
    }

    /// One request to the `Confirmation` object of `id`.
    fn confirmation<'a>(
        &'a self,
        id: &'a str,
        op: &'a str,
        body: &'a Value,
        caller: &'a Caller,
    ) -> LocalBoxFuture<'a, Result<(u16, Value)>> {
        Box::pin(async move {
            crate::wire::ObjectRequest::confirmation(id, op, caller)
                .json(body)?
                .send_json(&self.env)
                .await
        })
    }

    /// One request to the `RateLimiter` object named `caller`.
    fn rate_limit<'a>(
        &'a self,
        caller: &'a str,
        tool: &'a str,
    ) -> LocalBoxFuture<'a, Result<Option<(Limit, Admission)>>> {
        Box::pin(async move {
            let Some(limit) = self.cfg.rate_limits.for_tool(&self.registry, tool) else {
                return Ok(None);
            };
            let request = Take {
                tool: tool.to_string(),
                capacity: limit.capacity,
                period_ms: limit.period_ms,
                backoff: self
                    .registry
                    .get(tool)
                    .is_some_and(|t| t.def.progressive_backoff),
            };
            let admission = crate::limiter::send_take(&self.env, caller, &request).await?;
            Ok(Some((limit, admission)))
        })
    }

    /// One request to the `RateLimiter` object named `owner`.
    fn lease<'a>(
        &'a self,
        owner: &'a str,
        request: &'a LeaseRequest,
    ) -> LocalBoxFuture<'a, Result<LeaseAnswer>> {
        Box::pin(crate::limiter::ask(
            &self.env,
            owner,
            LEASE_URL,
            request,
            " to a lease request",
            LeaseAnswer::read,
        ))
    }

    fn timeout_override(&self, tool: &str) -> Option<u32> {
        *self.cfg.tool_timeouts.get(tool)
    }

    fn generation_ttl_ms(&self) -> u32 {
        self.cfg.flowmind_generation_ttl_ms
    }

    fn ai_bound(&self) -> bool {
        self.ai_binding().is_some()
    }

    /// The input and answer cross as JSON text (`JSON.parse`, `JSON.stringify`): `Ai::run`
    /// converts with serde-wasm-bindgen, which would turn a `serde_json::Value` object into a JS
    /// `Map` the model cannot read.
    fn ai_run<'a>(
        &'a self,
        model: &'a str,
        input: &'a Value,
    ) -> LocalBoxFuture<'a, Result<Option<Value>>> {
        Box::pin(async move {
            let Some(binding) = self.ai_binding() else {
                return Ok(None);
            };
            let failed = |what: &str, e: JsValue| {
                let text = e
                    .dyn_ref::<js_sys::Error>()
                    .map(|e| String::from(e.message()))
                    .or_else(|| e.as_string())
                    .unwrap_or_else(|| format!("{e:?}"));
                Error::Unavailable(format!("Workers AI {what}: {text}"))
            };
            let run: js_sys::Function = js_sys::Reflect::get(&binding, &JsValue::from_str("run"))
                .ok()
                .and_then(|f| f.dyn_into().ok())
                .ok_or_else(|| {
                    Error::Misconfigured(
                        "the binding AI has no run method: bind Workers AI as AI ([ai] binding = \"AI\" in wrangler.toml)".into(),
                    )
                })?;
            let js_input =
                js_sys::JSON::parse(&input.to_string()).map_err(|e| failed("input", e))?;
            let promise = run
                .call2(&binding, &JsValue::from_str(model), &js_input)
                .map_err(|e| failed("run", e))?;
            let output = JsFuture::from(js_sys::Promise::resolve(&promise))
                .await
                .map_err(|e| failed("run", e))?;
            let text = js_sys::JSON::stringify(&output)
                .ok()
                .and_then(|s| s.as_string())
                .ok_or_else(|| {
                    Error::Unavailable(format!(
                        "Workers AI {model} answered with something that is not JSON"
                    ))
                })?;
            serde_json::from_str(&text).map(Some).map_err(|e| {
                Error::Unavailable(format!(
                    "Workers AI {model} answered with unreadable JSON: {e}"
                ))
            })
        })
    }
}

/// The platform of work that has no MCP session (a 2026-07-28 request, a confirmed write): the
/// env's services; session state and background jobs are refused with `refusal`; tool events go
/// to a session's event stream when the request named one (`events`).
pub struct Detached {
    /// The env's services.
    pub services: Services,
    /// What stands in for the session id (who the rate limiter counts an anonymous caller as).
    pub owner: String,
    /// Tool events on their way to a session's event stream, in order; `None`: dropped.
    pub events: RefCell<Option<UnboundedSender<Value>>>,
    /// Resolves when every event sent so far has been delivered.
    pub delivered: RefCell<Option<oneshot::Receiver<()>>>,
    /// Why session state and jobs are refused.
    pub refusal: fn() -> Error,
}

impl Detached {
    /// The services alone: no events.
    pub fn new(services: Services, owner: String, refusal: fn() -> Error) -> Self {
        Detached {
            services,
            owner,
            events: RefCell::new(None),
            delivered: RefCell::new(None),
            refusal,
        }
    }

    /// The env's services.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Waits until every event emitted so far has reached its session, so none is lost when the
    /// request ends.
    pub async fn flush(&self) {
        self.events.borrow_mut().take();
        let delivered = self.delivered.borrow_mut().take();
        if let Some(delivered) = delivered {
            let _ = delivered.await;
        }
    }
}

impl crate::registry::Platform for Detached {
    fn env(&self) -> &(dyn EnvServices + 'static) {
        &self.services
    }

    fn session_get(&self, _key: &str) -> Result<Option<String>> {
        Err((self.refusal)())
    }

    fn session_set(&self, _key: &str, _value: &str) -> Result<()> {
        Err((self.refusal)())
    }

    fn session_id(&self) -> String {
        self.owner.clone()
    }

    fn emit(&self, event: &str, data: Value) {
        if let Some(tx) = self.events.borrow().as_ref() {
            let _ = tx.unbounded_send(serde_json::json!({ "event": event, "data": data }));
        }
    }

    fn records_events(&self) -> bool {
        self.events.borrow().is_some()
    }

    fn job_start<'a>(
        &'a self,
        _kind: &'a str,
        _id: &'a str,
        _mode: crate::registry::JobMode,
    ) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async { Err((self.refusal)()) })
    }
}
