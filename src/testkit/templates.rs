//! `process_template` on the templates migration 0003 ships: loading by name under the ownership
//! rule, variable validation, rendering, the KV result cache and the `template_processings` record
//! of a call that asks for metadata.

use serde_json::{json, Value};

use super::{user, TestPlatform};
use crate::registry::Caller;

fn welcome_vars() -> Value {
    json!({
        "client": { "name": "Ana Ruiz", "email": "ana.ruiz@example.com", "tier": "vip" },
        "trip": {
            "destination": { "city": "Lisbon", "country": "Portugal" },
            "departure_date": "2026-05-04", "return_date": "2026-05-11", "duration_days": 7,
            "travelers": { "adults": 2 }, "trip_type": "anniversary",
            "budget": { "total": 5200 },
        },
        "pricing": { "classic_price": 4100, "premium_price": 5600, "luxury_price": 9900 },
    })
}

fn processings(p: &TestPlatform) -> Value {
    p.db.value("SELECT COUNT(*) FROM template_processings", &[])
}

#[test]
fn process_template_renders_a_shipped_template_and_caches_the_result() {
    let p = TestPlatform::new();
    let args = json!({ "template_name": "client-welcome-email", "variables": welcome_vars() });
    let c = p.call_ok(&Caller::anonymous(), "process_template", args.clone());
    assert!(!c.is_error(), "{}", c.result);
    let text = c.text();
    assert!(text.contains("Welcome aboard, Ana Ruiz!"), "{text}");
    assert!(text.contains("Lisbon, Portugal"), "{text}");
    assert!(text.contains("VIP clients"), "the tier condition: {text}");
    assert!(text.contains("$9,900.00"), "{text}");
    assert!(!text.contains("{client."), "no placeholder left: {text}");
    assert_eq!(
        processings(&p),
        json!(0),
        "only a call with metadata is recorded"
    );
    let cached: Vec<_> = p.kv_keys("template-result:");
    assert_eq!(cached.len(), 1, "{cached:?}");
    assert!(
        c.logs.is_empty(),
        "a result that was cached logs no warning: {:?}",
        c.logs
    );
    // The same call again is answered from the cache, with the same text.
    assert_eq!(
        p.call_ok(&Caller::anonymous(), "process_template", args)
            .text(),
        text
    );
}

#[test]
fn process_template_with_metadata_records_the_processing_row() {
    let p = TestPlatform::new();
    let c = p.call_ok(
        &user("u-1", &[]),
        "process_template",
        json!({
            "template_name": "client-welcome-email",
            "variables": welcome_vars(),
            "processing_options": { "include_metadata": true, "output_format": "markdown" },
            "context_data": { "session_info": { "session_id": "s-42" } },
        }),
    );
    assert!(
        c.text().contains("**Processing Metadata:**"),
        "{}",
        c.text()
    );
    let rows = p.db.rows(
        "SELECT t.name, p.output_format, p.session_id, json_extract(p.variables_provided, '$.client.name') AS client
         FROM template_processings p JOIN template_definitions t ON t.id = p.template_id",
        &[],
    );
    assert_eq!(
        rows,
        vec![
            json!({ "name": "client-welcome-email", "output_format": "markdown", "session_id": "s-42", "client": "Ana Ruiz" })
        ]
    );
}

#[test]
fn process_template_refuses_a_missing_required_variable_and_records_nothing() {
    let p = TestPlatform::new();
    let mut vars = welcome_vars();
    vars["trip"]["destination"]
        .as_object_mut()
        .unwrap()
        .remove("city");
    let c = p.call_ok(
        &Caller::anonymous(),
        "process_template",
        json!({
            "template_name": "client-welcome-email",
            "variables": vars,
            "processing_options": { "include_metadata": true },
        }),
    );
    assert!(c.is_error(), "{}", c.result);
    assert_eq!(c.outcome, "tool_error");
    let text = c.text();
    assert!(
        text.contains("Template variable validation failed"),
        "{text}"
    );
    assert!(
        text.contains("trip.destination.city"),
        "names the variable: {text}"
    );
    assert_eq!(processings(&p), json!(0));
    assert!(p.kv_keys("template-result:").is_empty());
}

#[test]
fn process_template_falls_back_when_asked_and_lists_templates_for_an_unknown_name() {
    let p = TestPlatform::new();
    let c = p.call_ok(
        &Caller::anonymous(),
        "process_template",
        json!({
            "template_name": "client-welcome-email",
            "variables": {},
            "processing_options": { "fallback_content": "Hello from the fallback" },
        }),
    );
    assert!(!c.is_error(), "{}", c.result);
    assert!(c.text().contains("Hello from the fallback"), "{}", c.text());
    assert!(c.text().contains("client.name"), "{}", c.text());
    let unknown = p.call_ok(
        &Caller::anonymous(),
        "process_template",
        json!({ "template_name": "no-such-template", "variables": {} }),
    );
    assert!(unknown.is_error());
    assert!(
        unknown.text().contains("three-tier-proposal"),
        "{}",
        unknown.text()
    );
}
