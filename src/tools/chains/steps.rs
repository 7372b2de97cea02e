//! The pure parts of `external_api` and `database_operation` steps: which tools a chain may call,
//! tool arguments and outputs, and record changes with the D1 statements that apply, journal and
//! undo them. `host.rs` does the I/O; everything here is decided from values, so it is tested natively.
//!
//! **Record changes.** A write is a transition of one record from `from` to `to` (its data as JSON
//! text, or absent). Every statement that takes part in one is guarded by
//! `(SELECT data FROM collection_records WHERE collection = … AND id = …) IS from`, so a batch that
//! journals and writes (or un-journals and restores) applies completely when the record is as
//! expected and not at all otherwise, and the transition's `RETURNING id` tells which happened.

use serde_json::{json, Map, Value};

use crate::engine::chain::{ChainDef, Operation, RecordAction, RollbackAction, StepDef, StepType};
use crate::engine::run::{codes, ErrorClass, StepError, StepOutcome};
use crate::registry::{Caller, Registry, Statement, Tool};
use crate::tools::ownership::{Principal, Sharing};

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

/// The tool a step or `rollback_action` names (MCP name, registry id, or the seed's tool id with a
/// server name), unless it is unknown, not allowed to `caller` (which looks the same: roles decide
/// which tools exist for a caller) or a chains tool.
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
                "tool {name:?} does not exist on this server; tools/list shows the tools (give an MCP name such as search_flights, a registry id such as flights::search-flights, or a server-qualified id such as flights-mcp::search-flights)"
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
            crate::engine::clip(text, 120)
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
    Ok(crate::engine::sort::object(
        step.output_variables
            .iter()
            .map(|k| (k.clone(), obj[k].clone())),
    ))
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
/// a timeout (`api_timeout`), an unavailable upstream (`vendor_unavailable`) and the caller's rate
/// limit (`rate_limited`) are worth retrying, anything else is not. A domain tool's error answer
/// (`structuredContent.status: "error"`, sent without `isError`) is a failure too, classed by its
/// code: a database error is an unavailable service, a refusal or bad input is not retried.
/// None when it succeeded.
pub fn tool_failure(what: &str, result: &Value, outcome: &str) -> Option<StepError> {
    let answer = &result["structuredContent"];
    if result["isError"] != Value::Bool(true) && answer["status"] != "error" {
        return None;
    }
    let class = match (outcome, answer["code"].as_str()) {
        ("timeout", _) => ErrorClass::Transient(codes::API_TIMEOUT.into()),
        ("unavailable", _) | (_, Some("DATABASE_ERROR")) => {
            ErrorClass::Transient(codes::VENDOR_UNAVAILABLE.into())
        }
        // A rate-limited call took no token, so the step's retries (with backoff) may get one.
        ("rate_limited", _) => ErrorClass::Transient(codes::RATE_LIMITED.into()),
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

/// A value given where a template declares text, as text: a list becomes one `- item` line per
/// item (a markdown list), an object `key: value` pairs; items and values that are text stay as
/// they are, others are written as JSON.
pub fn as_text(v: &Value) -> String {
    fn plain(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Object(m) => m
                .iter()
                .map(|(k, v)| format!("{k}: {}", plain_scalar(v)))
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_string(),
        }
    }
    fn plain_scalar(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
    match v {
        Value::Array(items) => items
            .iter()
            .map(|i| format!("- {}", plain(i)))
            .collect::<Vec<_>>()
            .join("\n"),
        other => plain(other),
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

/// The sharing of the records a step's `create` makes: its operation's `visibility` and
/// `shared_roles`, private when it names neither.
pub fn record_sharing(op: &Operation) -> Result<Sharing, String> {
    let mut asked = Map::new();
    if let Some(v) = &op.visibility {
        asked.insert("visibility".into(), json!(v));
    }
    if let Some(r) = &op.shared_roles {
        asked.insert("shared_roles".into(), json!(r));
    }
    Sharing::from_args(&Value::Object(asked), "operation.")
        .map(|s| s.unwrap_or_else(Sharing::private))
        .map_err(|e| e.to_string())
}

/// Every database_operation step whose operation asks for a sharing that is not valid.
pub fn sharing_problems(def: &ChainDef) -> Vec<String> {
    def.steps
        .iter()
        .filter_map(|s| {
            let op = s.operation.as_ref()?;
            record_sharing(op)
                .err()
                .map(|e| format!("step {} '{}': {e}", s.id, s.name))
        })
        .collect()
}

/// The query of the record `collection`/`id` when `reader` may read it: its `data`, whether they
/// may change it (`writable`, 0 or 1) and whether it is the server's (`shipped`).
pub fn read_record(collection: &str, id: &str, reader: &Principal) -> Statement {
    let readable = reader.can_read("", 3);
    let writable = reader.can_write("", 5);
    let mut params = vec![json!(collection), json!(id)];
    params.extend(readable.params);
    params.extend(writable.params);
    Statement::new(
        format!(
            "SELECT data, {} AS writable, owner IS NULL AS shipped FROM collection_records
             WHERE collection = ?1 AND id = ?2 AND {}",
            writable.sql, readable.sql
        ),
        params,
    )
}

/// Why `action` may not touch the record `read_record` found (`row`): the reader may see it but
/// not change it. `None` when the action may go on.
pub fn record_refusal(
    action: RecordAction,
    collection: &str,
    id: &str,
    row: &Value,
) -> Option<String> {
    if matches!(action, RecordAction::Get | RecordAction::Create)
        || row["writable"].as_i64() == Some(1)
    {
        return None;
    }
    Some(if row["shipped"].as_i64() == Some(1) {
        format!(
            "record {id:?} in collection {collection:?} is shipped with the server; only a caller with the 'admin' role may {} it",
            action.as_str()
        )
    } else {
        format!(
            "record {id:?} in collection {collection:?} belongs to another owner: you may read it but not {} it (only its owner may); create a record of your own instead",
            action.as_str()
        )
    })
}

/// The query that finds whether any record holds `collection`/`id`, whoever may read it.
pub fn record_held(collection: &str, id: &str) -> Statement {
    Statement::new(
        "SELECT 1 AS held FROM collection_records WHERE collection = ?1 AND id = ?2",
        vec![json!(collection), json!(id)],
    )
}

/// The refusal of a create whose id another owner's record holds (ids are unique per collection).
pub fn id_taken(collection: &str, id: &str) -> String {
    format!(
        "record id {id:?} in collection {collection:?} is taken by a record of another owner; give the record another id, or leave \"id\" out to get a generated one"
    )
}

/// Who a record belongs to and who may read it besides: what inserting it writes (see
/// `tools::ownership`).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordAccess {
    /// `user:<sub>`, `session:<id>`, or none for the server's records.
    pub owner: Option<String>,
    /// `private`, `shared` or `public`.
    pub visibility: String,
    /// The JSON array of roles a shared record is shared with.
    pub shared_roles: String,
}

impl RecordAccess {
    /// The access of a record `owner` creates with `sharing`.
    pub fn new(owner: &str, sharing: &Sharing) -> RecordAccess {
        RecordAccess {
            owner: Some(owner.to_string()),
            visibility: sharing.visibility.as_str().to_string(),
            shared_roles: sharing.roles_json(),
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

/// Moves a record from `from` to `to` if it is at `from` and, when it exists, `writer` may change
/// it; returns `id` when it did. A record the move creates gets `access`; an existing one keeps
/// its own. `from` and `to` are never both absent (a create has an after, a delete a before).
pub fn transition(
    collection: &str,
    id: &str,
    from: Option<&str>,
    to: Option<&str>,
    access: &RecordAccess,
    writer: &Principal,
) -> Statement {
    let mut params = vec![
        Value::String(collection.to_string()),
        Value::String(id.to_string()),
        text_or_null(from),
    ];
    match to {
        Some(to) => {
            params.extend([
                Value::String(to.to_string()),
                text_or_null(access.owner.as_deref()),
                json!(access.visibility),
                json!(access.shared_roles),
            ]);
            let mine = writer.can_write("collection_records.", 8);
            params.extend(mine.params);
            Statement::new(
                format!(
                    "INSERT INTO collection_records (collection, id, data, owner, visibility, shared_roles)
                     SELECT ?1, ?2, ?4, ?5, ?6, ?7 WHERE {}
                     ON CONFLICT (collection, id) DO UPDATE SET data = excluded.data,
                       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
                     WHERE {}
                     RETURNING id",
                    guard(1, 2, 3),
                    mine.sql
                ),
                params,
            )
        }
        None => {
            let mine = writer.can_write("", 4);
            params.extend(mine.params);
            Statement::new(
                format!(
                    "DELETE FROM collection_records WHERE collection = ?1 AND id = ?2 AND data IS ?3 AND {} RETURNING id",
                    mine.sql
                ),
                params,
            )
        }
    }
}

/// Journals a change of `step_id` in an execution, if the record is at `before`, with the access
/// the record has then (none before a create). Put it before the [`transition`] in the same batch:
/// both then see the same record.
pub fn journal(
    execution_id: &str,
    step_id: u32,
    collection: &str,
    id: &str,
    change: &Change,
) -> Statement {
    Statement::new(
        format!(
            "INSERT INTO record_changes (execution_id, step_id, seq, collection, record_id, before, after, owner, visibility, shared_roles)
             SELECT ?1, ?2, COALESCE((SELECT MAX(seq) FROM record_changes WHERE execution_id = ?1), 0) + 1, ?3, ?4, ?5, ?6,
                    {current}owner {at}, {current}visibility {at}, {current}shared_roles {at}
             WHERE {}",
            guard(3, 4, 5),
            current = "(SELECT ",
            at = "FROM collection_records WHERE collection = ?3 AND id = ?4)",
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
    /// The record's access before the change (what restoring it gives back).
    pub access: RecordAccess,
}

impl JournalRow {
    /// Reads a row of `SELECT seq, collection, record_id, before, after, owner, visibility,
    /// shared_roles FROM record_changes`.
    pub fn from_row(row: &Value) -> Option<JournalRow> {
        Some(JournalRow {
            seq: row["seq"].as_i64()?,
            collection: row["collection"].as_str()?.to_string(),
            record_id: row["record_id"].as_str()?.to_string(),
            before: row["before"].as_str().map(str::to_string),
            after: row["after"].as_str().map(str::to_string),
            access: RecordAccess {
                owner: row["owner"].as_str().map(str::to_string),
                visibility: row["visibility"].as_str().unwrap_or("private").to_string(),
                shared_roles: row["shared_roles"].as_str().unwrap_or("[]").to_string(),
            },
        })
    }

    /// The batch that undoes this row as `writer` (who made the change): forget it, then restore
    /// `before` with its access, both only if the record is still at `after`. The second statement
    /// returns the id when the undo applied.
    pub fn undo(&self, execution_id: &str, writer: &Principal) -> Vec<Statement> {
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
                &self.access,
                writer,
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
        for seed in [
            "flights-mcp::search-flights",
            "flights::search-flights",
            "search_flights",
        ] {
            let tool = resolve_tool(&r, seed, &Caller::anonymous());
            assert_eq!(tool.unwrap().def.name, "search_flights", "{seed}");
        }
        assert_eq!(
            resolve_tool(&r, "templates-mcp::process-template", &Caller::anonymous())
                .unwrap()
                .def
                .name,
            "process_template"
        );
        let reader = Caller {
            roles: vec![crate::tools::calendar::READ_ROLE.to_string()],
            ..Caller::anonymous()
        };
        let events = resolve_tool(&r, "google-calendar-mcp::list-events", &reader);
        assert_eq!(events.unwrap().def.name, "list_events");
        let e =
            resolve_tool(&r, "google-calendar-mcp::list-events", &Caller::anonymous()).unwrap_err();
        assert!(e.contains("does not exist"), "a role still decides: {e}");
        for unknown in [
            "nowhere-mcp::search-flights",
            "flights-mcp::book-flights",
            "x::",
        ] {
            assert!(
                resolve_tool(&r, unknown, &Caller::anonymous()).is_err(),
                "{unknown}"
            );
        }
        let e = resolve_tool(&r, "chains-mcp::execute-chain", &Caller::anonymous()).unwrap_err();
        assert!(e.contains("chains toolset"), "{e}");
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
        assert_eq!(
            class("timeout"),
            ErrorClass::Transient("api_timeout".into())
        );
        assert_eq!(
            class("unavailable"),
            ErrorClass::Transient("vendor_unavailable".into())
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
            ErrorClass::Transient("vendor_unavailable".into())
        );
        assert_eq!(class("INSUFFICIENT_PERMISSIONS"), ErrorClass::Permission);
    }

    #[test]
    fn lists_and_objects_given_for_text_become_text() {
        assert_eq!(
            as_text(&json!(["Hotel A", 2, { "vendor": "B", "price": 900 }])),
            "- Hotel A\n- 2\n- price: 900, vendor: B"
        );
        assert_eq!(as_text(&json!({ "a": "x", "b": [1] })), "a: x, b: [1]");
        assert_eq!(as_text(&json!("as is")), "as is");
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
    fn records_can_be_read_by_whom_their_owner_allows_and_changed_by_their_owner() {
        let reader = Principal::new(&crate::testkit::user("u-2", &["hr-read"]), "");
        let q = read_record("leads", "a", &reader);
        assert!(q.sql.contains("AS writable") && q.sql.contains("owner IS ?3"));
        assert_eq!(q.params.len(), 6);
        let theirs = json!({ "data": "{}", "writable": 0, "shipped": 0 });
        let shipped = json!({ "data": "{}", "writable": 0, "shipped": 1 });
        for action in [RecordAction::Update, RecordAction::Delete] {
            let e = record_refusal(action, "leads", "a", &theirs).unwrap();
            assert!(
                e.contains("belongs to another owner") && e.contains(action.as_str()),
                "{e}"
            );
            let e = record_refusal(action, "leads", "a", &shipped).unwrap();
            assert!(e.contains("'admin' role"), "{e}");
        }
        assert_eq!(
            record_refusal(RecordAction::Get, "leads", "a", &theirs),
            None
        );
        let mine = json!({ "data": "{}", "writable": 1, "shipped": 0 });
        assert_eq!(
            record_refusal(RecordAction::Delete, "leads", "a", &mine),
            None
        );
        assert!(id_taken("leads", "a").contains("another id"));
        let op: Operation = serde_json::from_value(
            json!({ "collection": "leads", "action": "create", "visibility": "shared" }),
        )
        .unwrap();
        assert!(record_sharing(&op)
            .unwrap_err()
            .contains("operation.shared_roles"));
        let op: Operation =
            serde_json::from_value(json!({ "collection": "leads", "action": "create" })).unwrap();
        assert_eq!(record_sharing(&op).unwrap(), Sharing::private());
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
            json!(j.params),
            json!(["exec-1", 3, "leads", "a", null, "{\"n\":1}"])
        );
        assert!(j
            .sql
            .contains("(SELECT owner FROM collection_records WHERE collection = ?3 AND id = ?4)"));
        let writer = Principal::new(&crate::testkit::user("u-1", &[]), "");
        let access = RecordAccess::new("user:u-1", &Sharing::private());
        let w = transition("leads", "a", None, c.after.as_deref(), &access, &writer);
        assert!(
            w.sql.starts_with("INSERT INTO collection_records")
                && w.sql.contains("IS ?3")
                && w.sql.contains("WHERE ((collection_records.owner IS ?8 AND ?8 IS NOT NULL) OR (collection_records.owner IS NULL AND ?9 = 1))")
                && w.sql.ends_with("RETURNING id")
        );
        assert_eq!(
            json!(w.params),
            json!([
                "leads",
                "a",
                null,
                "{\"n\":1}",
                "user:u-1",
                "private",
                "[]",
                "user:u-1",
                0
            ])
        );

        let row = JournalRow::from_row(&json!({ "seq": 7, "collection": "leads", "record_id": "a", "before": null, "after": "{\"n\":1}", "owner": null, "visibility": null, "shared_roles": null })).unwrap();
        let undo = row.undo("exec-1", &writer);
        assert!(undo[0].sql.starts_with("DELETE FROM record_changes"));
        assert_eq!(
            json!(undo[0].params),
            json!(["exec-1", 7, "leads", "a", "{\"n\":1}"])
        );
        assert!(undo[1].sql.starts_with("DELETE FROM collection_records"));
        assert!(undo[1]
            .sql
            .contains("AND ((owner IS ?4 AND ?4 IS NOT NULL) OR (owner IS NULL AND ?5 = 1))"));
        assert_eq!(
            json!(undo[1].params),
            json!(["leads", "a", "{\"n\":1}", "user:u-1", 0])
        );
        // Undoing a delete gives the record back its own owner and sharing.
        let row = JournalRow::from_row(&json!({ "seq": 8, "collection": "leads", "record_id": "a", "before": "{}", "after": null, "owner": null, "visibility": "public", "shared_roles": "[]" })).unwrap();
        let restore = &row.undo("exec-1", &writer)[1];
        assert_eq!(
            restore.params[4..7],
            [Value::Null, json!("public"), json!("[]")]
        );
        assert!(JournalRow::from_row(&json!({ "seq": "x" })).is_none());
    }
}
