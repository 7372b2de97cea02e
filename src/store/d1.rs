//! D1 access for tool handlers: parameterised queries returning rows as JSON objects.

use serde_json::Value;
use worker::wasm_bindgen::JsValue;
use worker::D1Database;

use crate::error::{Error, Result};

/// Binds a JSON value as a D1 parameter. Integers go through f64 (D1 has no BigInt), strings and
/// booleans as themselves, arrays and objects as their JSON text.
fn bind_value(v: &Value) -> JsValue {
    match v {
        Value::Null => JsValue::NULL,
        Value::Bool(b) => JsValue::from_bool(*b),
        Value::Number(n) => JsValue::from_f64(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => JsValue::from_str(s),
        other => JsValue::from_str(&other.to_string()),
    }
}

/// Runs `sql` with `params` bound to `?1`, `?2`, … and returns every row.
pub async fn query(db: &D1Database, sql: &str, params: &[Value]) -> Result<Vec<Value>> {
    let args: Vec<JsValue> = params.iter().map(bind_value).collect();
    let stmt = db.prepare(sql).bind(&args).map_err(Error::from)?;
    // `all()` does not map D1 failures to worker::Error::D1, so its message is kept as is.
    let result = stmt
        .all()
        .await
        .map_err(|e| Error::Storage(format!("D1 query failed: {e}")))?;
    result
        .results::<Value>()
        .map_err(|e| Error::Storage(format!("D1 rows did not decode: {e}")))
}

/// Runs statements as one D1 batch: a single transaction, so either all apply or none does.
pub async fn batch(
    db: &D1Database,
    statements: &[(String, Vec<Value>)],
) -> Result<Vec<Vec<Value>>> {
    let mut prepared = Vec::with_capacity(statements.len());
    for (sql, params) in statements {
        let args: Vec<JsValue> = params.iter().map(bind_value).collect();
        prepared.push(db.prepare(sql.as_str()).bind(&args).map_err(Error::from)?);
    }
    let results = db
        .batch(prepared)
        .await
        .map_err(|e| Error::Storage(format!("D1 batch failed: {e}")))?;
    results
        .iter()
        .map(|r| {
            r.results::<Value>()
                .map_err(|e| Error::Storage(format!("D1 rows did not decode: {e}")))
        })
        .collect()
}
