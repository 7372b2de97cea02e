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

use serde_json::{json, Map, Value};

use super::catalog::Context;

/// The instruction set every workflow step runs with (migration 0020).
pub const STEP_SET: &str = "flowmind-workflow-step";

/// The instruction set of the confirmation before each step in `step_confirm` mode.
pub const CONFIRM_SET: &str = "flowmind-step-confirmation";

/// The `category` of the chains built from workflows (how their executions are counted).
pub const CATEGORY: &str = "flowmind-workflow";

/// What a confirmation step's output holds when the caller approved the step.
pub const APPROVED: &str = "approved";

/// How `execute_workflow` runs a workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Pauses when a step needs input nobody else can give.
    Interactive,
    /// Never pauses: refused up front when a step would need input.
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
                    outputs: s["outputs"]
                        .as_array()
                        .map(|o| {
                            o.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default(),
                    after: s["after"].as_array().map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    }),
                    when: s["when"].as_str().map(str::to_string),
                })
                .collect()
        })
        .unwrap_or_default()
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
/// must be): `wf-<path>`, or `wfc-<path>` with confirmation steps.
pub fn chain_name(uri: &str, mode: Mode) -> String {
    let path = uri
        .split_once("://")
        .map_or(uri, |(_, p)| p)
        .replace('/', "-");
    let prefix = if mode == Mode::StepConfirm {
        "wfc-"
    } else {
        "wf-"
    };
    let mut name = format!("{prefix}{path}");
    name.truncate(50);
    name
}

/// The variable a confirmation step sets for workflow step `n` (1-based).
pub fn approval_variable(n: usize) -> String {
    format!("approval_{n}")
}

/// The chain definition workflow `c` runs as in `mode`.
pub fn chain_definition(c: &Context, mode: Mode) -> Value {
    let steps = steps(c);
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
        if mode == Mode::StepConfirm {
            let id = out.len() as u32 + 1;
            let mut confirm = json!({
                "id": id,
                "name": format!("confirm-{}", s.name),
                "description": format!("Approval before step {n} of {total}, '{}'", s.name),
                "type": "instruction_set",
                "instruction_set": CONFIRM_SET,
                "input_template": format!("Step {n} of {total} of {}: '{}'.\n\n{template}", c.uri, s.name),
                "input_variables": reads,
                "output_variables": [approval_variable(n)],
                "depends_on": deps,
                "retry_config": { "max_retries": 0 },
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
        });
        let approved = format!("{} == '{APPROVED}'", approval_variable(n));
        match (&s.when, mode == Mode::StepConfirm) {
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
        "configuration": { "rollback_enabled": false, "parallel_steps_enabled": false },
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
        assert_eq!(
            chain_name(&format!("workflow://{}", "x".repeat(80)), Mode::Autonomous).len(),
            50
        );
    }

    #[test]
    fn workflow_steps_become_a_sequential_chain_that_plans() {
        let def = chain_definition(&workflow(), Mode::Interactive);
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
        let def = chain_definition(&workflow(), Mode::StepConfirm);
        let parsed: ChainDef = serde_json::from_value(def.clone()).unwrap();
        chain::plan(&parsed).unwrap();
        let names: Vec<&str> = def["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
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
