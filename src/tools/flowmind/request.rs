//! A `field_request` call's arguments as matching and teaching read them. Its own module so that
//! the matcher (`field_request`) and the teacher (`teach`) both depend on it without depending on
//! each other.

use serde_json::{Map, Value};

/// How many matches a response lists unless `context_preferences.max_results` says otherwise.
pub const DEFAULT_RESULTS: usize = 5;

/// The parts of the arguments matching uses.
#[derive(Debug, Clone)]
pub struct Args {
    /// `query`.
    pub query: String,
    /// `extracted_variables`.
    pub variables: Map<String, Value>,
    /// `confidence_level`.
    pub confidence: f64,
    /// `context_preferences.type_filter`; empty for all types.
    pub types: Vec<String>,
    /// `context_preferences.max_results`.
    pub max_results: usize,
    /// `context_preferences.include_explanations`.
    pub explain: bool,
    /// `content_reference`, when given.
    pub content: Option<Value>,
}

impl Args {
    /// Reads arguments that passed [`super::validate::check`].
    pub fn read(args: &Value) -> Args {
        let prefs = args.get("context_preferences");
        Args {
            query: args["query"].as_str().unwrap_or_default().to_string(),
            variables: args
                .get("extracted_variables")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            confidence: args["confidence_level"].as_f64().unwrap_or(0.0),
            types: prefs
                .map(|p| crate::tools::strings(&p["type_filter"]))
                .unwrap_or_default(),
            max_results: prefs
                .and_then(|p| p.get("max_results"))
                .and_then(Value::as_f64)
                .map_or(DEFAULT_RESULTS, |n| n.clamp(1.0, 10.0) as usize),
            explain: prefs
                .and_then(|p| p.get("include_explanations"))
                .and_then(Value::as_bool)
                .unwrap_or(true),
            content: args.get("content_reference").cloned(),
        }
    }

    /// The extracted domain, when given.
    pub fn domain(&self) -> Option<&str> {
        self.variables.get("domain").and_then(Value::as_str)
    }

    /// Large content was referenced but not summarised.
    pub fn content_unprocessed(&self) -> bool {
        let Some(c) = &self.content else {
            return false;
        };
        c.get("has_large_content").and_then(Value::as_bool) == Some(true)
            && c.get("content_summary")
                .and_then(Value::as_str)
                .is_none_or(|s| s.trim().is_empty())
    }

    /// The text matched: the query, plus the content's summary and key entities when given.
    pub fn text(&self) -> String {
        let mut t = self.query.clone();
        if let Some(c) = &self.content {
            if let Some(s) = c.get("content_summary").and_then(Value::as_str) {
                t.push(' ');
                t.push_str(s);
            }
            for e in c
                .get("key_entities")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                t.push(' ');
                t.push_str(e);
            }
        }
        t
    }
}
