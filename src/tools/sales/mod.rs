//! Sales tools (seed 002): customers, deals and the pipeline by quarter. Money is stored as
//! integer cents and answered in dollars.
//!
//! | tool | who may call it | rows they see |
//! | --- | --- | --- |
//! | `get_customer` | `sales-read`, `executive` | every customer |
//! | `list_deals` | `sales-read`, `executive` | by role, below |
//! | `get_pipeline` | `sales-read`, `executive` | by role, below, summed by stage |
//!
//! Row level (seed 002 §5, "role-based filters (Sales)"): `sales-write` (who closes deals for the
//! team) and `executive` see every deal; a `manager` with `sales-read` sees the deals they or
//! anyone in their reporting chain own, and those on accounts they own; any other `sales-read`
//! caller (an account executive) sees their own deals and those on their own accounts. The filter
//! is in the SQL, so pages, counts and the pipeline's totals only ever cover visible deals.
//! Customers are the team's shared reference data (tickets and deals name them): every sales
//! reader may look one up, with its contact data masked as below.

//! Masking: a customer's `email` and `phone` (contact data) show for the customer's account owner,
//! `sales-write` and `executive`; other `sales-read` callers get `*** (Hidden)`. Names, company,
//! address and revenue are business data and always shown. Deals carry no contact data; their
//! `owner` is the owner's work email. No tool filters or sorts by a masked field.

pub mod writes;

use chrono::Datelike;
use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use super::domain::{self, Access, Code, Reply, HIDDEN};
use crate::clock;
use crate::registry::{Caller, ToolContext, ToolDef, ToolResult};

const TOOLSET: &str = "sales";

/// Roles that may call every sales read tool.
const READERS: &[&str] = &["sales-read", "executive"];

/// Roles that see every customer's contact data (besides the account owner).
const CONTACT_ROLES: &[&str] = &["sales-write", "executive"];

/// The deal stages in funnel order (the seed's, uppercase).
const STAGES: [&str; 7] = [
    "PROSPECTING",
    "DISCOVERY",
    "QUALIFICATION",
    "PROPOSAL",
    "NEGOTIATION",
    "CLOSED_WON",
    "CLOSED_LOST",
];

/// A quarter written `YYYY-Qn` (n 1–4, `q` in any case), normalised to `2026-Q4`; `None` for
/// anything else.
pub fn quarter(text: &str) -> Option<String> {
    let (year, q) = text.split_once('-')?;
    let n = q.strip_prefix(['Q', 'q'])?;
    let shaped = year.len() == 4
        && year.bytes().all(|b| b.is_ascii_digit())
        && matches!(n, "1" | "2" | "3" | "4");
    shaped.then(|| format!("{year}-Q{n}"))
}

/// The current quarter (UTC) as `YYYY-Qn`.
fn this_quarter() -> String {
    // Out of range only beyond ±262,000 years; the epoch stands in for such a clock.
    let d = chrono::DateTime::from_timestamp_millis(clock::now_ms() as i64).unwrap_or_default();
    format!("{}-Q{}", d.year(), d.month0() / 3 + 1)
}

/// A customer row as the caller may see it.
fn customer(row: &Value, caller: &Caller) -> Value {
    let owner = row["account_owner_id"].as_str().is_some()
        && caller.user.as_deref() == row["account_owner_id"].as_str();
    let shown = owner || domain::holds(caller, CONTACT_ROLES);
    let masked = |v: &Value| {
        if shown || v.is_null() {
            v.clone()
        } else {
            json!(HIDDEN)
        }
    };
    json!({
        "_id": row["id"],
        "name": row["name"],
        "email": masked(&row["email"]),
        "company": row["company"],
        "industry": row["industry"],
        "phone": masked(&row["phone"]),
        "address": {
            "street": row["street"],
            "city": row["city"],
            "state": row["state"],
            "zip": row["zip"],
            "country": row["country"],
        },
        "account_owner": row["account_owner"],
        "account_owner_id": row["account_owner_id"],
        "tier": row["tier"],
        "annual_revenue": domain::dollars(&row["annual_revenue_cents"]),
        "open_deals": row["open_deals"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    })
}

fn get_customer(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let caller = ctx.caller();
        let id = args["customer_id"].as_str().unwrap_or_default();
        let rows = ctx
            .query(
                "SELECT c.*, o.email AS account_owner,
                        (SELECT COUNT(*) FROM sales_deals d WHERE d.customer_id = c.id
                           AND d.stage NOT IN ('CLOSED_WON', 'CLOSED_LOST')) AS open_deals
                 FROM sales_customers c LEFT JOIN hr_employees o ON o.id = c.account_owner_id
                 WHERE c.id = ?1",
                vec![json!(id)],
            )
            .await?;
        let row = rows.first().ok_or_else(|| {
            Reply::failure(
                Code::CustomerNotFound,
                format!("Customer {id} not found."),
                "Use list_deals (each deal names its customer_id and customer_name) or a ticket's customer_id to find valid customer IDs.",
            )
        })?;
        Ok(Reply::success(
            format!(
                "Customer {} ({}, {} tier).",
                row["name"].as_str().unwrap_or(""),
                row["industry"].as_str().unwrap_or(""),
                row["tier"].as_str().unwrap_or("")
            ),
            customer(row, &caller),
        ))
    }))
}

/// Roles that see every deal; other sales readers see the deals their row rule allows
/// ([`DEAL_VISIBLE`]).
const ALL_DEALS: &[&str] = &["sales-write", "executive"];

/// The condition that deal `d` (with its customer `c`) is one the caller sees, under
/// [`Access::VISIBLE_EMPLOYEES`]: everyone's with `sales-write` or `executive`; else the deals the
/// caller (a `manager`: or anyone in their reporting chain) owns, or that are on an account they
/// own.
const DEAL_VISIBLE: &str = "(?2 = 1 OR d.owner_id IN (SELECT id FROM visible)
      OR c.account_owner_id IN (SELECT id FROM visible))";

fn list_deals(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let access = Access::of(&ctx.caller(), ALL_DEALS);
        let limit = domain::limit(&args);
        let by_value = args["largest_first"].as_bool() == Some(true);
        let filters = json!({
            "stage": args.get("stage"),
            "owner": args.get("owner"),
            "min_value": args.get("min_value"),
            "closing_from": args.get("closing_from"),
            "closing_to": args.get("closing_to"),
            "largest_first": args.get("largest_first"),
        });
        let after = domain::resume_after(ctx, "list_deals", &filters, args["cursor"].as_str())?
            .unwrap_or(Value::Null);
        // The schema bounds min_value to a non-negative number; compare in cents, exactly.
        let min_cents = args["min_value"]
            .as_f64()
            .map(|v| (v * 100.0).ceil() as i64);
        // Largest first for "top deals"; ties and pages by id either way.
        let (resume, order) = if by_value {
            (
                "(d.value_cents < ?7 OR (d.value_cents = ?7 AND d.id > ?8))",
                "d.value_cents DESC, d.id",
            )
        } else {
            (
                "(d.expected_close_date, d.id) > (?7, ?8)",
                "d.expected_close_date, d.id",
            )
        };
        let mut params = access.params();
        params.extend([
            args["stage"].clone(),
            args["owner"].clone(),
            json!(min_cents),
            after[0].clone(),
            after[1].clone(),
            json!(limit + 1),
            args["closing_from"].clone(),
            args["closing_to"].clone(),
        ]);
        let rows = ctx
            .query(
                &format!(
                    "{} SELECT d.id, d.customer_id, c.name AS customer_name, d.name, d.value_cents, d.currency, d.stage,
                        d.probability, d.expected_close_date, o.email AS owner, d.owner_id, d.notes, d.loss_reason,
                        d.closed_at, d.created_at, d.updated_at
                 FROM sales_deals d JOIN sales_customers c ON c.id = d.customer_id
                 LEFT JOIN hr_employees o ON o.id = d.owner_id
                 WHERE {DEAL_VISIBLE}
                   AND (?4 IS NULL OR d.stage = ?4)
                   AND (?5 IS NULL OR d.owner_id = ?5 OR lower(o.email) = lower(?5))
                   AND (?6 IS NULL OR d.value_cents >= ?6)
                   AND (?7 IS NULL OR {resume})
                   AND (?10 IS NULL OR d.expected_close_date >= ?10)
                   AND (?11 IS NULL OR d.expected_close_date <= ?11)
                 ORDER BY {order} LIMIT ?9",
                    Access::VISIBLE_EMPLOYEES
                ),
                params,
            )
            .await?;
        let (rows, page) = domain::page_of(
            ctx,
            "list_deals",
            &filters,
            rows,
            limit,
            |r| {
                if by_value {
                    json!([r["value_cents"], r["id"]])
                } else {
                    json!([r["expected_close_date"], r["id"]])
                }
            },
            (
                "To see more deals, call list_deals again with metadata.nextCursor as cursor.",
                "stage, owner, min_value or the closing dates",
            ),
        )?;
        let data: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "_id": r["id"],
                    "customer_id": r["customer_id"],
                    "customer_name": r["customer_name"],
                    "deal_name": r["name"],
                    "value": domain::dollars(&r["value_cents"]),
                    "currency": r["currency"],
                    "stage": r["stage"],
                    "probability": r["probability"],
                    "expected_close_date": r["expected_close_date"],
                    "owner": r["owner"],
                    "owner_id": r["owner_id"],
                    "notes": r["notes"],
                    "loss_reason": r["loss_reason"],
                    "closed_at": r["closed_at"],
                    "created_at": r["created_at"],
                    "updated_at": r["updated_at"],
                })
            })
            .collect();
        Ok(Reply::page(
            format!(
                "{} deals, {}.",
                data.len(),
                if by_value {
                    "largest first"
                } else {
                    "by expected close date"
                }
            ),
            data,
            page,
        ))
    }))
}

/// The seed's PipelineSummary from the `sales_pipeline` rows of one quarter: every stage in funnel
/// order (zero when it has no deals), and totals of the open stages, won and lost.
fn pipeline(quarter: &str, rows: &[Value]) -> Value {
    let cents = |stage: &str, col: &str| -> i64 {
        rows.iter()
            .find(|r| r["stage"] == stage)
            .and_then(|r| r[col].as_i64())
            .unwrap_or(0)
    };
    let sum = |stages: &[&str], col: &str| -> i64 { stages.iter().map(|s| cents(s, col)).sum() };
    let open = &STAGES[..5];
    let stages: Vec<Value> = STAGES
        .iter()
        .map(|s| {
            json!({
                "stage": s,
                "deal_count": cents(s, "deal_count"),
                "value": domain::dollars(&json!(cents(s, "value_cents"))),
                "weighted_value": domain::dollars(&json!(cents(s, "weighted_value_cents"))),
            })
        })
        .collect();
    json!({
        "quarter": quarter,
        "stages": stages,
        "total_deals": sum(&STAGES, "deal_count"),
        "open_deals": sum(open, "deal_count"),
        "open_value": domain::dollars(&json!(sum(open, "value_cents"))),
        "weighted_open_value": domain::dollars(&json!(sum(open, "weighted_value_cents"))),
        "won_value": domain::dollars(&json!(cents("CLOSED_WON", "value_cents"))),
        "lost_value": domain::dollars(&json!(cents("CLOSED_LOST", "value_cents"))),
    })
}

fn get_pipeline(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let q = match args["quarter"].as_str() {
            Some(given) => quarter(given).ok_or_else(|| {
                Reply::failure(
                    Code::InvalidInput,
                    format!("{given:?} is not a quarter; quarters are written YYYY-Qn."),
                    "Give the quarter like 2026-Q4, or leave it out for the current quarter.",
                )
            })?,
            None => this_quarter(),
        };
        let access = Access::of(&ctx.caller(), ALL_DEALS);
        let mut params = access.params();
        params.push(json!(q));
        // The `sales_pipeline` view's sums, over the deals the caller sees.
        let rows = ctx
            .query(
                &format!(
                    "{} SELECT d.stage, COUNT(*) AS deal_count, SUM(d.value_cents) AS value_cents,
                       SUM(d.value_cents * d.probability / 100) AS weighted_value_cents
                     FROM sales_deals d JOIN sales_customers c ON c.id = d.customer_id
                     WHERE d.close_quarter = ?4 AND {DEAL_VISIBLE}
                     GROUP BY d.stage",
                    Access::VISIBLE_EMPLOYEES
                ),
                params,
            )
            .await?;
        let data = pipeline(&q, &rows);
        Ok(Reply::success(
            format!(
                "Pipeline {q}: {} open deals worth ${} (${} weighted); ${} won.",
                data["open_deals"],
                data["open_value"],
                data["weighted_open_value"],
                data["won_value"]
            ),
            data,
        ))
    }))
}

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        toolset: TOOLSET,
        name: "get_customer",
        title: "Get customer",
        description: "One customer account by id: company, industry, tier, address, annual revenue (dollars), account owner and open deal count. Email and phone are masked unless the caller owns the account or has sales-write or executive.",
        input_schema: include_str!("../../../schema/sales/get_customer.input.json"),
        roles: READERS,
        handler: get_customer,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "list_deals",
        title: "List deals",
        description: "Sales deals the caller may see (sales-write and executive: all; managers: their team's; others: their own and their accounts'), sorted by expected close date or, with largest_first, by value; optionally of one stage, one owner (work email or employee id), from a minimum value in dollars, or closing between two dates (\"top 5 deals closing this month\": largest_first, limit 5, closing_from and closing_to). Up to 50 per page with a cursor for the next page.",
        input_schema: include_str!("../../../schema/sales/list_deals.input.json"),
        roles: READERS,
        handler: list_deals,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "get_pipeline",
        title: "Get pipeline",
        description: "The sales pipeline of a quarter (default: the current one) over the deals the caller may see (as list_deals): deal count, value and probability-weighted value per stage, with open, won and lost totals in dollars.",
        input_schema: include_str!("../../../schema/sales/get_pipeline.input.json"),
        roles: READERS,
        handler: get_pipeline,
        ..domain::READ
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::user as caller;

    #[test]
    fn quarters_are_yyyy_qn() {
        assert_eq!(quarter("2026-Q4").as_deref(), Some("2026-Q4"));
        assert_eq!(quarter("2025-q1").as_deref(), Some("2025-Q1"));
        for bad in [
            "2026-Q5", "2026-Q0", "2026Q4", "26-Q4", "2026-Q", "2026-Q44", "", "'; DROP",
        ] {
            assert_eq!(quarter(bad), None, "{bad:?}");
        }
    }

    fn row() -> Value {
        json!({ "id": "CUST-0001", "name": "Acme", "email": "accounts@acme.example", "phone": "+1 555",
                "account_owner_id": "E0015", "annual_revenue_cents": 123_456_789, "city": "Boston" })
    }

    #[test]
    fn contact_data_shows_for_the_owner_sales_write_and_executive() {
        let peer = customer(&row(), &caller("E0099", &["sales-read"]));
        assert_eq!(peer["email"], HIDDEN);
        assert_eq!(peer["phone"], HIDDEN);
        assert_eq!(peer["name"], "Acme", "business data is not masked");
        assert_eq!(peer["address"]["city"], "Boston");
        assert_eq!(peer["annual_revenue"], 1_234_567.89);
        for who in [
            caller("E0015", &["sales-read"]),
            caller("E0099", &["sales-read", "sales-write"]),
            caller("E0099", &["executive"]),
        ] {
            let c = customer(&row(), &who);
            assert_eq!(c["email"], "accounts@acme.example", "{who:?}");
            assert_eq!(c["phone"], "+1 555", "{who:?}");
        }
        let mut orphan = row();
        orphan["account_owner_id"] = Value::Null;
        let nobody = Caller {
            user: None,
            roles: vec!["sales-read".into()],
        };
        assert_eq!(
            customer(&orphan, &nobody)["email"],
            HIDDEN,
            "no owner is nobody's account"
        );
    }

    #[test]
    fn the_pipeline_has_every_stage_and_totals() {
        let rows = vec![
            json!({ "stage": "PROPOSAL", "deal_count": 2, "value_cents": 300_000, "weighted_value_cents": 150_000 }),
            json!({ "stage": "DISCOVERY", "deal_count": 1, "value_cents": 100_000, "weighted_value_cents": 20_000 }),
            json!({ "stage": "CLOSED_WON", "deal_count": 1, "value_cents": 50_000, "weighted_value_cents": 50_000 }),
        ];
        let p = pipeline("2026-Q4", &rows);
        assert_eq!(p["stages"].as_array().map(Vec::len), Some(7));
        assert_eq!(p["stages"][0]["stage"], "PROSPECTING");
        assert_eq!(p["stages"][0]["deal_count"], 0);
        assert_eq!(p["total_deals"], 4);
        assert_eq!(p["open_deals"], 3);
        assert_eq!(p["open_value"], 4000);
        assert_eq!(p["weighted_open_value"], 1700);
        assert_eq!(p["won_value"], 500);
        assert_eq!(p["lost_value"], 0);
    }
}
