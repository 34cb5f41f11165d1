//! The Streamable HTTP transport (`coremcp serve`): the listener and its lifetime.
//!
//! This module only accepts connections and feeds their requests to the [`Service`]
//! (`service.rs`, which decides every response and is tested without a socket). Map:
//! `service.rs` routing and guards → `endpoint.rs` the `/mcp` endpoint → `sessions.rs` the
//! session table → `outbox.rs` where each session's messages go → `sse.rs` event streams;
//! `auth.rs` bearer tokens, `origin.rs` DNS-rebinding checks, `body.rs` bounded bodies and plain
//! responses, `status.rs` `/api/status`.
//!
//! Invariants:
//! - A listener off loopback never starts without bearer tokens.
//! - Every accepted socket has `TCP_NODELAY` (an SSE event must not wait for Nagle's ACK).
//! - At most [`connections::total_limit`] connections are open at once, and at most
//!   `--max-connections-per-client` (default 512) from one address: one over that is closed at
//!   once, and established connections keep being served. A client must send each request's
//!   headers within [`HEADER_TIMEOUT`] (5 s), so a half-open connection is gone within it.
//! - The tokio runtime is small (two workers) and runs plugin code only for one call at a time
//!   of a tool that has been quick lately (see [`coremcp_engine::inline::on_runtime`]): sessions
//!   are otherwise handled on its blocking pool, tool calls on the plugin pool.
//! - SIGTERM or SIGINT stop accepting at once, end the GET streams, let requests in flight
//!   finish for at most [`DRAIN_LIMIT`], and the process exits 0; a second signal exits at once.
//!   SIGHUP reloads the plugins. Signals are blocked in every thread and taken by one thread
//!   with `sigwait`, so no code runs in a signal handler.

pub mod auth;
pub mod body;
pub mod connections;
pub mod endpoint;
pub mod modern;
pub mod origin;
pub mod outbox;
pub mod service;
pub mod sessions;
pub mod sse;
pub mod status;
#[cfg(test)]
pub(crate) mod tests;
pub mod tls;

use std::convert::Infallible;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use coremcp_net::race::race;
use coremcp_net::race::Either::{First, Second};

pub use service::Service;

use crate::config::Config;
use auth::{Tokens, TokensError};
use coremcp_engine::PluginSet;
use coremcp_net::oauth::resource::{ResourceServer, Settings};
use coremcp_upstream::hub::Upstreams;

/// How long requests in flight may finish after a stop signal.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(30);
/// A client must send a request's headers within this long (hyper counts an idle kept-alive
/// connection's wait for its next request too, so idle connections also close after it).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// How often idle sessions are looked for.
const REAP_EVERY: Duration = Duration::from_secs(60);
/// What `coremcp serve` takes beyond the shared configuration.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// `--listen`.
    pub listen: &'a str,
    /// `--tokens`.
    pub tokens: Option<&'a Path>,
    /// `COREMCP_TOKENS_TEXT`.
    pub tokens_text: Option<&'a str>,
    /// `--max-connections-per-client`.
    pub per_client: usize,
    /// `--tls-cert` and `--tls-key`.
    pub tls_cert: Option<&'a Path>,
    pub tls_key: Option<&'a Path>,
    /// `--oauth-issuer`, `--oauth-audience`, `--oauth-principal-claim`.
    pub oauth: Option<OAuthOptions<'a>>,
}

/// The resource server settings `serve` is given.
#[derive(Debug, Clone)]
pub struct OAuthOptions<'a> {
    pub issuer: &'a str,
    /// `None`: this server's own `/mcp` URL (`--advertise`, else the listen address).
    pub audience: Option<&'a str>,
    pub principal_claim: &'a str,
    /// `--oauth-scopes`: space or comma separated.
    pub scopes: Option<&'a str>,
    /// `--oauth-untyped-tokens`.
    pub untyped_tokens: bool,
}

/// Why the server did not start (or stopped).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("--listen \"{0}\" is not an address like 127.0.0.1:7070")]
    Address(String),
    #[error(
        "--listen {0} is not a loopback address, and a server other machines can reach needs \
         bearer tokens: pass --tokens FILE (lines of `NAME TOKEN`) or set COREMCP_TOKENS_TEXT \
         (the same lines, separated by `;`) or --oauth-issuer URL, or listen on 127.0.0.1"
    )]
    TokensRequired(SocketAddr),
    #[error("--tokens: {0}")]
    Tokens(#[from] TokensError),
    #[error("{0}")]
    Tls(#[from] tls::TlsError),
    #[error("{0}")]
    Plugins(String),
    #[error("--oauth-issuer: {0}")]
    OAuth(String),
    #[error("{0}")]
    Principals(String),
    #[error("--oauth-issuer: cannot read the identity provider: {0}")]
    OAuthProvider(coremcp_net::oauth::OAuthError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("cannot start the HTTP runtime: {0}")]
    Runtime(io::Error),
    #[error(
        "--status-listen {0} is not a loopback address: a stdio session's status has no \
         tokens, so it is served on 127.0.0.1 or ::1 only"
    )]
    StatusNotLoopback(SocketAddr),
}

impl ServeError {
    /// Whether the command line or configuration is at fault (exit 2), not the run (exit 3).
    pub fn is_usage(&self) -> bool {
        match self {
            ServeError::Address(_)
            | ServeError::TokensRequired(_)
            | ServeError::Tokens(_)
            | ServeError::Tls(_)
            | ServeError::Plugins(_)
            | ServeError::OAuth(_)
            | ServeError::Principals(_)
            | ServeError::StatusNotLoopback(_) => true,
            ServeError::Bind { .. } | ServeError::Runtime(_) | ServeError::OAuthProvider(_) => {
                false
            }
        }
    }
}

/// The address `--listen` names: `IP:PORT`, or `NAME:PORT` resolved once.
pub fn resolve_listen(listen: &str) -> Result<SocketAddr, ServeError> {
    let listen = listen.trim();
    if let Ok(addr) = listen.parse::<SocketAddr>() {
        return Ok(addr);
    }
    listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| ServeError::Address(listen.to_owned()))
}

/// Checks the listen address against the credentials: off loopback, tokens or OAuth are
/// required.
pub fn check_exposure(addr: SocketAddr, guarded: bool) -> Result<(), ServeError> {
    if addr.ip().is_loopback() || guarded {
        Ok(())
    } else {
        Err(ServeError::TokensRequired(addr))
    }
}

/// Runs `coremcp serve` until a stop signal.
pub fn serve(mut config: Config, options: &Options<'_>) -> Result<(), ServeError> {
    let addr = resolve_listen(options.listen)?;
    let tokens = Tokens::from_sources(options.tokens, options.tokens_text)?;
    if options.oauth.is_some() {
        check_principal_kinds(&config, tokens.as_ref())?;
    }
    let oauth = options
        .oauth
        .as_ref()
        .map(|o| resource_server(o, &config, addr, options.tls_cert.is_some()))
        .transpose()?
        .map(Arc::new);
    config.oauth_issuer = oauth.as_ref().map(|o| o.settings().issuer.clone());
    check_exposure(addr, tokens.is_some() || oauth.is_some())?;
    let certs = match (options.tls_cert, options.tls_key) {
        (Some(cert), Some(key)) => Some(Arc::new(tls::Certs::load(cert, key)?)),
        (None, None) => None,
        _ => return Err(tls::TlsError::Half.into()),
    };
    let plugins = Arc::new(PluginSet::discover(&config.engine()).map_err(ServeError::Plugins)?);
    // Before any other thread starts, so that every thread inherits the mask.
    let signals = block_signals().map_err(ServeError::Runtime)?;
    crate::hardening::say_how_children_are_kept();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(64)
        .thread_name("coremcp-http")
        .enable_io()
        .enable_time()
        .build()
        .map_err(ServeError::Runtime)?;
    let per_client = connections::PerClient::new(options.per_client);
    let outcome = runtime.block_on(run(
        config,
        plugins,
        (tokens, oauth),
        certs,
        addr,
        signals,
        per_client,
    ));
    // Requests still being handled after the drain are abandoned, not waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    outcome
}

/// Beside OAuth, a bare NAME (in the grants, `--operator`, `--peer-token`) is a static
/// token's and never an OAuth subject's: one that no token of this server has is refused when
/// nothing else can mean it (no peer forwards principals here), since it could only have been
/// meant as the subject, written `oauth:NAME`; with peers it may be a name a peer forwards,
/// and is only warned of. A `--peer-token` NAME must be a token of this server's.
pub fn check_principal_kinds(config: &Config, tokens: Option<&Tokens>) -> Result<(), ServeError> {
    let known: Vec<&str> = tokens.map(|t| t.names().collect()).unwrap_or_default();
    let is_token = |name: &str| known.contains(&name);
    let hint = |name: &str| {
        format!(
            "a bare name is a static token's (--tokens, COREMCP_TOKENS_TEXT), and no token here \
             is called {name}; the OAuth subject {name} is written oauth:{name}"
        )
    };
    for peer in &config.peer_tokens {
        if !peer.starts_with(coremcp_wire::policy::OAUTH_PREFIX) && !is_token(peer) {
            return Err(ServeError::Principals(format!(
                "--peer-token {peer}: {}",
                hint(peer)
            )));
        }
    }
    let mut named: Vec<(String, String)> = config.grants.token_principals();
    named.extend(
        config
            .operators
            .iter()
            .filter(|o| !o.starts_with(coremcp_wire::policy::OAUTH_PREFIX))
            .map(|o| ("--operator".to_owned(), o.clone())),
    );
    for (origin, name) in named.into_iter().filter(|(_, n)| !is_token(n)) {
        if config.peer_tokens.is_empty() {
            return Err(ServeError::Principals(format!("{origin}: {}", hint(&name))));
        }
        tracing::warn!(
            "{origin} names \"{name}\", which no token of this server has: it applies only to \
             a static principal of that name a peer forwards ({})",
            hint(&name)
        );
    }
    Ok(())
}

/// Discovers the issuer and fetches its keys; the audience is `--oauth-audience`, else this
/// server's `/mcp` URL.
fn resource_server(
    options: &OAuthOptions<'_>,
    config: &Config,
    addr: SocketAddr,
    tls: bool,
) -> Result<ResourceServer, ServeError> {
    let issuer = options.issuer.trim();
    if !issuer.starts_with("https://") && !issuer.starts_with("http://") {
        return Err(ServeError::OAuth(format!(
            "{issuer:?} is not an http(s) URL"
        )));
    }
    let audience = match (options.audience, &config.advertise) {
        (Some(audience), _) => audience.trim().to_owned(),
        (None, Some(advertised)) => advertised.clone(),
        (None, None) if addr.port() == 0 => {
            return Err(ServeError::OAuth(
                "the audience is this server's /mcp URL, and listening on port 0 it has none \
                 yet: give --oauth-audience"
                    .to_owned(),
            ))
        }
        (None, None) => {
            let scheme = if tls { "https" } else { "http" };
            format!("{scheme}://{addr}/mcp")
        }
    };
    let claim = options.principal_claim.trim();
    if claim.is_empty() {
        return Err(ServeError::OAuth(
            "--oauth-principal-claim is empty".to_owned(),
        ));
    }
    ResourceServer::start(Settings {
        issuer: issuer.to_owned(),
        audience,
        principal_claim: claim.to_owned(),
        scopes: options
            .scopes
            .unwrap_or_default()
            .split([' ', ','])
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        untyped_tokens: options.untyped_tokens,
    })
    .map_err(ServeError::OAuthProvider)
}

async fn run(
    config: Config,
    plugins: Arc<PluginSet>,
    (tokens, oauth): (Option<Tokens>, Option<Arc<ResourceServer>>),
    certs: Option<Arc<tls::Certs>>,
    addr: SocketAddr,
    signals: libc::sigset_t,
    per_client: Arc<connections::PerClient>,
) -> Result<(), ServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    let mode = if config.service_mode {
        "service"
    } else {
        "proxy"
    };
    let auth = match (&tokens, &oauth) {
        (Some(t), None) => format!("bearer tokens: {}", t.len()),
        (Some(t), Some(o)) => format!(
            "bearer tokens: {}, OAuth issuer {} for {}",
            t.len(),
            o.settings().issuer,
            o.settings().audience
        ),
        (None, Some(o)) => format!(
            "OAuth issuer {} for {}",
            o.settings().issuer,
            o.settings().audience
        ),
        (None, None) => "no tokens: loopback only".to_owned(),
    };
    let scheme = if certs.is_some() { "https" } else { "http" };
    eprintln!("coremcp: listening on {scheme}://{local}/mcp ({mode} mode, {auth})");
    // After the listener is open, connecting in the background.
    let upstreams = Upstreams::start(&config.upstream);
    let recorder_config = config.clone();
    let service = Arc::new(Service::new(
        config,
        plugins,
        Arc::clone(&upstreams),
        tokens,
        oauth,
        local,
    ));
    {
        // Weak: the operations outlive no server (the process ends with it) but must not keep
        // one alive.
        let weak = Arc::downgrade(&service);
        crate::host_ops::register(
            &recorder_config,
            Arc::clone(service.plugins()),
            Arc::new(move |viewer: Option<&str>| {
                weak.upgrade()
                    .map_or(serde_json::Value::Null, |service| service.status(viewer))
            }),
        );
        crate::tasks::init(&recorder_config);
    }
    let (stop_tx, stop) = watch::channel(false);
    let acceptor = certs
        .as_ref()
        .map(|c| tokio_rustls::TlsAcceptor::from(Arc::new(c.server_config())));
    take_signals(signals, Arc::clone(&service), certs, stop_tx).map_err(ServeError::Runtime)?;

    let reaper = {
        let service = Arc::clone(&service);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(REAP_EVERY);
            loop {
                every.tick().await;
                service.reap();
            }
        })
    };
    let graceful = GracefulShutdown::new();
    accept(&listener, &service, &per_client, &graceful, acceptor, stop).await;
    drop(listener);
    reaper.abort();
    tracing::info!(
        "stopping: no new connections; requests in flight get up to {} s",
        DRAIN_LIMIT.as_secs()
    );
    service.end_streams();
    if tokio::time::timeout(DRAIN_LIMIT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still running after the drain limit; exiting without them");
    }
    let upstreams = Arc::clone(&upstreams);
    let _ = tokio::task::spawn_blocking(move || upstreams.shutdown(Duration::from_secs(2))).await;
    // What runs as a task ends with the process, and says so.
    let _ = tokio::task::spawn_blocking(|| crate::tasks::stop_all(Duration::from_secs(2))).await;
    Ok(())
}

/// Accepts connections and serves their requests with `service` until `stop` turns true.
async fn accept(
    listener: &TcpListener,
    service: &Arc<Service>,
    per_client: &Arc<connections::PerClient>,
    graceful: &GracefulShutdown,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(true);
    let slots = Arc::new(Semaphore::new(connections::total_limit()));
    loop {
        let slot = match race(
            Arc::clone(&slots).acquire_owned(),
            stop.wait_for(|stopped| *stopped),
        )
        .await
        {
            First(Ok(slot)) => slot,
            First(Err(_)) | Second(_) => break,
        };
        let accepted = match race(listener.accept(), stop.wait_for(|stopped| *stopped)).await {
            First(accepted) => accepted,
            Second(_) => break,
        };
        let (stream, held) = match accepted {
            Ok((stream, peer)) => match per_client.admit(peer.ip()) {
                Some(held) => (stream, held),
                // Closed at once: this address holds its share already.
                None => continue,
            },
            Err(e) => {
                // Out of descriptors and the like: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
        let (service, builder, watcher, tls) = (
            Arc::clone(service),
            builder.clone(),
            graceful.watcher(),
            tls.clone(),
        );
        tokio::spawn(async move {
            match tls {
                None => serve_connection(TokioIo::new(stream), service, &builder, watcher).await,
                // The handshake counts against the same 5 s as a request's headers.
                Some(tls) => match tokio::time::timeout(HEADER_TIMEOUT, tls.accept(stream)).await {
                    Ok(Ok(stream)) => {
                        serve_connection(TokioIo::new(stream), service, &builder, watcher).await
                    }
                    Ok(Err(e)) => tracing::debug!("TLS handshake failed: {e}"),
                    Err(_) => tracing::debug!("TLS handshake not finished within 5 s"),
                },
            }
            drop(held);
            drop(slot);
        });
    }
}

/// Serves one connection's requests with `service` until it closes (or the drain ends it).
async fn serve_connection<I>(
    io: TokioIo<I>,
    service: Arc<Service>,
    builder: &http1::Builder,
    watcher: hyper_util::server::graceful::Watcher,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let connection = builder.serve_connection(
        io,
        service_fn(move |request| {
            let service = Arc::clone(&service);
            async move { Ok::<_, Infallible>(service.handle(request).await) }
        }),
    );
    if let Err(e) = watcher.watch(connection).await {
        tracing::debug!("connection ended: {e}");
    }
}

/// Serves the status page, `/api/status` and `/metrics` of this stdio process on `listen`
/// (loopback only: it has no tokens), on a thread of its own with a one-worker runtime, for
/// as long as the process lives. Returns the address it listens on.
pub fn status_listener(
    config: Config,
    plugins: Arc<PluginSet>,
    upstreams: Arc<Upstreams>,
    listen: &str,
) -> Result<SocketAddr, ServeError> {
    let addr = resolve_listen(listen)?;
    if !addr.ip().is_loopback() {
        return Err(ServeError::StatusNotLoopback(addr));
    }
    let listener =
        std::net::TcpListener::bind(addr).map_err(|source| ServeError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .and_then(|local| listener.set_nonblocking(true).map(|()| local))
        .map_err(|source| ServeError::Bind { addr, source })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(ServeError::Runtime)?;
    let service = Arc::new(Service::status_only(config, plugins, upstreams, local));
    std::thread::Builder::new()
        .name("coremcp-status".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match TcpListener::from_std(listener) {
                    Ok(listener) => listener,
                    Err(e) => return tracing::error!("status listener: {e}"),
                };
                let per_client = connections::PerClient::new(connections::DEFAULT_PER_CLIENT);
                // Never stopped: it ends with the process.
                let (_keep, stop) = watch::channel(false);
                accept(
                    &listener,
                    &service,
                    &per_client,
                    &GracefulShutdown::new(),
                    None,
                    stop,
                )
                .await;
            });
        })
        .map_err(ServeError::Runtime)?;
    Ok(local)
}

/// Blocks SIGHUP, SIGINT and SIGTERM in this thread (and so in every thread started after);
/// returns their set. Children get a clean mask (std resets it at spawn).
fn block_signals() -> io::Result<libc::sigset_t> {
    // SAFETY: sigemptyset/sigaddset initialise a local sigset_t; pthread_sigmask only changes
    // this thread's signal mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
            libc::sigaddset(&mut set, signal);
        }
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(set)
    }
}

/// Takes the blocked signals on a thread of its own: SIGHUP reloads, the first SIGTERM/SIGINT
/// stops the server, a second one exits at once.
fn take_signals(
    set: libc::sigset_t,
    service: Arc<Service>,
    certs: Option<Arc<tls::Certs>>,
    stop: watch::Sender<bool>,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name("coremcp-signals".into())
        .spawn(move || loop {
            let mut signal = 0;
            // SAFETY: `set` is an initialised signal set that every thread blocks; sigwait
            // writes the signal number into a local.
            if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                continue;
            }
            if signal == libc::SIGHUP {
                tracing::info!("SIGHUP: reloading plugins");
                service.reload();
                match certs.as_deref().map(tls::Certs::reload) {
                    Some(Ok(())) => tracing::info!("SIGHUP: TLS certificate and key read again"),
                    Some(Err(e)) => {
                        tracing::error!("SIGHUP: {e}; the certificate in use stays")
                    }
                    None => {}
                }
            } else if stop.send_replace(true) {
                eprintln!("coremcp: second stop signal; exiting now");
                std::process::exit(1);
            } else {
                tracing::info!(signal, "stop signal received");
            }
        })
        .map(drop)
}
