//! `field_request` over the catalog of migration 0016 (plus a `tool://` context per registered
//! tool): the lexical matcher alone, as on a deployment without Workers AI.

use serde_json::{json, Value};

use super::{user, TestPlatform};
use crate::registry::Caller;

fn ask(p: &TestPlatform, args: Value) -> Value {
    let c = p.call_ok(&Caller::anonymous(), "field_request", args);
    assert!(!c.is_error(), "{}", c.result);
    c.structured().clone()
}

const INCIDENT: &str =
    "Our payment service is failing in production with 500 errors and nobody can check out";

#[test]
fn field_request_finds_the_workflow_a_clear_request_names() {
    let p = TestPlatform::new();
    let s = ask(
        &p,
        json!({
            "query": INCIDENT,
            "extracted_variables": { "domain": "technical", "technology": "java", "system_component": "payments", "urgency": "critical" },
            "confidence_level": 0.8,
        }),
    );
    assert_eq!(s["success"], true, "{s}");
    assert_eq!(s["status"], "success", "{s}");
    assert_eq!(
        s["matches"][0]["uri"], "workflow://incident-response",
        "{s}"
    );
    assert_eq!(s["matches"][0]["match_reasoning"]["domain_match"], true);
    assert_eq!(s["degraded"], true, "no Workers AI binding in tests");
    let rows = p.db.value("SELECT COUNT(*) FROM contexts", &[]);
    let searched = s["_metadata"]["contexts_searched"].as_i64().unwrap();
    assert!(
        searched > rows.as_i64().unwrap(),
        "catalog rows plus tool:// contexts: {searched} vs {rows}"
    );
    assert_eq!(s["next_actions"][0]["tool"], "execute_workflow");
}

#[test]
fn a_beginner_is_offered_and_runs_only_simple_contexts() {
    // Default thresholds (10,50): an anonymous caller without successful calls is a beginner.
    let p = TestPlatform::new().with_setting("FLOWMIND_LEVELS", None);
    let s = ask(
        &p,
        json!({
            "query": INCIDENT,
            "extracted_variables": { "domain": "technical", "technology": "java", "system_component": "payments", "urgency": "critical" },
            "confidence_level": 0.8,
        }),
    );
    let matches = s["matches"].as_array().cloned().unwrap_or_default();
    assert!(matches.iter().all(|m| m["complexity"] == "simple"), "{s}");
    assert_eq!(s["guidance"]["max_complexity"], "simple");
    assert_eq!(
        s["guidance"]["above_your_level"][0]["uri"], "workflow://incident-response",
        "{s}"
    );
    assert_eq!(
        s["guidance"]["above_your_level"][0]["needed_level"],
        "advanced"
    );
    let run = p.call_ok(
        &Caller::anonymous(),
        "execute_workflow",
        json!({ "workflow_uri": "workflow://incident-response", "initial_variables": { "system_component": "payments", "error_description": "500 errors" } }),
    );
    assert_eq!(
        run.structured()["error"]["code"],
        "COMPLEXITY_ABOVE_LEVEL",
        "{}",
        run.result
    );
    // Levels off (the testkit's default): nothing is held back.
    let s = ask(
        &TestPlatform::new(),
        json!({ "query": INCIDENT, "confidence_level": 0.8 }),
    );
    assert_eq!(
        s["matches"][0]["uri"], "workflow://incident-response",
        "{s}"
    );
    assert!(s["guidance"].get("above_your_level").is_none());
}

#[test]
fn field_request_gives_no_matches_for_a_nonsense_request() {
    let p = TestPlatform::new();
    for query in [
        "zxqv wibble frobnicate quux",
        "bake sourdough bread with a crispy crust",
    ] {
        let s = ask(&p, json!({ "query": query, "confidence_level": 0.7 }));
        assert_eq!(s["status"], "no_matches", "{query}: {s}");
        assert_eq!(s["matches"], json!([]), "{query}");
        assert_eq!(s["next_actions"][0]["tool"], "list_available_contexts");
    }
}

#[test]
fn field_request_matches_what_the_contexts_table_holds() {
    let p = TestPlatform::new();
    let query = "bake sourdough bread with a crispy crust";
    p.db.exec(
        r#"INSERT INTO contexts (uri, type, name, description, domain, tags, complexity, example_requests,
             activation_condition, confidence_required, required_variables, execution_preview)
           VALUES ('workflow://sourdough-baking', 'workflow', 'Sourdough baking',
             'Bakes sourdough bread at home: starter, dough, proofing and a crispy crust.', 'personal',
             '["bread","sourdough","baking","crust"]', 'simple',
             '["Bake sourdough bread with a crispy crust","Help me feed my sourdough starter"]',
             'User wants to bake bread at home.', 0.5, '["flour_type"]',
             '{"type":"sequential_workflow","estimated_steps":"3"}')"#,
    );
    let s = ask(&p, json!({ "query": query, "confidence_level": 0.7 }));
    assert_ne!(s["status"], "no_matches", "{s}");
    assert_eq!(s["matches"][0]["uri"], "workflow://sourdough-baking", "{s}");
    assert_eq!(
        s["matches"][0]["variables"]["missing"],
        json!(["flour_type"])
    );
}

#[test]
fn field_request_answers_a_bad_call_in_the_teaching_format() {
    let p = TestPlatform::new();
    let c = p.call_ok(
        &user("u-1", &[]),
        "field_request",
        json!({ "query": "help", "confidence_level": 7 }),
    );
    assert!(
        !c.is_error(),
        "a teaching answer, not a tool error: {}",
        c.result
    );
    let s = c.structured();
    assert_eq!(s["success"], false);
    assert!(
        s["error"]["code"].as_str().is_some_and(|c| !c.is_empty()),
        "{s}"
    );
    assert_eq!(s["next_actions"][0]["tool"], "field_request");
}

/// The catalog generation `field_request` answered from, and whether its index was reused.
fn generation_seen(p: &TestPlatform) -> (i64, bool) {
    let s = ask(
        p,
        json!({ "query": INCIDENT, "confidence_level": 0.7, "extracted_variables": {} }),
    );
    let meta = &s["_metadata"];
    (
        meta["catalog_generation"].as_i64().expect("a generation"),
        meta["cache_hit"].as_bool().expect("cache_hit"),
    )
}

#[test]
fn another_instances_catalog_write_is_seen_within_the_generation_ttl() {
    // Each test runs on a thread of its own, so this instance's caches start empty.
    // Long enough for a debug build to build the index within it on a loaded machine.
    let p = TestPlatform::new().with_setting("FLOWMIND_GENERATION_TTL_MS", Some("3000"));
    let (first, _) = generation_seen(&p);
    // A write through another instance: D1 moves, this instance is not told.
    p.db.exec("UPDATE flowmind_generation SET generation = generation + 1 WHERE id = 1");
    assert_eq!(
        generation_seen(&p),
        (first, true),
        "within the bound the generation read is reused"
    );
    std::thread::sleep(std::time::Duration::from_millis(3000));
    assert_eq!(
        generation_seen(&p),
        (first + 1, false),
        "past the bound the write is seen and the index rebuilt"
    );
}

#[test]
fn this_instances_catalog_write_is_seen_at_once() {
    let p = TestPlatform::new().with_setting("FLOWMIND_GENERATION_TTL_MS", Some("60000"));
    let (first, _) = generation_seen(&p);
    // Saving a composed workflow writes `contexts` and bumps the generation through this instance.
    let saved = p.call_ok(
        &Caller::anonymous(),
        "compose_workflow",
        json!({ "name": "review-then-debug", "flow_type": "sequential", "save": true, "components": [
            { "uri": "workflow://code-review", "role": "primary" },
            { "uri": "agent://debugger", "role": "support" }
        ] }),
    );
    assert!(!saved.is_error(), "{}", saved.result);
    assert_eq!(
        saved.structured()["result"]["saved"],
        true,
        "{}",
        saved.result
    );
    assert_eq!(generation_seen(&p), (first + 1, false));
}

#[test]
fn a_generation_ttl_of_zero_reads_every_call() {
    let p = TestPlatform::new().with_setting("FLOWMIND_GENERATION_TTL_MS", Some("0"));
    let (first, _) = generation_seen(&p);
    p.db.exec("UPDATE flowmind_generation SET generation = generation + 1 WHERE id = 1");
    assert_eq!(generation_seen(&p), (first + 1, false));
}
