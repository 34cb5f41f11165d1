//! The `requestState` of an approval asked through `input_required` (MCP 2026-07-28, multi
//! round-trip requests): what the client must hand back, unchanged, with the human's answer.
//!
//! The client holds the state, so it is attacker-controlled: it is sealed with HMAC-SHA-256
//! under a key the binary keeps in `<data>/keys/request-state.key`, so that it survives a restart
//! and every process on that data folder (two `coremcp serve` behind one balancer) accepts the
//! states the others issued. Its claims bind it to the principal (as a salted hash, so the state
//! does not show a token name), the method, the tool, a digest of the arguments (keys sorted, so a
//! client that re-serialises them in another order still matches) and a short expiry.
//!
//! Invariants: a state that fails any check is refused as a whole — never partly trusted. No
//! I/O here: the key is handed in ([`Sealer::from_secret`]).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How long a state is good for, in seconds: long enough for a human to read the question.
pub(crate) const LIFETIME_S: u64 = 600;
/// Clock skew tolerated between processes on one data folder.
const SKEW_S: u64 = 60;
/// The version prefix of our states.
const PREFIX: &str = "v1.";

/// What a state is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub v: u8,
    pub iat: u64,
    pub exp: u64,
    /// The method (`tools/call`).
    pub m: String,
    /// The tool, as the client named it.
    pub t: String,
    /// The digest of the arguments.
    pub a: String,
    /// The salted hash of the principal.
    pub p: String,
    /// The upstream server's own `requestState`, when the question was the server's (it goes
    /// back to the server with the answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u: Option<String>,
}

/// What a state must match to be accepted.
pub struct Expect<'a> {
    pub method: &'a str,
    pub tool: &'a str,
    pub arguments: &'a str,
    pub principal: &'a str,
}

/// Why a state is refused (each is answered -32602 `invalid_request_state`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("it is not a request state of this server (malformed)")]
    Malformed,
    #[error("its seal does not verify: it was altered, or issued under another key")]
    Forged,
    #[error("it expired")]
    Expired,
    #[error("it was issued for another principal")]
    OtherPrincipal,
    #[error("it was issued for another method or tool")]
    OtherTool,
    #[error("it was issued for other arguments")]
    OtherArguments,
}

/// Seals and opens states with one key.
pub struct Sealer {
    key: ring::hmac::Key,
    /// Mixed into the principal hash.
    salt: [u8; 16],
}

impl Sealer {
    /// A sealer under `secret` (the binary keeps the key: `state_key.rs`).
    pub fn from_secret(secret: &[u8; 32]) -> Self {
        let mut salt = [0u8; 16];
        salt.copy_from_slice(
            &Sha256::digest([b"coremcp principal salt".as_slice(), secret].concat())[..16],
        );
        Self {
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret),
            salt,
        }
    }

    /// A state for a question of ours about `expect`, issued now.
    pub fn seal(&self, expect: &Expect<'_>) -> String {
        self.seal_at(expect, None, now())
    }

    /// A state for a question an upstream server asked about `expect`, carrying the state it
    /// gave (`upstream`), issued now.
    pub fn seal_upstream(&self, expect: &Expect<'_>, upstream: Option<String>) -> String {
        self.seal_at(expect, Some(upstream.unwrap_or_default()), now())
    }

    fn seal_at(&self, expect: &Expect<'_>, upstream: Option<String>, at: u64) -> String {
        let claims = Claims {
            v: 1,
            iat: at,
            exp: at + LIFETIME_S,
            m: expect.method.to_owned(),
            t: expect.tool.to_owned(),
            a: arguments_digest(expect.arguments),
            p: self.principal_hash(expect.principal),
            u: upstream,
        };
        let payload = serde_json::to_vec(&claims).unwrap_or_default();
        let tag = ring::hmac::sign(&self.key, &payload);
        format!(
            "{PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        )
    }

    /// The claims of `state`, if it is ours, unexpired and bound to `expect`.
    pub fn open(&self, state: &str, expect: &Expect<'_>) -> Result<Claims, StateError> {
        self.open_at(state, expect, now())
    }

    fn open_at(&self, state: &str, expect: &Expect<'_>, at: u64) -> Result<Claims, StateError> {
        let body = state.strip_prefix(PREFIX).ok_or(StateError::Malformed)?;
        let (payload, tag) = body.split_once('.').ok_or(StateError::Malformed)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| StateError::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| StateError::Malformed)?;
        ring::hmac::verify(&self.key, &payload, &tag).map_err(|_| StateError::Forged)?;
        let claims: Claims = serde_json::from_slice(&payload).map_err(|_| StateError::Malformed)?;
        if claims.v != 1 {
            return Err(StateError::Malformed);
        }
        if at > claims.exp || claims.iat > at + SKEW_S {
            return Err(StateError::Expired);
        }
        if claims.p != self.principal_hash(expect.principal) {
            return Err(StateError::OtherPrincipal);
        }
        if claims.m != expect.method || claims.t != expect.tool {
            return Err(StateError::OtherTool);
        }
        if claims.a != arguments_digest(expect.arguments) {
            return Err(StateError::OtherArguments);
        }
        Ok(claims)
    }

    fn principal_hash(&self, principal: &str) -> String {
        hex(&Sha256::digest([&self.salt[..], principal.as_bytes()].concat())[..16])
    }
}

/// The digest of a call's arguments: SHA-256 of their JSON with every object's keys sorted.
pub(crate) fn arguments_digest(arguments: &str) -> String {
    let canonical = match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value) => canonical(&value),
        Err(_) => arguments.to_owned(),
    };
    hex(&Sha256::digest(canonical.as_bytes()))
}

fn canonical(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", crate::rpc::json_string(k), canonical(&map[k])))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        serde_json::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect<'a>(principal: &'a str, arguments: &'a str) -> Expect<'a> {
        Expect {
            method: "tools/call",
            tool: "mcp__s__echo",
            arguments,
            principal,
        }
    }

    #[test]
    fn a_state_opens_only_for_what_it_was_issued_for() {
        let sealer = Sealer::from_secret(&[1u8; 32]);
        let state = sealer.seal_at(
            &expect("alice", r#"{"a":1,"b":[2]}"#),
            Some("up".into()),
            1_000,
        );
        let claims = sealer
            .open_at(&state, &expect("alice", r#"{"b":[2],"a":1}"#), 1_010)
            .expect("same arguments in another order");
        assert_eq!(claims.exp, 1_000 + LIFETIME_S);
        assert_eq!(claims.u.as_deref(), Some("up"));
        assert!(!state.contains("alice"), "the principal is hashed");
        assert_eq!(
            sealer.open_at(&state, &expect("bob", r#"{"a":1,"b":[2]}"#), 1_010),
            Err(StateError::OtherPrincipal)
        );
        assert_eq!(
            sealer.open_at(&state, &expect("alice", r#"{"a":2,"b":[2]}"#), 1_010),
            Err(StateError::OtherArguments)
        );
        let other_tool = Expect {
            tool: "mcp__s__other",
            ..expect("alice", r#"{"a":1,"b":[2]}"#)
        };
        assert_eq!(
            sealer.open_at(&state, &other_tool, 1_010),
            Err(StateError::OtherTool)
        );
        assert_eq!(
            sealer.open_at(
                &state,
                &expect("alice", r#"{"a":1,"b":[2]}"#),
                1_000 + LIFETIME_S + 1
            ),
            Err(StateError::Expired)
        );
    }

    #[test]
    fn an_altered_or_foreign_state_is_refused() {
        let sealer = Sealer::from_secret(&[1u8; 32]);
        let e = expect("alice", "{}");
        let state = sealer.seal_at(&e, None, 1_000);
        // Claims rewritten (a longer expiry), old tag kept.
        let (payload, tag) = state[PREFIX.len()..].split_once('.').expect("two parts");
        let mut claims: Claims =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("b64")).expect("json");
        claims.exp += 10_000;
        let forged = format!(
            "{PREFIX}{}.{tag}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).expect("json"))
        );
        assert_eq!(sealer.open_at(&forged, &e, 1_001), Err(StateError::Forged));
        let other = Sealer::from_secret(&[2u8; 32]);
        assert_eq!(other.open_at(&state, &e, 1_001), Err(StateError::Forged));
        for junk in ["", "v1.", "v2.abc.def", "v1.!!.??", "v1.abc"] {
            assert_eq!(
                sealer.open_at(junk, &e, 1_001),
                Err(StateError::Malformed),
                "{junk}"
            );
        }
    }
}
