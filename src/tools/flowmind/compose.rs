//! `compose_workflow` (seed 001, "Advanced Tool: compose_workflow"): a new workflow made of
//! existing contexts, in the step format of the catalog's workflows, so `execute_workflow` runs it
//! like any other once it is saved.
//!
//! A workflow component contributes its steps (named `<component>-<step>`); an agent, pattern or
//! tool component contributes one step that applies it, with output `<component>_result`.
//! `flow_type` decides the order:
//! - `sequential`: every step after the one before it, in component order.
//! - `parallel`: each non-synthesis component starts at once (its own steps in order); the
//!   `synthesis` components run last, after the last step of every other component.
//! - `conditional`: sequential, and a component's `when` (a chain condition expression over the
//!   variables, such as `urgency == 'critical'`) guards each of its steps.
//! - `iterative`: the sequence is repeated `configuration.iterations` times (of the primary
//!   component; default 2, 1 to 5); later rounds' steps are named `…-r2`, `…-r3` and read the
//!   outputs of the round before.
//!
//! Every step records the component it comes from (`context`) and the actions it performs
//! (`actions`, which `execute_workflow`'s `constraints.require_approval_for` gates): a `tool://`
//! component's step `external_api_calls` when the tool reaches an outside service and
//! `file_modifications` when it changes stored data; a step that runs right after a step of
//! another component `context_switches`.

use std::collections::BTreeSet;

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

use super::catalog::{self, Context};
use super::workflow::{self, Mode};
use super::{codes, performance};
use crate::clock;
use crate::engine::chain::{self, ChainDef};
use crate::registry::{ToolContext, ToolOutput, ToolResult};
use crate::tools::strings;

/// The most steps a composed workflow may have (a chain's limit).
pub const MAX_STEPS: usize = 20;

/// One component as the call names it, with its context.
pub struct Component<'a> {
    /// The context.
    pub context: &'a Context,
    /// `primary`, `support`, `validation` or `synthesis`.
    pub role: String,
    /// Its condition (`conditional` flows).
    pub when: Option<String>,
    /// `configuration.iterations` (`iterative` flows, primary component).
    pub iterations: Option<u64>,
    /// What applying it does, of `workflow::ACTIONS` (a tool's: see [`tool_actions`]).
    pub actions: Vec<String>,
}

/// The actions of applying tool `t`: `external_api_calls` when it reaches an outside service
/// (`open_world`), `file_modifications` when it changes stored data (not read-only).
pub fn tool_actions(t: &crate::registry::Tool) -> Vec<String> {
    let a = t.def.annotations;
    let mut out = Vec::new();
    if a.open_world {
        out.push("external_api_calls".to_string());
    }
    if !a.read_only {
        out.push("file_modifications".to_string());
    }
    out
}

fn slug(uri: &str) -> String {
    uri.split_once("://")
        .map_or(uri, |(_, p)| p)
        .replace('/', "-")
}

/// The steps of one component, in the catalog's step format.
fn component_steps(c: &Component) -> Vec<Value> {
    let ctx = c.context;
    let s = slug(&ctx.uri);
    let own = workflow::steps(ctx);
    if !own.is_empty() {
        return own
            .iter()
            .map(|st| {
                let mut actions = st.actions.clone();
                actions.extend(c.actions.iter().filter(|a| !st.actions.contains(a)).cloned());
                json!({ "name": format!("{s}-{}", st.name), "instruction": st.instruction, "outputs": st.outputs, "context": ctx.uri, "actions": actions })
            })
            .collect();
    }
    let known: Vec<String> = ctx
        .required
        .iter()
        .map(|v| format!("{v}: {{{{{v}}}}}"))
        .collect();
    let mut instruction = format!(
        "Apply the {} {} ({}) as the {} of this workflow: {}",
        ctx.kind, ctx.name, ctx.uri, c.role, ctx.description
    );
    if !known.is_empty() {
        instruction.push_str(&format!(" Known: {}.", known.join(", ")));
    }
    vec![json!({
        "name": s,
        "instruction": instruction,
        "outputs": [format!("{}_result", s.replace('-', "_"))],
        "context": ctx.uri,
        "actions": c.actions,
    })]
}

/// Marks `context_switches` on every step that runs right after a step of another component: the
/// steps its `after` names, or else the step before it.
fn mark_switches(steps: &mut [Value]) {
    let contexts: Vec<(String, String)> = steps
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_string(),
                s["context"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for i in 0..steps.len() {
        let own = &contexts[i].1;
        let switches = match steps[i]["after"].as_array() {
            Some(after) => after.iter().filter_map(Value::as_str).any(|a| {
                contexts
                    .iter()
                    .any(|(name, context)| name == a && context != own)
            }),
            None => i > 0 && &contexts[i - 1].1 != own,
        };
        if switches {
            if let Some(actions) = steps[i]["actions"].as_array_mut() {
                if !actions.iter().any(|a| a == "context_switches") {
                    actions.push(json!("context_switches"));
                }
            }
        }
    }
}

/// The steps of a workflow composed of `components` in `flow`, or every problem.
pub fn compose(
    components: &[Component],
    flow: &str,
) -> std::result::Result<Vec<Value>, Vec<String>> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for c in components {
        if !seen.insert(c.context.uri.as_str()) {
            problems.push(format!(
                "{} is listed twice: each component may appear once",
                c.context.uri
            ));
        }
        if c.when.is_some() && flow != "conditional" {
            problems.push(format!(
                "{} has a when condition, which only flow_type conditional uses",
                c.context.uri
            ));
        }
    }
    if !components.iter().any(|c| c.role == "primary") {
        problems.push("no component has role primary: name the one the workflow is about".into());
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut steps: Vec<Value> = Vec::new();
    match flow {
        "parallel" => {
            let (synth, others): (Vec<&Component>, Vec<&Component>) =
                components.iter().partition(|c| c.role == "synthesis");
            let mut lasts = Vec::new();
            for c in others {
                let mut own = component_steps(c);
                if let Some(first) = own.first_mut() {
                    first["after"] = json!([]);
                }
                lasts.extend(own.last().map(|s| s["name"].clone()));
                steps.extend(own);
            }
            for c in synth {
                let mut own = component_steps(c);
                if let Some(first) = own.first_mut() {
                    first["after"] = json!(lasts);
                }
                steps.extend(own);
            }
        }
        "iterative" => {
            let rounds = components
                .iter()
                .find(|c| c.role == "primary")
                .and_then(|c| c.iterations)
                .unwrap_or(2);
            if !(1..=5).contains(&rounds) {
                return Err(vec![format!(
                    "configuration.iterations of the primary component is {rounds}; it must be 1 to 5"
                )]);
            }
            for r in 1..=rounds {
                for c in components {
                    for mut s in component_steps(c) {
                        if r > 1 {
                            s["name"] =
                                json!(format!("{}-r{r}", s["name"].as_str().unwrap_or_default()));
                        }
                        steps.push(s);
                    }
                }
            }
        }
        _ => {
            for c in components {
                for mut s in component_steps(c) {
                    if let Some(w) = &c.when {
                        s["when"] = json!(w);
                    }
                    steps.push(s);
                }
            }
        }
    }
    mark_switches(&mut steps);
    if steps.len() > MAX_STEPS {
        return Err(vec![format!(
            "the composition has {} steps; a workflow may have at most {MAX_STEPS}: drop a component or use fewer iterations",
            steps.len()
        )]);
    }
    Ok(steps)
}

fn unique(items: impl Iterator<Item = String>, except: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !except.contains(&i) && !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// The composed workflow as a catalog context (what `save` stores).
pub fn context(
    name: &str,
    description: &str,
    components: &[Component],
    flow: &str,
    steps: Vec<Value>,
    variables: Option<&Value>,
) -> Context {
    let produced = crate::engine::sort::set(steps.iter().flat_map(|s| strings(&s["outputs"])));
    // The variables `variables` lists under `key`, when it has that list.
    let listed = |key: &str| {
        let list = variables.and_then(|v| v.get(key)).filter(|l| l.is_array());
        list.map(strings)
    };
    let required = listed("required").unwrap_or_else(|| {
        unique(
            components.iter().flat_map(|c| c.context.required.clone()),
            &produced,
        )
    });
    let mut taken = produced.clone();
    taken.extend(required.iter().cloned());
    let optional = listed("optional").unwrap_or_else(|| {
        unique(
            components.iter().flat_map(|c| c.context.optional.clone()),
            &taken,
        )
    });
    let domain = components
        .iter()
        .find(|c| c.role == "primary")
        .or(components.first())
        .map_or_else(|| "personal".to_string(), |c| c.context.domain.clone());
    let uris: Vec<&str> = components.iter().map(|c| c.context.uri.as_str()).collect();
    let n = steps.len();
    Context {
        uri: format!("workflow://{name}"),
        kind: "workflow".into(),
        name: name.to_string(),
        description: if description.is_empty() {
            format!("Composed {flow} workflow of {}.", uris.join(", "))
        } else {
            description.to_string()
        },
        domain,
        tags: vec!["composed".into(), flow.to_string()],
        complexity: match n {
            0..=3 => "simple",
            4..=6 => "moderate",
            7..=12 => "complex",
            _ => "expert",
        }
        .into(),
        examples: Vec::new(),
        activation_condition: format!("The user's request needs {} together.", uris.join(", ")),
        confidence_required: components
            .iter()
            .map(|c| c.context.confidence_required)
            .fold(0.5, f64::max),
        required,
        optional,
        preview: json!({
            "type": format!("{flow}_workflow"),
            "estimated_steps": n.to_string(),
            "contexts_involved": uris,
            "stopping_condition": "Every step of every component has run",
        }),
        steps: Value::Array(steps),
        popularity: 0,
        last_used_at: None,
        created_at: String::new(),
    }
}

/// Every problem the chain planner finds in the chain `c` runs as (conditions that do not compile).
fn plan_problems(c: &Context) -> Vec<String> {
    let def = workflow::chain_definition(c, Mode::Interactive, &[]);
    match serde_json::from_value::<ChainDef>(def) {
        Ok(d) => chain::plan(&d).err().unwrap_or_default(),
        Err(e) => vec![e.to_string()],
    }
}

fn refuse(
    started: f64,
    code: &str,
    message: String,
    instruction: &str,
    example: Value,
    next_actions: Vec<Value>,
) -> ToolOutput {
    ToolOutput::Described {
        summary: format!("{code}: {message}"),
        value: json!({
            "success": false,
            "error": { "code": code, "message": message, "fix": { "instruction": instruction, "example": example, "why": "A composed workflow is made only of contexts the catalog holds, in a flow that can run." } },
            "guidance": { "what_to_do": instruction },
            "partial_results": { "message": "Nothing was composed or saved.", "blocked_by": code },
            "teaching": { "tip": instruction, "pattern": "field_request (find the parts) → compose_workflow(components with roles, flow_type, save: true) → execute_workflow", "confidence_calibration": "Not measured: compose_workflow does not match requests." },
            "next_actions": next_actions,
            "_performance": performance(started, 0.0),
        }),
    }
}

/// The `compose_workflow` tool.
pub fn compose_workflow(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let started = clock::now_ms();
        let name = args["name"].as_str().unwrap_or_default();
        let description = args["description"].as_str().unwrap_or_default();
        let flow = args["flow_type"].as_str().unwrap_or("sequential");
        let save = args["save"].as_bool().unwrap_or(false);
        let (catalog, _) = catalog::load(ctx).await?;
        let raw = args["components"].as_array().cloned().unwrap_or_default();
        let unknown: Vec<&str> = raw
            .iter()
            .filter_map(|c| c["uri"].as_str())
            .filter(|u| catalog.get(u).is_none())
            .collect();
        if !unknown.is_empty() {
            let first = unknown[0];
            let words = slug(first).replace('-', " ");
            return Ok(refuse(
                started,
                codes::UNKNOWN_COMPONENTS,
                format!("Not in the catalog: {}.", unknown.join(", ")),
                "Use the URIs field_request or list_available_contexts return; every component must exist.",
                json!({ "components": [{ "uri": "workflow://incident-response", "role": "primary" }, { "uri": "pattern://stakeholder-update", "role": "support" }] }),
                vec![
                    json!({ "tool": "field_request", "reason": format!("Find the context meant by {first}"), "parameters": { "query": format!("I need {words}"), "confidence_level": 0.5 } }),
                    json!({ "tool": "list_available_contexts", "reason": "Browse the catalog", "parameters": {} }),
                ],
            ));
        }
        let components: Vec<Component> = raw
            .iter()
            .filter_map(|c| {
                Some(Component {
                    context: catalog.get(c["uri"].as_str()?)?,
                    role: c["role"].as_str().unwrap_or("support").to_string(),
                    when: c["when"].as_str().map(str::to_string),
                    iterations: c["configuration"]["iterations"].as_u64(),
                    actions: c["uri"]
                        .as_str()
                        .and_then(|u| u.strip_prefix("tool://"))
                        .and_then(|name| ctx.platform().registry().get(name))
                        .map(tool_actions)
                        .unwrap_or_default(),
                })
            })
            .collect();
        let composed = compose(&components, flow).and_then(|steps| {
            let c = context(
                name,
                description,
                &components,
                flow,
                steps,
                args.get("variables"),
            );
            let problems = plan_problems(&c);
            if problems.is_empty() {
                Ok(c)
            } else {
                Err(problems)
            }
        });
        let c = match composed {
            Ok(c) => c,
            Err(problems) => {
                return Ok(refuse(
                    started,
                    codes::INVALID_COMPOSITION,
                    problems.join("; "),
                    "Fix each problem listed and compose again.",
                    json!({ "flow_type": "conditional", "components": [{ "uri": "workflow://incident-response", "role": "primary" }, { "uri": "pattern://stakeholder-update", "role": "support", "when": "affected_users > 100" }] }),
                    vec![
                        json!({ "tool": "get_help", "reason": "How compose_workflow works", "parameters": { "help_type": "usage", "context": { "attempted_action": "compose_workflow" } } }),
                    ],
                ))
            }
        };
        if save && catalog.get(&c.uri).is_some() {
            return Ok(refuse(
                started,
                codes::NAME_TAKEN,
                format!("{} already exists in the catalog.", c.uri),
                "Choose another name; saved contexts are never overwritten.",
                json!({ "name": format!("{name}-2") }),
                vec![
                    json!({ "tool": "compose_workflow", "reason": "Compose it under a new name", "parameters": { "name": format!("{name}-2") } }),
                ],
            ));
        }
        if save {
            let inserted = ctx
                .query(
                    "INSERT INTO contexts (uri, type, name, description, domain, tags, complexity, example_requests,
                       activation_condition, confidence_required, required_variables, optional_variables,
                       execution_preview, steps)
                     VALUES (?1, 'workflow', ?2, ?3, ?4, ?5, ?6, '[]', ?7, ?8, ?9, ?10, ?11, ?12)
                     ON CONFLICT (uri) DO NOTHING RETURNING uri",
                    vec![
                        json!(c.uri),
                        json!(c.name),
                        json!(c.description),
                        json!(c.domain),
                        json!(json!(c.tags).to_string()),
                        json!(c.complexity),
                        json!(c.activation_condition),
                        json!(c.confidence_required),
                        json!(json!(c.required).to_string()),
                        json!(json!(c.optional).to_string()),
                        json!(c.preview.to_string()),
                        json!(c.steps.to_string()),
                    ],
                )
                .await?;
            if inserted.is_empty() {
                return Ok(refuse(
                    started,
                    codes::NAME_TAKEN,
                    format!("{} was saved by another call just now.", c.uri),
                    "Choose another name; saved contexts are never overwritten.",
                    json!({ "name": format!("{name}-2") }),
                    vec![],
                ));
            }
            catalog::bump(ctx).await?;
        }
        let initial = crate::engine::sort::object(
            c.required
                .iter()
                .map(|v| (v.clone(), json!(format!("<{v}>")))),
        );
        let next = if save {
            json!({ "tool": "execute_workflow", "reason": format!("Run {}", c.uri), "parameters": { "workflow_uri": c.uri, "initial_variables": initial } })
        } else {
            let mut again = args.clone();
            again["save"] = json!(true);
            json!({ "tool": "compose_workflow", "reason": "Save it, so execute_workflow can run it", "parameters": again })
        };
        let body = json!({
            "success": true,
            "result": {
                "workflow_uri": c.uri,
                "saved": save,
                "flow_type": flow,
                "context": c.summary(),
                "steps": c.steps,
                "chain_definition": workflow::chain_definition(&c, Mode::Interactive, &[]),
            },
            "teaching": {
                "tip": if save { "Saved: field_request and list_available_contexts find it now, and execute_workflow runs it." } else { "Not saved: review result.steps, then call again with save: true to run it." },
                "pattern": "field_request (find the parts) → compose_workflow(components with roles, flow_type, save: true) → execute_workflow",
                "confidence_calibration": "Not measured: compose_workflow does not match requests.",
            },
            "next_actions": [next],
            "_performance": performance(started, 0.0),
        });
        Ok(ToolOutput::Described {
            summary: format!(
                "{}: {} {flow} steps from {} components{}",
                c.uri,
                c.steps.as_array().map_or(0, Vec::len),
                components.len(),
                if save { ", saved" } else { " (not saved)" }
            ),
            value: body,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(uri: &str, steps: Value, required: &[&str]) -> Context {
        Context::from_row(&json!({
            "uri": uri, "type": uri.split(':').next().unwrap(), "name": uri, "description": "does things",
            "domain": "technical", "complexity": "simple", "confidence_required": 0.6,
            "required_variables": json!(required).to_string(),
            "steps": if steps.is_null() { Value::Null } else { json!(steps.to_string()) },
        }))
    }

    fn wf() -> Context {
        ctx(
            "workflow://a",
            json!([
                {"name": "one", "instruction": "Do {{x}}", "outputs": ["o1"]},
                {"name": "two", "instruction": "Then {{o1}}", "outputs": ["o2"]},
            ]),
            &["x"],
        )
    }

    fn comp<'a>(c: &'a Context, role: &str) -> Component<'a> {
        Component {
            context: c,
            role: role.into(),
            when: None,
            iterations: None,
            actions: Vec::new(),
        }
    }

    /// Each step's name with its `key`.
    fn each(steps: &[Value], key: &str) -> Vec<(String, Value)> {
        let name = |s: &Value| s["name"].as_str().unwrap().to_string();
        steps.iter().map(|s| (name(s), s[key].clone())).collect()
    }

    #[test]
    fn steps_record_their_component_and_actions_and_a_switch_of_component_is_marked() {
        let (a, t) = (wf(), ctx("tool://book", Value::Null, &[]));
        let mut tool = comp(&t, "support");
        tool.actions = vec!["external_api_calls".into()];
        let steps = compose(&[comp(&a, "primary"), tool], "sequential").unwrap();
        assert_eq!(
            each(&steps, "actions"),
            [
                ("a-one".to_string(), json!([])),
                ("a-two".to_string(), json!([])),
                (
                    "book".to_string(),
                    json!(["external_api_calls", "context_switches"])
                ),
            ]
        );
        assert_eq!(steps[2]["context"], "tool://book");
        assert_eq!(steps[0]["context"], "workflow://a");
        let steps = compose(&[comp(&t, "primary"), comp(&a, "synthesis")], "parallel").unwrap();
        assert_eq!(
            each(&steps, "actions"),
            [
                ("book".to_string(), json!([])),
                ("a-one".to_string(), json!(["context_switches"])),
                ("a-two".to_string(), json!([])),
            ]
        );
    }

    #[test]
    fn sequential_chains_every_component_in_order() {
        let (a, p) = (wf(), ctx("pattern://p", Value::Null, &["y"]));
        let steps = compose(&[comp(&a, "primary"), comp(&p, "validation")], "sequential").unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a-one", "a-two", "p"]);
        assert_eq!(steps[2]["outputs"], json!(["p_result"]));
        assert!(steps[2]["instruction"]
            .as_str()
            .unwrap()
            .ends_with("Known: y: {{y}}."));
        let c = context(
            "combo",
            "",
            &[comp(&a, "primary"), comp(&p, "validation")],
            "sequential",
            steps,
            None,
        );
        assert_eq!(c.required, ["x", "y"]);
        assert!(plan_problems(&c).is_empty());
        let def = workflow::chain_definition(&c, Mode::Interactive, &[]);
        assert_eq!(def["steps"][2]["depends_on"], json!([2]));
    }

    #[test]
    fn parallel_starts_components_together_and_synthesis_waits_for_all() {
        let (a, p, s) = (
            wf(),
            ctx("pattern://p", Value::Null, &[]),
            ctx("agent://s", Value::Null, &[]),
        );
        let steps = compose(
            &[
                comp(&s, "synthesis"),
                comp(&a, "primary"),
                comp(&p, "support"),
            ],
            "parallel",
        )
        .unwrap();
        let c = context("par", "", &[comp(&a, "primary")], "parallel", steps, None);
        let def = workflow::chain_definition(&c, Mode::Interactive, &[]);
        assert_eq!(
            each(def["steps"].as_array().unwrap(), "depends_on"),
            [
                ("a-one".to_string(), json!([])),
                ("a-two".to_string(), json!([1])),
                ("p".to_string(), json!([])),
                ("s".to_string(), json!([2, 3])),
            ]
        );
    }

    #[test]
    fn conditional_guards_steps_and_bad_conditions_are_reported() {
        let (a, p) = (wf(), ctx("pattern://p", Value::Null, &[]));
        let mut guarded = comp(&p, "support");
        guarded.when = Some("urgency == 'critical'".into());
        let steps = compose(&[comp(&a, "primary"), guarded], "conditional").unwrap();
        assert_eq!(steps[2]["when"], "urgency == 'critical'");
        let problems = |steps: Vec<Value>| {
            let primary = [comp(&a, "primary")];
            plan_problems(&context("cond", "", &primary, "conditional", steps, None))
        };
        assert!(problems(steps).is_empty());
        let mut bad = comp(&p, "support");
        bad.when = Some("urgency ==".into());
        let steps = compose(&[comp(&a, "primary"), bad], "conditional").unwrap();
        assert!(!problems(steps).is_empty());
    }

    #[test]
    fn iterative_repeats_rounds_within_the_step_limit() {
        let (a, p) = (wf(), ctx("pattern://p", Value::Null, &[]));
        let steps = compose(&[comp(&a, "primary"), comp(&p, "validation")], "iterative").unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["a-one", "a-two", "p", "a-one-r2", "a-two-r2", "p-r2"]
        );
        let mut many = comp(&a, "primary");
        many.iterations = Some(5);
        assert_eq!(
            compose(&[many, comp(&p, "validation")], "iterative")
                .unwrap()
                .len(),
            15
        );
        let mut too = comp(&a, "primary");
        too.iterations = Some(9);
        assert!(
            compose(&[too, comp(&p, "validation")], "iterative").unwrap_err()[0].contains("1 to 5")
        );
    }

    #[test]
    fn duplicates_misplaced_conditions_and_a_missing_primary_are_refused() {
        let a = wf();
        let mut w = comp(&a, "support");
        w.when = Some("x".into());
        let e = compose(&[w, comp(&a, "support")], "sequential").unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
    }
}
