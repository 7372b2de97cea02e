//! The pure parts of `external_api` and `database_operation` steps: which tools a chain may call,
//! tool arguments and outputs, and record changes with the D1 statements that apply, journal and
//! undo them. `host.rs` does the I/O; everything here is decided from values, so it is tested natively.
//!
//! **Record changes.** A write is a transition of one record from `from` to `to` (its data as JSON
//! text, or absent). Every statement that takes part in one is guarded by
//! `(SELECT data FROM collection_records WHERE collection = … AND id = …) IS from`, so a batch that
//! journals and writes (or un-journals and restores) applies completely when the record is as
//! expected and not at all otherwise, and the transition's `RETURNING id` tells which happened.

use serde_json::{Map, Value};

use crate::engine::chain::{ChainDef, RecordAction, RollbackAction, StepDef, StepType};
use crate::engine::run::{ErrorClass, StepError, StepOutcome};
use crate::registry::{Caller, Registry, Statement, Tool};

/// The toolset whose tools chains may not call: a chain step must not start, create or inspect
/// chains (no recursion, no chains rewriting themselves).
const CHAINS_TOOLSET: &str = "chains";

/// Largest record (its fields as JSON text) a step may write, in bytes. D1 rows may be larger, but
/// collections hold workflow records, not documents.
pub const MAX_RECORD_BYTES: usize = 100_000;

/// Longest record id, in characters.
const MAX_ID_CHARS: usize = 200;

/// A validation error: retrying cannot help.
pub fn invalid(message: String) -> StepError {
    StepError::new(ErrorClass::Validation, message)
}

/// The tool a step or `rollback_action` names (MCP name or registry id), unless it is unknown, not
/// allowed to `caller` (which looks the same: roles decide which tools exist for a caller) or a
/// chains tool.
pub fn resolve_tool<'r>(
    registry: &'r Registry,
    name: &str,
    caller: &Caller,
) -> Result<&'r Tool, String> {
    let tool = registry
        .get(name)
        .or_else(|| registry.by_id(name))
        .filter(|t| caller.has_any(t.def.roles))
        .ok_or_else(|| {
            format!(
                "tool {name:?} does not exist on this server; tools/list shows the tools (give an MCP name such as process_template or a registry id such as templates::process-template)"
            )
        })?;
    if tool.def.toolset == CHAINS_TOOLSET {
        return Err(format!(
            "tool {name:?} belongs to the chains toolset, and chain steps may not run chain tools (execute_chain, create_chain, get_chain_status, …)"
        ));
    }
    Ok(tool)
}

/// Every tool reference of a chain that does not resolve: `tool` of external_api steps (and of
/// steps with an external_api fallback) and the tool of each `rollback_action`.
pub fn tool_problems(registry: &Registry, def: &ChainDef, caller: &Caller) -> Vec<String> {
    let mut problems = Vec::new();
    for s in &def.steps {
        let label = format!("step {} '{}'", s.id, s.name);
        let calls = s.kind == StepType::ExternalApi
            || s.fallback_step
                .as_ref()
                .is_some_and(|f| f.kind == "external_api");
        if let (true, Some(tool)) = (calls, &s.tool) {
            if let Err(e) = resolve_tool(registry, tool, caller) {
                problems.push(format!("{label}: {e}"));
            }
        }
        // A rollback_action that does not parse is already the planner's error.
        if let Some(Ok(action)) = s.rollback_action.as_deref().map(RollbackAction::parse) {
            if let Err(e) = resolve_tool(registry, &action.tool, caller) {
                problems.push(format!("{label}: rollback_action {e}"));
            }
        }
    }
    problems
}

/// Parses a rendered text that must be a JSON object (`what` names it in the error); no text is `{}`.
pub fn json_object(what: &str, text: Option<&str>) -> Result<Map<String, Value>, String> {
    let Some(text) = text else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!(
            "{what} must be a JSON object, but it rendered a JSON {}",
            kind_of(&other)
        )),
        Err(e) => Err(format!(
            "{what} must be a JSON object (write literal braces as {{{{ and }}}} in the template), but it rendered {:?}, which is not JSON: {e}",
            shorten(text)
        )),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn shorten(text: &str) -> String {
    if text.chars().count() > 120 {
        format!("{}…", text.chars().take(120).collect::<String>())
    } else {
        text.to_string()
    }
}

/// The output variables of a step that produces one value: that value under the first output
/// variable, or under the step's name when it declares none.
pub fn first_output(step: &StepDef, value: Value) -> Map<String, Value> {
    let key = step
        .output_variables
        .first()
        .cloned()
        .unwrap_or_else(|| step.name.clone());
    let mut out = Map::new();
    out.insert(key, value);
    out
}

/// Picks the step's output variables from a JSON object; the error lists the missing keys.
pub fn pick(step: &StepDef, obj: &Map<String, Value>) -> Result<Map<String, Value>, Vec<String>> {
    let missing: Vec<String> = step
        .output_variables
        .iter()
        .filter(|k| !obj.contains_key(*k))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    Ok(step
        .output_variables
        .iter()
        .map(|k| (k.clone(), obj[k].clone()))
        .collect())
}

/// The text blocks of a `CallToolResult`, joined by newlines.
fn result_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The step error for a `CallToolResult` with `isError`, classed by the executor's outcome:
/// `timeout`, `unavailable` and `rate_limited` are worth retrying, anything else is not. A domain
/// tool's error answer (`structuredContent.status: "error"`, sent without `isError`) is a failure
/// too, classed by its code: a database error is worth retrying, a refusal or bad input is not.
/// None when it succeeded.
pub fn tool_failure(what: &str, result: &Value, outcome: &str) -> Option<StepError> {
    let answer = &result["structuredContent"];
    if result["isError"] != Value::Bool(true) && answer["status"] != "error" {
        return None;
    }
    let class = match (outcome, answer["code"].as_str()) {
        // A rate-limited call took no token, so the step's retries (with backoff) may get one.
        ("timeout" | "unavailable" | "rate_limited", _) => {
            ErrorClass::Transient(outcome.to_string())
        }
        (_, Some("DATABASE_ERROR")) => ErrorClass::Transient("unavailable".into()),
        (_, Some("INSUFFICIENT_PERMISSIONS" | "USER_MISMATCH")) => ErrorClass::Permission,
        _ => ErrorClass::Validation,
    };
    let text = match (answer["code"].as_str(), answer["message"].as_str()) {
        (Some(code), Some(message)) => format!(
            "{code}: {message} {}",
            answer["suggestedAction"].as_str().unwrap_or_default()
        )
        .trim_end()
        .to_string(),
        _ => result_text(result),
    };
    Some(StepError::new(class, format!("{what} failed: {text}")))
}

/// An external_api step's outputs from its tool's `CallToolResult`: with one output variable, the
/// `structuredContent` when there is one, else the text; with several, picked from the
/// `structuredContent` object.
pub fn tool_outputs(step: &StepDef, tool: &str, result: &Value, outcome: &str) -> StepOutcome {
    let what = format!("step '{}': tool {tool}", step.name);
    if let Some(e) = tool_failure(&what, result, outcome) {
        return Err(e);
    }
    let structured = result.get("structuredContent");
    if step.output_variables.len() <= 1 {
        let value = structured
            .cloned()
            .unwrap_or_else(|| Value::String(result_text(result)));
        return Ok(first_output(step, value));
    }
    match structured {
        Some(Value::Object(obj)) => pick(step, obj).map_err(|missing| {
            invalid(format!(
                "{what} returned structuredContent without {}",
                missing.join(", ")
            ))
        }),
        _ => Err(invalid(format!(
            "{what} returned no structuredContent object, so the step's output variables {} cannot be picked from it; declare one output variable to receive its text",
            step.output_variables.join(", ")
        ))),
    }
}

/// What a database_operation step asked for: the record id (none for a create that generates one)
/// and the other fields of its rendered input.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordRequest {
    /// The `id` field.
    pub id: Option<String>,
    /// The remaining fields.
    pub fields: Map<String, Value>,
}

/// Splits a step's input object into id and fields. `create` may omit the id; the others need it.
pub fn record_request(
    action: RecordAction,
    mut data: Map<String, Value>,
) -> Result<RecordRequest, String> {
    let id = match data.remove("id") {
        None | Some(Value::Null) if action == RecordAction::Create => None,
        None | Some(Value::Null) => {
            return Err(format!(
                "{} needs the record's \"id\" in the input_template object",
                action.as_str()
            ))
        }
        Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= MAX_ID_CHARS => Some(s),
        Some(other) => {
            return Err(format!(
                "the record \"id\" must be a string of 1 to {MAX_ID_CHARS} characters, not {other}"
            ))
        }
    };
    Ok(RecordRequest { id, fields: data })
}

/// A record change a step makes: its data before and after (JSON text, none when absent) and the
/// record as the step outputs it (`{id, ...fields}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The data the record must have for the change to apply.
    pub before: Option<String>,
    /// The data it has afterwards.
    pub after: Option<String>,
    /// The step's output.
    pub record: Value,
}

impl Change {
    /// Whether the change writes anything (`get`, and an update to the same data, do not).
    pub fn writes(&self) -> bool {
        self.before != self.after
    }
}

fn with_id(id: &str, fields: &Map<String, Value>) -> Value {
    let mut record = fields.clone();
    record.insert("id".into(), Value::String(id.to_string()));
    Value::Object(record)
}

/// Works out a record action on the record's current data (`current`, none when it does not exist).
pub fn plan_change(
    action: RecordAction,
    collection: &str,
    id: &str,
    current: Option<&str>,
    fields: Map<String, Value>,
) -> Result<Change, String> {
    let current_fields = current
        .map(|text| match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(format!(
                "record {id:?} in collection {collection:?} is not a stored JSON object"
            )),
        })
        .transpose()?;
    let not_found = || {
        format!(
            "record {id:?} not found in collection {collection:?}; create it first (action create)"
        )
    };
    let after = |fields: &Map<String, Value>| -> Result<String, String> {
        let text = Value::Object(fields.clone()).to_string();
        if text.len() > MAX_RECORD_BYTES {
            return Err(format!(
                "record {id:?} would be {} bytes of JSON; records are limited to {MAX_RECORD_BYTES}",
                text.len()
            ));
        }
        Ok(text)
    };
    let before = current.map(str::to_string);
    match (action, current_fields) {
        (RecordAction::Create, Some(_)) => Err(format!(
            "record {id:?} already exists in collection {collection:?}; use action update to change it"
        )),
        (RecordAction::Create, None) => Ok(Change {
            before: None,
            after: Some(after(&fields)?),
            record: with_id(id, &fields),
        }),
        (RecordAction::Update, Some(mut merged)) => {
            merged.extend(fields);
            Ok(Change {
                before,
                after: Some(after(&merged)?),
                record: with_id(id, &merged),
            })
        }
        (RecordAction::Delete, Some(old)) => Ok(Change {
            before,
            after: None,
            record: with_id(id, &old),
        }),
        (RecordAction::Get, Some(old)) => Ok(Change {
            after: before.clone(),
            before,
            record: with_id(id, &old),
        }),
        (RecordAction::Update | RecordAction::Delete | RecordAction::Get, None) => {
            Err(not_found())
        }
    }
}

/// The guard of every statement of a change, over parameters `?c` (collection), `?i` (id) and
/// `?f` (the expected data, NULL for "absent"): `IS` compares NULLs as equal, and a scalar subquery
/// with no row is NULL, so one expression covers both cases.
fn guard(c: u8, i: u8, f: u8) -> String {
    format!("(SELECT data FROM collection_records WHERE collection = ?{c} AND id = ?{i}) IS ?{f}")
}

fn text_or_null(t: Option<&str>) -> Value {
    t.map_or(Value::Null, |t| Value::String(t.to_string()))
}

/// Moves a record from `from` to `to` if it is at `from`; returns `id` when it did. `from` and `to`
/// are never both absent (a create has an after, a delete a before).
pub fn transition(collection: &str, id: &str, from: Option<&str>, to: Option<&str>) -> Statement {
    let params = vec![
        Value::String(collection.to_string()),
        Value::String(id.to_string()),
        text_or_null(from),
    ];
    match to {
        Some(to) => {
            let mut params = params;
            params.push(Value::String(to.to_string()));
            Statement::new(
                format!(
                    "INSERT INTO collection_records (collection, id, data) SELECT ?1, ?2, ?4 WHERE {}
                     ON CONFLICT (collection, id) DO UPDATE SET data = excluded.data,
                       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
                     RETURNING id",
                    guard(1, 2, 3)
                ),
                params,
            )
        }
        None => Statement::new(
            "DELETE FROM collection_records WHERE collection = ?1 AND id = ?2 AND data IS ?3 RETURNING id",
            params,
        ),
    }
}

/// Journals a change of `step_id` in an execution, if the record is at `before`. Put it before the
/// [`transition`] in the same batch: both then see the same record.
pub fn journal(
    execution_id: &str,
    step_id: u32,
    collection: &str,
    id: &str,
    change: &Change,
) -> Statement {
    Statement::new(
        format!(
            "INSERT INTO record_changes (execution_id, step_id, seq, collection, record_id, before, after)
             SELECT ?1, ?2, COALESCE((SELECT MAX(seq) FROM record_changes WHERE execution_id = ?1), 0) + 1, ?3, ?4, ?5, ?6
             WHERE {}",
            guard(3, 4, 5)
        ),
        vec![
            Value::String(execution_id.to_string()),
            Value::from(step_id),
            Value::String(collection.to_string()),
            Value::String(id.to_string()),
            text_or_null(change.before.as_deref()),
            text_or_null(change.after.as_deref()),
        ],
    )
}

/// A journal row, as read back for an undo.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRow {
    /// Position in the execution's journal.
    pub seq: i64,
    /// The collection.
    pub collection: String,
    /// The record id.
    pub record_id: String,
    /// Data before the change.
    pub before: Option<String>,
    /// Data after it.
    pub after: Option<String>,
}

impl JournalRow {
    /// Reads a row of `SELECT seq, collection, record_id, before, after FROM record_changes`.
    pub fn from_row(row: &Value) -> Option<JournalRow> {
        Some(JournalRow {
            seq: row["seq"].as_i64()?,
            collection: row["collection"].as_str()?.to_string(),
            record_id: row["record_id"].as_str()?.to_string(),
            before: row["before"].as_str().map(str::to_string),
            after: row["after"].as_str().map(str::to_string),
        })
    }

    /// The batch that undoes this row: forget it, then restore `before`, both only if the record is
    /// still at `after`. The second statement returns the id when the undo applied.
    pub fn undo(&self, execution_id: &str) -> Vec<Statement> {
        vec![
            Statement::new(
                format!(
                    "DELETE FROM record_changes WHERE execution_id = ?1 AND seq = ?2 AND {}",
                    guard(3, 4, 5)
                ),
                vec![
                    Value::String(execution_id.to_string()),
                    Value::from(self.seq),
                    Value::String(self.collection.clone()),
                    Value::String(self.record_id.clone()),
                    text_or_null(self.after.as_deref()),
                ],
            ),
            transition(
                &self.collection,
                &self.record_id,
                self.after.as_deref(),
                self.before.as_deref(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools;
    use serde_json::json;

    fn step(outputs: &[&str]) -> StepDef {
        serde_json::from_value(json!({ "id": 1, "name": "s", "type": "external_api", "tool": "t", "output_variables": outputs })).unwrap()
    }

    fn registry() -> Registry {
        Registry::new(tools::catalog(tools::Catalog::Production)).unwrap()
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn tools_resolve_by_name_or_id_but_never_to_chain_tools() {
        let r = registry();
        assert_eq!(
            resolve_tool(&r, "process_template", &Caller::anonymous())
                .unwrap()
                .def
                .name,
            "process_template"
        );
        assert_eq!(
            resolve_tool(&r, "templates::process-template", &Caller::anonymous())
                .unwrap()
                .def
                .name,
            "process_template"
        );
        let e = resolve_tool(&r, "delete_everything", &Caller::anonymous()).unwrap_err();
        assert!(
            e.contains("does not exist") && e.contains("tools/list"),
            "{e}"
        );
        for name in [
            "execute_chain",
            "create_chain",
            "get_chain_status",
            "chains::execute-chain",
        ] {
            let e = resolve_tool(&r, name, &Caller::anonymous()).unwrap_err();
            assert!(e.contains("chains toolset"), "{name}: {e}");
        }
    }

    #[test]
    fn chain_definitions_list_every_bad_tool_reference() {
        let def: ChainDef = serde_json::from_value(json!({ "name": "c", "title": "Chain", "steps": [
            { "id": 1, "name": "call", "type": "external_api", "tool": "nope" },
            { "id": 2, "name": "nest", "type": "external_api", "tool": "execute_chain" },
            { "id": 3, "name": "fine", "type": "external_api", "tool": "process_template", "rollback_action": "create_chain {{}}" },
            { "id": 4, "name": "undo", "type": "data_transformation", "rollback_action": "discard" },
        ] }))
        .unwrap();
        let p = tool_problems(&registry(), &def, &Caller::anonymous()).join("\n");
        for part in [
            "step 1 'call': tool \"nope\" does not exist",
            "step 2 'nest': tool \"execute_chain\" belongs to the chains toolset",
            "step 3 'fine': rollback_action tool \"create_chain\" belongs to the chains toolset",
            "step 4 'undo': rollback_action tool \"discard\" does not exist",
        ] {
            assert!(p.contains(part), "missing {part:?} in\n{p}");
        }
    }

    #[test]
    fn arguments_must_be_a_json_object() {
        assert_eq!(json_object("input", None).unwrap(), Map::new());
        assert_eq!(
            json_object("input", Some(" {\"a\": 1} ")).unwrap(),
            obj(json!({ "a": 1 }))
        );
        assert!(json_object("input", Some("[1]"))
            .unwrap_err()
            .contains("rendered a JSON array"));
        let e = json_object("input", Some("a: 1")).unwrap_err();
        assert!(e.contains("not JSON") && e.contains("{{"), "{e}");
    }

    #[test]
    fn tool_results_become_outputs() {
        let text = json!({ "content": [{ "type": "text", "text": "Hello" }, { "type": "text", "text": "there" }] });
        assert_eq!(
            tool_outputs(&step(&["x"]), "t", &text, "ok").unwrap()["x"],
            "Hello\nthere"
        );
        let structured =
            json!({ "content": [], "structuredContent": { "a": 1, "b": [2], "c": 3 } });
        assert_eq!(
            tool_outputs(&step(&["x"]), "t", &structured, "ok").unwrap()["x"],
            json!({ "a": 1, "b": [2], "c": 3 })
        );
        assert_eq!(
            Value::Object(tool_outputs(&step(&["a", "b"]), "t", &structured, "ok").unwrap()),
            json!({ "a": 1, "b": [2] })
        );
        let e = tool_outputs(&step(&["a", "z", "y"]), "t", &structured, "ok").unwrap_err();
        assert_eq!(e.class, ErrorClass::Validation);
        assert!(e.message.ends_with("without z, y"), "{}", e.message);
        let e = tool_outputs(&step(&["a", "b"]), "t", &text, "ok").unwrap_err();
        assert!(
            e.message.contains("no structuredContent object"),
            "{}",
            e.message
        );
        assert_eq!(
            tool_outputs(&step(&[]), "t", &text, "ok").unwrap()["s"],
            "Hello\nthere"
        );
    }

    #[test]
    fn tool_errors_are_classed_by_outcome() {
        let err = json!({ "content": [{ "type": "text", "text": "boom" }], "isError": true });
        let class = |outcome| {
            tool_outputs(&step(&["x"]), "t", &err, outcome)
                .unwrap_err()
                .class
        };
        assert_eq!(class("timeout"), ErrorClass::Transient("timeout".into()));
        assert_eq!(
            class("unavailable"),
            ErrorClass::Transient("unavailable".into())
        );
        assert_eq!(
            class("rate_limited"),
            ErrorClass::Transient("rate_limited".into())
        );
        assert_eq!(class("tool_error"), ErrorClass::Validation);
        assert_eq!(class("invalid_arguments"), ErrorClass::Validation);
        let e = tool_outputs(&step(&["x"]), "t", &err, "tool_error").unwrap_err();
        assert_eq!(e.message, "step 's': tool t failed: boom");
        // A domain tool's error answer comes without isError.
        let domain = |code: &str| json!({ "content": [], "structuredContent": { "status": "error", "code": code, "message": "Employee E not found.", "suggestedAction": "Use list_employees." } });
        let e = tool_outputs(&step(&["x"]), "t", &domain("EMPLOYEE_NOT_FOUND"), "ok").unwrap_err();
        assert_eq!(e.class, ErrorClass::Validation);
        assert_eq!(e.message, "step 's': tool t failed: EMPLOYEE_NOT_FOUND: Employee E not found. Use list_employees.");
        let class = |code| {
            tool_outputs(&step(&["x"]), "t", &domain(code), "ok")
                .unwrap_err()
                .class
        };
        assert_eq!(
            class("DATABASE_ERROR"),
            ErrorClass::Transient("unavailable".into())
        );
        assert_eq!(class("INSUFFICIENT_PERMISSIONS"), ErrorClass::Permission);
    }

    #[test]
    fn record_requests_need_an_id_except_to_create() {
        let r = record_request(RecordAction::Create, obj(json!({ "name": "A" }))).unwrap();
        assert_eq!(
            r,
            RecordRequest {
                id: None,
                fields: obj(json!({ "name": "A" }))
            }
        );
        let r = record_request(RecordAction::Update, obj(json!({ "id": "x", "n": 1 }))).unwrap();
        assert_eq!(r.id.as_deref(), Some("x"));
        assert_eq!(r.fields, obj(json!({ "n": 1 })));
        for action in [
            RecordAction::Update,
            RecordAction::Delete,
            RecordAction::Get,
        ] {
            let e = record_request(action, Map::new()).unwrap_err();
            assert!(e.contains("needs the record's \"id\""), "{e}");
        }
        for bad in [json!(5), json!(""), json!("x".repeat(201)), json!({})] {
            let e = record_request(RecordAction::Get, obj(json!({ "id": bad }))).unwrap_err();
            assert!(e.contains("must be a string"), "{e}");
        }
    }

    #[test]
    fn changes_follow_the_record_rules() {
        let f = |v: Value| obj(v);
        let c = plan_change(
            RecordAction::Create,
            "leads",
            "a",
            None,
            f(json!({ "n": 1 })),
        )
        .unwrap();
        assert_eq!(c.before, None);
        assert_eq!(c.after.as_deref(), Some("{\"n\":1}"));
        assert_eq!(c.record, json!({ "id": "a", "n": 1 }));
        assert!(c.writes());
        let e =
            plan_change(RecordAction::Create, "leads", "a", Some("{}"), Map::new()).unwrap_err();
        assert!(
            e.contains("already exists") && e.contains("action update"),
            "{e}"
        );

        let current = "{\"n\":1,\"s\":\"new\"}";
        let c = plan_change(
            RecordAction::Update,
            "leads",
            "a",
            Some(current),
            f(json!({ "s": "won", "v": 2 })),
        )
        .unwrap();
        assert_eq!(c.before.as_deref(), Some(current));
        assert_eq!(
            serde_json::from_str::<Value>(c.after.as_deref().unwrap()).unwrap(),
            json!({ "n": 1, "s": "won", "v": 2 })
        );
        assert_eq!(c.record, json!({ "id": "a", "n": 1, "s": "won", "v": 2 }));

        let c = plan_change(
            RecordAction::Delete,
            "leads",
            "a",
            Some(current),
            Map::new(),
        )
        .unwrap();
        assert_eq!(
            (c.before.as_deref(), c.after.as_deref()),
            (Some(current), None)
        );
        assert_eq!(c.record, json!({ "id": "a", "n": 1, "s": "new" }));

        let c = plan_change(RecordAction::Get, "leads", "a", Some(current), Map::new()).unwrap();
        assert!(!c.writes());
        assert_eq!(c.record["s"], "new");

        for action in [
            RecordAction::Update,
            RecordAction::Delete,
            RecordAction::Get,
        ] {
            let e = plan_change(action, "leads", "zz", None, Map::new()).unwrap_err();
            assert_eq!(
                e,
                "record \"zz\" not found in collection \"leads\"; create it first (action create)"
            );
        }
        let big = f(json!({ "blob": "x".repeat(MAX_RECORD_BYTES) }));
        assert!(plan_change(RecordAction::Create, "leads", "a", None, big)
            .unwrap_err()
            .contains("limited to"));
    }

    #[test]
    fn statements_are_guarded_by_the_expected_data() {
        let c = plan_change(
            RecordAction::Create,
            "leads",
            "a",
            None,
            obj(json!({ "n": 1 })),
        )
        .unwrap();
        let j = journal("exec-1", 3, "leads", "a", &c);
        assert!(j.sql.contains(
            "WHERE (SELECT data FROM collection_records WHERE collection = ?3 AND id = ?4) IS ?5"
        ));
        assert_eq!(
            j.params,
            vec![
                json!("exec-1"),
                json!(3),
                json!("leads"),
                json!("a"),
                Value::Null,
                json!("{\"n\":1}")
            ]
        );
        let w = transition("leads", "a", None, c.after.as_deref());
        assert!(
            w.sql.starts_with("INSERT INTO collection_records")
                && w.sql.contains("IS ?3")
                && w.sql.ends_with("RETURNING id")
        );
        assert_eq!(
            w.params,
            vec![json!("leads"), json!("a"), Value::Null, json!("{\"n\":1}")]
        );

        let row = JournalRow::from_row(&json!({ "seq": 7, "collection": "leads", "record_id": "a", "before": null, "after": "{\"n\":1}" })).unwrap();
        let undo = row.undo("exec-1");
        assert!(undo[0].sql.starts_with("DELETE FROM record_changes"));
        assert_eq!(
            undo[0].params,
            vec![
                json!("exec-1"),
                json!(7),
                json!("leads"),
                json!("a"),
                json!("{\"n\":1}")
            ]
        );
        assert!(undo[1].sql.starts_with("DELETE FROM collection_records"));
        assert_eq!(
            undo[1].params,
            vec![json!("leads"), json!("a"), json!("{\"n\":1}")]
        );
        assert!(JournalRow::from_row(&json!({ "seq": "x" })).is_none());
    }
}
