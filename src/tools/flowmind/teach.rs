//! The teaching half of every FlowMind response (seed 001, "Response Enhancement" and
//! "Bidirectional Teaching"): guidance on the request just made, a tip and a pattern for the next
//! one, how the caller's confidence compared with the match it got, and the next calls to make.

use serde_json::{json, Value};

use super::catalog::{Catalog, Context};
use super::request::Args;
use crate::engine::matcher::Candidate;

/// The question that asks the user for variable `v`.
pub fn question(v: &str) -> String {
    let known = match v {
        "technology" => "Which technology, language or platform is involved?",
        "error_type" => "Is it a syntax, runtime, logic, performance or security problem?",
        "error_description" => "What specific error or behaviour are you seeing?",
        "system_component" => "Which part of the system is affected (database, API, frontend, …)?",
        "affected_users" => "How many users are affected right now?",
        "urgency" => "How urgent is this: low, medium, high or critical?",
        "domain" => "Is this technical, creative, business, regulatory, personal or an emergency?",
        "jurisdiction" => "Which country, state or city's rules apply?",
        "compliance_type" => "Is it about data privacy, financial, healthcare, environmental or safety rules?",
        "business_area" => "Which business function is this: strategy, operations, finance, marketing, HR or sales?",
        "creative_type" => "Is it writing, design, music, art or video?",
        "genre" => "Which genre is it (fantasy, mystery, romance, …)?",
        "audience" => "Who is the audience: children, young adults, adults, professionals or everyone?",
        "stakeholder_count" => "How many people does this affect?",
        "location" => "Where is this happening?",
        "budget" | "budget_amount" => "What budget do you have?",
        "people_count" => "How many people are involved or at risk?",
        "deadline" => "By when does it need to be done?",
        _ => "",
    };
    if known.is_empty() {
        format!("What is the {}?", v.replace('_', " "))
    } else {
        known.to_string()
    }
}

/// The variables that make a request of `domain` match well (seed 001's domain variables).
fn domain_pattern(domain: &str) -> (&'static str, &'static [&'static str]) {
    match domain {
        "technical" => (
            "technical + technology + error_type + system_component = great match",
            &["technology", "error_type", "system_component"],
        ),
        "creative" => (
            "creative + creative_type + genre + audience = great match",
            &["creative_type", "genre", "audience"],
        ),
        "business" => (
            "business + business_area + stakeholder_count = great match",
            &["business_area", "stakeholder_count"],
        ),
        "regulatory" => (
            "regulatory + jurisdiction + compliance_type = great match",
            &["jurisdiction", "compliance_type"],
        ),
        "emergency" => (
            "emergency + urgency + location + people_count = fastest route",
            &["urgency", "location", "people_count"],
        ),
        _ => (
            "personal + a concrete goal + its constraints (budget_amount, location, schedule) = great match",
            &["budget_amount", "location", "schedule"],
        ),
    }
}

/// How the caller's confidence compares with the confidence of the best match.
pub fn calibration(yours: f64, got: Option<f64>) -> String {
    match got {
        None => format!(
            "Nothing matched, so your {yours:.2} was too high: when you cannot name the domain and intent, say 0.5 or less and ask the user first."
        ),
        Some(m) if (yours - m).abs() <= 0.1 => format!(
            "Your {yours:.2} was close to the best match's {m:.2}: well calibrated."
        ),
        Some(m) if yours < m => format!(
            "Your {yours:.2} was actually {m:.2} - be more confident!"
        ),
        Some(m) => format!(
            "Your {yours:.2} was above the best match's {m:.2}: lower it, or extract more variables to back it."
        ),
    }
}

/// `teaching`: a tip for the next request, the pattern of a great request in this domain, and the
/// confidence calibration.
pub fn teaching(top: Option<(&Context, f64)>, args: &Args) -> Value {
    let domain = args
        .domain()
        .map(str::to_string)
        .or_else(|| top.map(|(c, _)| c.domain.clone()))
        .unwrap_or_else(|| "personal".into());
    let (pattern, wanted) = domain_pattern(&domain);
    let missing_domain_var = wanted.iter().find(|v| !args.variables.contains_key(**v));
    let tip = if args.variables.is_empty() {
        "Include extracted_variables next time, starting with domain: it settles close matches."
            .to_string()
    } else if args.domain().is_none() {
        "Add domain to extracted_variables: matches in the caller's domain rank higher.".to_string()
    } else if let Some(v) =
        top.and_then(|(c, _)| c.required.iter().find(|v| !args.variables.contains_key(*v)))
    {
        format!("Next time, include {v}: the best match needs it before it can run.")
    } else if let Some(v) = missing_domain_var {
        format!("Next time, include {v} for faster matching.")
    } else {
        "Excellent variable extraction: keep naming the domain's key variables.".to_string()
    };
    json!({
        "tip": tip,
        "pattern": pattern,
        "confidence_calibration": calibration(args.confidence, top.map(|(_, m)| m)),
    })
}

/// `guidance`: a message on the request, what to ask the user, and how a better request looks.
pub fn guidance(
    status: &str,
    top: Option<(&Context, f64)>,
    args: &Args,
    catalog: &Catalog,
    candidates: &[Candidate],
) -> Value {
    let missing: Vec<&String> = top
        .map(|(c, _)| {
            c.required
                .iter()
                .filter(|v| !args.variables.contains_key(*v))
                .collect()
        })
        .unwrap_or_default();
    let helpful: Vec<&String> = top
        .map(|(c, _)| {
            c.variables()
                .filter(|v| !args.variables.contains_key(*v))
                .take(3)
                .collect()
        })
        .unwrap_or_default();
    let message = match (status, missing.first()) {
        ("success", None) => "Good variable extraction! The best match has everything it needs.".to_string(),
        ("success", Some(v)) => format!("Good match. Missing {v} would improve matching and is needed to run it."),
        ("disambiguation_needed", _) => "Several contexts fit about equally: ask the questions below, then search again with the answers.".to_string(),
        ("refinement_suggested", _) => "Something fits, but not clearly enough to act on: make the query more specific.".to_string(),
        ("content_processing_required", _) => "Large content was referenced without a summary: summarise it into content_summary and key_entities, then search again.".to_string(),
        _ => "Nothing in the catalog fits this request. Rephrase it in terms of the task, or browse with list_available_contexts.".to_string(),
    };
    let mut suggestions: Vec<String> = missing
        .iter()
        .map(|v| format!("Ask user: \"{}\"", question(v)))
        .collect();
    if status == "no_matches" {
        let closest: Vec<String> = candidates
            .iter()
            .take(3)
            .map(|c| format!("{} ({:.2})", catalog.contexts[c.entry].uri, c.confidence))
            .collect();
        if !closest.is_empty() {
            suggestions.push(format!(
                "Closest, all below the match threshold: {}",
                closest.join(", ")
            ));
        }
    }
    let insight = match top {
        Some((c, _)) => format!(
            "{} requests match better with {} specified",
            capitalised(&c.domain),
            domain_pattern(&c.domain).1.join(", ")
        ),
        None => "Queries match on the words of the task (\"draft a privacy policy\"), not on the topic alone (\"privacy\")".to_string(),
    };
    json!({
        "message": message,
        "suggestions": suggestions,
        "teaching": {
            "insight": insight,
            "better_query_example": top.and_then(|(c, _)| c.examples.first().cloned()),
            "variables_that_would_help": helpful,
        },
    })
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The search again, with what the caller has plus `extra` arguments.
fn search_again(args: &Args, extra: Value) -> Value {
    let mut p = json!({
        "query": args.query,
        "extracted_variables": args.variables,
        "confidence_level": args.confidence,
    });
    if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            p.insert(k.clone(), v.clone());
        }
    }
    p
}

/// `next_actions`: the calls that move the caller forward from `status`.
pub fn next_actions(
    status: &str,
    matches: &[Value],
    args: &Args,
    top: Option<&Context>,
) -> Vec<Value> {
    match status {
        "success" => {
            let Some((m, c)) = matches.first().zip(top) else {
                return Vec::new();
            };
            let can = m["activation"]["can_execute"].as_bool() == Some(true);
            let action = c.next_action(&args.variables, Some(args.confidence));
            vec![json!({
                "tool": action["tool"],
                "reason": if can {
                    "High confidence match ready to execute".to_string()
                } else {
                    format!("Best match, but your confidence is below its confidence_required {}: confirm with the user first", c.confidence_required)
                },
                "parameters": action["parameters"],
            })]
        }
        "disambiguation_needed" => vec![json!({
            "tool": "field_request",
            "reason": "Ask the disambiguation questions, add the answers to extracted_variables and search again",
            "parameters": search_again(args, json!({})),
        })],
        "content_processing_required" => vec![json!({
            "tool": "field_request",
            "reason": "Summarise the large content (at most 1000 characters) and list its key entities, then search again",
            "parameters": search_again(args, json!({ "content_reference": {
                "has_large_content": true,
                "content_summary": "<what the content is and what the user wants done with it>",
                "key_entities": ["<names, functions, parties>"],
            }})),
        })],
        "refinement_suggested" => {
            let mut out = vec![json!({
                "tool": "field_request",
                "reason": "Make the query specific (the task, its subject, the outcome wanted) and add the variables the best match takes",
                "parameters": search_again(args, json!({})),
            })];
            if let Some(c) = top {
                out.push(json!({
                    "tool": "list_available_contexts",
                    "reason": format!("Browse the {} contexts to pick one by hand", c.domain),
                    "parameters": { "filter": { "domain": [c.domain] } },
                }));
            }
            out
        }
        _ => vec![
            json!({
                "tool": "list_available_contexts",
                "reason": "Browse what the catalog offers",
                "parameters": match args.domain() {
                    Some(d) => json!({ "filter": { "domain": [d] } }),
                    None => json!({}),
                },
            }),
            json!({
                "tool": "get_help",
                "reason": "How to phrase requests that match",
                "parameters": { "help_type": "best_practices" },
            }),
        ],
    }
}
