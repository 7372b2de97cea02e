//! Every toolset, one folder each. A deployment serves the tools of one [`Catalog`].

pub mod calendar;
pub mod chains;
pub mod conformance;
pub mod domain;
pub mod epic_tide;
pub mod finance;
pub mod flights;
pub mod flowmind;
pub mod hr;
pub mod instructions;
pub mod model_provider;
pub mod ownership;
pub mod sales;
pub mod support;
pub mod templates;
pub mod upstream;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::registry::{ToolContext, ToolDef};

/// Runs a tracked background job of `kind` (see `registry::Platform::job_start`): a new run, or
/// the continuation of one whose lease lapsed.
pub async fn run_job(ctx: &dyn ToolContext, kind: &str, id: &str) -> Result<()> {
    match kind {
        chains::JOB_KIND => chains::run_background(ctx, id).await,
        other => Err(Error::Internal(format!("unknown job kind {other:?}"))),
    }
}

/// Carries out a confirmed domain write (`src/confirm/`), if the deciding user's current roles
/// still allow the tool that asked for it.
pub async fn execute_confirmed(
    ctx: &dyn ToolContext,
    p: &domain::confirm::Pending,
) -> domain::Reply {
    let caller = ctx.caller();
    if ctx
        .platform()
        .registry()
        .get_for(&p.action, &caller)
        .is_none()
    {
        return domain::Reply::failure(
            domain::Code::InsufficientPermissions,
            format!(
                "Your roles no longer allow {}; nothing was changed.",
                p.action
            ),
            "Ask someone with the right role to make the change.",
        );
    }
    let reply = match p.server.as_str() {
        "hr" => hr::execute(ctx, p).await,
        "finance" => finance::writes::execute(ctx, p).await,
        "sales" => sales::writes::execute(ctx, p).await,
        "support" => support::writes::execute(ctx, p).await,
        other => domain::Reply::failure(
            domain::Code::OperationFailed,
            format!("no writes are defined for {other}"),
            "Ask for the change again.",
        ),
    };
    // Writes reach across domains (deleting an employee deletes their expense reports), so every
    // cached read goes; a failure here would serve stale reads, so it is logged loudly.
    if matches!(reply, domain::Reply::Success { .. }) {
        if let Err(e) = domain::invalidate(ctx).await {
            crate::log::error!(
                "{}",
                serde_json::json!({ "cache_invalidation_failed": e.to_string() })
            );
        }
    }
    reply
}

/// Closes a job whose run was attached to a call that ended before the run did.
pub async fn abandon_job(ctx: &dyn ToolContext, kind: &str, id: &str) -> Result<()> {
    match kind {
        chains::JOB_KIND => chains::abandon(ctx, id).await,
        other => Err(Error::Internal(format!("unknown job kind {other:?}"))),
    }
}

/// The session is ending: close what the toolsets keep open for it.
pub async fn session_ending(ctx: &dyn ToolContext) -> Result<()> {
    chains::session_ending(ctx).await
}

/// Refuses with every problem found (`"<what>: a; b"`), or passes when there are none.
pub fn refuse_if_any(what: &str, problems: &[String]) -> Result<()> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::ToolFailed(format!(
            "{what}: {}",
            problems.join("; ")
        )))
    }
}

/// The error for a named record that does not exist (or is inactive, or the caller may not read
/// it), listing the active ones the caller may read as `name (category)` so they can pick one.
/// `table` is one of our own table names, with the columns of `ownership`. FlowMind's workflow
/// chains are left out: the chain tools do not run them (`chains::LINKED_CATEGORY`).
pub async fn not_found_listing(
    ctx: &dyn ToolContext,
    what: &str,
    name: &str,
    table: &str,
) -> Result<Error> {
    let readable = ownership::Principal::of(ctx).can_read("", 1);
    let rows = ctx
        .query(
            &format!(
                "SELECT name, category FROM {table} WHERE is_active = 1 AND category IS NOT '{}' AND {} ORDER BY category, name",
                chains::LINKED_CATEGORY,
                readable.sql
            ),
            readable.params,
        )
        .await?;
    let list: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} ({})",
                r["name"].as_str().unwrap_or(""),
                r["category"].as_str().unwrap_or("")
            )
        })
        .collect();
    Ok(Error::NoSuchRecord(format!(
        "{what} '{name}' not found. Available {}s: {}",
        what.to_lowercase(),
        list.join(", ")
    )))
}

/// The strings of a JSON array, in order; other items, and anything but an array, give none.
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// A boolean option of a tool's options object (`creation_options`, `processing_options`, …),
/// with the default the tool's schema documents when it is absent.
pub fn opt_bool(options: &Value, key: &str, default: bool) -> bool {
    options.get(key).and_then(Value::as_bool).unwrap_or(default)
}

/// Which tools a deployment serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Catalog {
    /// The product's toolsets.
    Production,
    /// The product's toolsets plus the fixtures the official MCP conformance suite calls. Only the
    /// `conformance` wrangler environment serves this.
    Conformance,
}

impl Catalog {
    /// Reads the `MCP_CATALOG` variable: `conformance`, or anything else for production.
    pub fn from_var(v: Option<&str>) -> Catalog {
        match v {
            Some("conformance") => Catalog::Conformance,
            _ => Catalog::Production,
        }
    }

    /// Whether the conformance fixtures (resources, prompts and completions) are served.
    pub fn has_fixtures(self) -> bool {
        self == Catalog::Conformance
    }
}

/// The resources every deployment publishes (`resources/list` entries): data clients read rather
/// than call, such as the EPIC-TIDE vocabulary.
pub fn resources() -> Vec<Value> {
    vec![epic_tide::resource_listing()]
}

/// `resources/read` of a published resource, or `None` for a URI that is not one.
pub fn read_resource(uri: &str) -> Option<Value> {
    (uri == epic_tide::vocabulary::URI).then(epic_tide::resource_contents)
}

/// The tool declarations of a catalog.
pub fn catalog(c: Catalog) -> Vec<&'static ToolDef> {
    let mut defs: Vec<&'static ToolDef> = instructions::TOOLS
        .iter()
        .chain(templates::TOOLS.iter())
        .chain(chains::TOOLS.iter())
        .chain(domain::TOOLS.iter())
        .chain(hr::TOOLS.iter())
        .chain(finance::TOOLS.iter())
        .chain(sales::TOOLS.iter())
        .chain(support::TOOLS.iter())
        .chain(finance::writes::TOOLS.iter())
        .chain(sales::writes::TOOLS.iter())
        .chain(support::writes::TOOLS.iter())
        .chain(flights::TOOLS.iter())
        .chain(calendar::TOOLS.iter())
        .chain(epic_tide::TOOLS.iter())
        .chain(flowmind::TOOLS.iter())
        .collect();
    if c == Catalog::Conformance {
        defs.extend(conformance::TOOLS.iter());
        defs.extend(conformance::mrtr::TOOLS.iter());
        defs.extend(conformance::tasks::TOOLS.iter());
    }
    defs
}
