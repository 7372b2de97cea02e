//! JSON Schema (2020-12) validation with `boon`, reporting every failing field with its rule.
//!
//! Why boon rather than `jsonschema`: both cover draft 2020-12, but `jsonschema` pulls in an HTTP
//! client feature set, `fancy-regex` and more; boon's dependencies are `regex`, `url` and small crates,
//! and it never fetches remote schemas unless a loader is installed (we install none). See docs/decisions.md.

use boon::{Compiler, SchemaIndex, Schemas, ValidationError};
use serde_json::Value;

use crate::error::{Error, Result};

/// One compiled schema.
pub struct Validator {
    schemas: Schemas,
    index: SchemaIndex,
}

impl Validator {
    /// Compiles a schema document; `name` only labels errors.
    pub fn new(name: &str, schema: Value) -> Result<Self> {
        let mut schemas = Schemas::new();
        let mut compiler = Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        // Formats are checked, not just annotations: an employee id must be a UUID (seed 002).
        compiler.enable_format_assertions();
        let url = format!("urn:mcp-edge:{}", name.replace("::", ":"));
        let broken = |e: boon::CompileError| {
            Error::Internal(format!("schema of {name} does not compile: {e}"))
        };
        compiler.add_resource(&url, schema).map_err(broken)?;
        let index = compiler.compile(&url, &mut schemas).map_err(broken)?;
        Ok(Validator { schemas, index })
    }

    /// Validates `value`; on failure returns one line per failing leaf rule, `at <pointer>: <rule>`.
    pub fn check(&self, value: &Value) -> std::result::Result<(), Vec<String>> {
        self.schemas.validate(value, self.index).map_err(|e| {
            let mut out = Vec::new();
            leaves(&e, &mut out);
            out.dedup();
            out
        })
    }
}

fn leaves(e: &ValidationError, out: &mut Vec<String>) {
    if e.causes.is_empty() {
        let at = e.instance_location.to_string();
        let at = if at.is_empty() { "/".to_string() } else { at };
        out.push(format!("at {at}: {}", e.kind));
    } else {
        for c in &e.causes {
            leaves(c, out);
        }
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
