//! The `execute_workflow` tool: checks the call against the workflow and its constraints, starts
//! or continues the workflow's chain execution ([`super::workflow`]), and answers with where the
//! run got to in the seed's response pattern.
//!
//! **Approvals.** `constraints.require_approval_for` lists the seed's actions
//! (`external_api_calls`, `file_modifications`, `context_switches`) or names of the workflow's
//! steps; a step that performs a listed action (as it declares: see `workflow`) or is named gets
//! a confirmation before it, in every mode. An entry that is neither is refused.
//!
//! **Confidence.** `confidence_level` is the caller's confidence that this workflow fits (as
//! `field_request` reported it). The workflow's `confidence_required` is the confidence needed to
//! act without asking; `confidence_override.min_confidence` replaces it, and
//! `confidence_override.require_confirmation_below` sets the confidence under which steps need
//! confirmation (the threshold itself when absent). An autonomous run below the threshold is
//! refused; any run below the confirmation level confirms every step. An override without a
//! confidence_level has nothing to compare with and is refused.
//!
//! **Concurrency.** At most [`MAX_OPEN`] workflow runs of one caller (a signed-in user across all
//! their MCP sessions; an anonymous caller's session) may be open at once, running or paused: each
//! holds a lease in the caller's `RateLimiter` object from its start until it ends, whichever way
//! (`chains::Lease`), lapsing [`LEASE_TTL_MS`] after it last moved.

use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

use super::workflow::{self, Mode, APPROVED, CONFIRM_PREFIX};
use super::{catalog, codes, levels, performance, teach};
use crate::clock;
use crate::error::Result;
use crate::limiter::{self, leases::LeaseRequest};
use crate::registry::{ToolContext, ToolError, ToolOutput, ToolResult};
use crate::tools::chains;

/// At most this many workflow runs of one caller may be open (running or paused) at once (seed
/// 001: `concurrent: 5`).
pub const MAX_OPEN: u32 = 5;

/// What the caller's concurrency leases of workflow runs are counted as.
const LEASE_KIND: &str = "execute_workflow";

/// How long a run's lease lasts after it last moved: longer than a session may stay idle (24 h by
/// default) before it ends and cancels its runs, so it only lapses for a run whose end was lost.
pub const LEASE_TTL_MS: u64 = 25 * 3_600_000;

/// `max_duration_ms` when the call sets none (the seed's default).
const DEFAULT_DURATION_MS: u64 = 300_000;

/// `max_steps` when the call sets none (the seed's default): steps past it are confirmed.
const DEFAULT_MAX_STEPS: u64 = 50;

const PATTERN: &str = "field_request → execute_workflow(workflow_uri, initial_variables) → answer each pause with session_id and step_outputs (or approval) until completed";

const CALIBRATION: &str =
    "Not measured here: execute_workflow runs a workflow you chose; field_request calibrates confidence.";

/// A refusal in the educational error format: nothing was started or changed.
fn refuse(
    started: f64,
    code: &str,
    message: String,
    instruction: String,
    example: Value,
    why: &str,
    next_actions: Vec<Value>,
) -> ToolOutput {
    let summary = format!("{code}: {message}");
    ToolOutput::Described {
        value: json!({
            "success": false,
            "error": {
                "code": code,
                "message": message,
                "fix": { "instruction": instruction, "example": example, "why": why },
            },
            "guidance": { "what_to_do": instruction },
            "partial_results": { "message": "Nothing was run: the call was refused before the workflow started.", "blocked_by": code },
            "teaching": { "tip": instruction, "pattern": PATTERN, "confidence_calibration": CALIBRATION },
            "next_actions": next_actions,
            "_performance": performance(started, 0.0),
        }),
        summary,
    }
}

/// The confidence rules of one run whose call gave a confidence_level.
struct Confidence {
    /// The caller's confidence_level.
    yours: f64,
    /// The confidence needed to act without asking.
    threshold: f64,
    /// Below it, every step is confirmed.
    confirm_below: f64,
    /// Whether confidence_override changed either.
    overridden: bool,
}

impl Confidence {
    fn view(&self, required: f64) -> Value {
        json!({
            "your_confidence": self.yours,
            "confidence_required": required,
            "min_confidence": self.threshold,
            "require_confirmation_below": self.confirm_below,
            "overridden": self.overridden,
            "steps_confirmed": self.yours < self.confirm_below,
        })
    }
}

/// Asks `owner`'s rate limiter for lease `id`; `Ok(None)` when granted, `Ok(Some(holders))` when
/// the caller already has [`MAX_OPEN`] runs open.
async fn acquire(
    ctx: &dyn ToolContext,
    owner: &str,
    id: &str,
    admitted: bool,
) -> Result<Option<Vec<String>>> {
    let request = LeaseRequest::Acquire {
        kind: LEASE_KIND.into(),
        id: id.into(),
        max: MAX_OPEN,
        ttl_ms: LEASE_TTL_MS,
        admitted,
    };
    let answer = ctx.platform().lease(owner, &request).await?;
    Ok((!answer.allowed).then_some(answer.holders))
}

/// The holders of `owner`'s leases whose runs are still open (`id`, and `owner`: the session
/// that started it), oldest first, after giving back the leases of runs whose records say they
/// ended. A holder without a record yet is a run still starting, and stays.
async fn open_holders(
    ctx: &dyn ToolContext,
    owner: &str,
    holders: &[String],
) -> Result<Vec<Value>> {
    let records = ctx
        .query(
            "SELECT id, owner, status FROM chain_executions
             WHERE id IN (SELECT value FROM json_each(?1))",
            vec![json!(serde_json::to_string(holders)?)],
        )
        .await?;
    let mut open = Vec::new();
    for h in holders {
        match records.iter().find(|r| r["id"] == h.as_str()) {
            Some(r) if !matches!(r["status"].as_str(), Some("running" | "awaiting_input")) => {
                let request = LeaseRequest::Release {
                    kind: LEASE_KIND.into(),
                    id: h.clone(),
                };
                ctx.platform().lease(owner, &request).await?;
            }
            Some(r) => open.push(json!({ "id": h, "owner": r["owner"] })),
            None => open.push(json!({ "id": h, "owner": null })),
        }
    }
    Ok(open)
}

fn with(args: &Value, key: &str, value: Value) -> Value {
    let mut a = args.clone();
    if let Some(o) = a.as_object_mut() {
        o.remove("session_id");
        o.remove("step_outputs");
        o.remove("approval");
        o.insert(key.to_string(), value);
    }
    a
}

/// Whether some model can produce a step's outputs during this call.
fn has_model(ctx: &dyn ToolContext) -> bool {
    ctx.client_capabilities().get("sampling").is_some()
        || ctx.platform().setting("MODEL_PROVIDER_URL").is_some()
}

/// The `execute_workflow` tool.
pub fn execute_workflow(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let started = clock::now_ms();
        let uri = args["workflow_uri"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if let Some(id) = args.get("session_id").and_then(Value::as_str) {
            return continue_run(ctx, &args, &uri, id, started).await;
        }
        let (catalog, _) = catalog::load(ctx).await?;
        let Some(c) = catalog.get(&uri) else {
            return Ok(refuse(
                started,
                codes::WORKFLOW_NOT_FOUND,
                format!("No context {uri} exists in the catalog."),
                "Find the workflow with field_request (or browse list_available_contexts) and use the workflow_uri it returns.".into(),
                json!({ "workflow_uri": "workflow://incident-response" }),
                "execute_workflow runs only workflows the catalog holds.",
                vec![
                    json!({ "tool": "field_request", "reason": "Find the workflow that fits the request", "parameters": { "query": format!("<what the user wants> (you asked for {uri})"), "confidence_level": 0.5 } }),
                    json!({ "tool": "list_available_contexts", "reason": "Browse the workflows", "parameters": { "filter": { "type": ["workflow"] } } }),
                ],
            ));
        };
        if let Some(level) = levels::of_caller(ctx)
            .await
            .filter(|l| !levels::within(*l, &c.complexity))
        {
            let needed = levels::level_for(&c.complexity);
            return Ok(refuse(
                started,
                codes::COMPLEXITY_ABOVE_LEVEL,
                format!(
                    "{uri} is {} and FlowMind level {} runs contexts up to {} (max_complexity); it opens at level {}.",
                    c.complexity,
                    level.as_str(),
                    level.max_complexity(),
                    needed.as_str()
                ),
                format!(
                    "Run a context of at most {} complexity: field_request offers only those at your level (its guidance.above_your_level lists what opens later). Each successful FlowMind call counts towards level {}.",
                    level.max_complexity(),
                    needed.as_str()
                ),
                json!({ "query": format!("<the user's request> (a simpler way than {uri})"), "confidence_level": 0.6 }),
                "FlowMind's progressive authorization holds each level to a maximum complexity, so callers run simpler workflows before complex ones.",
                vec![
                    json!({ "tool": "field_request", "reason": format!("Find a context your level runs (at most {})", level.max_complexity()), "parameters": { "query": format!("<the user's request> (a simpler way than {uri})"), "confidence_level": 0.6 } }),
                    json!({ "tool": "get_help", "reason": "Explains levels and max_complexity", "parameters": { "help_type": "error", "context": { "error_message": codes::COMPLEXITY_ABOVE_LEVEL } } }),
                ],
            ));
        }
        let steps = workflow::runnable_steps(c);
        if steps.is_empty() {
            return Ok(refuse(
                started,
                codes::NOT_EXECUTABLE,
                format!("{uri} is a {} context: it has no steps to run.", c.kind),
                format!("Call {uri}'s tool directly, or follow its guidance (get_help shows it)."),
                json!({ "help_type": "concept", "specific_question": uri }),
                "Only workflow:// contexts have steps; agents and patterns describe how to work.",
                vec![
                    json!({ "tool": "get_help", "reason": format!("What {uri} is and how to use it"), "parameters": { "help_type": "concept", "specific_question": uri } }),
                ],
            ));
        }
        let mode = Mode::parse(args.get("execution_mode").and_then(Value::as_str));
        let vars: Map<String, Value> = args
            .get("initial_variables")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();

        let missing = workflow::missing_required(c, &vars);
        if !missing.is_empty() {
            let mut fixed = vars.clone();
            for m in &missing {
                fixed.insert(m.clone(), json!(format!("<{}>", teach::question(m))));
            }
            let questions: Vec<String> = missing.iter().map(|m| teach::question(m)).collect();
            return Ok(refuse(
                started,
                codes::MISSING_VARIABLES,
                format!(
                    "{uri} needs {} before it can start; initial_variables lacks {}.",
                    c.required.join(", "),
                    missing.join(", ")
                ),
                format!(
                    "Ask the user: {} Then call again with the answers in initial_variables.",
                    questions.join(" ")
                ),
                json!({ "initial_variables": fixed }),
                "Its first steps read these variables; without them the run would produce guesses.",
                vec![
                    json!({ "tool": "execute_workflow", "reason": format!("Call again with {} supplied", missing.join(", ")), "parameters": with(&args, "initial_variables", json!(fixed)) }),
                ],
            ));
        }

        let constraints = args.get("constraints").cloned().unwrap_or(json!({}));
        let max_steps = constraints["max_steps"]
            .as_u64()
            .unwrap_or(DEFAULT_MAX_STEPS);
        let gated = crate::tools::strings(&constraints["require_approval_for"]);
        let unknown = workflow::unknown_approvals(&steps, &gated, &uri);
        if !unknown.is_empty() {
            let mut fixed = constraints.clone();
            let kept: Vec<&String> = gated
                .iter()
                .filter(|g| {
                    workflow::ACTIONS.contains(&g.as_str()) || steps.iter().any(|s| &s.name == *g)
                })
                .collect();
            fixed["require_approval_for"] = json!(kept);
            return Ok(refuse(
                started,
                codes::INVALID_CONSTRAINTS,
                unknown.join("; "),
                format!(
                    "List in constraints.require_approval_for only actions ({}) or names of {uri}'s steps.",
                    workflow::ACTIONS.join(", ")
                ),
                json!({ "constraints": { "require_approval_for": ["context_switches", steps[0].name] } }),
                "Each entry gates the steps that do that action, or the step it names; an entry that matches nothing would gate nothing.",
                vec![json!({ "tool": "execute_workflow", "reason": "Call again with the entries that exist", "parameters": with(&args, "constraints", fixed) })],
            ));
        }

        let overrides = args
            .get("confidence_override")
            .cloned()
            .unwrap_or(json!({}));
        let min = overrides["min_confidence"].as_f64();
        let below = overrides["require_confirmation_below"].as_f64();
        let yours = args.get("confidence_level").and_then(Value::as_f64);
        if yours.is_none() && (min.is_some() || below.is_some()) {
            return Ok(refuse(
                started,
                codes::CONFIDENCE_LEVEL_NEEDED,
                "confidence_override sets the thresholds your confidence_level is compared with, but the call has no confidence_level.".into(),
                "Add confidence_level: your confidence (0-1) that this workflow fits the request, as field_request's matches[].activation.your_confidence reported it.".into(),
                json!({ "confidence_level": 0.8, "confidence_override": overrides }),
                "An override without a confidence to compare would change nothing.",
                vec![json!({ "tool": "execute_workflow", "reason": "Call again with your confidence", "parameters": with(&args, "confidence_level", json!(c.confidence_required)) })],
            ));
        }
        let confidence = yours.map(|yours| {
            let threshold = min.unwrap_or(c.confidence_required);
            Confidence {
                yours,
                threshold,
                confirm_below: below.unwrap_or(threshold),
                overridden: min.is_some() || below.is_some(),
            }
        });

        if mode == Mode::Autonomous {
            if !has_model(ctx) {
                return Ok(refuse(
                    started,
                    codes::AUTONOMOUS_UNAVAILABLE,
                    format!("autonomous mode needs a model to carry out {uri}'s {} steps, and there is none: your client did not declare MCP sampling and the server has no MODEL_PROVIDER_URL.", steps.len()),
                    "Run it in interactive mode and supply each step's outputs when it pauses, or connect with a client that declares the sampling capability.".into(),
                    json!({ "execution_mode": "interactive" }),
                    "An autonomous run never pauses, so every step must be answerable by a model.",
                    vec![json!({ "tool": "execute_workflow", "reason": "Run it interactively", "parameters": with(&args, "execution_mode", json!("interactive")) })],
                ));
            }
            if let Some(k) = confidence.as_ref().filter(|k| k.yours < k.threshold) {
                let source = if min.is_some() {
                    "confidence_override.min_confidence"
                } else {
                    "its confidence_required"
                };
                return Ok(refuse(
                    started,
                    codes::CONFIDENCE_TOO_LOW,
                    format!("{uri} runs autonomously only with confidence {} ({source}); your confidence_level is {}.", k.threshold, k.yours),
                    "Confirm with the user that this is the right workflow, then run it in step_confirm mode (each step approved) or interactive mode; if the user explicitly asked for it, confidence_override.min_confidence may lower the bar to your confidence.".into(),
                    json!({ "execution_mode": "step_confirm" }),
                    "A workflow's confidence_required is the confidence needed to act without asking.",
                    vec![
                        json!({ "tool": "execute_workflow", "reason": "Approve each step instead", "parameters": with(&args, "execution_mode", json!("step_confirm")) }),
                        json!({ "tool": "field_request", "reason": "Check that this is the workflow that fits", "parameters": { "query": format!("<the user's request> ({uri} was {})", k.yours), "confidence_level": k.yours } }),
                    ],
                ));
            }
        }

        let mut approvals = workflow::approvals_required(&steps, &gated);
        let also = |a: &mut Option<String>, why: &str| {
            *a = Some(match a.take() {
                Some(w) => format!("{w}; {why}"),
                None => why.to_string(),
            });
        };
        // Seed 001: max_steps is the most steps a run takes "before requiring confirmation", so
        // a longer workflow runs with each step past it confirmed, rather than being refused.
        for (i, a) in approvals.iter_mut().enumerate().skip(max_steps as usize) {
            let why = format!(
                "it is step {} of {}, past constraints.max_steps {max_steps}",
                i + 1,
                steps.len()
            );
            also(a, &why);
        }
        if let Some(k) = confidence.as_ref().filter(|k| k.yours < k.confirm_below) {
            let why = format!(
                "your confidence_level {} is below {} ({}), so every step is confirmed",
                k.yours,
                k.confirm_below,
                if below.is_some() {
                    "confidence_override.require_confirmation_below"
                } else if min.is_some() {
                    "confidence_override.min_confidence"
                } else {
                    "the workflow's confidence_required"
                }
            );
            for a in approvals.iter_mut() {
                also(a, &why);
            }
        }

        let owner = limiter::owner(&ctx.caller(), &ctx.session_id());
        let id = chains::new_execution_id()?;
        let lease = match acquire(ctx, &owner, &id, false).await {
            Ok(held) => {
                if let Some(holders) = held {
                    // Full: holders whose runs ended free their slots, and the next try may fit.
                    let open = open_holders(ctx, &owner, &holders).await?;
                    let retried = if open.len() < holders.len() {
                        acquire(ctx, &owner, &id, false).await?
                    } else {
                        Some(holders)
                    };
                    if retried.is_some() {
                        let reach = reachable(ctx, &open).await?;
                        let signed_in = ctx.caller().user.is_some();
                        return Ok(too_many(started, &uri, &open, &reach, signed_in));
                    }
                }
                Some(chains::Lease {
                    owner: owner.clone(),
                    kind: LEASE_KIND.into(),
                })
            }
            // Fail open, as rate limits do: the limiter guards capacity, it is not an access rule.
            Err(e) => {
                crate::log::error!("{}", json!({ "workflow_lease_unavailable": e.to_string() }));
                None
            }
        };
        let holds = lease.is_some();
        let def = workflow::chain_definition(c, mode, &approvals);
        let mut extra = json!({
            "approvals": steps.iter().zip(&approvals).filter_map(|(s, a)| a.as_ref().map(|why| json!({ "step": s.name, "why": why }))).collect::<Vec<_>>(),
        });
        if let Some(k) = &confidence {
            extra["confidence"] = k.view(c.confidence_required);
        }
        let how = chains::Linked {
            max_execution_ms: constraints["max_duration_ms"]
                .as_u64()
                .unwrap_or(DEFAULT_DURATION_MS),
            lease,
            background: args.get("in_background").and_then(Value::as_bool) == Some(true),
            kept: json!({ "arguments": args, "extra": extra }),
        };
        let begun = match catalog::record_use(ctx, &uri).await {
            Ok(()) => chains::run_linked(ctx, &id, &def, Value::Object(vars), how).await,
            Err(e) => Err(e),
        };
        if let Err(e) = begun {
            // A run that could not start gives its slot back at once (one that started and ended
            // gave it back itself).
            if holds {
                let request = LeaseRequest::Release {
                    kind: LEASE_KIND.into(),
                    id: id.clone(),
                };
                if let Err(le) = ctx.platform().lease(&owner, &request).await {
                    crate::log::error!("lease release {id}: {le}");
                }
            }
            return Err(e.into());
        }
        let out = answer(ctx, &args, &uri, mode, &id, started).await?;
        Ok(with_result(out, extra))
    })
}

/// The answer of run `id` as it stands, as the call that started it (whose arguments and extra
/// result fields are `kept`, as [`execute_workflow`] keeps them with the run) would give it: an
/// `execute_workflow` task's result (`registry::task::Render`).
pub async fn task_answer(ctx: &dyn ToolContext, id: &str, kept: &Value) -> ToolResult {
    let args = &kept["arguments"];
    let uri = args["workflow_uri"].as_str().unwrap_or_default();
    let mode = Mode::parse(args.get("execution_mode").and_then(Value::as_str));
    let out = answer(ctx, args, uri, mode, id, clock::now_ms()).await?;
    Ok(with_result(out, kept["extra"].clone()))
}

/// `out` with `extra`'s keys added to its `result`.
fn with_result(out: ToolOutput, extra: Value) -> ToolOutput {
    match out {
        ToolOutput::Described { mut value, summary } => {
            if let (Some(r), Some(e)) = (value["result"].as_object_mut(), extra.as_object()) {
                r.extend(e.clone());
            }
            ToolOutput::Described { value, summary }
        }
        other => other,
    }
}

/// Which open runs a refused start can offer to cancel.
struct Reach {
    /// The ids of the open runs (oldest first) this call's caller can continue or cancel from
    /// where the call runs.
    ids: Vec<String>,
    /// Whether the call runs in a 2026-07-28 run object rather than a 2025 session.
    run_object: bool,
}

/// The open runs (`open`, from [`open_holders`]) this call's caller can reach: a 2025 session
/// reaches the runs it started; a 2026-07-28 call runs in a run object of its own
/// (`stateless::runs`), and such a caller reaches every run that lives in a run object, by its
/// execution id, from any of their 2026-07-28 requests.
async fn reachable(ctx: &dyn ToolContext, open: &[Value]) -> Result<Reach> {
    let session = ctx.session_id();
    let mut sessions: Vec<&str> = open.iter().filter_map(|r| r["owner"].as_str()).collect();
    sessions.push(&session);
    let run_objects: Vec<String> = ctx
        .query(
            "SELECT session FROM run_objects WHERE session IN (SELECT value FROM json_each(?1))",
            vec![json!(serde_json::to_string(&sessions)?)],
        )
        .await?
        .iter()
        .filter_map(|r| r["session"].as_str().map(str::to_string))
        .collect();
    let run_object = run_objects.contains(&session);
    let ids = open
        .iter()
        .filter(|r| match r["owner"].as_str() {
            Some(owner) if run_object => run_objects.iter().any(|o| o == owner),
            Some(owner) => owner == session,
            None => false,
        })
        .filter_map(|r| r["id"].as_str().map(str::to_string))
        .collect();
    Ok(Reach { ids, run_object })
}

/// The refusal when the caller already has [`MAX_OPEN`] workflow runs open (`open`: their `id`
/// and `owner` session, oldest first; `reach`: those this call can cancel, see [`reachable`]).
fn too_many(started: f64, uri: &str, open: &[Value], reach: &Reach, signed_in: bool) -> ToolOutput {
    let ids: Vec<&str> = open.iter().filter_map(|r| r["id"].as_str()).collect();
    let here = reach.ids.first().map(String::as_str);
    let mut next = Vec::new();
    if let Some(id) = here {
        let reason = if reach.run_object {
            "Stop your oldest open workflow started by a 2026-07-28 request"
        } else {
            "Stop the oldest open workflow of this session"
        };
        next.push(json!({ "tool": "cancel_chain", "reason": reason, "parameters": { "execution_id": id, "reason": format!("making room for {uri}") } }));
        next.push(json!({ "tool": "get_chain_status", "reason": "See where it stands before stopping it", "parameters": { "execution_id": id } }));
    }
    refuse(
        started,
        codes::TOO_MANY_OPEN_WORKFLOWS,
        format!(
            "You have {} workflows open (at most {MAX_OPEN} per caller, {}): {}{}.",
            ids.len(),
            if signed_in { "over all your sessions and 2026-07-28 requests" } else { "counted in this session for a caller without a token" },
            ids.join(", "),
            if here.is_none() { "; none of them can be reached from here: continue or cancel one where it was started" } else { "" }
        ),
        "Finish a paused workflow (execute_workflow with its session_id, in the MCP session that started it; a 2026-07-28 request reaches every run started by a 2026-07-28 request) or stop one with cancel_chain, then start this one. Paused runs count until they end.".into(),
        json!({ "execution_id": here.or(ids.first().copied()) }),
        "At most five workflow runs per caller may be under way or paused at once (queue overflow is rejected with guidance).",
        next,
    )
}

/// The pause of the view's run: the paused steps (several when steps that run together all wait
/// for input; an approval always waits alone) and whether it waits for an approval.
fn pause(view: &Value) -> Option<(Vec<&Value>, bool)> {
    let paused: Vec<&Value> = view["steps"]
        .as_array()?
        .iter()
        .filter(|s| s["state"] == "awaiting_input")
        .collect();
    let confirm = paused.first()?["name"]
        .as_str()
        .is_some_and(|n| n.starts_with(CONFIRM_PREFIX));
    Some((paused, confirm))
}

/// The output variables paused steps wait for, in step order.
fn awaited(paused: &[&Value]) -> Vec<String> {
    paused
        .iter()
        .flat_map(|s| crate::tools::strings(&s["awaiting"]["output_variables"]))
        .collect()
}

async fn continue_run(
    ctx: &dyn ToolContext,
    args: &Value,
    uri: &str,
    id: &str,
    started: f64,
) -> ToolResult {
    let view = chains::status(ctx, id).await?;
    let chain = view["chain"].as_str().unwrap_or_default();
    let Some(mode) = Mode::of_chain(uri, chain) else {
        return Err(ToolError::failed(format!(
            "session_id {id} is not a run of {uri} (it runs chain '{chain}'); pass the workflow_uri it was started with"
        )));
    };
    let approval = args.get("approval").and_then(Value::as_str);
    let supplied = args.get("step_outputs").and_then(Value::as_object);
    if approval.is_none() && supplied.is_none() {
        return answer(ctx, args, uri, mode, id, started).await;
    }
    let Some((paused, confirm)) = pause(&view) else {
        return Err(ToolError::failed(format!(
            "session_id {id} is {}, not paused: there is nothing to approve or supply. Call with just workflow_uri and session_id to see its state.",
            view["status"].as_str().unwrap_or("unknown")
        )));
    };
    // The run goes on: its lease is renewed (taken back if it lapsed), so it keeps its slot.
    let owner = limiter::owner(&ctx.caller(), &ctx.session_id());
    if let Err(e) = acquire(ctx, &owner, id, true).await {
        crate::log::error!("{}", json!({ "workflow_lease_unavailable": e.to_string() }));
    }
    let step = paused[0];
    let name = step["name"].as_str().unwrap_or_default();
    if confirm {
        let var = step["awaiting"]["output_variables"][0]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match approval {
            Some("approve") => {
                let outputs = crate::engine::sort::object([(var, json!(APPROVED))]);
                chains::resume_here(ctx, id, &outputs).await?;
            }
            Some(_) => {
                let step = name.trim_start_matches(CONFIRM_PREFIX);
                chains::cancel(ctx, id, &format!("cancelled: step '{step}' was rejected"), 10_000)
                    .await?;
            }
            None => {
                return Err(ToolError::failed(format!(
                    "session_id {id} waits for approval of step '{}', not for step_outputs: pass approval: \"approve\" to run it or \"reject\" to stop the workflow",
                    name.trim_start_matches(CONFIRM_PREFIX)
                )))
            }
        }
    } else {
        let Some(outputs) = supplied else {
            return Err(ToolError::failed(format!(
                "session_id {id} waits for the outputs of step '{name}', not for an approval: pass step_outputs with {}",
                awaited(&paused).join(", ")
            )));
        };
        chains::resume_here(ctx, id, outputs).await?;
    }
    answer(ctx, args, uri, mode, id, started).await
}

/// The answer describing execution `id` of workflow `uri` as it stands.
async fn answer(
    ctx: &dyn ToolContext,
    args: &Value,
    uri: &str,
    mode: Mode,
    id: &str,
    started: f64,
) -> ToolResult {
    let view = chains::status(ctx, id).await?;
    let status = view["status"].as_str().unwrap_or("unknown").to_string();
    let mut outputs = Map::new();
    let mut steps = Vec::new();
    for s in view["steps"].as_array().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or_default();
        if let Some(o) = s["outputs"].as_object() {
            if !name.starts_with(CONFIRM_PREFIX) {
                outputs.extend(o.clone());
            }
        }
        steps.push(json!({
            "name": name,
            "kind": if name.starts_with(CONFIRM_PREFIX) { "confirmation" } else { "step" },
            "state": s["state"],
            "reason": s["reason"],
            "outputs": s["outputs"],
        }));
    }
    let mut result = json!({
        "session_id": id,
        "execution_id": id,
        "workflow_uri": uri,
        "execution_mode": mode.as_str(),
        "status": status,
        "steps_finished": view["steps_finished"],
        "steps_total": view["steps_total"],
        "steps": steps,
        "outputs": outputs,
    });
    let (tip, next_actions, summary) = match pause(&view) {
        Some((paused, true)) => {
            let step = paused[0];
            let name = step["name"].as_str().unwrap_or_default().trim_start_matches(CONFIRM_PREFIX);
            result["awaiting"] = json!({
                "kind": "confirmation",
                "step": name,
                "preview": step["awaiting"]["input"],
                "how_to_approve": format!("Call execute_workflow with workflow_uri {uri}, session_id {id} and approval \"approve\" to run step '{name}', or approval \"reject\" to stop the workflow."),
            });
            (
                format!("Show the user what step '{name}' will do and why it needs approval (awaiting.preview), and ask whether to go on."),
                vec![
                    json!({ "tool": "execute_workflow", "reason": format!("Approve step '{name}' and run it"), "parameters": { "workflow_uri": uri, "session_id": id, "approval": "approve" } }),
                    json!({ "tool": "execute_workflow", "reason": "Reject it: the workflow stops", "parameters": { "workflow_uri": uri, "session_id": id, "approval": "reject" } }),
                ],
                format!("{uri}: waiting for approval of step '{name}' (session_id {id})"),
            )
        }
        Some((paused, false)) => {
            let names: Vec<&str> = paused.iter().filter_map(|s| s["name"].as_str()).collect();
            let name = names.join("', '");
            let wanted = awaited(&paused);
            let template = crate::engine::sort::object(
                wanted.iter().map(|v| (v.clone(), json!(format!("<{v}>")))),
            );
            let step = paused[0];
            result["awaiting"] = json!({
                "kind": "input",
                "step": names[0],
                "instructions": step["awaiting"]["instructions"],
                "input": step["awaiting"]["input"],
                "supply": wanted,
            });
            if paused.len() > 1 {
                result["awaiting"]["steps"] = paused
                    .iter()
                    .map(|s| json!({ "step": s["name"], "input": s["awaiting"]["input"], "supply": s["awaiting"]["output_variables"] }))
                    .collect();
            }
            (
                format!("Carry out step '{name}' as awaiting says (with the user where needed) and supply {} as step_outputs, all in one call.", wanted.join(", ")),
                vec![
                    json!({ "tool": "execute_workflow", "reason": format!("Supply the outputs of step '{name}' and continue"), "parameters": { "workflow_uri": uri, "session_id": id, "step_outputs": template } }),
                    json!({ "tool": "cancel_chain", "reason": "Stop the workflow", "parameters": { "execution_id": id } }),
                ],
                format!("{uri}: step '{name}' waits for {} (session_id {id})", wanted.join(", ")),
            )
        }
        None if status == "completed" => (
            "Completed: present result.outputs to the user; field_request finds the next workflow if there is one.".to_string(),
            vec![json!({ "tool": "get_chain_status", "reason": "The full step report of this run", "parameters": { "execution_id": id } })],
            format!("{uri}: completed ({} steps)", view["steps_total"]),
        ),
        None if status == "running" => (
            "Still running (in the background, or another call is continuing it): ask again with session_id shortly.".to_string(),
            vec![json!({ "tool": "get_chain_status", "reason": "Follow the run", "parameters": { "execution_id": id } })],
            format!("{uri}: running (session_id {id})"),
        ),
        None => (
            format!("The run ended {status}: read result.steps for the reason, then start it again with what it lacked."),
            vec![
                json!({ "tool": "get_chain_status", "reason": "The full step report of this run", "parameters": { "execution_id": id } }),
                json!({ "tool": "execute_workflow", "reason": "Start it again", "parameters": with(args, "execution_mode", json!(mode.as_str())) }),
            ],
            format!("{uri}: {status} ({})", view["error"].as_str().unwrap_or("see result.steps")),
        ),
    };
    let ok = matches!(status.as_str(), "completed" | "awaiting_input" | "running");
    let mut body = json!({
        "success": ok,
        "result": result,
        "teaching": { "tip": tip, "pattern": PATTERN, "confidence_calibration": CALIBRATION },
        "next_actions": next_actions,
        "_performance": performance(started, 0.0),
    });
    if !ok {
        let message = view["error"]
            .as_str()
            .unwrap_or("the run did not complete")
            .to_string();
        body["error"] = json!({
            "code": codes::run_ended(&status),
            "message": message,
            "fix": { "instruction": tip, "example": with(args, "execution_mode", json!(mode.as_str())), "why": "The workflow's chain run ended before its last step." },
        });
        body["guidance"] = json!({ "what_to_do": tip });
        body["partial_results"] = json!({ "message": "Outputs of the steps that finished are in result.outputs.", "blocked_by": status });
    }
    Ok(ToolOutput::Described {
        value: body,
        summary,
    })
}
