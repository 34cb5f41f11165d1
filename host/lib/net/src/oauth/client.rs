//! A proxy signing in to its relays with the OAuth client credentials grant (RFC 6749 §4.4)
//! instead of a static `COREMCP_RELAY_TOKEN`: `COREMCP_RELAY_OAUTH_ISSUER`, `…_CLIENT_ID`,
//! `…_CLIENT_SECRET` (from the environment only), and optionally `…_SCOPE` and `…_RESOURCE`.
//!
//! Each token is asked for one resource (RFC 8707, as MCP's authorization spec requires): the
//! peer's own URL, or `COREMCP_RELAY_OAUTH_RESOURCE` when the relays share one audience. The
//! token endpoint is found by discovery on first use (a proxy starts without its provider).
//! A token is kept per resource and fetched again before it expires (at 90 % of its life, and
//! at least 30 s before the end), or at once after the peer refused it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;

use super::{form_encode, OAuthError};

/// The names of the variables of the client credentials sign-in (the binary's configuration
/// module holds every variable's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vars {
    pub issuer: &'static str,
    pub client_id: &'static str,
    pub client_secret: &'static str,
    pub scope: &'static str,
    pub resource: &'static str,
}

/// The settings, as read from the environment.
#[derive(Clone, PartialEq, Eq)]
pub struct Settings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    pub scope: Option<String>,
    pub resource: Option<String>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("scope", &self.scope)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// The settings `read` gives (`None`: no issuer, so no OAuth sign-in); an issuer without
    /// a client id and secret is refused by name.
    pub fn from(env: &Vars, read: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        let get = |name: &str| {
            read(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let Some(issuer) = get(env.issuer) else {
            for name in [env.client_id, env.client_secret, env.scope, env.resource] {
                if get(name).is_some() {
                    return Err(format!("{name} is set but {} is not", env.issuer));
                }
            }
            return Ok(None);
        };
        if !issuer.starts_with("https://") && !issuer.starts_with("http://") {
            return Err(format!("{}: {issuer:?} is not an http(s) URL", env.issuer));
        }
        let need = |name: &str| {
            get(name).ok_or_else(|| format!("{} is set, so {name} is needed", env.issuer))
        };
        Ok(Some(Self {
            issuer,
            client_id: need(env.client_id)?,
            client_secret: need(env.client_secret)?,
            scope: get(env.scope),
            resource: get(env.resource),
        }))
    }
}

struct Held {
    token: String,
    refresh_at: Instant,
}

/// The sign-in of one process.
pub struct ClientCredentials {
    settings: Settings,
    token_endpoint: Mutex<Option<String>>,
    held: Mutex<HashMap<String, Held>>,
}

impl ClientCredentials {
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            token_endpoint: Mutex::new(None),
            held: Mutex::new(HashMap::new()),
        }
    }

    /// The resource a token for the peer at `peer_url` is asked for.
    pub(crate) fn resource_of<'a>(&'a self, peer_url: &'a str) -> &'a str {
        self.settings.resource.as_deref().unwrap_or(peer_url)
    }

    /// `Bearer <token>` for the peer at `peer_url`: the one held, or a new one (asked for by
    /// `deadline`, the call's).
    pub fn authorization(&self, peer_url: &str, deadline: Instant) -> Result<String, OAuthError> {
        let resource = self.resource_of(peer_url).to_owned();
        if let Some(held) = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&resource)
            .filter(|h| Instant::now() < h.refresh_at)
        {
            return Ok(format!("Bearer {}", held.token));
        }
        let asked = Instant::now();
        let (token, lifetime) = self.fetch(&resource, deadline)?;
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                resource,
                Held {
                    token: token.clone(),
                    refresh_at: asked + refresh_after(lifetime),
                },
            );
        Ok(format!("Bearer {token}"))
    }

    /// Drops the token held for `peer_url` (the peer refused it).
    pub fn forget(&self, peer_url: &str) {
        let resource = self.resource_of(peer_url);
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(resource);
    }

    fn endpoint(&self, deadline: Instant) -> Result<String, OAuthError> {
        let mut slot = self
            .token_endpoint
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(url) = &*slot {
            return Ok(url.clone());
        }
        let endpoints = super::discover(&self.settings.issuer, deadline)?;
        let url = endpoints
            .token_endpoint
            .ok_or_else(|| OAuthError::Provider {
                url: self.settings.issuer.clone(),
                reason: "its discovery document has no token_endpoint".to_owned(),
            })?;
        *slot = Some(url.clone());
        Ok(url)
    }

    /// Asks the token endpoint for a token for `resource`; the token and its lifetime.
    fn fetch(&self, resource: &str, deadline: Instant) -> Result<(String, Duration), OAuthError> {
        let endpoint = self.endpoint(deadline)?;
        let mut form = format!(
            "grant_type=client_credentials&resource={}",
            form_encode(resource)
        );
        if let Some(scope) = &self.settings.scope {
            form.push_str(&format!("&scope={}", form_encode(scope)));
        }
        // client_secret_basic: each part form-encoded, then base64 (RFC 6749 §2.3.1).
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            form_encode(&self.settings.client_id),
            form_encode(&self.settings.client_secret)
        ));
        let authorization = format!("Basic {basic}");
        let (status, answer) = super::post_form(
            &endpoint,
            &[("Authorization", &authorization)],
            &form,
            deadline,
        )?;
        let token = answer["access_token"].as_str().filter(|t| !t.is_empty());
        match (status, token) {
            (200, Some(token)) => {
                let lifetime = answer["expires_in"].as_u64().unwrap_or(300).max(1);
                Ok((token.to_owned(), Duration::from_secs(lifetime)))
            }
            _ => Err(OAuthError::Provider {
                url: endpoint,
                reason: format!(
                    "HTTP {status}: {} {}",
                    answer["error"].as_str().unwrap_or("no access_token"),
                    answer["error_description"].as_str().unwrap_or_default()
                )
                .trim_end()
                .to_owned(),
            }),
        }
    }
}

/// How long a token that lives `lifetime` is used before a new one is fetched: until 90 % of
/// its life, and at least 30 s before its end, but never less than half of it.
fn refresh_after(lifetime: Duration) -> Duration {
    let early = (lifetime / 10)
        .max(Duration::from_secs(30))
        .min(lifetime / 2);
    lifetime - early
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fetched_again_before_they_expire() {
        let secs = Duration::from_secs;
        assert_eq!(refresh_after(secs(3600)), secs(3240));
        assert_eq!(refresh_after(secs(300)), secs(270));
        assert_eq!(refresh_after(secs(60)), secs(30));
        assert_eq!(refresh_after(secs(1)), Duration::from_millis(500));
    }

    const ENV: Vars = Vars {
        issuer: "ISSUER",
        client_id: "CLIENT_ID",
        client_secret: "CLIENT_SECRET",
        scope: "SCOPE",
        resource: "RESOURCE",
    };

    fn settings(pairs: &[(&str, &str)]) -> Result<Option<Settings>, String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::from(&ENV, |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn the_settings_need_an_issuer_and_a_client() {
        assert_eq!(settings(&[]), Ok(None));
        let error = settings(&[(ENV.client_id, "p")]).expect_err("no issuer");
        assert!(error.contains(ENV.issuer), "{error}");
        let error = settings(&[(ENV.issuer, "https://id")]).expect_err("no client");
        assert!(error.contains(ENV.client_id), "{error}");
        let error = settings(&[(ENV.issuer, "id.example")]).expect_err("not a URL");
        assert!(error.contains("not an http(s) URL"), "{error}");
        let full = settings(&[
            (ENV.issuer, "https://id"),
            (ENV.client_id, "proxy"),
            (ENV.client_secret, "s3cret-s3cret"),
            (ENV.scope, "notes"),
        ])
        .expect("valid")
        .expect("some");
        assert_eq!(full.scope.as_deref(), Some("notes"));
        assert!(
            !format!("{full:?}").contains("s3cret"),
            "Debug hides the secret"
        );
        let client = ClientCredentials::new(full);
        assert_eq!(client.resource_of("http://r1/mcp"), "http://r1/mcp");
    }
}
