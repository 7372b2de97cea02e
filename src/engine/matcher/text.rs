//! Text to terms: lower-cased alphanumeric words, stop words dropped, each reduced to a stem so
//! that "deploying", "deployed" and "deployment" meet in one posting list.
//!
//! The stemmer is deliberately light (a handful of English suffix rules, applied once, never below
//! a three-letter stem): over a catalog of a few thousand short descriptions, over-stemming costs
//! more precision than the recall it buys.

use std::collections::HashMap;
use std::sync::OnceLock;

/// Words too common to say anything about which context fits.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "but", "by", "can", "could", "do", "does", "doing", "for", "from", "get",
    "got", "had", "has", "have", "having", "he", "her", "here", "him", "his", "how", "i", "if",
    "in", "into", "is", "it", "its", "just", "me", "might", "more", "most", "my", "need", "needs",
    "no", "not", "now", "of", "on", "one", "or", "our", "out", "over", "please", "she", "should",
    "so", "some", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "too", "up", "us", "very", "want", "was", "we", "were", "what", "when", "where",
    "which", "while", "who", "why", "will", "with", "would", "you", "your",
];

/// Suffixes removed by [`stem`], longest first so `-ations` wins over `-s`.
const SUFFIXES: &[&str] = &[
    "ations", "ation", "ments", "ment", "ness", "ings", "ing", "ies", "ers", "er", "ed", "es",
    "ly", "s",
];

/// Reduces a lower-case word to its stem: the first matching suffix is cut when at least three
/// letters remain (`ies` becomes `y`; `es` only after a sibilant, else just the `s`); a doubled
/// final consonant left behind is undoubled (`planning` → `plann` → `plan`) and a final `e` of a
/// longer stem dropped, so `release`, `released` and `releasing` agree.
pub fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_string();
    }
    let mut out = word.to_string();
    for suffix in SUFFIXES {
        let Some(base) = word.strip_suffix(suffix) else {
            continue;
        };
        if base.len() < 3 || (*suffix == "s" && base.ends_with('s')) {
            continue;
        }
        out = base.to_string();
        match *suffix {
            "ies" => out.push('y'),
            "es" if !["s", "x", "z", "ch", "sh"]
                .iter()
                .any(|e| base.ends_with(e)) =>
            {
                out.push('e')
            }
            _ => {}
        }
        let b = out.as_bytes();
        let n = b.len();
        if n >= 4 && b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'l' | b's' | b'z' | b'e' | b'o') {
            out.pop();
        }
        break;
    }
    if out.len() > 4 && out.ends_with('e') {
        out.pop();
    }
    out
}

/// The synonym groups (`data/flowmind/synonyms.json`): words people use for the same thing, each
/// group searched as its first word, so a request saying "staff" finds a context that says
/// "employees" and "pentest" finds "penetration testing". Shipped data rather than a model: it
/// fits the Worker (a few kilobytes) and works offline.
const SYNONYMS: &str = include_str!("../../../data/flowmind/synonyms.json");

/// The synonym groups as `(word, group)` pairs, read from [`SYNONYMS`]; empty if the file does not
/// parse (a test rules that out).
pub fn synonym_groups() -> Vec<Vec<String>> {
    serde_json::from_str::<serde_json::Value>(SYNONYMS)
        .ok()
        .and_then(|v| v.get("groups").cloned())
        .and_then(|g| serde_json::from_value(g).ok())
        .unwrap_or_default()
}

/// Each stem of a synonym group's words mapped to the stem of the group's first word.
fn canonical() -> &'static HashMap<String, String> {
    static MAP: OnceLock<HashMap<String, String>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut map = HashMap::new();
        for group in synonym_groups() {
            let Some(first) = group.first() else { continue };
            let head = stem(&first.to_lowercase());
            for w in &group {
                let s = stem(&w.to_lowercase());
                if s != head {
                    map.insert(s, head.clone());
                }
            }
        }
        map
    })
}

/// The terms of `text`: words of letters and digits (anything else separates), lower-cased,
/// stop words and one-letter words dropped, stemmed, and a synonym replaced by its group's word.
pub fn terms(text: &str) -> Vec<String> {
    let synonyms = canonical();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() > 1 && !STOP_WORDS.contains(&w.as_str()))
        .map(|w| {
            let s = stem(&w);
            synonyms.get(&s).cloned().unwrap_or(s)
        })
        .collect()
}

/// The words of `text` that carry meaning (stop words removed, not stemmed), for the heuristic
/// "is this request too brief to match?".
pub fn content_words(text: &str) -> usize {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 1)
        .filter(|w| !STOP_WORDS.contains(&w.to_lowercase().as_str()))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflections_meet_in_one_stem() {
        for (a, b) in [
            ("deploying", "deployed"),
            ("incidents", "incident"),
            ("planning", "plan"),
            ("policies", "policy"),
            ("reviewers", "review"),
            ("communication", "communications"),
            ("databases", "database"),
            ("release", "releasing"),
            ("released", "releases"),
            ("issues", "issue"),
            ("boxes", "box"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
        assert_eq!(stem("planning"), "plan");
        assert_eq!(
            stem("process"),
            "process",
            "a final double s is not a plural"
        );
        assert_eq!(stem("bus"), "bus", "short words are kept");
        assert_eq!(stem("gdpr"), "gdpr");
        assert_eq!(stem("fall"), "fall");
    }

    #[test]
    fn terms_drop_noise_and_keep_digits_and_unicode() {
        assert_eq!(
            terms("The checkout API is throwing errors!"),
            vec!["checkout", "api", "throw", "error"]
        );
        assert_eq!(terms("Café: naïve résumé"), vec!["café", "naïve", "résumé"]);
        assert!(terms("a I to of").is_empty());
        assert_eq!(content_words("help me with this"), 1);
        assert_eq!(content_words("Production database outage"), 3);
    }

    #[test]
    fn synonyms_meet_in_their_groups_word() {
        assert_eq!(terms("staff"), terms("employees"));
        assert_eq!(
            terms("pentest our portal"),
            terms("penetration of our portal")
        );
        assert_eq!(
            terms("the server returns 502"),
            terms("the server returns errors")
        );
        assert_ne!(terms("budget"), terms("forecast"), "neighbours stay apart");
    }

    #[test]
    fn every_synonym_stem_belongs_to_one_group() {
        let groups = synonym_groups();
        assert!(groups.len() >= 50, "data/flowmind/synonyms.json parses");
        let mut owner: HashMap<String, usize> = HashMap::new();
        for (i, g) in groups.iter().enumerate() {
            assert!(g.len() >= 2, "group {i} has one word");
            for w in g {
                assert!(
                    !w.contains(char::is_whitespace) && w == &w.to_lowercase(),
                    "{w}: one lower-case word per entry"
                );
                assert!(!STOP_WORDS.contains(&w.as_str()), "{w} is a stop word");
                if let Some(j) = owner.insert(stem(w), i) {
                    assert_eq!(i, j, "{w} (stem {}) is in groups {j} and {i}", stem(w));
                }
            }
        }
    }
}
