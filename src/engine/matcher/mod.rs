//! The semantic matcher behind FlowMind's `field_request`: which catalog contexts fit a request,
//! how sure we are, and what the caller should do next.
//!
//! Three signals per candidate — text similarity ([`bm25`]), how many of the context's variables
//! the caller already extracted ([`variable_alignment`]) and whether the caller's domain is the
//! context's — are combined by a logistic model into a confidence in [0, 1] ([`Model`]). A logistic
//! model is what Platt scaling fits, so its coefficients can be re-fitted on a labelled set of
//! requests and its output read as a probability that the match is right. [`decide`] turns the
//! ranked confidences into the response status.

pub mod bm25;
pub mod text;

/// What the caller told us about one candidate, beside the text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Signals {
    /// BM25F similarity of the request to the context, in [0, 1].
    pub similarity: f64,
    /// Share of the context's variables the caller extracted, in [0, 1].
    pub alignment: f64,
    /// The caller's domain equals the context's (`Some(true)`), differs (`Some(false)`), or was
    /// not given.
    pub domain_match: Option<bool>,
}

/// The logistic confidence model: `σ(bias + similarity·s + alignment·a + domain·d)` with `d` = +1,
/// −1 or 0 for a matching, differing or unknown domain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    /// Intercept.
    pub bias: f64,
    /// Weight of the text similarity.
    pub similarity: f64,
    /// Weight of the variable alignment.
    pub alignment: f64,
    /// Weight of the domain agreement.
    pub domain: f64,
}

impl Default for Model {
    /// Similarity dominates (a request that shares no vocabulary with a context is not about it,
    /// whatever its variables say); a domain mismatch costs about as much as a third of the text.
    fn default() -> Self {
        Model {
            bias: -3.0,
            similarity: 7.0,
            alignment: 1.0,
            domain: 0.8,
        }
    }
}

impl Model {
    /// The confidence for `s`, in (0, 1).
    pub fn confidence(&self, s: &Signals) -> f64 {
        let domain = match s.domain_match {
            Some(true) => 1.0,
            Some(false) => -1.0,
            None => 0.0,
        };
        let z = self.bias
            + self.similarity * s.similarity
            + self.alignment * s.alignment
            + self.domain * domain;
        1.0 / (1.0 + (-z).exp())
    }
}

/// Share of a context's variables among those the caller `provided`: required ones count fully,
/// optional ones half. A context that takes no variables is neutral (0.5): it neither rewards nor
/// punishes extraction.
pub fn variable_alignment(required: &[String], optional: &[String], provided: &[String]) -> f64 {
    let has = |v: &String| provided.contains(v);
    let total = required.len() as f64 + 0.5 * optional.len() as f64;
    if total == 0.0 {
        return 0.5;
    }
    let got = required.iter().filter(|v| has(v)).count() as f64
        + 0.5 * optional.iter().filter(|v| has(v)).count() as f64;
    got / total
}

/// Where the confidence thresholds lie.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// At or above: the best match can be acted on.
    pub success: f64,
    /// Below: nothing fits.
    pub no_match: f64,
    /// Two matches at or above `no_match` closer than this are ambiguous.
    pub ambiguity_gap: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            success: 0.6,
            no_match: 0.3,
            ambiguity_gap: 0.08,
        }
    }
}

/// What a ranked list of confidences (best first) means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The best match is clear and strong.
    Success,
    /// The best two are too close to choose between.
    Ambiguous,
    /// Something fits, but not well enough to act on without a better request.
    Refine,
    /// Nothing fits.
    NoMatch,
}

/// The verdict for `confidences`, sorted best first.
pub fn decide(confidences: &[f64], t: &Thresholds) -> Verdict {
    let Some(&best) = confidences.first() else {
        return Verdict::NoMatch;
    };
    if best < t.no_match {
        return Verdict::NoMatch;
    }
    if let Some(&second) = confidences.get(1) {
        if second >= t.no_match.max(t.success - 0.2) && best - second < t.ambiguity_gap {
            return Verdict::Ambiguous;
        }
    }
    if best >= t.success {
        Verdict::Success
    } else {
        Verdict::Refine
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn confidence_grows_with_every_signal() {
        let m = Model::default();
        let base = Signals {
            similarity: 0.4,
            alignment: 0.5,
            domain_match: None,
        };
        let c = m.confidence(&base);
        assert!(c > 0.0 && c < 1.0);
        assert!(
            m.confidence(&Signals {
                similarity: 0.6,
                ..base
            }) > c
        );
        assert!(
            m.confidence(&Signals {
                alignment: 1.0,
                ..base
            }) > c
        );
        assert!(
            m.confidence(&Signals {
                domain_match: Some(true),
                ..base
            }) > c
        );
        assert!(
            m.confidence(&Signals {
                domain_match: Some(false),
                ..base
            }) < c
        );
        let nothing = Signals {
            similarity: 0.0,
            alignment: 1.0,
            domain_match: Some(true),
        };
        assert!(
            m.confidence(&nothing) < 0.3,
            "variables alone never make a match"
        );
    }

    #[test]
    fn alignment_counts_required_fully_and_optional_half() {
        let req = v(&["system_component", "error_description"]);
        let opt = v(&["affected_users", "duration"]);
        assert_eq!(variable_alignment(&req, &opt, &[]), 0.0);
        assert_eq!(
            variable_alignment(&req, &opt, &v(&["system_component"])),
            1.0 / 3.0
        );
        assert_eq!(
            variable_alignment(&req, &opt, &v(&["duration", "technology"])),
            0.5 / 3.0
        );
        assert_eq!(
            variable_alignment(
                &req,
                &opt,
                &v(&[
                    "system_component",
                    "error_description",
                    "affected_users",
                    "duration"
                ])
            ),
            1.0
        );
        assert_eq!(variable_alignment(&[], &[], &v(&["x"])), 0.5);
    }

    #[test]
    fn verdicts() {
        let t = Thresholds::default();
        assert_eq!(decide(&[], &t), Verdict::NoMatch);
        assert_eq!(decide(&[0.2, 0.1], &t), Verdict::NoMatch);
        assert_eq!(decide(&[0.9, 0.5], &t), Verdict::Success);
        assert_eq!(decide(&[0.9], &t), Verdict::Success);
        assert_eq!(decide(&[0.85, 0.8], &t), Verdict::Ambiguous);
        assert_eq!(decide(&[0.45, 0.41], &t), Verdict::Ambiguous);
        assert_eq!(decide(&[0.5, 0.2], &t), Verdict::Refine);
        assert_eq!(
            decide(&[0.35, 0.33], &t),
            Verdict::Refine,
            "two weak matches are weak, not ambiguous"
        );
    }
}
