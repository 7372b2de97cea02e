//! The `RateLimiter` Durable Object: one per caller (`user:<id>`, or `session:<id>` for anonymous
//! callers), holding one token bucket per tool in SQLite so limits survive instance resets.
//!
//! An object serves one request at a time up to its first await, and SQLite calls are synchronous,
//! so a bucket's read, arithmetic (`registry::limits`) and write cannot interleave with another
//! call's. The caller sends the limit with each request: the Worker's `RATE_LIMITS` decides, and a
//! changed setting applies at the next call. An alarm forgets buckets once they are full again,
//! which is the state a missing bucket stands for, so an object of a caller gone quiet ends empty.
//!
//! The same object keeps the caller's concurrency leases ([`leases`]; `POST` to [`LEASE_URL`]):
//! the alarm forgets lapsed ones too, and the object empties only when neither is left.

pub mod leases;

use std::cell::Cell;

use serde::{Deserialize, Serialize};
use serde_json::json;
use worker::{durable_object, DurableObject, Env, Request, Response, SqlStorage, State};

use crate::store::rows::rows;

use self::leases::{Held, LeaseAnswer, LeaseRequest};
use crate::clock;
use crate::engine::read::{self, Read};
use crate::error::{Error, Result};
use crate::registry::limits::{Admission, Bucket, Limit};

/// The name of the limiter object that counts `caller`'s calls and runs: `user:<id>` for a
/// signed-in user, whose every session (and background run) shares it; `session:<id>` for an
/// anonymous caller, who has no identity beyond the MCP session.
pub fn owner(caller: &crate::registry::Caller, session_id: &str) -> String {
    match &caller.user {
        Some(user) => format!("user:{user}"),
        None => format!("session:{session_id}"),
    }
}

/// The limiter object that counts `caller`'s requests and session creations at the Worker
/// (`REQUEST_LIMIT`, `SESSION_CREATE_LIMIT`): the user's own (`user:<id>`, shared with their tool
/// buckets) for a signed-in caller, else one per client address (`address:<ip>`), so an anonymous
/// caller's count survives any number of new sessions.
pub fn request_owner(caller: &crate::registry::Caller, address: Option<&str>) -> String {
    match &caller.user {
        Some(user) => format!("user:{user}"),
        None => format!("address:{}", address.unwrap_or("unknown")),
    }
}

/// The bucket of a caller's requests; `@` keeps it apart from every tool's (MCP names never
/// contain it).
pub const REQUESTS_BUCKET: &str = "@requests";
/// The bucket of a caller's session creations.
pub const SESSIONS_BUCKET: &str = "@sessions";

/// Takes one token from bucket `bucket` of limiter object `owner` under `limit`.
pub async fn take(env: &Env, owner: &str, bucket: &str, limit: Limit) -> Result<Admission> {
    let request = Take {
        tool: bucket.to_string(),
        capacity: limit.capacity,
        period_ms: limit.period_ms,
        backoff: false,
    };
    send_take(env, owner, &request).await
}

/// Sends one take request to limiter object `owner`.
pub async fn send_take(env: &Env, owner: &str, request: &Take) -> Result<Admission> {
    let taken = ask(env, owner, TAKE_URL, request, "", Taken::read).await?;
    Ok(if taken.allowed {
        Admission::Allowed
    } else {
        Admission::Refused {
            retry_after_secs: taken.retry_after_secs.max(1),
        }
    })
}

/// Sends `request` as JSON to `url` of limiter object `owner` and reads its JSON answer with
/// `read`: the one place the Worker side speaks to a `RateLimiter` (takes and leases). `what`
/// names the request in the error of an answer other than 200. The answers are read by hand from
/// the one `Value` parser, not by a derive each (docs/decisions.md, "Derived readers").
pub async fn ask<T>(
    env: &Env,
    owner: &str,
    url: &str,
    request: &impl Serialize,
    what: &str,
    read: fn(serde_json::Value) -> Read<T>,
) -> Result<T> {
    let mut resp = crate::wire::ObjectRequest::limiter(owner, url)
        .json(request)?
        .send(env)
        .await?;
    if resp.status_code() != 200 {
        return Err(Error::Internal(format!(
            "rate limiter answered HTTP {}{what}",
            resp.status_code()
        )));
    }
    Ok(read(serde_json::from_str(&resp.text().await?)?)?)
}

/// The URL the Worker side sends a take request to (the host is never resolved).
pub const TAKE_URL: &str = "https://rate-limiter.internal/take";

/// The URL the Worker side sends a [`leases::LeaseRequest`] to.
pub const LEASE_URL: &str = "https://rate-limiter.internal/lease";

/// A request for one token.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
pub struct Take {
    /// The tool's MCP name.
    pub tool: String,
    /// The bucket's capacity.
    pub capacity: u32,
    /// Its refill period, in milliseconds.
    pub period_ms: u64,
    /// Refused calls take a token as debt (`Bucket::take_or_owe`): progressive backoff.
    #[serde(default)]
    pub backoff: bool,
}

impl Take {
    /// A take request as the limiter object reads it, by hand (see [`ask`]).
    fn read(v: serde_json::Value) -> Read<Self> {
        let mut m = read::object(v, "struct Take")?;
        Ok(Self {
            tool: read::string(read::required(&mut m, "tool")?)?,
            capacity: read::u32(read::required(&mut m, "capacity")?)?,
            period_ms: read::u64(read::required(&mut m, "period_ms")?)?,
            backoff: read::defaulted(&mut m, "backoff", read::bool)?,
        })
    }
}

/// The answer to a [`Take`].
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
pub struct Taken {
    /// Whether the call may run.
    pub allowed: bool,
    /// When refused: whole seconds until a token is there.
    pub retry_after_secs: u64,
}

impl Taken {
    /// The limiter object's answer to a take, read by hand (see [`ask`]).
    fn read(v: serde_json::Value) -> Read<Self> {
        let mut m = read::object(v, "struct Taken")?;
        Ok(Self {
            allowed: read::bool(read::required(&mut m, "allowed")?)?,
            retry_after_secs: read::u64(read::required(&mut m, "retry_after_secs")?)?,
        })
    }
}

impl From<Admission> for Taken {
    fn from(a: Admission) -> Self {
        match a {
            Admission::Allowed => Taken {
                allowed: true,
                retry_after_secs: 0,
            },
            Admission::Refused { retry_after_secs } => Taken {
                allowed: false,
                retry_after_secs,
            },
        }
    }
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Row {
    tokens: f64,
    updated_ms: f64,
}

impl Row {
    fn read(v: serde_json::Value) -> Read<Self> {
        let mut m = read::object(v, "struct Row")?;
        Ok(Self {
            tokens: read::f64(read::required(&mut m, "tokens")?)?,
            updated_ms: read::f64(read::required(&mut m, "updated_ms")?)?,
        })
    }
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Latest {
    full_at_ms: Option<f64>,
}

impl Latest {
    fn read(v: serde_json::Value) -> Read<Self> {
        let mut m = read::object(v, "struct Latest")?;
        Ok(Self {
            full_at_ms: read::optional(&mut m, "full_at_ms", read::f64)?,
        })
    }
}

/// The `id` of a `leases` row.
fn lease_id(v: serde_json::Value) -> Read<String> {
    let mut m = read::object(v, "struct Id")?;
    read::string(read::required(&mut m, "id")?)
}

/// The Durable Object class (`class_name = "RateLimiter"` in wrangler.toml).
#[durable_object]
pub struct RateLimiter {
    state: State,
    /// Whether this instance has set the cleanup alarm (after a reset it is set again, harmlessly).
    armed: Cell<bool>,
}

impl DurableObject for RateLimiter {
    fn new(state: State, _env: Env) -> Self {
        RateLimiter {
            state,
            armed: Cell::new(false),
        }
    }

    async fn fetch(&self, mut req: Request) -> worker::Result<Response> {
        let is_lease = req.path() == "/lease";
        let body = req.text().await.map_err(Error::from);
        let answer = match body {
            Ok(body) if is_lease => {
                match serde_json::from_str(&body).and_then(LeaseRequest::read) {
                    Ok(r) => self
                        .lease(&r)
                        .await
                        .and_then(|a| Ok(serde_json::to_value(a)?)),
                    Err(e) => Err(Error::InvalidRequest(format!("lease request: {e}"))),
                }
            }
            Ok(body) => match serde_json::from_str(&body).and_then(Take::read) {
                Ok(take) => self
                    .take(&take)
                    .await
                    .and_then(|t| Ok(serde_json::to_value(t)?)),
                Err(e) => Err(Error::InvalidRequest(format!("rate limiter request: {e}"))),
            },
            Err(e) => Err(e),
        };
        match answer {
            Ok(answer) => Response::from_json(&answer),
            Err(e) => {
                crate::log::error!("{}", json!({ "rate_limiter_error": e.to_string() }));
                Ok(Response::from_json(&json!({ "error": e.to_string() }))?.with_status(500))
            }
        }
    }

    async fn alarm(&self) -> worker::Result<Response> {
        if let Err(e) = self.forget_full().await {
            crate::log::error!("rate limiter alarm: {e}");
        }
        Response::empty()
    }
}

impl RateLimiter {
    fn sql(&self) -> Result<SqlStorage> {
        let sql = self.state.storage().sql();
        sql.exec(
            "CREATE TABLE IF NOT EXISTS buckets (
               tool TEXT PRIMARY KEY,
               tokens REAL NOT NULL,
               updated_ms REAL NOT NULL,
               full_at_ms REAL NOT NULL)",
            None,
        )
        .map_err(|e| Error::Storage(format!("rate limiter storage: {e}")))?;
        sql.exec(
            "CREATE TABLE IF NOT EXISTS leases (
               kind TEXT NOT NULL,
               id TEXT NOT NULL,
               taken_ms REAL NOT NULL,
               expires_ms REAL NOT NULL,
               PRIMARY KEY (kind, id))",
            None,
        )
        .map_err(|e| Error::Storage(format!("rate limiter storage: {e}")))?;
        Ok(sql)
    }

    /// Takes, renews or gives back a lease. The read, the decision and the write run with no await
    /// between them, so two acquires cannot both take the last slot.
    async fn lease(&self, request: &LeaseRequest) -> Result<LeaseAnswer> {
        let sql = self.sql()?;
        let now = clock::now_ms();
        let fail = |e: worker::Error| Error::Storage(format!("lease: {e}"));
        let (kind, expires) = match request {
            LeaseRequest::Release { kind, id } => {
                sql.exec(
                    "DELETE FROM leases WHERE kind = ? AND id = ?",
                    vec![kind.clone().into(), id.clone().into()],
                )
                .and_then(|c| c.to_array::<serde_json::Value>())
                .map_err(fail)?;
                (kind, None)
            }
            LeaseRequest::Acquire {
                kind,
                id,
                max,
                ttl_ms,
                admitted,
            } => {
                let held: Vec<Held> = sql
                    .exec(
                        "SELECT id, taken_ms, expires_ms FROM leases WHERE kind = ?",
                        vec![kind.clone().into()],
                    )
                    .and_then(|c| rows(c, Held::read))
                    .map_err(fail)?;
                let d = leases::decide(&held, id, *max, *admitted, now);
                if !d.granted {
                    return Ok(LeaseAnswer {
                        allowed: false,
                        holders: d.holders,
                    });
                }
                let expires = now + *ttl_ms as f64;
                sql.exec(
                    "INSERT INTO leases (kind, id, taken_ms, expires_ms) VALUES (?, ?, ?, ?)
                     ON CONFLICT (kind, id) DO UPDATE SET expires_ms = excluded.expires_ms",
                    vec![
                        kind.clone().into(),
                        id.clone().into(),
                        now.into(),
                        expires.into(),
                    ],
                )
                .and_then(|c| c.to_array::<serde_json::Value>())
                .map_err(fail)?;
                (kind, Some(expires))
            }
        };
        let holders: Vec<String> = sql
            .exec(
                "SELECT id FROM leases WHERE kind = ? AND expires_ms > ? ORDER BY taken_ms",
                vec![kind.clone().into(), now.into()],
            )
            .and_then(|c| rows(c, lease_id))
            .map_err(fail)?;
        if let (Some(at), false) = (expires, self.armed.get()) {
            self.arm(at).await?;
        }
        Ok(LeaseAnswer {
            allowed: true,
            holders,
        })
    }

    async fn take(&self, take: &Take) -> Result<Taken> {
        if take.capacity == 0 || take.period_ms == 0 {
            return Err(Error::InvalidRequest(
                "rate limiter request: capacity and period_ms must be positive".into(),
            ));
        }
        let limit = Limit {
            capacity: take.capacity,
            period_ms: take.period_ms,
        };
        let now = clock::now_ms();
        let sql = self.sql()?;
        let stored: Vec<Row> = sql
            .exec(
                "SELECT tokens, updated_ms FROM buckets WHERE tool = ?",
                vec![take.tool.clone().into()],
            )
            .and_then(|c| rows(c, Row::read))
            .map_err(|e| Error::Storage(format!("rate limiter read: {e}")))?;
        let mut bucket = match stored.into_iter().next() {
            Some(r) => Bucket {
                tokens: r.tokens,
                updated_ms: r.updated_ms,
            },
            None => Bucket::full(limit, now),
        };
        let admission = if take.backoff {
            bucket.take_or_owe(limit, now)
        } else {
            bucket.take(limit, now)
        };
        let full_at = bucket.full_at_ms(limit);
        sql.exec(
            "INSERT INTO buckets (tool, tokens, updated_ms, full_at_ms) VALUES (?, ?, ?, ?)
             ON CONFLICT (tool) DO UPDATE SET tokens = excluded.tokens,
               updated_ms = excluded.updated_ms, full_at_ms = excluded.full_at_ms",
            vec![
                take.tool.clone().into(),
                bucket.tokens.into(),
                bucket.updated_ms.into(),
                full_at.into(),
            ],
        )
        .and_then(|c| c.to_array::<serde_json::Value>())
        .map_err(|e| Error::Storage(format!("rate limiter write: {e}")))?;
        if !self.armed.get() {
            self.arm(full_at).await?;
        }
        Ok(admission.into())
    }

    async fn arm(&self, at_ms: f64) -> Result<()> {
        let delay = (at_ms - clock::now_ms()).max(0.0) as i64 + 1000;
        self.state
            .storage()
            .set_alarm(delay)
            .await
            .map_err(Error::from)?;
        self.armed.set(true);
        Ok(())
    }

    /// Deletes the buckets that are full by now and the leases that lapsed; re-arms for the last
    /// of the others, or empties the object when none is left.
    async fn forget_full(&self) -> Result<()> {
        let sql = self.sql()?;
        let now = clock::now_ms();
        let latest: Vec<Latest> = sql
            .exec(
                "DELETE FROM buckets WHERE full_at_ms <= ?",
                vec![now.into()],
            )
            .and_then(|c| c.to_array::<serde_json::Value>())
            .and_then(|_| sql.exec("DELETE FROM leases WHERE expires_ms <= ?", vec![now.into()]))
            .and_then(|c| c.to_array::<serde_json::Value>())
            .and_then(|_| {
                sql.exec(
                    "SELECT MAX(at) AS full_at_ms FROM (SELECT MAX(full_at_ms) AS at FROM buckets
                     UNION ALL SELECT MAX(expires_ms) FROM leases)",
                    None,
                )
            })
            .and_then(|c| rows(c, Latest::read))
            .map_err(|e| Error::Storage(format!("rate limiter cleanup: {e}")))?;
        match latest.into_iter().next().and_then(|l| l.full_at_ms) {
            Some(at) => self.arm(at).await,
            None => {
                self.armed.set(false);
                self.state.storage().delete_all().await.map_err(Error::from)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::assert_same_as_derive as same;
    use serde_json::json;

    /// A take request and its answer, read by hand, accept exactly what their derives accept.
    #[test]
    fn takes_read_as_their_derives_read_them() {
        same(
            Take::read,
            &[
                json!({ "tool": "t", "capacity": 5, "period_ms": 60000, "backoff": true }),
                json!({ "tool": "t", "capacity": 5, "period_ms": 60000 }),
                json!({ "tool": "t", "capacity": 5, "period_ms": 60000, "backoff": null }),
                json!({ "tool": "t", "capacity": 4_294_967_296_u64, "period_ms": 1 }),
                json!({ "tool": "t", "capacity": -1, "period_ms": 1 }),
                json!({ "tool": "t", "capacity": 1, "period_ms": 1.5 }),
                json!({ "tool": 1, "capacity": 1, "period_ms": 1 }),
                json!({ "capacity": 1, "period_ms": 1 }),
                json!({ "tool": "t", "period_ms": 1 }),
                json!({ "tool": "t", "capacity": 1, "period_ms": 1, "more": [] }),
                json!(null),
                json!("take"),
            ],
        );
        same(
            Taken::read,
            &[
                json!({ "allowed": true, "retry_after_secs": 0 }),
                json!({ "allowed": false, "retry_after_secs": 30, "more": 1 }),
                json!({ "allowed": "no", "retry_after_secs": 30 }),
                json!({ "allowed": false, "retry_after_secs": -2 }),
                json!({ "allowed": false }),
                json!({ "retry_after_secs": 1 }),
                json!({ "allowed": null, "retry_after_secs": 1 }),
                json!(null),
            ],
        );
    }

    /// The limiter's rows read by hand accept exactly what their derives accept.
    #[test]
    fn rows_read_as_their_derives_read_them() {
        same(
            Row::read,
            &[
                json!({ "tokens": 2.5, "updated_ms": 1_700_000_000_000_i64 }),
                json!({ "tokens": 3, "updated_ms": 1.5 }),
                json!({ "tokens": "3", "updated_ms": 1 }),
                json!({ "tokens": null, "updated_ms": 1 }),
                json!({ "updated_ms": 1 }),
                json!(null),
                json!([]),
            ],
        );
        same(
            Latest::read,
            &[
                json!({ "full_at_ms": 12.5 }),
                json!({ "full_at_ms": 12 }),
                json!({ "full_at_ms": null }),
                json!({}),
                json!({ "full_at_ms": "12" }),
                json!(null),
            ],
        );
        #[derive(Deserialize, Debug, PartialEq)]
        struct Id {
            id: String,
        }
        let ids = [
            json!({ "id": "run-1" }),
            json!({ "id": 1 }),
            json!({ "id": null }),
            json!({}),
            json!(null),
        ];
        for row in ids {
            let derived = serde_json::from_value::<Id>(row.clone()).map(|i| i.id);
            assert_eq!(lease_id(row.clone()).ok(), derived.ok(), "row {row}");
        }
    }
}
