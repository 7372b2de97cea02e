//! How well the matcher does on a labelled set of requests, and the fit of its [`Model`] and
//! [`Thresholds`] to such a set (`docs/flowmind.md`, "Matching and calibration").
//!
//! A labelled request is what an MCP client's model would send to `field_request` plus the
//! contexts that are acceptable best matches: one for a clear request, two for a genuinely
//! ambiguous one, none for a request outside the catalog. Each request runs through the same
//! path as `field_request` ([`Matcher::rank`], [`decide`]) and the figures are the ones a caller
//! feels: is the first match right, is a right one among the first three, is "nothing fits" said
//! when (and only when) nothing does, and does a confidence of 0.8 come true four times in five.
//!
//! The model is fitted by logistic regression on "is this candidate right" over the text hits of
//! every request ([`samples`], [`fit`]); that is Platt scaling with the signals as features, so
//! the confidence reads as a probability. The thresholds are then chosen by grid search to make
//! the response status right as often as possible, a confident wrong answer costing most
//! ([`tune`]).

use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{decide, Candidate, Entry, Matcher, Model, Request, Signals, Thresholds, Verdict};

/// How many matches a response lists (`field_request`'s default `max_results`).
pub const SHOWN: usize = 5;

/// A context of the catalog file, as far as matching needs it.
#[derive(Deserialize)]
struct CatalogContext {
    uri: String,
    domain: String,
    name: String,
    description: String,
    activation_condition: String,
    tags: Vec<String>,
    example_requests: Vec<String>,
    required_variables: Vec<String>,
    optional_variables: Vec<String>,
}

/// The entries of a catalog file in the shape of `data/flowmind/contexts.json`.
pub fn catalog_entries(json: &str) -> Result<Vec<Entry>, serde_json::Error> {
    let contexts: Vec<CatalogContext> = serde_json::from_str(json)?;
    Ok(contexts
        .into_iter()
        .map(|c| Entry {
            uri: c.uri,
            domain: c.domain,
            name: c.name,
            tags: c.tags,
            examples: c.example_requests,
            description: format!("{} {}", c.description, c.activation_condition),
            required: c.required_variables,
            optional: c.optional_variables,
        })
        .collect())
}

/// A request with the contexts that would be right answers.
#[derive(Debug, Clone, Deserialize)]
pub struct Labelled {
    /// `field_request`'s `query`.
    pub query: String,
    /// `field_request`'s `extracted_variables`.
    #[serde(default)]
    pub extracted_variables: Map<String, Value>,
    /// `field_request`'s `confidence_level`.
    pub confidence_level: f64,
    /// URIs of the acceptable best matches; empty when nothing in the catalog fits.
    pub expected: Vec<String>,
}

/// The requests of a file in the shape of `tests/data/flowmind_requests.json`.
pub fn labelled_requests(json: &str) -> Result<Vec<Labelled>, serde_json::Error> {
    serde_json::from_str(json)
}

/// The deterministic split the model is fitted and judged on: even positions train, odd ones test.
pub fn halves(set: &[Labelled]) -> (Vec<Labelled>, Vec<Labelled>) {
    let (train, test): (Vec<_>, Vec<_>) = set
        .iter()
        .cloned()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    (
        train.into_iter().map(|(_, r)| r).collect(),
        test.into_iter().map(|(_, r)| r).collect(),
    )
}

/// What the matcher made of one labelled request.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The shown matches, best first.
    pub candidates: Vec<Candidate>,
    /// Whether each shown match is among the expected ones.
    pub correct: Vec<bool>,
    /// The response status.
    pub verdict: Verdict,
}

/// Runs `request` through the matcher as `field_request` would.
pub fn run(
    matcher: &Matcher,
    model: &Model,
    thresholds: &Thresholds,
    request: &Labelled,
) -> Outcome {
    let provided: Vec<String> = request.extracted_variables.keys().cloned().collect();
    let domain = request
        .extracted_variables
        .get("domain")
        .and_then(Value::as_str);
    let query = Request {
        query: &request.query,
        provided: &provided,
        domain,
    };
    let candidates = matcher.rank(&query, model, |_| true, SHOWN);
    let confidences: Vec<f64> = candidates.iter().map(|c| c.confidence).collect();
    let correct = candidates
        .iter()
        .map(|c| request.expected.contains(&matcher.entries()[c.entry].uri))
        .collect();
    Outcome {
        verdict: decide(&confidences, thresholds),
        candidates,
        correct,
    }
}

/// Whether `outcome` has the status the request deserves: success with a right first match for a
/// clear request, disambiguation with a right match among the first two for an ambiguous one,
/// no match for one outside the catalog.
pub fn deserved(request: &Labelled, outcome: &Outcome) -> bool {
    let right_in = |n: usize| outcome.correct.iter().take(n).any(|&c| c);
    match request.expected.len() {
        0 => outcome.verdict == Verdict::NoMatch,
        1 => outcome.verdict == Verdict::Success && right_in(1),
        _ => outcome.verdict == Verdict::Ambiguous && right_in(2),
    }
}

/// The measured figures for one set of requests.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Report {
    /// Requests measured.
    pub requests: usize,
    /// Of which some context fits.
    pub in_domain: usize,
    /// Share of in-domain requests whose first match is right.
    pub top1: f64,
    /// Share of in-domain requests with a right match among the first three.
    pub recall_at_3: f64,
    /// Share of `no_matches` answers given to requests that indeed fit nothing (1 when none given).
    pub no_match_precision: f64,
    /// Share of out-of-domain requests answered `no_matches` (1 when there are none).
    pub no_match_recall: f64,
    /// Share of requests given the status they deserve (see [`deserved`]).
    pub status_accuracy: f64,
    /// Share of requests answered `success` with a wrong first match: the caller would run the
    /// wrong context.
    pub wrong_success: f64,
    /// Share of requests answered `refinement_suggested`.
    pub refined: f64,
    /// Expected calibration error over every shown match: the gap between confidence and the
    /// share of right matches, averaged over ten equal-width confidence bins weighted by size.
    pub ece: f64,
    /// The same over the first match of each request only.
    pub ece_top1: f64,
    /// Mean squared error of the confidence of every shown match against 1 (right) or 0 (wrong).
    pub brier: f64,
}

/// Measures `set`.
pub fn evaluate(
    matcher: &Matcher,
    model: &Model,
    thresholds: &Thresholds,
    set: &[Labelled],
) -> Report {
    let share = |n: usize, of: usize| if of == 0 { 1.0 } else { n as f64 / of as f64 };
    let mut in_domain = 0;
    let (mut top1, mut top3, mut deserved_n) = (0, 0, 0);
    let (mut said_none, mut said_none_rightly, mut out_of_domain) = (0, 0, 0);
    let (mut wrong_success, mut refined) = (0, 0);
    let mut all = Vec::new();
    let mut firsts = Vec::new();
    for request in set {
        let o = run(matcher, model, thresholds, request);
        if request.expected.is_empty() {
            out_of_domain += 1;
        } else {
            in_domain += 1;
            top1 += usize::from(o.correct.first() == Some(&true));
            top3 += usize::from(o.correct.iter().take(3).any(|&c| c));
        }
        if o.verdict == Verdict::NoMatch {
            said_none += 1;
            said_none_rightly += usize::from(request.expected.is_empty());
        }
        deserved_n += usize::from(deserved(request, &o));
        wrong_success +=
            usize::from(o.verdict == Verdict::Success && o.correct.first() != Some(&true));
        refined += usize::from(o.verdict == Verdict::Refine);
        for (c, &right) in o.candidates.iter().zip(&o.correct) {
            all.push((c.confidence, right));
        }
        if let (Some(c), Some(&right)) = (o.candidates.first(), o.correct.first()) {
            firsts.push((c.confidence, right));
        }
    }
    Report {
        requests: set.len(),
        in_domain,
        top1: share(top1, in_domain),
        recall_at_3: share(top3, in_domain),
        no_match_precision: share(said_none_rightly, said_none),
        no_match_recall: share(said_none_rightly, out_of_domain),
        status_accuracy: share(deserved_n, set.len()),
        wrong_success: share(wrong_success, set.len()),
        refined: share(refined, set.len()),
        ece: expected_calibration_error(&all),
        ece_top1: expected_calibration_error(&firsts),
        brier: if all.is_empty() {
            0.0
        } else {
            all.iter()
                .map(|&(p, y)| (p - f64::from(u8::from(y))).powi(2))
                .sum::<f64>()
                / all.len() as f64
        },
    }
}

/// ECE over ten equal-width bins of `(confidence, right)` pairs.
fn expected_calibration_error(pairs: &[(f64, bool)]) -> f64 {
    if pairs.is_empty() {
        return 0.0;
    }
    let mut bins = [(0usize, 0.0f64, 0usize); 10];
    for &(p, right) in pairs {
        let b = ((p * 10.0) as usize).min(9);
        bins[b].0 += 1;
        bins[b].1 += p;
        bins[b].2 += usize::from(right);
    }
    bins.iter()
        .filter(|b| b.0 > 0)
        .map(|&(n, sum, right)| {
            (n as f64 / pairs.len() as f64) * (sum / n as f64 - right as f64 / n as f64).abs()
        })
        .sum()
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} requests ({} in-domain): top-1 {:.3}, recall@3 {:.3}, no-match precision {:.3} recall {:.3}, \
             right status {:.3}, wrong success {:.3}, refinement {:.3}, ECE {:.3} (first match {:.3}), Brier {:.3}",
            self.requests,
            self.in_domain,
            self.top1,
            self.recall_at_3,
            self.no_match_precision,
            self.no_match_recall,
            self.status_accuracy,
            self.wrong_success,
            self.refined,
            self.ece,
            self.ece_top1,
            self.brier
        )
    }
}

/// The fitting population: the signals of every text hit of every request, labelled right or
/// wrong. Independent of the model, so fitting does not chase its own ranking.
pub fn samples(matcher: &Matcher, set: &[Labelled]) -> Vec<(Signals, bool)> {
    let mut out = Vec::new();
    for request in set {
        let provided: Vec<String> = request.extracted_variables.keys().cloned().collect();
        let query = Request {
            query: &request.query,
            provided: &provided,
            domain: request
                .extracted_variables
                .get("domain")
                .and_then(Value::as_str),
        };
        for (hit, signals) in matcher.signals(&query, |_| true) {
            out.push((
                signals,
                request.expected.contains(&matcher.entries()[hit.doc].uri),
            ));
        }
    }
    out
}

/// The features of the model, in the order of its coefficients.
fn features(s: &Signals) -> [f64; 5] {
    [
        1.0,
        s.similarity,
        s.relative,
        s.alignment,
        super::domain_feature(s),
    ]
}

/// Logistic regression of `samples` by Newton's method (iteratively reweighted least squares)
/// with a light ridge penalty, which keeps the fit finite when a feature separates the classes.
pub fn fit(samples: &[(Signals, bool)]) -> Model {
    const RIDGE: f64 = 0.01;
    let mut w = [0.0f64; 5];
    for _ in 0..100 {
        let mut gradient = [0.0; 5];
        let mut hessian = [[0.0; 5]; 5];
        for (s, right) in samples {
            let x = features(s);
            let z: f64 = (0..5).map(|i| w[i] * x[i]).sum();
            let p = 1.0 / (1.0 + (-z).exp());
            let y = f64::from(u8::from(*right));
            for i in 0..5 {
                gradient[i] += (p - y) * x[i];
                for j in 0..5 {
                    hessian[i][j] += p * (1.0 - p) * x[i] * x[j];
                }
            }
        }
        for i in 0..5 {
            gradient[i] += RIDGE * w[i];
            hessian[i][i] += RIDGE;
        }
        let step = solve(hessian, gradient);
        for i in 0..5 {
            w[i] -= step[i];
        }
        if step.iter().all(|d| d.abs() < 1e-12) {
            break;
        }
    }
    Model {
        bias: w[0],
        similarity: w[1],
        relative: w[2],
        alignment: w[3],
        domain: w[4],
    }
}

/// Solves `a·x = b` by Gaussian elimination with partial pivoting (`a` is positive definite here:
/// a Hessian plus a ridge).
fn solve(mut a: [[f64; 5]; 5], mut b: [f64; 5]) -> [f64; 5] {
    for col in 0..5 {
        let pivot = (col..5)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        b.swap(col, pivot);
        let pivot_row = a[col];
        for row in col + 1..5 {
            let f = a[row][col] / pivot_row[col];
            for (x, p) in a[row].iter_mut().zip(pivot_row).skip(col) {
                *x -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; 5];
    for row in (0..5).rev() {
        let rest: f64 = (row + 1..5).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - rest) / a[row][row];
    }
    x
}

/// What running the wrong context costs a caller, in units of what running the right one gains: a
/// wrong workflow wastes the user's time and may change things, so it weighs more than the gain.
pub const WRONG_RUN_COST: f64 = 1.5;

/// The confidence at and above which acting on the best match pays: with a calibrated confidence
/// `p`, acting gains `p` and loses `(1 − p)·WRONG_RUN_COST` against asking for a better request
/// (worth 0), so it pays from `p = cost / (1 + cost)`: 0.6.
pub fn act_threshold() -> f64 {
    WRONG_RUN_COST / (1.0 + WRONG_RUN_COST)
}

/// What a response status is worth to a caller: the status it deserves 1; a hedge that still shows
/// a right match among the first two (refinement for a clear request, success for an ambiguous
/// one) ½; acting on a wrong match −[`WRONG_RUN_COST`] (the caller runs the wrong workflow);
/// anything else 0.
fn utility(request: &Labelled, o: &Outcome) -> f64 {
    if deserved(request, o) {
        return 1.0;
    }
    let right_first = o.correct.first() == Some(&true);
    let right_in_two = o.correct.iter().take(2).any(|&c| c);
    match (request.expected.len(), o.verdict) {
        (_, Verdict::Success) if !right_first => -WRONG_RUN_COST,
        (0, Verdict::Ambiguous) => -0.5,
        (1, Verdict::Refine | Verdict::Ambiguous) | (2, Verdict::Success | Verdict::Refine)
            if right_in_two =>
        {
            0.5
        }
        _ => 0.0,
    }
}

/// The thresholds for `set` under `model`: success at [`act_threshold`] (the confidence is
/// calibrated, so where acting pays follows from the costs, not from the set), and the no-match
/// threshold and ambiguity gap that maximise the total [`utility`] of `set`, by grid search in
/// steps of 0.02 (the first best in the order no-match, gap ascending).
pub fn tune(matcher: &Matcher, model: &Model, set: &[Labelled]) -> Thresholds {
    let probe = Thresholds::default();
    let outcomes: Vec<Outcome> = set.iter().map(|r| run(matcher, model, &probe, r)).collect();
    let grid = |from: u32, to: u32| (from..=to).map(|i| f64::from(i) * 0.02);
    let mut best = (f64::NEG_INFINITY, probe);
    let success = act_threshold();
    for no_match in grid(1, 45).filter(|&n| n < success) {
        for ambiguity_gap in grid(1, 25) {
            let t = Thresholds {
                success,
                no_match,
                ambiguity_gap,
            };
            let total: f64 = set
                .iter()
                .zip(&outcomes)
                .map(|(r, o)| {
                    let confidences: Vec<f64> = o.candidates.iter().map(|c| c.confidence).collect();
                    let o = Outcome {
                        verdict: decide(&confidences, &t),
                        ..o.clone()
                    };
                    utility(r, &o)
                })
                .sum();
            if total > best.0 {
                best = (total, t);
            }
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::super::bm25::Params;
    use super::*;

    const CATALOG: &str = include_str!("../../../data/flowmind/contexts.json");
    const REQUESTS: &str = include_str!("../../../tests/data/flowmind_requests.json");

    fn matcher() -> Matcher {
        Matcher::new(catalog_entries(CATALOG).unwrap(), Params::default())
    }

    fn labelled(query: &str) -> Labelled {
        labelled_requests(REQUESTS)
            .unwrap()
            .into_iter()
            .find(|r| r.query == query)
            .unwrap_or_else(|| panic!("not in the labelled set: {query}"))
    }

    fn outcome(query: &str) -> (Outcome, Vec<String>) {
        let m = matcher();
        let o = run(
            &m,
            &Model::default(),
            &Thresholds::default(),
            &labelled(query),
        );
        let uris = o
            .candidates
            .iter()
            .map(|c| m.entries()[c.entry].uri.clone())
            .collect();
        (o, uris)
    }

    #[test]
    fn both_files_load() {
        assert!(catalog_entries(CATALOG).unwrap().len() >= 60);
        assert!(labelled_requests(REQUESTS).unwrap().len() >= 150);
    }

    #[test]
    fn fit_recovers_a_known_logistic_relation() {
        // Outcomes drawn deterministically from σ(-3 + 4·similarity + 1.5·relative + 1·alignment
        // + 0.5·domain).
        let truth = Model {
            bias: -3.0,
            similarity: 4.0,
            relative: 1.5,
            alignment: 1.0,
            domain: 0.5,
        };
        let mut samples = Vec::new();
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..20000 {
            let s = Signals {
                similarity: next(),
                relative: next(),
                alignment: next(),
                domain_match: [Some(true), Some(false), None][(next() * 3.0) as usize % 3],
            };
            let right = next() < truth.confidence(&s);
            samples.push((s, right));
        }
        let m = fit(&samples);
        for (got, want) in [
            (m.bias, truth.bias),
            (m.similarity, truth.similarity),
            (m.relative, truth.relative),
            (m.alignment, truth.alignment),
            (m.domain, truth.domain),
        ] {
            assert!((got - want).abs() < 0.25, "{m:?}");
        }
    }

    #[test]
    fn calibration_error_is_the_size_weighted_gap_between_confidence_and_hit_rate() {
        let pairs: Vec<(f64, bool)> = (0..10).map(|i| (0.75, i < 7)).collect();
        assert!((expected_calibration_error(&pairs) - 0.05).abs() < 1e-9);
        let perfect = [(0.05, false), (0.95, true), (0.5, true), (0.5, false)];
        assert!((expected_calibration_error(&perfect) - 0.025).abs() < 1e-9);
    }

    #[test]
    fn report_on_the_labelled_set() {
        // The figures are printed (`--nocapture`), not asserted: they are a measurement.
        let m = matcher();
        let set = labelled_requests(REQUESTS).unwrap();
        let (train, test) = halves(&set);
        let (model, t) = (Model::default(), Thresholds::default());
        for (name, part) in [("train", &train), ("test", &test), ("all", &set)] {
            let r = evaluate(&m, &model, &t, part);
            assert_eq!(r.requests, part.len());
            for x in [
                r.top1,
                r.recall_at_3,
                r.no_match_precision,
                r.no_match_recall,
                r.status_accuracy,
                r.wrong_success,
                r.refined,
                r.ece,
                r.brier,
            ] {
                assert!((0.0..=1.0).contains(&x), "{r}");
            }
            assert!(r.recall_at_3 >= r.top1);
            println!("{name}: {r}");
        }
    }

    #[test]
    fn a_clear_request_succeeds_with_the_expected_context_first() {
        for (query, uri) in [
            (
                "Checkout is throwing 502s for every customer since ten minutes ago and we're losing orders",
                "workflow://incident-response",
            ),
            (
                "We're switching from MongoDB to PostgreSQL and cannot afford any downtime",
                "workflow://database-migration",
            ),
            (
                "I want to write a thriller book about a hacker, help me structure the chapters",
                "workflow://novel-planning",
            ),
        ] {
            let (o, uris) = outcome(query);
            assert_eq!(o.verdict, Verdict::Success, "{query}: {uris:?} {:?}", o.candidates);
            assert_eq!(uris[0], uri, "{query}");
        }
    }

    #[test]
    fn an_out_of_domain_request_runs_nothing() {
        // Issue 23 asks out-of-scope requests to get `no_matches` or `refinement_suggested`: a
        // request sharing one word with a context ("poem") may be offered it as a refinement,
        // never acted on nor asked to choose.
        for query in [
            "bake sourdough bread with a crispy crust",
            "translate this poem to Klingon",
            "what's the weather in Paris tomorrow",
        ] {
            let (o, uris) = outcome(query);
            assert!(
                matches!(o.verdict, Verdict::NoMatch | Verdict::Refine),
                "{query}: {:?} {uris:?} {:?}",
                o.verdict,
                o.candidates
            );
        }
    }
}
