//! Concurrency leases: how many runs of one kind (`execute_workflow`'s workflows) a caller may have
//! under way at once. They live in the caller's `RateLimiter` object beside the token buckets, so
//! every MCP session of a signed-in user (and every run acting for them) shares one count.
//!
//! A lease is taken when a run starts and given back when it ends, whichever way it ends; each one
//! also lapses `ttl_ms` after it was last taken or renewed, so a run whose end was never reported
//! (its object lost mid-run) cannot hold a slot for ever. This module is the decision alone, over
//! the leases the object read, so `cargo test` checks it natively.

use serde::{Deserialize, Serialize};

use crate::engine::read::{self, Read};

/// What a caller asks of its leases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum LeaseRequest {
    /// Take (or renew) lease `id` of `kind`, if fewer than `max` other unexpired leases of that
    /// kind are held; with `admitted`, take or renew it regardless (a run that was admitted once
    /// and is continuing).
    Acquire {
        /// What is counted (a tool name).
        kind: String,
        /// The run holding it (an execution id).
        id: String,
        /// Most leases of `kind` at once.
        max: u32,
        /// How long it lasts unless renewed, in milliseconds.
        ttl_ms: u64,
        /// Renew or take it without counting.
        #[serde(default)]
        admitted: bool,
    },
    /// Give lease `id` of `kind` back (nothing happens when it is not held).
    Release {
        /// What is counted.
        kind: String,
        /// The run that held it.
        id: String,
    },
}

/// The answer to a [`LeaseRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaseAnswer {
    /// Whether the lease is held now (always true for a release).
    pub allowed: bool,
    /// The unexpired leases of the kind after the request, oldest first (ids only).
    pub holders: Vec<String>,
}

impl LeaseRequest {
    /// A lease request as the limiter object reads it, by hand (see `limiter::ask`); the derive
    /// stays for writing it.
    pub fn read(v: serde_json::Value) -> Read<Self> {
        let mut m = read::object(v, "internally tagged enum LeaseRequest")?;
        let op = read::string(read::required(&mut m, "op")?)?;
        match op.as_str() {
            "acquire" => Ok(Self::Acquire {
                kind: read::string(read::required(&mut m, "kind")?)?,
                id: read::string(read::required(&mut m, "id")?)?,
                max: read::u32(read::required(&mut m, "max")?)?,
                ttl_ms: read::u64(read::required(&mut m, "ttl_ms")?)?,
                admitted: read::defaulted(&mut m, "admitted", read::bool)?,
            }),
            "release" => Ok(Self::Release {
                kind: read::string(read::required(&mut m, "kind")?)?,
                id: read::string(read::required(&mut m, "id")?)?,
            }),
            other => Err(read::unknown(other, "`acquire` or `release`")),
        }
    }
}

impl LeaseAnswer {
    /// The limiter object's answer to a lease request, read by hand (see `limiter::ask`).
    pub fn read(v: serde_json::Value) -> Read<Self> {
        let mut m = read::object(v, "struct LeaseAnswer")?;
        Ok(Self {
            allowed: read::bool(read::required(&mut m, "allowed")?)?,
            holders: read::list(read::required(&mut m, "holders")?, read::string)?,
        })
    }
}

/// One stored lease.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Held {
    /// The run holding it.
    pub id: String,
    /// When it was first taken (orders the holders).
    pub taken_ms: f64,
    /// When it lapses.
    pub expires_ms: f64,
}

impl Held {
    /// The lease of a `leases` row, read by hand (see `store::rows`).
    pub fn read(v: serde_json::Value) -> Read<Self> {
        let mut m = read::object(v, "struct Held")?;
        Ok(Self {
            id: read::string(read::required(&mut m, "id")?)?,
            taken_ms: read::f64(read::required(&mut m, "taken_ms")?)?,
            expires_ms: read::f64(read::required(&mut m, "expires_ms")?)?,
        })
    }
}

/// What to do with an acquire: whether it is granted, and the holders afterwards.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Whether the lease is granted (store or renew it).
    pub granted: bool,
    /// Unexpired holders, oldest first, including the new lease when granted.
    pub holders: Vec<String>,
}

/// Decides an acquire of lease `id` at `now_ms` over the stored leases of its kind: expired ones
/// do not count; a lease already held is renewed; a new one is granted while fewer than `max` are
/// held, or always when `admitted`.
pub fn decide(held: &[Held], id: &str, max: u32, admitted: bool, now_ms: f64) -> Decision {
    let mut live: Vec<&Held> = held.iter().filter(|h| h.expires_ms > now_ms).collect();
    crate::engine::sort::sort_by(&mut live, |a, b| a.taken_ms.total_cmp(&b.taken_ms));
    let mut holders: Vec<String> = live.iter().map(|h| h.id.clone()).collect();
    if holders.iter().any(|h| h == id) {
        return Decision {
            granted: true,
            holders,
        };
    }
    let granted = admitted || holders.len() < max as usize;
    if granted {
        holders.push(id.to_string());
    }
    Decision { granted, holders }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(id: &str, taken_ms: f64, expires_ms: f64) -> Held {
        Held {
            id: id.into(),
            taken_ms,
            expires_ms,
        }
    }

    #[test]
    fn grants_until_max_live_leases_then_refuses_naming_the_holders_oldest_first() {
        let leases = [held("b", 20.0, 1000.0), held("a", 10.0, 1000.0)];
        let d = decide(&leases, "c", 3, false, 100.0);
        assert!(d.granted);
        assert_eq!(d.holders, ["a", "b", "c"]);
        let d = decide(&leases, "c", 2, false, 100.0);
        assert!(!d.granted);
        assert_eq!(d.holders, ["a", "b"]);
    }

    #[test]
    fn expired_leases_do_not_count_and_a_held_lease_is_renewed() {
        let leases = [held("a", 10.0, 50.0), held("b", 20.0, 1000.0)];
        let d = decide(&leases, "c", 2, false, 100.0);
        assert!(d.granted);
        assert_eq!(d.holders, ["b", "c"]);
        let d = decide(&leases, "b", 1, false, 100.0);
        assert!(
            d.granted,
            "renewing a held lease never counts against the limit"
        );
        assert_eq!(d.holders, ["b"]);
    }

    #[test]
    fn an_admitted_run_gets_its_lease_back_even_when_full() {
        let leases = [held("a", 10.0, 1000.0)];
        let d = decide(&leases, "z", 1, true, 100.0);
        assert!(d.granted);
        assert_eq!(d.holders, ["a", "z"]);
    }

    #[test]
    fn requests_round_trip_as_tagged_json() {
        let r: LeaseRequest = serde_json::from_str(
            r#"{"op":"acquire","kind":"execute_workflow","id":"exec-1","max":5,"ttl_ms":1000}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            LeaseRequest::Acquire {
                kind: "execute_workflow".into(),
                id: "exec-1".into(),
                max: 5,
                ttl_ms: 1000,
                admitted: false
            }
        );
        let back = serde_json::to_value(LeaseRequest::Release {
            kind: "k".into(),
            id: "i".into(),
        })
        .unwrap();
        assert_eq!(
            back,
            serde_json::json!({ "op": "release", "kind": "k", "id": "i" })
        );
    }

    /// A lease request and its answer, read by hand, accept exactly what their derives accept.
    #[test]
    fn requests_and_answers_read_as_their_derives_read_them() {
        use crate::store::rows::assert_same_as_derive as same;
        use serde_json::json;
        same(
            LeaseRequest::read,
            &[
                json!({ "op": "acquire", "kind": "k", "id": "i", "max": 2, "ttl_ms": 1000, "admitted": true }),
                json!({ "op": "acquire", "kind": "k", "id": "i", "max": 2, "ttl_ms": 1000 }),
                json!({ "op": "acquire", "kind": "k", "id": "i", "max": 2, "ttl_ms": 1000, "admitted": null }),
                json!({ "op": "acquire", "kind": "k", "id": "i", "ttl_ms": 1000 }),
                json!({ "op": "acquire", "kind": "k", "id": "i", "max": -1, "ttl_ms": 1000 }),
                json!({ "op": "acquire", "kind": "k", "id": 3, "max": 1, "ttl_ms": 1000 }),
                json!({ "op": "release", "kind": "k", "id": "i" }),
                json!({ "op": "release", "kind": "k", "id": "i", "max": 2 }),
                json!({ "op": "release", "kind": "k" }),
                json!({ "op": "renew", "kind": "k", "id": "i" }),
                json!({ "op": 1, "kind": "k", "id": "i" }),
                json!({ "op": null, "kind": "k", "id": "i" }),
                json!({ "kind": "k", "id": "i" }),
                json!(null),
                json!("acquire"),
            ],
        );
        same(
            LeaseAnswer::read,
            &[
                json!({ "allowed": true, "holders": ["a", "b"] }),
                json!({ "allowed": false, "holders": [] }),
                json!({ "allowed": false, "holders": [1] }),
                json!({ "allowed": false, "holders": "a" }),
                json!({ "allowed": false, "holders": null }),
                json!({ "allowed": false }),
                json!({ "holders": [] }),
                json!({ "allowed": false, "holders": [], "more": 1 }),
                json!(null),
            ],
        );
    }

    /// A stored lease read by hand accepts exactly what the derive accepts.
    #[test]
    fn held_reads_as_its_derive_reads_it() {
        use serde_json::json;
        crate::store::rows::assert_same_as_derive(
            Held::read,
            &[
                json!({ "id": "r", "taken_ms": 1, "expires_ms": 2.5 }),
                json!({ "id": "r", "taken_ms": 1, "expires_ms": 2.5, "kind": "chain" }),
                json!({ "id": "r", "taken_ms": "1", "expires_ms": 2.5 }),
                json!({ "id": "r", "expires_ms": 2.5 }),
                json!({ "id": null, "taken_ms": 1, "expires_ms": 2.5 }),
                json!(null),
            ],
        );
    }
}
