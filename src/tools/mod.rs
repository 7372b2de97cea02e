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

use futures::future::LocalBoxFuture;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::registry::{ToolContext, ToolDef, ToolError, ToolResult};

/// A toolset as a catalog serves it: its tools, and the jobs the server runs for it. A toolset
/// with jobs declares its own (`chains::SET`), so adding one means adding it to [`TOOLSETS`],
/// never editing a dispatch.
#[derive(Debug)]
pub struct Toolset {
    /// Its tools, in one or more declaration lists.
    pub tools: &'static [&'static [ToolDef]],
    /// The background jobs it runs.
    pub jobs: Option<Jobs>,
}

/// A job hook: the context it runs in and the job's id.
pub type JobHook = for<'a> fn(&'a dyn ToolContext, &'a str) -> LocalBoxFuture<'a, Result<()>>;

/// The background jobs of a toolset (see `registry::Platform::job_start`).
#[derive(Debug)]
pub struct Jobs {
    /// The job kind its jobs are started with.
    pub kind: &'static str,
    /// Runs a job: a new run, or the continuation of one whose lease lapsed.
    pub run: JobHook,
    /// Closes a job whose run was attached to a call that ended before the run did.
    pub abandon: JobHook,
    /// The session is ending: close what the toolset keeps open for it.
    pub session_ending: for<'a> fn(&'a dyn ToolContext) -> LocalBoxFuture<'a, Result<()>>,
}

impl Toolset {
    /// A toolset of `tools` and nothing else.
    pub const fn of(tools: &'static [&'static [ToolDef]]) -> Toolset {
        Toolset { tools, jobs: None }
    }
}

/// Every toolset of the product, in catalog order.
static TOOLSETS: &[&Toolset] = &[
    &Toolset::of(&[instructions::TOOLS]),
    &Toolset::of(&[templates::TOOLS]),
    &chains::SET,
    &Toolset::of(&[domain::TOOLS]),
    &Toolset::of(&[hr::TOOLS]),
    &Toolset::of(&[finance::TOOLS, finance::writes::TOOLS]),
    &Toolset::of(&[sales::TOOLS, sales::writes::TOOLS]),
    &Toolset::of(&[support::TOOLS, support::writes::TOOLS]),
    &Toolset::of(&[flights::TOOLS]),
    &Toolset::of(&[calendar::TOOLS]),
    &Toolset::of(&[epic_tide::TOOLS]),
    &Toolset::of(&[flowmind::TOOLS]),
];

/// The toolsets only the conformance catalog serves: the fixtures the official suite calls.
static FIXTURES: &[&Toolset] = &[&Toolset::of(&[
    conformance::TOOLS,
    conformance::mrtr::TOOLS,
    conformance::tasks::TOOLS,
])];

/// The job hooks of `kind`.
fn jobs(kind: &str) -> Result<&'static Jobs> {
    TOOLSETS
        .iter()
        .filter_map(|s| s.jobs.as_ref())
        .find(|j| j.kind == kind)
        .ok_or_else(|| Error::Internal(format!("unknown job kind {kind:?}")))
}

/// Runs a tracked background job of `kind` (see `registry::Platform::job_start`): a new run, or
/// the continuation of one whose lease lapsed.
pub async fn run_job(ctx: &dyn ToolContext, kind: &str, id: &str) -> Result<()> {
    (jobs(kind)?.run)(ctx, id).await
}

/// Carries out a confirmed domain write (`src/confirm/`) with its tool's
/// [`ToolDef::confirmed`], if the deciding user's current roles still allow the tool; answers
/// with the decision's JSON.
pub async fn execute_confirmed(ctx: &dyn ToolContext, p: &domain::confirm::Pending) -> Value {
    let caller = ctx.caller();
    let confirmed = match ctx.platform().registry().get_for(&p.action, &caller) {
        Some(tool) => tool.def.confirmed,
        None => {
            return domain::Reply::failure(
                domain::Code::InsufficientPermissions,
                format!(
                    "Your roles no longer allow {}; nothing was changed.",
                    p.action
                ),
                "Ask someone with the right role to make the change.",
            )
            .to_json()
        }
    };
    let reply = match confirmed {
        Some(carry_out) => carry_out(ctx, &p.arguments, &p.data).await,
        None => domain::Reply::failure(
            domain::Code::OperationFailed,
            format!("no writes are defined for {}", p.server),
            "Ask for the change again.",
        )
        .to_json(),
    };
    // Writes reach across domains (deleting an employee deletes their expense reports), so every
    // cached read goes; a failure here would serve stale reads, so it is logged loudly.
    if reply["status"] == "success" {
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
    (jobs(kind)?.abandon)(ctx, id).await
}

/// The session is ending: close what the toolsets keep open for it.
pub async fn session_ending(ctx: &dyn ToolContext) -> Result<()> {
    for jobs in TOOLSETS.iter().filter_map(|s| s.jobs.as_ref()) {
        (jobs.session_ending)(ctx).await?;
    }
    Ok(())
}

/// Refuses with every problem found (`"<what>: a; b"`), or passes when there are none.
pub fn refuse_if_any(what: &str, problems: &[String]) -> ToolResult<()> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ToolError::failed(format!(
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
) -> Result<ToolError> {
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
    Ok(ToolError::not_found(format!(
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
    let fixtures: &[&Toolset] = if c == Catalog::Conformance {
        FIXTURES
    } else {
        &[]
    };
    TOOLSETS
        .iter()
        .chain(fixtures)
        .flat_map(|s| s.tools.iter().flat_map(|t| t.iter()))
        .collect()
}
