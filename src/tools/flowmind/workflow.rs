//! `execute_workflow` (seed 001, "Secondary Tool: execute_workflow"): a workflow context's steps
//! become a chain definition, run by the chain machinery (`tools::chains`) as a tracked execution
//! of the caller's session; its execution id is the workflow's `session_id`.
//!
//! The chain is built deterministically from the context: step n of the workflow is an
//! `instruction_set` step (instruction set [`STEP_SET`]) whose input is the step's instruction with
//! its `{{variable}}` placeholders filled in, whose outputs are the step's outputs, and which depends
//! on step n-1. In `step_confirm` mode a confirmation step (instruction set [`CONFIRM_SET`], output
//! `approval_<n>`) precedes each of them, so the run pauses before every step until the caller
//! approves it. A step with no model to ask (no MCP sampling, no `MODEL_PROVIDER_URL`) pauses
//! `awaiting_input` for the caller to supply its outputs.
//!
//! **Approvals in every mode.** A step can also need approval because of the call: it does one of
//! the actions `constraints.require_approval_for` lists, or the call names the step there, or the
//! caller's confidence is below what the workflow asks for (see `execute`). Such a step gets the
//! same confirmation step before it in any mode, which always pauses until the caller approves
//! (`ask: explicit`). The confirmations of `step_confirm` mode alone are `ask: client`: the client's
//! model answers them when the client declared MCP sampling (its user stays in the loop), otherwise
//! the run pauses; the server's own model never answers a confirmation.
//!
//! **What a step does.** A step of the catalog format may declare `actions`, the seed's
//! [`ACTIONS`] it performs, and `context`, the context it applies. `compose_workflow` fills both:
//! a step applying a `tool://` context whose tool reaches an outside service (`open_world`) makes
//! `external_api_calls`, one whose tool changes stored data (not read-only) makes
//! `file_modifications`, and a step that runs right after a step of another component makes
//! `context_switches`. Catalog workflows' own steps ask a model and the caller only, so they
//! declare none.
//!
//! **Parallel steps.** Every workflow step may run alongside the other ready ones: steps whose
//! `after` lets them start together (composed `parallel` flows) run concurrently; confirmation
//! steps run alone, one approval at a time.

use serde_json::{json, Map, Value};

use super::catalog::Context;
use crate::tools::strings;

/// The instruction set every workflow step runs with (migration 0020).
pub const STEP_SET: &str = "flowmind-workflow-step";

/// The instruction set of the confirmation before each step in `step_confirm` mode.
pub const CONFIRM_SET: &str = "flowmind-step-confirmation";

/// The `category` of the chains built from workflows (how their executions are counted).
pub const CATEGORY: &str = "flowmind-workflow";

/// What a confirmation step's output holds when the caller approved the step.
pub const APPROVED: &str = "approved";

/// The actions `constraints.require_approval_for` can name (seed 001), which steps declare.
pub const ACTIONS: [&str; 3] = [
    "external_api_calls",
    "file_modifications",
    "context_switches",
];

/// The prefix of a confirmation step's name (`confirm-<step>`).
pub const CONFIRM_PREFIX: &str = "confirm-";

/// How `execute_workflow` runs a workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Pauses when a step needs input nobody else can give.
    Interactive,
    /// Pauses only for approvals the call asks for: refused up front when a step would need input.
    Autonomous,
    /// Pauses for approval before each step.
    StepConfirm,
}

impl Mode {
    /// The mode named `s` (`interactive` when absent or unknown, which the schema rules out).
    pub fn parse(s: Option<&str>) -> Mode {
        match s {
            Some("autonomous") => Mode::Autonomous,
            Some("step_confirm") => Mode::StepConfirm,
            _ => Mode::Interactive,
        }
    }

    /// Its name, as in the schema.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Interactive => "interactive",
            Mode::Autonomous => "autonomous",
            Mode::StepConfirm => "step_confirm",
        }
    }

    /// The prefix of the chain names of this mode (the chain tools keep them for FlowMind:
    /// `chains::LINKED_PREFIXES`).
    fn prefix(self) -> &'static str {
        match self {
            Mode::Interactive => "wf-",
            Mode::Autonomous => "wfa-",
            Mode::StepConfirm => "wfc-",
        }
    }

    /// The mode a run of workflow `uri` has, from its chain's name.
    pub fn of_chain(uri: &str, chain: &str) -> Option<Mode> {
        [Mode::Interactive, Mode::Autonomous, Mode::StepConfirm]
            .into_iter()
            .find(|m| chain_name(uri, *m) == chain)
    }
}

/// A workflow step as the context stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Its name.
    pub name: String,
    /// What to do, with `{{variable}}` placeholders.
    pub instruction: String,
    /// The variables it produces.
    pub outputs: Vec<String>,
    /// The names of the steps it runs after; `None`: after the step before it (composed
    /// workflows set it, see `compose`).
    pub after: Option<Vec<String>>,
    /// A chain condition expression: the step runs only when it is true (composed `conditional`
    /// workflows).
    pub when: Option<String>,
    /// The [`ACTIONS`] it performs.
    pub actions: Vec<String>,
    /// The context it applies (composed workflows), when not the workflow itself.
    pub context: Option<String>,
}

/// The steps of workflow `c`; empty for contexts that have none (agents, patterns, tools).
pub fn steps(c: &Context) -> Vec<Step> {
    c.steps
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| Step {
                    name: s["name"].as_str().unwrap_or_default().to_string(),
                    instruction: s["instruction"].as_str().unwrap_or_default().to_string(),
                    outputs: strings(&s["outputs"]),
                    after: s["after"].is_array().then(|| strings(&s["after"])),
                    when: s["when"].as_str().map(str::to_string),
                    actions: strings(&s["actions"]),
                    context: s["context"].as_str().map(str::to_string),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The steps a run of `c` takes: a workflow's own; an agent or a pattern (seed 001: execute_workflow
/// takes `agent://` and `pattern://` URIs too) runs as one step that applies it to the variables
/// given, producing `result`. Empty for a tool context (its tool is called directly).
pub fn runnable_steps(c: &Context) -> Vec<Step> {
    let own = steps(c);
    if !own.is_empty() || !matches!(c.kind.as_str(), "agent" | "pattern") {
        return own;
    }
    let known: Vec<String> = c
        .required
        .iter()
        .map(|v| format!("{v}: {{{{{v}}}}}"))
        .collect();
    let mut instruction = format!(
        "Apply the {} {} ({}): {}",
        c.kind, c.name, c.uri, c.description
    );
    if !known.is_empty() {
        instruction.push_str(&format!(" Known: {}.", known.join(", ")));
    }
    vec![Step {
        name: "apply".into(),
        instruction,
        outputs: vec!["result".into()],
        after: None,
        when: None,
        actions: Vec::new(),
        context: Some(c.uri.clone()),
    }]
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// An instruction's `{{variable}}` placeholders as a chain template (`{variable}`), every other
/// brace made literal; and the variables it reads, in order of first use.
pub fn to_template(instruction: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(instruction.len());
    let mut vars: Vec<String> = Vec::new();
    let mut rest = instruction;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("{{") {
            let name: String = after.chars().take_while(|c| is_name_char(*c)).collect();
            if !name.is_empty() && after[name.len()..].starts_with("}}") {
                out.push('{');
                out.push_str(&name);
                out.push('}');
                if !vars.contains(&name) {
                    vars.push(name.clone());
                }
                rest = &after[name.len() + 2..];
                continue;
            }
        }
        match c {
            '{' => out.push_str("{{"),
            '}' => out.push_str("}}"),
            other => out.push(other),
        }
        rest = &rest[c.len_utf8()..];
    }
    (out, vars)
}

/// The name of the chain workflow `uri` runs as in `mode` (at most 50 characters, as chain names
/// must be): `wf-<path>` (interactive), `wfa-<path>` (autonomous) or `wfc-<path>` (step_confirm).
pub fn chain_name(uri: &str, mode: Mode) -> String {
    let path = uri
        .split_once("://")
        .map_or(uri, |(_, p)| p)
        .replace('/', "-");
    let mut name = format!("{}{path}", mode.prefix());
    name.truncate(50);
    name
}

/// Every entry of `constraints.require_approval_for` that is neither one of [`ACTIONS`] nor the
/// name of a step of `steps`, as an error naming the entry.
pub fn unknown_approvals(steps: &[Step], entries: &[String], uri: &str) -> Vec<String> {
    entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !ACTIONS.contains(&e.as_str()) && !steps.iter().any(|s| &s.name == *e))
        .map(|(i, e)| {
            format!(
                "constraints.require_approval_for[{i}] is {e:?}, which is neither an action ({}) nor a step of {uri} ({})",
                ACTIONS.join(", "),
                steps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
            )
        })
        .collect()
}

/// Why each step needs the caller's approval under `constraints.require_approval_for` (entries
/// already checked with [`unknown_approvals`]), if it does: the entry names the step, or the step
/// declares an action the entries list.
pub fn approvals_required(steps: &[Step], entries: &[String]) -> Vec<Option<String>> {
    steps
        .iter()
        .map(|s| {
            let mut why: Vec<String> = Vec::new();
            if entries.contains(&s.name) {
                why.push("constraints.require_approval_for names it".into());
            }
            for a in s.actions.iter().filter(|a| entries.contains(a)) {
                why.push(match (a.as_str(), &s.context) {
                    ("context_switches", Some(c)) => {
                        format!("it switches to {c} (context_switches)")
                    }
                    ("external_api_calls", Some(c)) => {
                        format!("{c} calls an outside service (external_api_calls)")
                    }
                    ("file_modifications", Some(c)) => {
                        format!("{c} changes stored data (file_modifications)")
                    }
                    (other, _) => format!("it involves {other}"),
                });
            }
            (!why.is_empty()).then(|| why.join("; "))
        })
        .collect()
}

/// Text made literal inside a chain template.
fn literal(text: &str) -> String {
    text.replace('{', "{{").replace('}', "}}")
}

/// The variable a confirmation step sets for workflow step `n` (1-based).
pub fn approval_variable(n: usize) -> String {
    format!("approval_{n}")
}

/// The chain definition workflow `c` runs as in `mode`, where `approvals[i]` says why step `i`
/// needs the caller's approval before it runs, if it does (in `step_confirm` mode every step
/// does; steps beyond `approvals` need none).
pub fn chain_definition(c: &Context, mode: Mode, approvals: &[Option<String>]) -> Value {
    let steps = runnable_steps(c);
    let total = steps.len();
    let mut out: Vec<Value> = Vec::new();
    let mut previous: Option<u32> = None;
    let mut ids: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        let n = i + 1;
        let (template, reads) = to_template(&s.instruction);
        let mut deps: Vec<u32> = match &s.after {
            Some(names) => names
                .iter()
                .filter_map(|a| ids.get(a.as_str()).copied())
                .collect(),
            None => previous.into_iter().collect(),
        };
        let why = approvals.get(i).cloned().flatten();
        let confirmed = mode == Mode::StepConfirm || why.is_some();
        if confirmed {
            let id = out.len() as u32 + 1;
            let because = why
                .as_deref()
                .map(|w| format!(" It needs your approval: {}.", literal(w)))
                .unwrap_or_default();
            let mut confirm = json!({
                "id": id,
                "name": format!("{CONFIRM_PREFIX}{}", s.name),
                "description": format!("Approval before step {n} of {total}, '{}'", s.name),
                "type": "instruction_set",
                "instruction_set": CONFIRM_SET,
                "input_template": format!("Step {n} of {total} of {}: '{}'.{because}\n\n{template}", c.uri, s.name),
                "input_variables": reads,
                "output_variables": [approval_variable(n)],
                "depends_on": deps,
                "retry_config": { "max_retries": 0 },
                "ask": if why.is_some() { "explicit" } else { "client" },
            });
            if let Some(w) = &s.when {
                confirm["conditional_execution"] = json!(w);
            }
            out.push(confirm);
            deps = vec![id];
        }
        let id = out.len() as u32 + 1;
        let mut step = json!({
            "id": id,
            "name": s.name,
            "description": format!("Step {n} of {total} of {}", c.uri),
            "type": "instruction_set",
            "instruction_set": STEP_SET,
            "input_template": template,
            "input_variables": reads,
            "output_variables": s.outputs,
            "depends_on": deps,
            "retry_config": { "max_retries": 1, "backoff_ms": 500 },
            "parallel_execution": true,
        });
        let approved = format!("{} == '{APPROVED}'", approval_variable(n));
        match (&s.when, confirmed) {
            (Some(w), true) => {
                step["conditional_execution"] = json!(format!("({w}) && {approved}"))
            }
            (Some(w), false) => step["conditional_execution"] = json!(w),
            (None, true) => step["conditional_execution"] = json!(approved),
            (None, false) => {}
        }
        out.push(step);
        ids.insert(&s.name, id);
        previous = Some(id);
    }
    json!({
        "name": chain_name(&c.uri, mode),
        "title": c.name,
        "description": format!("FlowMind workflow {} ({} mode): {}", c.uri, mode.as_str(), c.description),
        "category": CATEGORY,
        "version": "1.0",
        "steps": out,
        "configuration": { "rollback_enabled": false, "parallel_steps_enabled": true },
    })
}

/// The required variables of `c` that `vars` lacks (absent, null or empty text).
pub fn missing_required(c: &Context, vars: &Map<String, Value>) -> Vec<String> {
    c.required
        .iter()
        .filter(|v| match vars.get(*v) {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.trim().is_empty(),
            Some(_) => false,
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::chain::{self, ChainDef};

    fn step_names(def: &Value) -> Vec<&str> {
        def["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect()
    }

    fn workflow() -> Context {
        let row = json!({
            "uri": "workflow://code-review", "type": "workflow", "name": "Code review",
            "description": "Reviews code", "domain": "technical", "complexity": "moderate",
            "confidence_required": 0.6,
            "required_variables": "[\"technology\",\"code_reference\"]",
            "steps": json!([
                {"name": "understand", "instruction": "Summarise {{code_reference}} in {{technology}} {not a var}", "outputs": ["change_summary"]},
                {"name": "review", "instruction": "Review {{change_summary}}.", "outputs": ["review_comments", "verdict"]},
            ]).to_string(),
        });
        Context::from_row(&row)
    }

    #[test]
    fn placeholders_become_template_variables_and_other_braces_literal() {
        let (t, vars) = to_template("From {{a}} and {{b_2}} (again {{a}}), {x} {{ y }} }");
        assert_eq!(t, "From {a} and {b_2} (again {a}), {{x}} {{{{ y }}}} }}");
        assert_eq!(vars, vec!["a", "b_2"]);
    }

    #[test]
    fn chain_names_fit_the_chain_table() {
        assert_eq!(
            chain_name("workflow://code-review", Mode::Interactive),
            "wf-code-review"
        );
        assert_eq!(chain_name("workflow://a/b", Mode::StepConfirm), "wfc-a-b");
        assert_eq!(chain_name("workflow://a", Mode::Autonomous), "wfa-a");
        for m in [Mode::Interactive, Mode::Autonomous, Mode::StepConfirm] {
            let name = chain_name("workflow://code-review", m);
            assert!(crate::tools::chains::is_linked_name(&name), "{name}");
            assert_eq!(Mode::of_chain("workflow://code-review", &name), Some(m));
        }
        assert_eq!(Mode::of_chain("workflow://code-review", "wf-other"), None);
        assert_eq!(
            chain_name(&format!("workflow://{}", "x".repeat(80)), Mode::Autonomous).len(),
            50
        );
    }

    #[test]
    fn workflow_steps_become_a_sequential_chain_that_plans() {
        let def = chain_definition(&workflow(), Mode::Interactive, &[]);
        let parsed: ChainDef = serde_json::from_value(def.clone()).unwrap();
        let plan = chain::plan(&parsed).unwrap();
        assert_eq!(plan.steps.len(), 2);
        assert_eq!(def["steps"][1]["depends_on"], json!([1]));
        assert_eq!(def["steps"][0]["instruction_set"], STEP_SET);
        assert_eq!(
            def["steps"][1]["output_variables"],
            json!(["review_comments", "verdict"])
        );
        assert_eq!(
            def["steps"][0]["input_template"],
            "Summarise {code_reference} in {technology} {{not a var}}"
        );
    }

    #[test]
    fn step_confirm_puts_an_approval_before_every_step() {
        let def = chain_definition(&workflow(), Mode::StepConfirm, &[]);
        let parsed: ChainDef = serde_json::from_value(def.clone()).unwrap();
        chain::plan(&parsed).unwrap();
        let names = step_names(&def);
        assert_eq!(
            names,
            [
                "confirm-understand",
                "understand",
                "confirm-review",
                "review"
            ]
        );
        assert_eq!(def["steps"][2]["depends_on"], json!([2]));
        assert_eq!(
            def["steps"][3]["conditional_execution"],
            "approval_2 == 'approved'"
        );
        assert_eq!(def["name"], "wfc-code-review");
        assert_eq!(def["steps"][0]["ask"], "client");
    }

    #[test]
    fn agents_and_patterns_run_as_one_step_and_tools_not_at_all() {
        let row = |uri: &str, kind: &str| {
            Context::from_row(&json!({
                "uri": uri, "type": kind, "name": "Debugger", "description": "Finds {bugs}.",
                "domain": "technical", "complexity": "moderate", "confidence_required": 0.5,
                "required_variables": "[\"technology\"]",
            }))
        };
        for (uri, kind) in [("agent://debugger", "agent"), ("pattern://p", "pattern")] {
            let c = row(uri, kind);
            let s = runnable_steps(&c);
            assert_eq!(s.len(), 1, "{uri}");
            assert_eq!(s[0].outputs, ["result"]);
            assert!(s[0].instruction.contains("{{technology}}"));
            let def = chain_definition(&c, Mode::Interactive, &[]);
            assert_eq!(step_names(&def).len(), 1);
            assert!(
                def["steps"][0].to_string().contains("{technology}"),
                "{def}"
            );
            assert!(
                steps(&c).is_empty(),
                "compose keeps its own view of components"
            );
        }
        assert!(runnable_steps(&row("tool://x", "tool")).is_empty());
        assert_eq!(runnable_steps(&workflow()).len(), 2);
    }

    #[test]
    fn approvals_match_step_names_and_declared_actions_and_anything_else_is_named_as_unknown() {
        let row = json!({
            "uri": "workflow://combo", "type": "workflow", "name": "Combo", "description": "",
            "domain": "technical", "complexity": "simple", "confidence_required": 0.5,
            "steps": json!([
                {"name": "a", "instruction": "Do {{x}}", "outputs": ["o1"], "context": "workflow://a", "actions": []},
                {"name": "book", "instruction": "Book {{o1}}", "outputs": ["o2"], "context": "tool://search_flights", "actions": ["external_api_calls", "context_switches"]},
            ]).to_string(),
        });
        let c = Context::from_row(&row);
        let steps = steps(&c);
        let entries = |e: &[&str]| e.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(unknown_approvals(&steps, &entries(&["a", "context_switches"]), &c.uri).is_empty());
        let e = unknown_approvals(
            &steps,
            &entries(&["a", "deploys", "file_modifications"]),
            &c.uri,
        );
        assert_eq!(e.len(), 1);
        assert!(
            e[0].starts_with("constraints.require_approval_for[1] is \"deploys\"")
                && e[0].contains("(external_api_calls, file_modifications, context_switches)")
                && e[0].ends_with("workflow://combo (a, book)"),
            "{}",
            e[0]
        );

        assert_eq!(
            approvals_required(&steps, &entries(&["file_modifications"])),
            [None, None]
        );
        let why = approvals_required(&steps, &entries(&["a", "context_switches"]));
        assert_eq!(
            why[0].as_deref(),
            Some("constraints.require_approval_for names it")
        );
        assert_eq!(
            why[1].as_deref(),
            Some("it switches to tool://search_flights (context_switches)")
        );

        // A gated step gets a confirmation in any mode; the others run as they are.
        let def = chain_definition(&c, Mode::Autonomous, &why[..1]);
        let parsed: ChainDef = serde_json::from_value(def.clone()).unwrap();
        chain::plan(&parsed).unwrap();
        let names = step_names(&def);
        assert_eq!(names, ["confirm-a", "a", "book"]);
        assert_eq!(def["name"], "wfa-combo");
        assert_eq!(def["steps"][0]["ask"], "explicit");
        assert_eq!(def["steps"][0]["parallel_execution"], Value::Null);
        assert!(def["steps"][0]["input_template"]
            .as_str()
            .unwrap()
            .starts_with("Step 1 of 2 of workflow://combo: 'a'. It needs your approval: constraints.require_approval_for names it.\n\n"));
        assert_eq!(
            def["steps"][1]["conditional_execution"],
            "approval_1 == 'approved'"
        );
        assert_eq!(def["steps"][2]["conditional_execution"], Value::Null);
        assert_eq!(def["steps"][2]["parallel_execution"], true);
        assert_eq!(def["configuration"]["parallel_steps_enabled"], true);
    }

    #[test]
    fn missing_required_counts_null_and_blank_as_missing() {
        let c = workflow();
        let vars = json!({ "technology": " ", "other": 1 });
        assert_eq!(
            missing_required(&c, vars.as_object().unwrap()),
            ["technology", "code_reference"]
        );
        let vars = json!({ "technology": "rust", "code_reference": "PR 7" });
        assert!(missing_required(&c, vars.as_object().unwrap()).is_empty());
    }
}
