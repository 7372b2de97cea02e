//! Wall-clock time in milliseconds since the Unix epoch, from the host the code runs on.
//!
//! In a Worker `Date.now()` only advances across I/O (a Spectre mitigation), which is what the
//! platform bills and what latency figures should show.

/// Milliseconds since the Unix epoch.
#[cfg(target_arch = "wasm32")]
pub fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Milliseconds since the Unix epoch.
#[cfg(not(target_arch = "wasm32"))]
pub fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// Today's date in UTC, `YYYY-MM-DD`.
pub fn today() -> String {
    use chrono::Datelike;
    chrono::DateTime::from_timestamp_millis(now_ms() as i64)
        .map(|d| {
            let d = d.date_naive();
            format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day())
        })
        .unwrap_or_default()
}
