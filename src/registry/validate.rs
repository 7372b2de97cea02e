//! JSON Schema (2020-12) validation of tool arguments and results, reporting every failing field
//! with its rule: the registry's side of [`crate::engine::schema`], which does the work.
//!
//! Why not a general validator (`boon`, `jsonschema`): our schemas use a small set of keywords, and
//! a general one brings `regex` with every Unicode table, `url` and `idna`: a fifth of the wasm
//! (docs/decisions.md, "A validator of our own"). No remote schema is ever fetched.

use serde_json::Value;

use crate::engine::schema::Schema;
use crate::error::{Error, Result};

/// One compiled schema.
pub struct Validator {
    schema: Schema,
}

impl Validator {
    /// Compiles a schema document; `name` only labels errors.
    pub fn new(name: &str, schema: Value) -> Result<Self> {
        let schema = Schema::compile(&schema)
            .map_err(|e| Error::Internal(format!("schema of {name} does not compile: {e}")))?;
        Ok(Validator { schema })
    }

    /// Validates `value`; on failure returns one line per failing leaf rule, `at <pointer>: <rule>`.
    /// Formats are checked, not just annotations: an employee id must be a UUID (seed 002).
    pub fn check(&self, value: &Value) -> std::result::Result<(), Vec<String>> {
        self.schema.validate(value).map_err(|mut lines| {
            lines.dedup();
            lines
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_each_failing_field() {
        let v = Validator::new(
            "t",
            json!({
                "type": "object",
                "properties": { "a": {"type": "string", "maxLength": 3}, "b": {"type": "integer"} },
                "required": ["a", "b"],
                "additionalProperties": false
            }),
        )
        .unwrap();
        assert!(v.check(&json!({"a": "abc", "b": 1})).is_ok());
        let p = v
            .check(&json!({"a": "abcd", "b": "x", "c": true}))
            .unwrap_err();
        let all = p.join("\n");
        assert!(all.contains("at /a"), "{all}");
        assert!(all.contains("at /b"), "{all}");
        assert!(all.contains("'c'") || all.contains("\"c\""), "{all}");
        let p = v.check(&json!({})).unwrap_err().join("\n");
        assert!(p.contains("missing"), "{p}");
    }

    #[test]
    fn remote_references_are_never_fetched() {
        let v = Validator::new("t", json!({"$ref": "https://example.com/schema.json"}));
        assert!(v.is_err());
    }
}
