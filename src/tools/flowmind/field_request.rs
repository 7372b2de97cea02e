//! `field_request` (seed 001): which contexts fit a described need, how sure we are, and what the
//! caller should do next. Pure: [`respond`] turns validated arguments and a catalog into the
//! response body; the handler in `mod.rs` adds the timings.

use serde_json::{json, Map, Value};

use super::catalog::{Catalog, Context};
use super::levels::{self, Level};
use super::request::Args;
use super::teach;
use crate::engine::matcher::blend::Blend;
use crate::engine::matcher::{decide, Candidate, Considered, Model, Request, Thresholds, Verdict};

/// What a search found, before it is shaped into a response.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The response status.
    pub status: &'static str,
    /// The ranked candidates (at least two when there are two, whatever `max_results` says, so
    /// the verdict can see a runner-up).
    pub candidates: Vec<Candidate>,
    /// How many contexts the filters let through.
    pub searched: usize,
}

/// How many contexts are embedded for one request when a Workers AI binding is configured: the
/// best text hits, topped up by domain ([`Matcher::pool`](crate::engine::matcher::Matcher::pool)).
/// Bounds the cost of a search to one embedding call of at most this many texts plus the query,
/// whatever the catalog's size; the model re-ranks within the pool only.
pub const EMBEDDING_POOL: usize = 50;

/// The matcher's view of `args`.
fn request<'a>(args: &'a Args, text: &'a str, provided: &'a [String]) -> Request<'a> {
    Request {
        query: text,
        provided,
        domain: args.domain(),
    }
}

/// The contexts a search may return: those passing the type filter and `visible`.
struct Keep<'a> {
    catalog: &'a Catalog,
    args: &'a Args,
    visible: &'a dyn Fn(&Context) -> bool,
    /// The verdict of each group of [`Catalog::groups`].
    groups: Vec<bool>,
}

impl<'a> Keep<'a> {
    /// The filters of `args` and `visible` over `catalog`. `visible` may hide any tool, but a
    /// context that is not a tool only by its type and complexity (as roles and levels do): its
    /// group's verdict is its own.
    fn new(catalog: &'a Catalog, args: &'a Args, visible: &'a dyn Fn(&Context) -> bool) -> Self {
        let mut keep = Keep {
            catalog,
            args,
            visible,
            groups: Vec::new(),
        };
        keep.groups = catalog
            .groups
            .first
            .iter()
            .map(|&i| keep.alone(i))
            .collect();
        keep
    }

    /// Context `i`'s verdict, decided on its own.
    fn alone(&self, i: usize) -> bool {
        let c = &self.catalog.contexts[i];
        (self.args.types.is_empty() || self.args.types.contains(&c.kind)) && (self.visible)(c)
    }

    /// Whether context `i` passes.
    fn keeps(&self, i: usize) -> bool {
        match self.catalog.groups.of[i] {
            super::catalog::Groups::TOOL => self.alone(i),
            g => self.groups[usize::from(g)],
        }
    }

    /// How many contexts pass.
    fn count(&self) -> usize {
        let groups: usize = self
            .groups
            .iter()
            .zip(&self.catalog.groups.size)
            .filter(|(kept, _)| **kept)
            .map(|(_, n)| n)
            .sum();
        groups
            + self
                .catalog
                .groups
                .tools
                .iter()
                .filter(|&&i| self.alone(i))
                .count()
    }
}

/// Whether context `i` passes the type filter and `visible`.
fn keeper<'a>(
    catalog: &'a Catalog,
    args: &'a Args,
    visible: &'a dyn Fn(&Context) -> bool,
) -> impl Fn(usize) -> bool + 'a {
    let keep = Keep::new(catalog, args, visible);
    move |i: usize| keep.keeps(i)
}

/// The status of ranked `candidates` for `args` under thresholds `t`.
pub fn status_with(args: &Args, candidates: &[Candidate], t: &Thresholds) -> &'static str {
    let confidences: Vec<f64> = candidates.iter().map(|c| c.confidence).collect();
    if args.content_unprocessed() {
        "content_processing_required"
    } else {
        match decide(&confidences, t) {
            Verdict::Success => "success",
            Verdict::Ambiguous => "disambiguation_needed",
            Verdict::Refine => "refinement_suggested",
            Verdict::NoMatch => "no_matches",
        }
    }
}

/// Runs the matcher for `args` over the contexts `visible` lets through, on text alone.
pub fn search(catalog: &Catalog, args: &Args, visible: &dyn Fn(&Context) -> bool) -> Outcome {
    search_with(
        catalog,
        args,
        visible,
        &Model::default(),
        &Thresholds::default(),
    )
}

/// [`search`] under another `model` and thresholds `t`: what fitting and measuring compare
/// (`measure`).
pub fn search_with(
    catalog: &Catalog,
    args: &Args,
    visible: &dyn Fn(&Context) -> bool,
    model: &Model,
    t: &Thresholds,
) -> Outcome {
    let provided: Vec<String> = args.variables.keys().cloned().collect();
    let text = args.text();
    let filters = Keep::new(catalog, args, visible);
    let searched = filters.count();
    let keep = |i: usize| filters.keeps(i);
    let limit = args.max_results.max(2);
    let mut candidates = catalog.matcher.rank(
        &request(args, &text, &provided),
        model,
        keep,
        limit.max(TWO_INTENT_DEPTH),
    );
    let mut status = status_with(args, &candidates, t);
    if matches!(
        status,
        "success" | "refinement_suggested" | "disambiguation_needed"
    ) {
        if let Some((a, b)) = two_intents(catalog, args, &keep, model, t) {
            let at = |e: usize| {
                candidates
                    .iter()
                    .take(TWO_INTENT_DEPTH)
                    .position(|c| c.entry == e)
            };
            if let (Some(i), Some(j)) = (at(a), at(b)) {
                let (first, second) = (candidates[i].clone(), candidates[j].clone());
                candidates.retain(|c| c.entry != a && c.entry != b);
                let pair = if first.confidence >= second.confidence {
                    [first, second]
                } else {
                    [second, first]
                };
                candidates.splice(0..0, pair);
                status = "disambiguation_needed";
            }
        }
    }
    candidates.truncate(limit);
    Outcome {
        status,
        candidates,
        searched,
    }
}

/// How deep in the ranking of the whole request the contexts of its two halves are looked for:
/// both must be among its first three.
const TWO_INTENT_DEPTH: usize = 3;

/// What joins two requests in one sentence ("find me a new job and practise the interviews").
const JOINS: &[&str] = &[" and ", " then ", " plus ", " as well as ", "; "];

/// Two different contexts that the two halves of a request ask for, each confidently on its own
/// words: the request is two needs in one sentence, and the caller should say which comes first
/// rather than be given one of them as if it were the whole. `None` unless some split at a
/// joining word gives halves of at least two content words whose best matches differ, both
/// matches on their text alone (at least the no-match threshold without the caller's variables
/// and domain, which describe the whole request and would lift a half's weak match) and both
/// among the whole request's first three.
fn two_intents(
    catalog: &Catalog,
    args: &Args,
    keep: &dyn Fn(usize) -> bool,
    model: &Model,
    t: &Thresholds,
) -> Option<(usize, usize)> {
    let query = args.query.to_lowercase();
    let best = |part: &str| {
        if crate::engine::matcher::text::content_words(part) < 2 {
            return None;
        }
        let alone = Request {
            query: part,
            provided: &[],
            domain: None,
        };
        catalog
            .matcher
            .rank(&alone, model, keep, 1)
            .into_iter()
            .next()
            .filter(|c| c.confidence >= t.no_match)
            .map(|c| c.entry)
    };
    for join in JOINS {
        for (at, _) in query.match_indices(join) {
            let (left, right) = (&query[..at], &query[at + join.len()..]);
            // The right half is ranked only when the left one matched: a split needs both.
            let Some(a) = best(left) else {
                continue;
            };
            if let Some(b) = best(right) {
                if a != b {
                    return Some((a, b));
                }
            }
        }
    }
    None
}

/// The signals of the text hits for `args` that `visible` and the type filter let through: the
/// population the model is fitted on (`measure`), each with its context's position.
pub fn signals(
    catalog: &Catalog,
    args: &Args,
    visible: &dyn Fn(&Context) -> bool,
) -> Vec<(usize, crate::engine::matcher::Signals)> {
    let provided: Vec<String> = args.variables.keys().cloned().collect();
    let text = args.text();
    catalog
        .matcher
        .signals(
            &request(args, &text, &provided),
            keeper(catalog, args, visible),
        )
        .into_iter()
        .map(|(hit, s)| (hit.doc, s))
        .collect()
}

/// The contexts worth embedding for `args` (at most [`EMBEDDING_POOL`]), and the text the
/// request is embedded by.
pub fn pool(
    catalog: &Catalog,
    args: &Args,
    visible: &dyn Fn(&Context) -> bool,
) -> (Vec<Considered>, String) {
    let provided: Vec<String> = args.variables.keys().cloned().collect();
    let text = args.text();
    let pool = catalog.matcher.pool(
        &request(args, &text, &provided),
        keeper(catalog, args, visible),
        EMBEDDING_POOL,
    );
    (pool, text)
}

/// Runs the matcher for `args` over `pool` (from [`pool`]) with `cosines`, the similarity of the
/// request's embedding to each pool context's, blended into the text similarity.
pub fn search_blended(
    catalog: &Catalog,
    args: &Args,
    visible: &dyn Fn(&Context) -> bool,
    pool: Vec<Considered>,
    cosines: &[f64],
) -> Outcome {
    search_blended_with(
        catalog,
        args,
        visible,
        pool,
        cosines,
        &Model::default(),
        &Blend::default(),
        &Thresholds::default(),
    )
}

/// [`search_blended`] under another `model`, `blend` and thresholds `t`: what fitting the blend
/// compares (`measure::fit_blend`).
#[allow(clippy::too_many_arguments)]
pub fn search_blended_with(
    catalog: &Catalog,
    args: &Args,
    visible: &dyn Fn(&Context) -> bool,
    pool: Vec<Considered>,
    cosines: &[f64],
    model: &Model,
    blend: &Blend,
    t: &Thresholds,
) -> Outcome {
    let provided: Vec<String> = args.variables.keys().cloned().collect();
    let text = args.text();
    let searched = Keep::new(catalog, args, visible).count();
    let candidates = catalog.matcher.rank_blended(
        &request(args, &text, &provided),
        model,
        pool,
        cosines,
        blend,
        args.max_results.max(2),
    );
    Outcome {
        status: status_with(args, &candidates, t),
        candidates,
        searched,
    }
}

/// The text a context is embedded by: its name, description and example requests, cut to
/// [`EMBEDDED_CHARS`] characters (bge-small reads at most 512 tokens).
pub fn embedding_text(c: &Context) -> String {
    let mut t = format!("{}. {}", c.name, c.description);
    for e in &c.examples {
        t.push(' ');
        t.push_str(e);
    }
    t.chars().take(EMBEDDED_CHARS).collect()
}

/// How much of a context's or a request's text is embedded.
pub const EMBEDDED_CHARS: usize = 1500;

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The variables of `c` the caller provided, and the required ones still missing.
fn provided_missing(c: &Context, args: &Args) -> (Vec<String>, Vec<String>) {
    let provided = c
        .variables()
        .filter(|v| args.variables.contains_key(*v))
        .cloned()
        .collect();
    let missing = c
        .required
        .iter()
        .filter(|v| !args.variables.contains_key(*v))
        .cloned()
        .collect();
    (provided, missing)
}

fn strength(confidence: f64) -> &'static str {
    if confidence >= 0.8 {
        "Strong"
    } else if confidence >= Thresholds::default().success {
        "Good"
    } else {
        "Weak"
    }
}

fn explanation(c: &Context, cand: &Candidate, args: &Args, provided: &[String]) -> String {
    let mut parts = vec![format!(
        "{} match for {} ({})",
        strength(cand.confidence),
        c.name,
        c.domain
    )];
    if !cand.matched.is_empty() {
        parts.push(format!("shares the terms {}", cand.matched.join(", ")));
    }
    if !c.required.is_empty() || !c.optional.is_empty() {
        parts.push(format!(
            "{} of its {} variables provided",
            provided.len(),
            c.required.len() + c.optional.len()
        ));
    }
    match (args.domain(), cand.signals.domain_match) {
        (Some(d), Some(true)) => parts.push(format!("domain {d} matches")),
        (Some(d), Some(false)) => parts.push(format!("your domain {d} differs")),
        _ => {}
    }
    parts.join("; ")
}

/// One entry of `matches`.
fn shaped(catalog: &Catalog, cand: &Candidate, args: &Args) -> Value {
    let c = &catalog.contexts[cand.entry];
    let (provided, missing) = provided_missing(c, args);
    let mut reasoning = json!({
        "semantic_similarity": round(cand.signals.similarity),
        "lexical_similarity": round(cand.lexical),
        "embedding_similarity": cand.embedding.map(round),
        "relative_similarity": round(cand.signals.relative),
        "variable_alignment": round(cand.signals.alignment),
        "domain_match": cand.signals.domain_match,
        "matched_terms": cand.matched,
    });
    if args.explain {
        reasoning["explanation"] = json!(explanation(c, cand, args, &provided));
    }
    json!({
        "uri": c.uri,
        "type": c.kind,
        "complexity": c.complexity,
        "name": c.name,
        "domain": c.domain,
        "confidence": round(cand.confidence),
        "match_reasoning": reasoning,
        "activation": {
            "condition": c.activation_condition,
            "confidence_required": c.confidence_required,
            "your_confidence": args.confidence,
            "can_execute": args.confidence >= c.confidence_required,
        },
        "variables": { "required": c.required, "optional": c.optional, "provided": provided, "missing": missing },
        "execution_preview": c.preview,
        "next_action": c.next_action(&args.variables, Some(args.confidence)),
    })
}

/// The questions that tell the close matches apart, each naming the variable it captures.
fn questions(catalog: &Catalog, close: &[&Candidate], args: &Args) -> Vec<Value> {
    close
        .iter()
        .map(|cand| {
            let c = &catalog.contexts[cand.entry];
            let others: Vec<&Context> = close
                .iter()
                .filter(|o| o.entry != cand.entry)
                .map(|o| &catalog.contexts[o.entry])
                .collect();
            let names: Vec<&str> = others.iter().map(|o| o.name.as_str()).collect();
            let own = c.variables().find(|v| {
                !args.variables.contains_key(*v) && others.iter().all(|o| !o.variables().any(|w| w == *v))
            });
            match own {
                Some(v) => json!({
                    "question": teach::question(v),
                    "why": format!("Only {} ({}) needs {v}; {} do not", c.name, c.uri, names.join(" and ")),
                    "variable_captured": v,
                    "points_to": c.uri,
                }),
                None => json!({
                    "question": format!("Is this about: {}?", first_sentence(&c.description)),
                    "why": format!("Tells {} apart from {}", c.name, names.join(" and ")),
                    "variable_captured": "selected_context",
                    "points_to": c.uri,
                }),
            }
        })
        .collect()
}

fn first_sentence(text: &str) -> &str {
    text.split_inclusive(". ")
        .next()
        .unwrap_or(text)
        .trim_end_matches([' ', '.'])
}

/// The response body of a valid request: status, matches, guidance, disambiguation, teaching and
/// next actions (the handler adds `_metadata` timings and `_performance`).
pub fn respond(catalog: &Catalog, args: &Args, outcome: &Outcome) -> Value {
    let shown: Vec<&Candidate> = outcome.candidates.iter().take(args.max_results).collect();
    let status = outcome.status;
    let matches: Vec<Value> = if status == "no_matches" {
        Vec::new()
    } else {
        shown.iter().map(|c| shaped(catalog, c, args)).collect()
    };
    let top = outcome
        .candidates
        .first()
        .map(|c| (&catalog.contexts[c.entry], c.confidence));

    let disambiguation = if status == "disambiguation_needed" {
        // The first two always (a near-tie or the two needs of one request), then any other
        // within the ambiguity gap of the best, at most three.
        let best = outcome.candidates.first().map_or(0.0, |c| c.confidence);
        let gap = Thresholds::default().ambiguity_gap;
        let close: Vec<&Candidate> = outcome
            .candidates
            .iter()
            .enumerate()
            .take_while(|(i, c)| *i < 2 || best - c.confidence < gap)
            .map(|(_, c)| c)
            .take(3)
            .collect();
        json!({
            "needed": true,
            "reason": format!("{} contexts could be what you mean ({})", close.len(),
                close.iter().map(|c| format!("{} {:.2}", catalog.contexts[c.entry].uri, c.confidence)).collect::<Vec<_>>().join(", ")),
            "questions": questions(catalog, &close, args),
        })
    } else {
        json!({ "needed": false })
    };

    let guidance = teach::guidance(status, top, args, catalog, &outcome.candidates);
    let teaching = teach::teaching(top, args);
    let next_actions = teach::next_actions(status, &matches, args, top.map(|(c, _)| c));

    json!({
        "success": true,
        "status": status,
        "matches": matches,
        "guidance": guidance,
        "disambiguation": disambiguation,
        "teaching": teaching,
        "next_actions": next_actions,
    })
}

/// The contexts above `level`'s `max_complexity` that the request would have matched had the
/// level allowed them (`visible`: what the caller's roles allow), best first, at most
/// `max_results`: `guidance.above_your_level`, so a caller held to simpler contexts learns what
/// it is missing and from which level it opens. Text matching only: no model is asked for what
/// cannot be offered.
pub fn above_level(
    catalog: &Catalog,
    args: &Args,
    visible: &dyn Fn(&Context) -> bool,
    level: Level,
) -> Vec<Value> {
    let outcome = search(catalog, args, visible);
    outcome
        .candidates
        .iter()
        .take(args.max_results)
        .filter(|c| c.confidence >= Thresholds::default().no_match)
        .map(|c| (&catalog.contexts[c.entry], c.confidence))
        .filter(|(x, _)| !levels::within(level, &x.complexity))
        .map(|(x, confidence)| {
            let needed = levels::level_for(&x.complexity);
            json!({
                "uri": x.uri,
                "name": x.name,
                "complexity": x.complexity,
                "confidence": (confidence * 1000.0).round() / 1000.0,
                "needed_level": needed.as_str(),
                "message": format!("{} ({}) fits at {:.2} but is {}: FlowMind {}s go up to {} (max_complexity); it opens at level {}.",
                    x.uri, x.name, confidence, x.complexity, level.as_str(), level.max_complexity(), needed.as_str()),
            })
        })
        .collect()
}

/// What the search would have found, for a refused call: `partial_results`.
pub fn partial(
    catalog: &Catalog,
    query: Option<&str>,
    blocked_by: &str,
    visible: &dyn Fn(&Context) -> bool,
) -> Value {
    let Some(query) = query.filter(|q| !q.trim().is_empty()) else {
        return json!({ "message": "No search was run: there is no query to match.", "blocked_by": blocked_by, "would_match": [] });
    };
    let args = Args {
        query: query.chars().take(500).collect(),
        variables: Map::new(),
        confidence: 0.0,
        types: Vec::new(),
        max_results: 3,
        explain: false,
        content: None,
    };
    let outcome = search(catalog, &args, visible);
    let found: Vec<&Context> = outcome
        .candidates
        .iter()
        .filter(|c| c.confidence >= Thresholds::default().no_match)
        .take(3)
        .map(|c| &catalog.contexts[c.entry])
        .collect();
    let message = if found.is_empty() {
        "Would have found no matching context for this query.".to_string()
    } else {
        format!(
            "Would have found {} context{}: {}",
            found.len(),
            if found.len() == 1 { "" } else { "s" },
            found
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    json!({
        "message": message,
        "blocked_by": blocked_by,
        "would_match": found.iter().map(|c| c.uri.as_str()).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn catalog() -> Catalog {
        let rows: Vec<Value> =
            serde_json::from_str(include_str!("../../../data/flowmind/contexts.json")).unwrap();
        Catalog::new(0, rows.iter().map(Context::from_row).collect())
    }

    #[test]
    fn filters_decided_per_group_agree_with_each_context_decided_alone() {
        let mut contexts = catalog().contexts;
        for (i, name) in ["list_employees", "search_flights", "delete_chain"]
            .iter()
            .enumerate()
        {
            let mut tool = contexts[i].clone();
            tool.kind = "tool".into();
            tool.uri = format!("tool://{name}");
            tool.complexity = ["simple", "moderate", "complex"][i].into();
            contexts.push(tool);
        }
        let c = Catalog::new(0, contexts);
        assert!(c.groups.first.len() < 20, "{:?}", c.groups.first);
        assert_eq!(c.groups.tools.len(), 3);
        let visibilities: [&dyn Fn(&Context) -> bool; 4] = [
            &|_| true,
            &|x| x.uri != "tool://search_flights",
            &|x| x.complexity != "expert" && x.complexity != "complex",
            &|x| !x.uri.starts_with("tool://") && x.kind != "agent",
        ];
        for types in [
            json!([]),
            json!(["workflow"]),
            json!(["tool"]),
            json!(["agent", "pattern"]),
        ] {
            let a = Args::read(&json!({
                "query": "The checkout API is returning errors",
                "confidence_level": 0.5,
                "context_preferences": { "type_filter": types },
            }));
            for visible in visibilities {
                let keep = Keep::new(&c, &a, visible);
                let alone: Vec<bool> = (0..c.contexts.len()).map(|i| keep.alone(i)).collect();
                let grouped: Vec<bool> = (0..c.contexts.len()).map(|i| keep.keeps(i)).collect();
                assert_eq!(grouped, alone, "{types}");
                assert_eq!(
                    keep.count(),
                    alone.iter().filter(|k| **k).count(),
                    "{types}"
                );
            }
        }
    }

    fn ask(c: &Catalog, args: Value) -> (Outcome, Value) {
        let a = Args::read(&args);
        let o = search(c, &a, &|_| true);
        let body = respond(c, &a, &o);
        (o, body)
    }

    #[test]
    fn a_clear_request_succeeds_with_a_runnable_match() {
        let c = catalog();
        let (o, body) = ask(
            &c,
            json!({
                "query": "The checkout API is returning 500 errors in production and customers cannot pay",
                "extracted_variables": { "domain": "technical", "technology": "nodejs", "system_component": "checkout", "urgency": "critical" },
                "confidence_level": 0.8,
            }),
        );
        assert_eq!(o.status, "success");
        let m = &body["matches"][0];
        assert_eq!(m["uri"], "workflow://incident-response");
        assert_eq!(m["activation"]["can_execute"], true, "0.8 >= its 0.75");
        assert_eq!(
            m["variables"]["provided"],
            json!(["system_component", "technology", "urgency"])
        );
        assert_eq!(m["variables"]["missing"], json!(["error_description"]));
        assert_eq!(m["next_action"]["tool"], "execute_workflow");
        assert_eq!(
            m["next_action"]["parameters"]["initial_variables"]["system_component"],
            "checkout"
        );
        assert!(m["match_reasoning"]["explanation"]
            .as_str()
            .unwrap()
            .contains("domain technical matches"));
        assert_eq!(body["disambiguation"]["needed"], false);
        assert!(body["guidance"]["suggestions"][0]
            .as_str()
            .unwrap()
            .contains("What specific error"));
        assert_eq!(body["next_actions"][0]["tool"], "execute_workflow");
        assert!(body["teaching"]["confidence_calibration"].is_string());
    }

    /// The pre-filled run carries the caller's confidence, and execute_workflow's own input
    /// schema accepts it as it stands.
    #[test]
    fn the_next_action_is_a_valid_execute_workflow_call_with_the_callers_confidence() {
        let c = catalog();
        let registry = crate::registry::Registry::new(crate::tools::catalog(
            crate::tools::Catalog::Production,
        ))
        .unwrap();
        let execute = registry.get("execute_workflow").unwrap();
        for level in [0.8, 0.5] {
            let (_, body) = ask(
                &c,
                json!({
                    "query": "The checkout API is returning 500 errors in production and customers cannot pay",
                    "extracted_variables": { "domain": "technical", "technology": "nodejs", "system_component": "checkout" },
                    "confidence_level": level,
                }),
            );
            for action in [&body["matches"][0]["next_action"], &body["next_actions"][0]] {
                let p = &action["parameters"];
                assert_eq!(p["confidence_level"], level, "{action}");
                assert_eq!(execute.input_problems(p), Vec::<String>::new(), "{p}");
            }
        }
    }

    #[test]
    fn low_caller_confidence_cannot_execute() {
        let c = catalog();
        let (_, body) = ask(
            &c,
            json!({
                "query": "The checkout API is returning 500 errors in production and customers cannot pay",
                "extracted_variables": { "domain": "technical", "technology": "nodejs", "system_component": "checkout" },
                "confidence_level": 0.5,
            }),
        );
        assert_eq!(body["matches"][0]["activation"]["can_execute"], false);
        assert!(body["next_actions"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("confirm"));
        assert!(body["teaching"]["confidence_calibration"]
            .as_str()
            .unwrap()
            .contains("be more confident"));
    }

    #[test]
    fn close_matches_ask_questions_that_name_variables() {
        let c = catalog();
        let (o, body) = ask(
            &c,
            json!({ "query": "find me a new job and practise the interviews", "extracted_variables": { "domain": "personal" }, "confidence_level": 0.6 }),
        );
        assert_eq!(o.status, "disambiguation_needed");
        let d = &body["disambiguation"];
        assert_eq!(d["needed"], true);
        let qs = d["questions"].as_array().unwrap();
        assert!(qs.len() >= 2);
        let pointed: Vec<&str> = qs
            .iter()
            .map(|q| q["points_to"].as_str().unwrap())
            .collect();
        assert!(
            pointed.contains(&"workflow://job-search")
                && pointed.contains(&"workflow://interview-prep"),
            "{pointed:?}"
        );
        for q in qs {
            assert!(
                q["variable_captured"]
                    .as_str()
                    .is_some_and(|v| !v.is_empty()),
                "{q}"
            );
            assert!(q["question"].as_str().unwrap().ends_with('?'));
        }
        assert_eq!(body["next_actions"][0]["tool"], "field_request");
    }

    #[test]
    fn a_weak_match_suggests_refinement() {
        let c = catalog();
        let (o, body) = ask(
            &c,
            json!({ "query": "retro notes on Tuesday's payment failure", "confidence_level": 0.5 }),
        );
        assert_eq!(o.status, "refinement_suggested");
        assert_eq!(body["matches"][0]["uri"], "workflow://root-cause-analysis");
        let best = o.candidates[0].confidence;
        assert!(
            (0.4..0.55).contains(&best),
            "in the middle of the band, not at its edge: {best}"
        );
        let tools: Vec<&str> = body["next_actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["tool"].as_str().unwrap())
            .collect();
        assert_eq!(tools, vec!["field_request", "list_available_contexts"]);
    }

    #[test]
    fn out_of_domain_and_unknown_words_match_nothing() {
        let c = catalog();
        for q in [
            "bake sourdough bread with a crispy crust",
            "zxqv wibble frobnicate quux",
        ] {
            let (o, body) = ask(&c, json!({ "query": q, "confidence_level": 0.7 }));
            assert_eq!(o.status, "no_matches", "{q}");
            assert_eq!(body["matches"], json!([]));
            assert!(body["teaching"]["confidence_calibration"]
                .as_str()
                .unwrap()
                .contains("too high"));
            assert_eq!(body["next_actions"][0]["tool"], "list_available_contexts");
        }
    }

    #[test]
    fn unsummarised_large_content_must_be_processed_first() {
        let c = catalog();
        let q = json!({
            "query": "Review this contract for GDPR problems before we sign it",
            "confidence_level": 0.7,
            "content_reference": { "has_large_content": true, "content_type": "document" },
        });
        let (o, body) = ask(&c, q.clone());
        assert_eq!(o.status, "content_processing_required");
        assert!(
            body["next_actions"][0]["parameters"]["content_reference"]["content_summary"]
                .is_string()
        );
        let mut summarised = q;
        summarised["content_reference"]["content_summary"] =
            json!("A data processing agreement with a US analytics vendor");
        let (o, _) = ask(&c, summarised);
        assert_ne!(o.status, "content_processing_required");
    }

    #[test]
    fn filters_and_limits() {
        let c = catalog();
        let (o, body) = ask(
            &c,
            json!({
                "query": "our app is slow and crashes sometimes",
                "extracted_variables": { "domain": "technical", "technology": "android" },
                "confidence_level": 0.6,
                "context_preferences": { "type_filter": ["agent"], "max_results": 1, "include_explanations": false },
            }),
        );
        assert_eq!(body["matches"].as_array().unwrap().len(), 1);
        assert_eq!(body["matches"][0]["type"], "agent");
        assert!(body["matches"][0]["match_reasoning"]
            .get("explanation")
            .is_none());
        assert_eq!(
            o.searched,
            c.contexts.iter().filter(|x| x.kind == "agent").count()
        );
    }

    #[test]
    fn partial_results_say_what_would_have_matched() {
        let c = catalog();
        let p = partial(
            &c,
            Some("The checkout API is returning 500 errors in production"),
            "missing_technology_variable",
            &|_| true,
        );
        assert_eq!(p["blocked_by"], "missing_technology_variable");
        assert_eq!(p["would_match"][0], "workflow://incident-response");
        assert!(p["message"]
            .as_str()
            .unwrap()
            .starts_with("Would have found"));
        let p = partial(&c, None, "missing_query", &|_| true);
        assert!(p["message"].as_str().unwrap().contains("No search"));
    }
}
