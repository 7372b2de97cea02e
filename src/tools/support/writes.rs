//! Support writes (seed 002 §5.6): `close_ticket`, for `support-write` and `executive`. It asks for
//! the user's confirmation (`domain::confirm`) and changes nothing until then.

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use super::TOOLSET;
use crate::registry::{Annotations, ToolContext, ToolDef, ToolResult};
use crate::tools::domain::{self, confirm, Code, Reply};

/// Who may close tickets.
const WRITERS: &[&str] = &["support-write", "executive"];

fn not_found(id: &str) -> Reply {
    Reply::failure(
        Code::TicketNotFound,
        format!("Ticket {id} not found."),
        "Use search_tickets to find the ticket's id.",
    )
}

fn close_ticket(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let id = args["ticket_id"].as_str().unwrap_or_default();
        let rows = ctx
            .query(
                "SELECT t.id, t.subject, t.status, c.name AS customer FROM support_tickets t
                 JOIN sales_customers c ON c.id = t.customer_id WHERE t.id = ?1",
                vec![json!(id)],
            )
            .await?;
        let t = rows.first().ok_or_else(|| not_found(id))?;
        if t["status"] == "closed" {
            return Err(Reply::failure(
                Code::ValidationError,
                format!("Ticket {id} is already closed."),
                "Open a new ticket if the problem came back.",
            ));
        }
        let resolution = args["resolution"].as_str().unwrap_or("");
        let kind = args["resolution_type"].as_str().unwrap_or("solved");
        let message = format!(
            "Close ticket {id} \"{}\" ({}) as {kind}, with the resolution: {resolution}",
            t["subject"].as_str().unwrap_or(""),
            t["customer"].as_str().unwrap_or(""),
        );
        let details = json!({
            "ticketId": id, "subject": t["subject"], "customerName": t["customer"], "resolutionType": kind,
            "customerNotified": args["customer_notified"].as_bool().unwrap_or(true),
        });
        Ok(confirm::request(ctx, "close_ticket", TOOLSET, args, message, details).await)
    }))
}

/// Closes the confirmed ticket, unless it was closed meanwhile.
fn ticket_closed<'a>(
    ctx: &'a dyn ToolContext,
    a: &'a Value,
    _: &'a Value,
) -> LocalBoxFuture<'a, Value> {
    domain::carried_out(Box::pin(async move {
        let id = a["ticket_id"].as_str().unwrap_or_default();
        let rows = ctx
            .query(
                "UPDATE support_tickets SET status = 'closed', resolution = ?2, resolution_type = ?3,
                   resolved_at = COALESCE(resolved_at, strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
                   closed_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
                 WHERE id = ?1 AND status <> 'closed' RETURNING id",
                vec![json!(id), a["resolution"].clone(), json!(a["resolution_type"].as_str().unwrap_or("solved"))],
            )
            .await?;
        if rows.is_empty() {
            let moved = Reply::failure(
                Code::ValidationError,
                format!("Ticket {id} was closed meanwhile; nothing was changed."),
                "Use search_tickets to see it.",
            );
            return Err(domain::unchanged(ctx, "support_tickets", id, not_found(id), moved).await);
        }
        let text = format!("Ticket {id} is closed.");
        Ok(Reply::done(text, json!({ "closed": true, "ticketId": id })))
    }))
}

/// The toolset's write tools.
pub static TOOLS: &[ToolDef] = &[ToolDef {
    toolset: TOOLSET,
    name: "close_ticket",
    title: "Close ticket",
    description: "Ask to close a support ticket with a resolution. Nothing changes until the user confirms: pending_confirmation, then POST /api/confirm/<id> (or an elicitation form).",
    annotations: Annotations { read_only: false, destructive: false, idempotent: true, open_world: false },
    input_schema: include_str!("../../../schema/support/close_ticket.input.json"),
    roles: WRITERS,
    handler: close_ticket,
    confirmed: Some(ticket_closed),
    ..domain::WRITE
}];
