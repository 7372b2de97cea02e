//! The sealed anonymous caller id: who owns the runs and the travel assistant's mode of a
//! 2026-07-28 caller without a token, where anonymous access is on.
//!
//! Such a caller presents nothing but their address (`cf-connecting-ip`), the stand-in this lane
//! uses for anonymous callers elsewhere too (request states, rate limits, listen streams). Their
//! owner id is `anonymous:` and the HMAC-SHA-256 of that address under a key derived from the
//! server's secret (`REQUEST_STATE_SECRET`, else `JWT_SECRET` or `CURSOR_SECRET`): stable for the
//! address while the secret stays, unforgeable and unguessable without the secret, and not the
//! address itself (which never reaches D1). It is never read from a request, and a token whose
//! `sub` starts with `anonymous:` is refused (`edge::auth`), so no signed-in user can be it.
//! docs/security.md ("Anonymous callers of 2026-07-28") says what it reaches.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use worker::Request;

use super::call;
use crate::edge::http::header;
use crate::error::{Error, Result};
use crate::mcp::request_state;
use crate::registry::{Caller, Platform};

pub use crate::wire::ANONYMOUS_OWNER_PREFIX as PREFIX;

/// The owner of `caller`'s runs and mode: the signed-in user's id, else the sealed anonymous id of
/// the request's address.
pub fn owner(p: &dyn Platform, caller: &Caller, req: &Request) -> Result<String> {
    if let Some(user) = &caller.user {
        return Ok(user.clone());
    }
    let address = header(req, "cf-connecting-ip").unwrap_or_else(|| "local".into());
    let key = call::state_key(p).map_err(|_| {
        Error::Misconfigured(
            "this server cannot keep runs for callers without a token: no REQUEST_STATE_SECRET (or JWT_SECRET) is configured to seal their id; send a bearer token, or ask the operator to set it".into(),
        )
    })?;
    Ok(sealed(&key, &address))
}

/// The anonymous id of `address` under the request-state `key`.
fn sealed(key: &[u8], address: &str) -> String {
    let key = request_state::derive_key(key, "anonymous-caller");
    // HMAC accepts keys of any length, so new_from_slice cannot fail.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&key).expect("HMAC takes any key length");
    m.update(address.as_bytes());
    let tag: String = m
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{PREFIX}{tag}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_stable_per_address_and_key_and_hides_the_address() {
        let a = sealed(b"secret", "192.0.2.1");
        assert_eq!(a, sealed(b"secret", "192.0.2.1"));
        assert_ne!(a, sealed(b"secret", "192.0.2.2"), "another address");
        assert_ne!(a, sealed(b"other", "192.0.2.1"), "another secret");
        assert!(a.starts_with(PREFIX) && a.len() == PREFIX.len() + 64);
        assert!(!a.contains("192.0.2.1"));
    }
}
