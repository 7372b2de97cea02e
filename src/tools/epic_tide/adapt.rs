//! Adaptations of a path's sequence for one tide (`insert`, `modify`, `remove`, `reorder`),
//! checked against the sequence as the earlier adaptations left it.

use serde_json::{json, Value};

/// A failed adaptation: which one (0-based), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// An `insert` names works that are not saved.
    UnknownWorks(Vec<String>),
    /// Anything else wrong with adaptation `index`.
    Invalid {
        /// Position in the adaptations array.
        index: usize,
        /// What is wrong and what to do.
        reason: String,
    },
}

/// Where a work goes: one of `after`, `before`, `position`, or nowhere given.
fn placement(index: usize, details: &Value) -> Result<Option<Place>, Refusal> {
    let after = details.get("after").and_then(Value::as_str);
    let before = details.get("before").and_then(Value::as_str);
    let position = details.get("position").and_then(Value::as_u64);
    match (after, before, position) {
        (None, None, None) => Ok(None),
        (Some(a), None, None) => Ok(Some(Place::After(a.to_string()))),
        (None, Some(b), None) => Ok(Some(Place::Before(b.to_string()))),
        (None, None, Some(p)) => Ok(Some(Place::Position(p as usize))),
        _ => Err(Refusal::Invalid {
            index,
            reason: "give at most one of details.after, details.before and details.position".into(),
        }),
    }
}

enum Place {
    After(String),
    Before(String),
    Position(usize),
}

/// The index at which to put a work into `seq` (which no longer holds it).
fn index_of(index: usize, seq: &[String], place: &Place) -> Result<usize, Refusal> {
    let anchor = |name: &str| {
        seq.iter().position(|w| w == name).ok_or_else(|| Refusal::Invalid {
            index,
            reason: format!(
                "{name:?} is not in the sequence at this point ({}); place the work next to one of those",
                seq.join(", ")
            ),
        })
    };
    match place {
        Place::After(a) => anchor(a).map(|i| i + 1),
        Place::Before(b) => anchor(b),
        Place::Position(p) if (1..=seq.len() + 1).contains(p) => Ok(p - 1),
        Place::Position(p) => Err(Refusal::Invalid {
            index,
            reason: format!(
                "details.position {p} is outside 1..{} for this sequence",
                seq.len() + 1
            ),
        }),
    }
}

/// Applies `adaptations` (validated against the input schema; actions are the vocabulary's) to
/// `path_works`, in order. `saved` says whether a work name is saved (for `insert`). Returns this
/// tide's sequence and the adaptations as recorded.
pub fn apply(
    path_works: &[String],
    adaptations: &[Value],
    saved: impl Fn(&str) -> bool,
) -> Result<(Vec<String>, Vec<Value>), Refusal> {
    let unknown: Vec<String> = adaptations
        .iter()
        .filter(|a| a["action"] == "insert")
        .filter_map(|a| a["target"].as_str())
        .filter(|t| !saved(t))
        .map(str::to_string)
        .collect();
    if !unknown.is_empty() {
        return Err(Refusal::UnknownWorks(unknown));
    }
    let mut seq: Vec<String> = path_works.to_vec();
    let mut recorded = Vec::with_capacity(adaptations.len());
    for (index, a) in adaptations.iter().enumerate() {
        let action = a["action"].as_str().unwrap_or_default();
        let target = a["target"].as_str().unwrap_or_default().to_string();
        let details = a.get("details").cloned().unwrap_or_else(|| json!({}));
        let invalid = |reason: String| Refusal::Invalid { index, reason };
        let at = seq.iter().position(|w| *w == target);
        let place = placement(index, &details)?;
        match action {
            "insert" => {
                if at.is_some() {
                    return Err(invalid(format!(
                        "{target:?} is already in the sequence; use reorder to move it"
                    )));
                }
                let i = match &place {
                    None => seq.len(),
                    Some(p) => index_of(index, &seq, p)?,
                };
                seq.insert(i, target.clone());
            }
            "remove" | "modify" | "reorder" => {
                let Some(i) = at else {
                    return Err(invalid(format!(
                        "{target:?} is not in the sequence at this point ({}); {action} one of those",
                        seq.join(", ")
                    )));
                };
                match action {
                    "remove" if place.is_some() => {
                        return Err(invalid("remove takes no placement in details".into()))
                    }
                    "remove" if seq.len() == 1 => {
                        return Err(invalid(format!(
                            "removing {target:?} would leave the tide without works"
                        )))
                    }
                    "remove" => {
                        seq.remove(i);
                    }
                    "modify" if place.is_some() => {
                        return Err(invalid(
                            "modify keeps the work in place; use reorder to move it".into(),
                        ))
                    }
                    "modify" if details.get("reason").is_none() => {
                        return Err(invalid(
                            "modify needs details.reason: what to do differently with the work"
                                .into(),
                        ))
                    }
                    "modify" => {}
                    _ => {
                        let Some(p) = place else {
                            return Err(invalid(
                                "reorder needs one of details.after, details.before or details.position"
                                    .into(),
                            ));
                        };
                        seq.remove(i);
                        if matches!(&p, Place::After(a) | Place::Before(a) if *a == target) {
                            return Err(invalid(format!(
                                "{target:?} cannot be placed next to itself"
                            )));
                        }
                        let j = index_of(index, &seq, &p)?;
                        seq.insert(j, target.clone());
                    }
                }
            }
            other => {
                return Err(invalid(format!("unknown action {other:?}")));
            }
        }
        let mut entry = json!({ "action": action, "target": target });
        if details.as_object().is_some_and(|d| !d.is_empty()) {
            entry["details"] = details;
        }
        recorded.push(entry);
    }
    Ok((seq, recorded))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn works(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn run(adaptations: Value) -> Result<Vec<String>, Refusal> {
        let path = works(&["setup-env", "setup-database", "create-api"]);
        let saved = |w: &str| w != "never-saved";
        apply(&path, adaptations.as_array().unwrap(), saved).map(|(s, _)| s)
    }

    #[test]
    fn each_action_changes_the_sequence_as_documented() {
        assert_eq!(
            run(json!([{"action": "insert", "target": "setup-auth", "details": {"after": "setup-database"}}])).unwrap(),
            works(&["setup-env", "setup-database", "setup-auth", "create-api"])
        );
        assert_eq!(
            run(json!([{"action": "insert", "target": "lint"}])).unwrap(),
            works(&["setup-env", "setup-database", "create-api", "lint"])
        );
        assert_eq!(
            run(json!([{"action": "insert", "target": "lint", "details": {"position": 1}}]))
                .unwrap(),
            works(&["lint", "setup-env", "setup-database", "create-api"])
        );
        assert_eq!(
            run(json!([{"action": "remove", "target": "setup-env"}])).unwrap(),
            works(&["setup-database", "create-api"])
        );
        assert_eq!(
            run(json!([{"action": "reorder", "target": "create-api", "details": {"before": "setup-env"}}])).unwrap(),
            works(&["create-api", "setup-env", "setup-database"])
        );
        assert_eq!(
            run(json!([{"action": "reorder", "target": "setup-env", "details": {"position": 3}}]))
                .unwrap(),
            works(&["setup-database", "create-api", "setup-env"])
        );
        assert_eq!(
            run(json!([{"action": "modify", "target": "create-api", "details": {"reason": "add auth"}}])).unwrap(),
            works(&["setup-env", "setup-database", "create-api"])
        );
    }

    #[test]
    fn adaptations_apply_in_order() {
        let seq = run(json!([
            {"action": "insert", "target": "setup-auth", "details": {"after": "setup-database"}},
            {"action": "reorder", "target": "setup-auth", "details": {"before": "setup-env"}},
            {"action": "remove", "target": "setup-env"}
        ]))
        .unwrap();
        assert_eq!(seq, works(&["setup-auth", "setup-database", "create-api"]));
    }

    #[test]
    fn bad_adaptations_say_which_and_why() {
        let e = run(json!([{"action": "insert", "target": "never-saved"}])).unwrap_err();
        assert_eq!(e, Refusal::UnknownWorks(vec!["never-saved".into()]));
        let reason = |v: Value| match run(v).unwrap_err() {
            Refusal::Invalid { index, reason } => format!("{index}: {reason}"),
            other => panic!("{other:?}"),
        };
        assert!(reason(json!([{"action": "remove", "target": "nope"}]))
            .starts_with("0: \"nope\" is not in the sequence"));
        assert!(
            reason(json!([{"action": "insert", "target": "create-api"}]))
                .contains("already in the sequence")
        );
        assert!(
            reason(json!([{"action": "modify", "target": "create-api"}]))
                .contains("needs details.reason")
        );
        assert!(
            reason(json!([{"action": "reorder", "target": "create-api"}])).contains("needs one of")
        );
        assert!(reason(json!([{"action": "reorder", "target": "create-api", "details": {"after": "create-api"}}])).contains("next to itself"));
        assert!(
            reason(json!([{"action": "insert", "target": "x", "details": {"position": 9}}]))
                .contains("outside 1..4")
        );
        assert!(reason(
            json!([{"action": "insert", "target": "x", "details": {"after": "a", "before": "b"}}])
        )
        .contains("at most one"));
        assert!(reason(json!([
            {"action": "remove", "target": "setup-env"},
            {"action": "remove", "target": "setup-database"},
            {"action": "remove", "target": "create-api"}
        ]))
        .starts_with("2: removing"));
        assert!(reason(json!([{"action": "remove", "target": "setup-env"}, {"action": "remove", "target": "setup-env"}])).starts_with("1: "));
    }
}
