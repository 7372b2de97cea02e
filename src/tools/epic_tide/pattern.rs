//! What complete-tide decides: the next action after a tide, and the pattern of a domain and tag
//! set derived from its paths' completed tides. Both rules are documented in docs/epic-tide.md.

use serde_json::{json, Map, Value};

/// A completed tide, as the rules see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed {
    /// The path's name.
    pub path: String,
    /// The sequence the tide ran.
    pub sequence: Vec<String>,
    /// Its adaptations, as recorded (`{action, target, details?}`).
    pub adaptations: Vec<Value>,
    /// Its outcome.
    pub outcome: String,
    /// When it completed (ms), to break ties by recency.
    pub completed_ms: i64,
}

/// complete-tide's recommendation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Next {
    /// `create_pattern`, `retry_tide` or `revise_path`.
    pub action: &'static str,
    /// Why, in a sentence.
    pub reason: String,
    /// The works that failed (or were blocked) in this tide and the previous one.
    pub repeated: Vec<String>,
}

/// The next action: `create_pattern` after a success; after a partial or failed tide,
/// `revise_path` when some work failed (or was blocked) both in this tide and in the path's
/// previous completed tide, which was not a success either; otherwise `retry_tide`.
/// `failing_now` and `failing_before` are the works whose latest status in each tide was a
/// failure status; `previous_outcome` is `None` for a first attempt.
pub fn next_action(
    outcome: &str,
    failing_now: &[String],
    previous_outcome: Option<&str>,
    failing_before: &[String],
) -> Next {
    if outcome == "success" {
        return Next {
            action: "create_pattern",
            reason: "The tide succeeded; its sequence and adaptations now count towards the pattern of the path's domain and tags.".into(),
            repeated: vec![],
        };
    }
    let repeated: Vec<String> = match previous_outcome {
        Some(prev) if prev != "success" => failing_now
            .iter()
            .filter(|w| failing_before.contains(w))
            .cloned()
            .collect(),
        _ => vec![],
    };
    if repeated.is_empty() {
        Next {
            action: "retry_tide",
            reason: "Start another tide of this path, with adaptations for what this one taught."
                .into(),
            repeated,
        }
    } else {
        Next {
            action: "revise_path",
            reason: format!(
                "{} failed or was blocked in this tide and the one before; change the path or those works before another tide.",
                repeated.join(", ")
            ),
            repeated,
        }
    }
}

/// A pattern derived from the completed tides of one domain and tag set.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    /// The sequence run by the most successful tides (ties: the most recent one's).
    pub common_sequence: Vec<String>,
    /// Share of the successful tides that ran `common_sequence`.
    pub sequence_support: f64,
    /// The adaptations of successful tides, keyed `"<action> <target>"`: action, target, the latest
    /// details and how many successful tides made it.
    pub proven_adaptations: Value,
    /// Successful tides over completed tides.
    pub success_rate: f64,
    /// Successful tides.
    pub successful_tides: usize,
    /// Completed tides.
    pub completed_tides: usize,
    /// The paths whose tides count, by name.
    pub paths: Vec<String>,
}

/// Rounds a share to four decimals, so stored and shown rates compare cleanly.
fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64 * 10_000.0).round() / 10_000.0
    }
}

/// The pattern of `tides` (every completed tide of one domain and tag set), or `None` while none
/// of them succeeded.
pub fn derive(tides: &[Completed]) -> Option<Pattern> {
    let mut wins: Vec<&Completed> = tides.iter().filter(|t| t.outcome == "success").collect();
    if wins.is_empty() {
        return None;
    }
    crate::engine::sort::sort_by_key(&mut wins, |t| t.completed_ms);
    // Most runs first, then the most recent run.
    let mut runs: Vec<(&Vec<String>, usize, i64)> = Vec::new();
    for t in &wins {
        match runs.iter_mut().find(|(s, _, _)| **s == t.sequence) {
            Some(r) => {
                r.1 += 1;
                r.2 = t.completed_ms;
            }
            None => runs.push((&t.sequence, 1, t.completed_ms)),
        }
    }
    crate::engine::sort::sort_by(&mut runs, |a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)));
    let (common, support, _) = runs[0];
    let mut proven = Map::new();
    for t in &wins {
        for a in &t.adaptations {
            let action = a["action"].as_str().unwrap_or_default();
            let target = a["target"].as_str().unwrap_or_default();
            let entry = proven.entry(format!("{action} {target}")).or_insert_with(
                || json!({ "action": action, "target": target, "successful_tides": 0 }),
            );
            entry["successful_tides"] = json!(entry["successful_tides"].as_u64().unwrap_or(0) + 1);
            if let Some(d) = a.get("details") {
                entry["details"] = d.clone();
            }
        }
    }
    let mut paths: Vec<String> = tides.iter().map(|t| t.path.clone()).collect();
    paths.sort();
    paths.dedup();
    Some(Pattern {
        common_sequence: common.clone(),
        sequence_support: share(support, wins.len()),
        proven_adaptations: Value::Object(proven),
        success_rate: share(wins.len(), tides.len()),
        successful_tides: wins.len(),
        completed_tides: tides.len(),
        paths,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn tide(path: &str, seq: &[&str], adaptations: Value, outcome: &str, at: i64) -> Completed {
        Completed {
            path: path.into(),
            sequence: names(seq),
            adaptations: adaptations.as_array().cloned().unwrap_or_default(),
            outcome: outcome.into(),
            completed_ms: at,
        }
    }

    #[test]
    fn success_creates_a_pattern_and_repeated_failures_revise_the_path() {
        assert_eq!(
            next_action("success", &names(&["a"]), Some("failed"), &names(&["a"])).action,
            "create_pattern"
        );
        assert_eq!(next_action("partial", &[], None, &[]).action, "retry_tide");
        assert_eq!(
            next_action("failed", &names(&["a"]), None, &[]).action,
            "retry_tide"
        );
        assert_eq!(
            next_action("failed", &names(&["a"]), Some("partial"), &names(&["b"])).action,
            "retry_tide"
        );
        // After a success, a failure is a new problem, not a repeated one.
        assert_eq!(
            next_action("failed", &names(&["a"]), Some("success"), &names(&["a"])).action,
            "retry_tide"
        );
        let n = next_action(
            "partial",
            &names(&["a", "c"]),
            Some("failed"),
            &names(&["c", "a"]),
        );
        assert_eq!(n.action, "revise_path");
        assert_eq!(n.repeated, names(&["a", "c"]));
        assert!(n.reason.starts_with("a, c failed"));
    }

    #[test]
    fn no_pattern_without_a_success() {
        assert!(derive(&[tide("p", &["a"], json!([]), "failed", 1)]).is_none());
        assert!(derive(&[]).is_none());
    }

    #[test]
    fn patterns_take_the_most_common_successful_sequence_and_count_adaptations() {
        let auth = json!([{"action": "insert", "target": "auth", "details": {"after": "db"}}]);
        let tides = [
            tide("api", &["env", "db", "api"], json!([]), "partial", 1),
            tide(
                "api",
                &["env", "db", "auth", "api"],
                auth.clone(),
                "success",
                2,
            ),
            tide("api-2", &["env", "db", "api"], json!([]), "success", 3),
            tide("api-2", &["env", "db", "auth", "api"], auth, "success", 4),
            tide(
                "api-2",
                &["db"],
                json!([{"action": "remove", "target": "env"}]),
                "failed",
                5,
            ),
        ];
        let p = derive(&tides).unwrap();
        assert_eq!(p.common_sequence, names(&["env", "db", "auth", "api"]));
        assert_eq!(p.sequence_support, 0.6667);
        assert_eq!(p.success_rate, 0.6);
        assert_eq!((p.successful_tides, p.completed_tides), (3, 5));
        assert_eq!(p.paths, names(&["api", "api-2"]));
        assert_eq!(
            p.proven_adaptations,
            json!({"insert auth": {"action": "insert", "target": "auth", "details": {"after": "db"}, "successful_tides": 2}})
        );
    }

    #[test]
    fn equally_common_sequences_go_to_the_most_recent() {
        let tides = [
            tide("p", &["a", "b"], json!([]), "success", 1),
            tide("p", &["b", "a"], json!([]), "success", 2),
        ];
        assert_eq!(derive(&tides).unwrap().common_sequence, names(&["b", "a"]));
    }
}
