//! Workflow chains stored in D1 (seed 000). `create_chain` checks a definition with the planner
//! (`engine::chain`) and the references it makes, then saves it in one statement. Running chains
//! (`execute_chain`, status, cancel) builds on the runner in `engine::run`.

mod executions;
mod guard;
mod host;
mod steps;

use std::collections::BTreeSet;

use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

use crate::engine::chain::{self, ChainDef, StepType};
use crate::engine::variables;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::registry::task::{TaskRun, TaskSupport};
use crate::registry::{
    self, Annotations, JobMode, SessionState, ToolContext, ToolDef, ToolError, ToolOutput,
    ToolResult,
};
use crate::tools::ownership::{name_clash, sharing_params, Principal, Sharing};
use crate::tools::{not_found_listing, opt_bool, refuse_if_any};
pub use executions::Lease;
pub use executions::{
    abandon, cancel, resume, resume_here, run_background, session_ending, started_execution,
    status, task_state, ENDED_OWNER,
};
use executions::{Mode, Options, Run};

const TOOLSET: &str = "chains";

/// The job kind of chain executions (see `registry::Platform::job_start`).
pub const JOB_KIND: &str = "chain";

/// The category of chains another toolset builds and stores to run ([`run_linked`]: FlowMind's
/// workflows). The chain tools leave them to that toolset: `create_chain` cannot create or
/// replace one, `execute_chain` and `resume_chain` refuse to run one (its checks, approvals and
/// limits live in the toolset's own tool), and they are not offered among the chains to run.
/// `get_chain_status` and `cancel_chain` work on their executions as on any other.
pub const LINKED_CATEGORY: &str = "flowmind-workflow";

/// Name prefixes kept for linked chains: FlowMind names a workflow's chain `wf-<path>`
/// (interactive), `wfa-<path>` (autonomous) or `wfc-<path>` (step_confirm).
pub const LINKED_PREFIXES: [&str; 3] = ["wf-", "wfa-", "wfc-"];

/// Whether `name` is a name kept for linked chains.
pub fn is_linked_name(name: &str) -> bool {
    LINKED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The refusal of a chain tool asked to create, change or run linked chain `name`.
fn linked_refusal(what: &str, name: &str) -> ToolError {
    ToolError::failed(format!(
        "Chain '{name}' is the chain of a FlowMind workflow (names starting with {} and category '{LINKED_CATEGORY}' are FlowMind's), so {what} does not touch it: run the workflow with execute_workflow (workflow_uri, initial_variables; continue with session_id), change it by composing a new one with compose_workflow, and follow or stop a run with get_chain_status or cancel_chain.",
        LINKED_PREFIXES.join(", ")
    ))
}

/// The rules of a chain's `input_schema`: template-variable rules, plus the properties declared
/// `"type": "integer"` (checked as numbers that are whole).
#[derive(Debug)]
pub struct InputRules {
    /// The rules, `integer` read as `number`.
    pub schema: variables::Schema,
    /// Paths declared `integer`.
    pub integers: Vec<String>,
}

impl InputRules {
    /// One message per failing field, as `variables::validate` words them.
    pub fn validate(&self, vars: &Value) -> Vec<String> {
        let mut errors = variables::validate(vars, &self.schema);
        for path in &self.integers {
            if let Some(n) = variables::get_path(vars, path).and_then(Value::as_f64) {
                if n.fract() != 0.0 {
                    errors.push(format!("{path} must be an integer, got {n}"));
                }
            }
            let as_number = format!("{path} must be of type number,");
            for e in errors.iter_mut().filter(|e| e.starts_with(&as_number)) {
                *e = e.replacen(" number,", " integer,", 1);
            }
        }
        errors
    }
}

/// The `input_schema` of a chain as template-variable rules: each property's own `required` flag
/// and the schema's `required` list both count, and `integer` is a number that is whole.
pub fn input_rules(input_schema: &Value) -> std::result::Result<InputRules, Vec<String>> {
    let mut props = input_schema
        .get("properties")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let (Some(map), Some(required)) = (
        props.as_object_mut(),
        input_schema.get("required").and_then(Value::as_array),
    ) {
        for name in required.iter().filter_map(Value::as_str) {
            match map.get_mut(name) {
                Some(rule) => rule["required"] = json!(true),
                None => {
                    return Err(vec![format!(
                    "input_schema.required names {name:?}, which is not in input_schema.properties"
                )])
                }
            }
        }
    }
    let mut integers = Vec::new();
    if let Some(map) = props.as_object_mut() {
        for (path, rule) in map.iter_mut() {
            if rule["type"] == "integer" {
                rule["type"] = json!("number");
                integers.push(path.clone());
            }
        }
    }
    let schema = variables::parse_schema(&props).map_err(|errs| {
        errs.into_iter()
            .map(|e| e.replacen("variables_schema", "input_schema.properties", 1))
            .collect::<Vec<_>>()
    })?;
    Ok(InputRules { schema, integers })
}

/// Names a chain refers to that must exist: (instruction sets, templates).
fn references(def: &ChainDef) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut sets = BTreeSet::new();
    let mut templates = BTreeSet::new();
    for s in &def.steps {
        sets.extend(s.instruction_set.clone());
        templates.extend(s.template_id.clone());
        if let Some(f) = &s.fallback_step {
            sets.extend(f.instruction_set.clone());
            templates.extend(f.template_id.clone());
        }
    }
    (sets, templates)
}

async fn missing(
    ctx: &dyn ToolContext,
    table: &str,
    wanted: &BTreeSet<String>,
) -> Result<Vec<String>> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let list = serde_json::to_string(wanted)?;
    let mut params = vec![json!(list)];
    // Templates have owners: a chain may only name templates its author may read.
    let only = if table == "template_definitions" {
        let readable = Principal::of(ctx).can_read("", 2);
        params.extend(readable.params);
        format!(" AND is_active = 1 AND {}", readable.sql)
    } else {
        String::new()
    };
    let rows = ctx
        .query(
            &format!(
                "SELECT name FROM {table} WHERE name IN (SELECT value FROM json_each(?1)){only}"
            ),
            params,
        )
        .await?;
    let found = crate::engine::sort::set(rows.iter().filter_map(|r| r["name"].as_str()));
    Ok(wanted
        .iter()
        .filter(|w| !found.contains(w.as_str()))
        .cloned()
        .collect())
}

/// A step type's name, as in definitions.
pub fn type_name(t: StepType) -> &'static str {
    match t {
        StepType::InstructionSet => "instruction_set",
        StepType::TemplateProcessing => "template_processing",
        StepType::DatabaseOperation => "database_operation",
        StepType::ExternalApi => "external_api",
        StepType::ConditionalLogic => "conditional_logic",
        StepType::DataTransformation => "data_transformation",
    }
}

/// `create_chain`'s arguments (schema/chains/create_chain.input.json).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateChain {
    chain_definition: Value,
    creation_options: Option<Value>,
}

fn create_chain(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let args: CreateChain = registry::typed("create_chain", args)?;
        let raw = &args.chain_definition;
        let opts = args.creation_options.clone().unwrap_or_else(|| json!({}));
        let def: ChainDef = serde_json::from_value(raw.clone())
            .map_err(|e| ToolError::failed(format!("Chain definition validation failed: {e}")))?;
        let me = Principal::of(ctx);
        let owner = me.require_owner("save a chain")?.to_string();
        let sharing = Sharing::from_args(&opts, "creation_options.")?;

        // The planner's checks (ids, names, dependencies, cycles, step fields, texts) always run:
        // a chain that cannot be planned can never execute. test_compilation adds nothing beyond it.
        const INVALID: &str = "Chain definition validation failed";
        let invalid =
            |errors: Vec<String>| ToolError::failed(format!("{INVALID}: {}", errors.join("; ")));
        chain::plan(&def).map_err(invalid)?;
        if let Some(schema) = raw.get("input_schema") {
            input_rules(schema).map_err(invalid)?;
        }
        // Tools are part of this deployment, not data that could be created later, so these checks
        // run even without validate_references; refusing chain tools is a safety rule besides.
        let registry = ctx.platform().registry();
        refuse_if_any(
            INVALID,
            &steps::tool_problems(registry, &def, &ctx.caller()),
        )?;
        refuse_if_any(INVALID, &steps::sharing_problems(&def))?;
        if opt_bool(&opts, "validate_references", true) {
            let (sets, templates) = references(&def);
            let mut problems = Vec::new();
            let no_sets = missing(ctx, "instruction_sets", &sets).await?;
            if !no_sets.is_empty() {
                problems.push(format!(
                    "instruction sets not found: {} (list_instruction_sets shows them)",
                    no_sets.join(", ")
                ));
            }
            let no_templates = missing(ctx, "template_definitions", &templates).await?;
            if !no_templates.is_empty() {
                problems.push(format!(
                    "active templates not found: {} (create them with create_template)",
                    no_templates.join(", ")
                ));
            }
            refuse_if_any("Reference validation failed", &problems)?;
        }

        let category = raw["category"].as_str().unwrap_or_default();
        if is_linked_name(&def.name) || category == LINKED_CATEGORY {
            return Err(linked_refusal("create_chain", &def.name));
        }
        let version = raw.get("version").and_then(Value::as_str).unwrap_or("1.0");
        let description = raw.get("description").and_then(Value::as_str).unwrap_or("");
        let active = opt_bool(&opts, "set_active", true);
        // Its steps will act with no more than the rights the author holds now (guard.rs).
        let [author, author_roles] =
            guard::Author::columns(Some(&guard::Author::of(&ctx.caller())));
        let mut params = vec![
            json!(def.name),
            json!(def.title),
            json!(description),
            json!(category),
            json!(version),
            json!(raw.to_string()),
            json!(i64::from(active)),
            json!(owner),
        ];
        params.extend(sharing_params(sharing.as_ref()));
        params.extend([author, author_roles]);
        let insert = "INSERT INTO execution_chains (name, title, description, category, version, definition, is_active, owner, visibility, shared_roles, author, author_roles)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, COALESCE(?9, 'private'), COALESCE(?10, '[]'), ?11, ?12)";
        let sql = if opt_bool(&opts, "overwrite_existing", false) {
            // Only the owner replaces a chain (an admin a shipped one), never a FlowMind
            // workflow's; its owner never changes, and its sharing only when this call names one.
            // The author (whose rights its steps are held to) is whoever saved it last.
            let mine = me.can_write("execution_chains.", 13);
            params.extend(mine.params);
            format!(
                "{insert}
             ON CONFLICT (name) DO UPDATE SET title = excluded.title, description = excluded.description,
               category = excluded.category, version = excluded.version, definition = excluded.definition,
               is_active = excluded.is_active, revision = execution_chains.revision + 1,
               author = excluded.author, author_roles = excluded.author_roles,
               visibility = COALESCE(?9, execution_chains.visibility),
               shared_roles = COALESCE(?10, execution_chains.shared_roles),
               updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
             WHERE {} AND execution_chains.category IS NOT '{LINKED_CATEGORY}'
             RETURNING revision, visibility",
                mine.sql
            )
        } else {
            format!("{insert} ON CONFLICT (name) DO NOTHING RETURNING revision, visibility")
        };
        let Some(saved) = ctx.query(&sql, params).await?.into_iter().next() else {
            // A linked chain's name is refused even to its owner: FlowMind replaces it.
            return Err(name_clash(
                ctx,
                &me,
                ("execution_chains", ", category", "Chain"),
                &def.name,
                |row| {
                    (row["category"] == LINKED_CATEGORY)
                        .then(|| linked_refusal("create_chain", &def.name))
                },
            )
            .await);
        };
        let updated = saved["revision"].as_i64().unwrap_or(1) > 1;

        let mut text = format!(
            "Chain '{}' {} successfully.\n\n**Chain Details:**\n- Name: {}\n- Title: {}\n- Category: {category}\n- Steps: {}\n- Version: {version}\n- Status: {}\n- Visibility: {}",
            def.name,
            if updated { "updated" } else { "created" },
            def.name,
            def.title,
            def.steps.len(),
            if active { "Active" } else { "Inactive" },
            saved["visibility"].as_str().unwrap_or("private"),
        );
        text.push_str("\n\n**Steps Summary:**");
        for (i, s) in def.steps.iter().enumerate() {
            text.push_str(&format!(
                "\n{}. {} ({}){}{}",
                i + 1,
                s.name,
                type_name(s.kind),
                if s.conditional_execution.is_some() {
                    " - conditional"
                } else {
                    ""
                },
                if s.parallel_execution {
                    " - parallel"
                } else {
                    ""
                },
            ));
        }
        if let Some(cfg) = raw.get("configuration") {
            text.push_str(&format!(
                "\n\n**Configuration:**\n- Max Execution Time: {}ms\n- Rollback Enabled: {}\n- Parallel Steps: {}",
                cfg.get("max_execution_time").and_then(Value::as_u64).unwrap_or(120_000),
                if opt_bool(cfg, "rollback_enabled", true) { "Yes" } else { "No" },
                if opt_bool(cfg, "parallel_steps_enabled", true) { "Yes" } else { "No" },
            ));
        }
        text.push_str(&format!(
            "\n\n**Usage Example:**\n```\nexecute_chain({{\n  \"chain_name\": \"{}\",\n  \"variables\": {{\n    // Provide required input variables here\n  }}\n}})\n```",
            def.name
        ));
        Ok(ToolOutput::Content(vec![
            json!({ "type": "text", "text": text }),
        ]))
    })
}

/// An `execute_chain` error that stops a run before it starts (unknown chain, invalid variables,
/// bad options), worded as the seed words them: `Error executing chain: …` and what to check.
/// Storage and internal errors keep their own (public) wording.
fn troubleshoot(e: ToolError) -> ToolError {
    match e {
        ToolError::Invalid { .. } | ToolError::Internal(_) => e,
        other => {
            ToolError::failed(format!(
                "Error executing chain: {other}\n\n**Troubleshooting:**\n- Verify chain name exists and is active (the chains you may run are listed when it does not)\n- Check input variables match chain schema (each failing field is named above)\n- Ensure all referenced instruction sets are available (list_instruction_sets)\n- Check system resources and try again"
            ))
        }
    }
}

/// A run `execute_chain` is about to start.
struct Prepared {
    run: Run,
    variables: Value,
    row: Value,
    raw: Value,
    background: bool,
}

/// Loads, checks and plans the chain `execute_chain` names, validates its variables and reads
/// its options.
async fn prepare(ctx: &dyn ToolContext, args: &Value) -> ToolResult<Prepared> {
    let name = args["chain_name"].as_str().unwrap_or_default();
    let opts = args
        .get("execution_options")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let background = opt_bool(&opts, "async_execution", false);
    let tracked = opt_bool(&opts, "track_progress", true);
    if background && !tracked {
        return Err(ToolError::failed(
            "execution_options: async_execution needs track_progress: true, because the execution record is how you follow a background run",
        ));
    }
    let readable = Principal::of(ctx).can_read("", 2);
    let params = [vec![json!(name)], readable.params].concat();
    let rows = ctx
        .query(
            &format!(
                "SELECT id, revision, title, category, definition, author, author_roles FROM execution_chains WHERE name = ?1 AND is_active = 1 AND {}",
                readable.sql
            ),
            params,
        )
        .await?;
    let Some(row) = rows.into_iter().next() else {
        return Err(not_found_listing(ctx, "Chain", name, "execution_chains").await?);
    };
    if row["category"] == LINKED_CATEGORY {
        return Err(linked_refusal("execute_chain", name));
    }
    let raw: Value = serde_json::from_str(row["definition"].as_str().unwrap_or("null"))?;
    let def: ChainDef = serde_json::from_value(raw.clone())?;
    let plan = chain::plan(&def).map_err(|e| {
        ToolError::failed(format!(
            "Stored chain '{name}' is invalid: {}",
            e.join("; ")
        ))
    })?;

    let mut vars = args["variables"].clone();
    if let Some(schema) = raw.get("input_schema") {
        let rules = input_rules(schema).map_err(|e| {
            ToolError::failed(format!(
                "Stored chain '{name}' has an invalid input_schema: {}",
                e.join("; ")
            ))
        })?;
        vars = variables::merge(&Map::new(), &rules.schema, &json!({}), &vars);
        if !opt_bool(&opts, "skip_validation", false) {
            refuse_if_any("Variable validation failed", &rules.validate(&vars))?;
        }
    }

    let config = raw
        .get("configuration")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let run = Run {
        id: executions::new_id()?,
        chain: name.to_string(),
        title: row["title"].as_str().unwrap_or(name).to_string(),
        options: Options {
            parallel: opt_bool(&opts, "parallel_execution", true)
                && opt_bool(&config, "parallel_steps_enabled", true),
            rollback: opt_bool(&opts, "rollback_on_failure", true)
                && opt_bool(&config, "rollback_enabled", true),
            max_execution_ms: opts
                .get("timeout_ms")
                .and_then(Value::as_u64)
                .or_else(|| config.get("max_execution_time").and_then(Value::as_u64))
                .unwrap_or(120_000),
            save_intermediate_results: opt_bool(&opts, "save_intermediate_results", true)
                && opt_bool(&config, "save_intermediate_results", true),
            auto_retry: opt_bool(&config, "auto_retry_transient_failures", true),
            strict_inputs: opt_bool(&config, "strict_inputs", false),
            context: args
                .get("context_metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            runner: ctx.caller().user,
            lease: None,
            kept: None,
        },
        mode: if background { Mode::Async } else { Mode::Sync },
        plan,
        tracked,
        author: guard::Author::from_row(&row),
    };
    Ok(Prepared {
        run,
        variables: vars,
        row,
        raw,
        background,
    })
}

fn execute_chain(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let Prepared {
            run,
            variables: vars,
            row,
            raw,
            background,
        } = prepare(ctx, &args).await.map_err(troubleshoot)?;
        if run.tracked {
            executions::insert(ctx, &run, &row, &raw, &vars).await?;
        }
        if background {
            ctx.platform()
                .job_start(JOB_KIND, &run.id, JobMode::Background)
                .await?;
            let estimate = run.plan.estimate_ms(run.options.parallel);
            return Ok(executions::started_text(
                &run,
                "started asynchronously",
                Some(estimate),
            ));
        }
        if run.tracked {
            ctx.platform()
                .job_start(JOB_KIND, &run.id, JobMode::Attached)
                .await?;
        }
        let start = executions::fresh(&run.plan, vars)?;
        let report = run.drive(ctx, start).await?;
        executions::summary(&run, &report, &run.hidden(ctx.platform().registry()))
    })
}

/// `execute_chain`'s arguments as a task ([`TaskRun::Chain`]): `async_execution` and
/// `track_progress` on, its other `execution_options` kept.
pub fn execute_chain_as_task(mut args: Value) -> Value {
    if !args.is_object() {
        return args;
    }
    let mut opts = args
        .get("execution_options")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    opts.insert("async_execution".into(), json!(true));
    opts.insert("track_progress".into(), json!(true));
    args["execution_options"] = Value::Object(opts);
    args
}

/// The arguments as a task of a tool with an `in_background` argument (`resume_chain`
/// continues, FlowMind's `execute_workflow` starts, in the background).
pub fn in_background_as_task(mut args: Value) -> Value {
    if !args.is_object() {
        return args;
    }
    args["in_background"] = json!(true);
    args
}

/// A fresh execution id, for a caller that must know it before the run starts (to take a lease
/// under it).
pub fn new_execution_id() -> Result<String> {
    executions::new_id()
}

/// How [`run_linked`] runs a chain another toolset built.
pub struct Linked {
    /// Overall limit of running time (pauses excluded).
    pub max_execution_ms: u64,
    /// The caller's concurrency lease the run holds: given back when the execution ends for good,
    /// by whatever ends it.
    pub lease: Option<Lease>,
    /// Whether the run goes on in the background (a job of the session, as `execute_chain`'s
    /// `async_execution`) rather than within the call.
    pub background: bool,
    /// What the toolset keeps with the run to answer for it once it ended, as an MCP task's
    /// result (`registry::task::Render`).
    pub kept: Value,
}

/// Runs a chain definition built by another toolset (FlowMind's `execute_workflow`) as tracked
/// execution `id` of this session: within the call, to its end or first pause, or (`background`)
/// as a background job, returning once it started. Ready steps marked `parallel_execution` run
/// concurrently.
///
/// The definition is stored under its name in `execution_chains` with category
/// [`LINKED_CATEGORY`] (replacing an earlier version of it, never a chain of another category),
/// because every execution record belongs to a stored chain; the record keeps the definition it
/// ran with, like any other. The server builds it from the workflow catalog, so it is stored as
/// the server's (owner `NULL`, public), like the chains it ships.
pub async fn run_linked(
    ctx: &dyn ToolContext,
    id: &str,
    raw: &Value,
    variables: Value,
    how: Linked,
) -> Result<()> {
    let def: ChainDef = serde_json::from_value(raw.clone())?;
    let plan = chain::plan(&def).map_err(|e| {
        Error::Internal(format!(
            "chain '{}' built from a workflow does not plan: {}",
            def.name,
            e.join("; ")
        ))
    })?;
    let row = ctx
        .query(
            "INSERT INTO execution_chains (name, title, description, category, definition, is_active, owner, visibility)
             VALUES (?1, ?2, ?3, ?5, ?4, 1, NULL, 'public')
             ON CONFLICT (name) DO UPDATE SET title = excluded.title, description = excluded.description,
               definition = excluded.definition, is_active = 1,
               revision = execution_chains.revision + (execution_chains.definition <> excluded.definition),
               updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
             WHERE execution_chains.category = ?5
             RETURNING id, revision",
            vec![
                json!(def.name),
                json!(def.title),
                json!(raw.get("description").and_then(Value::as_str).unwrap_or("")),
                json!(raw.to_string()),
                json!(LINKED_CATEGORY),
            ],
        )
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| {
            ToolError::failed(format!(
                "chain name '{}' is taken by a chain created with create_chain, so this workflow cannot be stored under it; rename that chain (or ask an administrator to)",
                def.name
            ))
        })?;
    let run = Run {
        id: id.to_string(),
        chain: def.name.clone(),
        title: def.title.clone(),
        options: Options {
            parallel: true,
            rollback: true,
            max_execution_ms: how.max_execution_ms,
            save_intermediate_results: true,
            // FlowMind's workflows set their own retries per step and report every input.
            auto_retry: false,
            strict_inputs: false,
            context: Map::new(),
            runner: ctx.caller().user,
            lease: how.lease,
            kept: Some(how.kept),
        },
        mode: if how.background {
            Mode::Async
        } else {
            Mode::Sync
        },
        plan,
        tracked: true,
        // Built by the server from a workflow: its steps act with the runner's own rights.
        author: None,
    };
    executions::insert(ctx, &run, &row, raw, &variables).await?;
    if how.background {
        return ctx
            .platform()
            .job_start(JOB_KIND, &run.id, JobMode::Background)
            .await;
    }
    ctx.platform()
        .job_start(JOB_KIND, &run.id, JobMode::Attached)
        .await?;
    let start = executions::fresh(&run.plan, variables)?;
    run.drive(ctx, start).await?;
    Ok(())
}

fn execution_id(args: &Value) -> &str {
    args["execution_id"].as_str().unwrap_or_default()
}

fn get_chain_status(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        Ok(ToolOutput::Structured(
            executions::status(ctx, execution_id(&args)).await?,
        ))
    })
}

fn resume_chain(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let view = executions::status(ctx, execution_id(&args)).await?;
        if let Some(chain) = view["chain"].as_str().filter(|c| is_linked_name(c)) {
            return Err(linked_refusal("resume_chain", chain));
        }
        let outputs = args["outputs"].as_object().cloned().unwrap_or_default();
        let background = opt_bool(&args, "in_background", false);
        executions::resume(ctx, execution_id(&args), &outputs, background).await
    })
}

fn list_chain_executions(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move { Ok(ToolOutput::Structured(executions::list(ctx, &args).await?)) })
}

fn cancel_chain(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let reason = args["reason"].as_str().map_or_else(
            || "cancelled by the client".to_string(),
            |r| format!("cancelled: {r}"),
        );
        Ok(ToolOutput::Structured(
            executions::cancel(ctx, execution_id(&args), &reason, 10_000).await?,
        ))
    })
}

/// The toolset: its tools, and chain executions run as background jobs of [`JOB_KIND`].
pub static SET: super::Toolset = super::Toolset {
    jobs: Some(super::Jobs {
        kind: JOB_KIND,
        run: |ctx, id| Box::pin(run_background(ctx, id)),
        abandon: |ctx, id| Box::pin(abandon(ctx, id)),
        session_ending: |ctx| Box::pin(session_ending(ctx)),
    }),
    ..super::Toolset::of(&[TOOLS])
};

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[ToolDef {
    toolset: TOOLSET,
    name: "create_chain",
    title: "Create chain",
    description: "Define (or, with overwrite_existing, replace) a workflow chain of up to 20 steps. Checks unique step ids and names, dependencies and cycles, step fields, that input templates and conditions compile, that referenced instruction sets and templates exist, and that external_api steps and rollback_action name tools of this server (chain tools are refused), before saving. The chain is yours: private unless creation_options.visibility makes it shared (with shared_roles) or public, so others can run it; only you replace it, and a name another owner holds is refused.",
    annotations: Annotations { read_only: false, destructive: true, idempotent: false, open_world: false },
    input_schema: include_str!("../../../schema/chains/create_chain.input.json"),
    timeout_ms: 15_000,
    roles: &[],
    handler: create_chain,
    ..ToolDef::DEFAULTS
}, ToolDef {
    toolset: TOOLSET,
    name: "execute_chain",
    title: "Execute chain",
    description: "Run a stored chain with input variables (validated against its input_schema): synchronously, or with async_execution in the background (returns an execution id at once). Steps run in dependency order, with conditions, retries, fallbacks and rollback as defined; progress and tool_call/tool_result events are reported per step. instruction_set steps ask the client's model (MCP sampling) or the configured model provider; with neither, the run pauses in awaiting_input until resume_chain supplies the outputs. external_api steps call tools of this server; database_operation steps create, update, delete or read records of named collections, undone on rollback unless changed since.",
    annotations: Annotations { read_only: false, destructive: false, idempotent: false, open_world: false },
    input_schema: include_str!("../../../schema/chains/execute_chain.input.json"),
    timeout_ms: 610_000,
    roles: &[],
    handler: execute_chain,
    state: SessionState::Run { starts: true, drives: true, pauses: true, addressed_by: None },
    task: TaskSupport::Optional(TaskRun::Chain(execute_chain_as_task)),
    ..ToolDef::DEFAULTS
}, ToolDef {
    toolset: TOOLSET,
    name: "get_chain_status",
    title: "Get chain status",
    description: "Show an execution of execute_chain started in this session (or, for a signed-in user, in any of their sessions): status (running, awaiting_input, completed, failed, timed_out, cancelled), per-step states, reasons, attempt counts and outputs, what a paused step waits for, and any rollbacks.",
    annotations: Annotations::READ_ONLY,
    input_schema: include_str!("../../../schema/chains/get_chain_status.input.json"),
    output_schema: Some(include_str!("../../../schema/chains/get_chain_status.output.json")),
    roles: &[],
    handler: get_chain_status,
    state: SessionState::addresses("execution_id"),
    ..ToolDef::DEFAULTS
}, ToolDef {
    toolset: TOOLSET,
    name: "resume_chain",
    title: "Resume chain",
    description: "Continue an execution paused in awaiting_input (this session's, or a signed-in user's from any of their sessions; it then continues in this session) by supplying the output variables its paused step waits for (get_chain_status shows them with the step's instructions and input). A synchronous execution continues in this call and answers like execute_chain (unless in_background); a background one continues in the background. A signed-in user's background run whose MCP session ended while it ran is continued from its last checkpoint with outputs {}.",
    annotations: Annotations { read_only: false, destructive: false, idempotent: false, open_world: false },
    input_schema: include_str!("../../../schema/chains/resume_chain.input.json"),
    timeout_ms: 610_000,
    roles: &[],
    handler: resume_chain,
    state: SessionState::Run { starts: false, drives: true, pauses: true, addressed_by: Some("execution_id") },
    task: TaskSupport::Optional(TaskRun::Chain(in_background_as_task)),
    ..ToolDef::DEFAULTS
}, ToolDef {
    toolset: TOOLSET,
    name: "cancel_chain",
    title: "Cancel chain",
    description: "Cancel an execution that is running in this session, or awaiting input (a signed-in user's paused execution from any of their sessions). A running step finishes first; then the run stops and, when rollback is on, its completed steps are rolled back. Returns the execution's status.",
    annotations: Annotations { read_only: false, destructive: true, idempotent: true, open_world: false },
    input_schema: include_str!("../../../schema/chains/cancel_chain.input.json"),
    output_schema: Some(include_str!("../../../schema/chains/get_chain_status.output.json")),
    timeout_ms: 30_000,
    roles: &[],
    handler: cancel_chain,
    state: SessionState::addresses("execution_id"),
    ..ToolDef::DEFAULTS
}, ToolDef {
    toolset: TOOLSET,
    name: "list_chain_executions",
    title: "List chain executions",
    description: "List your chain executions, newest first: this session's, and for a signed-in user those of all their sessions. Filter by chain_name, status and the context_metadata execute_chain was given (agent_id, session_id, client_id, source_channel). Each entry has the execution id for get_chain_status, resume_chain and cancel_chain.",
    annotations: Annotations::READ_ONLY,
    input_schema: include_str!("../../../schema/chains/list_chain_executions.input.json"),
    output_schema: Some(include_str!("../../../schema/chains/list_chain_executions.output.json")),
    timeout_ms: 10_000,
    roles: &[],
    handler: list_chain_executions,
    ..ToolDef::DEFAULTS
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_chains_args_are_its_schemas_properties() {
        registry::assert_args_match::<CreateChain>(include_str!(
            "../../../schema/chains/create_chain.input.json"
        ));
    }

    /// Tool `name`'s arguments as a task, by its declaration.
    fn as_task(name: &str, args: Value) -> Value {
        match TOOLS
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.task.run())
        {
            Some(TaskRun::Chain(background)) => background(args),
            _ => panic!("{name} runs as a chain task"),
        }
    }

    #[test]
    fn a_task_runs_in_the_background_and_its_id_is_read_from_the_structured_start_answer() {
        let args = as_task(
            "execute_chain",
            json!({ "chain_name": "c", "execution_options": { "async_execution": false, "track_progress": false, "timeout_ms": 5 } }),
        );
        assert_eq!(
            args["execution_options"],
            json!({ "async_execution": true, "track_progress": true, "timeout_ms": 5 })
        );
        assert_eq!(
            as_task("execute_chain", json!({}))["execution_options"]["async_execution"],
            true
        );
        let resume = as_task(
            "resume_chain",
            json!({ "execution_id": "x", "outputs": {} }),
        );
        assert_eq!(resume["in_background"], true);
        assert!(resume.get("execution_options").is_none());
        let run = executions::Run {
            id: "exec-0123456789abcdef0123456789abcdef".into(),
            chain: "c".into(),
            title: "C".into(),
            plan: chain::plan(&serde_json::from_value(json!({ "name": "c", "title": "C", "steps": [
                { "id": 1, "name": "one", "type": "data_transformation", "input_template": "x", "output_variables": ["y"] }
            ] })).unwrap()).unwrap(),
            options: executions::Options {
                parallel: true,
                rollback: true,
                max_execution_ms: 1,
                save_intermediate_results: true,
                auto_retry: false,
                strict_inputs: false,
                context: Map::new(),
                runner: None,
                lease: None,
                kept: None,
            },
            mode: Mode::Async,
            tracked: true,
            author: None,
        };
        let ToolOutput::Described { value, summary } =
            executions::started_text(&run, "started asynchronously", Some(9))
        else {
            panic!("the start answer is described structured content");
        };
        assert!(summary.contains(&format!("- Execution ID: {}", run.id)));
        assert_eq!(value["estimated_duration_ms"], 9);
        let result =
            json!({ "content": [{ "type": "text", "text": summary }], "structuredContent": value });
        assert_eq!(started_execution(&result).as_deref(), Some(run.id.as_str()));
        let mut refused = result.clone();
        refused["isError"] = json!(true);
        assert_eq!(started_execution(&refused), None);
        assert_eq!(
            started_execution(&json!({ "content": [{ "type": "text", "text": summary }] })),
            None,
            "the id is never read out of the text"
        );
        let workflow = |status: &str| {
            json!({ "content": [], "structuredContent": { "success": true, "result": {
                "execution_id": run.id, "session_id": run.id, "status": status } } })
        };
        assert_eq!(
            started_execution(&workflow("running")).as_deref(),
            Some(run.id.as_str())
        );
        assert_eq!(
            started_execution(&workflow("completed")),
            None,
            "a run that ended within the call is no task"
        );
        assert_eq!(
            started_execution(
                &json!({ "structuredContent": { "execution_id": "exec-zz", "status": "running" } })
            ),
            None
        );
    }

    #[test]
    fn input_schema_required_flags_and_list_both_count() {
        let rules = input_rules(&json!({
            "type": "object",
            "properties": { "a": { "type": "string" }, "b": { "type": "number", "required": true }, "c": { "type": "string" } },
            "required": ["a"]
        }))
        .unwrap();
        let s = &rules.schema;
        assert!(s["a"].required && s["b"].required && !s["c"].required);
        let e = input_rules(&json!({ "type": "object", "properties": { "a": { "type": "integer" } }, "required": ["zz"] })).unwrap_err();
        assert!(
            e[0].contains("\"zz\", which is not in input_schema.properties"),
            "{e:?}"
        );
        let e = input_rules(&json!({ "type": "object", "properties": { "a": { "type": "int" } } }))
            .unwrap_err();
        assert!(e[0].starts_with("input_schema.properties.a:"), "{e:?}");
    }

    #[test]
    fn integer_inputs_are_whole_numbers() {
        let rules = input_rules(&json!({ "type": "object", "properties": {
            "days": { "type": "integer", "required": true, "minimum": 1 } } }))
        .unwrap();
        assert!(rules.validate(&json!({ "days": 5 })).is_empty());
        assert!(rules.validate(&json!({ "days": 5.0 })).is_empty());
        assert_eq!(
            rules.validate(&json!({ "days": 2.5 })),
            vec!["days must be an integer, got 2.5"]
        );
        assert_eq!(
            rules.validate(&json!({ "days": "5" })),
            vec!["days must be of type integer, got \"5\""]
        );
        assert_eq!(
            rules.validate(&json!({ "days": 0 })),
            vec!["days must be at least 1, got 0"]
        );
    }

    #[test]
    fn references_cover_steps_and_fallbacks() {
        let def: ChainDef = serde_json::from_str(include_str!(
            "../../engine/testdata/corporate-booking-workflow.json"
        ))
        .unwrap();
        let (sets, templates) = references(&def);
        assert_eq!(
            sets.into_iter().collect::<Vec<_>>(),
            vec!["corporate-validation", "policy-compliance", "vendor-search"]
        );
        assert_eq!(
            templates.into_iter().collect::<Vec<_>>(),
            vec!["corporate-approval-request", "corporate-booking-summary"]
        );
        assert!(input_rules(
            &serde_json::from_str::<Value>(include_str!(
                "../../engine/testdata/corporate-booking-workflow.json"
            ))
            .unwrap()["input_schema"]
        )
        .is_ok());
    }
}
