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
