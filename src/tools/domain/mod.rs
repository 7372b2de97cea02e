//! What the domain toolsets (`hr`, `finance`, `sales`, `support`; seed 002) share: the response
//! union, access rules by role, PII masking, signed pagination cursors, and the read cache's
//! policy and data generation.
//!
//! Access is decided twice, both times from the verified token only: a tool's `roles` decide
//! whether the caller sees it at all (registry), and the SQL of each read restricts rows to those
//! the caller may see (row-level access: `self`, the `manager`'s reporting chain, or everything
//! for the domain's read roles). Nothing is filtered after the query.

pub mod confirm;
pub mod cursor;
pub mod response;

use serde_json::{json, Value};

use crate::clock;
use crate::registry::{CachePolicy, Caller, Dialect, ToolContext, ToolDef, ToolOutput, ToolResult};
pub use response::{Code, Page, Reply};

/// The tool-level marker for "any caller with a verified token" (`Caller::has_any`).
pub const SIGNED_IN: &str = "*";

/// The value shown instead of a masked field.
pub const HIDDEN: &str = "*** (Hidden)";

/// Largest page of a list tool (seed: Article III.2).
pub const MAX_LIMIT: u64 = 50;

/// A caller's access to one domain, as the SQL of its tools needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The caller's user id ("" for anonymous, who never reach domain tools).
    pub user: String,
    /// Sees every row of the domain.
    pub all: bool,
    /// Sees the rows of their whole reporting chain.
    pub manager: bool,
}

impl Access {
    /// The access `caller` has when `all_roles` grant every row.
    pub fn of(caller: &Caller, all_roles: &[&str]) -> Access {
        Access {
            user: caller.user.clone().unwrap_or_default(),
            all: caller.roles.iter().any(|r| all_roles.contains(&r.as_str())),
            manager: caller.roles.iter().any(|r| r == "manager"),
        }
    }

    /// The SQL of the employees a caller without `all` sees, as a recursive CTE named
    /// `visible(id)` (themself and their reporting chain); use it through [`Access::sees`]. Its
    /// parameters are `?1` (user), `?2` (all: 0/1) and `?3` (manager: 0/1).
    pub const VISIBLE_EMPLOYEES: &'static str = "WITH RECURSIVE chain(id) AS (
           SELECT id FROM hr_employees WHERE manager_id = ?1 AND ?3 = 1
           UNION ALL
           SELECT e.id FROM hr_employees e JOIN chain c ON e.manager_id = c.id
         ),
         visible(id) AS (SELECT ?1 UNION SELECT id FROM chain)";

    /// The condition that employee column `col` is one the caller sees: everyone with `?2`, else
    /// the caller and their chain. `?2` comes first so that SQLite never builds the chain for a
    /// caller who sees everyone.
    pub fn sees(col: &str) -> String {
        format!("(?2 = 1 OR {col} IN (SELECT id FROM visible))")
    }

    /// The parameters `?1`–`?3` of [`Access::VISIBLE_EMPLOYEES`].
    pub fn params(&self) -> Vec<Value> {
        vec![
            json!(self.user),
            json!(i64::from(self.all)),
            json!(i64::from(self.manager)),
        ]
    }
}

/// Whether the caller holds one of `roles`.
pub fn holds(caller: &Caller, roles: &[&str]) -> bool {
    caller.roles.iter().any(|r| roles.contains(&r.as_str()))
}

/// The key cursors are signed with: `CURSOR_SECRET`, else a key derived from `JWT_SECRET` for
/// cursors alone, so it never equals the key that signs tokens or request states.
fn cursor_key(ctx: &dyn ToolContext) -> Option<Vec<u8>> {
    let p = ctx.platform();
    p.setting("CURSOR_SECRET")
        .map(String::into_bytes)
        .or_else(|| {
            p.setting("JWT_SECRET")
                .map(|s| crate::mcp::request_state::derive_key(s.as_bytes(), "cursor"))
        })
}

/// The keyset position a list tool continues after: `None` for the first page; a refused cursor
/// is the `INVALID_INPUT` answer.
pub fn resume_after(
    ctx: &dyn ToolContext,
    tool: &str,
    filters: &Value,
    cursor: Option<&str>,
) -> Result<Option<Value>, Reply> {
    let Some(cursor) = cursor else {
        return Ok(None);
    };
    with_binding(ctx, tool, filters, |key, binding| {
        cursor::open(key, binding, cursor, clock::now_ms())
    })?
    .map(Some)
    .map_err(|why| {
        Reply::failure(
            Code::InvalidInput,
            why,
            "Call the tool again without a cursor.",
        )
    })
}

/// The cursor of the page after `last` (its sort key values).
pub fn next_cursor(
    ctx: &dyn ToolContext,
    tool: &str,
    filters: &Value,
    last: &Value,
) -> Result<String, Reply> {
    with_binding(ctx, tool, filters, |key, binding| {
        cursor::issue(key, binding, last, clock::now_ms())
    })
}

/// Runs `f` with the cursor key and the binding of the caller's cursors for `tool` and `filters`.
fn with_binding<T>(
    ctx: &dyn ToolContext,
    tool: &str,
    filters: &Value,
    f: impl FnOnce(&[u8], &cursor::Binding<'_>) -> T,
) -> Result<T, Reply> {
    let key = cursor_key(ctx).ok_or_else(no_cursor_key)?;
    let caller = ctx.caller();
    let binding = cursor::Binding {
        tool,
        user: caller.user.as_deref().unwrap_or(""),
        roles: &caller.roles,
        filters,
    };
    Ok(f(&key, &binding))
}

fn no_cursor_key() -> Reply {
    Reply::failure(
        Code::OperationFailed,
        "This server cannot page results: no CURSOR_SECRET (or JWT_SECRET) is configured.",
        "Ask the operator to set the CURSOR_SECRET secret; meanwhile narrow the query with filters.",
    )
}

/// Builds the page answer of a keyset list: `rows` holds up to `limit + 1` rows (the extra one
/// only tells that there is more); `key` gives a row's sort key values for the next cursor;
/// `hint` says how to get the next page and `refine` names the filters that narrow the list (the
/// truncation warning's).
pub fn page_of(
    ctx: &dyn ToolContext,
    tool: &str,
    filters: &Value,
    mut rows: Vec<Value>,
    limit: u64,
    key: impl Fn(&Value) -> Value,
    (hint, refine): (&'static str, &'static str),
) -> Result<(Vec<Value>, Page), Reply> {
    let more = rows.len() as u64 > limit;
    rows.truncate(limit as usize);
    let next_cursor = match (more, rows.last()) {
        (true, Some(last)) => Some(next_cursor(ctx, tool, filters, &key(last))?),
        _ => None,
    };
    let page = Page {
        returned: rows.len(),
        hint: next_cursor.as_ref().map(|_| hint),
        next_cursor,
        refine,
    };
    Ok((rows, page))
}

/// The department a filter names (its code or name, any case), or the `INVALID_INPUT` answer
/// listing the departments.
pub async fn department(ctx: &dyn ToolContext, given: &str) -> Result<String, Reply> {
    let rows = ctx
        .query("SELECT id, name FROM hr_departments ORDER BY name", vec![])
        .await?;
    rows.iter()
        .find(|r| {
            r["id"]
                .as_str()
                .is_some_and(|c| c.eq_ignore_ascii_case(given))
                || r["name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(given))
        })
        .and_then(|r| r["id"].as_str().map(str::to_string))
        .ok_or_else(|| {
            let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
            Reply::failure(
                Code::InvalidInput,
                format!("There is no department {given:?}."),
                format!("Use one of: {}.", names.join(", ")),
            )
        })
}

/// The user's text as a literal `LIKE` operand: `\`, `%` and `_` are prefixed with `\` so they
/// match themselves. Bind the result and write `LIKE '%' || ?n || '%' ESCAPE '\'`; the text
/// itself never becomes SQL.
pub fn like_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The page size asked for, clamped to 1..=50.
pub fn limit(args: &Value) -> u64 {
    args.get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(MAX_LIMIT)
        .clamp(1, MAX_LIMIT)
}

/// Integer cents as a dollar amount.
pub fn dollars(cents: &Value) -> Value {
    match cents.as_i64() {
        Some(c) => crate::engine::expr::num(c as f64 / 100.0),
        None => Value::Null,
    }
}

/// Runs a domain tool's body, whose early returns are answers too (`Err(reply)`).
pub fn answer<'a>(
    body: futures::future::LocalBoxFuture<'a, Result<Reply, Reply>>,
) -> futures::future::LocalBoxFuture<'a, ToolResult> {
    Box::pin(async move { Ok(body.await.unwrap_or_else(|r| r).into_output()) })
}

/// Runs a confirmed write's body ([`crate::registry::Confirmed`]), whose early returns are
/// answers too; answers with the decision's JSON.
pub fn carried_out<'a>(
    body: futures::future::LocalBoxFuture<'a, Result<Reply, Reply>>,
) -> futures::future::LocalBoxFuture<'a, Value> {
    Box::pin(async move { body.await.unwrap_or_else(|r| r).to_json() })
}

/// How the executor caches every domain read (`registry::cache`): per caller, since rows and
/// masking depend on the caller's user and roles; five minutes, or until a confirmed write bumps
/// the data generation ([`invalidate`]).
pub const READ_CACHE: Option<CachePolicy> = Some(CachePolicy {
    ttl_secs: crate::registry::cache::DEFAULT_TTL_SECS,
    per_caller: true,
    generation: Some(generation),
});

/// The generation of the domain data: bumped by every confirmed write.
fn generation(
    ctx: &dyn ToolContext,
) -> futures::future::LocalBoxFuture<'_, crate::error::Result<i64>> {
    Box::pin(async move {
        Ok(ctx
            .query(
                "SELECT generation FROM domain_generation WHERE id = 1",
                vec![],
            )
            .await?
            .first()
            .and_then(|r| r["generation"].as_i64())
            .unwrap_or(0))
    })
}

/// Makes every cached domain read unreachable (after a write).
pub async fn invalidate(ctx: &dyn ToolContext) -> crate::error::Result<()> {
    ctx.query(
        "UPDATE domain_generation SET generation = generation + 1 WHERE id = 1",
        vec![],
    )
    .await
    .map(drop)
}

/// A storage fault as the answer the caller gets; the details go to the logs only.
pub fn db(e: crate::error::Error) -> Reply {
    crate::log::error!("{}", json!({ "domain_error": e.to_string() }));
    Reply::from_error(&e.into())
}

/// Why a confirmed write that matched no row changed nothing: `gone` when row `id` of `table` no
/// longer exists, else `moved` (its state changed meanwhile).
pub async fn unchanged(
    ctx: &dyn ToolContext,
    table: &str,
    id: &str,
    gone: Reply,
    moved: Reply,
) -> Reply {
    let sql = format!("SELECT 1 AS ok FROM {table} WHERE id = ?1");
    match ctx.query(&sql, vec![json!(id)]).await {
        Ok(rows) if rows.is_empty() => gone,
        Ok(_) => moved,
        Err(e) => db(e),
    }
}

/// A storage fault ends a domain tool's body with `?` as the answer [`db`] gives.
impl From<crate::error::Error> for Reply {
    fn from(e: crate::error::Error) -> Reply {
        db(e)
    }
}

fn get_confirmation(
    ctx: &dyn ToolContext,
    args: Value,
) -> futures::future::LocalBoxFuture<'_, ToolResult> {
    answer(Box::pin(async move {
        let id = args["confirmation_id"].as_str().unwrap_or_default();
        Ok(confirm::state(ctx, id).await)
    }))
}

/// What every domain tool's declaration shares (`..domain::TOOL`): seed 002's response schema,
/// and refusals made outside its handler answered in that union too ([`UNION`]).
pub const TOOL: ToolDef = ToolDef {
    output_schema: Some(include_str!("../../../schema/domain/response.output.json")),
    dialect: Some(&UNION),
    ..ToolDef::DEFAULTS
};

/// What a domain read's declaration shares (`..domain::READ`): it changes nothing, and its answers
/// are cached ([`READ_CACHE`]).
pub const READ: ToolDef = ToolDef {
    annotations: crate::registry::Annotations::READ_ONLY,
    cache: READ_CACHE,
    ..TOOL
};

/// What a domain write's declaration shares (`..domain::WRITE`, beside its own
/// `confirmed`): a call asks the user to confirm the change ([`confirm`]) and may wait for their
/// answer in a form, so it may take long.
pub const WRITE: ToolDef = ToolDef {
    timeout_ms: 150_000,
    ..TOOL
};

/// The tools every domain shares.
pub static TOOLS: &[ToolDef] = &[ToolDef {
    toolset: "domain",
    name: "get_confirmation",
    title: "Get confirmation",
    description: "Whether a change you asked for (a pending_confirmation answer) was approved and made, denied, failed or expired, or is still waiting (with the time left and the approveUrl to send the user to). Only the user who asked sees it.",
    annotations: crate::registry::Annotations::READ_ONLY,
    input_schema: include_str!("../../../schema/domain/get_confirmation.input.json"),
    timeout_ms: 10_000,
    roles: &[SIGNED_IN],
    handler: get_confirmation,
    ..TOOL
}];

/// Seed 002's union as the dialect of every error a domain tool's call ends in ([`refusal`]), and
/// of the server's answer to a caller whose roles lack the tool ([`forbidden`]).
pub static UNION: Dialect = Dialect {
    render: refusal,
    forbidden,
};

/// The seed's union answer for a call of `def` that ended in `e`: arguments that fail the input
/// schema (`INVALID_INPUT`), a rate limit or a timeout (`OPERATION_FAILED`, saying when to retry),
/// a storage fault (`DATABASE_ERROR`). The executor sends it as the result (with `isError: true`)
/// instead of the error's plain text.
pub fn refusal(def: &ToolDef, e: &crate::registry::ToolError) -> ToolOutput {
    use crate::registry::ToolError;
    let reply = match e {
        ToolError::Invalid { .. } => Reply::failure(
            Code::InvalidInput,
            e.public_message(),
            format!(
                "Correct the arguments named above (tools/list shows {}'s inputSchema) and call it again.",
                def.name
            ),
        ),
        ToolError::RateLimited { .. } => Reply::failure(
            Code::OperationFailed,
            e.public_message(),
            "Wait the time given before calling it again; tell the user the answer is delayed.",
        ),
        other => Reply::from_error(other),
    };
    reply.into_output()
}

/// The seed's `INSUFFICIENT_PERMISSIONS` answer for a caller whose roles lack `def` (the tool
/// stays out of their `tools/list`, but a direct call is told why instead of "unknown tool").
pub fn forbidden(def: &ToolDef, caller: &Caller) -> ToolOutput {
    let needs: Vec<&str> = def
        .roles
        .iter()
        .copied()
        .filter(|r| *r != SIGNED_IN)
        .collect();
    let has = if caller.roles.is_empty() {
        "none".to_string()
    } else {
        caller.roles.join(", ")
    };
    let message = if caller.user.is_none() {
        format!("You must sign in to use {}.", def.name)
    } else {
        format!(
            "You do not have permission to use {} ({}): it needs one of the roles {}; your roles: {has}.",
            def.name,
            def.title.to_lowercase(),
            needs.join(", ")
        )
    };
    Reply::failure(
        Code::InsufficientPermissions,
        message,
        "Tell the user this needs one of those roles and that an administrator can grant it; do not retry. Everyone signed in may still read their own record with get_employee.",
    )
    .into_output()
}

/// Integer cents as `$1,234.56`, for messages people read.
pub fn money(cents: i64) -> String {
    let dollars = cents / 100;
    let digits = dollars.abs().to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("${grouped}.{:02}", (cents % 100).abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_groups_thousands() {
        assert_eq!(money(12_000_000), "$120,000.00");
        assert_eq!(money(105), "$1.05");
        assert_eq!(money(100_000_000_050), "$1,000,000,000.50");
    }

    #[test]
    fn like_literal_escapes_the_wildcards_and_the_escape_itself() {
        assert_eq!(like_literal("100%"), "100\\%");
        assert_eq!(like_literal("Under_Score"), "Under\\_Score");
        assert_eq!(like_literal(r"a\b"), r"a\\b");
        assert_eq!(
            like_literal("O'Brien"),
            "O'Brien",
            "quotes are data in a bound parameter"
        );
        assert_eq!(like_literal(""), "");
    }

    fn def(name: &str) -> &'static ToolDef {
        crate::tools::catalog(crate::tools::Catalog::Production)
            .into_iter()
            .find(|d| d.name == name)
            .unwrap()
    }

    fn structured(out: ToolOutput) -> (String, Value) {
        match out {
            ToolOutput::Described { summary, value } => (summary, value),
            other => panic!("not a described answer: {other:?}"),
        }
    }

    #[test]
    fn executor_refusals_of_domain_tools_are_the_union() {
        use crate::registry::ToolError;
        let d = def("list_employees");
        assert!(d.dialect.is_some());
        assert!(def("get_help").dialect.is_none());
        let (_, v) = structured(refusal(
            d,
            &ToolError::Invalid {
                message: "Invalid arguments for tool list_employees: limit: must be at most 50"
                    .into(),
            },
        ));
        assert_eq!(v["status"], "error");
        assert_eq!(v["code"], "INVALID_INPUT");
        assert!(v["message"].as_str().unwrap().contains("limit"), "{v}");
        assert!(v["suggestedAction"]
            .as_str()
            .unwrap()
            .contains("list_employees"));
        let (_, v) = structured(refusal(
            d,
            &ToolError::RateLimited {
                tool: "list_employees",
                limit: crate::registry::limits::Limit {
                    capacity: 2,
                    period_ms: 60_000,
                },
                retry_after_secs: 30,
                progressive: false,
            },
        ));
        assert_eq!(v["code"], "OPERATION_FAILED");
        assert!(v["message"].as_str().unwrap().contains("30 s"));
        let (_, v) = structured(refusal(
            d,
            &ToolError::Timeout("tool list_employees did not finish within 10000 ms".into()),
        ));
        assert_eq!(v["code"], "OPERATION_FAILED");
        let (_, v) = structured(refusal(
            d,
            &ToolError::Internal(crate::error::Error::Storage("D1: disk I/O".into())),
        ));
        assert_eq!(v["code"], "DATABASE_ERROR");
        assert!(
            !v.to_string().contains("disk I/O"),
            "storage details stay in the logs"
        );
    }

    #[test]
    fn a_caller_without_the_roles_is_told_which_roles_the_tool_needs() {
        let frank = Caller {
            user: Some("00000000-0000-4000-8000-000000000008".into()),
            roles: vec![],
        };
        let (summary, v) = structured(forbidden(def("list_employees"), &frank));
        assert_eq!(v["status"], "error");
        assert_eq!(v["code"], "INSUFFICIENT_PERMISSIONS");
        let m = v["message"].as_str().unwrap();
        assert!(
            m.contains("hr-read, executive, manager") && m.contains("your roles: none"),
            "{m}"
        );
        assert!(summary.starts_with("INSUFFICIENT_PERMISSIONS"));
        let (_, v) = structured(forbidden(def("list_employees"), &Caller::anonymous()));
        assert!(v["message"].as_str().unwrap().contains("sign in"));
    }

    #[test]
    fn a_truncated_page_carries_the_seeds_warning_apart_from_the_hint() {
        let page = Page {
            returned: 50,
            next_cursor: Some("c".into()),
            hint: Some("To see more employees, call list_employees again."),
            refine: "department or part of a name",
        };
        let v = Reply::Success {
            data: json!([]),
            page: Some(page),
            summary: "50 employees.".into(),
        }
        .to_json();
        let m = &v["metadata"];
        assert_eq!(m["truncated"], true);
        assert_eq!(m["hasMore"], true);
        assert_eq!(m["totalCount"], "50+");
        assert_eq!(m["totalEstimate"], "50+");
        assert_eq!(m["returnedCount"], 50);
        assert_eq!(m["warning"], "TRUNCATION WARNING: Only 50 of 50+ records returned. Results are incomplete. Ask user to refine query by specifying: department or part of a name.");
        assert_eq!(
            m["hint"],
            "To see more employees, call list_employees again."
        );
        let whole = Reply::Success {
            data: json!([]),
            page: Some(Page {
                returned: 3,
                next_cursor: None,
                hint: None,
                refine: "x",
            }),
            summary: String::new(),
        }
        .to_json();
        assert_eq!(whole["metadata"]["truncated"], false);
        assert_eq!(whole["metadata"]["totalCount"], "3");
        assert!(whole["metadata"].get("warning").is_none());
    }

    #[test]
    fn limit_is_clamped() {
        assert_eq!(limit(&json!({})), 50);
        assert_eq!(limit(&json!({ "limit": 0 })), 1);
        assert_eq!(limit(&json!({ "limit": 500 })), 50);
        assert_eq!(limit(&json!({ "limit": 7 })), 7);
    }
}
