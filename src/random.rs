//! Random identifiers from the platform CSPRNG (`crypto.getRandomValues` in a Worker).

use crate::error::{Error, Result};

/// `bytes` random bytes as lowercase hex.
pub fn hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| Error::Internal(format!("no randomness: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}
