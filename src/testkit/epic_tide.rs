//! `epic-tide-start-tide` over works and a path saved through their own tools: the tide row the
//! one guarded `INSERT … SELECT` writes, and the refusals that must write nothing.

use serde_json::{json, Value};

use super::{user, Called, TestPlatform};
use crate::registry::Caller;

fn ok(p: &TestPlatform, caller: &Caller, tool: &str, args: Value) -> Value {
    let c = p.call_ok(caller, tool, args);
    assert!(!c.is_error(), "{tool}: {}", c.result);
    c.structured().clone()
}

fn code(c: &Called) -> &str {
    assert!(c.is_error(), "{}", c.result);
    c.structured()["error"]["code"].as_str().unwrap_or_default()
}

/// Saves three works and a path of them as `caller`; returns the path's name and its works.
fn path(p: &TestPlatform, caller: &Caller) -> (String, Vec<String>) {
    let works: Vec<String> = [
        "Collect the requirements",
        "Build the thing",
        "Ship the thing",
    ]
    .iter()
    .map(|what| {
        let s = ok(
            p,
            caller,
            "epic-tide-save-work",
            json!({ "what": what, "how": ["carefully"], "metrics": ["done"] }),
        );
        s["name"].as_str().unwrap().to_string()
    })
    .collect();
    let s = ok(
        p,
        caller,
        "epic-tide-create-path",
        json!({ "what": "Deliver a small feature", "works": works, "metrics": ["shipped"] }),
    );
    (s["name"].as_str().unwrap().to_string(), works)
}

/// A platform, a signed-in user and a path they saved ([`path`]).
fn setup() -> (TestPlatform, Caller, String, Vec<String>) {
    let p = TestPlatform::new();
    let me = user("u-tide", &[]);
    let (name, works) = path(&p, &me);
    (p, me, name, works)
}

fn start(p: &TestPlatform, caller: &Caller, args: Value) -> Called {
    p.call_ok(caller, "epic-tide-start-tide", args)
}

fn start_ok(p: &TestPlatform, caller: &Caller, args: Value) -> Value {
    ok(p, caller, "epic-tide-start-tide", args)
}

fn tides(p: &TestPlatform) -> Vec<Value> {
    p.db.rows(
        "SELECT t.id, t.attempt, t.status, t.sequence, p.name AS path FROM epic_tides t JOIN epic_paths p ON p.id = t.path_id ORDER BY t.started_ms",
        &[],
    )
}

#[test]
fn start_tide_creates_the_active_tide_row() {
    let (p, me, name, works) = setup();
    let s = start_ok(&p, &me, json!({ "path_name": name }));
    assert_eq!(s["attempt"], 1);
    assert_eq!(s["path_name"], json!(name));
    assert_eq!(s["sequence"], json!(works));
    let rows = tides(&p);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], s["tide_id"]);
    assert_eq!(rows[0]["status"], "active");
    assert_eq!(rows[0]["attempt"], 1);
    assert_eq!(rows[0]["path"], json!(name));
    let stored: Value = serde_json::from_str(rows[0]["sequence"].as_str().unwrap()).unwrap();
    assert_eq!(stored, json!(works));

    // A second start while it is active is refused and writes nothing.
    let again = start(&p, &me, json!({ "path_name": name }));
    assert_eq!(code(&again), "TIDE_ALREADY_ACTIVE");
    assert_eq!(tides(&p).len(), 1);
}

#[test]
fn start_tide_applies_adaptations_to_this_tides_sequence_only() {
    let (p, me, name, works) = setup();
    let s = start_ok(
        &p,
        &me,
        json!({ "path_name": name, "adaptations": [{ "action": "remove", "target": works[1], "details": { "reason": "not needed this time" } }] }),
    );
    assert_eq!(s["sequence"], json!([works[0], works[2]]));
    let path_works = p.db.value(
        "SELECT works FROM epic_paths WHERE name = ?1",
        &[json!(name)],
    );
    assert_eq!(
        serde_json::from_str::<Value>(path_works.as_str().unwrap()).unwrap(),
        json!(works),
        "the path keeps its works"
    );
}

#[test]
fn start_tide_refuses_bad_input_and_writes_nothing() {
    let (p, me, name, works) = setup();

    let bad_action = start(
        &p,
        &me,
        json!({ "path_name": name, "adaptations": [{ "action": "explode", "target": works[0] }] }),
    );
    assert_eq!(code(&bad_action), "INVALID_ADAPTATION");
    assert!(
        bad_action.text().contains("adaptations[0]"),
        "{}",
        bad_action.text()
    );

    let unknown_work = start(
        &p,
        &me,
        json!({ "path_name": name, "adaptations": [{ "action": "insert", "target": "never-saved" }] }),
    );
    assert_eq!(code(&unknown_work), "INVALID_SEQUENCE");

    let unknown_path = start(&p, &me, json!({ "path_name": "no-such-path" }));
    assert_eq!(code(&unknown_path), "PATH_NOT_FOUND");

    let schema = start(&p, &me, json!({ "path_name": "Not A Name" }));
    assert!(schema.is_error());
    assert_eq!(schema.outcome, "invalid_arguments");

    // Someone else's path is theirs to run.
    let other = start(&p, &user("u-other", &[]), json!({ "path_name": name }));
    assert!(other.is_error(), "{}", other.result);

    assert!(tides(&p).is_empty(), "{:?}", tides(&p));
}
