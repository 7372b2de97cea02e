//! Finance tools (seed 002): department budgets, supplier invoices and expense reports. Money is
//! stored as integer cents and answered in dollars.
//!
//! | tool | who may call it | rows they see |
//! | --- | --- | --- |
//! | `get_budget` | `finance-read`, `executive` | every department's budget |
//! | `get_budget_summary` | `finance-read`, `executive` | every department, with company totals |
//! | `list_budgets` | `finance-read`, `executive` | as above |
//! | `list_invoices` | `finance-read`, `executive` | every invoice |
//! | `get_expense_report` | anyone signed in | their own reports; `finance-read` and `executive` everyone's |
//!
//! Row level: budgets and invoices are company records that only the finance roles may list, so
//! the tool's roles are the whole rule. Expense reports are personal: the SQL of
//! `get_expense_report` keeps a caller without `finance-read` or `executive` to their own rows,
//! and someone else's id is answered as not found (nothing tells whether that employee exists).
//!
//! Masking: none of these answers carries contact data or salaries (people appear as employee
//! ids; vendors as names), so nothing is masked here.
//!
//! `list_invoices` filters by vendor with a partial match: the user's text is bound as a parameter
//! and its `%`, `_` and `\` are escaped ([`domain::like_literal`]), so `100%` does not also match
//! `1000 Lakes`.

pub mod writes;

use chrono::Datelike;
use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use super::domain::{self, Code, Reply, SIGNED_IN};
use crate::clock;
use crate::registry::{ToolContext, ToolDef, ToolResult};

const TOOLSET: &str = "finance";

/// Roles that see every finance record.
const READERS: &[&str] = &["finance-read", "executive"];

/// The current fiscal year (the calendar year, UTC).
fn this_year() -> i32 {
    // Out of range only beyond ±262,000 years; the epoch stands in for such a clock.
    chrono::DateTime::from_timestamp_millis(clock::now_ms() as i64)
        .unwrap_or_default()
        .year()
}

/// A `YYYY-MM` month (month 01–12), as given; `None` for anything else.
pub fn month(text: &str) -> Option<&str> {
    let b = text.as_bytes();
    let shaped =
        b.len() == 7 && b[4] == b'-' && b[..4].iter().chain(&b[5..]).all(u8::is_ascii_digit);
    let m = text.get(5..).and_then(|m| m.parse::<u8>().ok());
    (shaped && matches!(m, Some(1..=12))).then_some(text)
}

/// A `finance_budget_summary` row as the seed's Budget.
fn budget(row: &Value) -> Value {
    json!({
        "budget_id": row["id"],
        "department": row["department"],
        "department_code": row["department_id"],
        "fiscal_year": row["fiscal_year"],
        "allocated_amount": domain::dollars(&row["allocated_cents"]),
        "spent_amount": domain::dollars(&row["spent_cents"]),
        "remaining_amount": domain::dollars(&row["remaining_cents"]),
        "status": row["status"],
        "submitted_by": row["submitted_by"],
        "submitted_at": row["submitted_at"],
        "approved_by": row["approved_by"],
        "approved_at": row["approved_at"],
        "notes": row["notes"],
    })
}

const BUDGET_COLUMNS: &str =
    "id, department_id, department, fiscal_year, allocated_cents, spent_cents,
     remaining_cents, status, submitted_by, submitted_at, approved_by, approved_at, notes";

fn get_budget(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let given = args["department"].as_str().unwrap_or_default();
        let dept = domain::department(ctx, given).await?;
        let year = args["year"].as_i64().unwrap_or_else(|| this_year().into());
        let rows = ctx
            .query(
                &format!(
                    "SELECT {BUDGET_COLUMNS} FROM finance_budget_summary
                     WHERE department_id = ?1 AND fiscal_year = ?2"
                ),
                vec![json!(dept), json!(year)],
            )
            .await?;
        let Some(row) = rows.first() else {
            let years = ctx
                .query(
                    "SELECT fiscal_year FROM finance_budgets WHERE department_id = ?1 ORDER BY fiscal_year",
                    vec![json!(dept)],
                )
                .await?;
            let years: Vec<String> = years.iter().map(|r| r["fiscal_year"].to_string()).collect();
            return Err(Reply::failure(
                Code::BudgetNotFound,
                format!("There is no {year} budget for {given}."),
                if years.is_empty() {
                    "This department has no budgets; use list_budgets to see which departments do."
                        .to_string()
                } else {
                    format!("Ask for one of its fiscal years: {}.", years.join(", "))
                },
            ));
        };
        // Spend by quarter answers "budget vs actual" for a quarter without another call.
        let quarters = ctx
            .query(
                "SELECT quarter, SUM(amount_cents) AS spent_cents FROM finance_department_spend
                 WHERE department_id = ?1 AND fiscal_year = ?2 GROUP BY quarter ORDER BY quarter",
                vec![json!(dept), json!(year)],
            )
            .await?;
        let mut data = budget(row);
        data["spent_by_quarter"] = quarters
            .iter()
            .map(|q| json!({ "quarter": q["quarter"], "spent_amount": domain::dollars(&q["spent_cents"]) }))
            .collect();
        Ok(Reply::success(
            format!(
                "{} budget {}: ${} allocated, ${} spent, ${} remaining ({}).",
                row["department"].as_str().unwrap_or(""),
                row["fiscal_year"],
                data["allocated_amount"],
                data["spent_amount"],
                data["remaining_amount"],
                row["status"].as_str().unwrap_or("")
            ),
            data,
        ))
    }))
}

/// Cents as a share of `of` in percent, one decimal; `None` when `of` is zero.
fn percent(part: i64, of: i64) -> Value {
    if of == 0 {
        return Value::Null;
    }
    crate::engine::expr::num((part as f64 * 1000.0 / of as f64).round() / 10.0)
}

/// The budget-vs-actual line of one department (or the totals): the period's share of the
/// allocation (a quarter is a fourth of the year's), what was spent in it, and the difference.
fn versus(allocated: i64, spent: i64, quarter: Option<i64>) -> Value {
    let budget = match quarter {
        Some(_) => (allocated + 2) / 4,
        None => allocated,
    };
    json!({
        "allocated_amount": domain::dollars(&json!(allocated)),
        "budget_for_period": domain::dollars(&json!(budget)),
        "spent_amount": domain::dollars(&json!(spent)),
        "remaining_amount": domain::dollars(&json!(budget - spent)),
        "percent_used": percent(spent, budget),
        "over_budget": spent > budget,
    })
}

fn get_budget_summary(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let year = args["year"].as_i64().unwrap_or_else(|| this_year().into());
        let quarter = args["quarter"].as_i64();
        let rows = ctx
            .query(
                "SELECT f.department_id, d.name AS department, f.allocated_cents, f.status,
                   (SELECT COALESCE(SUM(x.amount_cents), 0) FROM finance_department_spend x
                    WHERE x.department_id = f.department_id AND x.fiscal_year = f.fiscal_year
                      AND (?2 IS NULL OR x.quarter = ?2)) AS spent_cents
                 FROM finance_budgets f JOIN hr_departments d ON d.id = f.department_id
                 WHERE f.fiscal_year = ?1 ORDER BY d.name",
                vec![json!(year), json!(quarter)],
            )
            .await?;
        if rows.is_empty() {
            return Err(Reply::failure(
                Code::BudgetNotFound,
                format!("There are no budgets for fiscal year {year}."),
                "Use list_budgets to see which fiscal years have budgets.",
            ));
        }
        let cents = |r: &Value, c: &str| r[c].as_i64().unwrap_or(0);
        let departments: Vec<Value> = rows
            .iter()
            .map(|r| {
                let mut line = versus(
                    cents(r, "allocated_cents"),
                    cents(r, "spent_cents"),
                    quarter,
                );
                line["department"] = r["department"].clone();
                line["department_code"] = r["department_id"].clone();
                line["status"] = r["status"].clone();
                line
            })
            .collect();
        let allocated: i64 = rows.iter().map(|r| cents(r, "allocated_cents")).sum();
        let spent: i64 = rows.iter().map(|r| cents(r, "spent_cents")).sum();
        let totals = versus(allocated, spent, quarter);
        let period = match quarter {
            Some(q) => format!("{year}-Q{q}"),
            None => format!("FY{year}"),
        };
        let over: Vec<&str> = departments
            .iter()
            .filter(|d| d["over_budget"] == true)
            .filter_map(|d| d["department"].as_str())
            .collect();
        let summary = format!(
            "{period}, all {} departments: ${} spent of ${} budgeted ({}% used); over budget: {}.",
            departments.len(),
            totals["spent_amount"],
            totals["budget_for_period"],
            totals["percent_used"],
            if over.is_empty() {
                "none".to_string()
            } else {
                over.join(", ")
            }
        );
        Ok(Reply::success(
            summary,
            json!({
                "fiscal_year": year,
                "quarter": quarter,
                "period": period,
                "departments": departments,
                "totals": totals,
                "over_budget": over,
            }),
        ))
    }))
}

fn list_budgets(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let limit = domain::limit(&args);
        let filters = json!({ "year": args.get("year"), "status": args.get("status") });
        let after = domain::resume_after(ctx, "list_budgets", &filters, args["cursor"].as_str())?
            .unwrap_or(Value::Null);
        let rows = ctx
            .query(
                &format!(
                    "SELECT {BUDGET_COLUMNS} FROM finance_budget_summary
                     WHERE (?1 IS NULL OR fiscal_year = ?1) AND (?2 IS NULL OR status = ?2)
                       AND (?3 IS NULL OR (fiscal_year, department, id) > (?3, ?4, ?5))
                     ORDER BY fiscal_year, department, id LIMIT ?6"
                ),
                vec![
                    args["year"].clone(),
                    args["status"].clone(),
                    after[0].clone(),
                    after[1].clone(),
                    after[2].clone(),
                    json!(limit + 1),
                ],
            )
            .await?;
        let (rows, page) = domain::page_of(
            ctx,
            "list_budgets",
            &filters,
            rows,
            limit,
            |r| json!([r["fiscal_year"], r["department"], r["id"]]),
            (
                "To see more budgets, call list_budgets again with metadata.nextCursor as cursor.",
                "year or status",
            ),
        )?;
        let data: Vec<Value> = rows.iter().map(budget).collect();
        Ok(Reply::page(format!("{} budgets.", data.len()), data, page))
    }))
}

fn list_invoices(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let limit = domain::limit(&args);
        let filters = json!({
            "status": args.get("status"),
            "vendor": args.get("vendor"),
            "department": args.get("department"),
        });
        let after = domain::resume_after(ctx, "list_invoices", &filters, args["cursor"].as_str())?
            .unwrap_or(Value::Null);
        let dept = match args["department"].as_str() {
            Some(d) => Some(domain::department(ctx, d).await?),
            None => None,
        };
        let vendor = args["vendor"].as_str().map(domain::like_literal);
        let rows = ctx
            .query(
                "SELECT i.id, i.vendor_id, v.name AS vendor_name, i.vendor_reference, i.amount_cents, i.currency,
                        i.description, d.name AS department, i.status, i.invoice_date, i.due_date, i.submitted_by,
                        i.submitted_at, i.approved_by, i.approved_at, i.paid_at, i.rejection_reason
                 FROM finance_invoices i JOIN finance_vendors v ON v.id = i.vendor_id
                 JOIN hr_departments d ON d.id = i.department_id
                 WHERE (?1 IS NULL OR i.status = ?1)
                   AND (?2 IS NULL OR v.name LIKE '%' || ?2 || '%' ESCAPE '\\')
                   AND (?3 IS NULL OR i.department_id = ?3)
                   AND (?4 IS NULL OR (i.invoice_date, i.id) < (?4, ?5))
                 ORDER BY i.invoice_date DESC, i.id DESC LIMIT ?6",
                vec![
                    args["status"].clone(),
                    json!(vendor),
                    json!(dept),
                    after[0].clone(),
                    after[1].clone(),
                    json!(limit + 1),
                ],
            )
            .await?;
        let (rows, page) = domain::page_of(
            ctx,
            "list_invoices",
            &filters,
            rows,
            limit,
            |r| json!([r["invoice_date"], r["id"]]),
            ("To see more invoices, call list_invoices again with metadata.nextCursor as cursor.", "status, vendor or department"),
        )?;
        let data: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "invoice_id": r["id"],
                    "vendor_name": r["vendor_name"],
                    "vendor_id": r["vendor_id"],
                    "vendor_reference": r["vendor_reference"],
                    "amount": domain::dollars(&r["amount_cents"]),
                    "currency": r["currency"],
                    "description": r["description"],
                    "department": r["department"],
                    "status": r["status"],
                    "invoice_date": r["invoice_date"],
                    "due_date": r["due_date"],
                    "submitted_by": r["submitted_by"],
                    "submitted_at": r["submitted_at"],
                    "approved_by": r["approved_by"],
                    "approved_at": r["approved_at"],
                    "paid_at": r["paid_at"],
                    "rejection_reason": r["rejection_reason"],
                })
            })
            .collect();
        Ok(Reply::page(
            format!("{} invoices, newest first.", data.len()),
            data,
            page,
        ))
    }))
}

/// Stored line items (`amount_cents`) as answered (`amount` in dollars); `[]` if unreadable.
fn items(text: &Value) -> Value {
    let list: Vec<Value> = text
        .as_str()
        .and_then(|t| serde_json::from_str::<Vec<Value>>(t).ok())
        .unwrap_or_default();
    list.into_iter()
        .map(|mut item| {
            let amount = domain::dollars(&item["amount_cents"]);
            if let Some(o) = item.as_object_mut() {
                o.remove("amount_cents");
                o.insert("amount".into(), amount);
            }
            item
        })
        .collect()
}

fn get_expense_report(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let caller = ctx.caller();
        let all = i64::from(domain::holds(&caller, READERS));
        let me = caller.user.clone().unwrap_or_default();
        let id = args["employee_id"].as_str().unwrap_or_default();
        let given = args["month"].as_str().unwrap_or_default();
        let month = month(given).ok_or_else(|| {
            Reply::failure(
                Code::InvalidInput,
                format!("{given:?} is not a month; months are written YYYY-MM."),
                "Give the month as YYYY-MM, e.g. 2026-10.",
            )
        })?;
        // ?3/?4: the caller sees every report (finance roles) or only their own.
        let rows = ctx
            .query(
                "SELECT r.id, r.employee_id, e.first_name || ' ' || e.last_name AS employee_name, d.name AS department,
                        r.month, r.status, r.items, r.total_cents, r.submitted_at, r.approved_by, r.approved_at,
                        r.reimbursed_at, r.notes
                 FROM finance_expense_reports r JOIN hr_employees e ON e.id = r.employee_id
                 JOIN hr_departments d ON d.id = r.department_id
                 WHERE r.employee_id = ?1 AND r.month = ?2 AND (?3 = 1 OR r.employee_id = ?4)",
                vec![json!(id), json!(month), json!(all), json!(me)],
            )
            .await?;
        let Some(row) = rows.first() else {
            return Err(missing_report(ctx, id, month, all, &me).await);
        };
        let data = json!({
            "report_id": row["id"],
            "employee_id": row["employee_id"],
            "employee_name": row["employee_name"],
            "department": row["department"],
            "month": row["month"],
            "status": row["status"],
            "items": items(&row["items"]),
            "total_amount": domain::dollars(&row["total_cents"]),
            "submitted_at": row["submitted_at"],
            "approved_by": row["approved_by"],
            "approved_at": row["approved_at"],
            "reimbursed_at": row["reimbursed_at"],
            "notes": row["notes"],
        });
        Ok(Reply::success(
            format!(
                "Expense report {} of {} for {month}: ${} ({}).",
                row["id"].as_str().unwrap_or(""),
                row["employee_name"].as_str().unwrap_or(""),
                data["total_amount"],
                row["status"].as_str().unwrap_or("")
            ),
            data,
        ))
    }))
}

/// Why there is no report: the employee is not one the caller may see (or does not exist), or
/// they filed none that month (then the months they did file are listed).
async fn missing_report(ctx: &dyn ToolContext, id: &str, month: &str, all: i64, me: &str) -> Reply {
    let months = ctx
        .query(
            "SELECT e.id, r.month FROM hr_employees e
             LEFT JOIN finance_expense_reports r ON r.employee_id = e.id
             WHERE e.id = ?1 AND (?2 = 1 OR e.id = ?3) ORDER BY r.month DESC",
            vec![json!(id), json!(all), json!(me)],
        )
        .await;
    let months = match months {
        Ok(m) => m,
        Err(e) => return domain::db(e),
    };
    if months.is_empty() {
        return Reply::failure(
            Code::EmployeeNotFound,
            format!(
                "Employee {id} not found among the employees whose expense reports you may read."
            ),
            "Give your own employee id, or ask someone with finance-read to look it up.",
        );
    }
    let filed: Vec<&str> = months.iter().filter_map(|r| r["month"].as_str()).collect();
    // The seed's codes have no "report not found"; the month is the argument to change.
    Reply::failure(
        Code::InvalidInput,
        format!("Employee {id} has no expense report for {month}."),
        if filed.is_empty() {
            "This employee has filed no expense reports.".to_string()
        } else {
            format!(
                "Ask for one of the months they filed: {}.",
                filed.join(", ")
            )
        },
    )
}

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        toolset: TOOLSET,
        name: "get_budget",
        title: "Get budget",
        description: "A department's operating budget for a fiscal year (default: the current year): allocated, spent (paid invoices and reimbursed expenses) and remaining amounts in dollars, status, and spend per quarter.",
        input_schema: include_str!("../../../schema/finance/get_budget.input.json"),
        roles: READERS,
        handler: get_budget,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "get_budget_summary",
        title: "Company budget vs actual",
        description: "Budget against actual spend for every department and the company in one answer, for a fiscal year (default: the current one) or one quarter of it (\"Q4 budget vs actual\": quarter 4; a quarter's budget is a fourth of the year's allocation). Spend is paid invoices and reimbursed expense reports. Lists the departments over budget.",
        input_schema: include_str!("../../../schema/finance/get_budget_summary.input.json"),
        timeout_ms: 10_000,
        roles: READERS,
        handler: get_budget_summary,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "list_budgets",
        title: "List budgets",
        description: "Department budgets, optionally of one fiscal year or status, sorted by year and department; up to 50 per page with a cursor for the next page.",
        input_schema: include_str!("../../../schema/finance/list_budgets.input.json"),
        roles: READERS,
        handler: list_budgets,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "list_invoices",
        title: "List invoices",
        description: "Supplier invoices, newest first, optionally filtered by status, vendor name (partial match, literal text) or department; up to 50 per page with a cursor for the next page. Amounts in dollars.",
        input_schema: include_str!("../../../schema/finance/list_invoices.input.json"),
        roles: READERS,
        handler: list_invoices,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "get_expense_report",
        title: "Get expense report",
        description: "An employee's expense report for one month (YYYY-MM) with its line items. Everyone may read their own; finance-read and executive everyone's.",
        input_schema: include_str!("../../../schema/finance/get_expense_report.input.json"),
        roles: &[SIGNED_IN],
        handler: get_expense_report,
        ..domain::READ
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_yyyy_mm() {
        for good in ["2026-10", "2025-01", "2026-12"] {
            assert_eq!(month(good), Some(good));
        }
        for bad in [
            "2026-13",
            "2026-00",
            "2026-1",
            "26-10",
            "2026/10",
            "2026-10-01",
            "",
            "abcd-ef",
            "２０２６-10",
            "2026-1'",
        ] {
            assert_eq!(month(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn line_items_are_in_dollars() {
        let stored = json!(r#"[{"date":"2026-10-03","merchant":"Cafe","amount_cents":1250}]"#);
        assert_eq!(
            items(&stored),
            json!([{ "date": "2026-10-03", "merchant": "Cafe", "amount": 12.5 }])
        );
        assert_eq!(items(&json!("oops")), json!([]));
    }

    #[test]
    fn budgets_answer_dollars_and_the_department_name() {
        let b = budget(
            &json!({ "id": "BUD-2026-ENG", "department_id": "ENG", "department": "Engineering",
            "fiscal_year": 2026, "allocated_cents": 100_000_000, "spent_cents": 25_000_050, "remaining_cents": 74_999_950 }),
        );
        assert_eq!(b["budget_id"], "BUD-2026-ENG");
        assert_eq!(b["department"], "Engineering");
        assert_eq!(b["allocated_amount"], 1_000_000);
        assert_eq!(b["spent_amount"], 250_000.5);
    }
}
