//! Human confirmation of domain writes (seed 002 §5.6). A write tool changes nothing when called:
//! it stores what it would do in the confirmation store (one strongly consistent Durable Object per
//! confirmation, see `src/confirm/`) and answers `pending_confirmation`. The user decides with
//! `POST /api/confirm/:id` (their own token) or, when their client declared `elicitation`, in a
//! form the tool call shows them; the model cannot decide, because no tool does. The store runs
//! the write at most once, within its lifetime (5 minutes by default), for the user who asked, with their current roles.
//! Every request, decision and execution goes to `audit_log`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{Code, Reply};
use crate::clock;
use crate::registry::ToolContext;

/// How long a confirmation can be decided: `CONFIRMATION_TTL_SECONDS`, 300 by default (the seed's
/// 5 minutes).
fn lifetime_ms(ctx: &dyn ToolContext) -> f64 {
    ctx.platform()
        .setting("CONFIRMATION_TTL_SECONDS")
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(300.0)
        * 1000.0
}

/// A write waiting for its decision, as the confirmation store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The confirmation id: 32 hex digits, 128 random bits ([`ID_HEX_DIGITS`]).
    pub id: String,
    /// The seed's action name (`delete_employee`, …); the tool that asked has the same name.
    pub action: String,
    /// The domain (`hr`, `finance`, `sales`, `support`).
    pub server: String,
    /// The tool's validated arguments.
    pub arguments: Value,
    /// Who asked; only they can decide.
    pub user: String,
    /// What will change, as shown to the user.
    pub message: String,
    /// The seed's `confirmationData`.
    pub data: Value,
    /// When it was asked, ms since the epoch.
    pub created_ms: f64,
    /// Until when it can be decided.
    pub expires_ms: f64,
}

pub use crate::mcp::request_state::arguments_hash;

/// Records an audit event; a failure is logged, never hidden from the operator, and does not undo
/// the decision it records.
pub async fn audit(ctx: &dyn ToolContext, p: &Pending, event: &str, outcome: &str) {
    let r = ctx
        .query(
            "INSERT INTO audit_log (user_id, tool, confirmation_id, arguments_hash, event, outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            vec![
                json!(ctx.caller().user.unwrap_or_else(|| p.user.clone())),
                json!(p.action),
                json!(p.id),
                json!(arguments_hash(&p.arguments)),
                json!(event),
                json!(outcome),
            ],
        )
        .await;
    if let Err(e) = r {
        crate::log::error!(
            "{}",
            json!({ "audit_failed": e.to_string(), "confirmation": p.id, "event": event })
        );
    }
}

/// Hex digits of a confirmation id: 128 random bits (a UUID holds only 122), enough that an id
/// cannot be guessed or enumerated.
pub const ID_HEX_DIGITS: usize = 32;

/// The confirmation id of this call: random, or, in a 2026-07-28 request that pauses for the
/// user's answer, derived from its exchange id (itself 128 random bits), so the round that brings
/// the answer decides the confirmation the first round stored (and a rerun stores no second one).
fn confirmation_id(ctx: &dyn ToolContext) -> crate::error::Result<String> {
    match ctx.exchange_id() {
        Some(x) => {
            Ok(
                crate::mcp::request_state::arguments_hash(&json!(["mcp-edge/confirmation", x]))
                    [..ID_HEX_DIGITS]
                    .to_string(),
            )
        }
        None => crate::random::hex(ID_HEX_DIGITS / 2),
    }
}

/// Whether `id` has the shape of a confirmation id (so anything else is "not found" without a
/// Durable Object being touched).
pub fn is_confirmation_id(id: &str) -> bool {
    id.len() == ID_HEX_DIGITS && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Asks for confirmation of a write: stores it, then either asks the user in an elicitation form
/// (when the client supports it) and decides with their answer, or answers `pending_confirmation`.
pub async fn request(
    ctx: &dyn ToolContext,
    action: &str,
    server: &str,
    arguments: Value,
    message: String,
    details: Value,
) -> Reply {
    let caller = ctx.caller();
    let Some(user) = caller.user.clone() else {
        return Reply::failure(
            Code::InsufficientPermissions,
            "Writes need a signed-in user to confirm them.",
            "Sign in (a bearer token) and ask again.",
        );
    };
    let id = match confirmation_id(ctx) {
        Ok(id) => id,
        Err(e) => return super::db(e),
    };
    let now = clock::now_ms();
    let mut data = details;
    data["action"] = json!(action);
    data["mcpServer"] = json!(server);
    data["userId"] = json!(user);
    data["timestamp"] = json!(now as i64);
    let pending = Pending {
        id: id.clone(),
        action: action.to_string(),
        server: server.to_string(),
        arguments,
        user,
        message: message.clone(),
        data: data.clone(),
        created_ms: now,
        expires_ms: now + lifetime_ms(ctx),
    };
    let body = match serde_json::to_value(&pending) {
        Ok(b) => b,
        Err(e) => return super::db(e.into()),
    };
    match ctx
        .platform()
        .confirmation(&id, "create", &body, &caller)
        .await
    {
        Ok((201, _)) => audit(ctx, &pending, "requested", "").await,
        // A later round of the same request: the first round stored this confirmation.
        Ok((409, _)) if ctx.exchange_id().is_some() => {}
        Ok((status, answer)) => {
            crate::log::error!(
                "{}",
                json!({ "confirmation_create": status, "answer": answer })
            );
            return Reply::failure(
                Code::OperationFailed,
                "The confirmation could not be recorded.",
                "Try again.",
            );
        }
        Err(e) => return super::db(e),
    }
    if ctx.client_capabilities().get("elicitation").is_some() {
        if let Some(reply) = ask_user(ctx, &pending).await {
            return reply;
        }
    }
    Reply::Pending {
        confirmation_id: id,
        message,
        confirmation_data: data,
    }
}

/// Shows the user the change in an elicitation form and sends their decision to the store; `None`
/// when the form could not be shown (the pending answer then tells how to confirm).
async fn ask_user(ctx: &dyn ToolContext, p: &Pending) -> Option<Reply> {
    let form = json!({
        "message": format!("{}\n\nApprove this change?", p.message),
        "requestedSchema": {
            "type": "object",
            "properties": { "approve": { "type": "boolean", "title": "Approve", "description": "Yes to make this change now" } },
            "required": ["approve"]
        }
    });
    let answer = ctx.ask_client("elicitation/create", form).await.ok()?;
    let approved =
        answer["action"] == "accept" && answer.pointer("/content/approve") == Some(&json!(true));
    let (_, reply) = ctx
        .platform()
        .confirmation(
            &p.id,
            "decide",
            &json!({ "approved": approved }),
            &ctx.caller(),
        )
        .await
        .ok()?;
    Some(Reply::Relayed(reply))
}
