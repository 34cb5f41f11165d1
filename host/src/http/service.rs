//! The HTTP service: one request in, one response out, with no socket in sight — so it is tested
//! with in-memory requests. The listener (`mod.rs`) only feeds it.
//!
//! Every request passes, in this order:
//! 1. the path: `/mcp`, `/healthz`, `/`, `/api/status`, `/metrics` and `/api/mcp/refresh` are
//!    served, and with `--oauth-issuer` the protected-resource metadata
//!    (`/.well-known/oauth-protected-resource`, also with `/mcp` after it); any other path is
//!    404 at once;
//! 2. DNS-rebinding protection (`origin.rs`): 403;
//! 3. `/` (the status page, which holds no data), `/healthz` (it tells nothing but `ok`) and
//!    the resource metadata (public by design: it says where to sign in) answer here, without
//!    a token; `/api/mcp/refresh` with an `Origin` other than this server's own is 403 (a page
//!    elsewhere must not reload our configuration);
//! 4. bearer tokens, when configured: a static one (`auth.rs`), else an OAuth access token
//!    (`coremcp_net::oauth::resource`); 401 with `WWW-Authenticate: Bearer` (and, with OAuth, where
//!    the resource metadata is);
//! 5. `/api/status` (`status.rs`), `/metrics` (`crate::metrics`), `POST /api/mcp/refresh` (re-read
//!    the upstream servers' configuration, answered with what was kept, started and removed) or
//!    `/mcp` (`endpoint.rs`).

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::{Body as HttpBody, Bytes};
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, HOST, ORIGIN, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};

use super::auth::{Denied, Principal, Tokens};
use super::body::{self, Body};
use super::endpoint::Endpoint;
use super::origin::HostGuard;
use super::sessions::Sessions;
use crate::config::Config;
use coremcp_engine::PluginSet;
use coremcp_net::oauth::resource::{Rejected, ResourceServer};
use coremcp_upstream::hub::Upstreams;
use coremcp_wire::rpc;

/// The paths served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Mcp,
    Health,
    Status,
    Refresh,
    Page,
    Metrics,
    ResourceMetadata,
}

/// The status page: static, self-contained (no CDN), reading `/api/status` and `/metrics`.
const PAGE: &str = include_str!("page.html");

/// Everything a request may need.
pub struct Service {
    config: Config,
    plugins: Arc<PluginSet>,
    upstreams: Arc<Upstreams>,
    sessions: Sessions,
    tokens: Option<Tokens>,
    oauth: Option<Arc<ResourceServer>>,
    guard: HostGuard,
    /// A stdio process's status listener: everything but `/mcp` (its one session is the
    /// agent client's, on stdin and stdout).
    status_only: bool,
}

impl Service {
    /// The service of a listener on `listening`.
    pub fn new(
        config: Config,
        plugins: Arc<PluginSet>,
        upstreams: Arc<Upstreams>,
        tokens: Option<Tokens>,
        oauth: Option<Arc<ResourceServer>>,
        listening: SocketAddr,
    ) -> Self {
        Self {
            oauth,
            sessions: Sessions::new(config.clone(), Arc::clone(&plugins), Arc::clone(&upstreams)),
            config,
            plugins,
            upstreams,
            tokens,
            guard: HostGuard::new(listening),
            status_only: false,
        }
    }

    /// The status listener of a `coremcp stdio` process (`--status-listen`): the page,
    /// `/api/status`, `/metrics` and the refresh, no `/mcp` and no tokens (loopback only).
    pub fn status_only(
        config: Config,
        plugins: Arc<PluginSet>,
        upstreams: Arc<Upstreams>,
        listening: SocketAddr,
    ) -> Self {
        Self {
            status_only: true,
            ..Self::new(config, plugins, upstreams, None, None, listening)
        }
    }

    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// The `/api/status` document (also what `core_status` answers), as `viewer` may see it
    /// (`None`: every principal's recent errors).
    pub fn status(&self, viewer: Option<&str>) -> serde_json::Value {
        // A stdio process serves exactly one session, on its stdin and stdout.
        let sessions = if self.status_only {
            1
        } else {
            self.sessions.len()
        };
        super::status::status(
            &self.config,
            &self.plugins,
            &self.upstreams,
            sessions,
            viewer,
        )
    }

    pub fn plugins(&self) -> &Arc<PluginSet> {
        &self.plugins
    }

    /// Serves one request: its route by path, the Host and Origin checks, what is served
    /// without a credential, then the caller authenticated and served.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<Body>
    where
        B: HttpBody<Data = Bytes> + Unpin,
        B::Error: std::fmt::Display,
    {
        let route = match self.route_of(request.uri().path()) {
            Ok(route) => route,
            Err(text) => return body::text(StatusCode::NOT_FOUND, text),
        };
        let headers = request.headers();
        let host = headers
            .get(HOST)
            .map(HeaderValue::as_bytes)
            .or_else(|| request.uri().authority().map(|a| a.as_str().as_bytes()));
        if let Err(rejected) = self
            .guard
            .check(host, headers.get(ORIGIN).map(HeaderValue::as_bytes))
        {
            tracing::warn!("refused a request: {rejected}");
            let message = format!("Forbidden: {rejected}");
            return match route {
                Route::Mcp => {
                    body::rpc_error(StatusCode::FORBIDDEN, None, rpc::INVALID_REQUEST, &message)
                }
                _ => body::text(StatusCode::FORBIDDEN, message + "\n"),
            };
        }
        if let Some(response) = self.without_credential(route, request.method(), host, headers) {
            return response;
        }
        let authorization = headers.get(AUTHORIZATION).map(HeaderValue::as_bytes);
        let principal = match self.authenticate(route, authorization).await {
            Ok(principal) => principal,
            Err(refused) => return refused,
        };
        // The principal as grants and --operator write it: kinds never match by name.
        let key = principal.to_string();
        let viewer = match &principal {
            Principal::Local => None,
            Principal::Token(_) | Principal::Signed { .. } => self.config.errors_visible_to(&key),
        };
        let method = request.method().clone();
        match route {
            Route::Status if wants_hosts(request.uri().query()) => {
                get_only(&method, || async { self.status_with_hosts(viewer).await }).await
            }
            Route::Status => {
                get_only(&method, || async {
                    body::json(StatusCode::OK, self.status(viewer).to_string())
                })
                .await
            }
            Route::Metrics => {
                get_only(&method, || async {
                    let text = crate::metrics::render(&self.status(viewer));
                    body::full(StatusCode::OK, crate::metrics::CONTENT_TYPE, text)
                })
                .await
            }
            Route::Refresh => match method {
                Method::POST => self.refresh_upstreams().await,
                _ => allow(
                    body::text(StatusCode::METHOD_NOT_ALLOWED, "use POST\n"),
                    "POST",
                ),
            },
            Route::Mcp | Route::Health | Route::Page | Route::ResourceMetadata => {
                Endpoint {
                    sessions: &self.sessions,
                }
                .serve(request, principal)
                .await
            }
        }
    }

    /// The route of a path; the error is the text of the 404 a path this server does not
    /// serve is answered.
    fn route_of(&self, path: &str) -> Result<Route, &'static str> {
        Ok(match path {
            "/mcp" if self.status_only => {
                return Err(
                    "this is a stdio session's status listener: MCP is served on its stdin\n",
                )
            }
            "/mcp" => Route::Mcp,
            "/healthz" => Route::Health,
            "/api/status" => Route::Status,
            "/api/mcp/refresh" => Route::Refresh,
            "/metrics" => Route::Metrics,
            "/" => Route::Page,
            "/.well-known/oauth-protected-resource"
            | "/.well-known/oauth-protected-resource/mcp"
                if self.oauth.is_some() =>
            {
                Route::ResourceMetadata
            }
            _ => return Err("not found\n"),
        })
    }

    /// What is answered before any credential is asked for: the page (it holds no data: it
    /// asks with the token a person types in), the health check, the OAuth metadata, and a
    /// refresh from another origin, refused. `None`: the caller must authenticate.
    fn without_credential(
        &self,
        route: Route,
        method: &Method,
        host: Option<&[u8]>,
        headers: &hyper::HeaderMap,
    ) -> Option<Response<Body>> {
        let get = |answer: fn(&Self) -> Response<Body>| match *method {
            Method::GET | Method::HEAD => answer(self),
            _ => allow(
                body::text(StatusCode::METHOD_NOT_ALLOWED, "use GET\n"),
                "GET, HEAD",
            ),
        };
        match route {
            Route::Page => Some(get(|_| page())),
            Route::Health => Some(get(|_| body::text(StatusCode::OK, "ok\n"))),
            Route::ResourceMetadata => Some(get(|service| match &service.oauth {
                Some(oauth) => body::json(StatusCode::OK, oauth.metadata().to_string()),
                None => body::text(StatusCode::NOT_FOUND, "not found\n"),
            })),
            Route::Refresh if !same_origin(host, headers.get(ORIGIN)) => {
                tracing::warn!("refused a cross-origin POST /api/mcp/refresh");
                Some(body::text(
                    StatusCode::FORBIDDEN,
                    "Forbidden: /api/mcp/refresh takes requests from this server's own page only\n",
                ))
            }
            Route::Refresh | Route::Mcp | Route::Status | Route::Metrics => None,
        }
    }

    /// Who sent a request: no credential is needed without tokens or OAuth (a loopback
    /// listener); else a static token, or an OAuth access token. A token whose key is not held
    /// is checked again after one fetch of the issuer's keys, on the blocking pool.
    async fn authenticate(
        &self,
        route: Route,
        authorization: Option<&[u8]>,
    ) -> Result<Principal, Response<Body>> {
        let denied = match &self.tokens {
            Some(tokens) => match tokens.check(authorization) {
                Ok(principal) => return Ok(principal),
                Err(denied) => Some(denied),
            },
            None => None,
        };
        let Some(oauth) = &self.oauth else {
            return match denied {
                Some(denied) => Err(unauthorized(route, denied, None)),
                None => Ok(Principal::Local),
            };
        };
        let Some(token) = authorization
            .and_then(super::auth::bearer)
            .and_then(|t| std::str::from_utf8(t).ok())
        else {
            let denied = if authorization.is_some() {
                Denied::Invalid
            } else {
                Denied::Missing
            };
            return Err(unauthorized(route, denied, Some(oauth.challenge(None))));
        };
        let verdict = match oauth.check(token) {
            Err(Rejected::UnknownKey(_)) => {
                let (oauth, token) = (Arc::clone(oauth), token.to_owned());
                tokio::task::spawn_blocking(move || oauth.check_fetching(&token))
                    .await
                    .unwrap_or_else(|e| Err(Rejected::Invalid(e.to_string())))
            }
            other => other,
        };
        match verdict {
            Ok(verified) => {
                tracing::debug!(
                    principal = %verified.principal,
                    scopes = %verified.scopes.join(" "),
                    "OAuth access token accepted"
                );
                Ok(Principal::Signed {
                    issuer: Arc::clone(&verified.issuer),
                    name: verified.principal,
                    scopes: verified.scopes,
                })
            }
            Err(rejected) => {
                let why = rejected.to_string();
                tracing::info!("refused an OAuth access token: {why}");
                Err(unauthorized(
                    route,
                    Denied::Invalid,
                    Some(oauth.challenge(Some(&why))),
                ))
            }
        }
    }

    /// `/api/status?hosts=true`: the document with the `remote_host` targets, read from the
    /// Registry (a plugin call, so on the blocking pool).
    async fn status_with_hosts(&self, viewer: Option<&str>) -> Response<Body> {
        let mut doc = self.status(viewer);
        let plugins = Arc::clone(&self.plugins);
        let doc = tokio::task::spawn_blocking(move || {
            crate::host_ops::add_hosts(&mut doc, &plugins);
            doc
        })
        .await;
        match doc {
            Ok(doc) => body::json(StatusCode::OK, doc.to_string()),
            Err(e) => body::json(
                StatusCode::INTERNAL_SERVER_ERROR,
                serde_json::json!({"error": format!("reading the hosts failed: {e}")}).to_string(),
            ),
        }
    }

    /// Looks at the plugin files again (SIGHUP): changed groups load anew and each session
    /// that listed tools hears `notifications/tools/list_changed` if its list changed.
    pub fn reload(&self) {
        let report = crate::session::reload_plugins(&self.plugins);
        for session in self.sessions.all() {
            session.session().refresh(&report);
        }
        crate::session::refresh_upstreams(&self.upstreams);
    }

    /// `POST /api/mcp/refresh`: 200 with what was kept, started and removed, or 400 naming
    /// what in the configuration is refused (then nothing changed).
    async fn refresh_upstreams(&self) -> Response<Body> {
        if !self.upstreams.enabled() {
            return body::json(
                StatusCode::CONFLICT,
                serde_json::json!({"error": "the upstream MCP client is off (COREMCP_MCP=false)"})
                    .to_string(),
            );
        }
        let upstreams = Arc::clone(&self.upstreams);
        match tokio::task::spawn_blocking(move || {
            upstreams.refresh(crate::config::upstream_settings)
        })
        .await
        {
            Ok(Ok(report)) => body::json(StatusCode::OK, report.to_json().to_string()),
            Ok(Err(refused)) => body::json(
                StatusCode::BAD_REQUEST,
                serde_json::json!({"error": refused}).to_string(),
            ),
            Err(e) => body::json(
                StatusCode::INTERNAL_SERVER_ERROR,
                serde_json::json!({"error": format!("the refresh failed: {e}")}).to_string(),
            ),
        }
    }

    /// Ends every GET stream and 2026 subscription (server shutdown; a subscription gets its
    /// `complete` answer), so that only calls in flight hold the drain.
    pub fn end_streams(&self) {
        for session in self.sessions.all() {
            session.session().end_subscriptions();
            session.router().end_stream();
        }
    }

    /// Ends the sessions idle too long.
    pub fn reap(&self) {
        self.sessions.reap(super::sessions::IDLE_LIMIT);
    }
}

/// Whether a query string asks for the `remote_host` targets (`hosts=true`).
fn wants_hosts(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&')
            .any(|pair| pair == "hosts=true" || pair == "hosts=1")
    })
}

/// The status page, with a policy that lets it run only its own inline script and talk only
/// to this server, and never be framed by another site.
fn page() -> Response<Body> {
    let mut response = body::full(StatusCode::OK, "text/html; charset=utf-8", PAGE);
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
    headers.insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Whether a request is not from another site's page: it carries no `Origin` (not a browser,
/// or not cross-origin), or one naming the very host it was sent to.
fn same_origin(host: Option<&[u8]>, origin: Option<&HeaderValue>) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let Some(host) = host else {
        return false;
    };
    let origin = origin.as_bytes();
    [&b"http://"[..], &b"https://"[..]]
        .iter()
        .any(|scheme| origin.strip_prefix(*scheme) == Some(host))
}

/// `answer` for GET and HEAD; 405 naming them for any other method.
async fn get_only<F, Fut>(method: &Method, answer: F) -> Response<Body>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Response<Body>>,
{
    match *method {
        Method::GET | Method::HEAD => answer().await,
        _ => allow(
            body::text(StatusCode::METHOD_NOT_ALLOWED, "use GET\n"),
            "GET, HEAD",
        ),
    }
}

fn allow(mut response: Response<Body>, methods: &'static str) -> Response<Body> {
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(methods));
    response
}

/// 401 with the challenge RFC 6750 asks for (`oauth`: the resource server's, which also says
/// where its metadata is).
fn unauthorized(route: Route, denied: Denied, oauth: Option<String>) -> Response<Body> {
    let (challenge, message) = match denied {
        Denied::Missing => (
            "Bearer realm=\"coremcp\"",
            "Unauthorized: send Authorization: Bearer <token>",
        ),
        Denied::Invalid => (
            "Bearer realm=\"coremcp\", error=\"invalid_token\"",
            "Unauthorized: the bearer token is not valid",
        ),
    };
    let mut response = match route {
        Route::Mcp => body::rpc_error(
            StatusCode::UNAUTHORIZED,
            None,
            rpc::INVALID_REQUEST,
            message,
        ),
        _ => body::text(StatusCode::UNAUTHORIZED, format!("{message}\n")),
    };
    let challenge = oauth
        .and_then(|c| HeaderValue::from_str(&c).ok())
        .unwrap_or(HeaderValue::from_static(challenge));
    response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
    response
}
