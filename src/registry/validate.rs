//! JSON Schema (2020-12) validation of tool arguments and results, reporting every failing field
//! with its rule: the registry's side of [`crate::engine::schema`], which does the work.
//!
//! Why not a general validator (`boon`, `jsonschema`): our schemas use a small set of keywords, and
//! a general one brings `regex` with every Unicode table, `url` and `idna`: a fifth of the wasm
//! (docs/decisions.md, "A validator of our own"). No remote schema is ever fetched.

use serde::de::DeserializeOwned;
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

/// A handler's arguments as its typed `Args` (`serde`, `deny_unknown_fields`), read after the
/// input schema has passed them: a field the struct does not know, or of another type, is a bad
/// call named as such rather than a value read as empty.
pub fn typed<T: DeserializeOwned>(tool: &str, args: Value) -> super::ToolResult<T> {
    serde_json::from_value(args).map_err(|e| {
        super::ToolError::invalid(format!(
            "Invalid arguments for tool {tool}: {e}. Fix the arguments to match the tool's inputSchema and call again."
        ))
    })
}

/// (Tests.) That an `Args` struct's fields (as its `Default` serializes them) are exactly the
/// `properties` of the input schema `schema`, so a renamed field fails `cargo test`.
#[cfg(test)]
pub fn assert_args_match<T: Default + serde::Serialize>(schema: &str) {
    let schema: Value = serde_json::from_str(schema).expect("the schema is JSON");
    let mut declared: Vec<&String> = schema["properties"]
        .as_object()
        .expect("the schema has properties")
        .keys()
        .collect();
    let fields = serde_json::to_value(T::default()).expect("Args serialize");
    let mut fields: Vec<&String> = fields
        .as_object()
        .expect("Args are a struct")
        .keys()
        .collect();
    declared.sort();
    fields.sort();
    assert_eq!(
        fields, declared,
        "the Args fields and the schema's properties"
    );
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
