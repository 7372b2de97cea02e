//! mcp-edge: a Model Context Protocol server for Cloudflare Workers.
//!
//! The crate has a pure core that `cargo test` runs natively (`mcp`, `registry`, `engine`, `tools`) and a thin
//! edge layer that only does work inside workerd (`edge`, `session`, `stateless`, `store`). See the README's
//! architecture section for the module map.

pub mod clock;
pub mod confirm;
pub mod edge;
pub mod engine;
pub mod error;
pub mod limiter;
pub mod log;
pub mod mcp;
pub mod random;
pub mod registry;
pub mod server;
pub mod session;
pub mod stateless;
pub mod store;
#[cfg(test)]
mod testkit;
pub mod tools;
pub mod wire;

pub use error::{Error, Result};

use worker::{event, Context, Env, Request, Response};

/// The Worker entrypoint: `/mcp` is the MCP endpoint; `/sessions/:id` is the page that watches a
/// session, `/sessions/:id/events` its event stream, `/sessions/:id/chat` (and `POST /sessions`) chat
/// in it; `/` and `/health` describe the server.
#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> worker::Result<Response> {
    let path = req.path();
    if let Some(id) = path.strip_prefix("/api/confirm/") {
        let id = id.to_string();
        return edge::serve_confirm(req, env, &id).await;
    }
    if path == "/sessions" {
        return edge::chat::serve_create(req, env).await;
    }
    if let Some(id) = path
        .strip_prefix("/sessions/")
        .and_then(|rest| rest.strip_suffix("/chat"))
    {
        let id = id.to_string();
        return edge::chat::serve_chat(req, env, &id).await;
    }
    if let Some(id) = path
        .strip_prefix("/sessions/")
        .and_then(|rest| rest.strip_suffix("/events"))
    {
        let id = id.to_string();
        return edge::serve_events(req, env, &id).await;
    }
    if let Some(id) = path
        .strip_prefix("/sessions/")
        .filter(|rest| !rest.contains('/'))
    {
        let id = id.to_string();
        return edge::serve_page(req, env, &id).await;
    }
    match path.as_str() {
        "/mcp" | "/mcp/" => edge::serve(req, env).await,
        "/.well-known/oauth-protected-resource" | "/.well-known/oauth-protected-resource/mcp" => {
            match edge::protected_resource_metadata(&req, &env) {
                Ok(r) => Ok(r),
                Err(e) => Ok(edge::http::error_response_for(&e, None)?),
            }
        }
        "/" | "/health" => Response::from_json(&serde_json::json!({
            "name": mcp::SERVER_NAME,
            "version": mcp::SERVER_VERSION,
            "endpoint": "/mcp",
            "protocolVersions": mcp::version::SUPPORTED,
        })),
        _ => Ok(edge::http::error_response_for(
            &Error::NotFound("Not Found: the MCP endpoint is /mcp".into()),
            None,
        )?),
    }
}
