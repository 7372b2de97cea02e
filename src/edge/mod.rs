//! The Worker's HTTP front: `/mcp` and the session, chat and confirmation routes. Header rules,
//! origin and host checks, tokens, request limits, body cap, session routing.
//!
//! Everything that can be refused without a session is refused here, before a Durable Object is
//! touched. What remains is forwarded to the session's object, addressed by `Mcp-Session-Id`.

pub mod auth;
pub mod chat;
pub mod config;
mod confirm;
pub mod http;
pub mod jwt;
pub mod page;

use std::rc::Rc;

use futures::StreamExt;
use worker::{Env, Method, Request, Response};

use crate::error::{Error, Result};
use crate::mcp::message::Incoming;
use crate::mcp::modern::{self, Era};
use crate::mcp::version;
use crate::random;
use crate::registry::Caller;
use crate::wire::{valid_session_id, ObjectRequest, Op, CORRELATION_HEADER};
use config::Config;
use http::header;

/// Takes a token of `caller`'s `bucket` (`limiter::REQUESTS_BUCKET` or `SESSIONS_BUCKET`) under
/// `limit` (`None`: off); the `429 Too Many Requests` answer, with `Retry-After`, when the caller
/// has used it up. Fails open, logged: the limiter guards capacity, it is not an access rule.
pub(crate) async fn over_limit(
    env: &Env,
    req: &Request,
    caller: &Caller,
    bucket: &str,
    limit: Option<crate::registry::limits::Limit>,
) -> Result<Option<Response>> {
    use crate::registry::limits::Admission;
    let Some(limit) = limit else {
        return Ok(None);
    };
    let owner = crate::limiter::request_owner(caller, header(req, "cf-connecting-ip").as_deref());
    match crate::limiter::take(env, &owner, bucket, limit).await {
        Ok(Admission::Allowed) => Ok(None),
        Ok(Admission::Refused { retry_after_secs }) => {
            let (what, setting) = if bucket == crate::limiter::SESSIONS_BUCKET {
                ("new sessions", "SESSION_CREATE_LIMIT")
            } else {
                ("requests", "REQUEST_LIMIT")
            };
            let message = format!(
                "Too Many Requests: this caller sent more than {} {what} in {} s ({setting}; a signed-in user is counted across their sessions, an anonymous caller by address). Retry after {retry_after_secs} s.",
                limit.capacity,
                limit.period_ms / 1000
            );
            let resp = http::json_response(
                &serde_json::json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32000, "message": message } }),
                429,
            )?;
            let headers = http::mutable_headers(&resp)?;
            headers.set("retry-after", &retry_after_secs.to_string())?;
            Ok(Some(resp.with_headers(headers)))
        }
        Err(e) => {
            crate::log::error!(
                "{}",
                serde_json::json!({ "rate_limiter_unavailable": e.to_string(), "bucket": bucket })
            );
            Ok(None)
        }
    }
}

/// The caller of `req` (its token checked), or the `429` answer when the caller has used up
/// `REQUEST_LIMIT`.
pub(crate) async fn admit(
    req: &Request,
    env: &Env,
    cfg: &Config,
) -> Result<std::result::Result<Caller, Response>> {
    let caller = auth::authenticate(req, env, cfg).await?;
    let bucket = crate::limiter::REQUESTS_BUCKET;
    let refused = over_limit(env, req, &caller, bucket, cfg.request_limit).await?;
    Ok(refused.map_or(Ok(caller), Err))
}

/// Serves `/mcp`. Never fails: every error becomes its JSON-RPC error response.
pub async fn serve(mut req: Request, env: Env) -> worker::Result<Response> {
    let cfg = Config::from_env(&env);
    let cors_origin = cors_origin(&req, &cfg);
    let result = match cfg.check() {
        Ok(()) => route(&mut req, &env, &cfg).await,
        Err(e) => Err(e),
    };
    // The URL is parsed again only for a 401, the one answer that names the metadata.
    finish(
        result,
        || protected_resource_metadata_url(&req),
        cors_origin.as_deref(),
    )
}

/// Serves `POST /api/confirm/:id` (human confirmation of a write, `crate::confirm`) and
/// `GET /api/confirm/:id` (what it would change, for a page that asks the user).
pub async fn serve_confirm(req: Request, env: Env, id: &str) -> worker::Result<Response> {
    let method = if req.method() == Method::Get {
        Method::Get
    } else {
        Method::Post
    };
    serve_one(
        req,
        env,
        method,
        "/api/confirm/<id> takes GET, or POST {\"approved\": true|false}",
        |req, env, _| async move { confirm::serve(req, env, id).await },
    )
    .await
}

/// Serves `GET /sessions/:id/events`: the session's tool events as SSE for dashboards, with the
/// same token rules as `/mcp` (`session::Session::watch` says who may watch).
pub async fn serve_events(req: Request, env: Env, id: &str) -> worker::Result<Response> {
    serve_session_get(req, env, id, "/sessions/<id>/events takes GET", Op::Watch).await
}

/// Serves a `GET` of something a session's object keeps (its events, its chat): the caller's token
/// checked, the id's form checked, then the request forwarded with the internal header `what`
/// saying which; the object applies the owner rules.
async fn serve_session_get(
    req: Request,
    env: Env,
    id: &str,
    usage: &'static str,
    op: Op,
) -> worker::Result<Response> {
    serve_one(req, env, Method::Get, usage, |req, env, cfg| async move {
        let caller = match admit(&req, &env, &cfg).await? {
            Ok(caller) => caller,
            Err(refused) => return Ok(refused),
        };
        if !valid_session_id(id) {
            return Err(Error::SessionNotFound);
        }
        forward(&env, id, op, &req, None, &caller).await
    })
    .await
}

/// Serves `GET /sessions/:id`: the page that watches the session's events (`page`). It is the same
/// static document for every session and carries no session data, so it needs no token; an id
/// that cannot name a session is the 404 of `/sessions/:id/events`.
pub async fn serve_page(req: Request, env: Env, id: &str) -> worker::Result<Response> {
    serve_one(
        req,
        env,
        Method::Get,
        "/sessions/<id> takes GET",
        |_, _, _| async move {
            if !valid_session_id(id) {
                return Err(Error::SessionNotFound);
            }
            let page = page::page();
            let headers = worker::Headers::new();
            for (k, v) in &page.headers {
                headers.set(k, v)?;
            }
            Ok(Response::from_bytes(page.html.clone().into_bytes())?.with_headers(headers))
        },
    )
    .await
}

/// Serves a route of one method besides `/mcp`, behind the same host, origin and CORS rules:
/// `OPTIONS` is the preflight, other methods are 405 with `usage`.
async fn serve_one<F, Fut>(
    req: Request,
    env: Env,
    method: Method,
    usage: &str,
    handle: F,
) -> worker::Result<Response>
where
    F: FnOnce(Request, Env, Rc<Config>) -> Fut,
    Fut: std::future::Future<Output = Result<Response>>,
{
    let cfg = Config::from_env(&env);
    let metadata_url = protected_resource_metadata_url(&req);
    let cors_origin = cors_origin(&req, &cfg);
    let result = async {
        check_host_and_origin(&req, &cfg)?;
        let m = req.method();
        if m == Method::Options {
            return http::preflight(header(&req, "origin").as_deref());
        }
        if m != method {
            return Err(Error::MethodNotAllowed(format!(
                "Method Not Allowed: {m:?}; {usage}"
            )));
        }
        handle(req, env, cfg.clone()).await
    }
    .await;
    finish(result, || metadata_url, cors_origin.as_deref())
}

/// The origin CORS headers may name.
fn cors_origin(req: &Request, cfg: &Config) -> Option<String> {
    header(req, "origin").filter(|o| cfg.origin_allowed(Some(o)))
}

/// The response of a request: errors become their JSON-RPC error response (with the
/// `WWW-Authenticate` challenge for 401, pointing at `metadata_url()`), and CORS headers are
/// added.
fn finish(
    result: Result<Response>,
    metadata_url: impl FnOnce() -> String,
    cors_origin: Option<&str>,
) -> worker::Result<Response> {
    let resp = match result {
        Ok(r) => r,
        Err(e) => {
            if !e.is_public() {
                crate::log::error!("{}", serde_json::json!({ "error": e.to_string() }));
            }
            let resp = http::error_response_for(&e, None)?;
            match &e {
                Error::Unauthorized {
                    message,
                    invalid_token,
                } => {
                    let headers = http::mutable_headers(&resp)?;
                    headers.set(
                        "www-authenticate",
                        &www_authenticate(&metadata_url(), *invalid_token, message),
                    )?;
                    resp.with_headers(headers)
                }
                _ => resp,
            }
        }
    };
    Ok(http::with_cors(resp, cors_origin)?)
}

/// Where this server's protected resource metadata is (RFC 9728 §3.1: the well-known prefix
/// inserted before the resource's path, `/mcp`).
fn protected_resource_metadata_url(req: &Request) -> String {
    let origin = req
        .url()
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default();
    format!("{origin}/.well-known/oauth-protected-resource/mcp")
}

/// The `WWW-Authenticate` challenge of a 401 (RFC 6750 §3, RFC 9728 §5.1).
fn www_authenticate(metadata_url: &str, invalid_token: bool, message: &str) -> String {
    let mut v = format!("Bearer resource_metadata=\"{metadata_url}\"");
    if invalid_token {
        let description: String = message
            .chars()
            .filter(|c| *c != '"' && *c != '\\' && !c.is_control())
            .collect();
        v.push_str(&format!(
            ", error=\"invalid_token\", error_description=\"{description}\""
        ));
    }
    v
}

/// The protected resource metadata document (RFC 9728) of `/mcp`. It is public and read by
/// browser-based clients (MCP Inspector, claude.ai) from their own origin, so it is served to any
/// origin (`access-control-allow-origin: *`) and answers a CORS preflight with 204.
/// `scopes_supported` is `OAUTH_SCOPES` (space or comma separated, default `mcp`): the scopes a
/// client asks its authorization server for.
pub fn protected_resource_metadata(req: &Request, env: &Env) -> Result<Response> {
    let headers = worker::Headers::new();
    headers.set("access-control-allow-origin", "*")?;
    headers.set("access-control-allow-methods", "GET, OPTIONS")?;
    headers.set("access-control-allow-headers", "mcp-protocol-version")?;
    if req.method() == Method::Options {
        headers.set("access-control-max-age", "86400")?;
        return Ok(Response::empty()?.with_status(204).with_headers(headers));
    }
    let cfg = Config::from_env(env);
    let scopes = env
        .var("OAUTH_SCOPES")
        .map(|v| v.to_string())
        .unwrap_or_default();
    let mut scopes: Vec<&str> = scopes.split([' ', ',']).filter(|s| !s.is_empty()).collect();
    if scopes.is_empty() {
        scopes.push("mcp");
    }
    let mut doc = serde_json::json!({
        "resource": auth::resource_url(req, &cfg),
        "bearer_methods_supported": ["header"],
        "resource_name": "mcp-edge",
        "resource_signing_alg_values_supported": ["HS256", "RS256", "ES256"],
        "scopes_supported": scopes,
    });
    if let Some(issuer) = &cfg.jwt_issuer {
        doc["authorization_servers"] = serde_json::json!([issuer]);
    }
    headers.set("content-type", "application/json")?;
    Ok(Response::from_json(&doc)?.with_headers(headers))
}

/// DNS-rebinding protection (`Host`) and the browser origin rule (`Origin`).
fn check_host_and_origin(req: &Request, cfg: &Config) -> Result<()> {
    let host = header(req, "host");
    if !cfg.host_allowed(host.as_deref()) {
        return Err(Error::Forbidden(format!(
            "Forbidden: Host {} is not served here (DNS rebinding protection); use one of ALLOWED_HOSTS",
            host.unwrap_or_default()
        )));
    }
    let origin = header(req, "origin");
    // A page posting to its own origin is not cross-site, so it needs no ALLOWED_ORIGINS entry
    // (production's is empty). Its own origin is the one the Host header (checked above) names,
    // not the URL's alone, which a test harness or proxy may set apart from Host.
    // Worked out only for a request with an Origin: most (every non-browser client) send none,
    // and the URL is parsed for it.
    let same_origin = origin.as_deref().is_some_and(|o| {
        let own = req
            .url()
            .ok()
            .zip(host.as_deref())
            .map(|(u, h)| format!("{}://{}", u.scheme(), h.trim()).to_ascii_lowercase());
        own.as_deref() == Some(o.trim().to_ascii_lowercase().as_str())
    });
    if !same_origin && !cfg.origin_allowed(origin.as_deref()) {
        return Err(Error::Forbidden(format!(
            "Forbidden: Origin {} is not allowed; add it to ALLOWED_ORIGINS",
            origin.unwrap_or_default()
        )));
    }
    Ok(())
}

async fn route(req: &mut Request, env: &Env, cfg: &Rc<Config>) -> Result<Response> {
    check_host_and_origin(req, cfg)?;
    let origin = header(req, "origin");
    if req.method() == Method::Options {
        return http::preflight(origin.as_deref());
    }
    let has_session = header(req, "mcp-session-id").is_some();
    let version_header = header(req, "mcp-protocol-version");
    let bodyless_era = modern::era_of_bodyless(has_session, version_header.as_deref());
    if matches!(req.method(), Method::Get | Method::Delete) && bodyless_era == Era::Modern {
        return Err(Error::MethodNotAllowed(format!(
            "Method Not Allowed: {:?}; 2026-07-28 has no sessions and no GET stream: POST each request to /mcp",
            req.method()
        )));
    }
    if req.method() != Method::Post {
        check_legacy_version(version_header.as_deref())?;
    }
    let caller = match admit(req, env, cfg).await? {
        Ok(caller) => caller,
        Err(refused) => return Ok(refused),
    };
    match req.method() {
        Method::Post => post(req, env, cfg, &caller).await,
        Method::Get => {
            http::check_get_accept(header(req, "accept").as_deref())?;
            let session = session_of(req)?;
            forward(env, &session, Op::CLIENT, req, None, &caller).await
        }
        Method::Delete => {
            let session = session_of(req)?;
            forward(env, &session, Op::CLIENT, req, None, &caller).await
        }
        other => Err(Error::MethodNotAllowed(format!(
            "Method Not Allowed: {other:?}; /mcp serves {}",
            http::ALLOW_METHODS
        ))),
    }
}

fn session_of(req: &Request) -> Result<String> {
    let id = header(req, "mcp-session-id").ok_or(Error::SessionRequired)?;
    if valid_session_id(&id) {
        Ok(id)
    } else {
        Err(Error::SessionNotFound)
    }
}

/// The 2025 lane's rule for `MCP-Protocol-Version`: absent, or a version it speaks.
fn check_legacy_version(v: Option<&str>) -> Result<()> {
    match v {
        Some(v) if !version::is_supported(v) => Err(Error::BadHeader(format!(
            "Bad Request: unsupported MCP-Protocol-Version {v:?}; supported: {}",
            version::SUPPORTED.join(", ")
        ))),
        _ => Ok(()),
    }
}

/// A POST: the modern lane (`crate::stateless`) or the session lane, by the era rule of
/// `mcp::modern`.
async fn post(req: &mut Request, env: &Env, cfg: &Rc<Config>, caller: &Caller) -> Result<Response> {
    http::check_post_accept(header(req, "accept").as_deref())?;
    http::check_content_type(header(req, "content-type").as_deref())?;
    let body = read_body(req, cfg.max_body_bytes).await?;
    let has_session = header(req, "mcp-session-id").is_some();
    let version_header = header(req, "mcp-protocol-version");
    let unique = http::check_unique_keys(&body);
    // A request of a 2025 session is the session's whatever its body says: the object parses it,
    // so it is not parsed here too.
    if modern::era_of_post_headers(has_session, version_header.as_deref()) != Some(Era::Legacy) {
        let parsed: std::result::Result<serde_json::Value, Error> = unique
            .clone()
            .and_then(|()| serde_json::from_str(&body).map_err(|e| Error::Parse(e.to_string())));
        let era = match &parsed {
            Ok(v) => modern::era_of_post(has_session, version_header.as_deref(), v),
            Err(_) => modern::era_of_bodyless(has_session, version_header.as_deref()),
        };
        if era == Era::Modern {
            return crate::stateless::serve(req, env, cfg, caller, parsed).await;
        }
    }
    // The session object parses the body (again, for one without a session), without the
    // duplicate-key rule.
    unique?;
    check_legacy_version(version_header.as_deref())?;
    if has_session {
        let session = session_of(req)?;
        return forward(env, &session, Op::CLIENT, req, Some(body), caller).await;
    }
    // Without a session only initialize is allowed; it creates one under a fresh id.
    match Incoming::parse(&body)? {
        Incoming::Request { method, .. } if method == "initialize" => {
            let sessions = cfg.session_create_limit;
            if let Some(refused) =
                over_limit(env, req, caller, crate::limiter::SESSIONS_BUCKET, sessions).await?
            {
                return Ok(refused);
            }
            let session = random::hex(32)?;
            let resp = forward(env, &session, Op::Create, req, Some(body), caller).await?;
            if resp.status_code() != 200 {
                return Ok(resp);
            }
            let headers = http::mutable_headers(&resp)?;
            headers.set("mcp-session-id", &session)?;
            Ok(resp.with_headers(headers))
        }
        _ => Err(Error::SessionRequired),
    }
}

/// Reads the body up to `limit` bytes: `Content-Length` is checked first; a body it announces
/// within the cap is taken in one piece (HTTP framing ends the body at that length, so it cannot
/// push more into memory; counted again all the same), else the bytes are counted as they arrive,
/// so an absent length cannot push more into memory either. One read instead of a stream reader's
/// read, read and release: those crossings were a tenth of a small call's Worker time (profiled,
/// docs/performance.md).
pub(crate) async fn read_body(req: &mut Request, limit: usize) -> Result<String> {
    let announced = header(req, "content-length").and_then(|l| l.parse::<usize>().ok());
    if announced.is_some_and(|len| len > limit) {
        return Err(Error::PayloadTooLarge { limit });
    }
    if announced.is_some() {
        let buf = req
            .bytes()
            .await
            .map_err(|e| Error::Parse(format!("body could not be read: {e}")))?;
        if buf.len() > limit {
            return Err(Error::PayloadTooLarge { limit });
        }
        return String::from_utf8(buf).map_err(|_| Error::Parse("body is not valid UTF-8".into()));
    }
    let mut stream = req
        .stream()
        .map_err(|e| Error::Internal(format!("request body: {e}")))?;
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Error::Parse(format!("body could not be read: {e}")))?;
        if buf.len() + chunk.len() > limit {
            return Err(Error::PayloadTooLarge { limit });
        }
        buf.extend_from_slice(&chunk);
    }
    String::from_utf8(buf).map_err(|_| Error::Parse("body is not valid UTF-8".into()))
}

/// Sends the request (its method, and `body`) on to the session's Durable Object as `op`, keeping the client's abort signal
/// so the object notices when the client disconnects. The object gets the verified caller; the
/// request it receives is built here, so a client cannot supply the internal headers.
async fn forward(
    env: &Env,
    session: &str,
    op: Op,
    req: &Request,
    body: Option<String>,
    caller: &Caller,
) -> Result<Response> {
    let correlation = header(req, "cf-ray").map_or_else(|| random::hex(8), Ok)?;
    let mut to = ObjectRequest::session(session, &op, caller)
        .header(CORRELATION_HEADER, &correlation)
        .method(req.method());
    for name in [
        "content-type",
        "accept",
        "last-event-id",
        "mcp-protocol-version",
    ] {
        if let Some(v) = header(req, name) {
            to = to.header(name, &v);
        }
    }
    if let Some(b) = body {
        to = to.body(b);
    }
    to.signal(Some(&req.inner().signal())).send(env).await
}
