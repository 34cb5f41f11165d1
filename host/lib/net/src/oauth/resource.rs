//! `coremcp serve --oauth-issuer URL`: an OAuth 2.1 resource server (RFC 9728, RFC 9068, MCP's
//! authorization spec). It publishes its protected-resource metadata, answers a request
//! without a valid token `401` with `WWW-Authenticate: Bearer resource_metadata="…"`, and
//! accepts a JWT access token only when all of these hold:
//! - its signature verifies with a key of the issuer's JWKS, by `kid`, with an asymmetric
//!   algorithm the key allows (`none` and the HMAC family are never accepted: a public key
//!   used as an HMAC secret would let anyone sign);
//! - `iss` is the issuer, `aud` holds the audience (this server's `/mcp` URL unless
//!   `--oauth-audience` says otherwise), `exp` is present and not past, and `nbf` (if present)
//!   not ahead, with [`LEEWAY`] for clock skew;
//! - it is typed `at+jwt` (RFC 9068 §2.1: an ID token or another JWT of the issuer is not an
//!   access token), unless `--oauth-untyped-tokens` also lets `JWT` and no type in;
//! - the principal claim (`sub`, or `--oauth-principal-claim`) is a principal name that grants
//!   can name (letters, digits, `_ - .`), as `oauth:NAME`: an OAuth subject is a principal of
//!   its own kind, never the static token of the same name.
//!
//! Keys are fetched at start and kept; a token naming a `kid` not among them makes one fetch
//! (so a rotated key is picked up at once), at most once per [`REFETCH_AFTER`] so that made-up
//! `kid`s cannot make this server hammer the provider.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{json, Map, Value};

use super::OAuthError;

/// Clock skew allowed on `exp` and `nbf`.
pub(crate) const LEEWAY: Duration = Duration::from_secs(5);
/// The least time between two fetches of the keys.
pub(crate) const REFETCH_AFTER: Duration = Duration::from_secs(5);

/// The algorithms a token may be signed with: asymmetric only.
const ASYMMETRIC: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// What `serve` is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `--oauth-issuer`.
    pub issuer: String,
    /// `--oauth-audience`, else this server's `/mcp` URL.
    pub audience: String,
    /// `--oauth-principal-claim` (default `sub`).
    pub principal_claim: String,
    /// `--oauth-scopes`: the scopes a client should ask for, published in the metadata
    /// (`scopes_supported`) and the challenge (`scope`), as MCP clients choose them there.
    pub scopes: Vec<String>,
    /// `--oauth-untyped-tokens`: also accept a token typed `JWT` or not typed (an issuer that
    /// cannot type its access tokens `at+jwt`).
    pub untyped_tokens: bool,
}

/// A token's caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The issuer it was checked against (the subject is a subject of this issuer).
    pub issuer: std::sync::Arc<str>,
    pub principal: String,
    pub scopes: Vec<String>,
}

/// Why a token was refused (the text goes into the `401`'s `error_description`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// Signed with a key this server does not hold (yet): worth one fetch of the keys.
    #[error("the token is signed with a key the issuer does not publish (kid {0:?})")]
    UnknownKey(Option<String>),
    #[error("{0}")]
    Invalid(String),
}

/// The issuer's keys as last fetched.
struct Keys {
    keys: Vec<Jwk>,
    fetched: Instant,
}

/// The resource server of one `serve`.
pub struct ResourceServer {
    settings: Settings,
    /// `settings.issuer`, shared with every caller it verifies.
    issuer: std::sync::Arc<str>,
    jwks_uri: String,
    metadata_url: String,
    keys: Mutex<Keys>,
}

impl ResourceServer {
    /// Discovers the issuer and fetches its keys (at start: a provider that cannot be read
    /// stops the start, naming it).
    pub fn start(settings: Settings) -> Result<Self, OAuthError> {
        let endpoints = super::discover(&settings.issuer, Instant::now() + super::TIMEOUT)?;
        let jwks_uri = endpoints.jwks_uri.ok_or_else(|| OAuthError::Provider {
            url: settings.issuer.clone(),
            reason: "its discovery document has no jwks_uri".to_owned(),
        })?;
        let keys = fetch_keys(&jwks_uri, Instant::now() + super::TIMEOUT)?;
        Ok(Self::with_keys(settings, jwks_uri, keys))
    }

    fn with_keys(settings: Settings, jwks_uri: String, keys: Vec<Jwk>) -> Self {
        Self {
            metadata_url: metadata_url(&settings.audience),
            issuer: std::sync::Arc::from(settings.issuer.as_str()),
            settings,
            jwks_uri,
            keys: Mutex::new(Keys {
                keys,
                fetched: Instant::now(),
            }),
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The protected-resource metadata document (RFC 9728 §2).
    pub fn metadata(&self) -> Value {
        let mut doc = json!({
            "resource": self.settings.audience,
            "authorization_servers": [self.settings.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "Core MCP",
        });
        if !self.settings.scopes.is_empty() {
            doc["scopes_supported"] = json!(self.settings.scopes);
        }
        doc
    }

    /// The `WWW-Authenticate` value of a `401`: where the metadata is, and why the token was
    /// refused when one was sent.
    pub fn challenge(&self, refused: Option<&str>) -> String {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
        if !self.settings.scopes.is_empty() {
            challenge.push_str(&format!(", scope=\"{}\"", self.settings.scopes.join(" ")));
        }
        if let Some(why) = refused {
            // A quoted-string may not hold `"` or `\`; the description is for people anyway.
            let why: String = why
                .chars()
                .map(|c| if matches!(c, '"' | '\\') { '\'' } else { c })
                .filter(|c| !c.is_control())
                .collect();
            challenge.push_str(&format!(
                ", error=\"invalid_token\", error_description=\"{why}\""
            ));
        }
        challenge
    }

    /// Checks `token` with the keys held now (no I/O).
    pub fn check(&self, token: &str) -> Result<Verified, Rejected> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| Rejected::Invalid(format!("the token is not a signed JWT: {e}")))?;
        check_type(header.typ.as_deref(), self.settings.untyped_tokens)?;
        if !ASYMMETRIC.contains(&header.alg) {
            return Err(Rejected::Invalid(format!(
                "the token's algorithm {:?} is not accepted (an asymmetric signature is required)",
                header.alg
            )));
        }
        let key = {
            let keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
            pick(&keys.keys, header.kid.as_deref(), header.alg)
                .ok_or_else(|| Rejected::UnknownKey(header.kid.clone()))?
        };
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[self.settings.issuer.as_str()]);
        validation.set_audience(&[self.settings.audience.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| Rejected::Invalid(describe(e.kind(), &self.settings)))?;
        let claims = data.claims;
        let claim = &self.settings.principal_claim;
        let principal = claims
            .get(claim)
            .and_then(Value::as_str)
            .ok_or_else(|| Rejected::Invalid(format!("the token has no {claim} claim")))?;
        if !coremcp_wire::policy::is_principal_name(principal)
            || principal == "*"
            || principal == "stdio"
        {
            return Err(Rejected::Invalid(format!(
                "the token's {claim} {principal:?} is not a principal name (letters, digits, \
                 _ - .); the server's --oauth-principal-claim can name another claim"
            )));
        }
        Ok(Verified {
            issuer: std::sync::Arc::clone(&self.issuer),
            principal: principal.to_owned(),
            scopes: scopes(&claims),
        })
    }

    /// [`ResourceServer::check`], fetching the keys again first when the token names one not
    /// held and the last fetch is older than [`REFETCH_AFTER`] (blocking I/O).
    pub fn check_fetching(&self, token: &str) -> Result<Verified, Rejected> {
        match self.check(token) {
            Err(Rejected::UnknownKey(kid)) => {
                if !self.refetch() {
                    return Err(Rejected::UnknownKey(kid));
                }
                self.check(token)
            }
            other => other,
        }
    }

    /// Fetches the keys again if the last fetch is old enough; whether it did.
    fn refetch(&self) -> bool {
        {
            let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
            if keys.fetched.elapsed() < REFETCH_AFTER {
                return false;
            }
            // Claimed now, so that calls arriving meanwhile do not fetch as well.
            keys.fetched = Instant::now();
        }
        match fetch_keys(&self.jwks_uri, Instant::now() + super::TIMEOUT) {
            Ok(fresh) => {
                tracing::info!(
                    "fetched the OAuth issuer's keys again: {} key(s)",
                    fresh.len()
                );
                let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
                keys.keys = fresh;
                keys.fetched = Instant::now();
                true
            }
            Err(e) => {
                tracing::warn!("cannot fetch the OAuth issuer's keys again: {e}");
                false
            }
        }
    }
}

/// Refuses a token not typed as an access token (RFC 9068 §2.1: `at+jwt`, or its media type
/// `application/at+jwt`, in any case); `untyped` also lets `JWT` and no type in.
fn check_type(typ: Option<&str>, untyped: bool) -> Result<(), Rejected> {
    let typ_lower = typ.map(str::to_ascii_lowercase);
    match typ_lower.as_deref() {
        Some("at+jwt" | "application/at+jwt") => Ok(()),
        None | Some("jwt") if untyped => Ok(()),
        _ => Err(Rejected::Invalid(format!(
            "the token is typed {}, not at+jwt: it is not an OAuth access token (RFC 9068); a \
             server whose issuer cannot type its access tokens is started with \
             --oauth-untyped-tokens",
            typ.map_or_else(|| "nothing".to_owned(), |t| format!("{t:?}"))
        ))),
    }
}

/// `https://host/.well-known/oauth-protected-resource/mcp` for the resource
/// `https://host/mcp` (RFC 9728 §3.1).
fn metadata_url(resource: &str) -> String {
    let (origin, path) = super::split_origin(resource);
    let path = path.split(['?', '#']).next().unwrap_or_default();
    format!(
        "{origin}/.well-known/oauth-protected-resource{}",
        path.trim_end_matches('/')
    )
}

/// The usable verification keys of a JWKS document (others are skipped, not fatal: a
/// provider may publish encryption or symmetric keys beside them).
fn fetch_keys(jwks_uri: &str, deadline: Instant) -> Result<Vec<Jwk>, OAuthError> {
    let document = super::get_json(jwks_uri, deadline)?;
    let keys: Vec<Jwk> = document["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
        .filter(|k| !matches!(k.algorithm, AlgorithmParameters::OctetKey(_)))
        .collect();
    if keys.is_empty() {
        return Err(OAuthError::Provider {
            url: jwks_uri.to_owned(),
            reason: "its JWKS holds no signature verification key".to_owned(),
        });
    }
    Ok(keys)
}

/// The key for `kid` (or the only key, when the token names none) that allows `alg`.
fn pick(keys: &[Jwk], kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
    let candidates: Vec<&Jwk> = match kid {
        Some(kid) => keys
            .iter()
            .filter(|k| k.common.key_id.as_deref() == Some(kid))
            .collect(),
        None if keys.len() == 1 => keys.iter().collect(),
        None => Vec::new(),
    };
    candidates
        .into_iter()
        .filter(|k| {
            k.common
                .key_algorithm
                .is_none_or(|ka| Algorithm::try_from(ka).is_ok_and(|a| a == alg))
        })
        .find_map(|k| DecodingKey::from_jwk(k).ok())
}

/// The token's scopes: `scope` (space separated, RFC 9068) or `scp` (a list).
fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => s.split_whitespace().map(str::to_owned).collect(),
        (_, Some(Value::Array(list))) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// Why a signed token failed, in words for the `401`.
fn describe(kind: &jsonwebtoken::errors::ErrorKind, settings: &Settings) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match kind {
        K::InvalidSignature => "the token's signature does not verify".to_owned(),
        K::ExpiredSignature => "the token has expired".to_owned(),
        K::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        K::InvalidIssuer => format!("the token was not issued by {}", settings.issuer),
        K::InvalidAudience => format!(
            "the token is not for this server (its aud does not hold {})",
            settings.audience
        ),
        K::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
        K::InvalidAlgorithm => "the token's algorithm does not match its key".to_owned(),
        other => format!("the token is not valid: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ResourceServer {
        ResourceServer::with_keys(
            Settings {
                issuer: "http://127.0.0.1:9/".to_owned(),
                audience: "https://relay.example:7070/mcp".to_owned(),
                principal_claim: "sub".to_owned(),
                scopes: Vec::new(),
                untyped_tokens: false,
            },
            "http://127.0.0.1:9/jwks".to_owned(),
            Vec::new(),
        )
    }

    #[test]
    fn the_metadata_and_the_challenge_point_at_each_other() {
        let server = server();
        assert_eq!(
            server.challenge(None),
            "Bearer resource_metadata=\"https://relay.example:7070/.well-known/oauth-protected-resource/mcp\""
        );
        let refused = server.challenge(Some("bad \"quote\"\n"));
        assert!(
            refused.ends_with(", error=\"invalid_token\", error_description=\"bad 'quote'\""),
            "{refused}"
        );
        let doc = server.metadata();
        assert_eq!(doc["resource"], "https://relay.example:7070/mcp");
        assert_eq!(doc["authorization_servers"][0], "http://127.0.0.1:9/");
        assert_eq!(
            metadata_url("https://h/"),
            "https://h/.well-known/oauth-protected-resource"
        );
        assert!(doc.get("scopes_supported").is_none());
        let scoped = ResourceServer::with_keys(
            Settings {
                scopes: vec!["notes".into(), "tools".into()],
                ..server.settings().clone()
            },
            String::new(),
            Vec::new(),
        );
        assert_eq!(
            scoped.metadata()["scopes_supported"],
            json!(["notes", "tools"])
        );
        assert!(
            scoped.challenge(None).ends_with(", scope=\"notes tools\""),
            "{}",
            scoped.challenge(None)
        );
    }

    #[test]
    fn unsigned_and_symmetric_tokens_are_refused_before_any_key_is_looked_up() {
        let server = server();
        // {"alg":"none"} and {"alg":"HS256","kid":"k1"}, each typed at+jwt, with {"sub":"x"}.
        for token in [
            "eyJhbGciOiJub25lIiwidHlwIjoiYXQrand0In0.eyJzdWIiOiJ4In0.",
            "eyJhbGciOiJIUzI1NiIsImtpZCI6ImsxIiwidHlwIjoiYXQrand0In0.eyJzdWIiOiJ4In0.c2ln",
        ] {
            match server.check(token) {
                Err(Rejected::Invalid(why)) => assert!(
                    why.contains("not a signed JWT") || why.contains("asymmetric"),
                    "{why}"
                ),
                other => panic!("{token}: {other:?}"),
            }
        }
        assert!(matches!(
            server.check("not-a-jwt"),
            Err(Rejected::Invalid(_))
        ));
        // RS256 with a kid the (empty) key set lacks: worth one fetch.
        assert_eq!(
            server.check(
                "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsyIiwidHlwIjoiYXQrand0In0.eyJzdWIiOiJ4In0.c2ln"
            ),
            Err(Rejected::UnknownKey(Some("k2".into())))
        );
    }

    #[test]
    fn only_a_token_typed_as_an_access_token_is_one() {
        for typ in ["at+jwt", "AT+JWT", "application/at+jwt"] {
            assert_eq!(check_type(Some(typ), false), Ok(()), "{typ}");
        }
        for (typ, untyped) in [(None, false), (Some("JWT"), false), (Some("id+jwt"), true)] {
            let e = check_type(typ, untyped).expect_err("refused");
            assert!(e.to_string().contains("not at+jwt"), "{e}");
        }
        assert_eq!(check_type(None, true), Ok(()));
        assert_eq!(check_type(Some("JWT"), true), Ok(()));
    }

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let claims = |v: Value| v.as_object().cloned().expect("object");
        assert_eq!(scopes(&claims(json!({"scope": "a b"}))), ["a", "b"]);
        assert_eq!(scopes(&claims(json!({"scp": ["c"]}))), ["c"]);
        assert!(scopes(&claims(json!({}))).is_empty());
    }
}
