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

/// A time in milliseconds since the Unix epoch as RFC 3339 in UTC with milliseconds
/// (`2026-11-24T03:12:05.123Z`).
pub fn iso(ms: i64) -> String {
    use chrono::{Datelike, Timelike};
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| {
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                d.year(),
                d.month(),
                d.day(),
                d.hour(),
                d.minute(),
                d.second(),
                d.timestamp_subsec_millis()
            )
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_is_rfc3339_utc_with_milliseconds() {
        assert_eq!(super::iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::iso(1_795_576_325_123), "2026-11-25T03:12:05.123Z");
    }
}
