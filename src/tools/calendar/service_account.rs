//! Google service-account credentials (`GOOGLE_SERVICE_ACCOUNT_KEY`, the JSON key file Google
//! hands out): the account signs its own JWT with RS256 and trades it at the key's `token_uri` for
//! an access token (OAuth 2.0 JWT bearer grant, RFC 7523), which is kept until a minute before it
//! expires so a busy instance asks Google once an hour, not once a call.
//!
//! The signing itself is WebCrypto's (`Platform::sign_rs256`); this module builds and reads
//! everything around it, so it is tested natively.

use std::cell::RefCell;
use std::collections::HashMap;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde_json::{json, Value};

use crate::clock;
use crate::registry::{Outbound, ToolContext, ToolError, ToolResult};
use crate::tools::upstream::{encode, Api};

/// The secret holding the service account's JSON key.
pub const KEY_SETTING: &str = "GOOGLE_SERVICE_ACCOUNT_KEY";
/// The user a Workspace domain-wide delegation acts as (optional): the token's `sub`.
pub const SUBJECT_SETTING: &str = "GOOGLE_CALENDAR_SUBJECT";
/// What the minted tokens may do: read calendars, nothing more.
pub const SCOPE: &str = "https://www.googleapis.com/auth/calendar.readonly";
/// Google's token endpoint, for keys that do not name one.
const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// Lifetime asked for the signed assertion; Google accepts at most an hour.
const ASSERTION_SECS: i64 = 3600;
/// A cached token is dropped this long before Google says it expires, so no call carries a token
/// that expires on the way.
const EXPIRY_MARGIN_MS: f64 = 60_000.0;

thread_local! {
    /// Access tokens minted by this instance: (client_email, subject, token_uri) → (token, expires at ms).
    static TOKENS: RefCell<HashMap<String, (String, f64)>> = RefCell::new(HashMap::new());
}

/// The parts of a service account's JSON key that minting a token needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceAccount {
    /// The account's identity, the assertion's issuer (share calendars with this address).
    pub client_email: String,
    /// The PKCS#8 private key, DER bytes.
    pub key_der: Vec<u8>,
    /// Where the assertion is traded for an access token.
    pub token_uri: String,
}

fn bad_key(why: &str) -> ToolError {
    ToolError::failed(format!(
        "The secret {KEY_SETTING} is not a usable service account key: {why}. Put the JSON key file \
         Google gives for the service account (IAM > Service accounts > Keys > Add key > JSON): \
         npx wrangler secret put {KEY_SETTING} < key.json"
    ))
}

/// Reads the JSON key file; every problem names the secret and what it should hold.
pub fn parse(text: &str) -> ToolResult<ServiceAccount> {
    let key: Value = serde_json::from_str(text).map_err(|_| bad_key("it is not JSON"))?;
    let field = |name: &str| {
        key[name]
            .as_str()
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| bad_key(&format!("the field {name} is missing")))
    };
    let client_email = field("client_email")?.to_string();
    let pem = field("private_key")?;
    if pem.contains("BEGIN RSA PRIVATE KEY") {
        return Err(bad_key(
            "private_key is a PKCS#1 key; convert it to PKCS#8 with \
             `openssl pkcs8 -topk8 -nocrypt -in key.pem` (Google's JSON keys are PKCS#8 already)",
        ));
    }
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----"))
        .collect();
    if !pem.contains("-----BEGIN PRIVATE KEY-----") || body.is_empty() {
        return Err(bad_key(
            "private_key is not a PEM block starting with -----BEGIN PRIVATE KEY-----",
        ));
    }
    let key_der = STANDARD
        .decode(body.as_bytes())
        .map_err(|_| bad_key("private_key's PEM body is not base64"))?;
    let token_uri = key["token_uri"]
        .as_str()
        .filter(|u| !u.is_empty())
        .unwrap_or(DEFAULT_TOKEN_URI)
        .to_string();
    if !token_uri.starts_with("https://") && !token_uri.starts_with("http://") {
        return Err(bad_key("token_uri is not an http(s) URL"));
    }
    Ok(ServiceAccount {
        client_email,
        key_der,
        token_uri,
    })
}

/// The JWT's signing input (`header.claims`, base64url) asking for [`SCOPE`] as `account`, acting
/// as `subject` when a domain-wide delegation is used, issued at `now_secs`.
pub fn signing_input(account: &ServiceAccount, subject: Option<&str>, now_secs: i64) -> String {
    let mut claims = json!({
        "iss": account.client_email,
        "scope": SCOPE,
        "aud": account.token_uri,
        "iat": now_secs,
        "exp": now_secs + ASSERTION_SECS,
    });
    if let Some(sub) = subject {
        claims["sub"] = json!(sub);
    }
    let header = json!({ "alg": "RS256", "typ": "JWT" });
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// The form body of the token request for a signed `assertion`.
pub fn token_request(assertion: &str) -> String {
    format!(
        "grant_type={}&assertion={}",
        encode("urn:ietf:params:oauth:grant-type:jwt-bearer"),
        encode(assertion)
    )
}

/// The access token and its lifetime in seconds from the token endpoint's answer.
pub fn read_token(reply: &Value) -> ToolResult<(String, f64)> {
    let token = reply["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ToolError::failed(
                "Google's token endpoint answered without an access_token; try again later.",
            )
        })?;
    // Google says 3599; an answer without it is treated as short-lived rather than trusted long.
    let lifetime = reply["expires_in"].as_f64().unwrap_or(300.0);
    Ok((token.to_string(), lifetime))
}

/// Google answers a bad grant with 400 (`invalid_grant`) as often as with 401: either way the fix is
/// in the configuration, not in the call.
const REFUSED: &str = "Check the secret GOOGLE_SERVICE_ACCOUNT_KEY (the key may be deleted or disabled) and GOOGLE_CALENDAR_SUBJECT (a user the account may act as, if set).";

/// Google's OAuth endpoint as errors name it: a refusal there is the key's fault, not the call's.
const GOOGLE_OAUTH: Api = Api {
    name: "Google's token endpoint",
    token_setting: KEY_SETTING,
    auth_hint: REFUSED,
    refusal_hint: REFUSED,
    base_url_setting: "",
    default_base_url: DEFAULT_TOKEN_URI,
    error_message: super::google_error,
};

/// An access token for the service account in `key_text`: the cached one while it is fresh, else a
/// new one minted now.
pub async fn access_token(ctx: &dyn ToolContext, key_text: &str) -> ToolResult<String> {
    let account = parse(key_text)?;
    let subject = ctx.platform().setting(SUBJECT_SETTING);
    let slot = format!(
        "{}\u{0}{}\u{0}{}",
        account.client_email,
        subject.as_deref().unwrap_or(""),
        account.token_uri
    );
    let now = clock::now_ms();
    let fresh = TOKENS.with(|t| {
        t.borrow()
            .get(&slot)
            .filter(|(_, until)| *until > now)
            .map(|(token, _)| token.clone())
    });
    if let Some(token) = fresh {
        return Ok(token);
    }
    let input = signing_input(&account, subject.as_deref(), (now / 1000.0) as i64);
    let signature = ctx
        .platform()
        .sign_rs256(&account.key_der, input.as_bytes())
        .await
        .map_err(|e| bad_key(&e.public_message()))?;
    let assertion = format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature));
    // Minting a token changes nothing upstream, so it is retried like a read.
    let reply = GOOGLE_OAUTH
        .send_idempotent(
            ctx,
            Outbound {
                method: "POST",
                url: account.token_uri.clone(),
                headers: vec![
                    (
                        "Content-Type".into(),
                        "application/x-www-form-urlencoded".into(),
                    ),
                    ("Accept".into(), "application/json".into()),
                ],
                body: Some(token_request(&assertion)),
            },
        )
        .await?;
    let (token, lifetime) = read_token(&reply)?;
    let until = now + lifetime * 1000.0 - EXPIRY_MARGIN_MS;
    TOKENS.with(|t| t.borrow_mut().insert(slot, (token.clone(), until)));
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(private_key: &str) -> String {
        json!({
            "type": "service_account",
            "client_email": "reader@proj.iam.gserviceaccount.com",
            "private_key": private_key,
            "token_uri": "https://oauth2.googleapis.com/token",
        })
        .to_string()
    }

    const PEM: &str = "-----BEGIN PRIVATE KEY-----\nAAEC\nAwQ=\n-----END PRIVATE KEY-----\n";

    #[test]
    fn reads_a_json_key_file() {
        let a = parse(&key(PEM)).unwrap();
        assert_eq!(a.client_email, "reader@proj.iam.gserviceaccount.com");
        assert_eq!(a.key_der, vec![0, 1, 2, 3, 4]);
        assert_eq!(a.token_uri, "https://oauth2.googleapis.com/token");
        let no_uri = json!({"client_email": "a@b", "private_key": PEM}).to_string();
        assert_eq!(parse(&no_uri).unwrap().token_uri, DEFAULT_TOKEN_URI);
    }

    #[test]
    fn refuses_unusable_keys_naming_the_secret_and_the_fix() {
        let why = |text: &str| match parse(text) {
            Err(ToolError::Failed { message: m }) => {
                assert!(m.contains(KEY_SETTING), "{m}");
                m
            }
            other => panic!("{other:?}"),
        };
        assert!(why("not json").contains("not JSON"));
        assert!(why(r#"{"private_key":"x"}"#).contains("client_email is missing"));
        assert!(why(&key(
            "-----BEGIN RSA PRIVATE KEY-----\nAA==\n-----END RSA PRIVATE KEY-----"
        ))
        .contains("openssl pkcs8"));
        assert!(why(&key("AAEC")).contains("BEGIN PRIVATE KEY"));
        assert!(why(&key(
            "-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----"
        ))
        .contains("not base64"));
    }

    #[test]
    fn builds_the_assertion_google_expects() {
        let a = parse(&key(PEM)).unwrap();
        let input = signing_input(&a, Some("dana@example.com"), 1_700_000_000);
        let (header, claims) = input.split_once('.').unwrap();
        let decode = |part: &str| -> Value {
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
        };
        assert_eq!(decode(header), json!({"alg":"RS256","typ":"JWT"}));
        assert_eq!(
            decode(claims),
            json!({
                "iss": "reader@proj.iam.gserviceaccount.com",
                "scope": SCOPE,
                "aud": "https://oauth2.googleapis.com/token",
                "iat": 1_700_000_000,
                "exp": 1_700_003_600,
                "sub": "dana@example.com",
            })
        );
        assert!(
            decode(signing_input(&a, None, 0).split_once('.').unwrap().1)
                .get("sub")
                .is_none()
        );
        assert_eq!(
            token_request("a.b-c_d"),
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b-c_d"
        );
    }

    #[test]
    fn reads_the_token_answer() {
        assert_eq!(
            read_token(&json!({"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}))
                .unwrap(),
            ("ya29.x".to_string(), 3599.0)
        );
        assert!(read_token(&json!({"token_type":"Bearer"})).is_err());
    }
}
