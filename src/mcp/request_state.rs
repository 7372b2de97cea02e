//! The sealed `requestState` of 2026-07-28 multi-round-trip requests (MRTR): what a paused
//! request has learned so far (the answers of earlier rounds), carried by the client between
//! rounds and protected so the client can neither read meaning into it nor change it.
//!
//! A state is JSON, base64url-encoded, followed by `.` and an HMAC-SHA-256 of that text. It is
//! bound to the caller, the method and its target (tool name), a SHA-256 of the canonical
//! arguments, and an expiry; a state presented by anyone else, for another call, after its expiry,
//! or with one byte changed is rejected. Each state carries a random nonce that the edge layer
//! records as used when the state is redeemed, so a state works once (`src/stateless/`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::engine::read;
use crate::error::{Error, Result};

/// How long a paused request can be resumed by default, in milliseconds (the 5 minutes of write
/// confirmations).
pub const LIFETIME_MS: f64 = 5.0 * 60.0 * 1000.0;

/// A SHA-256 of `args` as canonical JSON (object keys sorted, no whitespace), hex.
pub fn arguments_hash(args: &Value) -> String {
    Sha256::digest(crate::registry::cache::canonical_json(args).as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What a state is bound to: who, which call, which arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The caller's user id, or `anonymous:` and what tells an anonymous caller apart (their
    /// address, `src/stateless/call.rs`).
    pub user: String,
    /// `method` and target, e.g. `tools/call echo`.
    pub call: String,
    /// [`arguments_hash`] of the call's arguments.
    pub args: String,
}

/// The content of a state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Format version.
    pub v: u8,
    /// Single-use nonce (128 random bits, hex).
    pub nonce: String,
    /// Stable across all rounds of one request: names side effects prepared in an earlier round
    /// (a write's confirmation), so a later round finds them instead of preparing them again.
    pub exchange: String,
    /// See [`Binding::user`].
    pub user: String,
    /// See [`Binding::call`].
    pub call: String,
    /// See [`Binding::args`].
    pub args: String,
    /// Expiry, ms since the epoch.
    pub exp: f64,
    /// The client's answers of earlier rounds, by input key; a retry cannot change them.
    pub answers: Map<String, Value>,
    /// The `inputRequests` keys this state's result asked: the only keys under which the retry's
    /// `inputResponses` are read (an answer under any other key, or with no state at all, was
    /// never asked for and is ignored).
    #[serde(default)]
    pub asked: Vec<String>,
    /// The paused chain steps whose outputs the `inputRequests` ask the client's model for
    /// (`src/stateless/runs.rs`); empty for every other request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<PausedStep>,
}

/// A chain step paused in `awaiting_input` whose outputs an `input_required` result asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PausedStep {
    /// The `inputRequests` key of its question.
    pub key: String,
    /// The execution id of its run.
    pub execution: String,
    /// The output variables the answer must supply.
    pub outputs: Vec<String>,
}

/// The key of one `purpose` (`"request-state"`, `"cursor"`) derived from a shared `secret`:
/// HMAC-SHA-256 of the purpose under the secret, so a deployment with one secret still signs
/// tokens, cursors and request states under separate keys, and a value sealed for one purpose
/// never verifies for another.
pub fn derive_key(secret: &[u8], purpose: &str) -> Vec<u8> {
    mac(secret, &format!("mcp-edge/{purpose}"))
}

fn mac(key: &[u8], body: &str) -> Vec<u8> {
    // HMAC accepts keys of any length, so new_from_slice cannot fail.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(body.as_bytes());
    m.finalize().into_bytes().to_vec()
}

/// Seals `state` under `key`.
pub fn seal(key: &[u8], state: &State) -> Result<String> {
    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(state)?);
    let tag = URL_SAFE_NO_PAD.encode(mac(key, &body));
    Ok(format!("{body}.{tag}"))
}

/// The state in `bytes`, read by hand from the parsed `Value` (the one parser of JSON bytes the
/// Worker has) rather than by a derived reader of its own (docs/decisions.md, "Derived readers").
fn state_of(bytes: &[u8]) -> read::Read<State> {
    let mut m = read::object(serde_json::from_slice(bytes)?, "State")?;
    Ok(State {
        v: read::u8(read::required(&mut m, "v")?)?,
        nonce: read::string(read::required(&mut m, "nonce")?)?,
        exchange: read::string(read::required(&mut m, "exchange")?)?,
        user: read::string(read::required(&mut m, "user")?)?,
        call: read::string(read::required(&mut m, "call")?)?,
        args: read::string(read::required(&mut m, "args")?)?,
        exp: read::f64(read::required(&mut m, "exp")?)?,
        answers: read::object(read::required(&mut m, "answers")?, "a map")?,
        asked: read::defaulted(&mut m, "asked", |v| read::list(v, read::string))?,
        steps: read::defaulted(&mut m, "steps", |v| read::list(v, paused_step))?,
    })
}

fn paused_step(v: Value) -> read::Read<PausedStep> {
    let mut m = read::object(v, "PausedStep")?;
    Ok(PausedStep {
        key: read::string(read::required(&mut m, "key")?)?,
        execution: read::string(read::required(&mut m, "execution")?)?,
        outputs: read::list(read::required(&mut m, "outputs")?, read::string)?,
    })
}

fn rejected(why: &str) -> Error {
    Error::InvalidParams(format!(
        "Invalid params: requestState rejected ({why}); send the original request again without requestState and inputResponses to start over"
    ))
}

/// Opens a state presented with a request bound as `expect`, at `now_ms`. The nonce is not
/// checked here: the caller redeems it once in shared storage.
pub fn open(key: &[u8], token: &str, expect: &Binding, now_ms: f64) -> Result<State> {
    let (body, tag) = token
        .split_once('.')
        .ok_or_else(|| rejected("not a state this server issued"))?;
    let tag = URL_SAFE_NO_PAD
        .decode(tag)
        .map_err(|_| rejected("not a state this server issued"))?;
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(body.as_bytes());
    m.verify_slice(&tag)
        .map_err(|_| rejected("its integrity check failed: it was changed or not issued here"))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(body)
        .map_err(|_| rejected("not a state this server issued"))?;
    let state = state_of(&bytes).map_err(|_| rejected("not a state this server issued"))?;
    if state.v != 1 {
        return Err(rejected("issued by another version of this server"));
    }
    if state.user != expect.user {
        return Err(rejected("it was issued to another caller"));
    }
    if state.call != expect.call || state.args != expect.args {
        return Err(rejected(
            "it belongs to another request (different tool or arguments)",
        ));
    }
    if now_ms > state.exp {
        return Err(rejected("it expired"));
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &[u8] = b"test key";

    /// The hand reader takes what the derived `Deserialize` takes, and refuses what it refuses:
    /// states with and without the defaulted fields, and each required field missing or mistyped.
    #[test]
    fn state_reader_reads_what_the_derive_reads() {
        let full = json!({
            "v": 1, "nonce": "n", "exchange": "x", "user": "u", "call": "c", "args": "a",
            "exp": 1.5e12, "answers": { "q": { "action": "accept" } }, "asked": ["q"],
            "steps": [{ "key": "k", "execution": "e", "outputs": ["o", "p"] }], "other": 1,
        });
        let mut cases = vec![full.clone()];
        for key in ["asked", "steps"] {
            let mut c = full.clone();
            c.as_object_mut().unwrap().remove(key);
            cases.push(c);
        }
        let mut c = full.clone();
        c["exp"] = json!(1700000000000u64);
        cases.push(c);
        let good = cases.len();
        for key in [
            "v", "nonce", "exchange", "user", "call", "args", "exp", "answers",
        ] {
            let mut c = full.clone();
            c.as_object_mut().unwrap().remove(key);
            cases.push(c);
            let mut c = full.clone();
            c[key] = json!([1]);
            cases.push(c);
        }
        for (key, value) in [
            ("v", json!(256)),
            ("asked", json!(null)),
            ("steps", json!([{}])),
        ] {
            let mut c = full.clone();
            c[key] = value;
            cases.push(c);
        }
        let mut c = full.clone();
        c["steps"][0]["outputs"] = json!("o");
        cases.push(c);
        for (n, case) in cases.iter().enumerate() {
            let bytes = serde_json::to_vec(case).unwrap();
            let ours = state_of(&bytes).ok();
            assert_eq!(
                ours,
                serde_json::from_slice::<State>(&bytes).ok(),
                "case {n}: {case}"
            );
            assert_eq!(ours.is_some(), n < good, "case {n}: {case}");
        }
        assert!(state_of(b"[1]").is_err() && state_of(b"{").is_err());
    }

    fn binding() -> Binding {
        Binding {
            user: "u1".into(),
            call: "tools/call delete_employee".into(),
            args: arguments_hash(&json!({"employee_id": "e1"})),
        }
    }

    fn state(exp: f64) -> State {
        let b = binding();
        State {
            v: 1,
            nonce: "n1".into(),
            exchange: "x1".into(),
            user: b.user,
            call: b.call,
            args: b.args,
            exp,
            answers: Map::from_iter([("approve".to_string(), json!({"action": "accept"}))]),
            asked: vec!["approve".into()],
            steps: Vec::new(),
        }
    }

    #[test]
    fn a_sealed_state_opens_for_its_own_call_only() {
        let token = seal(KEY, &state(1000.0)).unwrap();
        assert_eq!(open(KEY, &token, &binding(), 999.0).unwrap(), state(1000.0));
        let other_user = Binding {
            user: "u2".into(),
            ..binding()
        };
        let other_args = Binding {
            args: arguments_hash(&json!({"employee_id": "e2"})),
            ..binding()
        };
        let other_tool = Binding {
            call: "tools/call update_salary".into(),
            ..binding()
        };
        for b in [other_user, other_args, other_tool] {
            assert_eq!(open(KEY, &token, &b, 999.0).unwrap_err().rpc_code(), -32602);
        }
        assert!(open(KEY, &token, &binding(), 1001.0).is_err(), "expired");
        assert!(open(b"other key", &token, &binding(), 999.0).is_err());
    }

    #[test]
    fn any_change_to_a_state_is_rejected() {
        let token = seal(KEY, &state(1000.0)).unwrap();
        let (body, tag) = token.split_once('.').unwrap();
        let mut forged = state(1000.0);
        forged.answers.clear();
        let forged_body = seal(KEY, &forged).unwrap();
        let forged_body = forged_body.split_once('.').unwrap().0;
        for t in [
            format!("{forged_body}.{tag}"),
            format!("{body}.{}", &tag[1..]),
            format!("{body}x.{tag}"),
            body.to_string(),
            "garbage".to_string(),
            String::new(),
        ] {
            let e = open(KEY, &t, &binding(), 999.0).unwrap_err();
            assert!(e.to_string().contains("requestState rejected"), "{t}");
        }
    }

    #[test]
    fn derived_keys_differ_by_purpose_and_from_the_secret() {
        let k = derive_key(KEY, "request-state");
        assert_eq!(k, derive_key(KEY, "request-state"));
        assert_ne!(k, derive_key(KEY, "cursor"));
        assert_ne!(k, KEY.to_vec());
        let token = seal(&k, &state(1000.0)).unwrap();
        assert!(open(KEY, &token, &binding(), 999.0).is_err());
    }

    #[test]
    fn arguments_hash_ignores_key_order() {
        assert_eq!(
            arguments_hash(&json!({"a": 1, "b": 2})),
            arguments_hash(&serde_json::from_str::<Value>(r#"{"b":2,"a":1}"#).unwrap())
        );
    }
}
