//! OAuth 2.1 for Core MCP peers (MCP's authorization spec, 2025-06-18 and later), both ways:
//! `coremcp serve --oauth-issuer` is a **resource server** ([`resource`]: RFC 9728 metadata,
//! the `401` challenge, JWT access tokens checked against the issuer's keys), and a proxy signs
//! in to its relays with the **client credentials grant** ([`client`]) instead of a static
//! token. Both find the issuer's endpoints by discovery ([`discover`]).
//!
//! Invariants: every request to the identity provider has a deadline (at most [`TIMEOUT`], and
//! never past the call it is made for); an issuer's discovery document must name that very
//! issuer (OpenID Connect Discovery 1.0 §4.3, RFC 8414 §3.3), so a document served elsewhere
//! cannot redirect where keys or tokens come from; no secret or token is ever logged or put in
//! an error.

pub mod client;
pub mod resource;

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::{Conn, Url};

/// How long one request to the identity provider may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// Why the identity provider could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OAuthError {
    #[error("{0}")]
    Config(String),
    #[error("{url}: {reason}")]
    Provider { url: String, reason: String },
}

/// The endpoints discovery gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    pub issuer: String,
    pub jwks_uri: Option<String>,
    pub token_endpoint: Option<String>,
}

/// Reads `issuer`'s metadata: OpenID Connect discovery (`/.well-known/openid-configuration`),
/// else RFC 8414's `/.well-known/oauth-authorization-server`.
pub fn discover(issuer: &str, deadline: Instant) -> Result<Endpoints, OAuthError> {
    let issuer = issuer.trim_end_matches('/');
    let oidc = format!("{issuer}/.well-known/openid-configuration");
    let document = match get_json(&oidc, deadline) {
        Ok(document) => document,
        Err(first) => {
            // RFC 8414 puts the issuer's path after the well-known name.
            let (origin, path) = split_origin(issuer);
            let rfc8414 = format!("{origin}/.well-known/oauth-authorization-server{path}");
            get_json(&rfc8414, deadline).map_err(|second| OAuthError::Provider {
                url: issuer.to_owned(),
                reason: format!("no discovery document: {first}; {second}"),
            })?
        }
    };
    endpoints(issuer, &document)
}

/// The endpoints of a discovery `document`, which must name `issuer` itself.
fn endpoints(issuer: &str, document: &Value) -> Result<Endpoints, OAuthError> {
    let named = document["issuer"].as_str().unwrap_or_default();
    if named.trim_end_matches('/') != issuer {
        return Err(OAuthError::Provider {
            url: issuer.to_owned(),
            reason: format!(
                "its discovery document names the issuer {named:?}, not {issuer:?} (give \
                 --oauth-issuer exactly as the provider names itself)"
            ),
        });
    }
    let text = |key: &str| document[key].as_str().map(str::to_owned);
    Ok(Endpoints {
        issuer: named.to_owned(),
        jwks_uri: text("jwks_uri"),
        token_endpoint: text("token_endpoint"),
    })
}

/// `https://host:port` and the rest (`/realms/x`, or empty).
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

/// GETs `url` and parses the JSON object it answers with 200.
pub(crate) fn get_json(url: &str, deadline: Instant) -> Result<Value, OAuthError> {
    let (status, body) = exchange(url, "GET", &[("Accept", "application/json")], b"", deadline)?;
    json_of(url, status, &body)
}

/// POSTs a form to `url`; the status and the JSON it answers with (an OAuth error is JSON too).
pub(crate) fn post_form(
    url: &str,
    headers: &[(&str, &str)],
    form: &str,
    deadline: Instant,
) -> Result<(u16, Value), OAuthError> {
    let mut all = vec![
        ("Accept", "application/json"),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    all.extend_from_slice(headers);
    let (status, body) = exchange(url, "POST", &all, form.as_bytes(), deadline)?;
    let value = serde_json::from_slice(&body).map_err(|e| OAuthError::Provider {
        url: url.to_owned(),
        reason: format!("HTTP {status}, not JSON: {e}"),
    })?;
    Ok((status, value))
}

fn json_of(url: &str, status: u16, body: &[u8]) -> Result<Value, OAuthError> {
    if status != 200 {
        return Err(OAuthError::Provider {
            url: url.to_owned(),
            reason: format!("HTTP {status}"),
        });
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| OAuthError::Provider {
        url: url.to_owned(),
        reason: format!("not JSON: {e}"),
    })?;
    if !value.is_object() {
        return Err(OAuthError::Provider {
            url: url.to_owned(),
            reason: "not a JSON object".to_owned(),
        });
    }
    Ok(value)
}

/// One request on a connection of its own, by `deadline` and within [`TIMEOUT`].
fn exchange(
    url: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    deadline: Instant,
) -> Result<(u16, Vec<u8>), OAuthError> {
    let failed = |reason: String| OAuthError::Provider {
        url: url.to_owned(),
        reason,
    };
    let parsed = Url::parse(url).map_err(|e| failed(e.to_string()))?;
    let deadline = deadline.min(Instant::now() + TIMEOUT);
    let never = AtomicBool::new(false);
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(failed("no time left before the call's deadline".to_owned()));
    }
    let mut conn = Conn::connect(&parsed, left).map_err(|e| failed(e.to_string()))?;
    let mut response = conn
        .exchange(&parsed, method, headers, body, deadline, &never)
        .map_err(|e| failed(e.to_string()))?;
    let status = response.status;
    let body = response
        .read_all(deadline, &never)
        .map_err(|e| failed(e.to_string()))?;
    Ok((status, body))
}

/// `application/x-www-form-urlencoded` encoding of one value (RFC 6749 appendix B).
pub(crate) fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_discovery_document_must_name_its_issuer() {
        let doc = json!({"issuer": "https://id.example/realms/t",
                         "jwks_uri": "https://id.example/realms/t/certs",
                         "token_endpoint": "https://id.example/realms/t/token"});
        let found = endpoints("https://id.example/realms/t", &doc).expect("matches");
        assert_eq!(
            found.jwks_uri.as_deref(),
            Some("https://id.example/realms/t/certs")
        );
        let other = endpoints("https://evil.example", &doc).expect_err("another issuer");
        assert!(
            other.to_string().contains("not \"https://evil.example\""),
            "{other}"
        );
        assert!(endpoints("https://id.example/realms/t", &json!({})).is_err());
    }

    #[test]
    fn origins_and_forms() {
        assert_eq!(
            split_origin("https://id.example/realms/t"),
            ("https://id.example", "/realms/t")
        );
        assert_eq!(
            split_origin("http://127.0.0.1:9"),
            ("http://127.0.0.1:9", "")
        );
        assert_eq!(form_encode("a b&c=d/é~"), "a+b%26c%3Dd%2F%C3%A9~");
    }
}
