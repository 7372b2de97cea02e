//! The configured model provider (`MODEL_PROVIDER_URL`, an OpenAI-compatible chat completions
//! endpoint) as tools ask it: one request shape and one reading of the answer, so chain steps and
//! FlowMind's conditions send the same key (`MODEL_PROVIDER_KEY`) and model
//! (`MODEL_PROVIDER_MODEL`), and read the reply the same way. What a failure means differs per
//! caller (a chain step retries, a condition falls back to its rules), so that stays with them.

use serde_json::{json, Value};

use crate::registry::{Outbound, Platform};

/// The request asking the provider at `url` to answer `user` under the `system` prompt;
/// `temperature` is sent only when given.
pub fn request(
    platform: &dyn Platform,
    url: String,
    system: &str,
    user: &str,
    max_tokens: u32,
    temperature: Option<f64>,
) -> Outbound {
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if let Some(key) = platform.setting("MODEL_PROVIDER_KEY") {
        headers.push(("authorization".into(), format!("Bearer {key}")));
    }
    let mut body = json!({
        "model": platform.setting("MODEL_PROVIDER_MODEL").unwrap_or_else(|| "default".into()),
        "messages": [
            { "role": "system", "content": system },
            { "role": "user", "content": user }
        ],
        "max_tokens": max_tokens,
    });
    if let Some(t) = temperature {
        body["temperature"] = json!(t);
    }
    Outbound {
        method: "POST",
        url,
        headers,
        body: Some(body.to_string()),
    }
}

/// The answer's text (`choices[0].message.content`), or `None` when the body is not a chat
/// completion.
pub fn reply_text(body: &str) -> Option<String> {
    serde_json::from_str::<Value>(body)
        .ok()?
        .pointer("/choices/0/message/content")?
        .as_str()
        .map(str::to_string)
}

/// Says what is missing when [`reply_text`] finds no answer.
pub const NO_REPLY_TEXT: &str = "the model provider's answer has no choices[0].message.content";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_text_is_the_first_choices_message() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":"{\"a\":1}"}}]}"#;
        assert_eq!(reply_text(body).as_deref(), Some("{\"a\":1}"));
        assert_eq!(reply_text(r#"{"choices":[]}"#), None);
        assert_eq!(reply_text("not json"), None);
    }
}
