//! The Worker side of `/api/confirm/:id`: the asking user's token and the decision's body are
//! checked here, then the decision (`POST`), or the question what the change is (`GET`), goes to
//! the confirmation's object (`crate::confirm`).

use serde_json::Value;
use worker::{Env, Method, Request, Response};

use super::config::Config;
use crate::confirm::{failure, json_answer};
use crate::error::{Error, Result};
use crate::registry::EnvServices;
use crate::store::services::Services;
use crate::tools::domain::Code;

/// `POST /api/confirm/:id` with `{"approved": true|false}` and the asking user's bearer token;
/// `GET /api/confirm/:id` with that token answers what the change is and whether it still waits.
pub async fn serve(req: Request, env: Env, id: &str) -> Result<Response> {
    let mut req = req;
    let cfg = Config::from_env(&env);
    let caller = super::auth::authenticate(&req, &env, &cfg).await?;
    if caller.user.is_none() {
        return Err(Error::Unauthorized {
            message:
                "Unauthorized: a confirmation is seen and decided with the bearer token of the user who asked"
                    .into(),
            invalid_token: false,
        });
    }
    if !crate::tools::domain::confirm::is_confirmation_id(id) {
        return Ok(json_answer(
            404,
            &failure(
                Code::OperationFailed,
                "There is no such confirmation.",
                "Use the confirmationId of a pending_confirmation answer.",
            ),
        )?);
    }
    if req.method() == Method::Get {
        let services = Services::with_config(env, crate::store::registry(cfg.catalog)?, &cfg);
        let (status, answer) = services
            .confirmation(id, "show", &Value::Null, &caller)
            .await?;
        return Ok(json_answer(status, &answer)?);
    }
    // A decision is a few bytes; the body cap keeps a large one from being read into memory.
    let text = super::read_body(&mut req, 4096).await?;
    // `{"approved": false, "approved": true}` must not decide one way here and read the other
    // way in a proxy's log: a key named twice is refused before anything is decided.
    super::http::check_unique_keys(&text)?;
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let services = Services::with_config(env, crate::store::registry(cfg.catalog)?, &cfg);
    let (status, answer) = services.confirmation(id, "decide", &body, &caller).await?;
    Ok(json_answer(status, &answer)?)
}
