//! Per-caller, per-tool rate limits: the token-bucket arithmetic and the `RATE_LIMITS` setting.
//!
//! Every caller has one bucket per tool. A bucket holds up to `capacity` tokens and refills at
//! `capacity` tokens per `period`; a call takes one token. So `60/60s` allows a burst of 60 calls
//! and then one a second. The buckets live in the `RateLimiter` Durable Object (`src/limiter/`),
//! one object per caller; this module is only the arithmetic, so `cargo test` checks it natively.
//!
//! `RATE_LIMITS` is a comma-separated list of `<tool>=<count>/<period>` entries: `<tool>` is a
//! tool's MCP name or `*` for every tool not named; `<period>` is `s`, `m`, `h` or a number of them
//! (`30s`, `5m`); `off` instead of `<count>/<period>` removes the limit. Example:
//! `*=120/60s, search_flights=10/1m, get_mode_indicator=off`. Unset or empty: [`DEFAULT_LIMIT`]
//! for every tool but those that declare a limit of their own (`ToolDef::rate_limit`, seed 001's
//! table: `field_request` 60 a minute with bursts of 10, `evaluate_semantic_condition` 100 a
//! minute, `execute_workflow` 20 a minute), which keep it unless the setting names them or has a
//! `*` entry.

use std::fmt;

use super::per_tool::PerTool;
use super::Registry;

/// The limit of every tool that `RATE_LIMITS` does not name: 120 calls per minute.
pub const DEFAULT_LIMIT: Limit = Limit {
    capacity: 120,
    period_ms: 60_000,
};

/// Most calls one entry may allow per period (a larger burst is no limit at all).
const MAX_CAPACITY: u32 = 1_000_000;

/// Longest period one entry may name: a day.
const MAX_PERIOD_MS: u64 = 86_400_000;

/// `capacity` calls per `period_ms`, refilled continuously.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// Most tokens a bucket holds: the largest burst.
    pub capacity: u32,
    /// The time a bucket takes to refill from empty, in milliseconds.
    pub period_ms: u64,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.period_ms / 1000;
        let calls = if self.capacity == 1 { "call" } else { "calls" };
        write!(f, "{} {calls} per {secs} s", self.capacity)
    }
}

/// One tool's bucket of one caller: the tokens it held at `updated_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// Tokens at `updated_ms` (fractional: refill is continuous).
    pub tokens: f64,
    /// When `tokens` was computed (Unix milliseconds).
    pub updated_ms: f64,
}

/// What a bucket says to one call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admission {
    /// The call may run; it took a token.
    Allowed,
    /// The bucket is empty; the next token arrives in this many whole seconds (at least 1).
    Refused {
        /// Seconds until a call would be allowed.
        retry_after_secs: u64,
    },
}

impl Bucket {
    /// A full bucket, as a caller's first call of a tool finds it.
    pub fn full(limit: Limit, now_ms: f64) -> Bucket {
        Bucket {
            tokens: f64::from(limit.capacity),
            updated_ms: now_ms,
        }
    }

    /// The tokens at `now_ms`: refilled at `capacity / period` per millisecond, never above
    /// `capacity` (a limit lowered since the last call takes effect at once). A clock that went
    /// backwards refills nothing.
    pub fn tokens_at(&self, limit: Limit, now_ms: f64) -> f64 {
        let capacity = f64::from(limit.capacity);
        let elapsed = (now_ms - self.updated_ms).max(0.0);
        let refill = elapsed * capacity / limit.period_ms.max(1) as f64;
        (self.tokens + refill).min(capacity)
    }

    /// Takes a token for a call at `now_ms`, or says how long until one is there.
    pub fn take(&mut self, limit: Limit, now_ms: f64) -> Admission {
        let tokens = self.tokens_at(limit, now_ms);
        self.updated_ms = now_ms.max(self.updated_ms);
        if tokens >= 1.0 {
            self.tokens = tokens - 1.0;
            Admission::Allowed
        } else {
            self.tokens = tokens;
            Admission::Refused {
                retry_after_secs: retry_after_secs(limit, tokens),
            }
        }
    }

    /// Like [`Bucket::take`], but a refused call still takes a token, as debt, down to
    /// `-capacity`: a caller who keeps calling while refused waits a token's refill time longer
    /// with every call (at most a full period more), while one who waits as told is unaffected.
    pub fn take_or_owe(&mut self, limit: Limit, now_ms: f64) -> Admission {
        match self.take(limit, now_ms) {
            Admission::Allowed => Admission::Allowed,
            Admission::Refused { .. } => {
                self.tokens = (self.tokens - 1.0).max(-f64::from(limit.capacity));
                Admission::Refused {
                    retry_after_secs: retry_after_secs(limit, self.tokens),
                }
            }
        }
    }

    /// When the bucket will be full again (Unix milliseconds): until then it must be kept.
    pub fn full_at_ms(&self, limit: Limit) -> f64 {
        let missing = (f64::from(limit.capacity) - self.tokens).max(0.0);
        self.updated_ms + missing * limit.period_ms as f64 / f64::from(limit.capacity.max(1))
    }
}

/// Whole seconds until a bucket holding `tokens` (< 1) has one token, rounded up, at least 1.
pub fn retry_after_secs(limit: Limit, tokens: f64) -> u64 {
    let ms_per_token = limit.period_ms as f64 / f64::from(limit.capacity.max(1));
    let wait_ms = (1.0 - tokens).max(0.0) * ms_per_token;
    ((wait_ms / 1000.0).ceil() as u64).max(1)
}

/// The limits of a deployment: one for every tool, and per-tool exceptions. `None` is no limit.
pub type RateLimits = PerTool<Option<Limit>>;

impl Default for RateLimits {
    fn default() -> Self {
        PerTool::all(Some(DEFAULT_LIMIT))
    }
}

impl RateLimits {
    /// Parses `RATE_LIMITS` (see the module documentation). The error names the bad entry and
    /// says what was expected.
    pub fn parse_setting(text: &str) -> Result<RateLimits, String> {
        PerTool::parse(
            "RATE_LIMITS",
            text,
            Some(DEFAULT_LIMIT),
            "<tool>=<count>/<period> (for example search_flights=10/60s), <tool>=off, or *=<count>/<period> for every other tool",
            parse_limit,
        )
    }

    /// The limit of the tool with this MCP name in `registry`: the setting's, else the one the
    /// tool declares ([`crate::registry::ToolDef::rate_limit`]) unless the setting has a `*`
    /// entry, else the default; `None` when it is unlimited.
    pub fn for_tool(&self, registry: &Registry, name: &str) -> Option<Limit> {
        let own = registry.get(name).and_then(|t| t.def.rate_limit);
        self.get_declared(name, own.map(Some))
    }
}

/// Parses a setting holding one limit (`<count>/<period>` or `off`), such as `REQUEST_LIMIT`;
/// unset or empty: `default`. The error names the setting and says what was expected.
pub fn parse_one(
    setting: &str,
    text: &str,
    default: Option<Limit>,
) -> Result<Option<Limit>, String> {
    if text.trim().is_empty() {
        return Ok(default);
    }
    parse_limit(text.trim()).map_err(|why| {
        format!("{setting} {text:?} is invalid: {why}; expected <count>/<period> (for example 600/60s) or off")
    })
}

fn parse_limit(value: &str) -> Result<Option<Limit>, String> {
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let (count, period) = value
        .split_once('/')
        .ok_or_else(|| "there is no / between the count and the period".to_string())?;
    let capacity: u32 = count
        .trim()
        .parse()
        .ok()
        .filter(|c| (1..=MAX_CAPACITY).contains(c))
        .ok_or_else(|| format!("the count must be a whole number from 1 to {MAX_CAPACITY}"))?;
    let period = period.trim();
    let unit_ms = match period.chars().last() {
        Some('s') => 1000,
        Some('m') => 60_000,
        Some('h') => 3_600_000,
        _ => return Err("the period must end in s, m or h".into()),
    };
    let amount = &period[..period.len() - 1];
    let amount: u64 =
        if amount.is_empty() {
            1
        } else {
            amount.parse().ok().filter(|a| *a > 0).ok_or_else(|| {
                "the period must be a positive whole number of s, m or h".to_string()
            })?
        };
    let period_ms = amount.saturating_mul(unit_ms);
    if period_ms > MAX_PERIOD_MS {
        return Err("the period must be at most a day (24h)".into());
    }
    Ok(Some(Limit {
        capacity,
        period_ms,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{catalog, Catalog};

    /// The tools as deployed, whose declarations give some of them limits of their own.
    fn registry() -> Registry {
        Registry::new(catalog(Catalog::Production)).expect("the production registry builds")
    }

    const THREE_PER_MINUTE: Limit = Limit {
        capacity: 3,
        period_ms: 60_000,
    };

    #[test]
    fn refused_calls_of_a_backing_off_tool_lengthen_the_wait() {
        let ten = Limit {
            capacity: 10,
            period_ms: 10_000,
        };
        let mut b = Bucket::full(ten, 0.0);
        for _ in 0..10 {
            assert_eq!(b.take_or_owe(ten, 0.0), Admission::Allowed);
        }
        let waits: Vec<u64> = (0..14)
            .map(|_| match b.take_or_owe(ten, 0.0) {
                Admission::Refused { retry_after_secs } => retry_after_secs,
                Admission::Allowed => 0,
            })
            .collect();
        assert_eq!(
            waits[..4],
            [2, 3, 4, 5],
            "each premature call adds a second"
        );
        assert_eq!(
            *waits.last().unwrap(),
            11,
            "at most a period more than the first wait"
        );
        // Waiting as told works: after the announced 11 s a token is there.
        assert_eq!(b.take_or_owe(ten, 11_000.0), Admission::Allowed);
        let mut plain = Bucket::full(ten, 0.0);
        for _ in 0..10 {
            plain.take(ten, 0.0);
        }
        for _ in 0..5 {
            assert_eq!(
                plain.take(ten, 0.0),
                Admission::Refused {
                    retry_after_secs: 1
                },
                "other tools do not back off"
            );
        }
    }

    #[test]
    fn built_in_limits_yield_to_the_setting() {
        let r = registry();
        let field = |text: &str| {
            RateLimits::parse_setting(text)
                .unwrap()
                .for_tool(&r, "field_request")
        };
        let seed = Some(Limit {
            capacity: 10,
            period_ms: 10_000,
        });
        assert_eq!(field(""), seed, "60 a minute, bursts of 10");
        assert_eq!(RateLimits::default().for_tool(&r, "field_request"), seed);
        assert_eq!(field("search_flights=1/m"), seed);
        assert_eq!(
            field("field_request=5/1m"),
            Some(Limit {
                capacity: 5,
                period_ms: 60_000
            })
        );
        assert_eq!(field("field_request=off"), None);
        assert_eq!(
            field("*=off"),
            None,
            "* covers every tool the setting does not name"
        );
        assert_eq!(
            RateLimits::parse_setting("")
                .unwrap()
                .for_tool(&r, "evaluate_semantic_condition"),
            Some(Limit {
                capacity: 100,
                period_ms: 60_000
            })
        );
        assert_eq!(
            RateLimits::parse_setting("")
                .unwrap()
                .for_tool(&r, "switch_mode"),
            Some(DEFAULT_LIMIT)
        );
    }

    #[test]
    fn a_full_bucket_allows_a_burst_of_capacity_then_refuses() {
        let mut b = Bucket::full(THREE_PER_MINUTE, 0.0);
        for _ in 0..3 {
            assert_eq!(b.take(THREE_PER_MINUTE, 0.0), Admission::Allowed);
        }
        assert_eq!(
            b.take(THREE_PER_MINUTE, 0.0),
            Admission::Refused {
                retry_after_secs: 20
            }
        );
    }

    #[test]
    fn tokens_refill_continuously_and_never_above_capacity() {
        let b = Bucket {
            tokens: 0.0,
            updated_ms: 1000.0,
        };
        assert_eq!(b.tokens_at(THREE_PER_MINUTE, 11_000.0), 0.5);
        assert_eq!(b.tokens_at(THREE_PER_MINUTE, 1000.0 + 3_600_000.0), 3.0);
        assert_eq!(b.tokens_at(THREE_PER_MINUTE, 0.0), 0.0, "clock went back");
        let lowered = Limit {
            capacity: 1,
            period_ms: 60_000,
        };
        let full = Bucket::full(THREE_PER_MINUTE, 0.0);
        assert_eq!(full.tokens_at(lowered, 0.0), 1.0, "a lowered limit applies");
    }

    #[test]
    fn retry_after_is_the_time_to_the_next_token_rounded_up() {
        let mut b = Bucket {
            tokens: 0.0,
            updated_ms: 0.0,
        };
        assert_eq!(
            b.take(THREE_PER_MINUTE, 10_000.0),
            Admission::Refused {
                retry_after_secs: 10
            }
        );
        assert_eq!(
            b.take(THREE_PER_MINUTE, 19_500.0),
            Admission::Refused {
                retry_after_secs: 1
            }
        );
        assert_eq!(b.take(THREE_PER_MINUTE, 20_000.0), Admission::Allowed);
        assert_eq!(b.tokens, 0.0);
        let fast = Limit {
            capacity: 1000,
            period_ms: 1000,
        };
        assert_eq!(retry_after_secs(fast, 0.999), 1, "never less than a second");
    }

    #[test]
    fn full_at_is_when_the_bucket_refills() {
        let b = Bucket {
            tokens: 1.0,
            updated_ms: 5000.0,
        };
        assert_eq!(b.full_at_ms(THREE_PER_MINUTE), 45_000.0);
        assert_eq!(
            Bucket::full(THREE_PER_MINUTE, 7.0).full_at_ms(THREE_PER_MINUTE),
            7.0
        );
    }

    #[test]
    fn the_setting_names_a_default_and_exceptions() {
        let r = registry();
        let l = RateLimits::parse_setting(
            " *=10/30s, search_flights=2/m , get_mode_indicator=OFF,x=5/2h",
        )
        .unwrap();
        assert_eq!(
            l.for_tool(&r, "anything"),
            Some(Limit {
                capacity: 10,
                period_ms: 30_000
            })
        );
        assert_eq!(
            l.for_tool(&r, "search_flights"),
            Some(Limit {
                capacity: 2,
                period_ms: 60_000
            })
        );
        assert_eq!(l.for_tool(&r, "get_mode_indicator"), None);
        assert_eq!(l.for_tool(&r, "x").map(|l| l.period_ms), Some(7_200_000));
        assert_eq!(l.unknown_tools(|n| n != "x"), vec!["x".to_string()]);
        assert_eq!(
            RateLimits::parse_setting("").unwrap(),
            RateLimits::default()
        );
        assert_eq!(
            RateLimits::parse_setting("*=off")
                .unwrap()
                .for_tool(&r, "any"),
            None,
            "no limit at all"
        );
        assert_eq!(RateLimits::default().for_tool(&r, "t"), Some(DEFAULT_LIMIT));
        assert_eq!(DEFAULT_LIMIT.to_string(), "120 calls per 60 s");
    }

    #[test]
    fn a_bad_entry_is_named_with_what_was_expected() {
        for (text, why) in [
            ("search_flights", "there is no ="),
            ("=5/s", "the tool name is empty"),
            ("a=5", "there is no /"),
            ("a=0/s", "count must be a whole number"),
            ("a=ten/s", "count must be a whole number"),
            ("a=5/10", "must end in s, m or h"),
            ("a=5/0s", "positive whole number"),
            ("a=5/2d", "must end in s, m or h"),
            ("a=5/25h", "at most a day"),
            ("a=5/s,a=off", "named twice"),
        ] {
            let e = RateLimits::parse_setting(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
            assert!(e.contains("RATE_LIMITS entry"), "{e}");
        }
        let e = RateLimits::parse_setting("*=5/s, bad entry").unwrap_err();
        assert!(e.contains("\"bad entry\""), "{e}");
    }
}
