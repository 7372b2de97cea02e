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

impl Pending {
    /// The record in `v` (the confirmation object's request body and stored `record`), read by
    /// hand rather than by a derived reader for each of the two (docs/decisions.md, "Derived
    /// readers").
    pub fn read(v: Value) -> crate::engine::read::Read<Self> {
        use crate::engine::read;
        let mut m = read::object(v, "struct Pending")?;
        Ok(Self {
            id: read::string(read::required(&mut m, "id")?)?,
            action: read::string(read::required(&mut m, "action")?)?,
            server: read::string(read::required(&mut m, "server")?)?,
            arguments: read::required(&mut m, "arguments")?,
            user: read::string(read::required(&mut m, "user")?)?,
            message: read::string(read::required(&mut m, "message")?)?,
            data: read::required(&mut m, "data")?,
            created_ms: read::f64(read::required(&mut m, "created_ms")?)?,
            expires_ms: read::f64(read::required(&mut m, "expires_ms")?)?,
        })
    }
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
    let expires_ms = now + lifetime_ms(ctx);
    let mut data = details;
    data["action"] = json!(action);
    data["mcpServer"] = json!(server);
    data["userId"] = json!(user);
    data["timestamp"] = json!(now as i64);
    // The deadline itself, so a client can show the time left without knowing the store's TTL.
    data["expiresAt"] = json!(clock::iso(expires_ms as i64));
    let pending = Pending {
        id: id.clone(),
        action: action.to_string(),
        server: server.to_string(),
        arguments,
        user,
        message: message.clone(),
        data: data.clone(),
        created_ms: now,
        expires_ms,
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
        approve_url: approve_url(ctx, &id),
        confirmation_id: id,
        message,
        confirmation_data: data,
    }
}

/// Where the user approves or denies confirmation `id` in a browser, absolute when the deployment
/// names its public origin (`PUBLIC_URL`), else a path on the origin the client called:
/// - `<APPROVE_URL>/<id>` when `APPROVE_URL` is set: an OAuth deployment sets `/confirm`, the
///   companion's page, where the user signs in (they have no bearer token of their own there);
/// - else the session page `/sessions/<session>#confirm=<id>` of the session that asked (it shows
///   the change as an approval card). A call outside a session (a 2026-07-28 request) has no page
///   to point at: the user decides with `POST /api/confirm/<id>`.
pub fn approve_url(ctx: &dyn ToolContext, id: &str) -> Option<String> {
    let platform = ctx.platform();
    let base = platform.setting("PUBLIC_URL").unwrap_or_default();
    let base = base.trim_end_matches('/');
    if let Some(page) = platform
        .setting("APPROVE_URL")
        .filter(|p| !p.trim().is_empty())
    {
        let page = format!("{}/{id}", page.trim().trim_end_matches('/'));
        return Some(if page.starts_with('/') {
            format!("{base}{page}")
        } else {
            page
        });
    }
    let session = ctx.session_id();
    if !crate::wire::valid_session_id(&session) {
        return None;
    }
    Some(format!("{base}/sessions/{session}#confirm={id}"))
}

/// A confirmation's state as `get_confirmation` tells it, read from `audit_log` (which records
/// every request, decision and execution): only the user who asked sees it; anyone else, like
/// an id that was never issued, gets "no such confirmation" (nothing tells that it exists).
pub async fn state(ctx: &dyn ToolContext, id: &str) -> Reply {
    let absent = || {
        Reply::failure(
            Code::OperationFailed,
            format!("There is no confirmation {id} among the changes you asked for."),
            "Use the confirmationId of a pending_confirmation answer you received.",
        )
    };
    let Some(user) = ctx.caller().user.filter(|_| is_confirmation_id(id)) else {
        return absent();
    };
    let rows = match ctx
        .query(
            "SELECT user_id, tool, event, outcome, at FROM audit_log WHERE confirmation_id = ?1 ORDER BY id",
            vec![json!(id)],
        )
        .await
    {
        Ok(rows) => rows,
        Err(e) => return super::db(e),
    };
    let Some(asked) = rows
        .iter()
        .find(|r| r["event"] == "requested" && r["user_id"].as_str() == Some(user.as_str()))
    else {
        return absent();
    };
    let requested_at = asked["at"].as_str().unwrap_or_default();
    let expires_ms = chrono::DateTime::parse_from_rfc3339(requested_at)
        .map(|t| t.timestamp_millis() as f64 + lifetime_ms(ctx))
        .unwrap_or(0.0);
    let expires_at = clock::iso(expires_ms as i64);
    // The last event that moved it (a refused decision by another user moves nothing).
    let last = rows
        .iter()
        .rev()
        .find(|r| r["event"] != "refused")
        .unwrap_or(asked);
    let outcome = last["outcome"].as_str().filter(|o| !o.is_empty());
    let now = clock::now_ms();
    // Undecided past its deadline, it has expired, whether or not its expiry is recorded yet.
    let event = match last["event"].as_str().unwrap_or("requested") {
        "requested" if now > expires_ms => "expired",
        event => event,
    };
    let (state, message) = match event {
        "requested" => (
            "pending",
            format!(
                "Waiting for the user's decision ({} s left): they approve or deny it at approveUrl, or with POST /api/confirm/{id}.",
                ((expires_ms - now) / 1000.0).ceil().max(0.0)
            ),
        ),
        "approved" => (
            "executing",
            "Approved; the change is being made.".to_string(),
        ),
        "denied" => (
            "denied",
            "The user denied it; nothing was changed.".to_string(),
        ),
        "expired" => (
            "expired",
            "It expired before anyone decided; nothing was changed. Ask for the change again if it is still needed.".to_string(),
        ),
        "executed" => ("executed", "Approved and done.".to_string()),
        _ => (
            "failed",
            format!(
                "Approved, but the change could not be made ({}); nothing was changed.",
                outcome.unwrap_or("OPERATION_FAILED")
            ),
        ),
    };
    let tool = asked["tool"].as_str().unwrap_or_default();
    let decided_at = rows
        .iter()
        .find(|r| matches!(r["event"].as_str(), Some("approved" | "denied" | "expired")))
        .and_then(|r| r["at"].as_str());
    Reply::success(
        format!("Confirmation of {tool}: {state}. {message}"),
        json!({
            "confirmationId": id,
            "action": tool,
            "state": state,
            "message": message,
            "requestedAt": requested_at,
            "expiresAt": expires_at,
            "decidedAt": decided_at,
            "errorCode": if state == "failed" { json!(outcome.unwrap_or("OPERATION_FAILED")) } else { Value::Null },
            "approveUrl": if state == "pending" { json!(approve_url(ctx, id)) } else { Value::Null },
        }),
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::call::CallContext;
    use crate::registry::Caller;
    use crate::testkit::TestPlatform;

    /// `approve_url` of confirmation `abc` with these settings, outside a session.
    fn approve_at(settings: &[(&str, &str)]) -> Option<String> {
        let platform = settings
            .iter()
            .fold(TestPlatform::new(), |p, (k, v)| p.with_setting(k, Some(v)));
        let caller = Caller {
            user: Some("u".into()),
            roles: Vec::new(),
        };
        let ctx = CallContext::unattended(&platform, caller, "a test");
        approve_url(&ctx, "abc")
    }

    #[test]
    fn approve_url_leads_to_the_approval_page_when_one_is_set() {
        assert_eq!(approve_at(&[]), None, "no session, no session page");
        assert_eq!(approve_at(&[("APPROVE_URL", "")]), None, "empty is unset");
        assert_eq!(
            approve_at(&[("APPROVE_URL", "/confirm")]).as_deref(),
            Some("/confirm/abc"),
            "a path on the origin the client called (the OAuth companion's)"
        );
        assert_eq!(
            approve_at(&[
                ("APPROVE_URL", "/confirm/"),
                ("PUBLIC_URL", "https://mcp.example.com/")
            ])
            .as_deref(),
            Some("https://mcp.example.com/confirm/abc")
        );
        assert_eq!(
            approve_at(&[("APPROVE_URL", "https://approve.example.com/c")]).as_deref(),
            Some("https://approve.example.com/c/abc")
        );
    }

    #[test]
    fn the_schema_declares_the_deadline_and_the_page_that_approves() {
        let schema: Value =
            serde_json::from_str(include_str!("../../../schema/domain/response.output.json"))
                .expect("the response schema is JSON");
        let expires = &schema["$defs"]["ConfirmationData"]["properties"]["expiresAt"];
        assert_eq!(
            expires["type"], "string",
            "expiresAt is declared: {expires}"
        );
        assert_eq!(expires["format"], "date-time");
        let text = schema.to_string();
        assert!(text.contains("/sessions/<session>#confirm=<confirmationId>"));
        assert!(
            !text.contains("/confirm/<confirmationId>"),
            "the old page is gone"
        );
    }

    /// The seed's write actions (§5.6): each is a tool of the same name that changes nothing when
    /// called, but asks the user with a `pending_confirmation` answer.
    const ACTIONS: [&str; 7] = [
        "delete_employee",
        "update_salary",
        "delete_invoice",
        "approve_budget",
        "delete_customer",
        "close_deal",
        "close_ticket",
    ];

    #[test]
    fn the_tools_that_ask_the_user_are_the_seeds_write_actions_and_every_domain_write() {
        let schema: Value =
            serde_json::from_str(include_str!("../../../schema/domain/response.output.json"))
                .expect("the response schema is JSON");
        let enumerated = &schema["$defs"]["ConfirmationData"]["properties"]["action"]["enum"];
        assert_eq!(enumerated, &json!(ACTIONS), "the schema's actions");
        let all = crate::tools::catalog(crate::tools::Catalog::Production);
        let asking: Vec<&str> = all
            .iter()
            .filter(|d| d.asks_user())
            .map(|d| d.name)
            .collect();
        assert_eq!(asking.len(), ACTIONS.len(), "{asking:?}");
        assert!(asking.iter().all(|a| ACTIONS.contains(a)), "{asking:?}");
        for def in all.iter().filter(|d| d.dialect.is_some()) {
            assert_eq!(
                def.asks_user(),
                !def.annotations.read_only,
                "{}: a domain tool that is not read-only must ask the user, and only those",
                def.name
            );
        }
    }

    /// The record read by hand accepts exactly what the derive accepts: every field required,
    /// `arguments` and `data` any JSON value, the times any number.
    #[test]
    fn pending_reads_as_its_derive_reads_it() {
        let whole = json!({
            "id": "0123456789abcdef0123456789abcdef", "action": "delete_employee", "server": "hr",
            "arguments": { "employee_id": "E1" }, "user": "u1", "message": "Delete E1?",
            "data": null, "created_ms": 1_700_000_000_000_i64, "expires_ms": 1.7e12,
        });
        let mut rows = vec![whole.clone(), json!(null), json!("record")];
        for field in whole.as_object().expect("an object").keys() {
            let mut missing = whole.clone();
            missing.as_object_mut().expect("an object").remove(field);
            rows.push(missing);
            let mut mistyped = whole.clone();
            mistyped[field] = json!(true);
            rows.push(mistyped);
        }
        crate::store::rows::assert_same_as_derive(Pending::read, &rows);
    }
}
