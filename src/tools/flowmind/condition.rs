//! `evaluate_semantic_condition` (seed 001): does a natural-language condition ("user seems
//! frustrated", "budget is over 5000", "mentions a refund") hold for the current message,
//! conversation summary and session variables?
//!
//! The evaluator is deterministic and rule-based, so the same input always gives the same answer
//! and it can be tested: the condition is read as one of a few kinds, each with its own evidence.
//!
//! - **sentiment** (frustrated, angry, confused, happy, …) and **urgency** (urgent, emergency,
//!   asap, …): lexicon hits in the message (the summary counts half), strengthened by intensifiers
//!   ("very", "!!", words in capitals) and flipped by a negation just before ("not happy"); words of
//!   the opposite feeling count against;
//! - **variable**: `<variable> is <value>`, `<variable> over|under|at least|… <number>`,
//!   `<variable> is set|provided`, compared with the session variables;
//! - **keyword**: "mentions|asks about|talks about|contains|refers to <words>": the words (stemmed)
//!   in the message or summary;
//! - **question**: whether the message asks something;
//! - otherwise **overlap**: the share of the condition's content words found in the message.
//!
//! A negated condition ("is not frustrated", "does not mention") inverts the verdict. The confidence
//! is the evaluator's confidence in its verdict: evidence s maps to p = s / (s + 1); a true verdict
//! has confidence 0.5 + p/2, a false one 0.75 − p/2 (absence of evidence is weaker than evidence).
//!
//! **Model assistance.** When a model is configured (an OpenAI-compatible `MODEL_PROVIDER_URL`, as
//! chat and chains use, else a Workers AI binding named `AI`), it is asked for a JSON judgement
//! `{result, confidence, reasoning}` within [`MODEL_TIMEOUT_MS`] and combined with the rules'
//! verdict by [`combine`] (log-odds added: agreement raises the confidence, disagreement lowers it
//! and the more confident side wins). `detailed` shows both verdicts and why; without a model, or
//! when it fails, is slow or answers nonsense, the rules decide alone and `detailed` says why.

use std::cell::RefCell;
use std::collections::HashMap;

use futures::future::{select, Either, LocalBoxFuture};
use serde_json::{json, Map, Value};

use super::performance;
use crate::clock;
use crate::engine::matcher::text::terms;
use crate::registry::{Platform, ToolContext, ToolOutput, ToolResult};
use crate::tools::model_provider;

/// How long an evaluation is reused for the same arguments (seed 001: `cache_ttl_ms: 5000`).
pub const CACHE_TTL_MS: f64 = 5000.0;

/// Cached evaluations per instance, at most this many.
const CACHE_MAX: usize = 256;

struct Lexicon {
    name: &'static str,
    /// Words in the condition that ask about this feeling.
    cues: &'static [&'static str],
    /// Evidence words (lower case) and their weight.
    words: &'static [(&'static str, f64)],
    /// The lexicon of the opposite feeling, whose hits count against.
    opposite: Option<&'static str>,
}

const LEXICONS: [Lexicon; 5] = [
    Lexicon {
        name: "frustrated",
        cues: &[
            "frustrat",
            "angry",
            "annoy",
            "upset",
            "irritat",
            "mad",
            "furious",
            "negative",
            "unhappy",
            "dissatisf",
        ],
        words: &[
            ("frustrated", 1.0),
            ("frustrating", 1.0),
            ("annoying", 1.0),
            ("annoyed", 1.0),
            ("angry", 1.0),
            ("furious", 1.0),
            ("ridiculous", 1.0),
            ("unacceptable", 1.0),
            ("terrible", 1.0),
            ("awful", 1.0),
            ("hate", 1.0),
            ("useless", 1.0),
            ("worst", 1.0),
            ("fed", 0.5),
            ("again", 0.5),
            ("still", 0.5),
            ("broken", 0.5),
            ("sick", 0.5),
            ("tired", 0.5),
            ("waste", 1.0),
            ("nothing", 0.5),
            ("never", 0.5),
            ("disappointed", 1.0),
            ("upset", 1.0),
            ("wtf", 1.0),
            ("seriously", 0.5),
            ("horrible", 1.0),
        ],
        opposite: Some("positive"),
    },
    Lexicon {
        name: "confused",
        cues: &["confus", "lost", "unsure", "uncertain", "understand"],
        words: &[
            ("confused", 1.0),
            ("confusing", 1.0),
            ("lost", 0.5),
            ("unsure", 1.0),
            ("understand", 0.5),
            ("unclear", 1.0),
            ("huh", 1.0),
            ("what", 0.25),
            ("how", 0.25),
            ("why", 0.25),
            ("mean", 0.5),
            ("puzzled", 1.0),
            ("sense", 0.5),
            ("explain", 0.5),
        ],
        opposite: None,
    },
    Lexicon {
        name: "positive",
        cues: &[
            "happy", "satisf", "pleased", "positive", "grateful", "thankful", "content",
        ],
        words: &[
            ("thanks", 1.0),
            ("thank", 1.0),
            ("great", 1.0),
            ("perfect", 1.0),
            ("awesome", 1.0),
            ("love", 1.0),
            ("excellent", 1.0),
            ("happy", 1.0),
            ("pleased", 1.0),
            ("wonderful", 1.0),
            ("amazing", 1.0),
            ("good", 0.5),
            ("nice", 0.5),
            ("helpful", 1.0),
            ("appreciate", 1.0),
            ("works", 0.5),
        ],
        opposite: Some("frustrated"),
    },
    Lexicon {
        name: "urgent",
        cues: &[
            "urgen",
            "emergenc",
            "asap",
            "critical",
            "time-sensitive",
            "time sensitive",
            "priority",
            "immediate",
            "hurry",
            "rush",
        ],
        words: &[
            ("urgent", 1.0),
            ("urgently", 1.0),
            ("asap", 1.0),
            ("emergency", 1.0),
            ("immediately", 1.0),
            ("critical", 1.0),
            ("now", 0.5),
            ("today", 0.5),
            ("quickly", 0.5),
            ("hurry", 1.0),
            ("deadline", 0.5),
            ("down", 0.5),
            ("outage", 1.0),
            ("fire", 0.5),
            ("help", 0.25),
            ("sev1", 1.0),
            ("minutes", 0.5),
            ("tonight", 0.5),
            ("right", 0.25),
            ("fast", 0.5),
        ],
        opposite: None,
    },
    Lexicon {
        name: "calm",
        cues: &["calm", "relaxed", "no rush", "not urgent", "whenever"],
        words: &[
            ("whenever", 1.0),
            ("eventually", 1.0),
            ("someday", 1.0),
            ("rush", 0.5),
            ("later", 0.5),
            ("curious", 0.5),
            ("wondering", 0.5),
            ("sometime", 1.0),
        ],
        opposite: Some("urgent"),
    },
];

const INTENSIFIERS: [&str; 6] = ["very", "so", "really", "extremely", "totally", "completely"];
const NEGATIONS: [&str; 8] = [
    "not", "no", "never", "isn't", "wasn't", "don't", "doesn't", "without",
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Weighted hits of `lexicon` in `text`, and the words that hit.
fn lexicon_evidence(lexicon: &Lexicon, text: &str) -> (f64, Vec<String>) {
    let ws = words(text);
    let mut score = 0.0;
    let mut hits = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let lower = w.to_lowercase();
        let Some((_, weight)) = lexicon.words.iter().find(|(x, _)| *x == lower) else {
            continue;
        };
        let before: Vec<String> = ws[i.saturating_sub(2)..i]
            .iter()
            .map(|x| x.to_lowercase())
            .collect();
        if before.iter().any(|b| NEGATIONS.contains(&b.as_str())) {
            continue;
        }
        let mut weight = *weight;
        if before.iter().any(|b| INTENSIFIERS.contains(&b.as_str())) {
            weight *= 1.5;
        }
        if w.len() > 2 && w.chars().all(|c| !c.is_lowercase()) {
            weight *= 1.5;
        }
        score += weight;
        hits.push(lower);
    }
    let bangs = text.matches("!!").count() as f64;
    if score > 0.0 && bangs > 0.0 {
        score += 0.5 * bangs.min(2.0);
    }
    (score, hits)
}

fn lexicon(name: &str) -> Option<&'static Lexicon> {
    LEXICONS.iter().find(|l| l.name == name)
}

/// Whether the condition is negated ("is not", "does not", "isn't", "no longer").
fn negated(condition: &str) -> bool {
    let c = format!(" {} ", condition.to_lowercase());
    [" not ", "n't ", " no longer ", " never "]
        .iter()
        .any(|n| c.contains(n))
}

/// The verdict, its confidence and how it was reached.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Whether the condition holds.
    pub result: bool,
    /// The evaluator's confidence in `result`, in [0, 1].
    pub confidence: f64,
    /// The kind the condition was read as.
    pub kind: &'static str,
    /// The steps of the reasoning.
    pub reasoning: Vec<String>,
    /// What was found.
    pub evidence: Value,
}

fn verdict(s: f64) -> (bool, f64) {
    let p = s / (s + 1.0);
    if s >= 1.0 {
        (true, 0.5 + p / 2.0)
    } else {
        (false, 0.75 - p / 2.0)
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s
            .trim()
            .trim_start_matches(['$', '€', '£'])
            .replace(',', "")
            .parse()
            .ok(),
        _ => None,
    }
}

/// A session variable the condition names (its words joined by `_`, or as written).
fn named_variable<'a>(
    condition: &str,
    vars: &'a Map<String, Value>,
) -> Option<(&'a String, &'a Value, usize)> {
    let lower = condition.to_lowercase();
    let mut best: Option<(&String, &Value, usize)> = None;
    for (k, v) in vars {
        let spaced = k.to_lowercase().replace('_', " ");
        let found = lower
            .find(&k.to_lowercase())
            .map(|i| (i, k.len()))
            .or_else(|| lower.find(&spaced).map(|i| (i, spaced.len())));
        if let Some((i, len)) = found {
            if best.is_none_or(|(b, _, _)| b.len() < k.len()) {
                best = Some((k, v, i + len));
            }
        }
    }
    best
}

/// Spellings of a numeric comparison, the test, and its symbol for the reasoning.
type Comparison = (&'static [&'static str], fn(f64, f64) -> bool, &'static str);

/// Reads `<variable> <comparison> <value>` from the rest of the condition after the variable.
fn compare(rest: &str, value: &Value) -> Option<(bool, String)> {
    let r = rest.trim().to_lowercase();
    let r = r.trim_start_matches(|c: char| c == ':' || c.is_whitespace());
    let present = !value.is_null() && !matches!(value, Value::String(s) if s.trim().is_empty());
    for (ops, wanted) in [
        (
            &[
                "is set",
                "is provided",
                "is known",
                "is present",
                "exists",
                "is given",
            ][..],
            true,
        ),
        (
            &["is missing", "is empty", "is unknown", "is not set"][..],
            false,
        ),
    ] {
        if ops.iter().any(|o| r.starts_with(o)) {
            let state = if present { "set" } else { "not set" };
            return Some((present == wanted, format!("the variable is {state}")));
        }
    }
    let numeric: [Comparison; 5] = [
        (
            &[">=", "at least", "is at least", "no less than"],
            |a, b| a >= b,
            "≥",
        ),
        (
            &["<=", "at most", "is at most", "no more than"],
            |a, b| a <= b,
            "≤",
        ),
        (
            &[
                ">",
                "over",
                "above",
                "more than",
                "greater than",
                "exceeds",
                "is over",
                "is above",
                "is more than",
                "is greater than",
            ],
            |a, b| a > b,
            ">",
        ),
        (
            &[
                "<",
                "under",
                "below",
                "less than",
                "is under",
                "is below",
                "is less than",
            ],
            |a, b| a < b,
            "<",
        ),
        (
            &["==", "=", "equals", "is equal to"],
            |a, b| (a - b).abs() < 1e-9,
            "=",
        ),
    ];
    for (ops, f, sym) in numeric {
        if let Some(op) = ops
            .iter()
            .filter(|o| r.starts_with(**o))
            .max_by_key(|o| o.len())
        {
            let target = r[op.len()..]
                .trim()
                .trim_start_matches(['$', '€', '£'])
                .split_whitespace()
                .next()?
                .replace(',', "");
            let target: f64 = target.parse().ok()?;
            let actual = number(value)?;
            return Some((f(actual, target), format!("{actual} {sym} {target}")));
        }
    }
    for op in ["is not ", "!= ", "isn't "] {
        if let Some(t) = r.strip_prefix(op) {
            let t = t.trim().trim_matches(['"', '\'', '.']);
            let actual = value_text(value);
            return Some((actual != t, format!("{actual:?} differs from {t:?}")));
        }
    }
    for op in ["is ", "== ", "= ", "equals "] {
        if let Some(t) = r.strip_prefix(op) {
            let t = t.trim().trim_matches(['"', '\'', '.']);
            let actual = value_text(value);
            if let (Some(a), Ok(b)) = (number(value), t.parse::<f64>()) {
                return Some(((a - b).abs() < 1e-9, format!("{a} = {b}")));
            }
            return Some((
                actual == t || (t == "true" && value == &json!(true)),
                format!("{actual:?} equals {t:?}"),
            ));
        }
    }
    None
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_lowercase(),
        other => other.to_string().to_lowercase(),
    }
}

const KEYWORD_CUES: [&str; 8] = [
    "mentions",
    "mention",
    "asks about",
    "talks about",
    "contains",
    "refers to",
    "says",
    "about",
];

/// Evaluates `condition` against the message, summary and session variables.
pub fn evaluate(
    condition: &str,
    message: &str,
    summary: &str,
    vars: &Map<String, Value>,
) -> Evaluation {
    let lower = condition.to_lowercase();
    let negate = negated(condition);
    let mut reasoning = Vec::new();
    let finish = |kind: &'static str,
                  mut result: bool,
                  confidence: f64,
                  mut reasoning: Vec<String>,
                  evidence: Value| {
        // A variable test reads its own negation ("is not", "is not set").
        if negate && kind != "variable" {
            result = !result;
            reasoning.push("The condition is negated, so the verdict is inverted.".into());
        }
        Evaluation {
            result,
            confidence: (confidence * 1000.0).round() / 1000.0,
            kind,
            reasoning,
            evidence,
        }
    };

    if let Some((name, value, end)) = named_variable(condition, vars) {
        let rest = &condition[end.min(condition.len())..];
        if let Some((holds, how)) = compare(rest, value) {
            reasoning.push(format!(
                "The condition names the session variable {name} = {value}."
            ));
            reasoning.push(format!("Compared: {how} → {holds}."));
            return finish(
                "variable",
                holds,
                0.97,
                reasoning,
                json!({ "variable": name, "value": value }),
            );
        }
    }

    let cue = KEYWORD_CUES
        .iter()
        .filter_map(|c| lower.find(c).map(|i| (i, c)))
        .min_by_key(|(i, _)| *i);
    if let Some((i, cue)) = cue {
        let target = &condition[i + cue.len()..];
        let wanted = terms(target);
        if !wanted.is_empty() {
            let have: Vec<String> = terms(&format!("{message} {summary}"));
            let found: Vec<&String> = wanted.iter().filter(|t| have.contains(t)).collect();
            let share = found.len() as f64 / wanted.len() as f64;
            reasoning.push(format!(
                "The condition asks whether the conversation mentions {:?}.",
                target.trim()
            ));
            reasoning.push(format!(
                "{} of its {} key words appear in the message or summary.",
                found.len(),
                wanted.len()
            ));
            let result = share >= 0.5;
            let confidence = if result {
                0.6 + 0.35 * share
            } else {
                0.85 - 0.5 * share
            };
            return finish(
                "keyword",
                result,
                confidence,
                reasoning,
                json!({ "wanted": wanted, "found": found }),
            );
        }
    }

    let feeling = LEXICONS
        .iter()
        .filter_map(|l| {
            l.cues
                .iter()
                .filter_map(|c| lower.find(c))
                .min()
                .map(|i| (i, l))
        })
        .min_by_key(|(i, _)| *i)
        .map(|(_, l)| l);
    if let Some(l) = feeling {
        let (m, mut hits) = lexicon_evidence(l, message);
        let (s, summary_hits) = lexicon_evidence(l, summary);
        hits.extend(summary_hits);
        let (against, against_hits) = l
            .opposite
            .and_then(lexicon)
            .map(|o| lexicon_evidence(o, message))
            .unwrap_or_default();
        let net = (m + 0.5 * s - 0.5 * against).max(0.0);
        let kind = if matches!(l.name, "urgent" | "calm") {
            "urgency"
        } else {
            "sentiment"
        };
        reasoning.push(format!("The condition asks about {} ({kind}).", l.name));
        reasoning.push(if hits.is_empty() {
            format!("No {} cues in the message or summary.", l.name)
        } else {
            format!(
                "Cues found: {} (evidence {:.2}).",
                hits.join(", "),
                m + 0.5 * s
            )
        });
        if !against_hits.is_empty() {
            reasoning.push(format!(
                "Opposite cues count against: {}.",
                against_hits.join(", ")
            ));
        }
        // The session's urgency strengthens an urgency reading and weakens a calm one.
        let urgency = vars.get("urgency").and_then(Value::as_str);
        let boost = match urgency.filter(|_| kind == "urgency") {
            Some("critical" | "emergency") => 1.0,
            Some("high") => 0.5,
            _ => 0.0,
        };
        if boost > 0.0 {
            reasoning.push(format!(
                "The session's urgency is {}.",
                urgency.unwrap_or_default()
            ));
        }
        let (result, confidence) = verdict(if l.name == "urgent" {
            net + boost
        } else {
            (net - boost).max(0.0)
        });
        return finish(
            kind,
            result,
            confidence,
            reasoning,
            json!({ "cues": hits, "against": against_hits, "score": net }),
        );
    }

    if lower.contains("question") || lower.contains("asks") || lower.contains("asking") {
        let m = message.trim().to_lowercase();
        let asks = m.contains('?')
            || [
                "what", "how", "why", "when", "where", "who", "which", "can", "could", "is", "are",
                "do", "does", "should",
            ]
            .iter()
            .any(|w| m.starts_with(&format!("{w} ")));
        reasoning.push("The condition asks whether the user asked something.".into());
        reasoning.push(
            if asks {
                "The message is a question."
            } else {
                "The message is not phrased as a question."
            }
            .into(),
        );
        return finish(
            "question",
            asks,
            if asks { 0.9 } else { 0.75 },
            reasoning,
            json!({ "question_mark": m.contains('?') }),
        );
    }

    let wanted: Vec<String> = terms(condition)
        .into_iter()
        .filter(|t| !["user", "seem", "want", "need", "is", "has"].contains(&t.as_str()))
        .collect();
    let have: Vec<String> = terms(&format!("{message} {summary}"));
    let found: Vec<&String> = wanted.iter().filter(|t| have.contains(t)).collect();
    let share = if wanted.is_empty() {
        0.0
    } else {
        found.len() as f64 / wanted.len() as f64
    };
    reasoning.push("The condition is none of the known kinds (sentiment, urgency, variable, mention, question); its words were compared with the conversation.".into());
    reasoning.push(format!(
        "{} of its {} content words appear.",
        found.len(),
        wanted.len()
    ));
    let result = share >= 0.5;
    let confidence = if result {
        0.5 + 0.3 * share
    } else {
        0.7 - 0.3 * share
    };
    finish(
        "overlap",
        result,
        confidence,
        reasoning,
        json!({ "wanted": wanted, "found": found }),
    )
}

thread_local! {
    static RECENT: RefCell<HashMap<String, (f64, Value)>> = RefCell::new(HashMap::new());
}

fn cached(key: &str, now: f64) -> Option<Value> {
    RECENT.with(|r| {
        r.borrow()
            .get(key)
            .filter(|(at, _)| now - at < CACHE_TTL_MS)
            .map(|(_, v)| v.clone())
    })
}

fn remember(key: String, now: f64, v: &Value) {
    RECENT.with(|r| {
        let mut r = r.borrow_mut();
        r.retain(|_, (at, _)| now - *at < CACHE_TTL_MS);
        if r.len() < CACHE_MAX {
            r.insert(key, (now, v.clone()));
        }
    });
}

/// What the model made of the condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// Whether the model says the condition holds.
    pub result: bool,
    /// The model's confidence in `result`, in [0, 1].
    pub confidence: f64,
    /// The model's reason, in one or two sentences.
    pub reasoning: String,
}

/// Whether a model assisted, and if not, why.
#[derive(Debug, Clone, PartialEq)]
pub enum Assistance {
    /// The model answered: `provider` names where it ran (`openai_compatible`, `workers_ai`).
    Used {
        /// Where the model ran.
        provider: &'static str,
        /// Its answer.
        judgement: Judgement,
    },
    /// No model was asked, or its answer could not be used: why, for `detailed`.
    NotUsed(String),
}

/// The judgement in a model's reply: the first JSON object in it, with a boolean `result`, a
/// numeric `confidence` (clamped to [0, 1]; 0.7 when missing) and an optional `reasoning`.
pub fn parse_judgement(reply: &str) -> std::result::Result<Judgement, String> {
    let object = reply
        .find('{')
        .zip(reply.rfind('}'))
        .and_then(|(start, end)| reply.get(start..=end))
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .filter(Value::is_object)
        .ok_or("the model's reply holds no JSON object")?;
    let result = object
        .get("result")
        .and_then(Value::as_bool)
        .ok_or("the model's JSON has no boolean result")?;
    let confidence = object
        .get("confidence")
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite())
        .map_or(0.7, |c| c.clamp(0.0, 1.0));
    let reasoning = object
        .get("reasoning")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .chars()
        .take(500)
        .collect();
    Ok(Judgement {
        result,
        confidence,
        reasoning,
    })
}

/// The rules' verdict combined with the model's, by adding their log-odds as independent
/// evidence: each verdict with its confidence is a probability that the condition holds (`c` for
/// true, `1 − c` for false, bounded to [0.01, 0.99] so neither side is ever certain); the combined
/// probability is `σ(logit(p_rules) + logit(p_model))`. Agreement therefore raises the confidence
/// above either one's; disagreement lowers it, and the more confident side wins (the rules' 0.97
/// of an exact variable comparison outweighs a model's 0.9). An exact tie keeps the rules' verdict.
pub fn combine(rules: (bool, f64), model: (bool, f64)) -> (bool, f64) {
    let p = |(holds, c): (bool, f64)| {
        let c = c.clamp(0.01, 0.99);
        if holds {
            c
        } else {
            1.0 - c
        }
    };
    let logit = |p: f64| (p / (1.0 - p)).ln();
    let z = logit(p(rules)) + logit(p(model));
    let holds = if z == 0.0 { rules.0 } else { z > 0.0 };
    let p_true = 1.0 / (1.0 + (-z).exp());
    let confidence = if holds { p_true } else { 1.0 - p_true };
    (holds, (confidence * 1000.0).round() / 1000.0)
}

/// The parts of `args` an evaluation reads: condition, message, summary, session variables.
fn inputs(args: &Value) -> (&str, &str, &str, Map<String, Value>) {
    let condition = args["condition"].as_str().unwrap_or_default();
    let message = args
        .pointer("/context/user_message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let summary = args
        .pointer("/context/conversation_summary")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let vars = args
        .pointer("/context/session_variables")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    (condition, message, summary, vars)
}

/// The answer for `args` in the shape its `evaluation_type` asks for, from the rules' evaluation
/// and the model's assistance.
pub fn answer(args: &Value, e: &Evaluation, assistance: &Assistance) -> Value {
    let holds = |h: bool| if h { "holds" } else { "does not hold" };
    // The verdict, the model's part of the answer and what `detailed` adds to the reasoning.
    let (result, confidence, model, said) = match assistance {
        Assistance::Used {
            provider,
            judgement,
        } => {
            let (result, confidence) = combine(
                (e.result, e.confidence),
                (judgement.result, judgement.confidence),
            );
            let agreed = judgement.result == e.result;
            let model = json!({
                "used": true,
                "provider": provider,
                "result": judgement.result,
                "confidence": judgement.confidence,
                "reasoning": judgement.reasoning,
                "agrees_with_rules": agreed,
            });
            let why = if judgement.reasoning.is_empty() {
                ".".to_string()
            } else {
                format!(": {}", judgement.reasoning)
            };
            let said = vec![
                format!(
                    "The model says the condition {} (confidence {:.2}){why}",
                    holds(judgement.result),
                    judgement.confidence
                ),
                if agreed {
                    format!("The rules and the model agree, so the confidence rises from the rules' {:.2} to {confidence:.2}.", e.confidence)
                } else {
                    format!(
                        "The rules and the model disagree; their evidence combined says the condition {} with confidence {confidence:.2}.",
                        holds(result)
                    )
                },
            ];
            (result, confidence, model, said)
        }
        Assistance::NotUsed(why) => (
            e.result,
            e.confidence,
            json!({ "used": false, "reason": why }),
            vec![format!("No model was consulted: {why}")],
        ),
    };
    match args
        .get("evaluation_type")
        .and_then(Value::as_str)
        .unwrap_or("confidence")
    {
        "boolean" => json!({ "result": result }),
        "detailed" => json!({
            "result": result,
            "confidence": confidence,
            "condition_kind": e.kind,
            "reasoning": e.reasoning.iter().chain(&said).collect::<Vec<_>>(),
            "evidence": e.evidence,
            "evaluator": if matches!(assistance, Assistance::Used { .. }) { "rules+model" } else { "rules" },
            "rules": { "result": e.result, "confidence": e.confidence },
            "model": model,
        }),
        _ => json!({ "result": result, "confidence": confidence }),
    }
}

/// How long the model may take when `CONDITION_MODEL_TIMEOUT_MS` does not say: well inside the
/// tool's 5-second limit, so a slow model costs its assistance, never the answer.
pub const MODEL_TIMEOUT_MS: u32 = 2500;

/// The most `CONDITION_MODEL_TIMEOUT_MS` may give the model: a second under the tool's 5-second
/// limit, so a larger setting still leaves the rules time to answer alone.
pub const MODEL_TIMEOUT_CAP_MS: u32 = 4000;

/// The model's chat model on Workers AI when `MODEL_PROVIDER_MODEL` names none.
const WORKERS_AI_MODEL: &str = "@cf/meta/llama-3.1-8b-instruct";

const JUDGE_PROMPT: &str = "You judge whether a condition holds for a conversation. Answer with only a JSON object: {\"result\": true or false, \"confidence\": a number from 0 to 1, \"reasoning\": \"one sentence\"}.";

/// Asks the configured model (an OpenAI-compatible `MODEL_PROVIDER_URL` first, else the Workers AI
/// binding `AI`) for its judgement of `args`' condition, within the time limit.
async fn consult(ctx: &dyn ToolContext, args: &Value) -> Assistance {
    let platform = ctx.platform();
    let (condition, message, summary, vars) = inputs(args);
    let user = format!(
        "Condition: {condition}\nUser message: {message}\nConversation summary: {}\nSession variables: {}",
        if summary.is_empty() { "(none)" } else { summary },
        Value::Object(vars)
    );
    let limit = platform
        .setting("CONDITION_MODEL_TIMEOUT_MS")
        .and_then(|v| v.trim().parse().ok())
        .filter(|&ms: &u32| ms > 0)
        .unwrap_or(MODEL_TIMEOUT_MS)
        .min(MODEL_TIMEOUT_CAP_MS);
    let (provider, call): (
        &'static str,
        LocalBoxFuture<'_, std::result::Result<String, String>>,
    ) = if let Some(url) = platform.setting("MODEL_PROVIDER_URL") {
        ("openai_compatible", Box::pin(ask_http(platform, url, user)))
    } else if platform.ai_bound() {
        ("workers_ai", Box::pin(ask_workers_ai(platform, user)))
    } else {
        return Assistance::NotUsed(
                "no model is configured (MODEL_PROVIDER_URL or a Workers AI binding named AI); the rules decided alone.".into(),
            );
    };
    let reply = match select(call, ctx.sleep(limit)).await {
        Either::Left((reply, _)) => reply,
        Either::Right(_) => {
            return Assistance::NotUsed(format!(
                "the model did not answer within {limit} ms (CONDITION_MODEL_TIMEOUT_MS); the rules decided alone."
            ))
        }
    };
    match reply.and_then(|text| parse_judgement(&text)) {
        Ok(judgement) => Assistance::Used {
            provider,
            judgement,
        },
        Err(why) => Assistance::NotUsed(format!("{why}; the rules decided alone.")),
    }
}

async fn ask_http(
    platform: &dyn Platform,
    url: String,
    user: String,
) -> std::result::Result<String, String> {
    let ask = model_provider::request(platform, url, JUDGE_PROMPT, &user, 200, Some(0.0));
    let reply = platform.fetch(ask).await.map_err(|e| {
        format!(
            "the model provider could not be reached: {}",
            e.public_message()
        )
    })?;
    if !(200..300).contains(&reply.status) {
        return Err(format!("the model provider answered HTTP {}", reply.status));
    }
    model_provider::reply_text(&reply.body).ok_or_else(|| model_provider::NO_REPLY_TEXT.into())
}

async fn ask_workers_ai(
    platform: &dyn Platform,
    user: String,
) -> std::result::Result<String, String> {
    let model = platform
        .setting("MODEL_PROVIDER_MODEL")
        .unwrap_or_else(|| WORKERS_AI_MODEL.into());
    let messages = json!([
        { "role": "system", "content": JUDGE_PROMPT },
        { "role": "user", "content": user },
    ]);
    let input = json!({ "messages": messages, "max_tokens": 200 });
    match platform.ai_run(&model, &input).await {
        Ok(Some(out)) => out
            .get("response")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("Workers AI ({model}) answered without a response text")),
        Ok(None) => Err("the Workers AI binding AI is gone".into()),
        Err(e) => Err(format!(
            "Workers AI ({model}) failed: {}",
            e.public_message()
        )),
    }
}

/// `evaluate_semantic_condition`'s handler: the rules, assisted by the configured model when there
/// is one; repeated evaluations are answered from a 5-second cache (model included, so a repeat
/// costs no model call).
pub fn evaluate_semantic_condition(
    ctx: &dyn ToolContext,
    args: Value,
) -> LocalBoxFuture<'_, ToolResult> {
    Box::pin(async move {
        let started = clock::now_ms();
        let key = args.to_string();
        let (result, hit) = match cached(&key, started) {
            Some(v) => (v, true),
            None => {
                let (condition, message, summary, vars) = inputs(&args);
                let e = evaluate(condition, message, summary, &vars);
                let assistance = consult(ctx, &args).await;
                let v = json!({
                    "answer": answer(&args, &e, &assistance),
                    "assisted": matches!(assistance, Assistance::Used { .. }),
                    "not_used": match &assistance {
                        Assistance::NotUsed(why) => Value::String(why.clone()),
                        Assistance::Used { .. } => Value::Null,
                    },
                });
                remember(key, started, &v);
                (v, false)
            }
        };
        let eval_ms = clock::now_ms() - started;
        let assisted = result["assisted"].as_bool().unwrap_or(false);
        let answer = result["answer"].clone();
        let holds = answer["result"].as_bool().unwrap_or(false);
        let body = json!({
            "success": true,
            "result": answer,
            "teaching": {
                "tip": "Phrase conditions as one observable thing: a feeling (\"user seems frustrated\"), a variable test (\"budget is over 5000\") or a mention (\"mentions a refund\").",
                "pattern": "condition + user_message + session_variables = a decision you can branch on",
                "confidence_calibration": "Not a match: the confidence here is the evaluator's confidence in its verdict. Ask for evaluation_type detailed to see the evidence.",
            },
            "next_actions": [{
                "tool": "get_help",
                "reason": "How conditions are read, and how workflows branch on them",
                "parameters": { "help_type": "concept", "specific_question": "activation conditions" },
            }],
            "_metadata": {
                "cache_hit": hit,
                "cache_ttl_ms": CACHE_TTL_MS,
                "evaluator": if assisted { "rules+model" } else { "rules" },
                "model_assisted": assisted,
                "model_not_used_reason": result["not_used"],
                "alpha_llm_calls": u8::from(assisted && !hit),
            },
            "_performance": performance(started, eval_ms),
        });
        Ok(ToolOutput::Described {
            value: body,
            summary: format!(
                "The condition {}.",
                if holds { "holds" } else { "does not hold" }
            ),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(c: &str, m: &str) -> Evaluation {
        evaluate(c, m, "", &Map::new())
    }

    #[test]
    fn sentiment_from_the_lexicon() {
        let e = eval(
            "user seems frustrated",
            "This is RIDICULOUS, the export is broken again!!",
        );
        assert!(e.result);
        assert!(e.confidence > 0.75, "{}", e.confidence);
        assert_eq!(e.kind, "sentiment");
        let e = eval("user seems frustrated", "Thanks, that worked perfectly.");
        assert!(!e.result);
        let e = eval("user is happy", "I'm not happy with this at all");
        assert!(!e.result, "a negated cue does not count");
        let e = eval("user is not frustrated", "Thanks, that worked perfectly.");
        assert!(e.result, "a negated condition inverts");
        assert!(
            eval(
                "the user is confused",
                "I don't understand what this setting does, it's confusing"
            )
            .result
        );
    }

    #[test]
    fn urgency_from_words_and_the_session() {
        assert!(
            eval(
                "request is urgent",
                "we need this fixed ASAP, production is down"
            )
            .result
        );
        assert!(
            !eval(
                "request is urgent",
                "when you get a chance, could you look at the colours"
            )
            .result
        );
        let mut vars = Map::new();
        vars.insert("urgency".into(), json!("critical"));
        assert!(evaluate("this is an emergency", "the site", "", &vars).result);
    }

    #[test]
    fn variable_tests() {
        let mut vars = Map::new();
        vars.insert("budget".into(), json!(7500));
        vars.insert("user_tier".into(), json!("premium"));
        vars.insert("email".into(), json!(""));
        let v = |c: &str| evaluate(c, "", "", &vars);
        assert!(v("budget is over 5000").result);
        assert!(!v("budget is under 5000").result);
        assert!(v("budget at least 7500").result);
        assert!(v("user tier is premium").result);
        assert!(!v("user_tier is free").result);
        assert!(v("user_tier is not free").result);
        assert!(!v("email is provided").result);
        assert_eq!(v("budget is over 5000").kind, "variable");
        assert!(v("budget is over 5000").confidence > 0.9);
    }

    #[test]
    fn mentions_and_questions() {
        let e = eval(
            "mentions a refund",
            "I want my money back, please process a refund",
        );
        assert!(e.result);
        assert_eq!(e.kind, "keyword");
        assert!(!eval("mentions a refund", "Where is my parcel?").result);
        assert!(eval("does not mention pricing", "Where is my parcel?").result);
        assert!(eval("user asked a question", "how do I reset my password").result);
        assert!(!eval("user asked a question", "Reset my password.").result);
    }

    fn rules_only(args: &Value) -> Value {
        let (c, m, su, v) = inputs(args);
        answer(
            args,
            &evaluate(c, m, su, &v),
            &Assistance::NotUsed("no model is configured".into()),
        )
    }

    #[test]
    fn answers_in_the_requested_shape() {
        let args = json!({ "condition": "user seems frustrated", "context": { "user_message": "this is useless and broken" }, "evaluation_type": "boolean" });
        assert_eq!(rules_only(&args), json!({ "result": true }));
        let mut d = args.clone();
        d["evaluation_type"] = json!("detailed");
        let a = rules_only(&d);
        assert!(a["reasoning"].as_array().unwrap().len() >= 2);
        assert_eq!(a["condition_kind"], "sentiment");
        assert_eq!(a["evaluator"], "rules");
        assert_eq!(a["model"]["used"], false);
        assert!(a["reasoning"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .as_str()
            .unwrap()
            .starts_with("No model was consulted: no model is configured"));
        d.as_object_mut().unwrap().remove("evaluation_type");
        let a = rules_only(&d);
        assert!(
            a["confidence"].is_number() && a.get("reasoning").is_none(),
            "confidence is the default"
        );
    }

    #[test]
    fn a_judgement_is_read_from_the_reply() {
        let j = parse_judgement(
            "Sure: {\"result\": true, \"confidence\": 0.9, \"reasoning\": \"They say it is broken again.\"} Hope that helps",
        )
        .unwrap();
        assert_eq!(
            j,
            Judgement {
                result: true,
                confidence: 0.9,
                reasoning: "They say it is broken again.".into()
            }
        );
        let j = parse_judgement(r#"{"result": false, "confidence": 7}"#).unwrap();
        assert_eq!((j.result, j.confidence), (false, 1.0), "clamped");
        assert_eq!(
            parse_judgement(r#"{"result": false}"#).unwrap().confidence,
            0.7
        );
        for (bad, want) in [
            ("yes it holds", "no JSON object"),
            (r#"{"result": "yes"}"#, "no boolean result"),
            ("[true]", "no JSON object"),
        ] {
            let e = parse_judgement(bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn agreement_raises_and_disagreement_lowers_the_confidence() {
        let (holds, c) = combine((true, 0.8), (true, 0.8));
        assert!(holds);
        assert!(c > 0.9 && c < 1.0, "{c}");
        let (holds, c) = combine((false, 0.7), (false, 0.6));
        assert!(!holds);
        assert!(c > 0.7, "{c}");
        let (holds, c) = combine((true, 0.97), (false, 0.9));
        assert!(holds, "an exact comparison outweighs the model");
        assert!(c < 0.97 && c > 0.5, "{c}");
        let (holds, c) = combine((false, 0.6), (true, 0.9));
        assert!(holds, "a confident model outweighs weak rules");
        assert!(c < 0.9, "{c}");
        assert_eq!(
            combine((true, 0.8), (false, 0.8)),
            (true, 0.5),
            "a tie keeps the rules' verdict"
        );
        assert_eq!(
            combine((true, 1.0), (true, 1.0)).1,
            1.0,
            "bounded, never infinite"
        );
    }

    #[test]
    fn a_model_answer_shows_in_detailed() {
        let args = json!({ "condition": "user seems frustrated", "context": { "user_message": "this is useless and broken" }, "evaluation_type": "detailed" });
        let (c, m, su, v) = inputs(&args);
        let e = evaluate(c, m, su, &v);
        let disagree = Assistance::Used {
            provider: "openai_compatible",
            judgement: Judgement {
                result: false,
                confidence: 0.95,
                reasoning: "They sound calm.".into(),
            },
        };
        let a = answer(&args, &e, &disagree);
        assert_eq!(a["evaluator"], "rules+model");
        assert_eq!(a["rules"]["result"], true);
        assert_eq!(a["model"]["result"], false);
        assert_eq!(a["model"]["agrees_with_rules"], false);
        let reasons: Vec<&str> = a["reasoning"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        assert!(reasons.iter().any(|r| r.contains("They sound calm.")));
        assert!(reasons.last().unwrap().contains("disagree"));
        assert!(a["confidence"].as_f64().unwrap() < e.confidence.max(0.95));
    }
}
