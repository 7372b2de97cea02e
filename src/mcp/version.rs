//! Protocol versions this server speaks and how `initialize` negotiates one.

/// Supported versions, newest first. The first entry is offered when a client asks for one we lack.
pub const SUPPORTED: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// Versions served statelessly, per request (2026-07-28 and later: no `initialize`, no session).
pub const MODERN: &[&str] = &["2026-07-28"];

/// Every version this endpoint serves, newest first, as `server/discover` and the
/// unsupported-version error list them: the modern ones per request, the others through
/// `initialize`.
pub const ADVERTISED: &[&str] = &["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];

/// Whether `v` is served statelessly.
pub fn is_modern(v: &str) -> bool {
    MODERN.contains(&v)
}

/// The newest supported version.
pub const LATEST: &str = SUPPORTED[0];

/// The version assumed for a request without `MCP-Protocol-Version` when nothing else is known
/// (Streamable HTTP transport, "Protocol Version Header").
pub const ASSUMED_WITHOUT_HEADER: &str = "2025-03-26";

/// Whether `v` is a version this server speaks.
pub fn is_supported(v: &str) -> bool {
    SUPPORTED.contains(&v)
}

/// The version to answer `initialize` with: the client's if we support it, else our latest.
pub fn negotiate(requested: &str) -> &'static str {
    SUPPORTED
        .iter()
        .copied()
        .find(|v| *v == requested)
        .unwrap_or(LATEST)
}

/// Whether this version primes SSE streams with an empty event and sends `retry:` (SEP-1699).
pub fn primes_streams(v: &str) -> bool {
    v >= "2025-11-25"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_supported_and_offers_latest_otherwise() {
        assert_eq!(negotiate("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate("2025-03-26"), "2025-03-26");
        assert_eq!(negotiate("1900-01-01"), LATEST);
        assert!(!is_supported("2024-11-05"));
        assert!(primes_streams("2025-11-25") && !primes_streams("2025-06-18"));
        assert!(is_modern("2026-07-28") && !is_modern("2025-11-25"));
        assert!(!is_supported("2026-07-28"));
        for v in SUPPORTED.iter().chain(MODERN) {
            assert!(ADVERTISED.contains(v));
        }
    }
}
