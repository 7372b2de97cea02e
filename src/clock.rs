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
