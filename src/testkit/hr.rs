//! `get_employee` and `list_employees` on the sample company of migration 0013: row-level access
//! decided in their SQL (self, a manager's whole reporting chain, everyone for HR roles), masking,
//! department filters and signed keyset cursors.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::{user, Called, TestPlatform};
use crate::registry::Caller;

/// Employee ids of the sample company (docs/domain-data.md): Eve is the CEO; Victor → Grace →
/// Nina → Marcus and Sarah is one line of the reporting tree; Alice works in HR.
const EVE: &str = "00000000-0000-4000-8000-000000000001";
const VICTOR: &str = "00000000-0000-4000-8000-000000000003";
const NINA: &str = "00000000-0000-4000-8000-000000000005";
const MARCUS: &str = "00000000-0000-4000-8000-000000000006";
const SARAH: &str = "00000000-0000-4000-8000-000000000007";
const ALICE: &str = "00000000-0000-4000-8000-000000000010";

fn data(c: &Called) -> &Value {
    assert_eq!(c.structured()["status"], "success", "{}", c.result);
    &c.structured()["data"]
}

fn refusal_code(c: &Called) -> &str {
    assert_eq!(c.structured()["status"], "error", "{}", c.result);
    c.structured()["code"].as_str().unwrap_or_default()
}

fn get(p: &TestPlatform, caller: &Caller, id: &str) -> Called {
    p.call_ok(caller, "get_employee", json!({ "employee_id": id }))
}

/// Every page of `list_employees` with `args`, following `nextCursor`: the ids in order.
fn list_all(p: &TestPlatform, caller: &Caller, args: Value) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut pages = 0;
    let mut args = args;
    loop {
        let c = p.call_ok(caller, "list_employees", args.clone());
        pages += 1;
        for e in data(&c).as_array().expect("a list") {
            ids.push(e["employee_id"].as_str().unwrap_or_default().to_string());
        }
        match c.structured()["metadata"]["nextCursor"].as_str() {
            Some(next) => args["cursor"] = json!(next),
            None => return (ids, pages),
        }
        assert!(pages < 100, "the cursor never ends");
    }
}

fn ids(rows: Vec<Value>) -> Vec<String> {
    rows.iter()
        .map(|r| r["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn get_employee_shows_the_caller_themself_with_their_own_pii() {
    let p = TestPlatform::new();
    let c = get(&p, &user(MARCUS, &[]), MARCUS);
    let e = data(&c);
    assert_eq!(e["employee_id"], MARCUS);
    assert_eq!(
        (e["first_name"].as_str(), e["last_name"].as_str()),
        (Some("Marcus"), Some("Johnson"))
    );
    assert_eq!(e["department"], "Engineering");
    let cents = p.db.value(
        "SELECT salary_cents FROM hr_employees WHERE id = ?1",
        &[json!(MARCUS)],
    );
    assert_eq!(
        e["salary"].as_f64(),
        cents.as_f64().map(|c| c / 100.0),
        "own salary shown"
    );
    assert_eq!(
        e["ssn"], "*** (Hidden)",
        "only hr-write and executive see an SSN"
    );
    assert_ne!(e["phone"], "*** (Hidden)", "own phone shown");
    assert!(
        c.text().starts_with("Employee Marcus Johnson ("),
        "{}",
        c.text()
    );
}

#[test]
fn get_employee_refuses_another_employee_to_a_caller_without_rights() {
    let p = TestPlatform::new();
    let c = get(&p, &user(MARCUS, &[]), SARAH);
    assert!(!c.is_error(), "a refusal is an answer of the domain union");
    assert_eq!(refusal_code(&c), "EMPLOYEE_NOT_FOUND");
    assert!(
        !c.text().contains("Sarah"),
        "nothing of the row leaks: {}",
        c.text()
    );
    // The same for someone who does not exist, so the answer tells nothing about who does.
    let none = get(
        &p,
        &user(MARCUS, &[]),
        "00000000-0000-4000-8000-0000000fffff",
    );
    assert_eq!(refusal_code(&none), "EMPLOYEE_NOT_FOUND");
    // Anonymous callers do not see the tool at all.
    assert!(p
        .call(
            &Caller::anonymous(),
            "get_employee",
            json!({ "employee_id": MARCUS })
        )
        .is_none());
}

#[test]
fn get_employee_lets_a_manager_see_their_whole_chain_and_no_one_else() {
    let p = TestPlatform::new();
    let victor = user(VICTOR, &["manager"]);
    // Marcus reports to Nina, who reports to Grace, who reports to Victor.
    let e = data(&get(&p, &victor, MARCUS)).clone();
    assert_eq!(e["manager_id"], NINA);
    assert_eq!(
        e["salary"], "*** (Hidden)",
        "a manager does not see salaries"
    );
    assert_eq!(e["phone"], "*** (Hidden)", "nor phone numbers");
    let nina = user(NINA, &["manager"]);
    assert_eq!(data(&get(&p, &nina, SARAH))["employee_id"], SARAH);
    assert_eq!(
        refusal_code(&get(&p, &nina, VICTOR)),
        "EMPLOYEE_NOT_FOUND",
        "not up the chain"
    );
    assert_eq!(
        refusal_code(&get(&p, &nina, ALICE)),
        "EMPLOYEE_NOT_FOUND",
        "not another branch"
    );
    // Without the manager role, the same person sees only themself.
    assert_eq!(
        refusal_code(&get(&p, &user(NINA, &[]), SARAH)),
        "EMPLOYEE_NOT_FOUND"
    );
}

#[test]
fn get_employee_refuses_bad_arguments_before_any_sql_and_binds_the_id_as_data() {
    let p = TestPlatform::new();
    let eve = user(EVE, &["executive"]);
    let c = p.call_ok(
        &eve,
        "get_employee",
        json!({ "employee_id": MARCUS, "salary": 1 }),
    );
    assert!(c.is_error());
    assert_eq!(c.outcome, "invalid_arguments");
    assert!(c.text().contains("salary"), "{}", c.text());
    let injected = get(&p, &eve, &format!("{MARCUS}' OR '1'='1"));
    assert_eq!(refusal_code(&injected), "EMPLOYEE_NOT_FOUND");
}

#[test]
fn list_employees_filters_by_department_and_pages_through_every_row_once() {
    let p = TestPlatform::new();
    let alice = user(ALICE, &["hr-read"]);
    let (listed, pages) = list_all(
        &p,
        &alice,
        json!({ "department": "human resources", "limit": 10 }),
    );
    let expected = ids(p.db.rows(
        "SELECT id FROM hr_employees WHERE department_id = 'HR' AND active = 1 ORDER BY last_name, first_name, id",
        &[],
    ));
    assert!(expected.len() > 20, "{}", expected.len());
    assert_eq!(listed, expected);
    assert_eq!(pages, expected.len().div_ceil(10));
    let first = p.call_ok(
        &alice,
        "list_employees",
        json!({ "department": "HR", "limit": 3 }),
    );
    for e in data(&first).as_array().unwrap() {
        assert_eq!(e["department"], "Human Resources");
        assert_eq!(e["active"], true);
    }
    assert_eq!(first.structured()["metadata"]["returnedCount"], 3);
    assert_eq!(first.structured()["metadata"]["hasMore"], true);
}

#[test]
fn list_employees_refuses_a_cursor_of_other_filters_or_another_caller_and_an_unknown_department() {
    let p = TestPlatform::new();
    let alice = user(ALICE, &["hr-read"]);
    let first = p.call_ok(
        &alice,
        "list_employees",
        json!({ "department": "HR", "limit": 2 }),
    );
    let cursor = first.structured()["metadata"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();
    let other_filter = p.call_ok(
        &alice,
        "list_employees",
        json!({ "department": "Legal", "limit": 2, "cursor": cursor }),
    );
    assert_eq!(refusal_code(&other_filter), "INVALID_INPUT");
    let eve = user(EVE, &["executive"]);
    let other_caller = p.call_ok(
        &eve,
        "list_employees",
        json!({ "department": "HR", "limit": 2, "cursor": cursor }),
    );
    assert_eq!(refusal_code(&other_caller), "INVALID_INPUT");
    let unknown = p.call_ok(
        &alice,
        "list_employees",
        json!({ "department": "Astrology" }),
    );
    assert_eq!(refusal_code(&unknown), "INVALID_INPUT");
    assert!(unknown.structured()["suggestedAction"]
        .as_str()
        .unwrap()
        .contains("Engineering"));
}

#[test]
fn list_employees_shows_a_manager_their_active_chain_only() {
    let p = TestPlatform::new();
    let (listed, _) = list_all(&p, &user(NINA, &["manager"]), json!({}));
    let expected: BTreeSet<String> = ids(p.db.rows(
        "WITH RECURSIVE c(id) AS (SELECT ?1 UNION ALL SELECT e.id FROM hr_employees e JOIN c ON e.manager_id = c.id)
         SELECT e.id FROM hr_employees e JOIN c ON c.id = e.id WHERE e.active = 1",
        &[json!(NINA)],
    ))
    .into_iter()
    .collect();
    assert!(
        expected.contains(MARCUS) && expected.len() > 5,
        "{expected:?}"
    );
    assert_eq!(listed.into_iter().collect::<BTreeSet<_>>(), expected);
}

#[test]
fn list_employees_is_hidden_from_roles_that_may_not_list() {
    let p = TestPlatform::new();
    for caller in [
        user(MARCUS, &[]),
        user(MARCUS, &["sales-read", "finance-read"]),
        Caller::anonymous(),
    ] {
        assert!(
            p.call(&caller, "list_employees", json!({})).is_none(),
            "{caller:?}"
        );
    }
    assert!(p
        .call(&user(NINA, &["manager"]), "list_employees", json!({}))
        .is_some());
}
