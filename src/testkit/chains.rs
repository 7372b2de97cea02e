//! `create_chain`: the planner's checks, reference checks against the shipped instruction sets and
//! templates, and the one statement that saves a chain under the ownership rule.

use serde_json::{json, Value};

use super::{user, Called, TestPlatform};

/// A two-step chain over shipped references: an instruction set, then a template that depends on it.
fn welcome_chain(name: &str) -> Value {
    json!({
        "name": name,
        "title": "Welcome a new client",
        "description": "Drafts a welcome note, then renders the welcome email.",
        "category": "client-followup",
        "steps": [
            {
                "id": 1, "name": "draft_note", "type": "instruction_set",
                "instruction_set": "client-communication",
                "input_template": "Draft a welcome note for {client_name}",
                "input_variables": ["client_name"], "output_variables": ["note"],
            },
            {
                "id": 2, "name": "render_email", "type": "template_processing",
                "template_id": "client-welcome-email",
                "input_variables": ["note"], "output_variables": ["email"],
                "depends_on": [1],
            },
        ],
    })
}

fn create(p: &TestPlatform, who: &str, def: Value, opts: Value) -> Called {
    p.call_ok(
        &user(who, &[]),
        "create_chain",
        json!({ "chain_definition": def, "creation_options": opts }),
    )
}

fn chain_rows(p: &TestPlatform, name: &str) -> Vec<Value> {
    p.db.rows(
        "SELECT owner, visibility, revision, author, is_active, category, definition FROM execution_chains WHERE name = ?1",
        &[json!(name)],
    )
}

#[test]
fn create_chain_stores_a_valid_chain_that_reads_back_as_given() {
    let p = TestPlatform::new();
    let def = welcome_chain("native-welcome");
    let c = create(&p, "u-7", def.clone(), json!({}));
    assert!(!c.is_error(), "{}", c.result);
    assert!(
        c.text()
            .starts_with("Chain 'native-welcome' created successfully."),
        "{}",
        c.text()
    );
    assert!(
        c.text().contains("2. render_email (template_processing)"),
        "{}",
        c.text()
    );
    let rows = chain_rows(&p, "native-welcome");
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["owner"], "user:u-7");
    assert_eq!(row["visibility"], "private");
    assert_eq!(row["revision"], 1);
    assert_eq!(row["author"], "u-7");
    assert_eq!(row["is_active"], 1);
    let stored: Value = serde_json::from_str(row["definition"].as_str().unwrap()).unwrap();
    assert_eq!(stored, def, "the definition reads back as given");

    // Saving it again needs overwrite_existing; with it the revision goes up.
    let again = create(&p, "u-7", def.clone(), json!({}));
    assert!(again.is_error());
    assert!(again.text().contains("already exists"), "{}", again.text());
    let mut changed = def.clone();
    changed["title"] = json!("Welcome a new client, v2");
    let replaced = create(&p, "u-7", changed, json!({ "overwrite_existing": true }));
    assert!(
        replaced.text().contains("updated successfully"),
        "{}",
        replaced.text()
    );
    assert_eq!(chain_rows(&p, "native-welcome")[0]["revision"], 2);
}

#[test]
fn create_chain_leaves_another_owners_chain_alone() {
    let p = TestPlatform::new();
    assert!(!create(&p, "u-7", welcome_chain("native-welcome"), json!({})).is_error());
    let mut theirs = welcome_chain("native-welcome");
    theirs["title"] = json!("Someone else's chain");
    let c = create(&p, "u-8", theirs, json!({ "overwrite_existing": true }));
    assert!(c.is_error(), "{}", c.result);
    let rows = chain_rows(&p, "native-welcome");
    assert_eq!(rows[0]["owner"], "user:u-7");
    assert_eq!(rows[0]["revision"], 1);
    assert!(rows[0]["definition"]
        .as_str()
        .unwrap()
        .contains("Welcome a new client"));
}

#[test]
fn create_chain_refuses_a_cycle_and_writes_nothing() {
    let p = TestPlatform::new();
    let before = p.db.value("SELECT COUNT(*) FROM execution_chains", &[]);
    let mut def = welcome_chain("native-cycle");
    def["steps"][0]["depends_on"] = json!([2]);
    let c = create(&p, "u-7", def, json!({}));
    assert!(c.is_error(), "{}", c.result);
    assert_eq!(c.outcome, "tool_error");
    let text = c.text();
    assert!(
        text.contains("Chain definition validation failed"),
        "{text}"
    );
    assert!(
        text.to_lowercase().contains("cycl"),
        "names the cycle: {text}"
    );
    assert!(chain_rows(&p, "native-cycle").is_empty());
    assert_eq!(
        p.db.value("SELECT COUNT(*) FROM execution_chains", &[]),
        before
    );
}

#[test]
fn create_chain_refuses_missing_references_and_writes_nothing() {
    let p = TestPlatform::new();
    let mut def = welcome_chain("native-missing");
    def["steps"][0]["instruction_set"] = json!("no-such-set");
    def["steps"][1]["template_id"] = json!("no-such-template");
    let c = create(&p, "u-7", def, json!({}));
    assert!(c.is_error(), "{}", c.result);
    let text = c.text();
    assert!(
        text.contains("instruction sets not found: no-such-set"),
        "{text}"
    );
    assert!(
        text.contains("active templates not found: no-such-template"),
        "{text}"
    );
    assert!(chain_rows(&p, "native-missing").is_empty());
}
