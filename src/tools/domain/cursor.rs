//! Opaque pagination cursors of the domain list tools: the keyset position of the last row sent,
//! signed with HMAC-SHA-256 and bound to the caller, the query's filters and an expiry. A cursor
//! that was altered, issued to someone else, issued for other filters, or is older than its
//! lifetime is refused (`INVALID_INPUT`), so a cursor cannot be used to read past what the caller
//! may list or to smuggle a different position in.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// How long a cursor stays valid, in milliseconds.
pub const LIFETIME_MS: f64 = 15.0 * 60.0 * 1000.0;

/// What a cursor is bound to.
pub struct Binding<'a> {
    /// The tool that issued it.
    pub tool: &'a str,
    /// The caller's user id (empty for anonymous).
    pub user: &'a str,
    /// The caller's roles (row-level access depends on them).
    pub roles: &'a [String],
    /// The query's filters, as given (canonical JSON is hashed).
    pub filters: &'a Value,
}

impl Binding<'_> {
    fn digest(&self) -> String {
        let mut roles = self.roles.to_vec();
        roles.sort();
        let text = json!([self.tool, self.user, roles, self.filters]).to_string();
        let hash = Sha256::digest(text.as_bytes());
        URL_SAFE_NO_PAD.encode(&hash[..16])
    }
}

fn mac(key: &[u8], body: &str) -> Vec<u8> {
    // new_from_slice accepts keys of any length for HMAC, so this cannot fail.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(body.as_bytes());
    m.finalize().into_bytes().to_vec()
}

/// A cursor for the position `after` (the sort key values of the last row sent).
pub fn issue(key: &[u8], binding: &Binding<'_>, after: &Value, now_ms: f64) -> String {
    let body = URL_SAFE_NO_PAD.encode(
        json!({ "a": after, "b": binding.digest(), "x": (now_ms + LIFETIME_MS) as i64 })
            .to_string(),
    );
    format!("{body}.{}", URL_SAFE_NO_PAD.encode(mac(key, &body)))
}

/// The position a cursor names, if it is genuine, bound to `binding` and unexpired; else why not.
pub fn open(key: &[u8], binding: &Binding<'_>, cursor: &str, now_ms: f64) -> Result<Value, String> {
    let refused = |why: &str| {
        format!("cursor rejected ({why}); call the tool again without a cursor to start from the first page")
    };
    let (body, sig) = cursor.split_once('.').ok_or_else(|| refused("malformed"))?;
    let sig = URL_SAFE_NO_PAD
        .decode(sig)
        .map_err(|_| refused("malformed"))?;
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(body.as_bytes());
    m.verify_slice(&sig)
        .map_err(|_| refused("it was altered or not issued by this server"))?;
    let data: Value = URL_SAFE_NO_PAD
        .decode(body)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| refused("malformed"))?;
    if data["b"].as_str() != Some(binding.digest().as_str()) {
        return Err(refused(
            "it was issued to another caller or for other filters",
        ));
    }
    if data["x"].as_f64().is_none_or(|x| x < now_ms) {
        return Err(refused("it has expired"));
    }
    Ok(data["a"].clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"cursor-key";

    fn binding<'a>(user: &'a str, roles: &'a [String], filters: &'a Value) -> Binding<'a> {
        Binding {
            tool: "list_employees",
            user,
            roles,
            filters,
        }
    }

    #[test]
    fn a_cursor_round_trips_for_its_caller_and_filters() {
        let roles = vec!["hr-read".to_string()];
        let f = json!({ "department": "Engineering" });
        let b = binding("E1", &roles, &f);
        let c = issue(KEY, &b, &json!(["Smith", "Ann", "id-9"]), 1000.0);
        assert_eq!(
            open(KEY, &b, &c, 2000.0).unwrap(),
            json!(["Smith", "Ann", "id-9"])
        );
    }

    #[test]
    fn altered_foreign_other_filter_and_stale_cursors_are_refused() {
        let roles = vec!["hr-read".to_string()];
        let f = json!({ "department": "Engineering" });
        let b = binding("E1", &roles, &f);
        let c = issue(KEY, &b, &json!(["Smith"]), 1000.0);
        let (body, sig) = c.split_once('.').unwrap();
        let forged_body =
            URL_SAFE_NO_PAD.encode(json!({ "a": ["Aaron"], "b": "x", "x": 9e15 }).to_string());
        for (bad, why) in [
            (format!("{forged_body}.{sig}"), "altered"),
            (
                format!("{body}.{}", URL_SAFE_NO_PAD.encode(b"nope")),
                "altered",
            ),
            ("garbage".to_string(), "malformed"),
        ] {
            assert!(
                open(KEY, &b, &bad, 2000.0).unwrap_err().contains(why),
                "{bad}"
            );
        }
        assert!(open(b"other-key", &b, &c, 2000.0)
            .unwrap_err()
            .contains("altered"));
        let other_user = binding("E2", &roles, &f);
        assert!(open(KEY, &other_user, &c, 2000.0)
            .unwrap_err()
            .contains("another caller"));
        let more_roles = vec!["hr-read".to_string(), "executive".to_string()];
        assert!(open(KEY, &binding("E1", &more_roles, &f), &c, 2000.0).is_err());
        let other_filter = json!({ "department": "Sales" });
        assert!(open(KEY, &binding("E1", &roles, &other_filter), &c, 2000.0)
            .unwrap_err()
            .contains("other filters"));
        assert!(open(KEY, &b, &c, 1000.0 + LIFETIME_MS + 1.0)
            .unwrap_err()
            .contains("expired"));
    }
}
