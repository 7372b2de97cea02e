//! Who is calling: the bearer token of a `/mcp` request, verified before any session is touched.
//!
//! Signatures are checked with the runtime's WebCrypto (`crypto.subtle`): `HS256` against
//! `JWT_SECRET`, `RS256` and `ES256` against the keys of a JWKS (`JWKS` inline, or fetched from
//! `JWKS_URL` and kept for ten minutes; an unknown `kid` refetches it, at most once a minute).
//! While a JWKS is configured HS256 is refused unless `JWT_ALLOW_HS256=true`: one shared secret
//! must not outrank the identity provider. Claims are checked by `edge::jwt`. A request without a
//! token is anonymous when `ANONYMOUS_ACCESS` allows it; a token that is present but invalid is
//! always refused, and so is a token in the URL.

use std::cell::RefCell;
use std::collections::HashSet;

use serde_json::Value;
use wasm_bindgen_futures::JsFuture;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::{js_sys, Env, Fetch, Request};

use super::config::Config;
use super::http::header;
use super::jwt::{self, Alg, Expect};
use crate::clock;
use crate::error::{Error, Result};
use crate::registry::Caller;

/// How long a fetched JWKS is used before it is fetched again, in milliseconds.
const JWKS_TTL_MS: f64 = 600_000.0;
/// Fewest milliseconds between two fetches of the JWKS (an unknown `kid` asks for a refetch).
const JWKS_MIN_REFETCH_MS: f64 = 60_000.0;

/// Most verified signatures kept per wasm instance; past it the set starts again empty.
const VERIFIED_MAX: usize = 256;

thread_local! {
    /// The last JWKS fetched from `JWKS_URL`: (url, fetched at, keys).
    static JWKS: RefCell<Option<(String, f64, Value)>> = const { RefCell::new(None) };
    /// Signatures this instance has verified, as `(key, token)` ([`Key::fingerprint`]): a client
    /// sends the same token with every request, and checking it again (importing the key into
    /// WebCrypto, then verifying, two promises) gives the same answer for the same bytes under
    /// the same key. Only the signature is remembered; the claims (expiry, audience) are checked
    /// on every request.
    static VERIFIED: RefCell<HashSet<(String, String)>> = RefCell::new(HashSet::new());
}

fn invalid(message: impl Into<String>) -> Error {
    Error::Unauthorized {
        message: format!("Unauthorized: {}", message.into()),
        invalid_token: true,
    }
}

/// The canonical URL of this MCP server (`<origin>/mcp`): the default token audience and the
/// `resource` of its protected resource metadata.
pub fn resource_url(req: &Request, cfg: &Config) -> String {
    if let Some(a) = &cfg.jwt_audience {
        return a.clone();
    }
    match req.url() {
        Ok(u) => format!("{}/mcp", u.origin().ascii_serialization()),
        Err(_) => "/mcp".into(),
    }
}

/// The caller of a request: anonymous, or the identity of a verified token. A token in the URL
/// (`access_token` in the query string) is refused outright, valid or not: URLs end up in logs,
/// histories and `Referer` headers, so the MCP authorization spec allows tokens in the
/// `Authorization` header only.
pub async fn authenticate(req: &Request, env: &Env, cfg: &Config) -> Result<Caller> {
    // A URL without a query has no such pair: most requests are not parsed for it.
    let in_query = req.inner().url().contains('?')
        && req
            .url()
            .is_ok_and(|u| u.query_pairs().any(|(k, _)| k == "access_token"));
    if in_query {
        return Err(invalid(
            "a bearer token in the URL (access_token in the query string) is never accepted; send it in the Authorization header (Authorization: Bearer <JWT>) and revoke the one in the URL, it may have been logged",
        ));
    }
    let Some(value) = header(req, "authorization") else {
        if cfg.anonymous_access {
            return Ok(Caller::anonymous());
        }
        return Err(Error::Unauthorized {
            message: "Unauthorized: this server needs a bearer token (Authorization: Bearer <JWT>)"
                .into(),
            invalid_token: false,
        });
    };
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| invalid("the Authorization header must be 'Bearer <JWT>'"))?;
    let jwt = jwt::parse(token).map_err(invalid)?;
    let key = key_for(&jwt, env, cfg).await?;
    let seen = (key.fingerprint(jwt.alg), token.to_string());
    if !VERIFIED.with(|v| v.borrow().contains(&seen)) {
        if !verify(jwt.alg, &key, &jwt.signature, jwt.signing_input.as_bytes()).await? {
            return Err(invalid("the token's signature does not verify"));
        }
        VERIFIED.with(|v| {
            let mut v = v.borrow_mut();
            if v.len() >= VERIFIED_MAX {
                v.clear();
            }
            v.insert(seen);
        });
    }
    let audience = resource_url(req, cfg);
    let identity = jwt::check_claims(
        &jwt.claims,
        &Expect {
            issuer: cfg.jwt_issuer.as_deref(),
            audience: &audience,
            now_secs: (clock::now_ms() / 1000.0) as i64,
        },
    )
    .map_err(invalid)?;
    if identity
        .user
        .starts_with(crate::wire::ANONYMOUS_OWNER_PREFIX)
    {
        return Err(invalid(
            "the token's sub starts with 'anonymous:', which this server reserves for callers without a token; issue the token for the user's own id",
        ));
    }
    Ok(Caller {
        user: Some(identity.user),
        roles: identity.roles,
    })
}

/// Key material for a token: the secret's bytes (HS256) or a JWK (RS256, ES256).
enum Key {
    Secret(Vec<u8>),
    Jwk(Value),
}

impl Key {
    /// A SHA-256 of the algorithm and the key material, naming the key in [`VERIFIED`] without
    /// keeping a copy of the secret there.
    fn fingerprint(&self, alg: Alg) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(alg.as_str());
        h.update([0]);
        match self {
            Key::Secret(bytes) => h.update(bytes),
            Key::Jwk(jwk) => h.update(jwk.to_string()),
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

fn setting(env: &Env, name: &str) -> Option<String> {
    env.secret(name)
        .or_else(|_| env.var(name))
        .ok()
        .map(|v| v.to_string())
        .filter(|v| !v.is_empty())
}

async fn key_for(jwt: &jwt::Jwt, env: &Env, cfg: &Config) -> Result<Key> {
    if jwt.alg == Alg::Hs256 {
        let jwks = cfg.jwks_url.is_some() || setting(env, "JWKS").is_some();
        if jwks && !cfg.jwt_allow_hs256 {
            return Err(invalid(
                "HS256 tokens are not accepted here: this server verifies tokens against its identity provider's keys (JWKS); use a token from that provider (the operator can set JWT_ALLOW_HS256=true to accept both)",
            ));
        }
        return setting(env, "JWT_SECRET")
            .map(|s| Key::Secret(s.into_bytes()))
            .ok_or_else(|| {
                invalid("HS256 tokens are not accepted here (no JWT_SECRET is configured)")
            });
    }
    let kty = if jwt.alg == Alg::Rs256 { "RSA" } else { "EC" };
    let pick = |keys: &Value| -> Option<Value> {
        let candidates: Vec<&Value> = keys["keys"]
            .as_array()?
            .iter()
            .filter(|k| k["kty"] == kty)
            .filter(|k| k.get("alg").is_none_or(|a| a == jwt.alg.as_str()))
            .collect();
        match &jwt.kid {
            Some(kid) => candidates
                .into_iter()
                .find(|k| k["kid"] == kid.as_str())
                .cloned(),
            None if candidates.len() == 1 => candidates.first().map(|k| (*k).clone()),
            None => None,
        }
    };
    if let Some(inline) = setting(env, "JWKS") {
        let keys: Value = serde_json::from_str(&inline)
            .map_err(|e| Error::Internal(format!("JWKS is not JSON: {e}")))?;
        return pick(&keys).map(Key::Jwk).ok_or_else(|| {
            invalid(format!(
                "no {} key in the JWKS matches the token's kid",
                jwt.alg.as_str()
            ))
        });
    }
    let Some(url) = &cfg.jwks_url else {
        return Err(invalid(format!(
            "{} tokens are not accepted here (no JWKS or JWKS_URL is configured)",
            jwt.alg.as_str()
        )));
    };
    let now = clock::now_ms();
    let cached = JWKS.with(|c| {
        c.borrow()
            .as_ref()
            .filter(|(u, at, _)| u == url && now - at < JWKS_TTL_MS)
            .map(|(_, at, keys)| (*at, keys.clone()))
    });
    if let Some((at, keys)) = &cached {
        if let Some(k) = pick(keys) {
            return Ok(Key::Jwk(k));
        }
        if now - at < JWKS_MIN_REFETCH_MS {
            return Err(invalid("no key in the JWKS matches the token's kid"));
        }
    }
    let keys = fetch_jwks(url).await?;
    JWKS.with(|c| *c.borrow_mut() = Some((url.clone(), now, keys.clone())));
    pick(&keys)
        .map(Key::Jwk)
        .ok_or_else(|| invalid("no key in the JWKS matches the token's kid"))
}

async fn fetch_jwks(url: &str) -> Result<Value> {
    let unavailable = |e: String| Error::Internal(format!("JWKS {url}: {e}"));
    let parsed = worker::Url::parse(url).map_err(|e| unavailable(e.to_string()))?;
    let mut resp = Fetch::Url(parsed)
        .send()
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    if resp.status_code() != 200 {
        return Err(unavailable(format!("HTTP {}", resp.status_code())));
    }
    resp.json::<Value>()
        .await
        .map_err(|e| unavailable(e.to_string()))
}

fn js_json(text: &str) -> Result<JsValue> {
    js_sys::JSON::parse(text).map_err(|e| Error::Internal(format!("WebCrypto argument: {e:?}")))
}

/// Awaits a WebCrypto promise; a rejection (an unusable key, mostly) becomes `rejected(reason)`.
async fn settle(
    p: std::result::Result<js_sys::Promise, JsValue>,
    rejected: impl Fn(String) -> Error,
) -> Result<JsValue> {
    let p = p.map_err(|e| Error::Internal(format!("WebCrypto: {e:?}")))?;
    JsFuture::from(p)
        .await
        .map_err(|e| rejected(format!("{e:?}")))
}

async fn promise(p: std::result::Result<js_sys::Promise, JsValue>) -> Result<JsValue> {
    settle(p, |e| {
        invalid(format!("the token's key could not be used ({e})"))
    })
    .await
}

fn subtle() -> Result<web_sys::SubtleCrypto> {
    let crypto: web_sys::Crypto =
        js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("crypto"))
            .map_err(|_| Error::Internal("WebCrypto is not available".into()))?
            .unchecked_into();
    Ok(crypto.subtle())
}

/// Signs `message` with RSASSA-PKCS1-v1_5 / SHA-256 (JWT `RS256`) under a PKCS#8 private key, for
/// credentials that mint their own tokens (Google service accounts). A key WebCrypto refuses is
/// `Error::Failed`: the fix is in the operator's secret, not in the call.
pub(crate) async fn sign_rs256(pkcs8_der: &[u8], message: &[u8]) -> Result<Vec<u8>> {
    let subtle = subtle()?;
    let algorithm: js_sys::Object =
        js_json(r#"{"name":"RSASSA-PKCS1-v1_5","hash":"SHA-256"}"#)?.unchecked_into();
    let der: js_sys::Object = js_sys::Uint8Array::from(pkcs8_der).into();
    let unusable =
        |e: String| Error::Failed(format!("the RSA private key could not be used ({e})"));
    let key: web_sys::CryptoKey = settle(
        subtle.import_key_with_object("pkcs8", &der, &algorithm, false, &js_json(r#"["sign"]"#)?),
        unusable,
    )
    .await?
    .unchecked_into();
    let signature = settle(
        subtle.sign_with_object_and_u8_array(&algorithm, &key, message),
        unusable,
    )
    .await?;
    Ok(js_sys::Uint8Array::new(&signature).to_vec())
}

/// Checks `signature` over `data` with WebCrypto.
async fn verify(alg: Alg, key: &Key, signature: &[u8], data: &[u8]) -> Result<bool> {
    let subtle = subtle()?;
    let (import, check) = match alg {
        Alg::Hs256 => (r#"{"name":"HMAC","hash":"SHA-256"}"#, r#"{"name":"HMAC"}"#),
        Alg::Rs256 => (
            r#"{"name":"RSASSA-PKCS1-v1_5","hash":"SHA-256"}"#,
            r#"{"name":"RSASSA-PKCS1-v1_5"}"#,
        ),
        Alg::Es256 => (
            r#"{"name":"ECDSA","namedCurve":"P-256"}"#,
            r#"{"name":"ECDSA","hash":"SHA-256"}"#,
        ),
    };
    let import: js_sys::Object = js_json(import)?.unchecked_into();
    let check: js_sys::Object = js_json(check)?.unchecked_into();
    let usages = js_json(r#"["verify"]"#)?;
    let imported = match key {
        Key::Secret(bytes) => {
            let raw: js_sys::Object = js_sys::Uint8Array::from(bytes.as_slice()).into();
            subtle.import_key_with_object("raw", &raw, &import, false, &usages)
        }
        Key::Jwk(jwk) => {
            let jwk: js_sys::Object = js_json(&jwk.to_string())?.unchecked_into();
            subtle.import_key_with_object("jwk", &jwk, &import, false, &usages)
        }
    };
    let key: web_sys::CryptoKey = promise(imported).await?.unchecked_into();
    let ok =
        promise(subtle.verify_with_object_and_u8_array_and_u8_array(&check, &key, signature, data))
            .await?;
    Ok(ok.as_bool() == Some(true))
}
