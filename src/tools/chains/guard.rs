//! Chains are never confused deputies (issue 15): whose rights a step acts with, and what of a
//! step the event stream and the chain tools' answers may show. Pure, so it is tested natively;
//! `host.rs` applies it at every step attempt.
//!
//! **Whose rights.** `create_chain` records the chain's author: the token's `sub` and the roles the
//! token carried (`execution_chains.author`, `author_roles`, migration 0026). An execution keeps
//! the author it started with, like the definition. Every step that reaches data (a tool call, a
//! `rollback_action`, a stored template, a record) acts as [`step_caller`]:
//!
//! - roles: those both the author (as recorded) and the runner (now) hold;
//! - identity: the runner's when the author is the runner; nobody's when either is anonymous;
//!   otherwise a delegate identity of this pair ([`delegate`]), which is no employee and owns
//!   nothing either of them owns, so rules that grant rows to a user (their own record, a
//!   manager's reporting chain, their own tickets) grant the step nothing, and what the step
//!   stores under its identity is readable only by runs of the same author and runner.
//!
//! Chains the server ships or builds (FlowMind's workflows) have no recorded author
//! (`author_roles` is NULL) and act with the runner's own rights.
//!
//! **What is shown.** A step whose tool marks a field `x-sensitive` (its input or output schema)
//! may carry a sensitive value, and so may every step that waits for it (dependencies and the
//! variables it reads). Events show such a step's tool arguments through the tool's redaction
//! and its outputs hidden; the chain tools' answers hide its outputs too ([`hidden_steps`]).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::engine::chain::{Plan, StepDef, StepType};
use crate::registry::{Caller, Registry, Tool};
use crate::tools::domain::HIDDEN;

/// Who saved a chain, as recorded then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    /// The token's `sub`; `None` for an anonymous author (or a chain saved before authors were
    /// recorded).
    pub user: Option<String>,
    /// The roles the author's token carried.
    pub roles: Vec<String>,
}

impl Author {
    /// The author of a chain `caller` saves now.
    pub fn of(caller: &Caller) -> Author {
        Author {
            user: caller.user.clone(),
            roles: caller.roles.clone(),
        }
    }

    /// The author a stored row records in its `author` and `author_roles` columns: `None` when
    /// `author_roles` is NULL (a chain the server ships or builds). Roles that are not a JSON
    /// array of strings count as none: a damaged record never widens what a step may do.
    pub fn from_row(row: &Value) -> Option<Author> {
        let roles = row.get("author_roles").and_then(Value::as_str)?;
        let roles = serde_json::from_str::<Vec<String>>(roles).unwrap_or_default();
        Some(Author {
            user: row
                .get("author")
                .and_then(Value::as_str)
                .map(str::to_string),
            roles,
        })
    }

    /// The values of the `author` and `author_roles` columns recording `author`.
    pub fn columns(author: Option<&Author>) -> [Value; 2] {
        match author {
            None => [Value::Null, Value::Null],
            Some(a) => [json!(a.user), json!(json!(a.roles).to_string())],
        }
    }
}

/// The identity of the steps of a chain `author` wrote when `runner`, someone else, runs it. It
/// names both, unambiguously (a JSON array), so each pair has its own (result cache, rate limits,
/// records the steps own), and it can be no token's `sub` of an employee.
pub fn delegate(author: &str, runner: &str) -> String {
    format!("chain-delegate:{}", json!([author, runner]))
}

/// Who a step of a chain written by `author` (`None`: shipped or built by the server) acts as
/// when `runner` runs it: the roles both hold, and the runner's identity only when the author is
/// the runner (see the module's documentation).
pub fn step_caller(author: Option<&Author>, runner: &Caller) -> Caller {
    let Some(author) = author else {
        return runner.clone();
    };
    let mut roles: Vec<String> = Vec::new();
    for r in &runner.roles {
        if author.roles.contains(r) && !roles.contains(r) {
            roles.push(r.clone());
        }
    }
    let user = match (&author.user, &runner.user) {
        (Some(a), Some(r)) if a == r => Some(r.clone()),
        (Some(a), Some(r)) => Some(delegate(a, r)),
        // An anonymous author or runner has no identity (and no roles) to lend.
        _ => None,
    };
    if user.is_none() {
        roles.clear();
    }
    Caller { user, roles }
}

fn list(roles: &[String]) -> String {
    if roles.is_empty() {
        "none".into()
    } else {
        roles.join(", ")
    }
}

/// What a step's rights were, for an error of a step that acted with fewer rights than the runner
/// has; `None` when it acted with the runner's own.
pub fn narrowed(author: Option<&Author>, runner: &Caller) -> Option<String> {
    let author = author?;
    let acting = step_caller(Some(author), runner);
    if acting == *runner {
        return None;
    }
    let who = match &author.user {
        Some(a) if runner.user.as_deref() == Some(a.as_str()) => "you, then".to_string(),
        Some(a) => a.clone(),
        None => "an anonymous caller (or before authors were recorded)".to_string(),
    };
    let missing: Vec<String> = runner
        .roles
        .iter()
        .filter(|r| !acting.roles.contains(r))
        .cloned()
        .collect();
    let identity = match &acting.user {
        Some(u) if runner.user.as_ref() == Some(u) => "",
        Some(_) => {
            " and as neither of you (no rows granted to a user, such as one's own record, apply)"
        }
        None => " and with no identity (as an anonymous caller)",
    };
    Some(format!(
        "chain steps act with the rights both the chain's author and the runner hold: the chain was saved by {who} holding roles {}, so this step acted with roles {} (missing {}){identity}. Run a chain saved by someone holding the rights it needs, or save it yourself.",
        list(&author.roles),
        list(&acting.roles),
        list(&missing),
    ))
}

/// The tool an `external_api` step (or one with an `external_api` fallback) calls, if it exists.
fn step_tool<'r>(registry: &'r Registry, step: &StepDef) -> Option<&'r Tool> {
    let calls = step.kind == StepType::ExternalApi
        || step
            .fallback_step
            .as_ref()
            .is_some_and(|f| f.kind == "external_api");
    let name = step.tool.as_deref().filter(|_| calls)?;
    registry.get(name).or_else(|| registry.by_id(name))
}

/// How much of each step the event stream and the chain tools' answers show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hidden {
    /// Steps whose tool has sensitive fields: their arguments are shown through the tool's
    /// redaction, their outputs not at all.
    pub own: BTreeSet<u32>,
    /// Steps that wait for one of those (or for a step that does): whatever they read may be
    /// sensitive, so neither their input nor their outputs are shown.
    pub tainted: BTreeSet<u32>,
}

impl Hidden {
    /// Whether a step's outputs are hidden.
    pub fn outputs(&self, id: u32) -> bool {
        self.own.contains(&id) || self.tainted.contains(&id)
    }
}

/// The steps of `plan` whose values are hidden ([`Hidden`]), in execution order so that a step
/// waiting for a hidden one is hidden too.
pub fn hidden_steps(plan: &Plan, registry: &Registry) -> Hidden {
    let mut hidden = vec![false; plan.steps.len()];
    let mut out = Hidden::default();
    for &i in &plan.order {
        let s = &plan.steps[i];
        let waits = s.deps.iter().any(|&d| hidden.get(d) == Some(&true));
        let own = step_tool(registry, &s.def).is_some_and(Tool::has_sensitive);
        if waits {
            out.tainted.insert(s.def.id);
        } else if own {
            out.own.insert(s.def.id);
        }
        hidden[i] = waits || own;
    }
    out
}

/// Every output variable of a hidden step, its value replaced.
pub fn hide(outputs: &Map<String, Value>) -> Value {
    Value::Object(crate::engine::sort::object(
        outputs.keys().map(|k| (k.clone(), json!(HIDDEN))),
    ))
}

/// A step's rendered input as events show it: as is for a step that is not hidden; for a step
/// whose own tool has sensitive fields, its arguments through the tool's redaction (hidden when
/// they are not a JSON object); hidden for a step that waits for a hidden one.
pub fn shown_input(
    hidden: &Hidden,
    registry: &Registry,
    step: &StepDef,
    input: Option<&str>,
) -> Value {
    if hidden.tainted.contains(&step.id) {
        return input.map_or(Value::Null, |_| json!(HIDDEN));
    }
    let Some(text) = input else {
        return Value::Null;
    };
    if !hidden.own.contains(&step.id) {
        return json!(text);
    }
    match (
        step_tool(registry, step),
        serde_json::from_str::<Value>(text.trim()),
    ) {
        (Some(tool), Ok(args @ Value::Object(_))) => json!(tool.redact(&args).to_string()),
        _ => json!(HIDDEN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::chain::{self, ChainDef};
    use crate::testkit::caller;
    use crate::tools::{catalog, Catalog};

    fn author(user: Option<&str>, roles: &[&str]) -> Author {
        Author::of(&caller(user, roles))
    }

    #[test]
    fn a_step_acts_with_the_roles_both_hold() {
        let hr = caller(Some("hr-1"), &["hr-read", "hr-write"]);
        // The exfiltration: a user with no roles wrote it, HR runs it.
        let s = step_caller(Some(&author(Some("mallory"), &[])), &hr);
        assert_eq!(s.roles, Vec::<String>::new());
        assert_eq!(
            s.user.as_deref(),
            Some(r#"chain-delegate:["mallory","hr-1"]"#)
        );
        // Another HR user's chain keeps the roles both hold, not the runner's identity.
        let s = step_caller(
            Some(&author(Some("hr-2"), &["hr-write", "finance-read"])),
            &hr,
        );
        assert_eq!(s.roles, vec!["hr-write"]);
        assert_ne!(s.user, hr.user);
        // One's own chain: one's identity, the roles held both when saving and now.
        let s = step_caller(Some(&author(Some("hr-1"), &["hr-read", "executive"])), &hr);
        assert_eq!(s, caller(Some("hr-1"), &["hr-read"]));
        // Shipped chains act with the runner's own rights.
        assert_eq!(step_caller(None, &hr), hr);
    }

    #[test]
    fn anonymous_authors_and_runners_lend_nothing() {
        let hr = caller(Some("hr-1"), &["hr-read"]);
        assert_eq!(
            step_caller(Some(&author(None, &[])), &hr),
            Caller::anonymous()
        );
        let anon = Caller::anonymous();
        assert_eq!(
            step_caller(Some(&author(Some("hr-1"), &["hr-read"])), &anon),
            Caller::anonymous()
        );
    }

    #[test]
    fn delegate_identities_are_unambiguous() {
        assert_ne!(delegate("a:b", "c"), delegate("a", "b:c"));
        assert_ne!(delegate("a", "b"), delegate("b", "a"));
    }

    #[test]
    fn stored_authors_round_trip_and_damage_never_widens() {
        let a = author(Some("u1"), &["hr-read"]);
        let [user, roles] = Author::columns(Some(&a));
        let row = json!({ "author": user, "author_roles": roles });
        assert_eq!(Author::from_row(&row), Some(a));
        assert_eq!(
            Author::from_row(&json!({ "author": null, "author_roles": null })),
            None
        );
        let damaged = Author::from_row(&json!({ "author": "u1", "author_roles": "{\"x\":1}" }));
        assert_eq!(damaged.map(|a| a.roles), Some(Vec::new()));
    }

    #[test]
    fn narrowed_rights_are_named() {
        let hr = caller(Some("hr-1"), &["hr-read", "hr-write"]);
        let why = narrowed(Some(&author(Some("mallory"), &[])), &hr).unwrap();
        assert!(why.contains("saved by mallory holding roles none"), "{why}");
        assert!(
            why.contains("acted with roles none (missing hr-read, hr-write)"),
            "{why}"
        );
        assert!(why.contains("as neither of you"), "{why}");
        let own = narrowed(Some(&author(Some("hr-1"), &["hr-read"])), &hr).unwrap();
        assert!(
            own.contains("saved by you, then holding roles hr-read, so this step acted with roles hr-read (missing hr-write). Run"),
            "{own}"
        );
        assert_eq!(narrowed(None, &hr), None);
        assert_eq!(
            narrowed(Some(&author(Some("hr-1"), &["hr-read", "hr-write"])), &hr),
            None
        );
    }

    #[test]
    fn steps_of_sensitive_tools_and_their_dependents_are_hidden() {
        let registry = Registry::new(catalog(Catalog::Production)).unwrap();
        let def: ChainDef = serde_json::from_value(json!({
            "name": "raise", "title": "Raise",
            "steps": [
                { "id": 1, "name": "raise", "type": "external_api", "tool": "update_salary",
                  "input_template": "{{\"employee_id\": \"e\", \"new_salary\": 250000}}", "output_variables": ["answer"] },
                { "id": 2, "name": "keep", "type": "data_transformation", "input_template": "{answer|json}", "output_variables": ["kept"] },
                { "id": 3, "name": "other", "type": "data_transformation", "input_template": "x", "output_variables": ["o"] },
            ]
        }))
        .unwrap();
        let plan = chain::plan(&def).unwrap();
        let hidden = hidden_steps(&plan, &registry);
        assert_eq!(hidden.own, BTreeSet::from([1]));
        assert_eq!(hidden.tainted, BTreeSet::from([2]));
        assert!(!hidden.outputs(3));
        let shown = shown_input(
            &hidden,
            &registry,
            &plan.steps[0].def,
            Some("{\"employee_id\": \"e\", \"new_salary\": 250000}"),
        );
        let args: Value = serde_json::from_str(shown.as_str().unwrap()).unwrap();
        assert_eq!(args, json!({ "employee_id": "e", "new_salary": HIDDEN }));
        assert_eq!(
            shown_input(
                &hidden,
                &registry,
                &plan.steps[0].def,
                Some("not json 250000")
            ),
            json!(HIDDEN)
        );
        assert_eq!(
            shown_input(&hidden, &registry, &plan.steps[1].def, Some("250000")),
            json!(HIDDEN)
        );
        assert_eq!(
            shown_input(&hidden, &registry, &plan.steps[2].def, Some("x")),
            json!("x")
        );
        let mut outputs = Map::new();
        outputs.insert("answer".into(), json!({ "newSalary": 250000 }));
        assert_eq!(hide(&outputs), json!({ "answer": HIDDEN }));
    }
}
