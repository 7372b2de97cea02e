//! The `execute_workflow` tool: checks the call against the workflow and its constraints, starts
//! or continues the workflow's chain execution ([`super::workflow`]), and answers with where the
//! run got to in the seed's response pattern.

use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

use super::workflow::{self, Mode, APPROVED, CATEGORY};
use super::{catalog, performance, teach};
use crate::clock;
use crate::error::{Error, Result};
use crate::registry::{ToolContext, ToolOutput};
use crate::tools::chains;

/// At most this many workflow executions of one session may be open (running or paused) at once.
pub const MAX_OPEN: usize = 5;

/// `max_duration_ms` when the call sets none (the seed's default).
const DEFAULT_DURATION_MS: u64 = 300_000;

/// `max_steps` when the call sets none (the seed's default).
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
pub fn execute_workflow(
    ctx: &dyn ToolContext,
    args: Value,
) -> LocalBoxFuture<'_, Result<ToolOutput>> {
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
                "WORKFLOW_NOT_FOUND",
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
        let steps = workflow::steps(c);
        if c.kind != "workflow" || steps.is_empty() {
            return Ok(refuse(
                started,
                "NOT_EXECUTABLE",
                format!("{uri} is a{} {} context: it has no steps to run.", if c.kind == "agent" { "n" } else { "" }, c.kind),
                format!("Follow {uri}'s guidance yourself (get_help shows it), or run one of the workflows it involves."),
                json!({ "help_type": "concept", "specific_question": uri }),
                "Only workflow:// contexts have steps; agents and patterns describe how to work.",
                vec![json!({ "tool": "get_help", "reason": format!("What {uri} is and how to use it"), "parameters": { "help_type": "concept", "specific_question": uri } })],
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
                "MISSING_VARIABLES",
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
        if steps.len() as u64 > max_steps {
            return Ok(refuse(
                started,
                "MAX_STEPS_EXCEEDED",
                format!("{uri} has {} steps; constraints.max_steps allows {max_steps}.", steps.len()),
                format!("Raise constraints.max_steps to at least {}, or run it in step_confirm mode to approve each step.", steps.len()),
                json!({ "constraints": { "max_steps": steps.len() } }),
                "max_steps is the most steps a run may take without confirmation.",
                vec![
                    json!({ "tool": "execute_workflow", "reason": "Run it with a limit that fits", "parameters": with(&args, "constraints", json!({ "max_steps": steps.len(), "max_duration_ms": constraints.get("max_duration_ms") })) }),
                    json!({ "tool": "execute_workflow", "reason": "Approve each step instead", "parameters": with(&args, "execution_mode", json!("step_confirm")) }),
                ],
            ));
        }

        let overrides = args
            .get("confidence_override")
            .cloned()
            .unwrap_or(json!({}));
        if mode == Mode::Autonomous {
            if !has_model(ctx) {
                return Ok(refuse(
                    started,
                    "AUTONOMOUS_UNAVAILABLE",
                    format!("autonomous mode needs a model to carry out {uri}'s {} steps, and there is none: your client did not declare MCP sampling and the server has no MODEL_PROVIDER_URL.", steps.len()),
                    "Run it in interactive mode and supply each step's outputs when it pauses, or connect with a client that declares the sampling capability.".into(),
                    json!({ "execution_mode": "interactive" }),
                    "An autonomous run never pauses, so every step must be answerable by a model.",
                    vec![json!({ "tool": "execute_workflow", "reason": "Run it interactively", "parameters": with(&args, "execution_mode", json!("interactive")) })],
                ));
            }
            let min = overrides["min_confidence"].as_f64();
            let below = overrides["require_confirmation_below"].as_f64();
            if let Some(bad) = min
                .filter(|m| *m < c.confidence_required)
                .map(|m| ("min_confidence", m))
                .or_else(|| {
                    below
                        .filter(|b| *b > c.confidence_required)
                        .map(|b| ("require_confirmation_below", b))
                })
            {
                return Ok(refuse(
                    started,
                    "CONFIDENCE_TOO_LOW",
                    format!("{uri} needs confidence {} for autonomous decisions; confidence_override.{} {} does not allow running it without confirmation.", c.confidence_required, bad.0, bad.1),
                    "Run it in step_confirm mode, so each step is approved, or confirm with the user and drop the override.".into(),
                    json!({ "execution_mode": "step_confirm" }),
                    "A workflow's confidence_required is the confidence needed to act without asking.",
                    vec![json!({ "tool": "execute_workflow", "reason": "Approve each step instead", "parameters": with(&args, "execution_mode", json!("step_confirm")) })],
                ));
            }
        }

        let open = ctx
            .query(
                "SELECT e.id FROM chain_executions e JOIN execution_chains c ON c.id = e.chain_id
                 WHERE e.owner = ?1 AND e.status IN ('running', 'awaiting_input') AND c.category = ?2
                 ORDER BY e.started_at",
                vec![json!(ctx.session_id()), json!(CATEGORY)],
            )
            .await?;
        if open.len() >= MAX_OPEN {
            let ids: Vec<&str> = open.iter().filter_map(|r| r["id"].as_str()).collect();
            return Ok(refuse(
                started,
                "TOO_MANY_OPEN_WORKFLOWS",
                format!("This session has {} workflows open (at most {MAX_OPEN}): {}.", ids.len(), ids.join(", ")),
                "Finish a paused workflow (execute_workflow with its session_id) or stop one with cancel_chain, then start this one.".into(),
                json!({ "execution_id": ids.first() }),
                "At most five workflow runs per session may be under way or paused at once.",
                vec![json!({ "tool": "cancel_chain", "reason": "Stop the oldest open workflow", "parameters": { "execution_id": ids.first(), "reason": format!("making room for {uri}") } })],
            ));
        }

        let def = workflow::chain_definition(c, mode);
        let duration = constraints["max_duration_ms"]
            .as_u64()
            .unwrap_or(DEFAULT_DURATION_MS);
        let id = chains::run_linked(ctx, &def, Value::Object(vars), duration).await?;
        answer(ctx, &args, &uri, mode, &id, started).await
    })
}

/// The pause of the view's run: the paused step and whether it waits for an approval.
fn pause(view: &Value) -> Option<(&Value, bool)> {
    view["steps"]
        .as_array()?
        .iter()
        .find(|s| s["state"] == "awaiting_input")
        .map(|s| {
            let confirm = s["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("confirm-"));
            (s, confirm)
        })
}

async fn continue_run(
    ctx: &dyn ToolContext,
    args: &Value,
    uri: &str,
    id: &str,
    started: f64,
) -> Result<ToolOutput> {
    let view = chains::status(ctx, id).await?;
    let chain = view["chain"].as_str().unwrap_or_default();
    let mode = if chain == workflow::chain_name(uri, Mode::StepConfirm) {
        Mode::StepConfirm
    } else if chain == workflow::chain_name(uri, Mode::Interactive) {
        Mode::Interactive
    } else {
        return Err(Error::ToolFailed(format!(
            "session_id {id} is not a run of {uri} (it runs chain '{chain}'); pass the workflow_uri it was started with"
        )));
    };
    let approval = args.get("approval").and_then(Value::as_str);
    let supplied = args.get("step_outputs").and_then(Value::as_object);
    if approval.is_none() && supplied.is_none() {
        return answer(ctx, args, uri, mode, id, started).await;
    }
    let Some((step, confirm)) = pause(&view) else {
        return Err(Error::ToolFailed(format!(
            "session_id {id} is {}, not paused: there is nothing to approve or supply. Call with just workflow_uri and session_id to see its state.",
            view["status"].as_str().unwrap_or("unknown")
        )));
    };
    let name = step["name"].as_str().unwrap_or_default();
    if confirm {
        let var = step["awaiting"]["output_variables"][0]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match approval {
            Some("approve") => {
                let outputs: Map<String, Value> = [(var, json!(APPROVED))].into_iter().collect();
                chains::resume_here(ctx, id, &outputs).await?;
            }
            Some(_) => {
                let step = name.trim_start_matches("confirm-");
                chains::cancel(ctx, id, &format!("cancelled: step '{step}' was rejected"), 10_000)
                    .await?;
            }
            None => {
                return Err(Error::ToolFailed(format!(
                    "session_id {id} waits for approval of step '{}', not for step_outputs: pass approval: \"approve\" to run it or \"reject\" to stop the workflow",
                    name.trim_start_matches("confirm-")
                )))
            }
        }
    } else {
        let Some(outputs) = supplied else {
            return Err(Error::ToolFailed(format!(
                "session_id {id} waits for the outputs of step '{name}', not for an approval: pass step_outputs with {}",
                step["awaiting"]["output_variables"]
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
) -> Result<ToolOutput> {
    let view = chains::status(ctx, id).await?;
    let status = view["status"].as_str().unwrap_or("unknown").to_string();
    let mut outputs = Map::new();
    let mut steps = Vec::new();
    for s in view["steps"].as_array().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or_default();
        if let Some(o) = s["outputs"].as_object() {
            if !name.starts_with("confirm-") {
                outputs.extend(o.clone());
            }
        }
        steps.push(json!({
            "name": name,
            "kind": if name.starts_with("confirm-") { "confirmation" } else { "step" },
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
        Some((step, true)) => {
            let name = step["name"].as_str().unwrap_or_default().trim_start_matches("confirm-");
            result["awaiting"] = json!({
                "kind": "confirmation",
                "step": name,
                "preview": step["awaiting"]["input"],
            });
            (
                format!("Show the user what step '{name}' will do (awaiting.preview) and ask whether to go on."),
                vec![
                    json!({ "tool": "execute_workflow", "reason": format!("Approve step '{name}' and run it"), "parameters": { "workflow_uri": uri, "session_id": id, "approval": "approve" } }),
                    json!({ "tool": "execute_workflow", "reason": "Reject it: the workflow stops", "parameters": { "workflow_uri": uri, "session_id": id, "approval": "reject" } }),
                ],
                format!("{uri}: waiting for approval of step '{name}' (session_id {id})"),
            )
        }
        Some((step, false)) => {
            let name = step["name"].as_str().unwrap_or_default();
            let wanted: Vec<String> = step["awaiting"]["output_variables"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            let template: Map<String, Value> = wanted
                .iter()
                .map(|v| (v.clone(), json!(format!("<{v}>"))))
                .collect();
            result["awaiting"] = json!({
                "kind": "input",
                "step": name,
                "instructions": step["awaiting"]["instructions"],
                "input": step["awaiting"]["input"],
                "supply": wanted,
            });
            (
                format!("Carry out step '{name}' as awaiting.input says (with the user where needed) and supply {} as step_outputs.", wanted.join(", ")),
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
            "Still running (another call is continuing it): ask again with session_id shortly.".to_string(),
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
            "code": format!("WORKFLOW_{}", status.to_uppercase()),
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
