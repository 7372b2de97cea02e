//! The `Confirmation` Durable Object: one per confirmation id, holding one pending write and its
//! fate. The Worker's `POST /api/confirm/:id` (`edge::confirm`) brings it the decision; its
//! `GET /api/confirm/:id` asks it what the change is (`show`, told to the user who asked only).
//!
//! A Durable Object runs one request at a time up to its first await, and its SQLite writes are
//! synchronous, so the state moves from `pending` to `executing` before any other decision can be
//! read: of two simultaneous approvals exactly one executes, the other is told it was already
//! handled. The object forgets everything an hour after the confirmation expires (its alarm).
//!
//! A decision carries `approved` and nothing else: what will change was fixed when the change was
//! asked, and a body that tries to say more (other arguments, another amount) is refused.
//!
//! Its clock can be moved forward for tests (`TEST_CLOCK_OFFSET_MS`, never set in a deployment):
//! the 4:59 and 5:01 decisions of `tests/security_lane.test.js` are made without waiting.
//!
//! | answer | HTTP |
//! | --- | --- |
//! | executed (the tool's success or domain error), or denied | 200 |
//! | the decision came from another user: `USER_MISMATCH` | 403 |
//! | no such confirmation (never existed, or forgotten) | 404 |
//! | already decided | 409 |
//! | expired (5 minutes) | 410 |

use serde::Deserialize;
use serde_json::{json, Value};
use worker::{durable_object, DurableObject, Env, Request, Response, SqlStorage, State};

use crate::clock;
use crate::edge::config::Config;
use crate::engine::read::{self, Read};
use crate::error::{Error, Result};
use crate::registry::call::CallContext;
use crate::registry::{Caller, ToolContext};
use crate::store::rows::rows;
use crate::store::services::{Detached, Services};
use crate::tools::domain::confirm::{audit, Pending};
use crate::tools::domain::{Code, Reply};

/// How long a decided or expired confirmation is remembered (to answer "already handled").
const KEEP_MS: f64 = 60.0 * 60.0 * 1000.0;

fn no_session() -> Error {
    Error::Internal("a confirmed write has no MCP session".into())
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Row {
    record: String,
    state: String,
    outcome: Option<String>,
}

impl Row {
    fn read(v: Value) -> Read<Self> {
        let mut m = read::object(v, "struct Row")?;
        Ok(Self {
            record: read::string(read::required(&mut m, "record")?)?,
            state: read::string(read::required(&mut m, "state")?)?,
            outcome: read::optional(&mut m, "outcome", read::string)?,
        })
    }
}

/// The Durable Object class (`class_name = "Confirmation"` in wrangler.toml).
#[durable_object]
pub struct Confirmation {
    state: State,
    env: Env,
}

pub(crate) fn json_answer(status: u16, body: &Value) -> worker::Result<Response> {
    Ok(Response::from_json(body)?.with_status(status))
}

pub(crate) fn failure(code: Code, message: &str, action: &str) -> Value {
    Reply::failure(code, message, action).to_json()
}

impl DurableObject for Confirmation {
    fn new(state: State, env: Env) -> Self {
        Confirmation { state, env }
    }

    async fn fetch(&self, mut req: Request) -> worker::Result<Response> {
        let result = match req.path().as_str() {
            "/create" => match req.json::<Value>().await.map(Pending::read) {
                Ok(Ok(p)) => self.create(p).await,
                Ok(Err(e)) => Err(Error::InvalidRequest(format!("confirmation record: {e}"))),
                Err(e) => Err(Error::InvalidRequest(format!("confirmation record: {e}"))),
            },
            "/decide" => {
                let caller = crate::wire::caller_of(&req);
                match req.json::<Value>().await {
                    Ok(body) => self.decide(caller, body).await,
                    Err(_) => Ok((
                        400,
                        failure(Code::InvalidInput, "The body must be JSON: {\"approved\": true|false}.", "Send {\"approved\": true} to approve or {\"approved\": false} to deny."),
                    )),
                }
            }
            "/show" => self.show(&crate::wire::caller_of(&req)),
            _ => Err(Error::NotFound("no such confirmation operation".into())),
        };
        match result {
            Ok((status, body)) => json_answer(status, &body),
            Err(e) => {
                crate::log::error!("{}", json!({ "confirmation_error": e.to_string() }));
                json_answer(500, &Reply::from_error(&e.into()).to_json())
            }
        }
    }

    async fn alarm(&self) -> worker::Result<Response> {
        if let Err(e) = self.on_alarm().await {
            crate::log::error!("confirmation alarm: {e}");
        }
        Response::empty()
    }
}

impl Confirmation {
    /// The time decisions are judged by: the host's clock, moved forward by
    /// `TEST_CLOCK_OFFSET_MS` when a test sets it.
    fn now_ms(&self) -> f64 {
        let offset = self
            .env
            .var("TEST_CLOCK_OFFSET_MS")
            .ok()
            .and_then(|v| v.to_string().trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite())
            .unwrap_or(0.0);
        clock::now_ms() + offset
    }

    fn sql(&self) -> Result<SqlStorage> {
        let sql = self.state.storage().sql();
        sql.exec(
            "CREATE TABLE IF NOT EXISTS confirmation (
               one INTEGER PRIMARY KEY CHECK (one = 1),
               record TEXT NOT NULL,
               state TEXT NOT NULL CHECK (state IN ('pending', 'denied', 'executing', 'done', 'expired')),
               outcome TEXT)",
            None,
        )
        .map_err(|e| Error::Storage(format!("confirmation storage: {e}")))?;
        Ok(sql)
    }

    fn load(&self) -> Result<Option<(Pending, String, Option<String>)>> {
        let rows: Vec<Row> = self
            .sql()?
            .exec("SELECT record, state, outcome FROM confirmation", None)
            .and_then(|c| rows(c, Row::read))
            .map_err(|e| Error::Storage(format!("confirmation read: {e}")))?;
        match rows.into_iter().next() {
            Some(r) => Ok(Some((
                Pending::read(serde_json::from_str(&r.record)?)?,
                r.state,
                r.outcome,
            ))),
            None => Ok(None),
        }
    }

    fn set_state(&self, state: &str, outcome: Option<&str>) -> Result<()> {
        self.sql()?
            .exec(
                "UPDATE confirmation SET state = ?, outcome = ?",
                vec![state.into(), outcome.map(str::to_string).into()],
            )
            .and_then(|c| c.to_array::<Value>())
            .map(drop)
            .map_err(|e| Error::Storage(format!("confirmation write: {e}")))
    }

    fn services(&self) -> Result<Services> {
        let cfg = Config::from_env(&self.env);
        Ok(Services::with_config(
            self.env.clone(),
            crate::store::registry(cfg.catalog)?,
            &cfg,
        ))
    }

    async fn create(&self, p: Pending) -> Result<(u16, Value)> {
        if self.load()?.is_some() {
            return Ok((
                409,
                json!({ "status": "error", "code": "OPERATION_FAILED", "message": "confirmation id in use" }),
            ));
        }
        self.sql()?
            .exec(
                "INSERT INTO confirmation (one, record, state) VALUES (1, ?, 'pending')",
                vec![serde_json::to_string(&p)?.into()],
            )
            .and_then(|c| c.to_array::<Value>())
            .map_err(|e| Error::Storage(format!("confirmation write: {e}")))?;
        self.state
            .storage()
            .set_alarm((p.expires_ms - clock::now_ms()).max(0.0) as i64 + 1000)
            .await
            .map_err(Error::from)?;
        Ok((
            201,
            json!({ "status": "success", "data": { "confirmationId": p.id } }),
        ))
    }

    /// What the change is and whether it still waits, for a page that asks the user: only to the
    /// user who asked; anyone else is told, as for an id never issued, that there is no such
    /// confirmation (nothing tells them it exists).
    fn show(&self, caller: &Caller) -> Result<(u16, Value)> {
        let found = self
            .load()?
            .filter(|(p, _, _)| caller.user.as_deref() == Some(p.user.as_str()));
        let Some((p, state, _)) = found else {
            return Ok((
                404,
                failure(
                    Code::OperationFailed,
                    "There is no such confirmation among the changes you asked for: it never existed, it expired long ago, or another user asked for it.",
                    "Sign in as the user who asked, or ask for the change again.",
                ),
            ));
        };
        let state = if state == "pending" && self.now_ms() > p.expires_ms {
            "expired"
        } else {
            state.as_str()
        };
        Ok((
            200,
            json!({ "status": "success", "data": {
                "confirmationId": p.id, "action": p.action, "message": p.message,
                "confirmationData": p.data, "state": state,
                "expiresAt": clock::iso(p.expires_ms as i64) } }),
        ))
    }

    async fn decide(&self, caller: Caller, body: Value) -> Result<(u16, Value)> {
        if let Some(extra) = body
            .as_object()
            .and_then(|m| m.keys().find(|k| k.as_str() != "approved"))
        {
            return Ok((
                400,
                failure(
                    Code::InvalidInput,
                    &format!("A decision carries only approved; {extra:?} cannot be sent: what will change was fixed when it was asked."),
                    "Send {\"approved\": true} or {\"approved\": false}; to make a different change, ask for it again.",
                ),
            ));
        }
        let Some(approved) = body.get("approved").and_then(Value::as_bool) else {
            return Ok((
                400,
                failure(
                    Code::InvalidInput,
                    "approved must be true or false.",
                    "Send {\"approved\": true} to approve or {\"approved\": false} to deny.",
                ),
            ));
        };
        let Some((p, state, outcome)) = self.load()? else {
            return Ok((
                404,
                failure(
                    Code::OperationFailed,
                    "There is no such confirmation: it never existed, or it expired long ago.",
                    "Ask for the change again.",
                ),
            ));
        };
        let platform = Detached::new(self.services()?, String::new(), no_session);
        let ctx = CallContext::unattended(&platform, caller.clone(), "a confirmed write");
        if caller.user.as_deref() != Some(p.user.as_str()) {
            audit(&ctx, &p, "refused", "USER_MISMATCH").await;
            return Ok((
                403,
                failure(
                    Code::UserMismatch,
                    "This change was asked for by a different user; only they can decide it.",
                    "Sign in as the user who asked, or ask for the change yourself.",
                ),
            ));
        }
        if state != "pending" {
            let earlier = outcome
                .and_then(|o| serde_json::from_str::<Value>(&o).ok())
                .unwrap_or(Value::Null);
            return Ok((
                409,
                json!({ "status": "error", "code": "OPERATION_FAILED",
                        "message": format!("This confirmation was already handled ({state}); nothing more was done."),
                        "suggestedAction": "Check the current data; ask for the change again if it is still needed.",
                        "previous": earlier }),
            ));
        }
        if self.now_ms() > p.expires_ms {
            self.set_state("expired", None)?;
            audit(&ctx, &p, "expired", "").await;
            return Ok((
                410,
                failure(
                    Code::OperationFailed,
                    "This confirmation expired (5 minutes); nothing was changed.",
                    "Ask for the change again.",
                ),
            ));
        }
        if !approved {
            let reply = json!({ "status": "success", "data": { "approved": false, "confirmationId": p.id, "message": "Cancelled; nothing was changed." } });
            self.set_state("denied", Some(&reply.to_string()))?;
            audit(&ctx, &p, "denied", "").await;
            return Ok((200, reply));
        }
        // Claimed before the first await: a concurrent decision now sees `executing`.
        self.set_state("executing", None)?;
        audit(&ctx, &p, "approved", "").await;
        let started = clock::now_ms();
        let reply = crate::tools::execute_confirmed(&ctx, &p).await;
        self.set_state("done", Some(&reply.to_string()))?;
        let event = if reply["status"] == "success" {
            "executed"
        } else {
            "failed"
        };
        // The write's own log line, as every tool call has one (the call that asked for it was
        // logged when it answered pending_confirmation): no arguments, only whose and how it went.
        let tool = ctx
            .platform()
            .registry()
            .get(&p.action)
            .map_or_else(|| p.action.clone(), |t| t.def.id());
        crate::log::info!(
            "{}",
            json!({ "user": p.user, "tool": tool, "confirmation": p.id,
                    "outcome": if event == "executed" { "ok" } else { "error" },
                    "ms": clock::now_ms() - started })
        );
        audit(&ctx, &p, event, reply["code"].as_str().unwrap_or("")).await;
        Ok((200, reply))
    }

    async fn on_alarm(&self) -> Result<()> {
        let Some((p, state, _)) = self.load()? else {
            return Ok(());
        };
        let now = clock::now_ms();
        if now > p.expires_ms + KEEP_MS {
            return self.state.storage().delete_all().await.map_err(Error::from);
        }
        if state == "pending" {
            self.set_state("expired", None)?;
            let platform = Detached::new(self.services()?, String::new(), no_session);
            let ctx = CallContext::unattended(
                &platform,
                Caller {
                    user: Some(p.user.clone()),
                    roles: Vec::new(),
                },
                "a confirmed write",
            );
            audit(&ctx, &p, "expired", "").await;
        }
        self.state
            .storage()
            .set_alarm((p.expires_ms + KEEP_MS - now).max(0.0) as i64 + 1000)
            .await
            .map_err(Error::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored row read by hand accepts exactly what its derive accepts.
    #[test]
    fn row_reads_as_its_derive_reads_it() {
        crate::store::rows::assert_same_as_derive(
            Row::read,
            &[
                json!({ "record": "{}", "state": "pending", "outcome": null }),
                json!({ "record": "{}", "state": "done", "outcome": "{\"status\":\"success\"}" }),
                json!({ "record": "{}", "state": "pending" }),
                json!({ "record": "{}", "state": 1, "outcome": null }),
                json!({ "state": "pending", "outcome": null }),
                json!({ "record": "{}", "state": "pending", "outcome": 2 }),
                json!(null),
            ],
        );
    }
}
