//! Retried writes run once. A 2026-07-28 client whose response stream broke sends the same
//! request again; for a tool that is not read-only the first run's result is kept in D1
//! (`idempotent_calls`) under caller + tool + the request's idempotency key
//! (`_meta["mcp-edge/idempotencyKey"]`), or its canonical arguments when it has none, plus the
//! `requestState` it presented, and a retry within the window gets that result back instead of a
//! second run. A retry that arrives while the first run is still going is told so and changes
//! nothing.
//!
//! Only what succeeded is kept ([`succeeded`]): an error, or a confirmation that is pending,
//! denied or expired, changed nothing a retry could repeat, and replaying it would hand back a
//! dead `confirmationId` or a stale refusal for the whole window; such a claim is released and
//! the retry runs again.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::clock;
use crate::error::{Error, Result};
use crate::mcp::modern::META_IDEMPOTENCY_KEY;
use crate::registry::cache::canonical_json;
use crate::registry::{Platform, Statement};

/// How long a write's result answers its retries by default: `IDEMPOTENCY_WINDOW_SECONDS`, else
/// 10 minutes.
const WINDOW_MS: f64 = 10.0 * 60.0 * 1000.0;

/// `_meta` key of a result that answered a retry from the first run.
pub const REPLAYED_META: &str = "mcp-edge/idempotentReplay";

/// The dedup key of a write: who, which tool, which logical request, which round.
pub fn key(
    user: &str,
    tool: &str,
    meta: &serde_json::Map<String, Value>,
    args: &Value,
    request_state: Option<&Value>,
) -> Result<String> {
    let what = match meta.get(META_IDEMPOTENCY_KEY) {
        None => format!("args:{}", canonical_json(args)),
        Some(Value::String(k)) if !k.is_empty() && k.len() <= 255 => format!("key:{k}"),
        Some(_) => {
            return Err(Error::InvalidParams(format!(
                "Invalid params: _meta[{META_IDEMPOTENCY_KEY:?}] must be a string of 1 to 255 characters; send the same key when retrying the same write"
            )))
        }
    };
    let round = request_state.map(Value::to_string).unwrap_or_default();
    // An array of strings is already canonical: written directly, not copied into a `Value` and
    // walked again (the bytes, hence the key, are those of `canonical_json` of the same array).
    let digest = Sha256::digest(serde_json::to_string(&[user, tool, &what, &round])?.as_bytes());
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// What the first run of a write left for a retry.
pub enum Claim {
    /// No run yet: this request runs the tool and then [`record`]s or [`release`]s the key.
    Mine,
    /// An earlier run finished: its result.
    Done(Value),
    /// An earlier run is still going.
    Running,
}

fn window_ms(p: &dyn Platform) -> f64 {
    p.setting("IDEMPOTENCY_WINDOW_SECONDS")
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(WINDOW_MS, |s| s * 1000.0)
}

/// Claims `key` for a run, or finds the run that claimed it.
pub async fn claim(p: &dyn Platform, key: &str) -> Result<Claim> {
    let now = clock::now_ms();
    let rows = p
        .batch(vec![
            Statement::new(
                "DELETE FROM idempotent_calls WHERE expires_ms < ?1",
                vec![json!(now as i64)],
            ),
            Statement::new(
                "INSERT INTO idempotent_calls (key, result, expires_ms) VALUES (?1, NULL, ?2) ON CONFLICT (key) DO NOTHING RETURNING key",
                vec![json!(key), json!((now + window_ms(p)) as i64)],
            ),
            Statement::new(
                "SELECT result FROM idempotent_calls WHERE key = ?1",
                vec![json!(key)],
            ),
        ])
        .await?;
    if rows.get(1).is_some_and(|r| !r.is_empty()) {
        return Ok(Claim::Mine);
    }
    let stored = rows
        .get(2)
        .and_then(|r| r.first())
        .and_then(|row| row.get("result"))
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str::<Value>(s).ok());
    Ok(match stored {
        Some(mut result) => {
            if let Some(m) = result.as_object_mut() {
                let meta = m.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(REPLAYED_META.into(), json!(true));
                }
            }
            Claim::Done(result)
        }
        None => Claim::Running,
    })
}

/// Whether a write's result is one a retry must get back instead of running again: the tool
/// succeeded and changed something. Not an error (`isError`, a domain `error`, FlowMind's
/// `success: false`), not a `pending_confirmation` (nothing happened yet), not a denied decision
/// (`approved: false`).
pub fn succeeded(result: &Value) -> bool {
    let structured = result.get("structuredContent");
    let field = |pointer: &str| structured.and_then(|s| s.pointer(pointer));
    result.get("isError") != Some(&Value::Bool(true))
        && !matches!(
            field("/status").and_then(Value::as_str),
            Some("error" | "pending_confirmation")
        )
        && field("/success") != Some(&Value::Bool(false))
        && field("/data/approved") != Some(&Value::Bool(false))
}

/// Keeps a finished run's result for its retries.
pub async fn record(p: &dyn Platform, key: &str, result: &Value) -> Result<()> {
    p.query(
        "UPDATE idempotent_calls SET result = ?2 WHERE key = ?1",
        vec![json!(key), json!(result.to_string())],
    )
    .await
    .map(|_| ())
}

/// Gives up a claim whose run produced nothing to keep (it paused for input or was cancelled),
/// so a retry runs again.
pub async fn release(p: &dyn Platform, key: &str) -> Result<()> {
    p.query(
        "DELETE FROM idempotent_calls WHERE key = ?1 AND result IS NULL",
        vec![json!(key)],
    )
    .await
    .map(|_| ())
}

/// The answer to a retry that arrives while the first run is still going.
pub fn still_running() -> Error {
    Error::Conflict(
        "Conflict: the same write is still running from an earlier request; retry in a few seconds to get its result (it will not run twice)".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_successes_are_kept_for_retries() {
        let done = json!({"structuredContent": {"status": "success", "data": {"approved": true, "message": "done"}}});
        assert!(succeeded(&done));
        assert!(succeeded(
            &json!({"content": [{"type": "text", "text": "ok"}]})
        ));
        for failed in [
            json!({"isError": true, "content": []}),
            json!({"structuredContent": {"status": "error", "code": "OPERATION_FAILED"}}),
            json!({"structuredContent": {"status": "pending_confirmation", "confirmationId": "c"}}),
            json!({"structuredContent": {"status": "success", "data": {"approved": false}}}),
            json!({"structuredContent": {"success": false}}),
        ] {
            assert!(!succeeded(&failed), "{failed}");
        }
    }

    #[test]
    fn keys_are_those_written_before_so_retries_across_a_deploy_still_match() {
        let meta = serde_json::Map::new();
        let args = json!({"b": "x\"y", "a": [1, {"d": null, "c": 2.5}]});
        let state = json!("sealed.state");
        let what = format!("args:{}", canonical_json(&args));
        let before = canonical_json(&json!(["u1", "close_ticket", what, state.to_string()]));
        let hex: String = Sha256::digest(before.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            key("u1", "close_ticket", &meta, &args, Some(&state)).unwrap(),
            hex
        );
    }

    #[test]
    fn keys_separate_callers_tools_requests_and_rounds() {
        let meta = serde_json::Map::new();
        let args = json!({"b": 1, "a": 2});
        let k = key("u1", "close_ticket", &meta, &args, None).unwrap();
        let reordered: Value = serde_json::from_str(r#"{"a":2,"b":1}"#).unwrap();
        assert_eq!(
            k,
            key("u1", "close_ticket", &meta, &reordered, None).unwrap()
        );
        assert_ne!(k, key("u2", "close_ticket", &meta, &args, None).unwrap());
        assert_ne!(k, key("u1", "close_deal", &meta, &args, None).unwrap());
        assert_ne!(
            k,
            key("u1", "close_ticket", &meta, &json!({}), None).unwrap()
        );
        assert_ne!(
            k,
            key("u1", "close_ticket", &meta, &args, Some(&json!("state"))).unwrap()
        );
        let keyed = serde_json::Map::from_iter([(META_IDEMPOTENCY_KEY.to_string(), json!("k1"))]);
        let a = key("u1", "close_ticket", &keyed, &args, None).unwrap();
        assert_eq!(
            a,
            key("u1", "close_ticket", &keyed, &json!({}), None).unwrap()
        );
        let bad = serde_json::Map::from_iter([(META_IDEMPOTENCY_KEY.to_string(), json!(7))]);
        assert_eq!(
            key("u1", "t", &bad, &args, None).unwrap_err().rpc_code(),
            -32602
        );
    }
}
