//! Chain definitions and the planner that checks them and works out the order of their steps.
//!
//! **Dependencies.** A step runs after every step in its `depends_on`, and after the latest earlier
//! step (by position) that outputs a variable it reads — in `input_variables`, its `input_template`
//! or its `conditional_execution`. So a chain written as a sequence where each step uses the last
//! one's outputs runs in order without `depends_on`, and steps that share no data may run side by
//! side. A step with `parallel_execution: true` may run concurrently with other ready steps when the
//! chain and the call allow it; otherwise ready steps run one at a time in position order.
//!
//! The planner rejects, before anything runs: duplicate step ids or names, `depends_on` naming a
//! missing step or the step itself, cycles (reported as a path), a step type without the field it
//! needs (`instruction_set`, `template_id`, `tool`, `operation`), a collection name outside
//! [`COLLECTION_PATTERN`], `on_failure: fallback` without a `fallback_step`, and an
//! `input_template`, `conditional_execution` or `rollback_action` argument template that does not
//! compile (with line and column). Whether a named tool exists is checked by `create_chain`, which
//! has the tool registry.

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
use serde_json::Value;

use super::expr::{self, Program};
use super::template::Template;

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepType {
    /// Produces output variables from an instruction set and the step prompt (model or client).
    InstructionSet,
    /// Renders a template into output variables.
    TemplateProcessing,
    /// Creates, updates or deletes records in a named collection.
    DatabaseOperation,
    /// Calls a tool of this server.
    ExternalApi,
    /// Sets branch variables from conditions.
    ConditionalLogic,
    /// Sets output variables from expressions.
    DataTransformation,
}

/// What happens when a step fails after its retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// The chain fails (and rolls back if enabled).
    #[default]
    Fail,
    /// The failure is recorded as a warning and the chain goes on.
    Warn,
    /// The step is recorded as skipped and the chain goes on.
    Skip,
    /// The `fallback_step` runs in its place.
    Fallback,
}

/// Retry rules of a step.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RetryConfig {
    /// Attempts after the first.
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// First delay; doubles each attempt, with jitter.
    #[serde(default = "default_backoff")]
    pub backoff_ms: u64,
    /// Only these error classes are retried (all transient ones when absent).
    #[serde(default)]
    pub retry_on_errors: Option<Vec<String>>,
}

fn default_retries() -> u32 {
    3
}

fn default_backoff() -> u64 {
    1000
}

/// A step's replacement for `on_failure: fallback`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FallbackStep {
    /// Name, for reports.
    pub name: String,
    /// Its type, as a step type name.
    #[serde(rename = "type")]
    pub kind: String,
    /// Instruction set, for instruction_set fallbacks.
    #[serde(default)]
    pub instruction_set: Option<String>,
    /// Template, for template_processing fallbacks.
    #[serde(default)]
    pub template_id: Option<String>,
}

/// What a `database_operation` step does to its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordAction {
    /// Adds a record; fails if its id is taken.
    Create,
    /// Merges fields into an existing record.
    Update,
    /// Removes an existing record.
    Delete,
    /// Reads an existing record.
    Get,
}

impl RecordAction {
    /// The action's name, as written in definitions.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordAction::Create => "create",
            RecordAction::Update => "update",
            RecordAction::Delete => "delete",
            RecordAction::Get => "get",
        }
    }
}

/// The `operation` of a `database_operation` step: one record action in a named collection.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Operation {
    /// The collection's name (see [`COLLECTION_PATTERN`]).
    pub collection: String,
    /// What to do.
    pub action: RecordAction,
    /// Who besides the caller running the chain may read the records a `create` makes:
    /// `private` (absent), `shared` or `public` (checked by `tools::ownership`).
    #[serde(default)]
    pub visibility: Option<String>,
    /// With `visibility: shared`, the roles whose holders may read those records.
    #[serde(default)]
    pub shared_roles: Option<Vec<String>>,
}

/// Collection names: a lowercase letter, then up to 49 of `a-z`, `0-9`, `_`, `-`.
pub const COLLECTION_PATTERN: &str = "^[a-z][a-z0-9_-]{0,49}$";

/// Whether `name` matches [`COLLECTION_PATTERN`].
pub fn valid_collection(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && name.len() <= 50
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

/// A parsed `rollback_action`: a tool of this server, then optionally whitespace and a template
/// rendering the tool's JSON arguments (`"delete_customer {{\"id\": {customer.id|json}}}"`).
#[derive(Debug, Clone, PartialEq)]
pub struct RollbackAction {
    /// The tool's MCP name or registry id, as written.
    pub tool: String,
    /// The arguments template; none means `{}`.
    pub arguments: Option<Template>,
}

impl RollbackAction {
    /// Splits a `rollback_action` at its first whitespace and compiles the rest as a template.
    pub fn parse(text: &str) -> Result<RollbackAction, String> {
        let text = text.trim();
        let (tool, rest) = match text.find(char::is_whitespace) {
            Some(at) => (&text[..at], text[at..].trim()),
            None => (text, ""),
        };
        if tool.is_empty() {
            return Err(
                "is empty; write a tool name, optionally followed by a JSON arguments template"
                    .into(),
            );
        }
        if tool.contains(['{', '}']) {
            return Err(format!(
                "must start with a tool name, then whitespace, then the arguments template; {tool:?} is not a tool name"
            ));
        }
        let arguments = if rest.is_empty() {
            None
        } else {
            Some(Template::parse(rest).map_err(|e| format!("arguments template {e}"))?)
        };
        Ok(RollbackAction {
            tool: tool.to_string(),
            arguments,
        })
    }
}

/// One step as defined.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StepDef {
    /// Unique within the chain.
    pub id: u32,
    /// Unique within the chain.
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// What it does.
    #[serde(rename = "type")]
    pub kind: StepType,
    /// For instruction_set steps.
    #[serde(default)]
    pub instruction_set: Option<String>,
    /// For template_processing steps.
    #[serde(default)]
    pub template_id: Option<String>,
    /// For external_api steps: the tool of this server to call (MCP name or registry id).
    #[serde(default)]
    pub tool: Option<String>,
    /// For database_operation steps: the collection and the record action.
    #[serde(default)]
    pub operation: Option<Operation>,
    /// The step's input text, a template over the chain's variables.
    #[serde(default)]
    pub input_template: Option<String>,
    /// Variables the step reads.
    #[serde(default)]
    pub input_variables: Vec<String>,
    /// Variables the step adds.
    #[serde(default)]
    pub output_variables: Vec<String>,
    /// An expression; the step runs only when it is true.
    #[serde(default)]
    pub conditional_execution: Option<String>,
    /// May run at the same time as other ready steps.
    #[serde(default)]
    pub parallel_execution: bool,
    /// Step ids that must finish first.
    #[serde(default)]
    pub depends_on: Vec<u32>,
    /// Retry rules.
    #[serde(default)]
    pub retry_config: Option<RetryConfig>,
    /// What a failure means.
    #[serde(default)]
    pub on_failure: OnFailure,
    /// Replacement for `on_failure: fallback`.
    #[serde(default)]
    pub fallback_step: Option<FallbackStep>,
    /// Per-attempt time limit.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// What undoes the step on rollback: a tool call (see [`RollbackAction`]).
    #[serde(default)]
    pub rollback_action: Option<String>,
    /// Who may answer an `instruction_set` step (approvals must come from the caller).
    #[serde(default)]
    pub ask: Ask,
}

/// Who may answer an `instruction_set` step. Whoever it is, a tracked run pauses
/// (`awaiting_input`) when nobody else can, until the caller supplies the outputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ask {
    /// Any model: the client's (MCP sampling), else the server's model provider.
    #[default]
    Model,
    /// The client: its model through MCP sampling (its user in the loop), never the server's
    /// model provider (FlowMind's `step_confirm` approvals).
    Client,
    /// The caller, explicitly: the run always pauses for the answer (approvals the call asked
    /// for).
    Explicit,
}

/// A chain as defined (the `chain_definition` of `create_chain`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChainDef {
    /// Unique name.
    pub name: String,
    /// Title.
    pub title: String,
    /// Steps in position order.
    pub steps: Vec<StepDef>,
    /// Everything else of the definition, kept as given.
    #[serde(flatten)]
    pub rest: HashMap<String, Value>,
}

/// A checked step with its dependencies and compiled texts.
#[derive(Debug, Clone)]
pub struct PlannedStep {
    /// The definition.
    pub def: StepDef,
    /// Positions of the steps it waits for.
    pub deps: Vec<usize>,
    /// Compiled `input_template`.
    pub input: Option<Template>,
    /// Compiled `conditional_execution`.
    pub condition: Option<Program>,
}

/// A checked chain.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Steps in position order.
    pub steps: Vec<PlannedStep>,
    /// A valid execution order (positions), dependencies first.
    pub order: Vec<usize>,
    /// The outputs a completed run must have (`output_schema.properties`): name and type.
    pub outputs: Vec<(String, OutputType)>,
    /// The chain's declared inputs (`input_schema.properties`), for messages about missing ones.
    pub inputs: Vec<String>,
}

/// What a step of each type typically takes, in milliseconds, for [`Plan::estimate_ms`]: a model
/// call takes seconds, a tool call reaching an outside API a couple, the rest are local.
fn typical_ms(kind: StepType) -> u64 {
    match kind {
        StepType::InstructionSet => 8_000,
        StepType::ExternalApi => 2_000,
        StepType::TemplateProcessing => 200,
        StepType::DatabaseOperation => 100,
        StepType::DataTransformation | StepType::ConditionalLogic => 10,
    }
}

impl Plan {
    /// An estimate of a run's duration from its step types (not a measurement): the sum of their
    /// typical times, or with `parallel` the longest chain of dependencies among the steps
    /// marked `parallel_execution`, which may overlap. Time paused for input is not counted.
    pub fn estimate_ms(&self, parallel: bool) -> u64 {
        let mut finish = vec![0u64; self.steps.len()];
        let mut total = 0u64;
        for &i in &self.order {
            let step = &self.steps[i];
            let own = typical_ms(step.def.kind);
            if parallel && step.def.parallel_execution {
                let after = step.deps.iter().map(|&d| finish[d]).max().unwrap_or(0);
                finish[i] = after.saturating_add(own);
                total = total.max(finish[i]);
            } else {
                total = total.saturating_add(own);
                finish[i] = total;
            }
        }
        total
    }
}

/// The type of a declared chain output (`output_schema.properties.<name>.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputType {
    /// Text.
    String,
    /// Any JSON number.
    Number,
    /// A whole JSON number.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A JSON object.
    Object,
    /// A JSON list.
    Array,
    /// Text starting with an ISO date (`YYYY-MM-DD`).
    Date,
}

impl OutputType {
    /// The type a name denotes, as JSON Schema and template variables write it.
    pub fn parse(name: &str) -> Option<OutputType> {
        Some(match name {
            "string" => OutputType::String,
            "number" => OutputType::Number,
            "integer" => OutputType::Integer,
            "boolean" => OutputType::Boolean,
            "object" => OutputType::Object,
            "array" => OutputType::Array,
            "date" => OutputType::Date,
            _ => return None,
        })
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputType::String => "string",
            OutputType::Number => "number",
            OutputType::Integer => "integer",
            OutputType::Boolean => "boolean",
            OutputType::Object => "object",
            OutputType::Array => "array",
            OutputType::Date => "date",
        }
    }

    /// Whether `v` is of this type.
    pub fn accepts(self, v: &Value) -> bool {
        match self {
            OutputType::String => v.is_string(),
            OutputType::Number => v.is_number(),
            OutputType::Integer => {
                v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            OutputType::Boolean => v.is_boolean(),
            OutputType::Object => v.is_object(),
            OutputType::Array => v.is_array(),
            OutputType::Date => v.as_str().is_some_and(|s| {
                chrono::NaiveDate::parse_from_str(s.get(..10).unwrap_or(s), "%Y-%m-%d").is_ok()
            }),
        }
    }
}

/// The declared outputs of a chain's `output_schema` (absent: none); every problem is reported.
fn declared_outputs(def: &ChainDef) -> Result<Vec<(String, OutputType)>, Vec<String>> {
    let Some(schema) = def.rest.get("output_schema") else {
        return Ok(Vec::new());
    };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Err(vec![
            "output_schema must be {\"type\": \"object\", \"properties\": {<name>: {\"type\": …}}}"
                .into(),
        ]);
    };
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (name, rule) in props {
        let kind = rule.get("type").and_then(Value::as_str).unwrap_or_default();
        match OutputType::parse(kind) {
            Some(t) => out.push((name.clone(), t)),
            None => errors.push(format!(
                "output_schema.properties.{name}.type is {kind:?}; use string, number, integer, boolean, object, array or date"
            )),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn label(s: &StepDef) -> String {
    format!("step {} '{}'", s.id, s.name)
}

/// Checks a chain and plans its steps; every problem is reported.
pub fn plan(def: &ChainDef) -> Result<Plan, Vec<String>> {
    let mut errors = Vec::new();
    let steps = &def.steps;
    let mut by_id: HashMap<u32, usize> = HashMap::new();
    let mut names: HashMap<&str, u32> = HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        if let Some(j) = by_id.insert(s.id, i) {
            errors.push(format!(
                "step ids must be unique: {} is used by '{}' and '{}'",
                s.id, steps[j].name, s.name
            ));
        }
        if let Some(other) = names.insert(&s.name, s.id) {
            errors.push(format!(
                "step names must be unique: '{}' is used by steps {other} and {}",
                s.name, s.id
            ));
        }
        match s.kind {
            StepType::InstructionSet if s.instruction_set.is_none() => errors.push(format!(
                "{} is an instruction_set step but names no instruction_set",
                label(s)
            )),
            StepType::TemplateProcessing if s.template_id.is_none() => errors.push(format!(
                "{} is a template_processing step but names no template_id",
                label(s)
            )),
            StepType::ExternalApi if s.tool.is_none() => errors.push(format!(
                "{} is an external_api step but names no tool (a tool of this server, as listed by tools/list)",
                label(s)
            )),
            StepType::DatabaseOperation if s.operation.is_none() => errors.push(format!(
                "{} is a database_operation step but has no operation (an object {{\"collection\": \"<name>\", \"action\": \"create|update|delete|get\"}})",
                label(s)
            )),
            _ => {}
        }
        // A fallback step runs with the step's own fields, so its type needs them as well.
        match s.fallback_step.as_ref().map(|f| f.kind.as_str()) {
            Some("external_api") if s.tool.is_none() => errors.push(format!(
                "{}: its external_api fallback_step calls the step's tool, but the step names none",
                label(s)
            )),
            Some("database_operation") if s.operation.is_none() => errors.push(format!(
                "{}: its database_operation fallback_step uses the step's operation, but the step has none",
                label(s)
            )),
            _ => {}
        }
        if let Some(op) = &s.operation {
            if !valid_collection(&op.collection) {
                errors.push(format!(
                    "{}: operation.collection {:?} is not a valid collection name (it must match {COLLECTION_PATTERN}: a lowercase letter, then up to 49 lowercase letters, digits, '_' or '-')",
                    label(s),
                    op.collection
                ));
            }
        }
        if let Some(Err(e)) = s.rollback_action.as_deref().map(RollbackAction::parse) {
            errors.push(format!("{}: rollback_action {e}", label(s)));
        }
        if s.on_failure == OnFailure::Fallback && s.fallback_step.is_none() {
            errors.push(format!(
                "{} has on_failure: fallback but no fallback_step",
                label(s)
            ));
        }
    }

    let mut planned = Vec::with_capacity(steps.len());
    for (i, s) in steps.iter().enumerate() {
        let input = s
            .input_template
            .as_deref()
            .map(Template::parse)
            .transpose()
            .unwrap_or_else(|e| {
                errors.push(format!("{}: input_template {e}", label(s)));
                None
            });
        let condition = s
            .conditional_execution
            .as_deref()
            .map(expr::compile)
            .transpose()
            .unwrap_or_else(|e| {
                errors.push(format!("{}: conditional_execution {e}", label(s)));
                None
            });
        let mut deps = BTreeSet::new();
        for d in &s.depends_on {
            match by_id.get(d) {
                Some(&j) if j == i => errors.push(format!("{} depends on itself", label(s))),
                Some(&j) => {
                    deps.insert(j);
                }
                None => errors.push(format!(
                    "{} depends on step {d}, which does not exist",
                    label(s)
                )),
            }
        }
        let mut reads: Vec<String> = s.input_variables.clone();
        reads.extend(input.iter().flat_map(Template::variables));
        reads.extend(condition.iter().flat_map(Program::variables));
        for var in reads {
            let root = var.split(['.', '[']).next().unwrap_or(&var).to_string();
            if let Some(j) = (0..i)
                .rev()
                .find(|&j| steps[j].output_variables.contains(&root))
            {
                deps.insert(j);
            }
        }
        planned.push(PlannedStep {
            def: s.clone(),
            deps: deps.into_iter().collect(),
            input,
            condition,
        });
    }

    let outputs = declared_outputs(def).unwrap_or_else(|e| {
        errors.extend(e);
        Vec::new()
    });
    let order = match topo_order(&planned) {
        Ok(o) => o,
        Err(cycle) => {
            let path: Vec<String> = cycle
                .iter()
                .map(|&i| format!("{} '{}'", steps[i].id, steps[i].name))
                .collect();
            errors.push(format!("steps form a cycle: {}", path.join(" → ")));
            Vec::new()
        }
    };
    if errors.is_empty() {
        let inputs = def
            .rest
            .get("input_schema")
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        Ok(Plan {
            steps: planned,
            order,
            outputs,
            inputs,
        })
    } else {
        Err(errors)
    }
}

/// A topological order, or the positions along a cycle (first repeated at the end).
fn topo_order(steps: &[PlannedStep]) -> Result<Vec<usize>, Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut marks = vec![Mark::New; steps.len()];
    let mut order = Vec::with_capacity(steps.len());
    for start in 0..steps.len() {
        if marks[start] != Mark::New {
            continue;
        }
        // Iterative depth-first search; `path` holds (node, next dependency index).
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        marks[start] = Mark::Open;
        while let Some(&mut (node, ref mut next)) = path.last_mut() {
            if let Some(&dep) = steps[node].deps.get(*next) {
                *next += 1;
                match marks[dep] {
                    Mark::New => {
                        marks[dep] = Mark::Open;
                        path.push((dep, 0));
                    }
                    Mark::Open => {
                        let from = path.iter().position(|(n, _)| *n == dep).unwrap_or(0);
                        let mut cycle: Vec<usize> = path[from..].iter().map(|(n, _)| *n).collect();
                        cycle.reverse();
                        cycle.insert(0, dep);
                        return Err(cycle);
                    }
                    Mark::Done => {}
                }
            } else {
                marks[node] = Mark::Done;
                order.push(node);
                path.pop();
            }
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chain(steps: Value) -> ChainDef {
        serde_json::from_value(json!({ "name": "c", "title": "Chain", "steps": steps })).unwrap()
    }

    fn step(id: u32, name: &str, extra: Value) -> Value {
        let mut s = json!({ "id": id, "name": name, "type": "data_transformation" });
        if let (Some(s), Some(e)) = (s.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        s
    }

    #[test]
    fn dependencies_come_from_depends_on_and_data_flow() {
        let p = plan(&chain(json!([
            step(1, "validate", json!({ "output_variables": ["validation_status", "tier"] })),
            step(2, "comply", json!({ "conditional_execution": "{validation_status} == 'approved'", "output_variables": ["approval_required"] })),
            step(3, "search", json!({ "input_template": "Tier: {tier}", "output_variables": ["vendor_options"] })),
            step(4, "approve", json!({ "input_variables": ["approval_required"] })),
            step(5, "summary", json!({ "depends_on": [3, 4] })),
            step(6, "unrelated", json!({})),
        ])))
        .unwrap();
        let deps: Vec<Vec<usize>> = p.steps.iter().map(|s| s.deps.clone()).collect();
        assert_eq!(
            deps,
            vec![vec![], vec![0], vec![0], vec![1], vec![2, 3], vec![]]
        );
        let pos = |i: usize| p.order.iter().position(|&x| x == i).unwrap();
        for (i, s) in p.steps.iter().enumerate() {
            for &d in &s.deps {
                assert!(pos(d) < pos(i), "{d} before {i}");
            }
        }
    }

    #[test]
    fn cycles_are_reported_with_their_path() {
        let e = plan(&chain(json!([
            step(1, "a", json!({ "depends_on": [3] })),
            step(2, "b", json!({ "depends_on": [1] })),
            step(3, "c", json!({ "depends_on": [2] })),
        ])))
        .unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("steps form a cycle: "), "{e:?}");
        for n in ["1 'a'", "2 'b'", "3 'c'"] {
            assert!(e[0].contains(n), "{e:?}");
        }
    }

    #[test]
    fn structural_problems_are_each_reported() {
        let e = plan(&chain(json!([
            step(1, "a", json!({ "depends_on": [9] })),
            step(1, "a", json!({})),
            step(6, "self", json!({ "depends_on": [6] })),
            { "id": 3, "name": "ins", "type": "instruction_set" },
            { "id": 4, "name": "tpl", "type": "template_processing", "on_failure": "fallback" },
            step(5, "bad", json!({ "input_template": "x {a +}", "conditional_execution": "a ==" })),
        ])))
        .unwrap_err()
        .join("\n");
        for part in [
            "step ids must be unique: 1",
            "step names must be unique: 'a'",
            "depends on itself",
            "depends on step 9, which does not exist",
            "names no instruction_set",
            "names no template_id",
            "on_failure: fallback but no fallback_step",
            "step 5 'bad': input_template line 1, column 7",
            "step 5 'bad': conditional_execution line 1, column 5",
        ] {
            assert!(e.contains(part), "missing {part:?} in\n{e}");
        }
    }

    #[test]
    fn tool_and_record_steps_need_their_fields() {
        let e = plan(&chain(json!([
            { "id": 1, "name": "api", "type": "external_api" },
            { "id": 2, "name": "db", "type": "database_operation" },
            { "id": 3, "name": "bad-coll", "type": "database_operation", "operation": { "collection": "Leads", "action": "get" } },
            { "id": 4, "name": "fb", "type": "data_transformation", "on_failure": "fallback", "fallback_step": { "name": "x", "type": "external_api" } },
            step(5, "undo", json!({ "rollback_action": "delete_customer {{\"id\": {a +}}}" })),
            step(6, "braces", json!({ "rollback_action": "{{\"id\": 1}}" })),
        ])))
        .unwrap_err()
        .join("\n");
        for part in [
            "step 1 'api' is an external_api step but names no tool",
            "step 2 'db' is a database_operation step but has no operation",
            "step 3 'bad-coll': operation.collection \"Leads\" is not a valid collection name",
            "step 4 'fb': its external_api fallback_step calls the step's tool",
            "step 5 'undo': rollback_action arguments template line 1",
            "step 6 'braces': rollback_action must start with a tool name",
        ] {
            assert!(e.contains(part), "missing {part:?} in\n{e}");
        }
        let ok = plan(&chain(json!([
            { "id": 1, "name": "api", "type": "external_api", "tool": "process_template" },
            { "id": 2, "name": "db", "type": "database_operation", "operation": { "collection": "leads_2024-q1", "action": "create" }, "rollback_action": "notify" },
        ])));
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn collection_names_follow_the_pattern() {
        for good in ["a", "leads", "crm_contacts-2", &"a".repeat(50)] {
            assert!(valid_collection(good), "{good}");
        }
        for bad in ["", "1a", "_a", "A", "leads.x", "lé", &"a".repeat(51)] {
            assert!(!valid_collection(bad), "{bad}");
        }
    }

    #[test]
    fn rollback_actions_are_a_tool_and_an_optional_template() {
        let a = RollbackAction::parse("delete_customer").unwrap();
        assert_eq!(a.tool, "delete_customer");
        assert!(a.arguments.is_none());
        let a = RollbackAction::parse(
            "  templates::process-template\n {{\"id\": {customer.id|json}}} ",
        )
        .unwrap();
        assert_eq!(a.tool, "templates::process-template");
        let args = a.arguments.unwrap();
        assert_eq!(args.variables(), vec!["customer.id".to_string()]);
        let text = args
            .render(&json!({ "customer": { "id": "c-1" } }), Default::default())
            .unwrap()
            .text();
        assert_eq!(text, "{\"id\": \"c-1\"}");
        assert!(RollbackAction::parse("   ")
            .unwrap_err()
            .contains("is empty"));
        assert!(RollbackAction::parse("x {oops")
            .unwrap_err()
            .starts_with("arguments template line 1"));
    }

    #[test]
    fn output_schemas_declare_typed_outputs() {
        let mut def = chain(json!([step(1, "a", json!({ "output_variables": ["n"] }))]));
        def.rest.insert(
            "output_schema".into(),
            json!({ "type": "object", "properties": { "n": { "type": "integer" }, "s": { "type": "string", "description": "x" } } }),
        );
        let p = plan(&def).unwrap();
        assert_eq!(
            p.outputs,
            vec![
                ("n".to_string(), OutputType::Integer),
                ("s".to_string(), OutputType::String)
            ]
        );
        assert!(OutputType::Integer.accepts(&json!(3)) && OutputType::Integer.accepts(&json!(3.0)));
        assert!(
            !OutputType::Integer.accepts(&json!(2.5)) && !OutputType::Integer.accepts(&json!("3"))
        );
        assert!(OutputType::Date.accepts(&json!("2025-09-15T10:00:00Z")));
        def.rest.insert(
            "output_schema".into(),
            json!({ "type": "object", "properties": { "n": { "type": "text" } } }),
        );
        let e = plan(&def).unwrap_err().join("\n");
        assert!(
            e.contains("output_schema.properties.n.type is \"text\"; use string, number, integer"),
            "{e}"
        );
    }

    #[test]
    fn durations_are_estimated_from_step_types() {
        let p = plan(&chain(json!([
            { "id": 1, "name": "ask", "type": "instruction_set", "instruction_set": "x", "output_variables": ["a"] },
            { "id": 2, "name": "x", "type": "data_transformation", "parallel_execution": true, "depends_on": [1] },
            { "id": 3, "name": "y", "type": "external_api", "tool": "t", "parallel_execution": true, "depends_on": [1] },
        ])))
        .unwrap();
        assert_eq!(p.estimate_ms(false), 8_000 + 10 + 2_000);
        assert_eq!(p.estimate_ms(true), 8_000 + 2_000);
    }

    #[test]
    fn the_seed_corporate_chain_plans() {
        let seed = include_str!("testdata/corporate-booking-workflow.json");
        let def: ChainDef = serde_json::from_str(seed).unwrap();
        let p = plan(&def).unwrap();
        let deps: Vec<Vec<u32>> = p
            .steps
            .iter()
            .map(|s| s.deps.iter().map(|&d| p.steps[d].def.id).collect())
            .collect();
        // Step 5 also reads approval_required (step 2) in its input_template.
        assert_eq!(
            deps,
            vec![vec![], vec![1], vec![1, 2], vec![2], vec![2, 3, 4]]
        );
    }
}
