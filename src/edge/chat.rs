//! The Worker side of chat: `POST /sessions` (a chat-only session), `POST /sessions/:id/chat` (a
//! turn, answered as SSE) and `GET /sessions/:id/chat` (the conversation). Host, origin, CORS and
//! token rules are those of `/mcp`; the session's object does the rest (`session::chat`).

use worker::{Env, Method, Request, Response};

use super::{admit, forward, http, over_limit, read_body, serve_one, serve_session_get};
use crate::error::Error;
use crate::limiter::SESSIONS_BUCKET;
use crate::random;
use crate::wire::valid_session_id;
use crate::wire::Op;

const USAGE: &str =
    "/sessions/<id>/chat takes POST {\"message\": \"…\"} (a chat turn) or GET (the conversation)";

/// Serves `POST /sessions`: creates a session for chatting without an MCP client and answers 201
/// with its id. The session belongs to the caller's user (or is anonymous).
pub async fn serve_create(req: Request, env: Env) -> worker::Result<Response> {
    serve_one(
        req,
        env,
        Method::Post,
        "/sessions takes POST (creates a chat session)",
        |req, env, cfg| async move {
            let caller = match admit(&req, &env, &cfg).await? {
                Ok(caller) => caller,
                Err(refused) => return Ok(refused),
            };
            let sessions = cfg.session_create_limit;
            if let Some(refused) =
                over_limit(&env, &req, &caller, SESSIONS_BUCKET, sessions).await?
            {
                return Ok(refused);
            }
            let id = random::hex(32)?;
            forward(&env, &id, Op::CreateChat, &req, None, &caller).await
        },
    )
    .await
}

/// Serves `/sessions/:id/chat`: `POST` runs a turn, `GET` returns the stored conversation.
pub async fn serve_chat(req: Request, env: Env, id: &str) -> worker::Result<Response> {
    if req.method() == Method::Get {
        return serve_session_get(req, env, id, USAGE, Op::Chat).await;
    }
    serve_one(
        req,
        env,
        Method::Post,
        USAGE,
        |mut req, env, cfg| async move {
            let caller = match admit(&req, &env, &cfg).await? {
                Ok(caller) => caller,
                Err(refused) => return Ok(refused),
            };
            if !valid_session_id(id) {
                return Err(Error::SessionNotFound);
            }
            http::check_content_type(http::header(&req, "content-type").as_deref())?;
            let body = read_body(&mut req, cfg.max_body_bytes).await?;
            http::check_unique_keys(&body)?;
            forward(&env, id, Op::Chat, &req, Some(body), &caller).await
        },
    )
    .await
}
