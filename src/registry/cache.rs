//! The executor's result cache: which tools opt in, how a call's key is made, and how a stored
//! result comes back as a hit. The executor (`executor.rs`) does the KV reads and writes.
//!
//! A key names everything a cached result depends on: the tool id, the arguments as canonical
//! JSON (object keys sorted at every depth, so argument order never matters), the caller's user
//! and sorted roles for tools whose answers depend on who asks, and the tool's data generation
//! for tools whose data writes invalidate (a write bumps the generation, so older keys are never
//! read again and expire on their own). It is stored as a SHA-256, so no argument or user id
//! appears in KV key names.

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{Caller, ToolContext};
use crate::error::Result;

/// KV's shortest expiration: a TTL below it is refused by KV.
pub const MIN_TTL_SECS: u64 = 60;

/// The TTL most tools want: five minutes.
pub const DEFAULT_TTL_SECS: u64 = 300;

/// `params._meta` key of a `tools/call` that asks to skip the cache (value `"bypass"`), and the
/// `_meta` key of a cacheable tool's result that says what the cache did (`hit`, `miss`, `bypass`).
pub const META_KEY: &str = "mcp-edge/cache";

/// Whether a call's `params._meta` asks to skip the cache. An unknown directive is invalid
/// params, so a typo does not silently serve a cached result.
pub fn bypass_requested(meta: &Value) -> Result<bool> {
    match meta.get(META_KEY) {
        None => Ok(false),
        Some(v) if v == "bypass" => Ok(true),
        Some(other) => Err(crate::error::Error::InvalidParams(format!(
            "Invalid params: _meta[{META_KEY:?}] is {other}; the only value is \"bypass\" (run the tool instead of answering from the result cache); leave it out otherwise"
        ))),
    }
}

/// Reads the current generation of a tool's data (see [`CachePolicy::generation`]).
pub type Generation = for<'a> fn(&'a dyn ToolContext) -> LocalBoxFuture<'a, Result<i64>>;

/// How a read-only tool's results are cached. Only tools without side effects may have one (the
/// registry refuses others), since a hit skips the handler.
#[derive(Debug, Clone, Copy)]
pub struct CachePolicy {
    /// How long a result is served from the cache, in seconds (at least [`MIN_TTL_SECS`]).
    pub ttl_secs: u64,
    /// The result depends on who calls (row-level access, masking): the key includes the caller's
    /// user and roles, so nobody is served another caller's result.
    pub per_caller: bool,
    /// The generation of the data the tool reads, for tools whose data writes change: a write
    /// bumps it, which makes every earlier result unreachable at once.
    pub generation: Option<Generation>,
}

impl CachePolicy {
    /// A result that is the same for every caller, kept [`DEFAULT_TTL_SECS`].
    pub const SHARED: CachePolicy = CachePolicy {
        ttl_secs: DEFAULT_TTL_SECS,
        per_caller: false,
        generation: None,
    };
}

/// The JSON text of `value` with every object's keys sorted, at every depth: equal for equal
/// values whatever the key order (explicitly, not relying on serde_json's map type).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            crate::engine::sort::sort_by(&mut entries, |a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The KV key of a call: `result:<sha-256 hex>` of the tool id, the canonical arguments, the
/// caller (user and sorted roles) when given, and the generation when given.
pub fn key(
    tool_id: &str,
    args: &Value,
    caller: Option<&Caller>,
    generation: Option<i64>,
) -> String {
    let who = caller.map(|c| {
        let mut roles = c.roles.clone();
        roles.sort();
        roles.dedup();
        json!({ "user": c.user, "roles": roles })
    });
    let text = canonical_json(&json!({
        "tool": tool_id,
        "args": args,
        "caller": who,
        "generation": generation,
    }));
    let digest: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("result:{digest}")
}

/// Whether a result may be stored: not a tool error, and not an answer whose `status` says it
/// failed or waits for someone (`error`, `pending_confirmation`: the domain tools' union), which
/// the same call must not get again; other statuses (`success`, the travel tools' `ok`) are kept.
pub fn storable(result: &Value) -> bool {
    result.get("isError") != Some(&Value::Bool(true))
        && !matches!(
            result
                .pointer("/structuredContent/status")
                .and_then(Value::as_str),
            Some("error" | "pending_confirmation")
        )
}

/// What is stored for a result: the `CallToolResult` and whether its first text block is a
/// readable summary line (which a hit marks `(cached)` for the model). Stored as a JSON string:
/// KV's `put` of a map would store `{}` in workers-rs 0.8.
pub fn entry(result: &Value, summarized: bool) -> String {
    json!({ "result": result, "summarized": summarized }).to_string()
}

/// The result of a stored entry, marked as a hit; `None` when the entry is not one we wrote.
pub fn hit(stored: &str) -> Option<Value> {
    let entry: Value = serde_json::from_str(stored).ok()?;
    let mut result = entry.get("result")?.clone();
    if !result.is_object() {
        return None;
    }
    if entry["summarized"] == Value::Bool(true) {
        if let Some(Value::String(line)) = result.pointer_mut("/content/0/text") {
            line.push_str(" (cached)");
        }
    }
    mark(&mut result, "hit");
    Some(result)
}

/// Records in the result's `_meta` what the cache did for it (`hit`, `miss` or `bypass`).
pub fn mark(result: &mut Value, what: &str) {
    if let Some(obj) = result.as_object_mut() {
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Some(m) = meta.as_object_mut() {
            m.insert(META_KEY.to_string(), json!(what));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[{"d":1,"c":2}],"x":null}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":null,"y":[{"c":2,"d":1}]},"b":1}"#).unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":null,"y":[{"c":2,"d":1}]},"b":1}"#
        );
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            canonical_json(&json!(["b", "a"])),
            r#"["b","a"]"#,
            "arrays keep order"
        );
        assert_eq!(
            canonical_json(&json!({"k": "quote\"d"})),
            r#"{"k":"quote\"d"}"#
        );
    }

    #[test]
    fn keys_differ_by_tool_args_caller_roles_and_generation() {
        let args = json!({ "a": 1, "b": 2 });
        let base = key("t::x", &args, None, None);
        assert!(
            base.starts_with("result:") && base.len() == 7 + 64,
            "{base}"
        );
        assert_eq!(base, key("t::x", &json!({ "b": 2, "a": 1 }), None, None));
        assert_ne!(base, key("t::y", &args, None, None));
        assert_ne!(base, key("t::x", &json!({ "a": 1 }), None, None));
        let alice = Caller {
            user: Some("alice".into()),
            roles: vec!["hr-write".into(), "hr-read".into()],
        };
        let alice_sorted = Caller {
            user: Some("alice".into()),
            roles: vec!["hr-read".into(), "hr-write".into()],
        };
        let alice_less = Caller {
            user: Some("alice".into()),
            roles: vec!["hr-read".into()],
        };
        let bob = Caller {
            user: Some("bob".into()),
            roles: alice.roles.clone(),
        };
        let k = |c: &Caller, g| key("t::x", &args, Some(c), g);
        assert_eq!(k(&alice, Some(1)), k(&alice_sorted, Some(1)), "role order");
        assert_ne!(k(&alice, Some(1)), k(&alice_less, Some(1)));
        assert_ne!(k(&alice, Some(1)), k(&bob, Some(1)));
        assert_ne!(k(&alice, Some(1)), k(&alice, Some(2)));
        assert_ne!(
            k(&Caller::anonymous(), None),
            base,
            "scoped differs from shared"
        );
    }

    #[test]
    fn only_successes_are_stored() {
        assert!(storable(&json!({ "content": [] })));
        assert!(storable(
            &json!({ "structuredContent": { "status": "success" } })
        ));
        assert!(storable(&json!({ "structuredContent": { "flights": [] } })));
        assert!(storable(
            &json!({ "structuredContent": { "flights": [], "status": "ok" } })
        ));
        assert!(!storable(&json!({ "content": [], "isError": true })));
        assert!(!storable(
            &json!({ "structuredContent": { "status": "error" } })
        ));
        assert!(!storable(
            &json!({ "structuredContent": { "status": "pending_confirmation" } })
        ));
    }

    #[test]
    fn a_hit_is_flagged_and_a_summary_line_says_cached() {
        let result = json!({ "content": [{ "type": "text", "text": "3 employees." }, { "type": "text", "text": "{}" }], "structuredContent": { "status": "success" } });
        let h = hit(&entry(&result, true)).unwrap();
        assert_eq!(h["content"][0]["text"], "3 employees. (cached)");
        assert_eq!(h["content"][1]["text"], "{}");
        assert_eq!(h["_meta"][META_KEY], "hit");
        let plain = hit(&entry(
            &json!({ "content": [{ "type": "text", "text": "x" }] }),
            false,
        ))
        .unwrap();
        assert_eq!(plain["content"][0]["text"], "x");
        assert!(hit("{}").is_none());
        assert!(hit("not json").is_none());
        let mut r = json!({ "content": [], "_meta": { "other": 1 } });
        mark(&mut r, "miss");
        assert_eq!(r["_meta"], json!({ "other": 1, META_KEY: "miss" }));
    }
}
