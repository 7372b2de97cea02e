//! HR tools (seed 002): employees, the org chart and performance reviews, read with row-level
//! access in the SQL and PII masked by role.
//!
//! | tool | who may call it | rows they see |
//! | --- | --- | --- |
//! | `get_employee` (by id, by name, or without either: the caller) | anyone signed in | themself; a `manager` their whole reporting chain; `hr-read`, `hr-write`, `executive` everyone |
//! | `list_employees` | `hr-read`, `executive`, `manager` | as above (active employees) |
//! | `get_org_chart` | `hr-read`, `executive`, `manager` | as above; a manager's chart starts at themself |
//! | `get_performance_reviews` | `hr-write`, `executive`, `manager` | reviews of the employees they see |
//! | `delete_employee`, `update_salary` | `hr-write`, `executive` | everyone; the change waits for the user's confirmation (`domain::confirm`) |
//!
//! Masking (every answer, whoever the row is): `salary` shows for the employee themself and
//! `hr-write`, `finance-read`, `executive`; `ssn` only for `hr-write` and `executive`; `phone` and
//! `personal_email` for the employee themself and `hr-read`, `hr-write`, `executive`. Others get
//! `*** (Hidden)`. No tool filters or sorts by a masked field.

use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

use super::domain::{self, Access, Code, Reply, HIDDEN, SIGNED_IN};
use serde::{Deserialize, Serialize};

use crate::registry::{self, Annotations, Caller, ToolContext, ToolDef, ToolResult};

const TOOLSET: &str = "hr";

/// Roles that see every employee.
const ALL_EMPLOYEES: &[&str] = &["hr-read", "hr-write", "executive"];

/// The employee columns every HR answer reads (`e` is `hr_employees`, `d` `hr_departments`).
const EMPLOYEE_COLUMNS: &str =
    "e.id, e.first_name, e.last_name, e.email, d.name AS department, e.job_title,
     e.manager_id, e.hire_date, e.salary_cents, e.ssn, e.phone, e.personal_email, e.location,
     e.active, e.status, e.grade, e.employment_type, e.pto_balance, e.created_at, e.updated_at";

fn not_found(id: &str) -> Reply {
    Reply::failure(
        Code::EmployeeNotFound,
        format!("Employee {id} not found among the employees you may see."),
        "Use list_employees to find valid employee IDs (it lists only the employees you may see).",
    )
}

/// An employee row as the caller may see it.
fn employee(row: &Value, caller: &Caller) -> Value {
    let is_self = caller.user.as_deref() == row["id"].as_str();
    let shown =
        |roles: &[&str], with_self: bool| (with_self && is_self) || domain::holds(caller, roles);
    let masked = |v: Value, visible: bool| if visible { v } else { json!(HIDDEN) };
    json!({
        "employee_id": row["id"],
        "first_name": row["first_name"],
        "last_name": row["last_name"],
        "email": row["email"],
        "department": row["department"],
        "job_title": row["job_title"],
        "manager_id": row["manager_id"],
        "hire_date": row["hire_date"],
        "salary": masked(domain::dollars(&row["salary_cents"]), shown(&["hr-write", "finance-read", "executive"], true)),
        "ssn": masked(row["ssn"].clone(), shown(&["hr-write", "executive"], false)),
        "phone": masked(row["phone"].clone(), shown(ALL_EMPLOYEES, true)),
        "personal_email": masked(row["personal_email"].clone(), shown(ALL_EMPLOYEES, true)),
        "location": row["location"],
        "active": row["active"].as_i64() == Some(1),
        "status": row["status"],
        "grade": row["grade"],
        "employment_type": row["employment_type"],
        "pto_balance": row["pto_balance"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    })
}

/// How many employees an ambiguous name lists as candidates.
const CANDIDATES: u64 = 10;

/// The employee a `get_employee` call names: `employee_id`, else the one employee whose full name
/// is `name` (any case) or, when no name is exactly that, the one whose name contains it; neither:
/// the caller themself ("my PTO"). Only employees the caller may see are candidates, so a name
/// tells nothing about anyone else.
async fn named_employee(
    ctx: &dyn ToolContext,
    access: &Access,
    args: GetEmployee,
) -> std::result::Result<String, Reply> {
    if let Some(id) = args.employee_id {
        return Ok(id);
    }
    let Some(name) = args.name else {
        return Ok(access.user.clone());
    };
    let mut params = access.params();
    params.extend([
        json!(name.trim()),
        json!(domain::like_literal(name.trim())),
        json!(CANDIDATES + 1),
    ]);
    let rows = ctx
        .query(
            &format!(
                "{} SELECT e.id, e.first_name, e.last_name, e.email, d.name AS department, e.job_title,
                   lower(e.first_name || ' ' || e.last_name) = lower(?4) AS exact
                 FROM hr_employees e JOIN hr_departments d ON d.id = e.department_id
                 WHERE {} AND (e.first_name || ' ' || e.last_name) LIKE '%' || ?5 || '%' ESCAPE '\\'
                 ORDER BY exact DESC, e.active DESC, e.last_name, e.first_name, e.id LIMIT ?6",
                Access::VISIBLE_EMPLOYEES,
                Access::sees("e.id")
            ),
            params,
        )
        .await?;
    let exact: Vec<&Value> = rows
        .iter()
        .filter(|r| r["exact"].as_i64() == Some(1))
        .collect();
    let matches: Vec<&Value> = if exact.is_empty() {
        rows.iter().collect()
    } else {
        exact
    };
    match matches.as_slice() {
        [] => Err(Reply::failure(
            Code::EmployeeNotFound,
            format!("No employee you may see is named {name:?}."),
            "Check the spelling, or give part of the name (a last name alone works).",
        )),
        [one] => Ok(one["id"].as_str().unwrap_or_default().to_string()),
        many => {
            let shown = &many[..many.len().min(CANDIDATES as usize)];
            let candidates: Vec<Value> = shown
                .iter()
                .map(|r| {
                    json!({ "employee_id": r["id"], "name": full_name(r), "email": r["email"],
                            "job_title": r["job_title"], "department": r["department"] })
                })
                .collect();
            let listed: Vec<String> = shown
                .iter()
                .map(|r| {
                    format!(
                        "{} ({}, {})",
                        full_name(r),
                        r["job_title"].as_str().unwrap_or(""),
                        r["department"].as_str().unwrap_or("")
                    )
                })
                .collect();
            let more = if many.len() > shown.len() {
                " and more"
            } else {
                ""
            };
            Err(Reply::failure(
                Code::InvalidInput,
                format!("{name:?} matches several employees: {}{more}.", listed.join("; ")),
                "Ask the user which one they mean, then call get_employee again with that candidate's employee_id.",
            )
            .with_details(json!({ "candidates": candidates })))
        }
    }
}

/// `get_employee`'s arguments (schema/hr/get_employee.input.json).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GetEmployee {
    employee_id: Option<String>,
    name: Option<String>,
}

fn get_employee(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let args: GetEmployee =
            registry::typed("get_employee", args).map_err(|e| Reply::from_error(&e))?;
        let caller = ctx.caller();
        let access = Access::of(&caller, ALL_EMPLOYEES);
        let id = named_employee(ctx, &access, args).await?;
        let mut params = access.params();
        params.push(json!(id));
        let rows = ctx
                .query(
                    &format!(
                        "{} SELECT {EMPLOYEE_COLUMNS} FROM hr_employees e JOIN hr_departments d ON d.id = e.department_id
                         WHERE e.id = ?4 AND {}",
                        Access::VISIBLE_EMPLOYEES,
                        Access::sees("e.id")
                    ),
                    params,
                )
                .await?;
        let row = rows.first().ok_or_else(|| not_found(&id))?;
        let data = employee(row, &caller);
        Ok(Reply::success(
            format!(
                "Employee {} {} ({}, {}).",
                row["first_name"].as_str().unwrap_or(""),
                row["last_name"].as_str().unwrap_or(""),
                row["job_title"].as_str().unwrap_or(""),
                row["department"].as_str().unwrap_or("")
            ),
            data,
        ))
    }))
}

/// `list_employees`' arguments (schema/hr/list_employees.input.json).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListEmployees {
    department: Option<String>,
    name: Option<String>,
    limit: Option<u64>,
    cursor: Option<String>,
}

fn list_employees(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let args: ListEmployees =
            registry::typed("list_employees", args).map_err(|e| Reply::from_error(&e))?;
        let caller = ctx.caller();
        let access = Access::of(&caller, ALL_EMPLOYEES);
        let limit = args
            .limit
            .unwrap_or(domain::MAX_LIMIT)
            .clamp(1, domain::MAX_LIMIT);
        let filters = json!({ "department": args.department, "name": args.name });
        let after = domain::resume_after(ctx, "list_employees", &filters, args.cursor.as_deref())?;
        let name = args.name.as_deref().map(|n| domain::like_literal(n.trim()));
        let dept = match args.department.as_deref() {
            Some(d) => Some(domain::department(ctx, d).await?),
            None => None,
        };
        let after = after.unwrap_or(Value::Null);
        let mut params = access.params();
        params.extend([
            json!(dept),
            after[0].clone(),
            after[1].clone(),
            after[2].clone(),
            json!(limit + 1),
            json!(name),
        ]);
        let rows = ctx
                .query(
                    &format!(
                        "{} SELECT {EMPLOYEE_COLUMNS} FROM hr_employees e JOIN hr_departments d ON d.id = e.department_id
                         WHERE {} AND e.active = 1
                           AND (?4 IS NULL OR e.department_id = ?4)
                           AND (?5 IS NULL OR (e.last_name, e.first_name, e.id) > (?5, ?6, ?7))
                           AND (?9 IS NULL OR (e.first_name || ' ' || e.last_name) LIKE '%' || ?9 || '%' ESCAPE '\\')
                         ORDER BY e.last_name, e.first_name, e.id LIMIT ?8",
                        Access::VISIBLE_EMPLOYEES,
                        Access::sees("e.id")
                    ),
                    params,
                )
                .await?;
        let (rows, page) = domain::page_of(
            ctx,
            "list_employees",
            &filters,
            rows,
            limit,
            |r| json!([r["last_name"], r["first_name"], r["id"]]),
            ("To see more employees, call list_employees again with metadata.nextCursor as cursor.", "department or part of a name"),
        )?;
        let data: Vec<Value> = rows.iter().map(|r| employee(r, &caller)).collect();
        Ok(Reply::page(
            format!("{} employees.", data.len()),
            data,
            page,
        ))
    }))
}

fn get_org_chart(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let caller = ctx.caller();
        let access = Access::of(&caller, ALL_EMPLOYEES);
        let depth = args.get("depth").and_then(Value::as_u64).unwrap_or(3);
        let root = match args["root_employee_id"].as_str() {
            Some(r) => r.to_string(),
            None if access.all => {
                let top = ctx
                    .query(
                        "SELECT id FROM hr_employees WHERE manager_id IS NULL ORDER BY id LIMIT 1",
                        vec![],
                    )
                    .await?;
                top.first()
                    .and_then(|r| r["id"].as_str())
                    .unwrap_or_default()
                    .to_string()
            }
            None => access.user.clone(),
        };
        let mut params = access.params();
        params.extend([json!(root), json!(depth)]);
        let rows = ctx
                .query(
                    &format!(
                        "{}, tree(id, level) AS (
                           SELECT id, 0 FROM hr_employees WHERE id = ?4 AND {}
                           UNION ALL
                           SELECT e.id, t.level + 1 FROM hr_employees e JOIN tree t ON e.manager_id = t.id
                           WHERE t.level < ?5 AND e.active = 1
                         )
                         SELECT e.id, e.first_name, e.last_name, e.job_title, d.name AS department, e.manager_id, t.level,
                                (SELECT COUNT(*) FROM hr_employees r WHERE r.manager_id = e.id AND r.active = 1) AS direct_reports
                         FROM tree t JOIN hr_employees e ON e.id = t.id JOIN hr_departments d ON d.id = e.department_id
                         ORDER BY t.level, e.last_name, e.first_name, e.id",
                        Access::VISIBLE_EMPLOYEES,
                        Access::sees("id")
                    ),
                    params,
                )
                .await?;
        if rows.is_empty() {
            return Err(not_found(&root));
        }
        let count = rows.len();
        let tree = org_tree(&rows, &root);
        Ok(Reply::success(
            format!(
                "Org chart under {} {}: {count} people within {depth} levels.",
                rows[0]["first_name"].as_str().unwrap_or(""),
                rows[0]["last_name"].as_str().unwrap_or("")
            ),
            tree,
        ))
    }))
}

/// Nests rows (each with `id` and `manager_id`) into `OrgNode`s under `root`.
fn org_tree(rows: &[Value], root: &str) -> Value {
    let mut children: Map<String, Value> = Map::new();
    for r in rows {
        if let Some(m) = r["manager_id"].as_str() {
            if let Value::Array(list) = children
                .entry(m.to_string())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                list.push(r.clone());
            }
        }
    }
    fn node(row: &Value, children: &Map<String, Value>) -> Value {
        let id = row["id"].as_str().unwrap_or_default();
        let reports: Vec<Value> = children
            .get(id)
            .and_then(Value::as_array)
            .map(|list| list.iter().map(|c| node(c, children)).collect())
            .unwrap_or_default();
        json!({
            "employee_id": id,
            "name": format!("{} {}", row["first_name"].as_str().unwrap_or(""), row["last_name"].as_str().unwrap_or("")),
            "job_title": row["job_title"],
            "department": row["department"],
            "direct_reports_count": row["direct_reports"],
            "reports": reports,
        })
    }
    rows.iter()
        .find(|r| r["id"] == root)
        .map(|r| node(r, &children))
        .unwrap_or(Value::Null)
}

fn get_performance_reviews(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let caller = ctx.caller();
        let access = Access::of(&caller, &["hr-write", "executive"]);
        let limit = domain::limit(&args);
        let filters =
            json!({ "employee_id": args.get("employee_id"), "status": args.get("status") });
        let after = domain::resume_after(
            ctx,
            "get_performance_reviews",
            &filters,
            args["cursor"].as_str(),
        )?
        .unwrap_or(Value::Null);
        let employee_id = args["employee_id"].as_str();
        let statuses: Vec<&str> = match args["status"].as_str() {
            Some("due") => vec!["scheduled", "in_progress"],
            Some(s) => vec![s],
            None => vec!["scheduled", "in_progress", "completed"],
        };
        let mut params = access.params();
        params.extend([
            json!(employee_id),
            json!(serde_json::to_string(&statuses).unwrap_or_default()),
            after[0].clone(),
            after[1].clone(),
            json!(limit + 1),
        ]);
        let rows = ctx
                .query(
                    &format!(
                        "{} SELECT r.id, r.employee_id, e.first_name || ' ' || e.last_name AS employee_name, r.reviewer_id,
                                r.period, r.status, r.due_date, r.completed_date, r.overall_rating, r.goals,
                                r.strengths, r.improvements, r.comments
                         FROM hr_performance_reviews r JOIN hr_employees e ON e.id = r.employee_id
                         WHERE {}
                           AND (?4 IS NULL OR r.employee_id = ?4)
                           AND r.status IN (SELECT value FROM json_each(?5))
                           AND (?6 IS NULL OR (r.due_date, r.id) > (?6, ?7))
                         ORDER BY r.due_date, r.id LIMIT ?8",
                        Access::VISIBLE_EMPLOYEES,
                        Access::sees("r.employee_id")
                    ),
                    params,
                )
                .await?;
        if rows.is_empty() && after.is_null() {
            if let Some(id) = employee_id {
                let mut p = access.params();
                p.push(json!(id));
                let seen = ctx
                    .query(
                        &format!(
                            "{} SELECT 1 AS ok FROM hr_employees WHERE id = ?4 AND {}",
                            Access::VISIBLE_EMPLOYEES,
                            Access::sees("id")
                        ),
                        p,
                    )
                    .await?;
                if seen.is_empty() {
                    return Err(not_found(id));
                }
            }
        }
        let (rows, page) = domain::page_of(
                ctx,
                "get_performance_reviews",
                &filters,
                rows,
                limit,
                |r| json!([r["due_date"], r["id"]]),
                ("To see more reviews, call get_performance_reviews again with metadata.nextCursor as cursor.", "employee_id or status"),
            )?;
        let data: Vec<Value> = rows
            .iter()
            .map(|r| {
                let mut v = r.clone();
                v["review_id"] = r["id"].clone();
                v["goals"] = r["goals"]
                    .as_str()
                    .and_then(|g| serde_json::from_str(g).ok())
                    .unwrap_or_else(|| json!([]));
                if let Some(o) = v.as_object_mut() {
                    o.remove("id");
                }
                v
            })
            .collect();
        Ok(Reply::page(
            format!("{} performance reviews.", data.len()),
            data,
            page,
        ))
    }))
}

/// Who may change employees.
const WRITERS: &[&str] = &["hr-write", "executive"];

/// The employee a write names, as the caller may see them, or the not-found answer.
async fn target(ctx: &dyn ToolContext, id: &str) -> std::result::Result<Value, Reply> {
    let access = Access::of(&ctx.caller(), WRITERS);
    let mut params = access.params();
    params.push(json!(id));
    let rows = ctx
        .query(
            &format!(
                "{} SELECT {EMPLOYEE_COLUMNS},
                   (SELECT COUNT(*) FROM hr_employees r WHERE r.manager_id = e.id) AS reports
                 FROM hr_employees e JOIN hr_departments d ON d.id = e.department_id
                 WHERE e.id = ?4 AND {}",
                Access::VISIBLE_EMPLOYEES,
                Access::sees("e.id")
            ),
            params,
        )
        .await?;
    rows.into_iter().next().ok_or_else(|| not_found(id))
}

fn full_name(row: &Value) -> String {
    format!(
        "{} {}",
        row["first_name"].as_str().unwrap_or(""),
        row["last_name"].as_str().unwrap_or("")
    )
}

fn delete_employee(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let id = args["employee_id"].as_str().unwrap_or_default();
        let row = target(ctx, id).await?;
        let reports = row["reports"].as_i64().unwrap_or(0);
        if reports > 0 {
            return Err(Reply::failure(
                Code::ValidationError,
                format!(
                    "{} has {reports} direct reports, so the record cannot be deleted.",
                    full_name(&row)
                ),
                "Reassign their reports to another manager first, then ask again.",
            ));
        }
        let name = full_name(&row);
        let email = row["email"].as_str().unwrap_or("");
        let dept = row["department"].as_str().unwrap_or("");
        let message = format!(
            "Delete employee {name} ({email})? This permanently deletes the employee record, with their reviews and expense reports, and cannot be undone.\n\nDepartment: {dept}\nEmployee ID: {id}"
        );
        let details = json!({
            "employeeId": id, "employeeName": name, "employeeEmail": email, "department": dept,
            "reason": args["reason"].as_str().unwrap_or("No reason provided"),
        });
        Ok(domain::confirm::request(ctx, "delete_employee", TOOLSET, args, message, details).await)
    }))
}

fn update_salary(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    domain::answer(Box::pin(async move {
        let id = args["employee_id"].as_str().unwrap_or_default();
        let new_cents = (args["new_salary"].as_f64().unwrap_or(0.0) * 100.0).round() as i64;
        if let Some(date) = args["effective_date"].as_str() {
            let today = crate::clock::today();
            if date > today.as_str() {
                return Err(Reply::failure(
                    Code::ValidationError,
                    format!("effective_date {date} is in the future; salary changes apply when they are confirmed."),
                    "Ask again on or after the effective date, or leave effective_date out to apply it now.",
                ));
            }
        }
        let row = target(ctx, id).await?;
        let name = full_name(&row);
        let old_cents = row["salary_cents"].as_i64().unwrap_or(0);
        let message = format!(
            "Change the salary of {name} from {} to {} (effective {})?",
            domain::money(old_cents),
            domain::money(new_cents),
            args["effective_date"].as_str().unwrap_or("on confirmation"),
        );
        let details = json!({
            "employeeId": id, "employeeName": name,
            "currentSalary": domain::dollars(&json!(old_cents)), "newSalary": domain::dollars(&json!(new_cents)),
            "effectiveDate": args["effective_date"], "reason": args["reason"].as_str().unwrap_or("No reason provided"),
        });
        Ok(domain::confirm::request(ctx, "update_salary", TOOLSET, args, message, details).await)
    }))
}

/// The answer to a confirmed write whose employee is gone.
fn gone(id: &str) -> Reply {
    Reply::failure(
        Code::EmployeeNotFound,
        format!("Employee {id} no longer exists; nothing was changed."),
        "Use list_employees to check the current employees.",
    )
}

/// Deletes the confirmed employee, unless they gained direct reports meanwhile.
fn employee_deleted<'a>(
    ctx: &'a dyn ToolContext,
    a: &'a Value,
    data: &'a Value,
) -> LocalBoxFuture<'a, Value> {
    domain::carried_out(Box::pin(async move {
        let id = a["employee_id"].as_str().unwrap_or_default();
        let rows = ctx
            .query(
                "DELETE FROM hr_employees WHERE id = ?1 RETURNING id",
                vec![json!(id)],
            )
            .await
            .map_err(|e| {
                if e.to_string().contains("FOREIGN KEY") {
                    Reply::failure(
                        Code::ValidationError,
                        "The employee now has direct reports, so the record was not deleted.",
                        "Reassign their reports first, then ask again.",
                    )
                } else {
                    domain::db(e)
                }
            })?;
        if rows.is_empty() {
            return Err(gone(id));
        }
        let name = data["employeeName"].as_str().unwrap_or(id);
        Ok(Reply::success(
            format!("{name} has been permanently deleted."),
            json!({ "deleted": true, "employeeId": id, "employeeName": data["employeeName"],
                          "message": format!("Employee {name} has been permanently deleted.") }),
        ))
    }))
}

/// Sets the confirmed salary, unless the employee is gone.
fn salary_updated<'a>(
    ctx: &'a dyn ToolContext,
    a: &'a Value,
    data: &'a Value,
) -> LocalBoxFuture<'a, Value> {
    domain::carried_out(Box::pin(async move {
        let id = a["employee_id"].as_str().unwrap_or_default();
        let cents = (a["new_salary"].as_f64().unwrap_or(0.0) * 100.0).round() as i64;
        let rows = ctx
            .query(
                "UPDATE hr_employees SET salary_cents = ?2, updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?1 RETURNING salary_cents",
                vec![json!(id), json!(cents)],
            )
            .await?;
        if rows.is_empty() {
            return Err(gone(id));
        }
        let text = format!(
            "The salary of {} is now {}.",
            data["employeeName"].as_str().unwrap_or(id),
            domain::money(cents)
        );
        Ok(Reply::done(
            text,
            json!({ "updated": true, "employeeId": id, "employeeName": data["employeeName"],
                    "newSalary": domain::dollars(&json!(cents)) }),
        ))
    }))
}

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        toolset: TOOLSET,
        name: "get_employee",
        title: "Get employee",
        description: "One employee's details by id, by name (full or partial; several matches answer with candidates), or, with neither, the caller's own record (PTO balance, grade, salary). Everyone may read their own record; managers their reporting chain; hr-read, hr-write and executive everyone. Salary, SSN and contact details are masked unless the caller's role allows them.",
        input_schema: include_str!("../../../schema/hr/get_employee.input.json"),
        roles: &[SIGNED_IN],
        handler: get_employee,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "list_employees",
        title: "List employees",
        description: "Active employees the caller may see (managers: their reporting chain), optionally of one department or with part of a name, sorted by last name; up to 50 per page with a cursor for the next page.",
        input_schema: include_str!("../../../schema/hr/list_employees.input.json"),
        roles: &["hr-read", "executive", "manager"],
        handler: list_employees,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "get_org_chart",
        title: "Get org chart",
        description: "The reporting hierarchy under an employee (default: the CEO for hr-read and executive, the caller for managers), nested to a depth (default 3).",
        input_schema: include_str!("../../../schema/hr/get_org_chart.input.json"),
        roles: &["hr-read", "executive", "manager"],
        handler: get_org_chart,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "get_performance_reviews",
        title: "Get performance reviews",
        description: "Performance reviews of one employee, or of everyone the caller may see (managers: their reporting chain); status 'due' gives the scheduled and in-progress ones. Sorted by due date, 50 per page.",
        input_schema: include_str!("../../../schema/hr/get_performance_reviews.input.json"),
        roles: &["hr-write", "executive", "manager"],
        handler: get_performance_reviews,
        ..domain::READ
    },
    ToolDef {
        toolset: TOOLSET,
        name: "delete_employee",
        title: "Delete employee",
        description: "Ask to delete an employee record (with their reviews and expense reports). Nothing changes until the user confirms: the answer is pending_confirmation with a confirmationId, decided with POST /api/confirm/<id> (or in a form when the client supports elicitation).",
        annotations: Annotations { read_only: false, destructive: true, idempotent: false, open_world: false },
        input_schema: include_str!("../../../schema/hr/delete_employee.input.json"),
        roles: WRITERS,
        handler: delete_employee,
        confirmed: Some(employee_deleted),
        ..domain::WRITE
    },
    ToolDef {
        toolset: TOOLSET,
        name: "update_salary",
        title: "Update salary",
        description: "Ask to change an employee's annual salary. Nothing changes until the user confirms (pending_confirmation, then POST /api/confirm/<id> or an elicitation form). Future effective dates are refused: changes apply when confirmed.",
        annotations: Annotations { read_only: false, destructive: true, idempotent: true, open_world: false },
        input_schema: include_str!("../../../schema/hr/update_salary.input.json"),
        roles: WRITERS,
        handler: update_salary,
        confirmed: Some(salary_updated),
        ..domain::WRITE
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::user as caller;

    #[test]
    fn the_args_structs_are_the_schemas_properties() {
        registry::assert_args_match::<GetEmployee>(include_str!(
            "../../../schema/hr/get_employee.input.json"
        ));
        registry::assert_args_match::<ListEmployees>(include_str!(
            "../../../schema/hr/list_employees.input.json"
        ));
    }

    fn row() -> Value {
        json!({ "id": "E7", "first_name": "Sarah", "last_name": "Kim", "salary_cents": 11_200_000, "ssn": "123-45-6789",
                "phone": "+1 555", "personal_email": "s@home.example", "active": 1 })
    }

    #[test]
    fn pii_is_masked_by_role_and_self() {
        let peer = employee(&row(), &caller("E8", &["manager"]));
        for f in ["salary", "ssn", "phone", "personal_email"] {
            assert_eq!(peer[f], HIDDEN, "{f}");
        }
        let me = employee(&row(), &caller("E7", &[]));
        assert_eq!(me["salary"], 112_000);
        assert_eq!(me["ssn"], HIDDEN, "SSN only for hr-write and executive");
        assert_eq!(me["phone"], "+1 555");
        let hr_read = employee(&row(), &caller("E1", &["hr-read"]));
        assert_eq!(hr_read["salary"], HIDDEN);
        assert_eq!(hr_read["phone"], "+1 555");
        let finance = employee(&row(), &caller("E1", &["finance-read"]));
        assert_eq!(finance["salary"], 112_000);
        assert_eq!(finance["ssn"], HIDDEN);
        let hr_write = employee(&row(), &caller("E1", &["hr-write"]));
        assert_eq!(hr_write["ssn"], "123-45-6789");
        assert_eq!(hr_write["active"], true);
    }

    #[test]
    fn org_rows_nest_under_the_root() {
        let rows = vec![
            json!({ "id": "A", "first_name": "A", "last_name": "One", "manager_id": null, "direct_reports": 2 }),
            json!({ "id": "B", "first_name": "B", "last_name": "Two", "manager_id": "A", "direct_reports": 1 }),
            json!({ "id": "C", "first_name": "C", "last_name": "Three", "manager_id": "A", "direct_reports": 0 }),
            json!({ "id": "D", "first_name": "D", "last_name": "Four", "manager_id": "B", "direct_reports": 0 }),
        ];
        let t = org_tree(&rows, "A");
        assert_eq!(t["name"], "A One");
        assert_eq!(t["reports"].as_array().unwrap().len(), 2);
        assert_eq!(t["reports"][0]["reports"][0]["employee_id"], "D");
    }
}
