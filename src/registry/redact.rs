//! What events and logs may show of a call: sensitive values replaced by [`HIDDEN`].
//!
//! A tool's schemas say what is sensitive: a top-level input property or any output property
//! (at any depth, in any branch or `$defs` entry of the output schema) marked `"x-sensitive": true`.
//! Redaction then works by name and by value:
//!
//! - by name: wherever a property of a sensitive name appears in the shown value, at any depth,
//!   its value is replaced (a name sensitive in one branch of the schema is hidden in all of them:
//!   hiding too much is safe, showing too much is not);
//! - by value: the hidden values (and the call's sensitive arguments) are also cut out of every
//!   string, so a summary such as "from $120,000.00 to $250,000.00" or a message repeating the
//!   new salary shows `*** (Hidden)` instead. Numbers are matched however they are written (`250000`,
//!   `250,000`, `$250,000.00`); strings of at least [`MIN_SCRUBBED_CHARS`] characters literally.
//!
//! The work is linear in the size of the value (one scan for numbers, one regex of literal
//! alternatives for strings).

use std::collections::HashSet;

use serde_json::Value;

/// What events show instead of a sensitive value.
pub const HIDDEN: &str = "*** (Hidden)";

/// Sensitive strings shorter than this are hidden where they are a property's value but not cut
/// out of text, where they would match almost anything.
pub const MIN_SCRUBBED_CHARS: usize = 3;

/// The sensitive parts of one tool's schemas.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Sensitive {
    /// Top-level input properties marked sensitive.
    inputs: Vec<String>,
    /// Property names marked sensitive anywhere in the output schema, plus the inputs' names (an
    /// output that echoes an argument hides it too).
    names: HashSet<String>,
}

impl Sensitive {
    /// Reads the markers of an input schema and an optional output schema.
    pub fn from_schemas(input: &Value, output: Option<&Value>) -> Self {
        let inputs: Vec<String> = input
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .filter(|(_, rule)| is_marked(rule))
                    .map(|(name, _)| name.clone())
                    .collect()
            })
            .unwrap_or_default();
        let mut names: HashSet<String> = inputs.iter().cloned().collect();
        if let Some(schema) = output {
            marked_names(schema, &mut names);
        }
        Sensitive { inputs, names }
    }

    /// Whether anything is sensitive.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The arguments with every sensitive top-level argument replaced.
    pub fn redact_args(&self, args: &Value) -> Value {
        let mut shown = args.clone();
        if let Some(obj) = shown.as_object_mut() {
            for name in &self.inputs {
                if let Some(v) = obj.get_mut(name) {
                    *v = Value::String(HIDDEN.into());
                }
            }
        }
        shown
    }

    /// `value` (a `CallToolResult`, a structured result, an error text: any JSON) as events may
    /// show it for a call with `args`: sensitive properties replaced, and their values (and the
    /// sensitive arguments' values) cut out of every string.
    pub fn redact_output(&self, args: &Value, value: &Value) -> Value {
        if self.is_empty() {
            return value.clone();
        }
        let mut secrets = Secrets::default();
        if let Some(obj) = args.as_object() {
            for name in &self.inputs {
                if let Some(v) = obj.get(name) {
                    secrets.collect(v);
                }
            }
        }
        let mut shown = value.clone();
        self.hide_by_name(&mut shown, &mut secrets);
        // The text block that is the structured result's JSON is printed again from the redacted
        // structure, so it stays JSON.
        if let (Some(before), Some(after)) = (
            value.get("structuredContent"),
            shown.get("structuredContent"),
        ) {
            if let (Ok(old), Ok(new)) =
                (serde_json::to_string(before), serde_json::to_string(after))
            {
                if let Some(blocks) = shown.get_mut("content").and_then(Value::as_array_mut) {
                    for b in blocks {
                        if b.get("text").and_then(Value::as_str) == Some(old.as_str()) {
                            b["text"] = Value::String(new.clone());
                        }
                    }
                }
            }
        }
        if !secrets.is_empty() {
            let scrubber = secrets.scrubber();
            scrub_strings(&mut shown, &scrubber);
        }
        shown
    }

    fn hide_by_name(&self, v: &mut Value, secrets: &mut Secrets) {
        match v {
            Value::Object(map) => {
                for (k, child) in map.iter_mut() {
                    if self.names.contains(k) {
                        secrets.collect(child);
                        *child = Value::String(HIDDEN.into());
                    } else {
                        self.hide_by_name(child, secrets);
                    }
                }
            }
            Value::Array(items) => {
                for child in items {
                    self.hide_by_name(child, secrets);
                }
            }
            _ => {}
        }
    }
}

fn is_marked(rule: &Value) -> bool {
    rule.get("x-sensitive") == Some(&Value::Bool(true))
}

/// Every property name marked sensitive anywhere in `schema` (properties, branches, `$defs`).
fn marked_names(schema: &Value, out: &mut HashSet<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(props) = map.get("properties").and_then(Value::as_object) {
                for (name, rule) in props {
                    if is_marked(rule) {
                        out.insert(name.clone());
                    }
                }
            }
            for child in map.values() {
                marked_names(child, out);
            }
        }
        Value::Array(items) => {
            for child in items {
                marked_names(child, out);
            }
        }
        _ => {}
    }
}

/// The values to cut out of text.
#[derive(Debug, Default)]
struct Secrets {
    /// In whole cents, so `250000`, `250000.0` and `$250,000.00` are one value.
    numbers: HashSet<i64>,
    strings: Vec<String>,
}

impl Secrets {
    fn is_empty(&self) -> bool {
        self.numbers.is_empty() && self.strings.is_empty()
    }

    fn collect(&mut self, v: &Value) {
        match v {
            Value::Number(n) => {
                if let Some(f) = n.as_f64() {
                    self.numbers.insert(cents(f));
                }
            }
            Value::String(s) if s != HIDDEN => {
                if let Some(f) = number_in(s) {
                    self.numbers.insert(cents(f));
                }
                if s.chars().count() >= MIN_SCRUBBED_CHARS {
                    self.strings.push(s.clone());
                }
            }
            Value::Array(items) => items.iter().for_each(|i| self.collect(i)),
            Value::Object(map) => map.values().for_each(|i| self.collect(i)),
            _ => {}
        }
    }

    fn scrubber(mut self) -> Scrubber {
        crate::engine::sort::sort_by_key(&mut self.strings, |s| std::cmp::Reverse(s.len()));
        self.strings.dedup();
        let literal = if self.strings.is_empty() {
            None
        } else {
            let alternatives: Vec<String> = self.strings.iter().map(|s| regex::escape(s)).collect();
            // A pattern too large to compile hides every string instead: never show too much.
            Some(regex::Regex::new(&alternatives.join("|")).map_err(|_| ()))
        };
        Scrubber {
            numbers: self.numbers,
            literal,
        }
    }
}

fn cents(f: f64) -> i64 {
    (f * 100.0).round() as i64
}

/// The number a string holds, written plainly or as money (`$1,234.50`).
fn number_in(s: &str) -> Option<f64> {
    let t = s.trim().trim_start_matches('$').replace(',', "");
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return None;
    }
    t.parse().ok()
}

struct Scrubber {
    numbers: HashSet<i64>,
    literal: Option<std::result::Result<regex::Regex, ()>>,
}

impl Scrubber {
    fn scrub(&self, s: &str) -> String {
        let s = match &self.literal {
            None => std::borrow::Cow::Borrowed(s),
            Some(Ok(re)) => re.replace_all(s, HIDDEN),
            Some(Err(())) => return HIDDEN.into(),
        };
        if self.numbers.is_empty() {
            return s.into_owned();
        }
        self.scrub_numbers(&s)
    }

    /// Replaces every run of digits, commas and points whose number is a secret.
    fn scrub_numbers(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut run_start: Option<usize> = None;
        let numeric = |c: char| c.is_ascii_digit() || c == ',' || c == '.';
        for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ' '))) {
            match (run_start, numeric(c) && i < s.len()) {
                (None, true) => run_start = Some(i),
                (None, false) => {
                    if i < s.len() {
                        out.push(c);
                    }
                }
                (Some(_), true) => {}
                (Some(start), false) => {
                    self.push_run(&s[start..i], &mut out);
                    run_start = None;
                    if i < s.len() {
                        out.push(c);
                    }
                }
            }
        }
        out
    }

    fn push_run(&self, run: &str, out: &mut String) {
        // A run may end in punctuation (`$250,000.00.`): that is not part of the number.
        let body = run.trim_end_matches([',', '.']);
        let tail = &run[body.len()..];
        let plain = body.replace(',', "");
        let secret = body.bytes().any(|b| b.is_ascii_digit())
            && plain
                .parse::<f64>()
                .is_ok_and(|f| self.numbers.contains(&cents(f)));
        out.push_str(if secret { HIDDEN } else { body });
        out.push_str(tail);
    }
}

fn scrub_strings(v: &mut Value, scrubber: &Scrubber) {
    match v {
        Value::String(s) if s != HIDDEN => *s = scrubber.scrub(s),
        Value::Array(items) => items.iter_mut().for_each(|i| scrub_strings(i, scrubber)),
        Value::Object(map) => map.values_mut().for_each(|i| scrub_strings(i, scrubber)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn salary_tool() -> Sensitive {
        Sensitive::from_schemas(
            &json!({"type":"object","properties":{
                "employee_id":{"type":"string"},
                "new_salary":{"type":"number","x-sensitive":true}}}),
            Some(&json!({"oneOf":[{"properties":{"data":{"properties":{
                "newSalary":{"x-sensitive":true}}}}}],
                "$defs":{"C":{"properties":{"currentSalary":{"x-sensitive":true},"ssn":{"x-sensitive":true}}}}})),
        )
    }

    #[test]
    fn arguments_hide_only_the_marked_top_level_ones() {
        let s = salary_tool();
        assert_eq!(
            s.redact_args(&json!({"employee_id":"e1","new_salary":250000})),
            json!({"employee_id":"e1","new_salary":HIDDEN})
        );
    }

    #[test]
    fn outputs_hide_marked_names_everywhere_and_their_values_in_text() {
        let s = salary_tool();
        let structured = json!({"status":"pending_confirmation",
            "message":"Change the salary of Sarah Kim from $120,000.00 to $250,000.00 (effective on confirmation)?",
            "confirmationData":{"currentSalary":120000,"newSalary":250000,"employeeName":"Sarah Kim"}});
        let copy = serde_json::to_string(&structured).unwrap();
        let result = json!({"content":[{"type":"text","text":"The salary of Sarah Kim is now $250,000.00."},
            {"type":"text","text":copy}], "structuredContent":structured});
        let shown = s.redact_output(&json!({"new_salary":250000}), &result);
        let text = shown.to_string();
        for leak in ["250", "120,000", "120000"] {
            assert!(!text.contains(leak), "{leak} in {text}");
        }
        assert_eq!(
            shown["structuredContent"]["confirmationData"]["newSalary"],
            HIDDEN
        );
        assert_eq!(
            shown["structuredContent"]["confirmationData"]["employeeName"],
            "Sarah Kim"
        );
        assert_eq!(
            shown["content"][0]["text"],
            "The salary of Sarah Kim is now $*** (Hidden)."
        );
        let block: Value = serde_json::from_str(shown["content"][1]["text"].as_str().unwrap())
            .expect("the JSON block stays JSON");
        assert_eq!(block, shown["structuredContent"]);
    }

    #[test]
    fn an_argument_value_is_cut_from_text_even_when_no_output_names_it() {
        let s = salary_tool();
        let shown = s.redact_output(
            &json!({"new_salary": 987654}),
            &json!("at /new_salary: must be <= 10000000, but got 987654."),
        );
        assert_eq!(
            shown,
            json!("at /new_salary: must be <= 10000000, but got *** (Hidden).")
        );
    }

    #[test]
    fn strings_are_cut_literally_and_other_numbers_stay() {
        let s = salary_tool();
        let shown = s.redact_output(
            &json!({}),
            &json!({"rows":[{"ssn":"123-45-6789","age":41}],"note":"ssn 123-45-6789, 41 years, 2026-01-05"}),
        );
        assert_eq!(shown["rows"][0]["ssn"], HIDDEN);
        assert_eq!(shown["note"], "ssn *** (Hidden), 41 years, 2026-01-05");
    }

    #[test]
    fn a_tool_without_markers_shows_everything() {
        let s = Sensitive::from_schemas(&json!({"type":"object"}), None);
        assert!(s.is_empty());
        let v = json!({"salary": 1});
        assert_eq!(s.redact_output(&json!({}), &v), v);
    }
}
