//! Log lines, from the host the code runs on: the Workers console on wasm, standard error natively
//! (so handlers that log run under `cargo test`). `crate::log::error!` and `crate::log::info!` take
//! `format!` arguments; the lines are JSON objects wherever a reader parses them.

/// Writes an error line (`format!` arguments).
macro_rules! error {
    ($($t:tt)*) => {
        $crate::log::write(true, &format!($($t)*))
    };
}

/// Writes an informational line (`format!` arguments).
macro_rules! info {
    ($($t:tt)*) => {
        $crate::log::write(false, &format!($($t)*))
    };
}

pub(crate) use {error, info};

/// Writes `line` to the host's log, as an error or as information.
#[cfg(target_arch = "wasm32")]
pub fn write(error: bool, line: &str) {
    if error {
        worker::console_error!("{line}");
    } else {
        worker::console_log!("{line}");
    }
}

/// Writes `line` to the host's log, as an error or as information.
#[cfg(not(target_arch = "wasm32"))]
pub fn write(_error: bool, line: &str) {
    eprintln!("{line}");
}
