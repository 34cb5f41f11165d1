//! What one Core MCP tells another about a call it passes on, in the call's `_meta`:
//!
//! - [`ROUTED`] (`true`): passed on by a service-mode `--route`; the receiver serves it from
//!   its store or refuses it, and never routes it again.
//! - [`PRINCIPAL`]: on whose behalf the call is made — the principal the sender's own policy
//!   judged it for, written as grants write it (a static token's `NAME`, or `oauth:SUBJECT`),
//!   so the receiver's policy judges the same principal of the same kind; an OAuth principal
//!   comes with its [`ISSUER`] and [`SCOPES`] (for `scope:NAME` grants there too).
//! - [`BUDGET`]: the result budget of the agent's session, so the answer that comes back fits
//!   it (a Codex session's 10 000 characters, say) and is not cut on the way.
//! - [`VIA`]: the instance ids of the Core MCPs the call has passed through, in order. A Core
//!   MCP that finds its own id there refuses the call at once: a relay, route or `remote_host`
//!   leads back to it, and passing the call on again would only bounce it until its deadline.
//!
//! Invariants:
//! - [`PRINCIPAL`] (and [`SCOPES`], [`ISSUER`]) is written only for a peer the operator
//!   configured (see [`super::peers`]), with the token that lets it know us, and only for a
//!   token or OAuth principal; it is believed only from a caller authenticated as a configured
//!   peer — of the kind `--peer-token` names, so an OAuth subject never passes for a static
//!   peer of the same name ([`Incoming::caller`]); from anyone else it is refused, never
//!   ignored, so a client cannot pass for another principal.
//! - A forwarded OAuth principal of another issuer than this server's own `--oauth-issuer` is
//!   refused: a subject is a subject of one issuer.
//! - A principal that speaks for this machine's own user (`stdio`, or the tokenless loopback
//!   listener `*`) is never believed as such on the other side: there it is the peer itself.
//! - [`VIA`] only ever restricts (a call it names us in is refused), so it is accepted from
//!   anyone; it is bounded ([`MAX_VIA`]). [`BUDGET`] likewise only lowers a budget, and is
//!   accepted from anyone within the bounds of `coremcp_wire::budget`.

use coremcp_wire::client_name::MAX_CLIENT_CHARS;
use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use coremcp_wire::policy::Caller;

/// `_meta` key: the call was passed on by a service-mode route.
pub(crate) const ROUTED: &str = "dev.coremcp/routed";
/// `_meta` key: the principal the call is made for.
pub const PRINCIPAL: &str = "dev.coremcp/principal";
/// `_meta` key: the OAuth scopes of the principal the call is made for (with [`PRINCIPAL`]).
pub const SCOPES: &str = "dev.coremcp/scopes";
/// The most scopes carried.
pub(crate) const MAX_SCOPES: usize = 64;
/// The longest scope name carried.
pub(crate) const MAX_SCOPE_LEN: usize = 200;
/// `_meta` key: the issuer of the OAuth principal the call is made for (with [`PRINCIPAL`]).
pub const ISSUER: &str = "dev.coremcp/issuer";
/// The longest issuer carried.
pub(crate) const MAX_ISSUER_LEN: usize = 2000;
/// `_meta` key: the name of the agent's client the call came from (what a record of who did
/// what shows), told to a configured peer and believed only from one.
pub(crate) const CLIENT: &str = "dev.coremcp/client";
/// `_meta` key: the result budget (characters) of the session the call came from, which the
/// receiver's answer keeps to (it only lowers the receiver's own, so it is taken from anyone).
pub(crate) const BUDGET: &str = "dev.coremcp/result_chars";
/// `_meta` key: the instance ids of the Core MCPs the call passed through.
pub(crate) const VIA: &str = "dev.coremcp/via";
/// Hops a call may have made; a longer path is refused as a loop.
pub(crate) const MAX_VIA: usize = 8;

/// The prefix every key of ours shares: a `_meta` without it needs no parse. Its searcher is
/// built once: a 2026 call carries a `_meta` every time.
static PREFIX: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"dev.coremcp/"));

/// This process's instance id (16 hex digits, random per process).
pub(crate) fn instance_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let mut bytes = [0u8; 8];
        // SAFETY: getrandom(2) writes at most `bytes.len()` bytes into the buffer we own.
        let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
        if got != bytes.len() as isize {
            // Unique enough among the Core MCPs one call passes: pid and the clock.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            bytes = (nanos ^ u64::from(std::process::id()) << 40).to_be_bytes();
        }
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    })
}

/// What a call's `_meta` says about its way here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Incoming {
    pub routed: bool,
    /// The principal as grants write it (`NAME`, `oauth:SUBJECT`, `stdio`, `*`).
    pub principal: Option<String>,
    /// The principal's OAuth scopes, when it signed in with an access token.
    pub scopes: Option<Vec<String>>,
    /// The principal's OAuth issuer, likewise.
    pub issuer: Option<String>,
    /// The client's name, as the sender's session knew it.
    pub client: Option<String>,
    /// The result budget of the sender's session.
    pub budget: Option<usize>,
    pub via: Vec<String>,
}

/// Why a call's hop metadata is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HopError {
    #[error("_meta \"{key}\" is malformed: {why}")]
    Malformed { key: &'static str, why: String },
    #[error(
        "_meta \"{PRINCIPAL}\" names the principal a call is made for, and only another Core \
         MCP configured as a peer may send it (its token named in COREMCP_PEER_TOKENS / \
         --peer-token); {caller} is not one, so the call was not run"
    )]
    NotAPeer { caller: String },
    #[error(
        "_meta \"{PRINCIPAL}\" names an OAuth principal of the issuer {forwarded}, and this \
         Core MCP trusts the issuer {own}: a subject is only the same principal under the same \
         issuer, so the call was not run"
    )]
    ForeignIssuer { forwarded: String, own: String },
    #[error(
        "route_loop: this call already passed through this Core MCP (via {path}); a relay, \
         route or remote_host leads back here, so it was refused instead of being passed on \
         again — fix the relay list or the Registry host's core_mcp_url"
    )]
    Loop { path: String },
}

impl Incoming {
    /// Reads the keys of ours from a call's `_meta` (none: the default).
    pub fn parse(meta: Option<&RawValue>) -> Result<Self, HopError> {
        let Some(meta) = meta else {
            return Ok(Self::default());
        };
        if PREFIX.find(meta.get().as_bytes()).is_none() {
            return Ok(Self::default());
        }
        let map: Map<String, Value> =
            serde_json::from_str(meta.get()).map_err(|e| HopError::Malformed {
                key: "_meta",
                why: e.to_string(),
            })?;
        let routed = map.get(ROUTED) == Some(&Value::Bool(true));
        let principal = match map.get(PRINCIPAL) {
            None => None,
            Some(Value::String(name)) if is_forwardable(name) => Some(name.clone()),
            Some(other) => {
                return Err(HopError::Malformed {
                    key: PRINCIPAL,
                    why: format!(
                        "expected a principal as grants write it (stdio, *, a token name or \
                         oauth:SUBJECT), got {other}"
                    ),
                })
            }
        };
        let oauth = principal
            .as_deref()
            .is_some_and(|p| p.starts_with(coremcp_wire::policy::OAUTH_PREFIX));
        let issuer = match map.get(ISSUER) {
            None | Some(Value::Null) => None,
            Some(Value::String(issuer))
                if issuer.len() <= MAX_ISSUER_LEN && !issuer.chars().any(char::is_control) =>
            {
                Some(issuer.clone())
            }
            Some(other) => {
                return Err(HopError::Malformed {
                    key: ISSUER,
                    why: format!("expected an issuer URL, got {other}"),
                })
            }
        };
        if oauth != issuer.is_some() {
            return Err(HopError::Malformed {
                key: ISSUER,
                why: format!(
                    "an issuer goes with an OAuth principal (oauth:SUBJECT in \"{PRINCIPAL}\"), \
                     and only with one"
                ),
            });
        }
        let client = client_of(&map)?;
        let budget = budget_of(&map)?;
        let scopes = match map.get(SCOPES) {
            None | Some(Value::Null) => None,
            Some(Value::Array(list)) if list.len() <= MAX_SCOPES => Some(
                list.iter()
                    .map(|s| match s {
                        Value::String(s)
                            if s.len() <= MAX_SCOPE_LEN && coremcp_wire::policy::is_scope(s) =>
                        {
                            Ok(s.clone())
                        }
                        other => Err(HopError::Malformed {
                            key: SCOPES,
                            why: format!("expected scope names, got {other}"),
                        }),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Some(other) => {
                return Err(HopError::Malformed {
                    key: SCOPES,
                    why: format!("expected at most {MAX_SCOPES} scope names, got {other}"),
                })
            }
        };
        if scopes.is_some() && !oauth {
            return Err(HopError::Malformed {
                key: SCOPES,
                why: format!(
                    "scopes are an OAuth principal's, and \"{PRINCIPAL}\" names none (an OAuth \
                     principal is written oauth:SUBJECT)"
                ),
            });
        }
        let via = via_of(&map)?;
        Ok(Self {
            routed,
            principal,
            scopes,
            issuer,
            client,
            budget,
            via,
        })
    }

    /// Refuses a call that already passed through this process.
    #[inline]
    pub fn check_loop(&self) -> Result<(), HopError> {
        if self.via.iter().any(|id| id == instance_id()) {
            return Err(HopError::Loop {
                path: self.via.join(" → "),
            });
        }
        Ok(())
    }

    /// The client name a call carries, when `session` is a configured peer (from anyone
    /// else it is ignored: a name, not an identity).
    #[inline]
    pub fn client(&self, session: &Caller, peer_tokens: &[String]) -> Option<&str> {
        is_peer(session, peer_tokens)
            .then_some(self.client.as_deref())
            .flatten()
    }

    /// The caller the policy judges: `session` itself, or — when the call names a principal
    /// and `session` is a configured peer (`peer_tokens`, each a principal of its own kind) —
    /// that principal, of the kind it is written as. A principal that is the other machine's
    /// own user (`stdio`, `*`) is the peer itself here. `own_issuer`: this server's
    /// `--oauth-issuer`, which a forwarded OAuth principal must share.
    pub fn caller<'a>(
        &self,
        session: &'a Caller,
        peer_tokens: &[String],
        own_issuer: Option<&str>,
    ) -> Result<Cow<'a, Caller>, HopError> {
        let Some(principal) = &self.principal else {
            return Ok(Cow::Borrowed(session));
        };
        if !is_peer(session, peer_tokens) {
            return Err(HopError::NotAPeer {
                caller: session.described(),
            });
        }
        if let Some(subject) = principal.strip_prefix(coremcp_wire::policy::OAUTH_PREFIX) {
            let issuer = self.issuer.clone().unwrap_or_default();
            if let Some(own) = own_issuer.filter(|own| *own != issuer) {
                return Err(HopError::ForeignIssuer {
                    forwarded: issuer,
                    own: own.to_owned(),
                });
            }
            return Ok(Cow::Owned(Caller::Signed {
                issuer: std::sync::Arc::from(issuer),
                name: subject.to_owned(),
                scopes: self.scopes.clone().unwrap_or_default(),
            }));
        }
        Ok(match principal.as_str() {
            "stdio" | "*" => Cow::Borrowed(session),
            name => Cow::Owned(Caller::Token(name.to_owned())),
        })
    }
}

/// The client name of a call's `_meta` ([`CLIENT`]).
fn client_of(map: &Map<String, Value>) -> Result<Option<String>, HopError> {
    Ok(match map.get(CLIENT) {
        None | Some(Value::Null) => None,
        Some(Value::String(name))
            if name.chars().count() <= MAX_CLIENT_CHARS && !name.chars().any(char::is_control) =>
        {
            Some(name.clone())
        }
        Some(other) => {
            return Err(HopError::Malformed {
                key: CLIENT,
                why: format!(
                    "expected a client name of at most {MAX_CLIENT_CHARS} characters, got \
                         {other}"
                ),
            })
        }
    })
}

/// The result budget of a call's `_meta` ([`BUDGET`]).
fn budget_of(map: &Map<String, Value>) -> Result<Option<usize>, HopError> {
    use coremcp_wire::budget::{MAX, MIN};
    match map.get(BUDGET) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n))
            if n.as_u64()
                .is_some_and(|n| (MIN as u64..=MAX as u64).contains(&n)) =>
        {
            Ok(n.as_u64().map(|n| n as usize))
        }
        Some(other) => Err(HopError::Malformed {
            key: BUDGET,
            why: format!("expected a number of characters from {MIN} to {MAX}, got {other}"),
        }),
    }
}

/// The path of a call's `_meta` ([`VIA`]).
fn via_of(map: &Map<String, Value>) -> Result<Vec<String>, HopError> {
    Ok(match map.get(VIA) {
        None => Vec::new(),
        Some(Value::Array(ids)) if ids.len() <= MAX_VIA => ids
            .iter()
            .map(|id| match id {
                Value::String(id) if id.len() <= 64 => Ok(id.clone()),
                other => Err(HopError::Malformed {
                    key: VIA,
                    why: format!("expected instance ids, got {other}"),
                }),
            })
            .collect::<Result<_, _>>()?,
        Some(Value::Array(ids)) => {
            return Err(HopError::Loop {
                path: format!("{} Core MCPs, more than {MAX_VIA}", ids.len()),
            })
        }
        Some(other) => {
            return Err(HopError::Malformed {
                key: VIA,
                why: format!("expected an array of instance ids, got {other}"),
            })
        }
    })
}

/// Whether `session` is one of the configured peers, each written as grants write a principal:
/// the kind must match as well as the name.
fn is_peer(session: &Caller, peer_tokens: &[String]) -> bool {
    match session {
        Caller::Token(_) | Caller::Signed { .. } => peer_tokens.iter().any(|p| session.is(p)),
        Caller::Stdio | Caller::Anonymous => false,
    }
}

/// Whether `text` is a principal a peer may name: `stdio`, `*`, a token name, `oauth:SUBJECT`.
fn is_forwardable(text: &str) -> bool {
    let name = text
        .strip_prefix(coremcp_wire::policy::OAUTH_PREFIX)
        .unwrap_or(text);
    coremcp_wire::policy::is_principal_name(name)
}

/// What a call carries on to the next Core MCP.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outgoing {
    /// The principal this process judged the call for, as grants write it; `None` for this
    /// machine's own user (stdio, a tokenless loopback listener), who is the peer itself on the
    /// other side.
    pub principal: Option<String>,
    /// Its OAuth issuer, when it signed in with an access token.
    pub issuer: Option<String>,
    /// The name of the agent's client: the one the call arrived with from a peer, else this
    /// process's session's.
    pub client: Option<String>,
    /// The principal's OAuth scopes, when it signed in with an access token.
    pub scopes: Option<Vec<String>>,
    /// The result budget of the agent's session, when below the largest.
    pub budget: Option<usize>,
    /// The path so far, this process last.
    pub via: Vec<String>,
}

impl Outgoing {
    /// The hop of a call judged for `caller` that arrived with `incoming`, in a session whose
    /// client named itself `session_client`.
    pub fn new(caller: &Caller, incoming: &Incoming, session_client: Option<&str>) -> Self {
        let mut via = incoming.via.clone();
        via.push(instance_id().to_owned());
        let (principal, scopes, issuer) = match caller {
            Caller::Token(_) => (Some(caller.principal()), None, None),
            Caller::Signed { scopes, issuer, .. } => (
                Some(caller.principal()),
                Some(scopes.clone()),
                Some(issuer.to_string()),
            ),
            Caller::Stdio | Caller::Anonymous => (None, None, None),
        };
        // Believed from a peer only: the session drops it from anyone else.
        let client = incoming
            .client
            .clone()
            .or_else(|| session_client.map(str::to_owned))
            .filter(|c| !c.is_empty());
        Self {
            principal,
            issuer,
            client,
            scopes,
            budget: None,
            via,
        }
    }

    /// The same hop, telling the peer the agent's session holds `budget` characters a result
    /// (nothing when that is the largest, which every Core MCP keeps to anyway).
    pub fn with_budget(mut self, budget: usize) -> Self {
        self.budget = (budget < coremcp_wire::budget::MAX).then_some(budget);
        self
    }

    /// The `_meta` entries for a call to a peer; `credentialed`: the peer is one the operator
    /// configured and it is sent this process's token (only then is the principal told: the
    /// other side believes it only from a caller it authenticated as a peer); `routed`: a
    /// route passes the call on.
    pub fn meta(&self, credentialed: bool, routed: bool) -> Map<String, Value> {
        let mut meta = Map::new();
        if routed {
            meta.insert(ROUTED.to_owned(), Value::Bool(true));
        }
        if let (true, Some(principal)) = (credentialed, &self.principal) {
            meta.insert(PRINCIPAL.to_owned(), Value::from(principal.as_str()));
            if let Some(scopes) = &self.scopes {
                meta.insert(
                    SCOPES.to_owned(),
                    Value::Array(scopes.iter().map(|s| Value::from(s.as_str())).collect()),
                );
            }
            if let Some(issuer) = &self.issuer {
                meta.insert(ISSUER.to_owned(), Value::from(issuer.as_str()));
            }
        }
        if let (true, Some(client)) = (credentialed, &self.client) {
            meta.insert(CLIENT.to_owned(), Value::from(client.as_str()));
        }
        if let Some(budget) = self.budget {
            meta.insert(BUDGET.to_owned(), Value::from(budget));
        }
        meta.insert(
            VIA.to_owned(),
            Value::Array(self.via.iter().map(|v| Value::from(v.as_str())).collect()),
        );
        meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Incoming, HopError> {
        let raw = RawValue::from_string(text.to_owned()).expect("json");
        Incoming::parse(Some(&raw))
    }

    #[test]
    fn a_meta_without_our_keys_is_the_default() {
        assert_eq!(Incoming::parse(None), Ok(Incoming::default()));
        assert_eq!(
            parse(r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#),
            Ok(Incoming::default())
        );
    }

    #[test]
    fn keys_are_read_and_bad_ones_named() {
        let hop = parse(r#"{"dev.coremcp/routed":true,"dev.coremcp/principal":"bob","dev.coremcp/via":["a","b"]}"#)
            .expect("hop");
        assert_eq!(
            hop,
            Incoming {
                routed: true,
                principal: Some("bob".into()),
                scopes: None,
                issuer: None,
                client: None,
                budget: None,
                via: vec!["a".into(), "b".into()],
            }
        );
        let bad = parse(r#"{"dev.coremcp/principal":"a b"}"#).expect_err("name");
        assert!(bad.to_string().contains(PRINCIPAL), "{bad}");
        let bad = parse(r#"{"dev.coremcp/via":"x"}"#).expect_err("via");
        assert!(bad.to_string().contains(VIA), "{bad}");
        let long = format!(r#"{{"dev.coremcp/via":{:?}}}"#, vec!["x"; MAX_VIA + 1]);
        assert!(matches!(parse(&long), Err(HopError::Loop { .. })));
    }

    #[test]
    fn a_budget_is_carried_within_its_bounds_from_anyone() {
        let hop = parse(r#"{"dev.coremcp/result_chars":10000}"#).expect("hop");
        assert_eq!(hop.budget, Some(10_000));
        for bad in ["3999", "20001", "\"10000\"", "-1", "1.5"] {
            let e = parse(&format!(r#"{{"dev.coremcp/result_chars":{bad}}}"#)).expect_err(bad);
            assert!(e.to_string().contains(BUDGET), "{e}");
            assert!(e.to_string().contains("from 4000 to 20000"), "{e}");
        }
        // Told whatever the peer is (it only lowers the receiver's budget), and only when
        // below the largest.
        let out = Outgoing::new(&Caller::Stdio, &Incoming::default(), None).with_budget(10_000);
        assert_eq!(out.meta(false, false)[BUDGET], 10_000);
        let round = Incoming::parse(Some(
            &RawValue::from_string(Value::Object(out.meta(false, false)).to_string())
                .expect("json"),
        ))
        .expect("hop");
        assert_eq!(round.budget, Some(10_000));
        let largest = Outgoing::new(&Caller::Stdio, &Incoming::default(), None)
            .with_budget(coremcp_wire::budget::MAX);
        assert!(largest.meta(true, false).get(BUDGET).is_none());
    }

    #[test]
    fn a_principal_is_believed_only_from_a_configured_peer() {
        let hop = parse(r#"{"dev.coremcp/principal":"bob"}"#).expect("hop");
        let peers = vec!["peer".to_owned()];
        assert_eq!(
            hop.caller(&Caller::Token("peer".into()), &peers, None)
                .map(Cow::into_owned),
            Ok(Caller::Token("bob".into()))
        );
        for not_a_peer in [
            Caller::Token("bob".into()),
            Caller::Anonymous,
            Caller::Stdio,
        ] {
            let err = hop.caller(&not_a_peer, &peers, None).expect_err("refused");
            assert!(matches!(err, HopError::NotAPeer { .. }), "{err}");
        }
        // The other machine's own user is the peer itself here.
        for local in ["stdio", "*"] {
            let hop = Incoming {
                principal: Some(local.into()),
                ..Incoming::default()
            };
            assert_eq!(
                hop.caller(&Caller::Token("peer".into()), &peers, None)
                    .map(Cow::into_owned),
                Ok(Caller::Token("peer".into()))
            );
        }
        // Without a principal the session's caller stands.
        assert_eq!(
            Incoming::default()
                .caller(&Caller::Anonymous, &peers, None)
                .map(Cow::into_owned),
            Ok(Caller::Anonymous)
        );
    }

    #[test]
    fn an_oauth_principals_scopes_travel_with_it_to_a_configured_peer_only() {
        let caller = Caller::Signed {
            issuer: std::sync::Arc::from("https://id.example"),
            name: "svc".into(),
            scopes: vec!["deploy".into(), "notes".into()],
        };
        let out = Outgoing::new(&caller, &Incoming::default(), None);
        let meta = out.meta(true, false);
        assert_eq!(meta[SCOPES], serde_json::json!(["deploy", "notes"]));
        assert_eq!(meta[PRINCIPAL], "oauth:svc", "written with its kind");
        assert_eq!(meta[ISSUER], "https://id.example");
        assert!(
            !out.meta(false, false).contains_key(SCOPES),
            "only with the token"
        );
        // The next Core MCP judges the same principal with the same scopes, from a peer only.
        let text = Value::Object(meta).to_string();
        let hop = parse(&text).expect("hop");
        let peers = vec!["peer".to_owned()];
        assert_eq!(
            hop.caller(&Caller::Token("peer".into()), &peers, None)
                .map(Cow::into_owned),
            Ok(caller.clone())
        );
        assert!(hop
            .caller(&Caller::Token("svc".into()), &peers, None)
            .is_err());
        // A relay with an issuer of its own believes only that issuer's subjects.
        assert_eq!(
            hop.caller(
                &Caller::Token("peer".into()),
                &peers,
                Some("https://id.example")
            )
            .map(Cow::into_owned),
            Ok(caller.clone())
        );
        let foreign = hop
            .caller(
                &Caller::Token("peer".into()),
                &peers,
                Some("https://other.example"),
            )
            .expect_err("another issuer");
        assert!(
            matches!(foreign, HopError::ForeignIssuer { .. }),
            "{foreign}"
        );
        // A static token's principal carries none.
        let plain = Outgoing::new(&Caller::Token("bob".into()), &Incoming::default(), None);
        assert!(!plain.meta(true, false).contains_key(SCOPES));
        for bad in [
            r#"{"dev.coremcp/principal":"oauth:a","dev.coremcp/issuer":"i","dev.coremcp/scopes":"x"}"#,
            r#"{"dev.coremcp/principal":"oauth:a","dev.coremcp/issuer":"i","dev.coremcp/scopes":["a;b"]}"#,
            r#"{"dev.coremcp/scopes":["x"]}"#,
            r#"{"dev.coremcp/principal":"a","dev.coremcp/scopes":["x"]}"#,
        ] {
            let err = parse(bad).expect_err(bad);
            assert!(err.to_string().contains(SCOPES), "{bad}: {err}");
        }
        for bad in [
            r#"{"dev.coremcp/principal":"oauth:a"}"#,
            r#"{"dev.coremcp/principal":"a","dev.coremcp/issuer":"i"}"#,
        ] {
            let err = parse(bad).expect_err(bad);
            assert!(err.to_string().contains(ISSUER), "{bad}: {err}");
        }
    }

    #[test]
    fn a_peer_is_a_principal_of_the_kind_it_is_configured_as() {
        let hop = parse(r#"{"dev.coremcp/principal":"victim"}"#).expect("hop");
        // `--peer-token relay`: the static token relay. An OAuth subject of that name is not it.
        let peers = vec!["relay".to_owned()];
        let impostor = Caller::Signed {
            issuer: std::sync::Arc::from("https://id.example"),
            name: "relay".into(),
            scopes: Vec::new(),
        };
        let err = hop
            .caller(&impostor, &peers, None)
            .expect_err("not the peer");
        assert!(matches!(err, HopError::NotAPeer { .. }), "{err}");
        assert_eq!(hop.client(&impostor, &peers), None);
        // `--peer-token oauth:proxy`: a peer that signs in with client credentials, and only it.
        let peers = vec!["oauth:proxy".to_owned()];
        let proxy = Caller::Signed {
            issuer: std::sync::Arc::from("https://id.example"),
            name: "proxy".into(),
            scopes: Vec::new(),
        };
        assert_eq!(
            hop.caller(&proxy, &peers, None).map(Cow::into_owned),
            Ok(Caller::Token("victim".into()))
        );
        let err = hop
            .caller(&Caller::Token("proxy".into()), &peers, None)
            .expect_err("the static token proxy is not the OAuth peer");
        assert!(matches!(err, HopError::NotAPeer { .. }), "{err}");
    }

    #[test]
    fn a_client_name_is_believed_from_a_peer_and_told_only_to_one() {
        let hop = parse(r#"{"dev.coremcp/client":"claude-code"}"#).expect("hop");
        let peers = vec!["peer".to_owned()];
        assert_eq!(
            hop.client(&Caller::Token("peer".into()), &peers),
            Some("claude-code")
        );
        for stranger in [
            Caller::Token("bob".into()),
            Caller::Anonymous,
            Caller::Stdio,
        ] {
            assert_eq!(hop.client(&stranger, &peers), None, "{stranger:?}");
        }
        let long = format!(r#"{{"dev.coremcp/client":"{}"}}"#, "c".repeat(201));
        let bad = parse(&long).expect_err("too long");
        assert!(bad.to_string().contains(CLIENT), "{bad}");
        let out = Outgoing::new(&Caller::Stdio, &hop, Some("codex"));
        assert_eq!(
            out.client.as_deref(),
            Some("claude-code"),
            "a peer's name comes first"
        );
        let own = Outgoing::new(&Caller::Stdio, &Incoming::default(), Some("codex"));
        assert_eq!(
            own.client.as_deref(),
            Some("codex"),
            "else the session's own"
        );
        let blank = Outgoing::new(&Caller::Stdio, &Incoming::default(), Some(""));
        assert_eq!(blank.client, None, "an empty name is no name");
        assert_eq!(
            out.meta(true, false).get(CLIENT),
            Some(&Value::from("claude-code"))
        );
        assert!(
            out.meta(false, false).get(CLIENT).is_none(),
            "only to a peer"
        );
    }

    #[test]
    fn a_call_that_passed_here_before_is_a_loop() {
        let here = Incoming {
            via: vec!["other".into(), instance_id().to_owned()],
            ..Incoming::default()
        };
        assert!(matches!(here.check_loop(), Err(HopError::Loop { .. })));
        let elsewhere = Incoming {
            via: vec!["other".into()],
            ..Incoming::default()
        };
        assert_eq!(elsewhere.check_loop(), Ok(()));
        let out = Outgoing::new(&Caller::Token("bob".into()), &elsewhere, None);
        assert_eq!(out.via, ["other", instance_id()]);
        let meta = out.meta(false, true);
        assert_eq!(meta.get(ROUTED), Some(&Value::Bool(true)));
        assert!(
            meta.get(PRINCIPAL).is_none(),
            "never told to a peer nobody configured"
        );
        assert_eq!(out.meta(true, false)[PRINCIPAL], "bob");
        // This machine's own user is the peer itself over there: nothing to tell.
        let local = Outgoing::new(&Caller::Stdio, &Incoming::default(), None);
        assert!(local.meta(true, false).get(PRINCIPAL).is_none());
        assert_eq!(
            local.meta(true, false)[VIA],
            serde_json::json!([instance_id()])
        );
    }
}
