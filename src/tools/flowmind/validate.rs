//! `field_request`'s argument checks (seed 001, "Tool Validation Middleware" and the schema's
//! `allOf` rules), answered in the seed's educational error format: a code, what is wrong, a fix
//! with an instruction, an example and the reason, and guidance for next time.
//!
//! The tool validates its own arguments (its schema says `"x-validated-by": "tool"`) so that a bad
//! call teaches instead of bouncing off a schema message. Every problem is reported at once; the
//! first one, in the order below, gives the error its code:
//!
//! 1. the shape: not an object, `query` or `confidence_level` missing or of the wrong type, values
//!    out of range, unknown properties (`INVALID_INPUT`, `MISSING_QUERY`, `INVALID_CONFIDENCE`);
//! 2. the query's length: fewer than 10 characters or 3 words (`QUERY_TOO_BRIEF`), more than 500
//!    characters (`QUERY_TOO_LONG`);
//! 3. the `allOf` rules: a technical domain without `technology`, a critical or emergency urgency
//!    without `domain` (`INVALID_VARIABLES`);
//! 4. the honesty heuristic: a confidence above 0.9 with fewer than 3 extracted variables
//!    (`CONFIDENCE_INCONSISTENT`).

use serde_json::{json, Value};

use super::catalog::DOMAINS;
use super::codes;
use crate::engine::variables::deep_merge;

/// One problem, in the middleware's `{field, issue, suggestion}` form.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The argument at fault (a dotted path).
    pub field: String,
    /// What is wrong with it.
    pub issue: String,
    /// What to do.
    pub suggestion: String,
}

/// Why a call is refused, and how to fix it.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The error code (`INVALID_VARIABLES`, `QUERY_TOO_BRIEF`, …).
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub instruction: String,
    /// The arguments (or part of them) that would pass.
    pub example: Value,
    /// Why the rule exists.
    pub why: String,
    /// Help beyond the fix (common values, hints).
    pub guidance: Value,
    /// The name of what blocked the search, for `partial_results`.
    pub blocked_by: &'static str,
    /// Every problem found, the one above first.
    pub problems: Vec<Problem>,
}

impl Refusal {
    /// The call again with the fix applied: the example merged into `args` (into
    /// `extracted_variables` for variable fixes), or a whole example call when the arguments'
    /// shape was wrong.
    pub fn retry(&self, args: &Value) -> Value {
        if self.code == codes::INVALID_INPUT || !args.is_object() {
            return example_call();
        }
        let patch = if self.code == codes::INVALID_VARIABLES {
            json!({ "extracted_variables": self.example })
        } else {
            self.example.clone()
        };
        let mut out = args.clone();
        deep_merge(&mut out, &patch);
        out
    }

    /// The `error` object of the response.
    pub fn error(&self) -> Value {
        json!({
            "code": self.code,
            "message": self.message,
            "fix": { "instruction": self.instruction, "example": self.example, "why": self.why },
            "problems": self.problems.iter().map(|p| json!({
                "field": p.field, "issue": p.issue, "suggestion": p.suggestion,
            })).collect::<Vec<_>>(),
        })
    }
}

/// Technologies to suggest when a technical request names none.
pub const COMMON_TECHNOLOGIES: [&str; 8] = [
    "python",
    "javascript",
    "java",
    "react",
    "aws",
    "postgresql",
    "kubernetes",
    "go",
];

/// A complete, valid call, for fixes that concern the whole shape.
fn example_call() -> Value {
    json!({
        "query": "Checkout API returns 500 errors in production since the last deploy; customers cannot pay.",
        "extracted_variables": { "domain": "technical", "technology": "nodejs", "system_component": "checkout api", "urgency": "critical" },
        "confidence_level": 0.8,
    })
}

fn problem(field: &str, issue: impl Into<String>, suggestion: impl Into<String>) -> Problem {
    Problem {
        field: field.into(),
        issue: issue.into(),
        suggestion: suggestion.into(),
    }
}

/// The schema problems that the specific rules below do not already explain: the `allOf` rules
/// show up as missing properties of `extracted_variables`, and the query's length and the
/// confidence have their own messages.
fn other_schema_problems(schema_problems: &[String]) -> Vec<String> {
    schema_problems
        .iter()
        .filter(|p| {
            let explained = p.starts_with("at /query:")
                || p.starts_with("at /confidence_level:")
                || ((p.starts_with("at /extracted_variables:") || p.starts_with("at /:"))
                    && p.contains("missing propert"));
            !explained
        })
        .cloned()
        .collect()
}

/// Checks `field_request` arguments; `schema_problems` are the input schema's complaints about
/// them. `None` when the call may go ahead.
pub fn check(args: &Value, schema_problems: &[String]) -> Option<Refusal> {
    let mut found: Vec<Refusal> = Vec::new();
    let Some(obj) = args.as_object() else {
        return into_refusal(vec![Refusal {
            code: codes::INVALID_INPUT,
            message: "The arguments must be a JSON object.".into(),
            instruction: "Send an object with at least query and confidence_level.".into(),
            example: example_call(),
            why: "field_request matches a described need; it needs the description and your confidence in it.".into(),
            guidance: json!({ "help": "get_help with help_type usage shows every argument." }),
            blocked_by: "invalid_arguments",
            problems: vec![problem("", "not an object", "send an object")],
        }]);
    };

    match obj.get("query") {
        None => found.push(Refusal {
            code: codes::MISSING_QUERY,
            message: "query is required: say in one or two sentences what the user needs.".into(),
            instruction: "Add query: a concise summary of the user's need, with its domain and intent.".into(),
            example: json!({ "query": example_call()["query"] }),
            why: "Matching compares the query with every context's name, tags, description and example requests.".into(),
            guidance: json!({ "good_queries": ["Draft a GDPR data processing impact assessment for a new analytics tool", "Plan a 3-day family trip to Lisbon on a tight budget"] }),
            blocked_by: "missing_query",
            problems: vec![problem("query", "missing", "summarise the user's need in 1-2 sentences")],
        }),
        Some(Value::String(q)) => {
            let words = q.split_whitespace().count();
            let chars = q.chars().count();
            if chars < 10 || words < 3 {
                found.push(Refusal {
                    code: codes::QUERY_TOO_BRIEF,
                    message: format!("query {q:?} is too brief ({words} words, {chars} characters): at least 3 words and 10 characters are needed to match reliably."),
                    instruction: "Add more context to query: what the user wants, why, or how.".into(),
                    example: json!({ "query": format!("{q}: describe the goal, the system or subject, and what went wrong or is needed") }),
                    why: "Short queries share too few words with any context, so every match is a guess.".into(),
                    guidance: json!({ "checklist": ["what: the task or problem", "why: the goal or impact", "how: technology, place, audience or deadline"] }),
                    blocked_by: "query_too_brief",
                    problems: vec![problem("query", "Too brief", "Add more context: what, why, or how")],
                });
            } else if chars > 500 {
                found.push(Refusal {
                    code: codes::QUERY_TOO_LONG,
                    message: format!("query has {chars} characters; at most 500 are matched."),
                    instruction: "Summarise the need in query, and describe large content in content_reference instead of pasting it.".into(),
                    example: json!({ "query": "Review this contract for GDPR issues", "content_reference": { "has_large_content": true, "content_type": "document", "content_summary": "A 12-page data processing agreement between a SaaS vendor and a retailer", "key_entities": ["data processor", "sub-processors"] } }),
                    why: "Long inputs drown the intent: the matcher weighs every word, so the request gets vaguer, not clearer.".into(),
                    guidance: json!({ "limit": 500 }),
                    blocked_by: "query_too_long",
                    problems: vec![problem("query", "Too long", "Summarise; use content_reference for the content itself")],
                });
            }
        }
        Some(other) => found.push(Refusal {
            code: codes::INVALID_INPUT,
            message: format!("query must be a string, not {}.", kind_of(other)),
            instruction: "Send query as a string of 1-2 sentences.".into(),
            example: json!({ "query": example_call()["query"] }),
            why: "The query is matched as text.".into(),
            guidance: json!({}),
            blocked_by: "invalid_arguments",
            problems: vec![problem("query", "not a string", "send a string")],
        }),
    }

    let confidence_fix = |message: String, issue: &str| {
        Refusal {
        code: codes::INVALID_CONFIDENCE,
        message,
        instruction: "Set confidence_level to your honest confidence in the extracted variables, between 0 and 1.".into(),
        example: json!({ "confidence_level": 0.7 }),
        why: "It decides whether a match may run without asking (each context has a confidence_required) and how much guidance you get.".into(),
        guidance: json!({ "scale": { "0.9+": "every key variable stated by the user", "0.6-0.8": "most variables inferred with good evidence", "below 0.5": "guessing; expect questions back" } }),
        blocked_by: "invalid_confidence",
        problems: vec![problem("confidence_level", issue, "a number from 0 to 1")],
    }
    };
    let confidence = match obj.get("confidence_level") {
        None => Err(("confidence_level is required.".to_string(), "missing")),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|c| (0.0..=1.0).contains(c))
            .ok_or_else(|| {
                (
                    format!("confidence_level {n} is outside 0..1."),
                    "out of range",
                )
            }),
        Some(other) => Err((
            format!("confidence_level must be a number, not {}.", kind_of(other)),
            "not a number",
        )),
    };
    let confidence = confidence
        .map_err(|(message, issue)| found.push(confidence_fix(message, issue)))
        .ok();

    let others = other_schema_problems(schema_problems);
    if !others.is_empty() {
        found.push(Refusal {
            code: codes::INVALID_INPUT,
            message: format!("Some arguments do not match field_request's schema: {}.", others.join("; ")),
            instruction: "Correct the arguments named above (enums list their allowed values in tools/list).".into(),
            example: example_call(),
            why: "Variables with known values (domain, urgency, error_type, …) are compared exactly; an unknown value cannot match anything.".into(),
            guidance: json!({ "schema_problems": others, "help": "get_help with help_type usage lists every argument and its values." }),
            blocked_by: "invalid_arguments",
            problems: vec![problem(&field_of(&others[0]), others.join("; "), "use a value the schema allows")],
        });
    }

    let vars = obj.get("extracted_variables").and_then(Value::as_object);
    let var = |name: &str| vars.and_then(|v| v.get(name));
    if var("domain").and_then(Value::as_str) == Some("technical") && var("technology").is_none() {
        found.push(Refusal {
            code: codes::INVALID_VARIABLES,
            message: "Domain \"technical\" requires technology to be specified".into(),
            instruction: "Add technology to extracted_variables".into(),
            example: json!({ "technology": "python" }),
            why: "Technical workflows are organized by technology stack".into(),
            guidance: json!({
                "common_technologies": COMMON_TECHNOLOGIES,
                "detection_hint": "Look for language names, frameworks, or platforms in user message",
            }),
            blocked_by: "missing_technology_variable",
            problems: vec![problem("extracted_variables.technology", "Technical domain requires technology", "Specify the primary technology involved")],
        });
    }
    if let Some(urgency @ ("critical" | "emergency")) = var("urgency").and_then(Value::as_str) {
        if var("domain").is_none() {
            found.push(Refusal {
                code: codes::INVALID_VARIABLES,
                message: format!("Urgency \"{urgency}\" requires domain to be specified"),
                instruction: "Add domain to extracted_variables".into(),
                example: json!({ "domain": "emergency", "urgency": urgency }),
                why: "Critical requests are routed by domain first, so the right responders' workflows are searched without delay".into(),
                guidance: json!({
                    "domains": DOMAINS,
                    "detection_hint": "Is a person in danger (emergency), a production system down (technical), or a business or legal deadline at stake (business, regulatory)?",
                }),
                blocked_by: "missing_domain_variable",
                problems: vec![problem("extracted_variables.domain", "Critical urgency requires domain", "Specify the domain the emergency belongs to")],
            });
        }
    }
    let count = vars.map_or(0, |v| v.len());
    if let Some(c) = confidence {
        if c > 0.9 && count < 3 {
            found.push(Refusal {
                code: codes::CONFIDENCE_INCONSISTENT,
                message: format!("confidence_level {c} is high for {count} extracted variable{}.", if count == 1 { "" } else { "s" }),
                instruction: "Lower confidence_level, or extract more variables from the user's message".into(),
                example: json!({ "confidence_level": 0.7, "extracted_variables": { "domain": "business", "business_area": "finance", "urgency": "medium" } }),
                why: "A confidence above 0.9 lets matches run without confirmation; it should rest on at least 3 variables the user actually stated".into(),
                guidance: json!({ "honest_range": "0.6-0.8 with 1-2 variables", "variables_to_look_for": ["domain", "urgency", "complexity", "technology", "business_area", "jurisdiction"] }),
                blocked_by: "inconsistent_confidence",
                problems: vec![problem("confidence_level", "High confidence with few variables", "Lower confidence or extract more variables")],
            });
        }
    }

    into_refusal(found)
}

/// The first refusal found, with every problem found.
fn into_refusal(found: Vec<Refusal>) -> Option<Refusal> {
    let problems = found.iter().flat_map(|f| f.problems.clone()).collect();
    let first = found.into_iter().next()?;
    Some(Refusal { problems, ..first })
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The dotted field of a schema problem line (`at /a/b: …` → `a.b`).
fn field_of(problem: &str) -> String {
    problem
        .strip_prefix("at /")
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_default()
        .replace('/', ".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_args() -> Value {
        json!({ "query": "Plan a family trip to Lisbon for a week", "confidence_level": 0.6 })
    }

    #[test]
    fn a_good_call_passes() {
        assert_eq!(check(&ok_args(), &[]), None);
        let mut a = ok_args();
        a["extracted_variables"] =
            json!({ "domain": "technical", "technology": "python", "urgency": "critical" });
        a["confidence_level"] = json!(0.95);
        assert_eq!(check(&a, &[]), None, "three variables justify 0.95");
    }

    #[test]
    fn missing_and_mistyped_arguments() {
        assert_eq!(check(&json!([]), &[]).unwrap().code, "INVALID_INPUT");
        let r = check(&json!({ "confidence_level": 0.5 }), &[]).unwrap();
        assert_eq!(r.code, "MISSING_QUERY");
        let r = check(&json!({ "query": 42, "confidence_level": 0.5 }), &[]).unwrap();
        assert_eq!(r.code, "INVALID_INPUT");
        let r = check(&json!({ "query": "Plan a family trip to Lisbon" }), &[]).unwrap();
        assert_eq!(r.code, "INVALID_CONFIDENCE");
        let r = check(
            &json!({ "query": "Plan a family trip to Lisbon", "confidence_level": 1.5 }),
            &[],
        )
        .unwrap();
        assert_eq!(r.code, "INVALID_CONFIDENCE");
        assert!(r.message.contains("outside"), "{}", r.message);
    }

    #[test]
    fn brief_and_long_queries() {
        let r = check(&json!({ "query": "fix bug", "confidence_level": 0.5 }), &[]).unwrap();
        assert_eq!(r.code, "QUERY_TOO_BRIEF");
        assert_eq!(r.problems[0].issue, "Too brief");
        let r = check(
            &json!({ "query": "help with everything", "confidence_level": 0.5 }),
            &[],
        );
        assert_eq!(r, None, "three words and ten characters are enough");
        let long = "word ".repeat(120);
        let r = check(&json!({ "query": long, "confidence_level": 0.5 }), &[]).unwrap();
        assert_eq!(r.code, "QUERY_TOO_LONG");
        assert!(r.example["content_reference"]["has_large_content"] == json!(true));
    }

    #[test]
    fn technical_without_technology_is_the_seeds_example() {
        let mut a = ok_args();
        a["extracted_variables"] = json!({ "domain": "technical" });
        let r = check(
            &a,
            &["at /extracted_variables: missing properties 'technology'".into()],
        )
        .unwrap();
        assert_eq!(r.code, "INVALID_VARIABLES");
        assert_eq!(
            r.message,
            "Domain \"technical\" requires technology to be specified"
        );
        assert_eq!(r.example, json!({ "technology": "python" }));
        assert_eq!(r.blocked_by, "missing_technology_variable");
        assert_eq!(r.problems.len(), 1, "the schema's own line is not repeated");
        assert!(r.guidance["common_technologies"].as_array().unwrap().len() >= 5);
    }

    #[test]
    fn the_retry_applies_the_fix_where_it_belongs() {
        let mut a = ok_args();
        a["extracted_variables"] = json!({ "domain": "technical", "system_component": "api" });
        let r = check(&a, &[]).unwrap();
        let retry = r.retry(&a);
        assert_eq!(retry["extracted_variables"]["technology"], "python");
        assert_eq!(retry["extracted_variables"]["system_component"], "api");
        assert_eq!(retry["query"], a["query"]);
        assert_eq!(check(&retry, &[]), None);
        let bad = json!({ "query": "Plan a family trip to Lisbon", "confidence_level": 0.5, "colour": "red" });
        let r = check(
            &bad,
            &["at /: additionalProperties 'colour' not allowed".into()],
        )
        .unwrap();
        assert_eq!(r.retry(&bad), example_call());
        let brief = json!({ "query": "fix it", "confidence_level": 0.5 });
        let r = check(&brief, &[]).unwrap();
        assert_eq!(check(&r.retry(&brief), &[]), None);
    }

    #[test]
    fn critical_urgency_needs_a_domain() {
        let mut a = ok_args();
        a["extracted_variables"] = json!({ "urgency": "emergency" });
        let r = check(&a, &[]).unwrap();
        assert_eq!(r.code, "INVALID_VARIABLES");
        assert_eq!(r.problems[0].field, "extracted_variables.domain");
        a["extracted_variables"] = json!({ "urgency": "high" });
        assert_eq!(check(&a, &[]), None);
    }

    #[test]
    fn high_confidence_needs_three_variables() {
        let mut a = ok_args();
        a["confidence_level"] = json!(0.95);
        a["extracted_variables"] = json!({ "domain": "personal" });
        let r = check(&a, &[]).unwrap();
        assert_eq!(r.code, "CONFIDENCE_INCONSISTENT");
        assert_eq!(r.problems[0].issue, "High confidence with few variables");
        a["confidence_level"] = json!(0.9);
        assert_eq!(check(&a, &[]), None, "0.9 itself is not above 0.9");
    }

    #[test]
    fn every_problem_is_listed_and_the_shape_comes_first() {
        let a = json!({
            "query": "fix it",
            "confidence_level": 0.99,
            "extracted_variables": { "domain": "technical" },
            "colour": "red",
        });
        let r = check(
            &a,
            &[
                "at /: additionalProperties 'colour' not allowed".into(),
                "at /query: length must be >=10, but got 6".into(),
            ],
        )
        .unwrap();
        assert_eq!(r.code, "QUERY_TOO_BRIEF");
        let fields: Vec<&str> = r.problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "query",
                "",
                "extracted_variables.technology",
                "confidence_level"
            ]
        );
        assert!(r.error()["fix"]["why"].is_string());
    }
}
