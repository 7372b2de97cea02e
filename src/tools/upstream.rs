//! What the tools that call third-party HTTP APIs share (`flights`, `calendar`): reading their
//! credential and base URL, and turning the API's answer into JSON or a tool error the model can
//! act on.

use futures::future::{select, Either};
use serde_json::Value;

use crate::registry::{Inbound, Outbound, ToolContext, ToolError, ToolResult};

/// Tries an idempotent request gets before its failure is final.
const ATTEMPTS: u32 = 3;
/// Pause before the second try, in milliseconds; doubled before each further one.
const BACKOFF_MS: u32 = 250;
/// How long one try waits for an answer. Three tries and their pauses fit in a 20 s tool timeout.
const ATTEMPT_TIMEOUT_MS: u32 = 6_000;

/// The usual advice for a 4xx refusal of a call's request.
pub const FIX_ARGUMENTS: &str = "Fix the arguments and try again.";

/// A third-party API as the errors name it.
pub struct Api {
    /// Its name for messages, e.g. `Duffel`.
    pub name: &'static str,
    /// The secret holding its token, named in errors so an operator knows what to set.
    pub token_setting: &'static str,
    /// What an operator should check when the API refuses the credentials (HTTP 401 or 403).
    pub auth_hint: &'static str,
    /// What to do about any other 4xx refusal (for most APIs: fix the arguments).
    pub refusal_hint: &'static str,
    /// The setting that overrides its base URL (tests point it at a local stand-in).
    pub base_url_setting: &'static str,
    /// The base URL used when that setting is empty.
    pub default_base_url: &'static str,
    /// Picks the human-readable message out of the API's JSON error body.
    pub error_message: fn(&Value) -> Option<String>,
}

impl Api {
    /// The API token, or a tool error naming the secret to set.
    pub fn token(&self, ctx: &dyn ToolContext) -> ToolResult<String> {
        ctx.platform().setting(self.token_setting).ok_or_else(|| {
            ToolError::failed(format!(
                "{} is not configured on this server: set the secret {} (npx wrangler secret put {}).",
                self.name, self.token_setting, self.token_setting
            ))
        })
    }

    /// The base URL without a trailing slash, so paths can be appended as `/...`.
    pub fn base_url(&self, ctx: &dyn ToolContext) -> String {
        ctx.platform()
            .setting(self.base_url_setting)
            .unwrap_or_else(|| self.default_base_url.to_string())
            .trim_end_matches('/')
            .to_string()
    }

    /// Sends `request` once (a POST that creates something upstream is not retried: a retry could
    /// repeat the work) and returns the JSON body of a 2xx answer; anything else becomes a tool error.
    pub async fn send(&self, ctx: &dyn ToolContext, request: Outbound) -> ToolResult<Value> {
        self.attempt(ctx, request).await.0
    }

    /// Sends a request that may safely be repeated (a read, a token grant): an answer that says
    /// "temporarily" (HTTP 429, 5xx), an unreachable API or an attempt that hangs is tried again
    /// after a growing pause, [`ATTEMPTS`] times in all; a 4xx other than 429 is final at once.
    pub async fn send_idempotent(
        &self,
        ctx: &dyn ToolContext,
        request: Outbound,
    ) -> ToolResult<Value> {
        let mut pause = BACKOFF_MS;
        for _ in 1..ATTEMPTS {
            match self.attempt(ctx, request.clone()).await {
                (Err(_), true) => {
                    ctx.sleep(pause).await;
                    pause *= 2;
                }
                (answer, _) => return answer,
            }
        }
        self.attempt(ctx, request).await.0.map_err(|e| match e {
            ToolError::Failed { message: m } => {
                ToolError::failed(format!("{m} (tried {ATTEMPTS} times)"))
            }
            other => other,
        })
    }

    /// One try: the answer, and whether a failure is worth another try.
    async fn attempt(&self, ctx: &dyn ToolContext, request: Outbound) -> (ToolResult<Value>, bool) {
        let fetch = ctx.platform().fetch(request);
        match select(fetch, ctx.sleep(ATTEMPT_TIMEOUT_MS)).await {
            Either::Left((Ok(reply), _)) => (
                self.read(&reply),
                reply.status == 429 || reply.status >= 500,
            ),
            Either::Left((Err(e), _)) => (
                Err(ToolError::failed(format!(
                    "{} could not be reached ({}); this is usually temporary, try again later.",
                    self.name,
                    e.public_message()
                ))),
                true,
            ),
            Either::Right(_) => (
                Err(ToolError::failed(format!(
                    "{} did not answer within {} s; this is usually temporary, try again later.",
                    self.name,
                    ATTEMPT_TIMEOUT_MS / 1000
                ))),
                true,
            ),
        }
    }

    /// Classifies an answer: JSON of a 2xx, or the tool error for its status.
    pub fn read(&self, reply: &Inbound) -> ToolResult<Value> {
        let status = reply.status;
        let json = serde_json::from_str::<Value>(&reply.body).ok();
        if status == 429 || status >= 500 {
            return Err(ToolError::failed(format!(
                "{} is temporarily unavailable (HTTP {status}); this is temporary, try again later.",
                self.name
            )));
        }
        if (400..500).contains(&status) {
            let message = json
                .as_ref()
                .and_then(self.error_message)
                .unwrap_or_else(|| excerpt(&reply.body));
            let hint = if status == 401 || status == 403 {
                format!(" {}", self.auth_hint)
            } else {
                format!(" {}", self.refusal_hint)
            };
            return Err(ToolError::failed(format!(
                "{} rejected the request (HTTP {status}): {}.{hint}",
                self.name,
                message.trim_end_matches('.')
            )));
        }
        if !(200..300).contains(&status) {
            return Err(ToolError::failed(format!(
                "{} answered with an unexpected HTTP {status}; try again later.",
                self.name
            )));
        }
        json.ok_or_else(|| {
            ToolError::failed(format!(
                "{} answered HTTP {status} with a body that is not JSON ({}); try again later.",
                self.name,
                excerpt(&reply.body)
            ))
        })
    }
}

/// The start of a body for an error message: bodies can be whole HTML pages.
fn excerpt(body: &str) -> String {
    let text: String = body.trim().chars().take(200).collect();
    if text.is_empty() {
        "empty body".to_string()
    } else {
        text
    }
}

/// Percent-encodes `s` for a URL path segment or query value: everything but RFC 3986's
/// unreserved characters, so `/`, `@`, `#` and `+` (time zone offsets) survive the trip.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> Api {
        Api {
            name: "Test API",
            token_setting: "TEST_TOKEN",
            auth_hint: "Check the secret TEST_TOKEN.",
            refusal_hint: FIX_ARGUMENTS,
            base_url_setting: "TEST_BASE_URL",
            default_base_url: "https://example.com",
            error_message: |v| v["message"].as_str().map(str::to_string),
        }
    }

    fn reply(status: u16, body: &str) -> Inbound {
        Inbound {
            status,
            body: body.to_string(),
        }
    }

    #[test]
    fn encodes_everything_but_unreserved_characters() {
        assert_eq!(encode("a.b-c_d~e"), "a.b-c_d~e");
        assert_eq!(encode("team@x.com"), "team%40x.com");
        assert_eq!(
            encode("2025-05-10T00:00:00+02:00"),
            "2025-05-10T00%3A00%3A00%2B02%3A00"
        );
        assert_eq!(encode("a/b c#"), "a%2Fb%20c%23");
    }

    #[test]
    fn classifies_answers() {
        let a = api();
        assert_eq!(
            a.read(&reply(200, r#"{"x":1}"#)),
            Ok(serde_json::json!({"x":1}))
        );
        let msg = |r: ToolResult<Value>| match r {
            Err(ToolError::Failed { message: m }) => m,
            other => panic!("{other:?}"),
        };
        let m = msg(a.read(&reply(400, r#"{"message":"bad date"}"#)));
        assert!(m.contains("HTTP 400") && m.contains("bad date"), "{m}");
        let m = msg(a.read(&reply(400, r#"{"message":"Bad date."}"#)));
        assert!(m.contains("Bad date. Fix the arguments"), "{m}");
        let m = msg(a.read(&reply(401, "nope")));
        assert!(m.contains("nope") && m.contains("TEST_TOKEN"), "{m}");
        for status in [429, 500, 503] {
            let m = msg(a.read(&reply(status, "busy")));
            assert!(
                m.contains("temporar") && m.contains("try again later"),
                "{m}"
            );
        }
        let m = msg(a.read(&reply(200, "<html>")));
        assert!(m.contains("not JSON") && m.contains("<html>"), "{m}");
    }
}
