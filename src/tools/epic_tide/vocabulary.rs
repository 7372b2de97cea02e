//! The EPIC-TIDE vocabulary (`data/epic-tide/vocabulary.json`): the statuses, outcomes, adaptation
//! actions and next actions the tools accept or recommend. Validation reads it, and it is published
//! as the MCP resource [`URI`], so clients and the server agree on one list.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use crate::engine::read;

/// The vocabulary file, as published.
pub const TEXT: &str = include_str!("../../../data/epic-tide/vocabulary.json");

/// The MCP resource the vocabulary is published as.
pub const URI: &str = "epic-tide://vocabulary";

/// One value and what it means.
#[derive(Debug, Clone, Deserialize)]
pub struct Term {
    /// The value as tools take it.
    pub name: String,
    /// What it means, for people and models.
    pub meaning: String,
    /// For statuses: the work did not get done (failed, blocked). The `revise_path` rule counts
    /// these.
    #[serde(default)]
    pub failure: bool,
}

/// The whole vocabulary.
#[derive(Debug, Clone, Deserialize)]
pub struct Vocabulary {
    /// Statuses of an execution update.
    pub statuses: Vec<Term>,
    /// Outcomes of a tide.
    pub outcomes: Vec<Term>,
    /// Actions of an adaptation.
    pub adaptation_actions: Vec<Term>,
    /// What complete-tide recommends.
    pub next_actions: Vec<Term>,
}

/// The names of `terms`, comma-separated, for messages.
pub fn listing(terms: &[Term]) -> String {
    terms
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The term of `terms` named `name`.
pub fn find<'a>(terms: &'a [Term], name: &str) -> Option<&'a Term> {
    terms.iter().find(|t| t.name == name)
}

/// The vocabulary in `text`, read by hand from the parsed `Value` rather than by a derived reader
/// of its own (docs/decisions.md, "Derived readers").
fn vocabulary(text: &str) -> read::Read<Vocabulary> {
    let mut m = read::object(serde_json::from_str(text)?, "Vocabulary")?;
    let mut terms = |name: &'static str| read::list(read::required(&mut m, name)?, term);
    Ok(Vocabulary {
        statuses: terms("statuses")?,
        outcomes: terms("outcomes")?,
        adaptation_actions: terms("adaptation_actions")?,
        next_actions: terms("next_actions")?,
    })
}

fn term(v: Value) -> read::Read<Term> {
    let mut m = read::object(v, "Term")?;
    Ok(Term {
        name: read::string(read::required(&mut m, "name")?)?,
        meaning: read::string(read::required(&mut m, "meaning")?)?,
        failure: read::defaulted(&mut m, "failure", read::bool)?,
    })
}

/// The vocabulary, parsed once per instance. `cargo test` parses the same file, so a broken file
/// never reaches a deployment.
pub fn get() -> &'static Vocabulary {
    static PARSED: OnceLock<Vocabulary> = OnceLock::new();
    PARSED.get_or_init(|| {
        vocabulary(TEXT).unwrap_or_else(|e| panic!("vocabulary.json is invalid: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand reader reads the file, and variants of it, as the derived `Deserialize` does.
    #[test]
    fn reads_what_the_derive_reads() {
        let mut file: Value = serde_json::from_str(TEXT).unwrap();
        let mut cases = vec![file.to_string()];
        file["statuses"][0]["failure"] = Value::Bool(true);
        file["statuses"][1]
            .as_object_mut()
            .unwrap()
            .remove("failure");
        cases.push(file.to_string());
        file["outcomes"][0]["failure"] = Value::Null;
        cases.push(file.to_string());
        file["outcomes"][0]
            .as_object_mut()
            .unwrap()
            .remove("meaning");
        cases.push(file.to_string());
        file.as_object_mut().unwrap().remove("next_actions");
        cases.push(file.to_string());
        for (n, text) in cases.iter().enumerate() {
            let ours = vocabulary(text).map(|v| format!("{v:?}")).ok();
            let derived = serde_json::from_str::<Vocabulary>(text)
                .map(|v| format!("{v:?}"))
                .ok();
            assert_eq!(ours, derived, "case {n}");
            assert_eq!(ours.is_some(), n < 2, "case {n}");
        }
    }

    #[test]
    fn the_file_holds_the_seeds_values() {
        let v = get();
        let names = |t: &[Term]| t.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&v.statuses),
            ["complete", "failed", "blocked", "reused"]
        );
        assert_eq!(names(&v.outcomes), ["success", "partial", "failed"]);
        assert_eq!(
            names(&v.adaptation_actions),
            ["insert", "modify", "remove", "reorder"]
        );
        assert_eq!(
            names(&v.next_actions),
            ["create_pattern", "retry_tide", "revise_path"]
        );
        let failures: Vec<&str> = v
            .statuses
            .iter()
            .filter(|t| t.failure)
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(failures, ["failed", "blocked"]);
        assert_eq!(listing(&v.outcomes), "success, partial, failed");
    }
}
