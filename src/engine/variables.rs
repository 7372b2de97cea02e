//! Template variables: the `variables_schema` keyed by dotted paths, `default_values` with dotted
//! keys, the merge of defaults, context and caller variables, and validation with one message per
//! failing field.
//!
//! Merge order, later wins: the caller's built-in defaults (`process_template`'s agent: Kim
//! Henderson, Travel Consultant, Somo Travel) < the template's `default_values` < context (`agent`
//! from `agent_info`, `session`, `current_date`) < the caller's `variables`; then the schema's
//! `default`s fill what is still missing. Objects merge key by key; any other value replaces what
//! was there. So a template that declares `agent.title` signs with it unless the caller says
//! otherwise.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The type a variable must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VarType {
    /// Text.
    String,
    /// A JSON number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// Text holding an ISO date (`YYYY-MM-DD`) or date-time.
    Date,
    /// A JSON object.
    Object,
    /// A JSON list.
    Array,
}

/// Extra format rules for text values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `name@domain.tld`.
    Email,
    /// Digits with optional `+`, spaces, dots, dashes and parentheses; 7 to 15 digits.
    Phone,
    /// A number, or text such as `$1,234.50` or `1234.5 EUR`.
    Currency,
    /// `YYYY-MM-DD`, a real calendar date.
    DateIso,
    /// `HH:MM`, `HH:MM:SS` (24-hour) or `h:mm AM`.
    Time,
}

/// The rules of one variable.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VarSpec {
    /// Required type.
    #[serde(rename = "type")]
    pub kind: VarType,
    /// The variable must be present (after defaults).
    #[serde(default)]
    pub required: bool,
    /// Used when the variable is missing.
    #[serde(default)]
    pub default: Option<Value>,
    /// Shown in listings.
    #[serde(default)]
    pub description: Option<String>,
    /// Allowed values.
    #[serde(default, rename = "enum")]
    pub allowed: Option<Vec<Value>>,
    /// Smallest allowed number.
    #[serde(default)]
    pub minimum: Option<f64>,
    /// Largest allowed number.
    #[serde(default)]
    pub maximum: Option<f64>,
    /// A regular expression text values must match.
    #[serde(default)]
    pub pattern: Option<String>,
    /// A text format.
    #[serde(default)]
    pub format: Option<Format>,
}

/// A parsed `variables_schema`: dotted path → rules.
pub type Schema = BTreeMap<String, VarSpec>;

/// Reads a `variables_schema` object; every problem is reported with its path.
pub fn parse_schema(v: &Value) -> Result<Schema, Vec<String>> {
    let Value::Object(map) = v else {
        return Err(vec![
            "variables_schema must be an object of path → rules".into()
        ]);
    };
    let mut out = Schema::new();
    let mut errors = Vec::new();
    for (path, rules) in map {
        if !valid_path(path) {
            errors.push(format!(
                "variables_schema key {path:?} is not a dotted path like client.name (at most {MAX_PATH_PARTS} parts)"
            ));
            continue;
        }
        match VarSpec::deserialize(rules) {
            Ok(spec) => {
                if let Some(p) = &spec.pattern {
                    if let Err(e) = Regex::new(p) {
                        errors.push(format!("variables_schema.{path}.pattern is not a valid regular expression: {e}"));
                    }
                }
                if let (Some(min), Some(max)) = (spec.minimum, spec.maximum) {
                    if min > max {
                        errors.push(format!(
                            "variables_schema.{path}: minimum {min} is above maximum {max}"
                        ));
                    }
                }
                out.insert(path.clone(), spec);
            }
            Err(e) => errors.push(format!("variables_schema.{path}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Most parts a dotted path may have. Each part is a level of nesting in the merged variables, and
/// nested values are copied, compared and freed recursively: a path of thousands of parts would
/// overflow the Worker's stack.
pub const MAX_PATH_PARTS: usize = 32;

/// Whether `p` is a dotted variable path (`client.name`, `trip.travelers.adults`) of at most
/// [`MAX_PATH_PARTS`] parts.
pub fn valid_path(p: &str) -> bool {
    !p.is_empty()
        && p.split('.').count() <= MAX_PATH_PARTS
        && p.split('.').all(|seg| {
            !seg.is_empty()
                && seg
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        })
}

/// The value at a dotted path.
pub fn get_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, seg| cur.get(seg))
}

/// Sets the value at a dotted path, creating objects on the way (a non-object in the way is replaced).
pub fn set_path(v: &mut Value, path: &str, value: Value) {
    let mut cur = v;
    let mut segs = path.split('.').peekable();
    while let Some(seg) = segs.next() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(map) = cur else { return };
        if segs.peek().is_none() {
            map.insert(seg.to_string(), value);
            return;
        }
        cur = map
            .entry(seg.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// Merges `top` over `base`: objects key by key, anything else replaced.
pub fn deep_merge(base: &mut Value, top: &Value) {
    match (base, top) {
        (Value::Object(b), Value::Object(t)) => {
            for (k, v) in t {
                match b.get_mut(k) {
                    Some(slot) => deep_merge(slot, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// Merges `value` into `root` at a dotted path: objects key by key, as [`deep_merge`].
fn merge_at(root: &mut Value, path: &str, value: &Value) {
    let mut cur = root;
    for seg in path.split('.') {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(map) = cur else { return };
        cur = map.entry(seg.to_string()).or_insert(Value::Null);
    }
    if cur.is_null() {
        *cur = value.clone();
    } else {
        deep_merge(cur, value);
    }
}

/// Builds the variables a template sees, without built-in defaults (see the module docs for the
/// order).
pub fn merge(
    defaults: &Map<String, Value>,
    schema: &Schema,
    context: &Value,
    variables: &Value,
) -> Value {
    merge_over(
        Value::Object(Map::new()),
        defaults,
        schema,
        context,
        variables,
    )
}

/// Builds the variables a template sees over `builtins`, the caller's own defaults, which the
/// template's `default_values` override (see the module docs for the order).
pub fn merge_over(
    builtins: Value,
    defaults: &Map<String, Value>,
    schema: &Schema,
    context: &Value,
    variables: &Value,
) -> Value {
    let mut out = builtins;
    // Keys are checked when a template is saved; a row saved before paths were limited could
    // still hold one thousands of parts long, which would nest the variables deeper than the
    // stack can free. Such a default is left out.
    for (path, v) in defaults
        .iter()
        .filter(|(p, _)| p.split('.').count() <= MAX_PATH_PARTS)
    {
        merge_at(&mut out, path, v);
    }
    deep_merge(&mut out, context);
    deep_merge(&mut out, variables);
    for (path, spec) in schema {
        if let (Some(d), None) = (&spec.default, get_path(&out, path)) {
            set_path(&mut out, path, d.clone());
        }
    }
    out
}

fn type_ok(kind: VarType, v: &Value) -> bool {
    match kind {
        VarType::String => v.is_string(),
        VarType::Number => v.is_number(),
        VarType::Boolean => v.is_boolean(),
        VarType::Date => v.as_str().is_some_and(|s| {
            chrono::NaiveDate::parse_from_str(s.get(..10).unwrap_or(s), "%Y-%m-%d").is_ok()
        }),
        VarType::Object => v.is_object(),
        VarType::Array => v.is_array(),
    }
}

fn format_ok(f: Format, s: &str) -> bool {
    match f {
        Format::Email => {
            let mut parts = s.split('@');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(local), Some(domain), None) => {
                    !local.is_empty()
                        && !s.contains(char::is_whitespace)
                        && domain.contains('.')
                        && !domain.starts_with('.')
                        && !domain.ends_with('.')
                }
                _ => false,
            }
        }
        Format::Phone => {
            let digits = s.chars().filter(char::is_ascii_digit).count();
            (7..=15).contains(&digits)
                && s.chars()
                    .all(|c| c.is_ascii_digit() || " +-().".contains(c))
        }
        Format::Currency => {
            let cleaned: String = s
                .chars()
                .filter(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
                .collect();
            !cleaned.is_empty() && cleaned.parse::<f64>().is_ok()
        }
        Format::DateIso => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        Format::Time => ["%H:%M", "%H:%M:%S", "%I:%M %p", "%l:%M %p"]
            .iter()
            .any(|f| chrono::NaiveTime::parse_from_str(s.trim(), f).is_ok()),
    }
}

/// Checks merged variables against the schema: one message per failing field, naming the path, the
/// rule and what was given.
pub fn validate(vars: &Value, schema: &Schema) -> Vec<String> {
    let mut errors = Vec::new();
    for (path, spec) in schema {
        let Some(v) = get_path(vars, path).filter(|v| !v.is_null()) else {
            if spec.required {
                errors.push(format!(
                    "{path} is required{}",
                    spec.description
                        .as_ref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                ));
            }
            continue;
        };
        let shown = crate::engine::expr::to_text(v);
        if !type_ok(spec.kind, v) {
            errors.push(format!(
                "{path} must be of type {}, got {v}",
                type_label(spec.kind)
            ));
            continue;
        }
        if let Some(allowed) = &spec.allowed {
            if !allowed.contains(v) {
                let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
                errors.push(format!(
                    "{path} must be one of {}, got {v}",
                    list.join(", ")
                ));
            }
        }
        if let Some(n) = v.as_f64() {
            if spec.minimum.is_some_and(|m| n < m) {
                errors.push(format!(
                    "{path} must be at least {}, got {shown}",
                    spec.minimum.unwrap_or_default()
                ));
            }
            if spec.maximum.is_some_and(|m| n > m) {
                errors.push(format!(
                    "{path} must be at most {}, got {shown}",
                    spec.maximum.unwrap_or_default()
                ));
            }
        }
        if let Some(s) = v.as_str() {
            if let Some(p) = &spec.pattern {
                if !matches_pattern(p, s) {
                    errors.push(format!("{path} must match the pattern {p}, got {s:?}"));
                }
            }
            if let Some(f) = spec.format {
                if !format_ok(f, s) {
                    errors.push(format!(
                        "{path} must be in {} format, got {s:?}",
                        format_name(f)
                    ));
                }
            }
        }
    }
    errors
}

/// Most compiled `pattern` rules kept between calls; past it the cache starts again empty, so a
/// caller sending ever new patterns costs memory for at most this many.
const PATTERN_CACHE: usize = 64;

thread_local! {
    /// Compiled `pattern` rules by their text: compiling a regular expression costs far more than
    /// matching one, and the same schema is validated on every call of its template.
    static PATTERNS: RefCell<HashMap<String, Regex>> = RefCell::new(HashMap::new());
}

/// Whether `s` matches the regular expression `pattern` (an invalid pattern matches nothing; the
/// schema check refuses one when the template is saved).
fn matches_pattern(pattern: &str, s: &str) -> bool {
    PATTERNS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(re) = cache.get(pattern) {
            return re.is_match(s);
        }
        let Ok(re) = Regex::new(pattern) else {
            return false;
        };
        let found = re.is_match(s);
        if cache.len() >= PATTERN_CACHE {
            cache.clear();
        }
        cache.insert(pattern.to_string(), re);
        found
    })
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Email => "email",
        Format::Phone => "phone",
        Format::Currency => "currency",
        Format::DateIso => "date-iso",
        Format::Time => "time",
    }
}

fn type_label(k: VarType) -> &'static str {
    match k {
        VarType::String => "string",
        VarType::Number => "number",
        VarType::Boolean => "boolean",
        VarType::Date => "date (YYYY-MM-DD)",
        VarType::Object => "object",
        VarType::Array => "array",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        parse_schema(&json!({
            "client.name": { "type": "string", "required": true },
            "client.tier": { "type": "string", "enum": ["standard", "vip"], "default": "standard" },
            "client.email": { "type": "string", "format": "email" },
            "trip.travelers.adults": { "type": "number", "required": true, "minimum": 1, "maximum": 9 },
            "trip.departure_date": { "type": "date", "format": "date-iso" },
            "agent.phone": { "type": "string", "format": "phone" },
            "code": { "type": "string", "pattern": "^[A-Z]{3}$" },
            "activities": { "type": "array" }
        }))
        .unwrap()
    }

    #[test]
    fn merge_order_is_defaults_context_variables_then_schema_defaults() {
        let defaults =
            json!({ "agent.name": "Kim", "agent.title": "Consultant", "client.tier": "vip" });
        let context = json!({ "agent": { "name": "Alex" }, "current_date": "2025-06-01" });
        let vars = json!({ "client": { "name": "Ana" } });
        let merged = merge(defaults.as_object().unwrap(), &schema(), &context, &vars);
        assert_eq!(
            merged["agent"],
            json!({ "name": "Alex", "title": "Consultant" })
        );
        assert_eq!(merged["client"], json!({ "name": "Ana", "tier": "vip" }));
        let merged = merge(&Map::new(), &schema(), &json!({}), &vars);
        assert_eq!(
            merged["client"]["tier"], "standard",
            "schema default fills a missing value"
        );
    }

    #[test]
    fn template_defaults_win_over_builtins_and_lose_to_the_caller() {
        let builtins = json!({ "agent": { "name": "Kim Henderson", "title": "Travel Consultant", "agency": "Somo Travel" } });
        let defaults =
            json!({ "agent.title": "Senior Travel Consultant", "support": { "phone": "1" } });
        let defaults = defaults.as_object().unwrap();
        let merged = merge_over(
            builtins.clone(),
            defaults,
            &Schema::new(),
            &json!({}),
            &json!({}),
        );
        assert_eq!(
            merged["agent"],
            json!({ "name": "Kim Henderson", "title": "Senior Travel Consultant", "agency": "Somo Travel" })
        );
        assert_eq!(merged["support"], json!({ "phone": "1" }));
        let context = json!({ "agent": { "title": "Director" } });
        let merged = merge_over(builtins, defaults, &Schema::new(), &context, &json!({}));
        assert_eq!(
            merged["agent"]["title"], "Director",
            "the caller's agent_info wins"
        );
    }

    #[test]
    fn every_failing_field_is_named_with_its_rule() {
        let vars = json!({
            "client": { "email": "not-an-email", "tier": "gold" },
            "trip": { "travelers": { "adults": 0 }, "departure_date": "2025-02-30" },
            "agent": { "phone": "call me" },
            "code": "abc",
            "activities": "none"
        });
        let errors = validate(&vars, &schema()).join("\n");
        for expected in [
            "client.name is required",
            "client.email must be in email format",
            "client.tier must be one of \"standard\", \"vip\", got \"gold\"",
            "trip.travelers.adults must be at least 1, got 0",
            "trip.departure_date must be of type date",
            "agent.phone must be in phone format",
            "code must match the pattern ^[A-Z]{3}$",
            "activities must be of type array",
        ] {
            assert!(
                errors.contains(expected),
                "missing {expected:?} in\n{errors}"
            );
        }
        let good = json!({
            "client": { "name": "Ana", "email": "ana@example.com", "tier": "vip" },
            "trip": { "travelers": { "adults": 2 }, "departure_date": "2024-02-29" },
            "agent": { "phone": "+1 (555) 010-0100" }, "code": "ABC", "activities": []
        });
        assert_eq!(validate(&good, &schema()), Vec::<String>::new());
    }

    #[test]
    fn patterns_match_the_same_when_compiled_once_and_after_the_cache_fills() {
        let check = |pattern: &str, value: &str| {
            let schema =
                parse_schema(&json!({ "code": { "type": "string", "pattern": pattern } })).unwrap();
            validate(&json!({ "code": value }), &schema).is_empty()
        };
        for _ in 0..2 {
            assert!(check("^[A-Z]{3}$", "ABC"));
            assert!(!check("^[A-Z]{3}$", "abc"));
        }
        // More distinct patterns than the cache keeps, then the first again.
        for n in 0..PATTERN_CACHE + 5 {
            assert!(check(&format!("^x{{{n}}}$"), &"x".repeat(n)));
        }
        assert!(!check("^[A-Z]{3}$", "ABCD"));
        assert!(
            !matches_pattern("(", "("),
            "an invalid pattern matches nothing"
        );
    }

    #[test]
    fn bad_schemas_are_reported_per_key() {
        let e = parse_schema(&json!({
            "ok": { "type": "string" },
            "bad type": { "type": "string" },
            "x": { "type": "text" },
            "y": { "type": "string", "pattern": "(" },
            "z": { "type": "number", "minimum": 5, "maximum": 1 },
            "w": { "type": "string", "colour": "red" }
        }))
        .unwrap_err()
        .join("\n");
        assert!(e.contains("\"bad type\" is not a dotted path"), "{e}");
        assert!(e.contains("variables_schema.x:"), "{e}");
        assert!(e.contains("variables_schema.y.pattern"), "{e}");
        assert!(e.contains("minimum 5 is above maximum 1"), "{e}");
        assert!(
            e.contains("variables_schema.w:") && e.contains("colour"),
            "{e}"
        );
    }

    #[test]
    fn paths_have_at_most_32_parts() {
        let ok = vec!["a"; MAX_PATH_PARTS].join(".");
        let deep = vec!["a"; 10_000].join(".");
        assert!(valid_path(&ok));
        assert!(!valid_path(&deep));
        let e = parse_schema(&json!({ deep: { "type": "string" } }))
            .unwrap_err()
            .join("\n");
        assert!(e.contains("at most 32 parts"), "{}", &e[e.len() - 80..]);
    }

    #[test]
    fn a_stored_default_deeper_than_32_parts_is_left_out() {
        let deep = vec!["a"; 10_000].join(".");
        let defaults = json!({ deep: 1, "b.c": 2 });
        let merged = merge(
            defaults.as_object().unwrap(),
            &Schema::new(),
            &json!({}),
            &json!({}),
        );
        assert_eq!(merged, json!({ "b": { "c": 2 } }));
    }

    #[test]
    fn set_path_creates_and_replaces() {
        let mut v = json!({ "a": 1 });
        set_path(&mut v, "a.b.c", json!(2));
        assert_eq!(v, json!({ "a": { "b": { "c": 2 } } }));
        assert_eq!(get_path(&v, "a.b.c"), Some(&json!(2)));
        assert_eq!(get_path(&v, "a.x"), None);
    }
}
