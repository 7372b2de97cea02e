//! EPIC-TIDE (seed 004): a project-execution tracker. WORKs (goals with steps and metrics) are
//! sequenced into PATHs (project blueprints); each attempt at a path is a TIDE, whose per-work
//! executions, outcome and learnings are recorded; successful tides feed the PATTERN of their
//! path's domain and tags. Usage flow, codes and rules: docs/epic-tide.md.
//!
//! The server sets every id, timestamp, version, attempt number and duration (the input schemas
//! refuse such fields). Statuses, outcomes and adaptation actions come from the vocabulary file
//! ([`vocabulary`]). Writes that must not race are single conditional statements or one D1 batch:
//! two simultaneous starts of a path leave exactly one active tide (a `NOT EXISTS` condition
//! backed by a unique partial index), and concurrent updates each get their own number in order.

pub mod adapt;
pub mod names;
pub mod pattern;
pub mod vocabulary;

use crate::tools::strings;
use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

use crate::clock;
use crate::error::Error;
use crate::random;
use crate::registry::{
    Annotations, Statement, ToolContext, ToolDef, ToolError, ToolOutput, ToolResult,
};
use crate::tools::opt_bool;
use crate::tools::ownership::{sharing_params, Predicate, Principal, Sharing, ADMIN_ROLE};
use adapt::Refusal;
use vocabulary::{find, listing};

const TOOLSET: &str = "epic_tide";
/// How often start-tide re-reads a path that changed while it was starting a tide.
const START_TRIES: usize = 3;
/// Most path names listed when a path is not found.
const LISTED_PATHS: usize = 20;

/// The error codes: the seed's six, then the ones this server adds for cases the seed leaves
/// unnamed (docs/epic-tide.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// An execution status outside the vocabulary.
    InvalidStatus,
    /// A tide outcome outside the vocabulary.
    InvalidOutcome,
    /// No path of that name.
    PathNotFound,
    /// The tide was already completed.
    TideNotActive,
    /// A work of the derived name exists and `update` was not asked for.
    DuplicateWork,
    /// A sequence names works that are not saved.
    InvalidSequence,
    /// `what` does not give a valid name.
    InvalidName,
    /// A path of the derived name exists and `update` was not asked for.
    DuplicatePath,
    /// No tide with that id.
    TideNotFound,
    /// The path already has an active tide.
    TideAlreadyActive,
    /// The work is not in the tide's sequence.
    WorkNotInTide,
    /// An adaptation does not fit the sequence.
    InvalidAdaptation,
    /// `metrics_achieved` names metrics the path does not have.
    InvalidMetrics,
    /// The work or path (or its name) is another owner's, or shipped: the caller may not change it.
    NotOwner,
}

impl Code {
    /// Every code, in the order of the output schemas' enum.
    pub const ALL: [Code; 14] = [
        Code::InvalidStatus,
        Code::InvalidOutcome,
        Code::PathNotFound,
        Code::TideNotActive,
        Code::DuplicateWork,
        Code::InvalidSequence,
        Code::InvalidName,
        Code::DuplicatePath,
        Code::TideNotFound,
        Code::TideAlreadyActive,
        Code::WorkNotInTide,
        Code::InvalidAdaptation,
        Code::InvalidMetrics,
        Code::NotOwner,
    ];

    /// The code as clients see it.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidStatus => "INVALID_STATUS",
            Code::InvalidOutcome => "INVALID_OUTCOME",
            Code::PathNotFound => "PATH_NOT_FOUND",
            Code::TideNotActive => "TIDE_NOT_ACTIVE",
            Code::DuplicateWork => "DUPLICATE_WORK",
            Code::InvalidSequence => "INVALID_SEQUENCE",
            Code::InvalidName => "INVALID_NAME",
            Code::DuplicatePath => "DUPLICATE_PATH",
            Code::TideNotFound => "TIDE_NOT_FOUND",
            Code::TideAlreadyActive => "TIDE_ALREADY_ACTIVE",
            Code::WorkNotInTide => "WORK_NOT_IN_TIDE",
            Code::InvalidAdaptation => "INVALID_ADAPTATION",
            Code::InvalidMetrics => "INVALID_METRICS",
            Code::NotOwner => "NOT_OWNER",
        }
    }
}

fn refuse(code: Code, message: impl Into<String>, details: Value) -> ToolError {
    ToolError::Refused {
        code: code.as_str(),
        message: message.into(),
        details,
    }
}

/// A new server-generated id, `<kind>-<32 hex digits>`.
fn new_id(kind: &str) -> ToolResult<String> {
    Ok(format!("{kind}-{}", random::hex(16)?))
}

fn now() -> i64 {
    clock::now_ms() as i64
}

/// A JSON column's value (`Null` when absent or not JSON).
fn json_col(row: &Value, column: &str) -> Value {
    row.get(column)
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(Value::Null)
}

/// A string array argument with each item trimmed.
fn trimmed(v: &Value) -> Value {
    json!(strings(v)
        .iter()
        .map(|s| s.trim().to_string())
        .collect::<Vec<_>>())
}

fn int(row: &Value, column: &str) -> i64 {
    row.get(column).and_then(Value::as_i64).unwrap_or(0)
}

fn time(row: &Value, column: &str) -> Value {
    row.get(column)
        .and_then(Value::as_i64)
        .map_or(Value::Null, |ms| json!(clock::iso(ms)))
}

fn derive_name(what: &str, kind: &str) -> ToolResult<String> {
    names::derive(what).map_err(|why| {
        refuse(
            Code::InvalidName,
            format!("Cannot name this {kind}: {why}. Reword what so that it starts with a letter."),
            json!({ "what": what }),
        )
    })
}

/// The refusal of a change to `kind` (WORK, PATH) `name` that the caller may not make: it is
/// another owner's, or shipped. `fix` says what to do instead.
fn not_owner(kind: &str, name: &str, shipped: bool, fix: &str) -> ToolError {
    let whose = if shipped {
        format!("is shipped with the server, and only a caller with the '{ADMIN_ROLE}' role may change it")
    } else {
        "belongs to another owner, and only its owner may change it".to_string()
    };
    refuse(
        Code::NotOwner,
        format!("{kind} '{name}' {whose}. {fix}"),
        json!({ "name": name, "shipped": shipped }),
    )
}

/// The condition (and its parameters, numbered from `first`) that a tide's path (`p`) may be
/// changed by the caller: what starting, updating and completing its tides needs.
fn path_writable(me: &Principal, first: usize) -> Predicate {
    let mine = me.can_write("p.", first);
    Predicate {
        sql: format!(
            "EXISTS (SELECT 1 FROM epic_paths p WHERE p.id = t.path_id AND {})",
            mine.sql
        ),
        params: mine.params,
    }
}

/// How a save went, from the row a conditional upsert returned (or not).
fn saved_state(returned: Option<&Value>) -> &'static str {
    match returned {
        Some(r) if int(r, "version") > 1 => "updated",
        Some(_) => "created",
        None => "unchanged",
    }
}

/// The work or path (`table`) named `name` that a save did not write, with `mine` (1 when the
/// caller may change it, else 0) and `shipped`. Its id and version are read only when it is the
/// caller's: another owner's private record shows no more than that its name is taken.
async fn held(ctx: &dyn ToolContext, me: &Principal, table: &str, name: &str) -> ToolResult<Value> {
    let mine = me.can_write("", 2);
    let params = [vec![json!(name)], mine.params].concat();
    let row = ctx
        .query(
            &format!(
                "SELECT {columns}, {m} AS mine, owner IS NULL AS shipped FROM {table} WHERE name = ?1",
                m = mine.sql,
                columns = ["id", "version", "created_ms", "updated_ms"]
                    .into_iter()
                    .chain((table == "epic_paths").then_some("works"))
                    .map(|c| format!("CASE WHEN {} THEN {c} END AS {c}", mine.sql))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            params,
        )
        .await?
        .into_iter()
        .next();
    row.ok_or_else(|| Error::Internal(format!("{table} row {name} vanished while saving")).into())
}

/// Saves a work or a path (`noun`): `insert` (its `INSERT … VALUES` over `params`), and with
/// `update` the caller's own record of that name is replaced by `set` (its `DO UPDATE SET … WHERE
/// (…)`) when it changed; `returning` lists the columns read back. Another owner's name is
/// refused, and so is an existing one without `update`. Answers the row, how the save went
/// ([`saved_state`]), its id and version.
async fn save(
    ctx: &dyn ToolContext,
    me: &Principal,
    (noun, name, update): (&str, &str, bool),
    mut params: Vec<Value>,
    [insert, set, returning]: [&str; 3],
) -> ToolResult<(Value, &'static str, String, i64)> {
    let table = format!("epic_{noun}s");
    let on_conflict = if update {
        // Only the owner replaces it (an admin a shipped one); its sharing changes only when this
        // call names one.
        let mine = me.can_write(&format!("{table}."), params.len() + 1);
        params.extend(mine.params);
        format!("{set} AND {}", mine.sql)
    } else {
        "DO NOTHING".to_string()
    };
    let sql = format!("{insert}\n             ON CONFLICT (name) {on_conflict}\n             RETURNING {returning}");
    let returned = ctx.query(&sql, params).await?.into_iter().next();
    let row = match &returned {
        Some(r) => r.clone(),
        None => held(ctx, me, &table, name).await?,
    };
    let (word, act, duplicate) = match noun {
        "work" => ("Work", "save a", Code::DuplicateWork),
        _ => ("Path", "create a", Code::DuplicatePath),
    };
    let upper = word.to_uppercase();
    if returned.is_none() && row["mine"].as_i64() != Some(1) {
        let fix = format!(
            "{word} names are unique across owners: reword what to {act} {noun} of your own."
        );
        return Err(not_owner(
            &upper,
            name,
            row["shipped"].as_i64() == Some(1),
            &fix,
        ));
    }
    let (id, version) = (
        row["id"].as_str().unwrap_or_default().to_string(),
        int(&row, "version"),
    );
    if returned.is_none() && !update {
        return Err(refuse(
            duplicate,
            format!(
                "{upper} with this name already exists: '{name}' (version {version}, {id}). Pass update: true to replace it, or reword what to {act} different {noun}."
            ),
            json!({ "name": name, (format!("{noun}_id")): id, "version": version }),
        ));
    }
    Ok((row, saved_state(returned.as_ref()), id, version))
}

fn save_work(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let what = args["what"].as_str().unwrap_or_default().trim().to_string();
        let name = derive_name(&what, "work")?;
        let me = Principal::of(ctx);
        let owner = me.require_owner("save a work")?.to_string();
        let sharing = Sharing::from_args(&args, "")?;
        let update = opt_bool(&args, "update", false);
        let mut params = vec![
            json!(new_id("work")?),
            json!(name),
            json!(what),
            json!(trimmed(&args["how"]).to_string()),
            json!(trimmed(&args["metrics"]).to_string()),
            json!(now()),
            json!(owner),
        ];
        params.extend(sharing_params(sharing.as_ref()));
        let (row, state, id, version) = save(
            ctx,
            &me,
            ("work", &name, update),
            params,
            [
                "INSERT INTO epic_works (id, name, what, how, metrics, version, created_ms, updated_ms, owner, visibility, shared_roles)
             VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?6, ?7, COALESCE(?8, 'private'), COALESCE(?9, '[]'))",
                "DO UPDATE SET what = excluded.what, how = excluded.how, metrics = excluded.metrics,
               visibility = COALESCE(?8, epic_works.visibility), shared_roles = COALESCE(?9, epic_works.shared_roles),
               version = epic_works.version + 1, updated_ms = excluded.updated_ms
             WHERE (epic_works.what <> excluded.what OR epic_works.how <> excluded.how
               OR epic_works.metrics <> excluded.metrics
               OR epic_works.visibility <> COALESCE(?8, epic_works.visibility)
               OR epic_works.shared_roles <> COALESCE(?9, epic_works.shared_roles))",
                "id, version, created_ms, updated_ms",
            ],
        )
        .await?;
        let message = match state {
            "created" => format!("WORK '{name}' saved. Use its name in epic-tide-create-path."),
            "updated" => format!("WORK '{name}' updated to version {version}."),
            _ => format!("WORK '{name}' is unchanged (version {version})."),
        };
        Ok(ToolOutput::Described {
            summary: message.clone(),
            value: json!({
                "work_id": id, "name": name, "version": version, "state": state,
                "created_at": time(&row, "created_ms"), "updated_at": time(&row, "updated_ms"),
                "message": message,
            }),
        })
    })
}

fn create_path(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let what = args["what"].as_str().unwrap_or_default().trim().to_string();
        let name = derive_name(&what, "path")?;
        let me = Principal::of(ctx);
        let owner = me.require_owner("create a path")?.to_string();
        let sharing = Sharing::from_args(&args, "")?;
        let works = strings(&args["works"]);
        // A path may use the works its owner may read (their own, shared with them, public).
        let readable = me.can_read("", 2);
        let mut params = vec![json!(json!(works).to_string())];
        params.extend(readable.params);
        let unknown: Vec<String> = ctx
            .query(
                &format!(
                    "SELECT value AS name FROM json_each(?1)
                     WHERE value NOT IN (SELECT name FROM epic_works WHERE {}) ORDER BY key",
                    readable.sql
                ),
                params,
            )
            .await?
            .iter()
            .filter_map(|r| r["name"].as_str().map(str::to_string))
            .collect();
        if !unknown.is_empty() {
            return Err(refuse(
                Code::InvalidSequence,
                format!(
                    "Work sequence contains unknown works: {}. Save each with epic-tide-save-work first (its name derives from what), then create the path.",
                    unknown.join(", ")
                ),
                json!({ "unknown_works": unknown }),
            ));
        }
        let mut tags = strings(&args["tags"]);
        tags.sort();
        tags.dedup();
        let domain = args["domain"].as_str().unwrap_or("general");
        let update = opt_bool(&args, "update", false);
        let mut params = vec![
            json!(new_id("path")?),
            json!(name),
            json!(what),
            json!(json!(works).to_string()),
            json!(trimmed(&args["metrics"]).to_string()),
            json!(domain),
            json!(json!(tags).to_string()),
            json!(now()),
            json!(owner),
        ];
        params.extend(sharing_params(sharing.as_ref()));
        let (row, state, id, version) = save(
            ctx,
            &me,
            ("path", &name, update),
            params,
            [
                "INSERT INTO epic_paths (id, name, what, works, metrics, domain, tags, version, created_ms, updated_ms, owner, visibility, shared_roles)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?8, ?9, COALESCE(?10, 'private'), COALESCE(?11, '[]'))",
                "DO UPDATE SET what = excluded.what, works = excluded.works, metrics = excluded.metrics,
               domain = excluded.domain, tags = excluded.tags,
               visibility = COALESCE(?10, epic_paths.visibility), shared_roles = COALESCE(?11, epic_paths.shared_roles),
               version = epic_paths.version + 1, updated_ms = excluded.updated_ms
             WHERE (epic_paths.what <> excluded.what OR epic_paths.works <> excluded.works
               OR epic_paths.metrics <> excluded.metrics OR epic_paths.domain <> excluded.domain
               OR epic_paths.tags <> excluded.tags
               OR epic_paths.visibility <> COALESCE(?10, epic_paths.visibility)
               OR epic_paths.shared_roles <> COALESCE(?11, epic_paths.shared_roles))",
                "id, version, works, created_ms, updated_ms",
            ],
        )
        .await?;
        let message = match state {
            "created" => format!(
                "PATH '{name}' created with {} works. Start it with epic-tide-start-tide {{\"path_name\": \"{name}\"}}.",
                works.len()
            ),
            "updated" => format!("PATH '{name}' updated to version {version}; tides already started keep their sequence."),
            _ => format!("PATH '{name}' is unchanged (version {version})."),
        };
        Ok(ToolOutput::Described {
            summary: message.clone(),
            value: json!({
                "path_id": id, "name": name, "version": version, "state": state,
                "works": json_col(&row, "works"),
                "created_at": time(&row, "created_ms"), "updated_at": time(&row, "updated_ms"),
                "message": message,
            }),
        })
    })
}

/// The error for a path name that does not exist (or that the caller may not read), listing some
/// the caller may read.
async fn path_not_found(ctx: &dyn ToolContext, name: &str) -> ToolResult<ToolError> {
    let readable = Principal::of(ctx).can_read("", 1);
    let known: Vec<String> = ctx
        .query(
            &format!(
                "SELECT name FROM epic_paths WHERE {} ORDER BY name LIMIT {LISTED_PATHS}",
                readable.sql
            ),
            readable.params,
        )
        .await?
        .iter()
        .filter_map(|r| r["name"].as_str().map(str::to_string))
        .collect();
    let hint = if known.is_empty() {
        "No path exists yet: create one with epic-tide-create-path.".to_string()
    } else {
        format!("Known paths: {}.", known.join(", "))
    };
    Ok(refuse(
        Code::PathNotFound,
        format!("PATH does not exist: '{name}'. {hint}"),
        json!({ "path_name": name, "known_paths": known }),
    ))
}

fn start_tide(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let path_name = args["path_name"].as_str().unwrap_or_default();
        let adaptations = args["adaptations"].as_array().cloned().unwrap_or_default();
        let actions = &vocabulary::get().adaptation_actions;
        for (index, a) in adaptations.iter().enumerate() {
            let action = a["action"].as_str().unwrap_or_default();
            if find(actions, action).is_none() {
                return Err(refuse(
                    Code::InvalidAdaptation,
                    format!(
                        "adaptations[{index}]: action must be one of: {}; got {action:?}.",
                        listing(actions)
                    ),
                    json!({ "index": index, "allowed": listing(actions) }),
                ));
            }
        }
        let me = Principal::of(ctx);
        me.require_owner("start a tide")?;
        let inserted: Vec<&str> = adaptations
            .iter()
            .filter(|a| a["action"] == "insert")
            .filter_map(|a| a["target"].as_str())
            .collect();
        let saved: Vec<String> = if inserted.is_empty() {
            vec![]
        } else {
            let readable = me.can_read("", 2);
            let mut params = vec![json!(json!(inserted).to_string())];
            params.extend(readable.params);
            ctx.query(
                &format!(
                    "SELECT name FROM epic_works WHERE name IN (SELECT value FROM json_each(?1)) AND {}",
                    readable.sql
                ),
                params,
            )
            .await?
            .iter()
            .filter_map(|r| r["name"].as_str().map(str::to_string))
            .collect()
        };
        for _ in 0..START_TRIES {
            let readable = me.can_read("", 2);
            let mine = me.can_write("", 4);
            let params = [vec![json!(path_name)], readable.params, mine.params].concat();
            let Some(path) = ctx
                .query(
                    &format!(
                        "SELECT id, works, version, {} AS mine, owner IS NULL AS shipped FROM epic_paths WHERE name = ?1 AND {}",
                        mine.sql, readable.sql
                    ),
                    params,
                )
                .await?
                .into_iter()
                .next()
            else {
                return Err(path_not_found(ctx, path_name).await?);
            };
            if path["mine"].as_i64() != Some(1) {
                return Err(not_owner(
                    "PATH",
                    path_name,
                    path["shipped"].as_i64() == Some(1),
                    "Tides are attempts of the path's owner: create a path of your own (epic-tide-create-path) to run it.",
                ));
            }
            let path_id = path["id"].as_str().unwrap_or_default().to_string();
            let works = strings(&json_col(&path, "works"));
            let (sequence, recorded) =
                adapt::apply(&works, &adaptations, |w| saved.iter().any(|s| s == w)).map_err(
                    |r| match r {
                        Refusal::UnknownWorks(unknown) => refuse(
                            Code::InvalidSequence,
                            format!(
                                "Work sequence contains unknown works: {}. Save each with epic-tide-save-work before inserting it.",
                                unknown.join(", ")
                            ),
                            json!({ "unknown_works": unknown }),
                        ),
                        Refusal::Invalid { index, reason } => refuse(
                            Code::InvalidAdaptation,
                            format!("adaptations[{index}]: {reason}."),
                            json!({ "index": index, "path_works": works }),
                        ),
                    },
                )?;
            let tide_id = new_id("tide")?;
            let mine = me.can_write("p.", 7);
            let mut params = vec![
                json!(tide_id),
                json!(path_id),
                path["version"].clone(),
                json!(json!(sequence).to_string()),
                json!(json!(recorded).to_string()),
                json!(now()),
            ];
            params.extend(mine.params);
            // One statement: the path is unchanged since it was read and still the caller's to
            // change, no tide of it is active, and the attempt is the next one. The unique index
            // on active tides backs it up.
            let started = ctx
                .query(
                    &format!(
                        "INSERT INTO epic_tides (id, path_id, path_version, attempt, status, sequence, metrics, adaptations, started_ms)
                     SELECT ?1, p.id, p.version,
                            COALESCE((SELECT MAX(t.attempt) FROM epic_tides t WHERE t.path_id = p.id), 0) + 1,
                            'active', ?4, p.metrics, ?5, ?6
                     FROM epic_paths p
                     WHERE p.id = ?2 AND p.version = ?3 AND {}
                       AND NOT EXISTS (SELECT 1 FROM epic_tides t WHERE t.path_id = p.id AND t.status = 'active')
                     ON CONFLICT DO NOTHING
                     RETURNING id, attempt, started_ms",
                        mine.sql
                    ),
                    params,
                )
                .await?
                .into_iter()
                .next();
            if let Some(row) = started {
                let attempt = int(&row, "attempt");
                let message = format!(
                    "TIDE attempt {attempt} of '{path_name}' started: {}. Report each work with epic-tide-update-execution, then finish with epic-tide-complete-tide.",
                    sequence.join(" → ")
                );
                return Ok(ToolOutput::Described {
                    summary: message.clone(),
                    value: json!({
                        "tide_id": tide_id, "attempt": attempt, "path_name": path_name,
                        "sequence": sequence, "started_at": time(&row, "started_ms"), "message": message,
                    }),
                });
            }
            let active = ctx
                .query(
                    "SELECT id, attempt, started_ms FROM epic_tides WHERE path_id = ?1 AND status = 'active'",
                    vec![json!(path_id)],
                )
                .await?
                .into_iter()
                .next();
            if let Some(a) = active {
                let id = a["id"].as_str().unwrap_or_default();
                return Err(refuse(
                    Code::TideAlreadyActive,
                    format!(
                        "PATH '{path_name}' already has an active TIDE: {id} (attempt {}, started {}). Complete it with epic-tide-complete-tide before starting another.",
                        int(&a, "attempt"),
                        time(&a, "started_ms").as_str().unwrap_or_default()
                    ),
                    json!({ "active_tide_id": id, "attempt": int(&a, "attempt") }),
                ));
            }
            // Neither started nor blocked: the path changed after it was read. Read it again.
        }
        Err(ToolError::failed(format!(
                "PATH '{path_name}' kept changing while the tide was starting; call epic-tide-start-tide again."
            )))
    })
}

/// A tide whose path the caller may read, with its path's name, owner, domain and tags and
/// whether the caller may change it (`mine`, 0 or 1), or `TIDE_NOT_FOUND`.
async fn tide(ctx: &dyn ToolContext, me: &Principal, tide_id: &str) -> ToolResult<Value> {
    let readable = me.can_read("p.", 2);
    let mine = me.can_write("p.", 4);
    let params = [vec![json!(tide_id)], readable.params, mine.params].concat();
    ctx.query(
        &format!(
            "SELECT t.*, p.name AS path_name, p.domain, p.tags, p.owner AS path_owner,
                    {} AS mine, p.owner IS NULL AS shipped
             FROM epic_tides t JOIN epic_paths p ON p.id = t.path_id WHERE t.id = ?1 AND {}",
            mine.sql, readable.sql
        ),
        params,
    )
    .await?
    .into_iter()
    .next()
    .ok_or_else(|| {
        refuse(
            Code::TideNotFound,
            format!("No TIDE has the id '{tide_id}'. Use the tide_id epic-tide-start-tide returned; epic-tide-get-history lists a path's tides."),
            json!({ "tide_id": tide_id }),
        )
    })
}

/// The tide `t` (from [`tide`]) if the caller may change it, else `NOT_OWNER`.
fn changeable(t: Value) -> ToolResult<Value> {
    if t["mine"].as_i64() == Some(1) {
        return Ok(t);
    }
    Err(not_owner(
        "PATH",
        t["path_name"].as_str().unwrap_or_default(),
        t["shipped"].as_i64() == Some(1),
        "Only the path's owner reports on and completes its tides; epic-tide-get-history shows them to you.",
    ))
}

/// The caller's active tide `id`, for them to `act` on (record an execution, complete a
/// tide); else why not (`TIDE_NOT_FOUND`, `NOT_OWNER`, `TIDE_NOT_ACTIVE`).
async fn active_tide(
    ctx: &dyn ToolContext,
    me: &Principal,
    id: &str,
    act: &str,
) -> ToolResult<Value> {
    me.require_owner(act)?;
    let t = changeable(tide(ctx, me, id).await?)?;
    if t["status"] != "active" {
        return Err(not_active(&t));
    }
    Ok(t)
}

/// Nothing when `given` is a term of the vocabulary whose others `code` refuses (statuses,
/// outcomes); else that refusal, listing the terms.
fn known(code: Code, given: &str) -> ToolResult<()> {
    let v = vocabulary::get();
    let (terms, name, title) = match code {
        Code::InvalidStatus => (&v.statuses, "status", "Status"),
        _ => (&v.outcomes, "outcome", "Outcome"),
    };
    if find(terms, given).is_some() {
        return Ok(());
    }
    Err(refuse(
        code,
        format!(
            "{title} must be one of: {}; got {given:?}. The vocabulary is the resource {}.",
            listing(terms),
            vocabulary::URI
        ),
        json!({ name: given, "allowed": listing(terms) }),
    ))
}

fn not_active(t: &Value) -> ToolError {
    let id = t["id"].as_str().unwrap_or_default();
    let path = t["path_name"].as_str().unwrap_or_default();
    refuse(
        Code::TideNotActive,
        format!(
            "No active TIDE for this PATH: {id} (attempt {} of '{path}') was completed at {}. Start a new tide with epic-tide-start-tide {{\"path_name\": \"{path}\"}}.",
            int(t, "attempt"),
            time(t, "completed_ms").as_str().unwrap_or_default()
        ),
        json!({ "tide_id": id, "path_name": path }),
    )
}

fn update_execution(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let tide_id = args["tide_id"].as_str().unwrap_or_default();
        let work = args["work_name"].as_str().unwrap_or_default();
        let status = args["status"].as_str().unwrap_or_default();
        known(Code::InvalidStatus, status)?;
        let me = Principal::of(ctx);
        let t = active_tide(ctx, &me, tide_id, "record an execution").await?;
        let sequence = strings(&json_col(&t, "sequence"));
        if !sequence.iter().any(|w| w == work) {
            return Err(refuse(
                Code::WorkNotInTide,
                format!(
                    "'{work}' is not in this TIDE's sequence ({}). Report one of those works.",
                    sequence.join(", ")
                ),
                json!({ "work_name": work, "sequence": sequence }),
            ));
        }
        let opt = |k: &str| args.get(k).cloned().unwrap_or(Value::Null);
        let mine = path_writable(&me, 7);
        let mut params = vec![
            json!(tide_id),
            json!(work),
            json!(status),
            opt("error"),
            opt("output"),
            json!(now()),
        ];
        params.extend(mine.params);
        // One statement: its number follows the tide's last update, and its duration runs from
        // that update (or the tide's start), so concurrent updates are all kept, in order.
        let row = ctx
            .query(
                &format!(
                    "INSERT INTO epic_executions (tide_id, seq, work_name, status, error, output, updated_ms, duration_ms)
                 SELECT t.id,
                        COALESCE((SELECT MAX(e.seq) FROM epic_executions e WHERE e.tide_id = t.id), 0) + 1,
                        ?2, ?3, ?4, ?5, ?6,
                        MAX(0, ?6 - COALESCE((SELECT MAX(e.updated_ms) FROM epic_executions e WHERE e.tide_id = t.id), t.started_ms))
                 FROM epic_tides t WHERE t.id = ?1 AND t.status = 'active' AND {}
                 RETURNING seq, updated_ms, duration_ms",
                    mine.sql
                ),
                params,
            )
            .await?
            .into_iter()
            .next();
        let Some(row) = row else {
            return Err(not_active(&changeable(tide(ctx, &me, tide_id).await?)?));
        };
        let message = format!(
            "Recorded {work}: {status} (update {} of this tide).",
            int(&row, "seq")
        );
        Ok(ToolOutput::Described {
            summary: message.clone(),
            value: json!({
                "success": true, "tide_id": tide_id, "work_name": work, "status": status,
                "update": int(&row, "seq"), "updated_at": time(&row, "updated_ms"),
                "duration_ms": int(&row, "duration_ms"), "message": message,
            }),
        })
    })
}

/// The works whose latest update in tide `id` has a failure status (failed, blocked), in
/// sequence order.
async fn failing_works(
    ctx: &dyn ToolContext,
    id: &str,
    sequence: &[String],
) -> ToolResult<Vec<String>> {
    let rows = ctx
        .query(
            "SELECT e.work_name, e.status FROM epic_executions e
             WHERE e.tide_id = ?1 AND e.seq = (SELECT MAX(x.seq) FROM epic_executions x
                                               WHERE x.tide_id = e.tide_id AND x.work_name = e.work_name)",
            vec![json!(id)],
        )
        .await?;
    let statuses = &vocabulary::get().statuses;
    let failing: Vec<&str> = rows
        .iter()
        .filter(|r| {
            r["status"]
                .as_str()
                .and_then(|s| find(statuses, s))
                .is_some_and(|t| t.failure)
        })
        .filter_map(|r| r["work_name"].as_str())
        .collect();
    Ok(sequence
        .iter()
        .filter(|w| failing.contains(&w.as_str()))
        .cloned()
        .collect())
}

fn completed_of(row: &Value) -> pattern::Completed {
    pattern::Completed {
        path: row["path_name"].as_str().unwrap_or_default().to_string(),
        sequence: strings(&json_col(row, "sequence")),
        adaptations: json_col(row, "adaptations")
            .as_array()
            .cloned()
            .unwrap_or_default(),
        outcome: row["outcome"].as_str().unwrap_or_default().to_string(),
        completed_ms: int(row, "completed_ms"),
    }
}

fn complete_tide(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let tide_id = args["tide_id"].as_str().unwrap_or_default();
        let outcome = args["outcome"].as_str().unwrap_or_default();
        known(Code::InvalidOutcome, outcome)?;
        let me = Principal::of(ctx);
        let t = active_tide(ctx, &me, tide_id, "complete a tide").await?;
        let metrics = strings(&json_col(&t, "metrics"));
        let achieved = args
            .get("metrics_achieved")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let unknown: Vec<&String> = achieved
            .as_object()
            .map(|m| m.keys().filter(|k| !metrics.contains(k)).collect())
            .unwrap_or_default();
        if !unknown.is_empty() {
            return Err(refuse(
                Code::InvalidMetrics,
                format!(
                    "metrics_achieved names metrics the PATH does not have: {}. Use the path's metrics exactly: {}.",
                    unknown.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", "),
                    metrics.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ")
                ),
                json!({ "unknown_metrics": unknown, "path_metrics": metrics }),
            ));
        }
        let path_id = t["path_id"].as_str().unwrap_or_default();
        let sequence = strings(&json_col(&t, "sequence"));
        let failing_now = failing_works(ctx, tide_id, &sequence).await?;
        let previous = ctx
            .query(
                "SELECT id, outcome, sequence FROM epic_tides
                 WHERE path_id = ?1 AND status = 'completed' AND attempt < ?2
                 ORDER BY attempt DESC LIMIT 1",
                vec![json!(path_id), t["attempt"].clone()],
            )
            .await?
            .into_iter()
            .next();
        let failing_before = match &previous {
            Some(p) => {
                let seq = strings(&json_col(p, "sequence"));
                failing_works(ctx, p["id"].as_str().unwrap_or_default(), &seq).await?
            }
            None => vec![],
        };
        let next = pattern::next_action(
            outcome,
            &failing_now,
            previous.as_ref().and_then(|p| p["outcome"].as_str()),
            &failing_before,
        );

        let completed_ms = now();
        // A pattern summarises the tides of one owner's paths (the owner of this tide's path), so
        // it never shows one owner's path and work names to another.
        let path_owner = t["path_owner"].clone();
        let mut group: Vec<pattern::Completed> = ctx
            .query(
                "SELECT t.sequence, t.adaptations, t.outcome, t.completed_ms, p.name AS path_name
                 FROM epic_tides t JOIN epic_paths p ON p.id = t.path_id
                 WHERE t.status = 'completed' AND p.domain = ?1 AND p.tags = ?2 AND t.id <> ?3
                   AND p.owner IS ?4",
                vec![
                    t["domain"].clone(),
                    t["tags"].clone(),
                    json!(tide_id),
                    path_owner.clone(),
                ],
            )
            .await?
            .iter()
            .map(completed_of)
            .collect();
        group.push(pattern::Completed {
            path: t["path_name"].as_str().unwrap_or_default().to_string(),
            sequence: sequence.clone(),
            adaptations: json_col(&t, "adaptations")
                .as_array()
                .cloned()
                .unwrap_or_default(),
            outcome: outcome.to_string(),
            completed_ms,
        });
        let derived = pattern::derive(&group);

        let mut statements = Vec::new();
        if let Some(p) = &derived {
            // Written only if the tide is still active (the next statement completes it), and
            // never over a pattern derived from more tides (a completion that raced this one).
            // It is private to the paths' owner; patterns of shipped paths are public.
            statements.push(Statement::new(
                "INSERT INTO epic_patterns (id, domain, tags, common_sequence, sequence_support, proven_adaptations,
                                            success_rate, successful_tides, completed_tides, paths, updated_ms,
                                            owner, visibility)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?13, CASE WHEN ?13 IS NULL THEN 'public' ELSE 'private' END
                 WHERE EXISTS (SELECT 1 FROM epic_tides WHERE id = ?12 AND status = 'active')
                 ON CONFLICT (ifnull(owner, ''), domain, tags) DO UPDATE SET
                   common_sequence = excluded.common_sequence, sequence_support = excluded.sequence_support,
                   proven_adaptations = excluded.proven_adaptations, success_rate = excluded.success_rate,
                   successful_tides = excluded.successful_tides, completed_tides = excluded.completed_tides,
                   paths = excluded.paths, updated_ms = excluded.updated_ms
                 WHERE excluded.completed_tides >= epic_patterns.completed_tides
                 RETURNING id",
                vec![
                    json!(new_id("pattern")?),
                    t["domain"].clone(),
                    t["tags"].clone(),
                    json!(json!(p.common_sequence).to_string()),
                    json!(p.sequence_support),
                    json!(p.proven_adaptations.to_string()),
                    json!(p.success_rate),
                    json!(p.successful_tides),
                    json!(p.completed_tides),
                    json!(json!(p.paths).to_string()),
                    json!(completed_ms),
                    json!(tide_id),
                    path_owner.clone(),
                ],
            ));
        }
        let mine = path_writable(&me, 7);
        let mut params = vec![
            json!(tide_id),
            json!(completed_ms),
            json!(outcome),
            json!(achieved.to_string()),
            args.get("learnings").cloned().unwrap_or(Value::Null),
            json!(next.action),
        ];
        params.extend(mine.params);
        statements.push(Statement::new(
            format!(
                "UPDATE epic_tides AS t SET status = 'completed', completed_ms = ?2, duration_ms = MAX(0, ?2 - started_ms),
               outcome = ?3, metrics_achieved = ?4, learnings = ?5, next_action = ?6
             WHERE t.id = ?1 AND t.status = 'active' AND {}
             RETURNING attempt, completed_ms, duration_ms",
                mine.sql
            ),
            params,
        ));
        let results = ctx.platform().batch(statements).await?;
        let Some(done) = results.last().and_then(|rows| rows.first()) else {
            return Err(not_active(&changeable(tide(ctx, &me, tide_id).await?)?));
        };
        let pattern_id = match &derived {
            None => Value::Null,
            Some(_) => ctx
                .query(
                    "SELECT id FROM epic_patterns WHERE domain = ?1 AND tags = ?2 AND owner IS ?3",
                    vec![t["domain"].clone(), t["tags"].clone(), path_owner],
                )
                .await?
                .first()
                .map_or(Value::Null, |r| r["id"].clone()),
        };
        let message = format!(
            "TIDE attempt {} of '{}' completed: {outcome}. Next: {}. {}",
            int(done, "attempt"),
            t["path_name"].as_str().unwrap_or_default(),
            next.action,
            next.reason
        );
        let mut value = json!({
            "success": true, "tide_id": tide_id, "attempt": int(done, "attempt"), "outcome": outcome,
            "next_action": next.action, "reason": next.reason,
            "completed_at": time(done, "completed_ms"), "duration_ms": int(done, "duration_ms"),
            "message": message,
        });
        if !next.repeated.is_empty() {
            value["repeated_failures"] = json!(next.repeated);
        }
        if !pattern_id.is_null() {
            value["pattern_id"] = pattern_id;
        }
        Ok(ToolOutput::Described {
            summary: message,
            value,
        })
    })
}

fn query_patterns(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let tags = json!(strings(&args["tags"])).to_string();
        let readable = Principal::of(ctx).can_read("p.", 5);
        let mut params = vec![
            args.get("domain").cloned().unwrap_or(Value::Null),
            args.get("min_success_rate").cloned().unwrap_or(json!(0)),
            json!(tags),
            args.get("limit").cloned().unwrap_or(json!(20)),
        ];
        params.extend(readable.params);
        let rows = ctx
            .query(
                &format!(
                    "SELECT * FROM epic_patterns p
                 WHERE (?1 IS NULL OR p.domain = ?1) AND p.success_rate >= ?2
                   AND NOT EXISTS (SELECT 1 FROM json_each(?3) want
                                   WHERE want.value NOT IN (SELECT value FROM json_each(p.tags)))
                   AND {}
                 ORDER BY p.success_rate DESC, p.successful_tides DESC, p.updated_ms DESC
                 LIMIT ?4",
                    readable.sql
                ),
                params,
            )
            .await?;
        let patterns: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "pattern_id": r["id"], "domain": r["domain"], "tags": json_col(r, "tags"),
                    "common_sequence": json_col(r, "common_sequence"),
                    "sequence_support": r["sequence_support"],
                    "proven_adaptations": json_col(r, "proven_adaptations"),
                    "success_rate": r["success_rate"],
                    "successful_tides": r["successful_tides"], "completed_tides": r["completed_tides"],
                    "paths": json_col(r, "paths"), "updated_at": time(r, "updated_ms"),
                })
            })
            .collect();
        let message = if patterns.is_empty() {
            "No pattern matches. Patterns come from tides completed with outcome success; widen the filters or complete more tides.".to_string()
        } else {
            format!(
                "{} pattern(s) match, highest success rate first.",
                patterns.len()
            )
        };
        Ok(ToolOutput::Described {
            summary: message.clone(),
            value: json!({ "patterns": patterns, "message": message }),
        })
    })
}

/// A tide's execution per work of its sequence: the latest status (`null` before any update)
/// and the number of updates, with every update when `details` is set.
fn execution(sequence: &[String], updates: &[&Value], details: bool) -> Value {
    let mut works = Map::new();
    for w in sequence {
        let mine: Vec<&&Value> = updates.iter().filter(|u| u["work_name"] == *w).collect();
        let mut entry = json!({
            "status": mine.last().map_or(Value::Null, |u| u["status"].clone()),
            "updates": mine.len(),
        });
        if details {
            entry["history"] = json!(mine
                .iter()
                .map(|u| json!({
                    "update": u["seq"], "status": u["status"], "error": u["error"], "output": u["output"],
                    "updated_at": time(u, "updated_ms"), "duration_ms": u["duration_ms"],
                }))
                .collect::<Vec<_>>());
        }
        works.insert(w.clone(), entry);
    }
    Value::Object(works)
}

fn get_history(ctx: &dyn ToolContext, args: Value) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let name = args["path_name"].as_str().unwrap_or_default();
        let details = opt_bool(&args, "include_execution_details", false);
        let readable = Principal::of(ctx).can_read("", 2);
        let params = [vec![json!(name)], readable.params].concat();
        let Some(path) = ctx
            .query(
                &format!(
                    "SELECT id, version, works, metrics FROM epic_paths WHERE name = ?1 AND {}",
                    readable.sql
                ),
                params,
            )
            .await?
            .into_iter()
            .next()
        else {
            return Err(path_not_found(ctx, name).await?);
        };
        let path_id = path["id"].clone();
        let tides = ctx
            .query(
                "SELECT * FROM epic_tides WHERE path_id = ?1 ORDER BY attempt",
                vec![path_id.clone()],
            )
            .await?;
        let updates = ctx
            .query(
                "SELECT e.* FROM epic_executions e JOIN epic_tides t ON t.id = e.tide_id
                 WHERE t.path_id = ?1 ORDER BY e.tide_id, e.seq",
                vec![path_id.clone()],
            )
            .await?;
        let listed: Vec<Value> = tides
            .iter()
            .map(|t| {
                let sequence = strings(&json_col(t, "sequence"));
                let mine: Vec<&Value> = updates.iter().filter(|u| u["tide_id"] == t["id"]).collect();
                json!({
                    "tide_id": t["id"], "attempt": t["attempt"], "status": t["status"],
                    "outcome": t["outcome"], "learnings": t["learnings"],
                    "metrics_achieved": json_col(t, "metrics_achieved"), "next_action": t["next_action"],
                    "sequence": sequence, "adaptations": json_col(t, "adaptations"),
                    "started_at": time(t, "started_ms"), "completed_at": time(t, "completed_ms"),
                    "duration_ms": t["duration_ms"],
                    "execution": execution(&sequence, &mine, details),
                })
            })
            .collect();
        let message = format!("PATH '{name}': {} tide(s).", listed.len());
        Ok(ToolOutput::Described {
            summary: message.clone(),
            value: json!({
                "path_id": path_id, "path_name": name, "version": path["version"],
                "works": json_col(&path, "works"), "metrics": json_col(&path, "metrics"),
                "tides": listed, "message": message,
            }),
        })
    })
}

/// The vocabulary as an MCP resource (`resources/list` entry).
pub fn resource_listing() -> Value {
    json!({
        "uri": vocabulary::URI,
        "name": "epic-tide-vocabulary",
        "title": "EPIC-TIDE vocabulary",
        "description": "The statuses, outcomes, adaptation actions and next actions the epic-tide tools accept and return, with their meanings.",
        "mimeType": "application/json",
    })
}

/// `resources/read` of the vocabulary.
pub fn resource_contents() -> Value {
    json!({ "contents": [{ "uri": vocabulary::URI, "mimeType": "application/json", "text": vocabulary::TEXT }] })
}

const WRITE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: false,
};

/// What a replacing save is: it may overwrite a saved definition (with `update: true`).
const SAVE: Annotations = Annotations {
    destructive: true,
    ..WRITE
};

/// The EPIC-TIDE tools.
pub static TOOLS: &[ToolDef] = &[
    ToolDef {
        toolset: TOOLSET,
        name: "epic-tide-save-work",
        title: "EPIC-TIDE: save work",
        description: "Save a WORK definition (a goal, its steps and success metrics) to the EPIC-TIDE knowledge system. Its name derives from what (\"Setup database\" is setup-database); paths refer to works by that name. An existing name is refused with DUPLICATE_WORK unless update is true, which replaces it and bumps its version when it changed; another owner's name with NOT_OWNER. The work is private unless visibility makes it shared (with shared_roles) or public.",
        annotations: SAVE,
        input_schema: include_str!("../../../schema/epic_tide/epic-tide-save-work.input.json"),
        output_schema: Some(include_str!("../../../schema/epic_tide/epic-tide-save-work.output.json")),
        roles: &[],
        handler: save_work,
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "epic-tide-create-path",
        title: "EPIC-TIDE: create path",
        description: "Create a PATH blueprint: a project goal, an ordered sequence of saved work names and success metrics, with an optional domain and tags for patterns. The name derives from what (\"Build API\" is build-api). Unknown works are refused with INVALID_SEQUENCE; an existing name with DUPLICATE_PATH unless update is true; another owner's name with NOT_OWNER. The path is private unless visibility makes it shared (with shared_roles) or public; only its owner runs its tides.",
        annotations: SAVE,
        input_schema: include_str!("../../../schema/epic_tide/epic-tide-create-path.input.json"),
        output_schema: Some(include_str!("../../../schema/epic_tide/epic-tide-create-path.output.json")),
        roles: &[],
        handler: create_path,
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "epic-tide-start-tide",
        title: "EPIC-TIDE: start tide",
        description: "Start a new TIDE (an attempt) of a PATH, optionally adapting its work sequence for this attempt (insert, modify, remove, reorder). Returns the tide_id, the attempt number and the effective sequence. A path has at most one active tide: a second start is refused with TIDE_ALREADY_ACTIVE and the active tide's id.",
        annotations: WRITE,
        input_schema: include_str!("../../../schema/epic_tide/epic-tide-start-tide.input.json"),
        output_schema: Some(include_str!("../../../schema/epic_tide/epic-tide-start-tide.output.json")),
        roles: &[],
        handler: start_tide,
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "epic-tide-update-execution",
        title: "EPIC-TIDE: update execution",
        description: "Record the execution status of a work of the active TIDE: complete, failed, blocked or reused (resource epic-tide://vocabulary), with an optional error and output evidence. Every update is kept in order; the server times it.",
        annotations: WRITE,
        input_schema: include_str!("../../../schema/epic_tide/epic-tide-update-execution.input.json"),
        output_schema: Some(include_str!("../../../schema/epic_tide/epic-tide-update-execution.output.json")),
        roles: &[],
        handler: update_execution,
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "epic-tide-complete-tide",
        title: "EPIC-TIDE: complete tide",
        description: "Complete the active TIDE with an outcome (success, partial, failed), the path metrics achieved and learnings. Returns next_action: create_pattern after a success, revise_path when the same works failed in this tide and the previous one, else retry_tide. Successful tides update the pattern of the path's domain and tags.",
        annotations: WRITE,
        input_schema: include_str!("../../../schema/epic_tide/epic-tide-complete-tide.input.json"),
        output_schema: Some(include_str!("../../../schema/epic_tide/epic-tide-complete-tide.output.json")),
        roles: &[],
        handler: complete_tide,
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "epic-tide-query-patterns",
        title: "EPIC-TIDE: query patterns",
        description: "Find patterns learned from completed tides: per domain and tag set, the work sequence successful tides ran most (common_sequence), the adaptations that succeeded (proven_adaptations) and the success rate. Filter by domain, tags (all must match) and min_success_rate.",
        annotations: Annotations::READ_ONLY,
        input_schema: include_str!("../../../schema/epic_tide/epic-tide-query-patterns.input.json"),
        output_schema: Some(include_str!("../../../schema/epic_tide/epic-tide-query-patterns.output.json")),
        roles: &[],
        handler: query_patterns,
        ..ToolDef::DEFAULTS
    },
    ToolDef {
        toolset: TOOLSET,
        name: "epic-tide-get-history",
        title: "EPIC-TIDE: get history",
        description: "Get every TIDE of a PATH, first attempt first: outcome, learnings, metrics achieved, adaptations, timing and each work's latest status; with include_execution_details, every update of every work (error, output, time, duration).",
        annotations: Annotations::READ_ONLY,
        input_schema: include_str!("../../../schema/epic_tide/epic-tide-get-history.input.json"),
        output_schema: Some(include_str!("../../../schema/epic_tide/epic-tide-get-history.output.json")),
        roles: &[],
        handler: get_history,
        ..ToolDef::DEFAULTS
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn schema(def: &ToolDef, output: bool) -> Value {
        let text = if output {
            def.output_schema.unwrap()
        } else {
            def.input_schema
        };
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_tools_compile_and_keep_the_seeds_names() {
        let r = Registry::new(TOOLS.iter()).unwrap();
        for name in [
            "epic-tide-save-work",
            "epic-tide-create-path",
            "epic-tide-start-tide",
            "epic-tide-update-execution",
            "epic-tide-complete-tide",
            "epic-tide-query-patterns",
            "epic-tide-get-history",
        ] {
            assert!(r.get(name).is_some(), "{name}");
        }
    }

    #[test]
    fn every_input_schema_refuses_fields_the_server_sets() {
        for def in TOOLS {
            let s = schema(def, false);
            assert_eq!(s["additionalProperties"], false, "{}", def.name);
            let tool = Registry::new([def]).unwrap();
            let tool = tool.get(def.name).unwrap();
            for field in ["work_id", "path_id", "created_at", "attempt", "duration"] {
                let e = tool
                    .check_input(&json!({ field: "x" }))
                    .unwrap_err()
                    .to_string();
                assert!(e.contains(field), "{}: {e}", def.name);
            }
        }
    }

    #[test]
    fn output_schemas_list_every_code_and_the_vocabularys_next_actions() {
        let codes: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        for def in TOOLS {
            let s = schema(def, true);
            let listed: Vec<String> = strings(&s["$defs"]["error"]["properties"]["code"]["enum"]);
            assert_eq!(listed, codes, "{}", def.name);
        }
        let complete = schema(&TOOLS[4], true);
        let actions = strings(&complete["oneOf"][0]["properties"]["next_action"]["enum"]);
        let vocab: Vec<String> = vocabulary::get()
            .next_actions
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert_eq!(actions, vocab);
    }

    #[test]
    fn coded_refusals_fit_the_output_schemas() {
        let r = Registry::new(TOOLS.iter()).unwrap();
        let e = refuse(
            Code::PathNotFound,
            "PATH does not exist: 'x'.",
            json!({ "path_name": "x" }),
        );
        for def in TOOLS {
            let tool = r.get(def.name).unwrap();
            assert!(
                tool.check_output(&e.structured().unwrap()).is_ok(),
                "{}",
                def.name
            );
        }
    }

    #[test]
    fn status_and_outcome_descriptions_list_the_vocabulary() {
        let v = vocabulary::get();
        let status = &schema(&TOOLS[3], false)["properties"]["status"]["description"];
        assert!(status.as_str().unwrap().contains(&listing(&v.statuses)));
        let outcome = &schema(&TOOLS[4], false)["properties"]["outcome"]["description"];
        assert!(outcome.as_str().unwrap().contains(&listing(&v.outcomes)));
    }

    #[test]
    fn executions_show_each_works_latest_status() {
        let seq = vec!["a".to_string(), "b".to_string()];
        let u1 = json!({"work_name": "a", "status": "failed", "seq": 1, "error": "boom", "output": null, "updated_ms": 0, "duration_ms": 5});
        let u2 = json!({"work_name": "a", "status": "complete", "seq": 2, "error": null, "output": "ok", "updated_ms": 10, "duration_ms": 10});
        let brief = execution(&seq, &[&u1, &u2], false);
        assert_eq!(
            brief,
            json!({"a": {"status": "complete", "updates": 2}, "b": {"status": null, "updates": 0}})
        );
        let full = execution(&seq, &[&u1, &u2], true);
        assert_eq!(full["a"]["history"][0]["error"], "boom");
        assert_eq!(
            full["a"]["history"][1]["updated_at"],
            "1970-01-01T00:00:00.010Z"
        );
    }
}
