//! Sales writes (seed 002 §5.6): `delete_customer` and `close_deal`, for `sales-write` and
//! `executive`. Each asks for the user's confirmation (`domain::confirm`) and changes nothing
//! until then; the state it checked is checked again in the statement that writes.

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use super::TOOLSET;
use crate::registry::{Annotations, ToolContext, ToolDef, ToolResult};
use crate::tools::domain::{self, confirm, Code, Reply};

/// Who may change customers and deals.
const WRITERS: &[&str] = &["sales-write", "executive"];

fn customer_not_found(id: &str) -> Reply {
    Reply::failure(
        Code::CustomerNotFound,
        format!("Customer {id} not found."),
        "Use list_deals or get_customer to find the customer's id.",
    )
}

fn deal_not_found(id: &str) -> Reply {
    Reply::failure(
        Code::InvalidInput,
        format!("There is no deal {id}."),
        "Use list_deals to find the deal's id.",
    )
}

fn delete_customer(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let id = args["customer_id"].as_str().unwrap_or_default();
        let rows = ctx
            .query(
                "SELECT c.id, c.name, c.company,
                   (SELECT COUNT(*) FROM sales_contacts x WHERE x.customer_id = c.id) AS contacts,
                   (SELECT COUNT(*) FROM sales_deals d WHERE d.customer_id = c.id) AS deals,
                   (SELECT COUNT(*) FROM support_tickets t WHERE t.customer_id = c.id) AS tickets
                 FROM sales_customers c WHERE c.id = ?1",
                vec![json!(id)],
            )
            .await?;
        let c = rows.first().ok_or_else(|| customer_not_found(id))?;
        let name = c["name"].as_str().unwrap_or("");
        let message = format!(
            "Delete customer {name} ({})? This also deletes their {} contacts, {} deals and {} support tickets, and cannot be undone.",
            c["company"].as_str().unwrap_or(""),
            c["contacts"], c["deals"], c["tickets"],
        );
        let details = json!({
            "customerId": id, "customerName": name, "contacts": c["contacts"], "deals": c["deals"], "tickets": c["tickets"],
            "reason": args["reason"].as_str().unwrap_or("No reason provided"),
        });
        Ok(confirm::request(ctx, "delete_customer", TOOLSET, args, message, details).await)
    }))
}

fn close_deal(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let id = args["deal_id"].as_str().unwrap_or_default();
        let won = args["outcome"] == "won";
        if !won && args.get("actual_value").is_some() {
            return Err(Reply::failure(
                Code::ValidationError,
                "actual_value is the final value of a won deal; a lost deal has none.",
                "Leave actual_value out, or close the deal as won.",
            ));
        }
        let rows = ctx
            .query(
                "SELECT d.id, d.name, d.value_cents, d.stage, c.name AS customer
                 FROM sales_deals d JOIN sales_customers c ON c.id = d.customer_id WHERE d.id = ?1",
                vec![json!(id)],
            )
            .await?;
        let d = rows.first().ok_or_else(|| deal_not_found(id))?;
        if matches!(d["stage"].as_str(), Some("CLOSED_WON" | "CLOSED_LOST")) {
            return Err(Reply::failure(
                Code::ValidationError,
                format!(
                    "Deal {id} is already closed ({}).",
                    d["stage"].as_str().unwrap_or("")
                ),
                "Closed deals stay as they are; open a new deal for new business.",
            ));
        }
        let value = args["actual_value"]
            .as_f64()
            .map(|v| (v * 100.0).round() as i64)
            .unwrap_or_else(|| d["value_cents"].as_i64().unwrap_or(0));
        let message = if won {
            format!(
                "Close deal {} ({}) as won at {}?",
                d["name"].as_str().unwrap_or(""),
                d["customer"].as_str().unwrap_or(""),
                domain::money(value)
            )
        } else {
            format!(
                "Close deal {} ({}) as lost{}?",
                d["name"].as_str().unwrap_or(""),
                d["customer"].as_str().unwrap_or(""),
                args["loss_reason"]
                    .as_str()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            )
        };
        let details = json!({
            "dealId": id, "dealName": d["name"], "customerName": d["customer"], "outcome": args["outcome"],
            "finalValue": domain::dollars(&json!(value)), "lossReason": args["loss_reason"],
        });
        Ok(confirm::request(ctx, "close_deal", TOOLSET, args, message, details).await)
    }))
}

/// Deletes the confirmed customer, with what belongs to them.
fn customer_deleted<'a>(
    ctx: &'a dyn ToolContext,
    a: &'a Value,
    data: &'a Value,
) -> LocalBoxFuture<'a, Value> {
    domain::carried_out(Box::pin(async move {
        let id = a["customer_id"].as_str().unwrap_or_default();
        let rows = ctx
            .query(
                "DELETE FROM sales_customers WHERE id = ?1 RETURNING id",
                vec![json!(id)],
            )
            .await?;
        if rows.is_empty() {
            return Err(customer_not_found(id));
        }
        let text = format!(
            "Customer {} has been deleted.",
            data["customerName"].as_str().unwrap_or(id)
        );
        Ok(Reply::done(
            text,
            json!({ "deleted": true, "customerId": id }),
        ))
    }))
}

/// Closes the confirmed deal, unless it was closed or removed meanwhile.
fn deal_closed<'a>(
    ctx: &'a dyn ToolContext,
    a: &'a Value,
    data: &'a Value,
) -> LocalBoxFuture<'a, Value> {
    domain::carried_out(Box::pin(async move {
        let id = a["deal_id"].as_str().unwrap_or_default();
        let won = a["outcome"] == "won";
        let value = a["actual_value"]
            .as_f64()
            .map(|v| (v * 100.0).round() as i64);
        let rows = ctx
            .query(
                "UPDATE sales_deals SET stage = ?2, probability = ?3, value_cents = COALESCE(?4, value_cents),
                   loss_reason = ?5, notes = COALESCE(?6, notes), closed_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'),
                   updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
                 WHERE id = ?1 AND stage NOT IN ('CLOSED_WON', 'CLOSED_LOST') RETURNING id",
                vec![
                    json!(id),
                    json!(if won { "CLOSED_WON" } else { "CLOSED_LOST" }),
                    json!(if won { 100 } else { 0 }),
                    json!(value),
                    if won { Value::Null } else { a["loss_reason"].clone() },
                    a["notes"].clone(),
                ],
            )
            .await?;
        if rows.is_empty() {
            return Err(Reply::failure(
                Code::ValidationError,
                format!("Deal {id} was closed or removed meanwhile; nothing was changed."),
                "Use list_deals to see its current stage.",
            ));
        }
        let text = format!(
            "Deal {} is closed as {}.",
            data["dealName"].as_str().unwrap_or(id),
            if won { "won" } else { "lost" }
        );
        Ok(Reply::done(
            text,
            json!({ "closed": true, "dealId": id, "outcome": a["outcome"] }),
        ))
    }))
}

/// The toolset's write tools.
pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        toolset: TOOLSET,
        name: "delete_customer",
        title: "Delete customer",
        description: "Ask to delete a customer with their contacts, deals and support tickets. Nothing changes until the user confirms: pending_confirmation, then POST /api/confirm/<id> (or an elicitation form).",
        annotations: Annotations { read_only: false, destructive: true, idempotent: false, open_world: false },
        input_schema: include_str!("../../../schema/sales/delete_customer.input.json"),
        roles: WRITERS,
        handler: delete_customer,
        confirmed: Some(customer_deleted),
        ..domain::WRITE
    },
    ToolDef {
        toolset: TOOLSET,
        name: "close_deal",
        title: "Close deal",
        description: "Ask to close an open deal as won (optionally at its final value) or lost (optionally with the reason). Nothing changes until the user confirms (pending_confirmation, then POST /api/confirm/<id> or an elicitation form).",
        annotations: Annotations { read_only: false, destructive: false, idempotent: true, open_world: false },
        input_schema: include_str!("../../../schema/sales/close_deal.input.json"),
        roles: WRITERS,
        handler: close_deal,
        confirmed: Some(deal_closed),
        ..domain::WRITE
    },
];
