//! What the tools that call third-party HTTP APIs share (`flights`, `calendar`): reading their
//! credential and base URL, and turning the API's answer into JSON or a tool error the model can
//! act on.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::registry::{Inbound, Outbound, ToolContext};

/// A third-party API as the errors name it.
pub struct Api {
    /// Its name for messages, e.g. `Duffel`.
    pub name: &'static str,
    /// The secret holding its token, named in errors so an operator knows what to set.
    pub token_setting: &'static str,
    /// The setting that overrides its base URL (tests point it at a local stand-in).
    pub base_url_setting: &'static str,
    /// The base URL used when that setting is empty.
    pub default_base_url: &'static str,
    /// Picks the human-readable message out of the API's JSON error body.
    pub error_message: fn(&Value) -> Option<String>,
}

impl Api {
    /// The API token, or a tool error naming the secret to set.
    pub fn token(&self, ctx: &dyn ToolContext) -> Result<String> {
        ctx.platform().setting(self.token_setting).ok_or_else(|| {
            Error::ToolFailed(format!(
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

    /// Sends `request` once (POSTs are not retried: a retry could repeat work upstream) and returns
    /// the JSON body of a 2xx answer; anything else becomes a tool error.
    pub async fn send(&self, ctx: &dyn ToolContext, request: Outbound) -> Result<Value> {
        let reply = ctx.platform().fetch(request).await.map_err(|e| {
            Error::ToolFailed(format!(
                "{} could not be reached ({}); this is usually temporary, try again later.",
                self.name,
                e.public_message()
            ))
        })?;
        self.read(&reply)
    }

    /// Classifies an answer: JSON of a 2xx, or the tool error for its status.
    pub fn read(&self, reply: &Inbound) -> Result<Value> {
        let status = reply.status;
        let json = serde_json::from_str::<Value>(&reply.body).ok();
        if status == 429 || status >= 500 {
            return Err(Error::ToolFailed(format!(
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
                format!(" Check the secret {}.", self.token_setting)
            } else {
                " Fix the arguments and try again.".to_string()
            };
            return Err(Error::ToolFailed(format!(
                "{} rejected the request (HTTP {status}): {message}.{hint}",
                self.name
            )));
        }
        if !(200..300).contains(&status) {
            return Err(Error::ToolFailed(format!(
                "{} answered with an unexpected HTTP {status}; try again later.",
                self.name
            )));
        }
        json.ok_or_else(|| {
            Error::ToolFailed(format!(
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
        let msg = |r: Result<Value>| match r {
            Err(Error::ToolFailed(m)) => m,
            other => panic!("{other:?}"),
        };
        let m = msg(a.read(&reply(400, r#"{"message":"bad date"}"#)));
        assert!(m.contains("HTTP 400") && m.contains("bad date"), "{m}");
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
