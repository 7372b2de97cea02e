//! Log levels of `logging/setLevel` and `notifications/message` (RFC 5424 severities).

use crate::error::{Error, Result};

/// A log level, least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

const NAMES: [(&str, LogLevel); 8] = [
    ("debug", LogLevel::Debug),
    ("info", LogLevel::Info),
    ("notice", LogLevel::Notice),
    ("warning", LogLevel::Warning),
    ("error", LogLevel::Error),
    ("critical", LogLevel::Critical),
    ("alert", LogLevel::Alert),
    ("emergency", LogLevel::Emergency),
];

impl LogLevel {
    /// Parses a level name; anything else is `-32602` listing the valid names.
    pub fn parse(s: &str) -> Result<Self> {
        NAMES.iter().find(|(n, _)| *n == s).map(|(_, l)| *l).ok_or_else(|| {
            Error::InvalidParams(format!(
                "Invalid params: level {s:?} is not one of debug, info, notice, warning, error, critical, alert, emergency"
            ))
        })
    }

    /// The level's name on the wire.
    pub fn as_str(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, l)| *l == self)
            .map(|(n, _)| *n)
            .unwrap_or("info")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_orders_by_severity() {
        for (n, l) in NAMES {
            assert_eq!(LogLevel::parse(n).unwrap(), l);
            assert_eq!(l.as_str(), n);
        }
        assert!(LogLevel::Debug < LogLevel::Emergency);
        assert_eq!(LogLevel::parse("loud").unwrap_err().rpc_code(), -32602);
    }
}
