//! Small readers of a parsed `Value` into typed fields, for the types read by hand instead of
//! through `#[derive(Deserialize)]` (each derive compiles a reader of its own for every source it
//! is read from: docs/decisions.md, "Derived readers"). They accept what the derive accepts: a
//! missing `Option` field or `null` is `None`, a missing `#[serde(default)]` field is its default,
//! and a missing or mistyped required field is a `serde_json::Error` naming it.

use serde::de::Error as _;
use serde_json::{Map, Value};

/// A reader's result; the error is serde_json's, as the derive's was.
pub type Read<T> = Result<T, serde_json::Error>;

/// The field `name`; an error when it is missing.
pub fn required(m: &mut Map<String, Value>, name: &'static str) -> Read<Value> {
    m.remove(name)
        .ok_or_else(|| serde_json::Error::missing_field(name))
}

/// An `Option` field: missing and `null` are both `None`.
pub fn optional<T>(
    m: &mut Map<String, Value>,
    name: &str,
    read: fn(Value) -> Read<T>,
) -> Read<Option<T>> {
    match m.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => read(v).map(Some),
    }
}

/// A `#[serde(default)]` field: missing is its default.
pub fn defaulted<T: Default>(
    m: &mut Map<String, Value>,
    name: &str,
    read: fn(Value) -> Read<T>,
) -> Read<T> {
    m.remove(name).map_or(Ok(T::default()), read)
}

/// The object `v`; `what` names it in the error.
pub fn object(v: Value, what: &str) -> Read<Map<String, Value>> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(mistyped(&other, what)),
    }
}

/// The array `v`, each item read by `read`.
pub fn list<T>(v: Value, read: fn(Value) -> Read<T>) -> Read<Vec<T>> {
    match v {
        Value::Array(items) => items.into_iter().map(read).collect(),
        other => Err(mistyped(&other, "a sequence")),
    }
}

/// The string `v`.
pub fn string(v: Value) -> Read<String> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(mistyped(&other, "a string")),
    }
}

/// The unsigned integer `v`.
pub fn u64(v: Value) -> Read<u64> {
    v.as_u64().ok_or_else(|| mistyped(&v, "u64"))
}

/// The signed integer `v`.
pub fn i64(v: Value) -> Read<i64> {
    v.as_i64().ok_or_else(|| mistyped(&v, "i64"))
}

/// The `u32` `v`.
pub fn u32(v: Value) -> Read<u32> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| mistyped(&v, "u32"))
}

/// The `usize` `v`.
pub fn usize(v: Value) -> Read<usize> {
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| mistyped(&v, "usize"))
}

/// The number `v`, integer or not.
pub fn f64(v: Value) -> Read<f64> {
    v.as_f64().ok_or_else(|| mistyped(&v, "f64"))
}

/// The error of a value of the wrong type.
pub fn mistyped(v: &Value, expected: &str) -> serde_json::Error {
    serde_json::Error::custom(format!("invalid value: {v}, expected {expected}"))
}

/// The error of an unknown enum variant name.
pub fn unknown(name: &str, expected: &str) -> serde_json::Error {
    serde_json::Error::custom(format!("unknown variant `{name}`, expected {expected}"))
}

/// The `u8` `v`.
pub fn u8(v: Value) -> Read<u8> {
    v.as_u64()
        .and_then(|n| u8::try_from(n).ok())
        .ok_or_else(|| mistyped(&v, "u8"))
}

/// The boolean `v`.
pub fn bool(v: Value) -> Read<bool> {
    v.as_bool().ok_or_else(|| mistyped(&v, "a boolean"))
}
