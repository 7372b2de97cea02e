//! Rows of the Durable Objects' SQL storage, read by hand from the `Value` serde_wasm_bindgen
//! gives for each row: one instance of its reader (the one for `Value`) serves every row type,
//! where a `#[derive(Deserialize)]` row type compiled a reader of its own (docs/decisions.md,
//! "Derived readers"). The row types keep their derives for the native tests, which compare.

use serde_json::Value;
use worker::SqlCursor;

use crate::engine::read::Read;

/// The rows of `cursor`, each read by `read`; a row `read` refuses is an error naming its field.
pub fn rows<T>(cursor: SqlCursor, read: fn(Value) -> Read<T>) -> worker::Result<Vec<T>> {
    cursor
        .to_array::<Value>()?
        .into_iter()
        .map(|row| read(row).map_err(|e| worker::Error::RustError(e.to_string())))
        .collect()
}

/// Test support: `read` accepts exactly what the derive accepts from each of `rows`, with the
/// same result.
#[cfg(test)]
pub fn assert_same_as_derive<T>(read: fn(Value) -> Read<T>, rows: &[Value])
where
    T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    for row in rows {
        let derived = serde_json::from_value::<T>(row.clone());
        let by_hand = read(row.clone());
        assert_eq!(
            by_hand.is_ok(),
            derived.is_ok(),
            "row {row}: {by_hand:?} against {derived:?}"
        );
        assert_eq!(by_hand.ok(), derived.ok(), "row {row}");
    }
}
