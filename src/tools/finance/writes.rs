//! Finance writes (seed 002 §5.6): `delete_invoice` and `approve_budget`, for `finance-write` and
//! `executive`. Each asks for the user's confirmation (`domain::confirm`) and changes nothing
//! until then; the state it checked is checked again in the same statement that writes.

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use super::TOOLSET;
use crate::registry::{Annotations, ToolContext, ToolDef, ToolResult};
use crate::tools::domain::{self, confirm, Code, Reply};

/// Who may change finance records.
const WRITERS: &[&str] = &["finance-write", "executive"];

fn invoice_not_found(id: &str) -> Reply {
    Reply::failure(
        Code::InvoiceNotFound,
        format!("Invoice {id} not found."),
        "Use list_invoices to find the invoice's id.",
    )
}

fn paid(id: &str) -> Reply {
    Reply::failure(
        Code::ValidationError,
        format!(
            "Invoice {id} is paid; paid invoices are kept for the accounts and cannot be deleted."
        ),
        "Record a credit note with the vendor instead.",
    )
}

fn delete_invoice(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let id = args["invoice_id"].as_str().unwrap_or_default();
        let rows = ctx
            .query(
                "SELECT i.id, i.vendor_reference, v.name AS vendor, i.amount_cents, i.status, i.due_date, d.name AS department
                 FROM finance_invoices i JOIN finance_vendors v ON v.id = i.vendor_id JOIN hr_departments d ON d.id = i.department_id
                 WHERE i.id = ?1",
                vec![json!(id)],
            )
            .await?;
        let inv = rows.first().ok_or_else(|| invoice_not_found(id))?;
        if inv["status"] == "paid" {
            return Err(paid(id));
        }
        let vendor = inv["vendor"].as_str().unwrap_or("");
        let amount = domain::money(inv["amount_cents"].as_i64().unwrap_or(0));
        let message = format!(
            "Delete invoice {} from {vendor} for {amount} ({}, due {}, {})? This cannot be undone.",
            inv["vendor_reference"].as_str().unwrap_or(""),
            inv["status"].as_str().unwrap_or(""),
            inv["due_date"].as_str().unwrap_or(""),
            inv["department"].as_str().unwrap_or(""),
        );
        let details = json!({
            "invoiceId": id, "vendorName": vendor, "amount": domain::dollars(&inv["amount_cents"]),
            "invoiceStatus": inv["status"], "reason": args["reason"].as_str().unwrap_or("No reason provided"),
        });
        Ok(confirm::request(ctx, "delete_invoice", TOOLSET, args, message, details).await)
    }))
}

/// The budget `approve_budget` means: the department's budget for `year`, or its budget waiting
/// for approval.
async fn budget_to_approve(
    ctx: &dyn ToolContext,
    args: &Value,
) -> std::result::Result<Value, Reply> {
    let dept = domain::department(ctx, args["department"].as_str().unwrap_or_default()).await?;
    let rows = ctx
        .query(
            "SELECT b.id, b.fiscal_year, b.allocated_cents, b.status, d.name AS department
             FROM finance_budgets b JOIN hr_departments d ON d.id = b.department_id
             WHERE b.department_id = ?1 AND (?2 IS NULL AND b.status IN ('draft', 'pending_approval') OR b.fiscal_year = ?2)
             ORDER BY b.fiscal_year DESC LIMIT 1",
            vec![json!(dept), args["fiscal_year"].clone()],
        )
        .await?;
    rows.into_iter().next().ok_or_else(|| {
        Reply::failure(
            Code::BudgetNotFound,
            match args["fiscal_year"].as_i64() {
                Some(y) => format!(
                    "There is no {} budget for fiscal year {y}.",
                    args["department"].as_str().unwrap_or("")
                ),
                None => format!(
                    "No {} budget is waiting for approval.",
                    args["department"].as_str().unwrap_or("")
                ),
            },
            "Use list_budgets (status pending_approval) to see the budgets waiting for approval.",
        )
    })
}

fn approve_budget(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let b = budget_to_approve(ctx, &args).await?;
        if !matches!(b["status"].as_str(), Some("draft" | "pending_approval")) {
            return Err(Reply::failure(
                Code::ValidationError,
                format!(
                    "The {} budget for fiscal year {} is already {}.",
                    b["department"].as_str().unwrap_or(""),
                    b["fiscal_year"],
                    b["status"].as_str().unwrap_or("")
                ),
                "Only draft and pending_approval budgets can be approved.",
            ));
        }
        let cents = (args["amount"].as_f64().unwrap_or(0.0) * 100.0).round() as i64;
        let message = format!(
            "Approve the {} budget for fiscal year {} at {} (requested {})?",
            b["department"].as_str().unwrap_or(""),
            b["fiscal_year"],
            domain::money(cents),
            domain::money(b["allocated_cents"].as_i64().unwrap_or(0)),
        );
        let details = json!({
            "budgetId": b["id"], "department": b["department"], "fiscalYear": b["fiscal_year"],
            "requestedAmount": domain::dollars(&b["allocated_cents"]), "approvedAmount": domain::dollars(&json!(cents)),
            "notes": args["notes"],
        });
        let mut arguments = args.clone();
        arguments["budget_id"] = b["id"].clone();
        Ok(confirm::request(ctx, "approve_budget", TOOLSET, arguments, message, details).await)
    }))
}

/// Deletes the confirmed invoice, unless it was paid meanwhile.
fn invoice_deleted<'a>(
    ctx: &'a dyn ToolContext,
    a: &'a Value,
    data: &'a Value,
) -> LocalBoxFuture<'a, Value> {
    domain::carried_out(Box::pin(async move {
        let id = a["invoice_id"].as_str().unwrap_or_default();
        let rows = ctx
            .query(
                "DELETE FROM finance_invoices WHERE id = ?1 AND status <> 'paid' RETURNING id",
                vec![json!(id)],
            )
            .await?;
        if rows.is_empty() {
            let gone = invoice_not_found(id);
            return Err(domain::unchanged(ctx, "finance_invoices", id, gone, paid(id)).await);
        }
        Ok(Reply::success(
            format!("Invoice {id} has been deleted."),
            json!({ "deleted": true, "invoiceId": id, "message": format!("Invoice {id} from {} has been deleted.", data["vendorName"].as_str().unwrap_or("")) }),
        ))
    }))
}

/// Approves the confirmed budget, unless it was approved or removed meanwhile.
fn budget_approved<'a>(
    ctx: &'a dyn ToolContext,
    a: &'a Value,
    data: &'a Value,
) -> LocalBoxFuture<'a, Value> {
    domain::carried_out(Box::pin(async move {
        let id = a["budget_id"].as_str().unwrap_or_default();
        let cents = (a["amount"].as_f64().unwrap_or(0.0) * 100.0).round() as i64;
        let approver = ctx.caller().user.unwrap_or_default();
        let rows = ctx
            .query(
                "UPDATE finance_budgets SET status = 'approved', allocated_cents = ?2, approved_by = ?3,
                   approved_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), notes = COALESCE(?4, notes),
                   updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
                 WHERE id = ?1 AND status IN ('draft', 'pending_approval') RETURNING id",
                vec![json!(id), json!(cents), json!(approver), a["notes"].clone()],
            )
            .await?;
        if rows.is_empty() {
            return Err(Reply::failure(
                Code::BudgetNotFound,
                "The budget is no longer waiting for approval (approved or removed meanwhile); nothing was changed.",
                "Use get_budget to see its current state.",
            ));
        }
        let text = format!(
            "The {} budget for fiscal year {} is approved at {}.",
            data["department"].as_str().unwrap_or(""),
            data["fiscalYear"],
            domain::money(cents)
        );
        Ok(Reply::done(
            text,
            json!({ "approved": true, "budgetId": id, "approvedAmount": domain::dollars(&json!(cents)) }),
        ))
    }))
}

/// The toolset's write tools.
pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        toolset: TOOLSET,
        name: "delete_invoice",
        title: "Delete invoice",
        description: "Ask to delete an unpaid invoice (paid ones are kept). Nothing changes until the user confirms: pending_confirmation, then POST /api/confirm/<id> (or an elicitation form).",
        annotations: Annotations { read_only: false, destructive: true, idempotent: false, open_world: false },
        input_schema: include_str!("../../../schema/finance/delete_invoice.input.json"),
        roles: WRITERS,
        handler: delete_invoice,
        confirmed: Some(invoice_deleted),
        ..domain::WRITE
    },
    ToolDef {
        toolset: TOOLSET,
        name: "approve_budget",
        title: "Approve budget",
        description: "Ask to approve a department's budget at an amount: the one waiting for approval, or the given fiscal year's. Nothing changes until the user confirms (pending_confirmation, then POST /api/confirm/<id> or an elicitation form).",
        annotations: Annotations { read_only: false, destructive: false, idempotent: true, open_world: false },
        input_schema: include_str!("../../../schema/finance/approve_budget.input.json"),
        roles: WRITERS,
        handler: approve_budget,
        confirmed: Some(budget_approved),
        ..domain::WRITE
    },
];
