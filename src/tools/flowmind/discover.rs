//! `list_available_contexts` (browse the catalog) and `get_help` (errors, usage, best practices,
//! concepts), both answered from the catalog and the registry.

use std::cmp::Ordering;

use crate::tools::strings;
use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use super::catalog::{self, Catalog, Context, DOMAINS};
use super::field_request;
use super::request::Args;
use super::{codes, performance, visible_to};
use crate::clock;
use crate::registry::{Registry, ToolContext, ToolOutput, ToolResult};

/// The half-life, in days, of a context's popularity in the `relevance` order.
const RELEVANCE_HALF_LIFE_DAYS: f64 = 90.0;

/// Days from `iso` (an ISO 8601 date-time) to `now_ms`; `None` when it does not parse.
fn age_days(iso: &str, now_ms: f64) -> Option<f64> {
    let date = chrono::NaiveDate::parse_from_str(iso.get(..10)?, "%Y-%m-%d").ok()?;
    let then = date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis() as f64;
    Some(((now_ms - then) / 86_400_000.0).max(0.0))
}

/// The `relevance` of a context: its popularity (log-scaled) halved every
/// [`RELEVANCE_HALF_LIFE_DAYS`] since its last use; never used, it has none.
pub fn relevance(c: &Context, now_ms: f64) -> f64 {
    let Some(age) = c.last_used_at.as_deref().and_then(|t| age_days(t, now_ms)) else {
        return 0.0;
    };
    (1.0 + c.popularity.max(0) as f64).ln() * 0.5f64.powf(age / RELEVANCE_HALF_LIFE_DAYS)
}

/// The `result` of `list_available_contexts` for `args` over the contexts `visible` lets through.
pub fn list(
    catalog: &Catalog,
    args: &Value,
    visible: &dyn Fn(&Context) -> bool,
    now_ms: f64,
) -> Value {
    let filter = args.get("filter");
    let types = strings(filter.and_then(|f| f.get("type")).unwrap_or(&Value::Null));
    let domains = strings(filter.and_then(|f| f.get("domain")).unwrap_or(&Value::Null));
    let tags: Vec<String> = strings(filter.and_then(|f| f.get("tags")).unwrap_or(&Value::Null))
        .into_iter()
        .map(|t| t.to_lowercase())
        .collect();
    let complexity = filter
        .and_then(|f| f.get("complexity"))
        .and_then(Value::as_str);
    let mut found: Vec<&Context> = catalog
        .contexts
        .iter()
        .filter(|c| visible(c))
        .filter(|c| types.is_empty() || types.contains(&c.kind))
        .filter(|c| domains.is_empty() || domains.contains(&c.domain))
        .filter(|c| tags.is_empty() || c.tags.iter().any(|t| tags.contains(&t.to_lowercase())))
        .filter(|c| complexity.is_none_or(|x| c.complexity == x))
        .collect();

    let by = args
        .pointer("/sort/by")
        .and_then(Value::as_str)
        .unwrap_or("relevance");
    let order = args
        .pointer("/sort/order")
        .and_then(Value::as_str)
        .unwrap_or(if by == "name" { "asc" } else { "desc" });
    let by_name = |a: &&Context, b: &&Context| a.name.cmp(&b.name).then(a.uri.cmp(&b.uri));
    let key = |a: &&Context, b: &&Context| -> Ordering {
        match by {
            "name" => by_name(a, b),
            "popularity" => a.popularity.cmp(&b.popularity),
            "recent" => a.last_used_at.cmp(&b.last_used_at),
            _ => relevance(a, now_ms).total_cmp(&relevance(b, now_ms)),
        }
    };
    crate::engine::sort::sort_by(&mut found, |a, b| {
        let o = key(a, b);
        let o = if order == "asc" { o } else { o.reverse() };
        // Ties read A to Z whatever the order, so pages are stable.
        o.then_with(|| by_name(a, b))
    });

    let total = found.len();
    let offset = args
        .pointer("/pagination/offset")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    let limit = args
        .pointer("/pagination/limit")
        .and_then(Value::as_u64)
        .unwrap_or(20) as usize;
    let page: Vec<Value> = found
        .iter()
        .skip(offset)
        .take(limit)
        .map(|c| {
            let mut s = c.summary();
            if by == "relevance" {
                s["relevance"] = json!((relevance(c, now_ms) * 1000.0).round() / 1000.0);
            }
            s
        })
        .collect();
    let end = (offset + page.len()).min(total);
    let mut by_domain = serde_json::Map::new();
    for d in DOMAINS {
        let n = found.iter().filter(|c| c.domain == d).count();
        if n > 0 {
            by_domain.insert(d.into(), json!(n));
        }
    }
    let mut by_type = serde_json::Map::new();
    for t in ["workflow", "agent", "pattern", "tool"] {
        let n = found.iter().filter(|c| c.kind == t).count();
        if n > 0 {
            by_type.insert(t.into(), json!(n));
        }
    }
    json!({
        "contexts": page,
        "total": total,
        "offset": offset,
        "limit": limit,
        "returned": page.len(),
        "has_more": end < total,
        "next_offset": (end < total).then_some(end),
        "sort": { "by": by, "order": order },
        "facets": { "domain": by_domain, "type": by_type },
    })
}

/// `list_available_contexts`'s handler.
pub fn list_available_contexts(
    ctx: &dyn ToolContext,
    args: Value,
) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let started = clock::now_ms();
        let (catalog, _) = catalog::load(ctx).await?;
        let caller = ctx.caller();
        let visible = visible_to(ctx.platform().registry(), &caller);
        let search_started = clock::now_ms();
        let result = list(&catalog, &args, &visible, clock::now_ms());
        let search_ms = clock::now_ms() - search_started;
        let total = result["total"].as_u64().unwrap_or(0);
        let returned = result["returned"].as_u64().unwrap_or(0);
        let mut next_actions = Vec::new();
        if let Some(first) = result["contexts"].get(0) {
            if first["type"] != "tool" {
                next_actions.push(json!({
                    "tool": "field_request",
                    "reason": "Describe the user's need to get a ranked, calibrated match and what it still needs",
                    "parameters": {
                        "query": first["example_requests"].get(0).cloned().unwrap_or_else(|| first["description"].clone()),
                        "extracted_variables": { "domain": first["domain"] },
                        "confidence_level": 0.6,
                    },
                }));
            }
        }
        if let Some(next) = result["next_offset"].as_u64() {
            let mut again = args.clone();
            if !again.is_object() {
                again = json!({});
            }
            again["pagination"] = json!({ "offset": next, "limit": result["limit"] });
            next_actions.push(json!({ "tool": "list_available_contexts", "reason": "The next page", "parameters": again }));
        }
        let body = json!({
            "success": true,
            "result": result,
            "teaching": {
                "tip": if total == 0 { "No context passes these filters: drop a filter (tags are the narrowest) and list again." } else { "Browsing shows what exists; field_request ranks it against a specific need and tells you what is missing." },
                "pattern": "list_available_contexts to explore → field_request to choose → execute_workflow to run",
                "confidence_calibration": "Not measured: listing makes no match. field_request compares your confidence with the match you get.",
            },
            "next_actions": next_actions,
            "_performance": performance(started, search_ms),
        });
        Ok(ToolOutput::Described {
            value: body,
            summary: format!("{returned} of {total} contexts"),
        })
    })
}

/// An error FlowMind (or the server) gives, and how to get past it.
struct KnownError {
    code: &'static str,
    /// The tool whose call the fix's example is merged into, when the fix is such a call.
    tool: Option<&'static str>,
    /// Lower-case fragments of its message, for errors given as text.
    phrases: &'static [&'static str],
    explanation: &'static str,
    instruction: &'static str,
    example: fn() -> Value,
    why: &'static str,
}

/// What `get_help` explains: every code of [`codes::ALL`] (a test holds it to that list) and the
/// server's own refusals a FlowMind caller meets.
const ERRORS: [KnownError; 25] = [
    KnownError {
        code: codes::INVALID_VARIABLES,
        tool: Some("field_request"),
        phrases: &["requires technology", "requires domain", "technical domain"],
        explanation: "The extracted variables break one of field_request's consistency rules: a technical domain needs technology, and a critical or emergency urgency needs a domain.",
        instruction: "Add the variable the message names to extracted_variables (technology for technical requests, domain for critical ones).",
        example: || json!({ "extracted_variables": { "domain": "technical", "technology": "python" } }),
        why: "Technical workflows are organized by technology stack, and urgent requests are routed by domain first.",
    },
    KnownError {
        code: codes::QUERY_TOO_BRIEF,
        tool: Some("field_request"),
        phrases: &["too brief"],
        explanation: "The query has fewer than 3 words or 10 characters, too little to match on.",
        instruction: "Say what the user wants, why, or how, in one or two sentences.",
        example: || json!({ "query": "Our Postgres database is slow after the last migration; find the cause" }),
        why: "Matching compares words with each context's name, tags and example requests; one or two words match everything weakly.",
    },
    KnownError {
        code: codes::QUERY_TOO_LONG,
        tool: Some("field_request"),
        phrases: &["at most 500"],
        explanation: "The query is longer than 500 characters.",
        instruction: "Summarise the need in the query and describe large content in content_reference (has_large_content, content_summary, key_entities).",
        example: || json!({ "query": "Review this contract for GDPR issues", "content_reference": { "has_large_content": true, "content_summary": "A 12-page data processing agreement", "key_entities": ["sub-processors"] } }),
        why: "A long query blurs the intent the matcher looks for.",
    },
    KnownError {
        code: codes::CONFIDENCE_INCONSISTENT,
        tool: Some("field_request"),
        phrases: &["high for", "high confidence with few"],
        explanation: "confidence_level is above 0.9 but fewer than 3 variables were extracted.",
        instruction: "Lower confidence_level to what the evidence supports, or extract more variables.",
        example: || json!({ "confidence_level": 0.7 }),
        why: "Above a context's confidence_required a match may run without asking; that should rest on what the user actually said.",
    },
    KnownError {
        code: codes::INVALID_CONFIDENCE,
        tool: Some("field_request"),
        phrases: &["confidence_level is required", "outside 0..1", "confidence_level must be"],
        explanation: "confidence_level is missing, not a number, or outside 0 to 1.",
        instruction: "Send confidence_level as a number from 0 to 1.",
        example: || json!({ "confidence_level": 0.6 }),
        why: "Each context has a confidence_required; yours decides whether a match can run.",
    },
    KnownError {
        code: codes::MISSING_QUERY,
        tool: Some("field_request"),
        phrases: &["query is required"],
        explanation: "field_request was called without a query.",
        instruction: "Add a query of one or two sentences.",
        example: || json!({ "query": "Plan a one-week family trip to Lisbon on a budget", "confidence_level": 0.6 }),
        why: "The query is what is matched.",
    },
    KnownError {
        code: codes::INVALID_INPUT,
        tool: None,
        phrases: &["do not match field_request's schema", "invalid arguments", "must be a json object"],
        explanation: "An argument does not match the tool's input schema (a wrong type, a value outside its enum, an unknown property).",
        instruction: "Correct the named argument; get_help with help_type usage shows each tool's arguments and values.",
        example: || json!({ "help_type": "usage", "specific_question": "field_request" }),
        why: "Variables with fixed values are compared exactly; anything else cannot match.",
    },
    KnownError {
        code: "RATE_LIMITED",
        tool: None,
        phrases: &["rate limit"],
        explanation: "The caller used up a tool's rate limit for now.",
        instruction: "Wait the number of seconds the message gives, then call again; meanwhile, reuse the answers you already have.",
        example: || json!({}),
        why: "Limits keep one caller from starving the others.",
    },
    KnownError {
        code: "UNKNOWN_TOOL",
        tool: None,
        phrases: &["unknown tool"],
        explanation: "The tool named is not one this caller may use (it does not exist, or the caller's roles do not allow it).",
        instruction: "Call tools/list and use a name it shows.",
        example: || json!({ "method": "tools/list" }),
        why: "A tool the caller may not use is as absent as one that does not exist.",
    },
    KnownError {
        code: codes::MISSING_VARIABLES,
        tool: Some("execute_workflow"),
        phrases: &["initial_variables lacks"],
        explanation: "execute_workflow was called without a required variable of the workflow (absent, null or blank).",
        instruction: "Ask the user for each variable the message names and pass the answers in initial_variables.",
        example: || json!({ "workflow_uri": "workflow://code-review", "initial_variables": { "technology": "Rust", "code_reference": "PR 42" } }),
        why: "A workflow's first steps read its required variables; without them it would run on guesses.",
    },
    KnownError {
        code: codes::WORKFLOW_NOT_FOUND,
        tool: Some("execute_workflow"),
        phrases: &["no context "],
        explanation: "The workflow_uri names no context of the catalog.",
        instruction: "Use a URI field_request or list_available_contexts returned.",
        example: || json!({ "workflow_uri": "workflow://incident-response" }),
        why: "execute_workflow runs only workflows the catalog holds.",
    },
    KnownError {
        code: codes::AUTONOMOUS_UNAVAILABLE,
        tool: Some("execute_workflow"),
        phrases: &["autonomous mode needs a model"],
        explanation: "autonomous mode never pauses, but no model can carry out the steps: the client did not declare MCP sampling and the server has no MODEL_PROVIDER_URL.",
        instruction: "Run it in interactive mode and supply each step's outputs, or connect with a client that declares sampling.",
        example: || json!({ "workflow_uri": "workflow://code-review", "execution_mode": "interactive" }),
        why: "Every step of an autonomous run must be answerable without asking the caller.",
    },
    KnownError {
        code: codes::UNKNOWN_COMPONENTS,
        tool: Some("compose_workflow"),
        phrases: &["not in the catalog:"],
        explanation: "compose_workflow was given component URIs the catalog does not hold.",
        instruction: "Find each component with field_request or list_available_contexts and use the URIs they return.",
        example: || json!({ "components": [{ "uri": "workflow://incident-response", "role": "primary" }, { "uri": "pattern://stakeholder-update", "role": "support" }] }),
        why: "A composed workflow is made only of contexts that exist.",
    },
    KnownError {
        code: codes::NAME_TAKEN,
        tool: Some("compose_workflow"),
        phrases: &["already exists in the catalog"],
        explanation: "compose_workflow with save: true named a workflow that already exists.",
        instruction: "Choose another name; saved contexts are never overwritten.",
        example: || json!({ "name": "review-and-debug-2", "save": true }),
        why: "Other callers may rely on the saved workflow as it is.",
    },
    KnownError {
        code: codes::NOT_EXECUTABLE,
        tool: None,
        phrases: &["has no steps to run"],
        explanation: "execute_workflow was given a context with nothing to run: a tool:// context (workflows run their steps; agents and patterns run as one step that applies them).",
        instruction: "Call a tool:// context's tool directly, or run one of the workflows that involve it (get_help with help_type concept and its URI shows them).",
        example: || json!({ "help_type": "concept", "specific_question": "tool://search_flights" }),
        why: "A tool context is one tool of this server; it has no steps for the chain engine to run.",
    },
    KnownError {
        code: codes::COMPLEXITY_ABOVE_LEVEL,
        tool: Some("field_request"),
        phrases: &["runs contexts up to"],
        explanation: "Each FlowMind level runs contexts up to a complexity (the seed's max_complexity): a beginner simple ones, intermediate up to moderate, advanced up to expert. execute_workflow was given a context above the caller's. field_request offers only contexts the caller's level allows and lists the others it would have matched in guidance.above_your_level, with the level each opens at.",
        instruction: "Run a context your level allows (field_request finds them), or do the complex workflow's steps yourself with its description; each successful FlowMind call counts towards the next level.",
        example: || json!({ "query": "<the user's request, with what, why and how>", "confidence_level": 0.7 }),
        why: "Callers practise on simpler workflows before running complex and expert ones.",
    },
    KnownError {
        code: "TOOL_LOCKED",
        tool: Some("field_request"),
        phrases: &["is locked: it needs flowmind level"],
        explanation: "FlowMind unlocks its tools by level (progressive authorization): a beginner has field_request and get_help; intermediate adds execute_workflow and evaluate_semantic_condition; advanced has every FlowMind tool. The error's guidance gives the level needed and the caller's successful calls so far.",
        instruction: "Keep using the tools you have (field_request, get_help): each successful FlowMind call counts towards the next level, and the call that reaches it carries _unlocks. Meanwhile, do the step yourself with what field_request returned.",
        example: || json!({ "query": "<the user's request, with what, why and how>", "confidence_level": 0.7 }),
        why: "Callers learn the simple tools before the ones that run or compose workflows.",
    },
    KnownError {
        code: codes::INVALID_CONSTRAINTS,
        tool: Some("execute_workflow"),
        phrases: &["neither an action"],
        explanation: "An entry of constraints.require_approval_for is neither an action (external_api_calls, file_modifications, context_switches) nor the name of one of the workflow's steps.",
        instruction: "Keep only actions and step names in constraints.require_approval_for; the message names each wrong entry and lists the workflow's steps.",
        example: || json!({ "constraints": { "require_approval_for": ["external_api_calls"] } }),
        why: "Each entry gates the steps that do that action, or the step it names; an entry that matches nothing would gate nothing.",
    },
    KnownError {
        code: codes::CONFIDENCE_LEVEL_NEEDED,
        tool: Some("execute_workflow"),
        phrases: &["has no confidence_level"],
        explanation: "execute_workflow got a confidence_override but no confidence_level to compare with its thresholds.",
        instruction: "Add confidence_level: your confidence (0-1) that this workflow fits, as field_request reported it (matches[].activation.your_confidence; field_request's next_action pre-fills it).",
        example: || json!({ "confidence_level": 0.8, "confidence_override": { "min_confidence": 0.7 } }),
        why: "An override without a confidence to compare would change nothing.",
    },
    KnownError {
        code: codes::CONFIDENCE_TOO_LOW,
        tool: Some("execute_workflow"),
        phrases: &["runs autonomously only with confidence"],
        explanation: "An autonomous run was asked for with a confidence_level below the workflow's confidence_required (or confidence_override.min_confidence).",
        instruction: "Confirm with the user that this is the right workflow and run it in step_confirm or interactive mode (below the threshold every step is confirmed); if the user explicitly asked for it, confidence_override.min_confidence may lower the bar.",
        example: || json!({ "execution_mode": "step_confirm" }),
        why: "A workflow's confidence_required is the confidence needed to act without asking.",
    },
    KnownError {
        code: codes::TOO_MANY_OPEN_WORKFLOWS,
        tool: None,
        phrases: &["workflows open (at most"],
        explanation: "The caller already has 5 workflow runs open. They are counted per caller: a signed-in user's runs over all their MCP sessions and 2026-07-28 requests together, an anonymous caller's in its session. Paused runs count until they complete, fail, time out or are cancelled.",
        instruction: "Finish a paused run (execute_workflow with its workflow_uri and session_id) or stop one with cancel_chain and its execution id (the message lists them, oldest first), then start the new one. A 2025 session reaches only its own runs; a 2026-07-28 request reaches every run the user started on that lane.",
        example: || json!({ "execution_id": "exec-0123456789abcdef0123456789abcdef", "reason": "making room for another workflow" }),
        why: "At most five workflow runs per caller may be under way or paused at once; a sixth is refused with guidance rather than queued.",
    },
    KnownError {
        code: codes::WORKFLOW_FAILED,
        tool: Some("execute_workflow"),
        phrases: &[],
        explanation: "The workflow's run ended failed: a step could not produce its outputs (the step's reason says why).",
        instruction: "Read result.steps (or get_chain_status) for the failed step's reason, fix what it lacked (usually a variable or an output), and start the workflow again.",
        example: || json!({ "execution_mode": "interactive" }),
        why: "A run stops at the first step that fails rather than going on with missing outputs.",
    },
    KnownError {
        code: codes::WORKFLOW_TIMED_OUT,
        tool: Some("execute_workflow"),
        phrases: &["ran past its time limit"],
        explanation: "The workflow's run took longer than constraints.max_duration_ms (300000 when not set; time paused is not counted), so no further step started.",
        instruction: "Start it again with a larger constraints.max_duration_ms (at most 600000), or in interactive mode so slow steps pause for you.",
        example: || json!({ "constraints": { "max_duration_ms": 600000 } }),
        why: "The deadline bounds what one run may cost.",
    },
    KnownError {
        code: codes::WORKFLOW_CANCELLED,
        tool: Some("execute_workflow"),
        phrases: &["was rejected", "client closed the stream"],
        explanation: "The workflow's run was stopped: a step was rejected at an approval, cancel_chain stopped it, or (2026-07-28) its caller closed the response stream.",
        instruction: "Nothing more runs; start the workflow again if it is still wanted (approve the steps this time, or keep the stream open until the answer).",
        example: || json!({ "execution_mode": "step_confirm" }),
        why: "A cancelled run rolls back what it can and gives its slot back.",
    },
    KnownError {
        code: codes::INVALID_COMPOSITION,
        tool: Some("compose_workflow"),
        phrases: &["listed twice", "no component has role primary", "which only flow_type conditional uses"],
        explanation: "compose_workflow's components cannot make a workflow that runs: a component listed twice, no primary, a when condition outside flow_type conditional, a condition that does not compile, too many iterations or steps.",
        instruction: "Fix each problem the message lists and compose again.",
        example: || json!({ "flow_type": "conditional", "components": [{ "uri": "workflow://incident-response", "role": "primary" }, { "uri": "pattern://stakeholder-update", "role": "support", "when": "affected_users > 100" }] }),
        why: "A composed workflow is checked by the chain planner before it is saved, so it never fails at run time for its shape.",
    },
];

/// Example calls of the FlowMind tools, for `usage` help.
fn example(tool: &str) -> Option<Value> {
    Some(match tool {
        "field_request" => json!({
            "query": "Our checkout API has been returning 500 errors since this morning's deploy and customers cannot pay.",
            "extracted_variables": { "domain": "technical", "technology": "nodejs", "system_component": "checkout api", "urgency": "critical" },
            "confidence_level": 0.8,
        }),
        "list_available_contexts" => json!({
            "filter": { "domain": ["regulatory"], "type": ["workflow"] },
            "sort": { "by": "popularity" },
            "pagination": { "limit": 5 },
        }),
        "execute_workflow" => json!({
            "workflow_uri": "workflow://code-review",
            "initial_variables": { "technology": "Rust", "code_reference": "PR 42" },
            "execution_mode": "interactive",
        }),
        "compose_workflow" => json!({
            "name": "review-and-debug",
            "components": [{ "uri": "workflow://code-review", "role": "primary" }, { "uri": "agent://debugger", "role": "validation" }],
            "flow_type": "sequential",
            "save": true,
        }),
        "get_help" => {
            json!({ "help_type": "error", "context": { "error_message": "INVALID_VARIABLES" } })
        }
        _ => return None,
    })
}

const BEST_PRACTICES: [(&str, &str); 7] = [
    ("Summarise, do not paste", "Give field_request a 1-2 sentence query with the task and its subject; describe large content in content_reference."),
    ("Domain first", "Always extract domain; then the domain's key variables (technical: technology, error_type, system_component; creative: creative_type, genre, audience; business: business_area, stakeholder_count; regulatory: jurisdiction, compliance_type)."),
    ("Be honest about confidence", "confidence_level is compared with each context's confidence_required to decide whether it can run; 0.9+ needs at least 3 variables the user stated. Read teaching.confidence_calibration to calibrate."),
    ("Follow the status", "success: run next_action; disambiguation_needed: ask the questions (each names the variable it captures) and search again; refinement_suggested: add specifics; no_matches: rephrase or browse; content_processing_required: summarise the content first."),
    ("Fill what is missing", "Each match lists variables.missing; ask the user for those before running it."),
    ("Browse when unsure", "list_available_contexts with domain and type filters shows what exists; sort by popularity for the common paths."),
    ("Use the errors", "Errors carry a fix with an example; get_help with help_type error explains any code."),
];

const CONCEPTS: [(&str, &[&str], &str); 9] = [
    ("context", &["context", "uri", "catalog"], "A context is something FlowMind can route a request to, named by a URI: workflow:// (a multi-step procedure that runs as a chain), agent:// (a specialist role), pattern:// (a reusable way of working) or tool:// (one tool of this server)."),
    ("workflow", &["workflow", "chain", "steps"], "A workflow is a context with steps; execute_workflow runs it on the chain engine, pausing for missing input in interactive mode."),
    ("confidence", &["confidence", "calibrat", "probability"], "Each match has a confidence in [0, 1] from a logistic model over text similarity (BM25F), similarity relative to the best hit, variable alignment and domain agreement, fitted on a labelled set so that 0.8 is right about 4 times in 5; with a Workers AI binding, bge-small embedding similarity is blended into the text similarity. At 0.6 and above the status is success, from 0.4 to 0.6 refinement_suggested, below 0.4 no_matches. Your confidence_level is compared with a context's confidence_required to decide can_execute."),
    ("disambiguation", &["disambiguat", "ambiguous", "question"], "When the best matches are too close to choose between, the status is disambiguation_needed and each question names the variable its answer captures; add the answers to extracted_variables and search again."),
    ("status", &["status", "refinement", "no_matches", "no match"], "field_request answers success (act on the first match), disambiguation_needed (ask, then search again), refinement_suggested (something fits weakly, confidence 0.4 to 0.6: add specifics), no_matches (nothing fits) or content_processing_required (summarise the referenced content first)."),
    ("domain", &["domain"], "Every context belongs to one of six domains: technical, creative, business, regulatory, personal, emergency. The caller's domain raises matches in it and lowers the others."),
    ("variables", &["variable", "extract", "missing"], "Contexts declare required and optional variables. Variables you extract raise the match (required ones count fully, optional ones half) and are passed to execute_workflow as initial_variables."),
    ("activation", &["activation", "can_execute", "confidence_required"], "A context's activation condition says when it applies; can_execute is true when your confidence_level reaches its confidence_required (riskier contexts ask for more)."),
    ("teaching", &["teaching", "tip", "next_action", "degraded", "_performance", "_metadata"], "Every answer teaches: teaching (tip, pattern, confidence_calibration), next_actions with pre-filled parameters, and _performance timings. degraded: true means matching ran without the embedding model, and degraded_reason says why (no Workers AI binding, or it failed or was slow)."),
];

fn lower(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or_default().to_lowercase()
}

/// The `result` of `get_help` for `args`.
pub fn help(
    catalog: &Catalog,
    registry: &Registry,
    args: &Value,
    visible: &dyn Fn(&Context) -> bool,
) -> Value {
    let question = args
        .get("specific_question")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let q = question.to_lowercase();
    let action = lower(args.pointer("/context/attempted_action"));
    match args["help_type"].as_str().unwrap_or_default() {
        "error" => {
            let message = args
                .pointer("/context/error_message")
                .and_then(Value::as_str)
                .unwrap_or(question);
            let m = message.to_lowercase();
            let known = ERRORS
                .iter()
                .find(|e| message.contains(e.code))
                .or_else(|| {
                    ERRORS
                        .iter()
                        .find(|e| e.phrases.iter().any(|p| m.contains(p)))
                });
            match known {
                Some(e) => json!({
                    "topic": "error",
                    "code": e.code,
                    "explanation": e.explanation,
                    "fix": { "instruction": e.instruction, "example": (e.example)(), "why": e.why, "tool": e.tool },
                }),
                None => json!({
                    "topic": "error",
                    "code": Value::Null,
                    "explanation": if message.is_empty() {
                        "No error was given: pass it as context.error_message (the code, such as INVALID_VARIABLES, or the message text).".to_string()
                    } else {
                        format!("{message:?} is not an error FlowMind knows. Errors name what was wrong and what to do: re-read the message's last sentence for the fix.")
                    },
                    "known_codes": ERRORS.iter().map(|e| e.code).collect::<Vec<_>>(),
                }),
            }
        }
        "usage" => {
            let named: Vec<&str> = registry
                .tools()
                .map(|t| t.def.name)
                .filter(|n| q.contains(n) || action.contains(n))
                .collect();
            let tools: Vec<&str> = if named.is_empty() {
                super::TOOLS.iter().map(|d| d.name).collect()
            } else {
                named
            };
            let usage: Vec<Value> = tools
                .iter()
                .filter_map(|n| registry.get(n))
                .map(|t| {
                    json!({
                        "tool": t.def.name,
                        "description": t.def.description,
                        "input_schema": t.input_schema(),
                        "example": example(t.def.name),
                    })
                })
                .collect();
            json!({ "topic": "usage", "tools": usage })
        }
        "best_practices" => {
            let mut domains = serde_json::Map::new();
            for d in DOMAINS {
                domains.insert(
                    d.into(),
                    json!(catalog
                        .contexts
                        .iter()
                        .filter(|c| c.domain == d && visible(c))
                        .count()),
                );
            }
            json!({
                "topic": "best_practices",
                "practices": BEST_PRACTICES.iter().map(|(t, d)| json!({ "practice": t, "detail": d })).collect::<Vec<_>>(),
                "contexts_per_domain": domains,
            })
        }
        _ => {
            let uri = question
                .split_whitespace()
                .map(|w| {
                    w.trim_matches(|c: char| {
                        !c.is_alphanumeric() && c != ':' && c != '/' && c != '-' && c != '_'
                    })
                })
                .find_map(|w| catalog.get(w).filter(|c| visible(c)));
            if let Some(c) = uri {
                return json!({
                    "topic": "concept",
                    "concept": "context",
                    "context": c.summary(),
                    "explanation": format!("{} is a {} of the {} domain. {} It applies when: {}", c.uri, c.kind, c.domain, c.description, c.activation_condition),
                    "how_to_run": c.next_action(&serde_json::Map::new(), None),
                });
            }
            let concept = |(name, _, text): &(&str, &[&str], &str)| json!({ "concept": name, "explanation": text });
            let hits: Vec<Value> = CONCEPTS
                .iter()
                .filter(|(_, keys, _)| keys.iter().any(|k| q.contains(k)))
                .map(concept)
                .collect();
            let related: Vec<Value> = if q.split_whitespace().count() >= 2 {
                let a = Args::read(&json!({ "query": question, "confidence_level": 0.0 }));
                field_request::search(catalog, &a, visible)
                    .candidates
                    .iter()
                    .filter(|c| c.confidence >= crate::engine::matcher::Thresholds::default().no_match)
                    .take(3)
                    .map(|c| json!({ "uri": catalog.contexts[c.entry].uri, "name": catalog.contexts[c.entry].name }))
                    .collect()
            } else {
                Vec::new()
            };
            // No concept named: all of them.
            let concepts = if hits.is_empty() {
                CONCEPTS.iter().map(concept).collect()
            } else {
                hits
            };
            json!({ "topic": "concept", "concepts": concepts, "related_contexts": related })
        }
    }
}

/// `get_help`'s handler.
pub fn get_help(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let started = clock::now_ms();
        let (catalog, _) = catalog::load(ctx).await?;
        let caller = ctx.caller();
        let registry = ctx.platform().registry();
        let visible = visible_to(registry, &caller);
        let search_started = clock::now_ms();
        let result = help(&catalog, registry, &args, &visible);
        let search_ms = clock::now_ms() - search_started;
        let topic = result["topic"].as_str().unwrap_or("help").to_string();
        let next_actions = match topic.as_str() {
            "error" => match (
                result.pointer("/fix/tool").and_then(Value::as_str),
                result.pointer("/fix/example"),
            ) {
                (Some(tool), Some(e)) if e.as_object().is_some_and(|o| !o.is_empty()) => {
                    vec![json!({
                        "tool": tool,
                        "reason": "Call again with the fix applied (merge the example into your arguments)",
                        "parameters": e,
                    })]
                }
                _ => vec![
                    json!({ "tool": "get_help", "reason": "Argument reference of every FlowMind tool", "parameters": { "help_type": "usage" } }),
                ],
            },
            _ => vec![json!({
                "tool": "field_request",
                "reason": "Find the context for the user's need",
                "parameters": example("field_request"),
            })],
        };
        let body = json!({
            "success": true,
            "result": result,
            "teaching": {
                "tip": "Errors carry their own fix; get_help explains the why and the rules behind it.",
                "pattern": "error → get_help(error) → apply fix.example → call again",
                "confidence_calibration": "Not measured: help makes no match. field_request compares your confidence with the match you get.",
            },
            "next_actions": next_actions,
            "_performance": performance(started, search_ms),
        });
        Ok(ToolOutput::Described {
            value: body,
            summary: format!("FlowMind help: {topic}"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools;

    fn catalog() -> Catalog {
        let rows: Vec<Value> =
            serde_json::from_str(include_str!("../../../data/flowmind/contexts.json")).unwrap();
        catalog::build(0, &rows, &registry())
    }

    fn registry() -> Registry {
        Registry::new(tools::catalog(tools::Catalog::Production)).unwrap()
    }

    /// `list` over the whole catalog, as a caller who may see everything.
    fn list_all(c: &Catalog, args: Value) -> Value {
        list(c, &args, &|_: &Context| true, NOW)
    }

    /// `help` as a caller who may see everything.
    fn help_all(c: &Catalog, r: &Registry, args: Value) -> Value {
        help(c, r, &args, &|_: &Context| true)
    }

    /// The `key` of every context a listing returned, as `read` reads it.
    fn each<'a, T>(listing: &'a Value, key: &str, read: fn(&'a Value) -> Option<T>) -> Vec<T> {
        let contexts = listing["contexts"].as_array().unwrap();
        contexts.iter().map(|x| read(&x[key]).unwrap()).collect()
    }

    const NOW: f64 = 1_795_651_200_000.0; // 2026-11-24

    #[test]
    fn every_registered_tool_is_a_tool_context() {
        let c = catalog();
        let r = registry();
        for t in r.tools() {
            let ctx = c.get(&format!("tool://{}", t.def.name)).expect(t.def.name);
            assert_eq!(ctx.kind, "tool");
        }
        let fr = c.get("tool://field_request").unwrap();
        assert_eq!(fr.required, vec!["query", "confidence_level"]);
    }

    #[test]
    fn filters_sort_and_pages_with_totals() {
        let c = catalog();
        let r = list_all(
            &c,
            json!({ "filter": { "domain": ["regulatory"], "type": ["workflow"] }, "pagination": { "limit": 5 } }),
        );
        let total = r["total"].as_u64().unwrap() as usize;
        assert_eq!(
            total,
            c.contexts
                .iter()
                .filter(|x| x.domain == "regulatory" && x.kind == "workflow")
                .count()
        );
        assert_eq!(r["returned"], 5);
        assert_eq!(r["has_more"], true);
        assert_eq!(r["next_offset"], 5);
        let rest = list_all(
            &c,
            json!({ "filter": { "domain": ["regulatory"], "type": ["workflow"] }, "pagination": { "offset": 5, "limit": 50 } }),
        );
        assert_eq!(rest["returned"].as_u64().unwrap() as usize, total - 5);
        assert_eq!(rest["has_more"], false);
        assert!(rest["next_offset"].is_null());

        let by_name = list_all(
            &c,
            json!({ "sort": { "by": "name" }, "pagination": { "limit": 50 } }),
        );
        let names: Vec<&str> = each(&by_name, "name", Value::as_str);
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "name sorts A to Z by default");

        let pop = list_all(
            &c,
            json!({ "sort": { "by": "popularity", "order": "asc" }, "filter": { "type": ["workflow"] } }),
        );
        let p: Vec<i64> = each(&pop, "popularity", Value::as_i64);
        assert!(p.windows(2).all(|w| w[0] <= w[1]), "{p:?}");

        let tagged = list_all(
            &c,
            json!({ "filter": { "tags": ["GDPR"], "complexity": "complex" } }),
        );
        for x in tagged["contexts"].as_array().unwrap() {
            assert!(x["tags"].as_array().unwrap().iter().any(|t| t == "gdpr"));
            assert_eq!(x["complexity"], "complex");
        }
        let rel = list_all(&c, json!({}));
        let scores: Vec<f64> = each(&rel, "relevance", Value::as_f64);
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
        assert_eq!(rel["sort"], json!({ "by": "relevance", "order": "desc" }));
    }

    #[test]
    fn relevance_decays_with_time_since_last_use() {
        let mut a = catalog().contexts[0].clone();
        a.popularity = 100;
        a.last_used_at = Some("2026-11-24T00:00:00Z".into());
        let fresh = relevance(&a, NOW);
        a.last_used_at = Some("2026-08-26T00:00:00Z".into());
        let old = relevance(&a, NOW);
        assert!((old - fresh / 2.0).abs() < 0.01, "{fresh} {old}");
        a.last_used_at = None;
        assert_eq!(relevance(&a, NOW), 0.0);
    }

    #[test]
    fn help_explains_errors_by_code_or_text() {
        let c = catalog();
        let r = registry();
        let h = help_all(
            &c,
            &r,
            json!({ "help_type": "error", "context": { "error_message": "INVALID_VARIABLES" } }),
        );
        assert_eq!(h["code"], "INVALID_VARIABLES");
        assert!(h["fix"]["example"]["extracted_variables"]["technology"].is_string());
        let h = help_all(
            &c,
            &r,
            json!({ "help_type": "error", "context": { "error_message": "Rate limit reached for tool field_request: 60 calls per 60 s per caller. Try again in 3 s." } }),
        );
        assert_eq!(h["code"], "RATE_LIMITED");
        for (message, code) in [
            (
                "No context workflow://x exists in the catalog.",
                "WORKFLOW_NOT_FOUND",
            ),
            ("workflow://x already exists in the catalog.", "NAME_TAKEN"),
            ("Not in the catalog: agent://ghost.", "UNKNOWN_COMPONENTS"),
            ("MISSING_VARIABLES", "MISSING_VARIABLES"),
            (
                "You have 5 workflows open (at most 5 per caller, over all your sessions): exec-1.",
                "TOO_MANY_OPEN_WORKFLOWS",
            ),
            (
                "workflow://code-review runs autonomously only with confidence 0.8 (its confidence_required); your confidence_level is 0.5.",
                "CONFIDENCE_TOO_LOW",
            ),
            (
                "constraints.require_approval_for[0] is \"deploy\", which is neither an action (external_api_calls) nor a step of workflow://x (a)",
                "INVALID_CONSTRAINTS",
            ),
            ("cancelled: step 'merge' was rejected", "WORKFLOW_CANCELLED"),
        ] {
            let h = help_all(&c, &r, json!({ "help_type": "error", "context": { "error_message": message } }));
            assert_eq!(h["code"], code, "{message}");
        }
        let h = help_all(
            &c,
            &r,
            json!({ "help_type": "error", "context": { "error_message": "the flux capacitor melted" } }),
        );
        assert!(h["code"].is_null());
        assert!(h["known_codes"].as_array().unwrap().len() >= 5);
    }

    /// Every code a FlowMind tool can answer with gets its own explanation, and a fix whose
    /// example is made of the arguments of the tool it names.
    #[test]
    fn help_explains_every_code_the_tools_emit() {
        let c = catalog();
        let r = registry();
        for code in codes::ALL {
            let h = help_all(
                &c,
                &r,
                json!({ "help_type": "error", "context": { "error_message": code } }),
            );
            assert_eq!(
                h["code"], code,
                "get_help does not explain {code}: add it to ERRORS"
            );
            for text in [
                &h["explanation"],
                &h["fix"]["instruction"],
                &h["fix"]["why"],
            ] {
                assert!(text.as_str().is_some_and(|t| t.len() > 20), "{code}: {h}");
            }
            let example = h["fix"]["example"].as_object().expect("an object example");
            if let Some(tool) = h["fix"]["tool"].as_str() {
                let schema = r.get(tool).expect("a registered tool").input_schema();
                for key in example.keys() {
                    assert!(
                        schema["properties"].get(key).is_some(),
                        "{code}: {key} is not an argument of {tool}"
                    );
                }
            }
        }
    }

    #[test]
    fn help_on_usage_concepts_and_practices() {
        let c = catalog();
        let r = registry();
        let h = help_all(
            &c,
            &r,
            json!({ "help_type": "usage", "specific_question": "how do I call list_available_contexts?" }),
        );
        let tools = h["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0]["tool"], "list_available_contexts");
        assert!(tools[0]["input_schema"]["properties"]["filter"].is_object());
        assert!(tools[0]["example"].is_object());
        let h = help_all(&c, &r, json!({ "help_type": "usage" }));
        assert_eq!(
            h["tools"].as_array().unwrap().len(),
            super::super::TOOLS.len()
        );
        let h = help_all(
            &c,
            &r,
            json!({ "help_type": "concept", "specific_question": "what does disambiguation mean?" }),
        );
        assert_eq!(h["concepts"][0]["concept"], "disambiguation");
        let h = help_all(
            &c,
            &r,
            json!({ "help_type": "concept", "specific_question": "what is workflow://incident-response?" }),
        );
        assert_eq!(h["context"]["uri"], "workflow://incident-response");
        assert_eq!(h["how_to_run"]["tool"], "execute_workflow");
        let h = help_all(&c, &r, json!({ "help_type": "best_practices" }));
        assert!(h["practices"].as_array().unwrap().len() >= 5);
        assert_eq!(h["contexts_per_domain"]["emergency"], 12);
    }
}
