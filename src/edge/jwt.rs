//! Bearer tokens: JWT parsing and claim checks, pure so `cargo test` covers them. Signatures are
//! verified by the edge layer with WebCrypto (`edge::auth`); nothing here trusts a token whose
//! signature has not been checked.
//!
//! Accepted: `HS256` (a shared secret, for local development), `RS256` and `ES256` (keys from a
//! JWKS, for identity providers). `none` and every other algorithm are refused. Claims: `exp` is
//! required and `nbf` honoured (60 s leeway for clock skew), `iss` must equal the configured issuer
//! when one is configured, `aud` (a string or a list) must contain this server's audience, `sub` is
//! the caller's user id. Roles come from `roles` (a list, or a string separated by spaces or commas)
//! or Keycloak's `realm_access.roles`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::Value;

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
const LEEWAY_SECS: i64 = 60;

/// The signing algorithms accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    /// HMAC with SHA-256 and the configured secret.
    Hs256,
    /// RSASSA-PKCS1-v1_5 with SHA-256, key from the JWKS.
    Rs256,
    /// ECDSA P-256 with SHA-256, key from the JWKS.
    Es256,
}

impl Alg {
    /// The JOSE name.
    pub fn as_str(self) -> &'static str {
        match self {
            Alg::Hs256 => "HS256",
            Alg::Rs256 => "RS256",
            Alg::Es256 => "ES256",
        }
    }
}

/// A token split into its parts, not yet verified.
#[derive(Debug, Clone, PartialEq)]
pub struct Jwt {
    /// The algorithm its header names.
    pub alg: Alg,
    /// The key id its header names, if any.
    pub kid: Option<String>,
    /// Its claims.
    pub claims: Value,
    /// `header.payload`, the bytes the signature covers.
    pub signing_input: String,
    /// The signature bytes.
    pub signature: Vec<u8>,
}

/// Who a verified token says the caller is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The `sub` claim: the caller's user (employee) id.
    pub user: String,
    /// The roles the token grants.
    pub roles: Vec<String>,
}

/// What the claims must satisfy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect<'a> {
    /// Required `iss`, when configured.
    pub issuer: Option<&'a str>,
    /// This server's audience; `aud` must contain it.
    pub audience: &'a str,
    /// The current time, in seconds since the epoch.
    pub now_secs: i64,
}

fn decode(part: &str, what: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|_| format!("the token's {what} is not base64url"))
}

fn json_part(part: &str, what: &str) -> Result<Value, String> {
    let bytes = decode(part, what)?;
    match serde_json::from_slice(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(format!("the token's {what} is not a JSON object")),
    }
}

/// Splits a compact JWS (`header.payload.signature`) and reads its header and claims.
pub fn parse(token: &str) -> Result<Jwt, String> {
    let parts: Vec<&str> = token.split('.').collect();
    let [header, payload, signature] = parts.as_slice() else {
        return Err("the bearer token is not a JWT (header.payload.signature)".into());
    };
    let head = json_part(header, "header")?;
    let alg = match head.get("alg").and_then(Value::as_str) {
        Some("HS256") => Alg::Hs256,
        Some("RS256") => Alg::Rs256,
        Some("ES256") => Alg::Es256,
        Some(other) => {
            return Err(format!(
                "the token's algorithm {other:?} is not accepted (HS256, RS256, ES256)"
            ))
        }
        None => return Err("the token's header names no alg".into()),
    };
    if head.get("crit").is_some() {
        return Err("the token has critical header parameters this server does not know".into());
    }
    Ok(Jwt {
        alg,
        kid: head.get("kid").and_then(Value::as_str).map(str::to_string),
        claims: json_part(payload, "payload")?,
        signing_input: format!("{header}.{payload}"),
        signature: decode(signature, "signature")?,
    })
}

fn roles_of(claims: &Value) -> Vec<String> {
    let from = |v: Option<&Value>| -> Vec<String> {
        match v {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            Some(Value::String(s)) => s
                .split([' ', ','])
                .filter(|r| !r.is_empty())
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut roles = from(claims.get("roles"));
    roles.extend(from(claims.pointer("/realm_access/roles")));
    roles.sort();
    roles.dedup();
    roles
}

/// Checks the claims of a token whose signature has been verified, and says who it names.
pub fn check_claims(claims: &Value, expect: &Expect<'_>) -> Result<Identity, String> {
    let time = |name: &str| claims.get(name).and_then(Value::as_f64).map(|t| t as i64);
    let exp = time("exp").ok_or("the token has no exp (expiry) claim")?;
    if expect.now_secs > exp + LEEWAY_SECS {
        return Err("the token has expired; get a new one".into());
    }
    if let Some(nbf) = time("nbf") {
        if expect.now_secs + LEEWAY_SECS < nbf {
            return Err("the token is not valid yet (nbf)".into());
        }
    }
    if let Some(issuer) = expect.issuer {
        if claims.get("iss").and_then(Value::as_str) != Some(issuer) {
            return Err(format!("the token was not issued by {issuer}"));
        }
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(a)) => vec![a.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.contains(&expect.audience) {
        return Err(format!(
            "the token is not meant for this server (aud must include {})",
            expect.audience
        ));
    }
    let user = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("the token has no sub (user id) claim")?;
    Ok(Identity {
        user: user.to_string(),
        roles: roles_of(claims),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn token(header: Value, claims: Value) -> String {
        let enc = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        format!(
            "{}.{}.{}",
            enc(&header),
            enc(&claims),
            URL_SAFE_NO_PAD.encode(b"sig")
        )
    }

    const EXPECT: Expect<'static> = Expect {
        issuer: Some("https://id.example"),
        audience: "https://mcp.example/mcp",
        now_secs: 1_000_000,
    };

    fn claims(extra: Value) -> Value {
        let mut c = json!({ "iss": "https://id.example", "aud": "https://mcp.example/mcp", "sub": "E0001", "exp": 1_000_600 });
        if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                if v.is_null() {
                    c.remove(k);
                } else {
                    c.insert(k.clone(), v.clone());
                }
            }
        }
        c
    }

    #[test]
    fn parses_the_three_parts() {
        let t = token(json!({ "alg": "RS256", "kid": "k1" }), claims(json!({})));
        let jwt = parse(&t).unwrap();
        assert_eq!(jwt.alg, Alg::Rs256);
        assert_eq!(jwt.kid.as_deref(), Some("k1"));
        assert_eq!(jwt.signature, b"sig");
        assert_eq!(jwt.signing_input, t.rsplit_once('.').unwrap().0);
    }

    #[test]
    fn refuses_other_algorithms_and_malformed_tokens() {
        for alg in ["none", "HS512", "PS256"] {
            let e = parse(&token(json!({ "alg": alg }), claims(json!({})))).unwrap_err();
            assert!(e.contains("is not accepted"), "{alg}: {e}");
        }
        assert!(parse("abc").unwrap_err().contains("not a JWT"));
        assert!(parse("a.b.c.d").unwrap_err().contains("not a JWT"));
        assert!(parse("!!.e30.c2ln")
            .unwrap_err()
            .contains("header is not base64url"));
        let no_obj = format!(
            "{}.{}.c2ln",
            URL_SAFE_NO_PAD.encode("[]"),
            URL_SAFE_NO_PAD.encode("{}")
        );
        assert!(parse(&no_obj)
            .unwrap_err()
            .contains("header is not a JSON object"));
        let crit = token(json!({ "alg": "HS256", "crit": ["x"] }), claims(json!({})));
        assert!(parse(&crit).unwrap_err().contains("critical"));
    }

    #[test]
    fn claims_name_the_user_and_roles() {
        let id = check_claims(
            &claims(json!({ "roles": ["hr-read", "manager"], "realm_access": { "roles": ["executive", "manager"] } })),
            &EXPECT,
        )
        .unwrap();
        assert_eq!(id.user, "E0001");
        assert_eq!(id.roles, vec!["executive", "hr-read", "manager"]);
        let spaced = check_claims(&claims(json!({ "roles": "a b,c" })), &EXPECT).unwrap();
        assert_eq!(spaced.roles, vec!["a", "b", "c"]);
        let list_aud = check_claims(
            &claims(json!({ "aud": ["other", "https://mcp.example/mcp"] })),
            &EXPECT,
        );
        assert!(list_aud.is_ok());
    }

    #[test]
    fn time_issuer_audience_and_subject_are_enforced() {
        let cases = [
            (json!({ "exp": null }), "no exp"),
            (json!({ "exp": 999_900 }), "expired"),
            (json!({ "nbf": 1_000_100 }), "not valid yet"),
            (
                json!({ "iss": "https://evil.example" }),
                "not issued by https://id.example",
            ),
            (
                json!({ "aud": "https://other.example/mcp" }),
                "not meant for this server",
            ),
            (json!({ "aud": null }), "not meant for this server"),
            (json!({ "sub": "" }), "no sub"),
        ];
        for (extra, expected) in cases {
            let e = check_claims(&claims(extra.clone()), &EXPECT).unwrap_err();
            assert!(e.contains(expected), "{extra}: {e}");
        }
        // Within the leeway.
        assert!(check_claims(
            &claims(json!({ "exp": 999_950, "nbf": 1_000_050 })),
            &EXPECT
        )
        .is_ok());
        // No issuer configured: any iss.
        let open = Expect {
            issuer: None,
            ..EXPECT
        };
        assert!(check_claims(&claims(json!({ "iss": "anyone" })), &open).is_ok());
    }
}
