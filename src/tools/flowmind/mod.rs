//! FlowMind (issue 6, seed 001): find the context (workflow, agent, pattern or tool) that fits what
//! the user asked, and teach the calling model to ask better.
//!
//! The catalog lives in D1 (`contexts`, plus one `tool://` context per registered tool;
//! [`catalog`]); matching is the pure matcher of `engine::matcher`. Every answer carries
//! `teaching`, `next_actions` and `_performance` ([`teach`]); a bad call is answered in the seed's
//! educational error format rather than refused by the schema ([`validate`]).

pub mod catalog;
pub mod codes;
pub mod compose;
pub mod condition;
pub mod discover;
pub mod embeddings;
pub mod execute;
pub mod field_request;
pub mod levels;
pub mod measure;
pub mod request;
pub mod teach;
pub mod tool_text;
pub mod validate;
pub mod workflow;

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use self::catalog::Context;
use crate::clock;
use crate::registry::limits::Limit;
use crate::registry::task::{TaskRun, TaskSupport};
use crate::registry::{
    Annotations, Caller, Level, Registry, SessionState, ToolContext, ToolDef, ToolOutput,
    ToolResult,
};

const TOOLSET: &str = "flowmind";

/// Whether `caller` may see context `c`: `tool://` contexts follow the tool's roles, like
/// `tools/list`.
pub fn visible_to<'a>(
    registry: &'a Registry,
    caller: &'a Caller,
) -> impl Fn(&Context) -> bool + 'a {
    move |c: &Context| match c.uri.strip_prefix("tool://") {
        Some(name) => registry.get_for(name, caller).is_some(),
        None => true,
    }
}

fn ms(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// `_performance` of a response that took from `started` to now, of which `search_ms` searching.
pub fn performance(started: f64, search_ms: f64) -> Value {
    let total = clock::now_ms() - started;
    json!({
        "total_time_ms": ms(total),
        "alpha_llm_time_ms": 0.0,
        "search_time_ms": ms(search_ms),
        "assembly_time_ms": ms((total - search_ms).max(0.0)),
    })
}

/// `_insights` of an answer (seed 001, "Response Enhancement": the enhancer adds
/// `generateInsights(performanceMetrics)` to every response): what its `_performance` and
/// `_metadata` say about where the time went and how the answer was reached, in words, so a
/// caller can tell a slow catalog load from a slow model without reading the figures.
pub fn insights(body: &Value) -> Value {
    let perf = &body["_performance"];
    let total = perf["total_time_ms"].as_f64().unwrap_or(0.0);
    let search = perf["search_time_ms"].as_f64().unwrap_or(0.0);
    let assembly = perf["assembly_time_ms"].as_f64().unwrap_or(0.0);
    let bottleneck = if total <= 0.0 {
        "none"
    } else if search >= assembly {
        "search"
    } else {
        "assembly"
    };
    let mut notes = vec![if total <= 0.0 {
        "Answered without waiting on storage or a model (the Worker's clock only advances across I/O, so CPU work shows as 0 ms).".to_string()
    } else {
        format!(
            "Answered in {total} ms: {search} ms searching or evaluating (catalog reads, model calls), {assembly} ms reading and writing the rest (the Worker's clock only advances across I/O)."
        )
    }];
    let meta = &body["_metadata"];
    match (meta["cache_hit"].as_bool(), meta.get("catalog_generation")) {
        (Some(true), Some(generation)) => notes.push(format!(
            "The catalog index was reused from this instance's cache (catalog generation {generation})."
        )),
        (Some(false), Some(_)) => notes.push("The catalog index was built for this call; later calls on this instance reuse it until the catalog changes.".to_string()),
        (Some(true), None) => notes.push("Answered from the result cache: the same call was answered moments ago.".to_string()),
        (Some(false), None) => notes.push("Computed for this call: no cached answer was used.".to_string()),
        (None, _) => {}
    }
    if let Some(n) = meta["contexts_searched"].as_u64() {
        notes.push(format!("{n} contexts were searched."));
    }
    if body["degraded"] == Value::Bool(true) {
        notes.push(format!(
            "Matching ran on text alone: {}",
            body["degraded_reason"]
                .as_str()
                .unwrap_or("no embedding model was used.")
        ));
    } else if let Some(model) = meta["embedding_model"].as_str() {
        notes.push(format!("Similarity blended in {model} embeddings."));
    }
    if let Some(l) = body
        .pointer("/guidance/max_complexity")
        .and_then(Value::as_str)
    {
        notes.push(format!(
            "Offered only contexts up to {l} complexity, your level's max_complexity."
        ));
    }
    json!({
        "bottleneck": bottleneck,
        "search_share": if total > 0.0 { ms(search / total) } else { 0.0 },
        "notes": notes,
    })
}

/// Adds [`insights`] to a FlowMind answer that has `_performance`.
fn with_insights(out: ToolOutput) -> ToolOutput {
    let add = |mut v: Value| {
        if v.get("_performance").is_some() {
            v["_insights"] = insights(&v);
        }
        v
    };
    match out {
        ToolOutput::Structured(v) => ToolOutput::Structured(add(v)),
        ToolOutput::Described { value, summary } => ToolOutput::Described {
            value: add(value),
            summary,
        },
        other => other,
    }
}

/// A tool's handler that runs `$handler` and adds `_insights` to its answer.
macro_rules! enhanced {
    ($name:ident, $handler:path) => {
        fn $name(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
            Box::pin(async move { $handler(ctx, args).await.map(with_insights) })
        }
    };
}

enhanced!(field_request_enhanced, field_request);
enhanced!(list_available_contexts, discover::list_available_contexts);
enhanced!(get_help, discover::get_help);
enhanced!(
    evaluate_semantic_condition,
    condition::evaluate_semantic_condition
);
enhanced!(execute_workflow, execute::execute_workflow);
enhanced!(compose_workflow, compose::compose_workflow);

/// `execute_workflow`'s answer for an ended run, as its task's result (`TaskRun::Linked`): the
/// synchronous call's answer, `_insights` included.
fn workflow_task_answer<'a>(
    ctx: &'a dyn ToolContext,
    id: &'a str,
    kept: &'a Value,
) -> LocalBoxFuture<'a, ToolResult> {
    Box::pin(async move { execute::task_answer(ctx, id, kept).await.map(with_insights) })
}

fn field_request(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let started = clock::now_ms();
        let registry = ctx.platform().registry();
        let problems = registry
            .get("field_request")
            .map(|t| t.input_problems(&args))
            .unwrap_or_default();
        let refusal = validate::check(&args, &problems);
        let (catalog, cache_hit) = catalog::load(ctx).await?;
        let caller = ctx.caller();
        let roles = visible_to(registry, &caller);
        // The seed's max_complexity: a caller is offered only contexts its level may run.
        let level = levels::of_caller(ctx).await;
        let visible =
            |c: &Context| roles(c) && level.is_none_or(|l| levels::within(l, &c.complexity));

        if let Some(r) = refusal {
            let search_started = clock::now_ms();
            let partial = field_request::partial(
                &catalog,
                args.get("query").and_then(Value::as_str),
                r.blocked_by,
                &visible,
            );
            let search_ms = clock::now_ms() - search_started;
            let summary = format!("{}: {}", r.code, r.message);
            let retry = r.retry(&args);
            let body = json!({
                "success": false,
                "error": r.error(),
                "guidance": r.guidance,
                "partial_results": partial,
                "teaching": {
                    "tip": r.instruction,
                    "pattern": "query (what + why) + confidence_level + extracted_variables (domain first) = a call that matches",
                    "confidence_calibration": "Not measured: the call was refused before matching.",
                },
                "next_actions": [
                    { "tool": "field_request", "reason": format!("Call again with the fix: {}", r.instruction), "parameters": retry },
                    { "tool": "get_help", "reason": "Explains this error and its fix", "parameters": { "help_type": "error", "context": { "error_message": r.code } } },
                ],
                "_performance": performance(started, search_ms),
            });
            return Ok(ToolOutput::Described {
                value: body,
                summary,
            });
        }

        let a = request::Args::read(&args);
        let search_started = clock::now_ms();
        let mut indices = vec!["bm25f", "variable_alignment"];
        let blended = if a.content_unprocessed() {
            // Nothing is matched for real until the content is summarised: no model call.
            Err("The content is not summarised yet, so nothing was embedded.".to_string())
        } else if let Some(reason) = embeddings::unavailable(ctx.platform()) {
            Err(reason)
        } else {
            let (pool, query) = field_request::pool(&catalog, &a, &visible);
            let pooled: Vec<&Context> = pool.iter().map(|c| &catalog.contexts[c.entry]).collect();
            embeddings::cosines(ctx, &query, &pooled).await.map(|e| {
                let outcome =
                    field_request::search_blended(&catalog, &a, &visible, pool, &e.cosines);
                (outcome, e)
            })
        };
        let (outcome, embedded, degraded) = match blended {
            Ok((outcome, e)) => {
                indices.push(embeddings::INDEX);
                (outcome, Some(e), None)
            }
            Err(reason) => (
                field_request::search(&catalog, &a, &visible),
                None,
                Some(reason),
            ),
        };
        let search_ms = clock::now_ms() - search_started;
        let mut body = field_request::respond(&catalog, &a, &outcome);
        if a.domain().is_some() {
            indices.push("domain_signal");
        }
        if !a.types.is_empty() {
            indices.push("type_filtered");
        }
        if let Some(l) = level {
            let above = field_request::above_level(&catalog, &a, &roles, l);
            body["guidance"]["max_complexity"] = json!(l.max_complexity());
            body["guidance"]["above_your_level"] = json!(above);
        }
        body["degraded"] = json!(degraded.is_some());
        body["degraded_reason"] = json!(degraded);
        body["_metadata"] = json!({
            "search_time_ms": ms(search_ms),
            "contexts_searched": outcome.searched,
            "indices_used": indices,
            "cache_hit": cache_hit,
            "alpha_llm_calls": 0,
            "catalog_generation": catalog.generation,
            "embedding_model": embedded.as_ref().map(|_| embeddings::MODEL),
            "embeddings": embedded.as_ref().map(|e| json!({
                "contexts": e.cosines.len(),
                "computed": e.computed,
                "cached_contexts": e.cached,
                "query_cached": e.query_cached,
            })),
        });
        body["_performance"] = performance(started, search_ms);
        let n = body["matches"].as_array().map_or(0, Vec::len);
        let summary = match body["matches"].get(0) {
            Some(m) => format!(
                "{}: {n} match{}, best {} ({})",
                outcome.status,
                if n == 1 { "" } else { "es" },
                m["uri"].as_str().unwrap_or_default(),
                m["confidence"]
            ),
            None => format!("{}: nothing in the catalog fits", outcome.status),
        };
        Ok(ToolOutput::Described {
            value: body,
            summary,
        })
    })
}

/// The toolset's tools.
pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        toolset: TOOLSET,
        name: "field_request",
        title: "Find the right context (FlowMind)",
        description: "Universal context discovery for workflows, agents, patterns, and tools. Use this when you need to find appropriate contexts based on user needs. The system will match based on semantic similarity and variables. Give a 1-2 sentence query, your extracted variables (domain first) and an honest confidence_level; the answer has a status (success, disambiguation_needed, refinement_suggested, no_matches, content_processing_required), ranked matches with calibrated confidence, what each still needs, and the call that runs it. Bad calls get an error that explains the fix.",
        annotations: Annotations::READ_ONLY,
        input_schema: include_str!("../../../schema/flowmind/field_request.input.json"),
        output_schema: Some(include_str!("../../../schema/flowmind/response.output.json")),
        timeout_ms: 15_000,
        roles: &[],
        handler: field_request_enhanced,
        progressive_backoff: true,
        // 60 a minute with bursts of 10: a bucket of 10 refilled in 10 s is the same token bucket.
        rate_limit: Some(Limit { capacity: 10, period_ms: 10_000 }),
        level: Some(Level::Beginner),
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "list_available_contexts",
        title: "List FlowMind contexts",
        description: "List available contexts with filtering. Use to explore what workflows, agents, and patterns are available. Filter by type, domain, tags (any of them) and complexity; sort by name, popularity, recent or relevance; page with offset and limit (totals included).",
        annotations: Annotations::READ_ONLY,
        input_schema: include_str!("../../../schema/flowmind/list_available_contexts.input.json"),
        output_schema: Some(include_str!("../../../schema/flowmind/response.output.json")),
        timeout_ms: 15_000,
        roles: &[],
        handler: list_available_contexts,
        level: Some(Level::Advanced),
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "get_help",
        title: "FlowMind help",
        description: "Get help with FlowMind usage, error resolution, or best practices. help_type error explains an error code or message and its fix; usage shows a tool's arguments and an example call; best_practices lists how to get good matches; concept explains a FlowMind idea (contexts, confidence, disambiguation, domains, …) or a context by its URI.",
        annotations: Annotations::READ_ONLY,
        input_schema: include_str!("../../../schema/flowmind/get_help.input.json"),
        output_schema: Some(include_str!("../../../schema/flowmind/response.output.json")),
        timeout_ms: 15_000,
        roles: &[],
        handler: get_help,
        level: Some(Level::Beginner),
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "evaluate_semantic_condition",
        title: "Evaluate a condition (FlowMind)",
        description: "Evaluate a natural language condition against current context. Use for workflow branching decisions or understanding activation conditions. Reads sentiment (frustrated, confused, happy), urgency, variable tests (\"budget is over 5000\", \"user_tier is premium\", \"email is provided\"), mentions (\"mentions a refund\") and questions, with negation; deterministic rules, assisted by the server's model when one is configured (agreement raises the confidence, disagreement lowers it). evaluation_type boolean (result), confidence (result and confidence, the default) or detailed (with the reasoning, the evidence and both verdicts). The same call within 5 s is answered from a cache.",
        annotations: Annotations::READ_ONLY,
        input_schema: include_str!("../../../schema/flowmind/evaluate_semantic_condition.input.json"),
        output_schema: Some(include_str!("../../../schema/flowmind/response.output.json")),
        timeout_ms: 5_000,
        roles: &[],
        handler: evaluate_semantic_condition,
        rate_limit: Some(Limit { capacity: 100, period_ms: 60_000 }),
        level: Some(Level::Intermediate),
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "execute_workflow",
        title: "Execute a workflow (FlowMind)",
        description: "Execute a specific FlowMind workflow. Use this when you know exactly which workflow to run, either from field_request results or user specification. Give workflow_uri and initial_variables (every required variable). The workflow's steps run as a chain execution of this session: execution_mode interactive pauses when a step needs input (MCP sampling or the server's model answer it otherwise), autonomous never pauses for input (refused without a model), step_confirm pauses for approval before each step. constraints.require_approval_for (external_api_calls, file_modifications, context_switches, or step names) makes those steps wait for approval in any mode; confidence_level below the workflow's confidence_required (or confidence_override) confirms every step and refuses autonomous mode. Continue a paused run with session_id plus step_outputs or approval. Independent steps run in parallel. 20 calls a minute; 5 open (running or paused) workflows per caller, over all their sessions.",
        annotations: Annotations { read_only: false, destructive: false, idempotent: false, open_world: false },
        input_schema: include_str!("../../../schema/flowmind/execute_workflow.input.json"),
        output_schema: Some(include_str!("../../../schema/flowmind/response.output.json")),
        timeout_ms: 610_000,
        roles: &[],
        handler: execute_workflow,
        state: SessionState::Run { starts: true, drives: true, pauses: false, addressed_by: Some("session_id") },
        rate_limit: Some(Limit { capacity: 20, period_ms: 60_000 }),
        level: Some(Level::Intermediate),
        task: TaskSupport::Optional(TaskRun::Linked(
            crate::tools::chains::in_background_as_task,
            workflow_task_answer,
        )),
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "compose_workflow",
        title: "Compose a workflow (FlowMind)",
        description: "Compose a custom workflow from multiple contexts. Use for complex multi-domain scenarios. Every component URI must exist in the catalog; roles (primary, support, validation, synthesis) and flow_type decide the order: sequential, parallel (synthesis components run last), conditional (a component's when is a condition over the variables, such as urgency == 'critical') or iterative (repeated configuration.iterations times, default 2). Returns the steps and the chain they run as; save: true stores it as workflow://<name>, which field_request finds and execute_workflow runs.",
        annotations: Annotations { read_only: false, destructive: false, idempotent: false, open_world: false },
        input_schema: include_str!("../../../schema/flowmind/compose_workflow.input.json"),
        output_schema: Some(include_str!("../../../schema/flowmind/response.output.json")),
        timeout_ms: 15_000,
        roles: &[],
        handler: compose_workflow,
        level: Some(Level::Advanced),
        ..ToolDef::DEFAULTS
    },
];
