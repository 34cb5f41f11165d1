//! The one HTTP/1.1 client of every outgoing exchange (relays, `remote_host` targets, Consul,
//! both upstream HTTP transports), over plain TCP or TLS: hyper's connection-level client
//! (`hyper::client::conn::http1`) for the protocol, rustls for TLS, on one current-thread tokio
//! runtime that the calling thread drives with `block_on`.
//!
//! Why this shape (ARCHITECTURE.md, "Outgoing HTTP"): callers keep their own pools of
//! [`Conn`]s, so a connect is explicit and its failure is known to have sent nothing — the only
//! failure that may fail over to the next relay; and the connection is driven by the thread
//! that waits on it, so an answer wakes that thread directly.
//!
//! Invariants:
//! - Every wait ends by the caller's deadline and notices its cancel flag within [`SLICE`];
//!   what is read is bounded ([`MAX_BODY`]).
//! - Errors say whether the request was written ([`HttpError::is_before_send`]): a connect,
//!   TLS or certificate failure never was.
//! - `TCP_NODELAY` on every connection; TLS checks the server's certificate against the
//!   platform's roots plus an optional extra CA bundle ([`set_extra_ca`]), and there is no way
//!   to turn the check off.
//! - A connection is reused only when its last answer was read to the end, it is still open,
//!   and it has been idle less than [`REUSE_IDLE_LIMIT`].

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::race::{race, Either};

/// Largest response body read (the MCP HTTP bound).
pub const MAX_BODY: usize = 8 * 1024 * 1024;
/// How often a wait looks at the cancel flag.
const SLICE: Duration = Duration::from_millis(100);
/// A connection idle longer than this is not reused: servers close idle connections (ours
/// after 5 s, Node's by default after 5 s too), and one closing just as a request goes out would
/// fail that request after it was sent.
const REUSE_IDLE_LIMIT: Duration = Duration::from_secs(4);

/// Why an exchange failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HttpError {
    /// The URL cannot be used.
    #[error("{0}")]
    Url(String),
    /// No connection: refused, unreachable, name not resolved, the connect or TLS handshake
    /// failed or timed out.
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    /// The server's certificate was refused (a connect failure, for failover).
    #[error("the certificate of {host} is not accepted: {reason}")]
    Certificate { host: String, reason: String },
    /// The request could not be written on an open connection.
    #[error("the connection failed while sending: {0}")]
    Send(String),
    /// No (complete) answer before the deadline, after the request was sent.
    #[error("no answer within the deadline")]
    Timeout,
    /// The caller cancelled while waiting for the answer.
    #[error("cancelled")]
    Cancelled,
    /// The connection broke, or the answer is not valid HTTP, after the request was sent.
    #[error("{0}")]
    Answer(String),
    /// The peer answered 401 to the credential sent: the request did not run.
    #[error("{0}")]
    Unauthorized(String),
    /// No credential for the peer could be had (its OAuth provider refused or is away):
    /// nothing was sent to the peer, and sending elsewhere would not help.
    #[error("{0}")]
    SignIn(String),
    /// The answer is over [`MAX_BODY`] (`bytes`: its length, when the peer said it).
    #[error("the answer{} is over the {MAX_BODY}-byte limit", bytes.map_or_else(String::new, |b| format!(" of {b} bytes")))]
    TooLarge { bytes: Option<u64> },
}

impl HttpError {
    /// Whether nothing reached the peer, so the request may go elsewhere.
    pub fn is_before_send(&self) -> bool {
        matches!(
            self,
            Self::Url(_) | Self::Connect { .. } | Self::Certificate { .. }
        )
    }
}

/// A parsed `http://` or `https://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// Whether it is `https://`.
    pub tls: bool,
    /// `host:port` as given (the `Host` header).
    pub authority: String,
    pub host: String,
    pub port: u16,
    /// The path and query, starting with `/`.
    pub path: String,
}

impl Url {
    pub fn parse(text: &str) -> Result<Self, HttpError> {
        let (tls, rest) = match (text.strip_prefix("https://"), text.strip_prefix("http://")) {
            (Some(rest), _) => (true, rest),
            (None, Some(rest)) => (false, rest),
            _ => {
                return Err(HttpError::Url(format!(
                    "{text}: not an http:// or https:// URL"
                )))
            }
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(HttpError::Url(format!(
                "{text}: needs a host (and no user or password)"
            )));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
                let port = port
                    .parse::<u16>()
                    .map_err(|_| HttpError::Url(format!("{text}: bad port \"{port}\"")))?;
                (host, port)
            }
            _ => (authority, if tls { 443 } else { 80 }),
        };
        Ok(Self {
            tls,
            authority: authority.to_owned(),
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            path: path.to_owned(),
        })
    }

    /// The origin (`scheme://host:port`): what a credential of this URL may be sent to.
    pub fn origin(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}:{}", self.host, self.port)
    }
}

/// The runtime every exchange runs on: a current-thread runtime, so the thread waiting in
/// `block_on` runs the I/O driver itself and an answer wakes it straight from `epoll` (a
/// worker thread in between cost about 10 % of a forwarded call). Several threads may wait at
/// once: the one holding the driver hands on the readiness of the others' sockets.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .thread_name("coremcp-client")
            .enable_io()
            .enable_time()
            .build()
            .expect("the HTTP client's runtime starts (an epoll instance)")
    })
}

static EXTRA_CA: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();

/// Trusts the certificates of the PEM bundle at `path` as well as the platform's roots
/// (`--ca-file`). Called once, at start; an unreadable or empty bundle is an error naming it.
pub fn set_extra_ca(path: &Path) -> Result<(), String> {
    let certs = pem_certificates(path).map_err(|why| format!("{}: {why}", path.display()))?;
    let _ = EXTRA_CA.set(certs);
    Ok(())
}

/// The certificates of a PEM file (a CA bundle, or a server's chain): at least one, or why
/// not (the text completes "FILE: …").
pub fn pem_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read it: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("not PEM certificates: {e}"))?;
    if certs.is_empty() {
        return Err("holds no CERTIFICATE block".to_owned());
    }
    Ok(certs)
}

/// The TLS configuration of every https exchange: the platform's roots (`SSL_CERT_FILE` and
/// `SSL_CERT_DIR` honoured), plus the extra CA bundle.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            let native = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(native.certs);
            let extra = EXTRA_CA.get().cloned().unwrap_or_default();
            let (extra_added, _) = roots.add_parsable_certificates(extra);
            if added + extra_added == 0 {
                return Err(
                    "no trusted root certificate: the platform has none (/etc/ssl/certs) and \
                     no --ca-file was given"
                        .to_owned(),
                );
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(config))
        })
        .clone()
}

/// A TCP stream, plain or in TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

type Driver = Pin<Box<dyn Future<Output = hyper::Result<()>> + Send>>;

/// One kept-alive connection to a peer.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    /// The connection's own future: it moves the bytes, and is polled by whoever waits.
    driver: Driver,
    /// The driver finished: the connection is gone.
    closed: bool,
    /// The same socket, for a look at it without the runtime: a peer that closed an idle
    /// connection is seen at once (the runtime would learn it only on its next turn).
    probe: std::net::TcpStream,
    /// False once the connection is in an unknown state (broken, half-read, closed by the peer).
    reusable: bool,
    /// When it last finished an exchange (or connected).
    idle_since: Instant,
}

impl Conn {
    /// Connects to `url`'s host within `timeout` (TCP, then TLS for https, then HTTP/1.1).
    pub fn connect(url: &Url, timeout: Duration) -> Result<Self, HttpError> {
        let failed = |reason: String| HttpError::Connect {
            addr: url.authority.clone(),
            reason,
        };
        let connect = async {
            let tcp = TcpStream::connect((url.host.as_str(), url.port))
                .await
                .map_err(|e| failed(e.to_string()))?;
            let _ = tcp.set_nodelay(true);
            // A second handle on the socket (a dup), left non-blocking, for `alive`.
            let socket = tcp.into_std().map_err(|e| failed(e.to_string()))?;
            let probe = socket.try_clone().map_err(|e| failed(e.to_string()))?;
            let tcp = TcpStream::from_std(socket).map_err(|e| failed(e.to_string()))?;
            let stream = if url.tls {
                let config = tls_config().map_err(failed)?;
                let name = ServerName::try_from(url.host.clone())
                    .map_err(|e| failed(format!("not a TLS server name: {e}")))?;
                let tls = tokio_rustls::TlsConnector::from(config)
                    .connect(name, tcp)
                    .await
                    .map_err(|e| tls_failure(url, &e))?;
                Stream::Tls(Box::new(tls))
            } else {
                Stream::Plain(tcp)
            };
            let (sender, connection) = hyper::client::conn::http1::Builder::new()
                .handshake(TokioIo::new(stream))
                .await
                .map_err(|e| failed(e.to_string()))?;
            Ok(Self {
                sender,
                driver: Box::pin(connection),
                closed: false,
                probe,
                reusable: true,
                idle_since: Instant::now(),
            })
        };
        runtime().block_on(async {
            match tokio::time::timeout(timeout, connect).await {
                Ok(outcome) => outcome,
                Err(_) => Err(failed(format!(
                    "connect timed out after {} ms",
                    timeout.as_millis()
                ))),
            }
        })
    }

    /// Whether the connection can carry another request: reusable, recently used, and not
    /// closed by the peer while idle.
    pub fn alive(&mut self) -> bool {
        if !self.reusable || self.closed || self.idle_since.elapsed() > REUSE_IDLE_LIMIT {
            return false;
        }
        // An idle connection has nothing to read: a peek that would block means it is open
        // and quiet; an end of stream (or bytes nobody asked for) means it is not.
        let mut byte = [0u8; 1];
        match self.probe.peek(&mut byte) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            _ => {
                self.closed = true;
                return false;
            }
        }
        // One look at the connection: a peer that closed it makes its driver finish now.
        let driver = &mut self.driver;
        let finished = runtime().block_on(std::future::poll_fn(|cx| {
            Poll::Ready(driver.as_mut().poll(cx).is_ready())
        }));
        if finished {
            self.closed = true;
        }
        !finished && !self.sender.is_closed()
    }

    /// Sends one request and reads the response head.
    pub fn exchange(
        &mut self,
        url: &Url,
        method: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<Response<'_>, HttpError> {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(url.path.as_str())
            .header(hyper::header::HOST, url.authority.as_str());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::copy_from_slice(body)))
            .map_err(|e| HttpError::Send(format!("the request cannot be made: {e}")))?;
        self.reusable = false; // until the response is read whole
        if self.closed || self.sender.is_closed() {
            return Err(HttpError::Send("the connection is closed".to_owned()));
        }
        let (sender, driver, closed) = (&mut self.sender, &mut self.driver, &mut self.closed);
        let response = runtime().block_on(bounded(
            async {
                let mut send = std::pin::pin!(sender.send_request(request));
                let result = match race(send.as_mut(), drive(driver, closed)).await {
                    Either::First(result) => result,
                    // The connection ended, perhaps right after the answer came in: the send
                    // now resolves, with the answer or with why there is none.
                    Either::Second(_) => send.await,
                };
                result.map_err(|e| HttpError::Answer(e.to_string()))
            },
            deadline,
            cancelled,
        ))??;
        let (parts, incoming) = response.into_parts();
        let length = parts
            .headers
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if length.is_some_and(|l| l > MAX_BODY as u64) {
            return Err(HttpError::TooLarge { bytes: length });
        }
        let headers = parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).trim().to_owned(),
                )
            })
            .collect();
        Ok(Response {
            status: parts.status.as_u16(),
            headers,
            body: incoming,
            conn: self,
            done: false,
        })
    }
}

/// Polls the connection's driver until it finishes: why it did (what an exchange reports
/// when the connection ends before its answer).
async fn drive(driver: &mut Driver, closed: &mut bool) -> String {
    if *closed {
        return std::future::pending().await;
    }
    let outcome = driver.as_mut().await;
    *closed = true;
    match outcome {
        Ok(()) => "the connection closed".to_owned(),
        Err(e) => e.to_string(),
    }
}

/// `fut`, ended early by the deadline or the cancel flag (looked at every [`SLICE`]).
async fn bounded<F: Future>(
    fut: F,
    deadline: Instant,
    cancelled: &AtomicBool,
) -> Result<F::Output, HttpError> {
    let mut fut = std::pin::pin!(fut);
    loop {
        if cancelled.load(Ordering::Relaxed) {
            return Err(HttpError::Cancelled);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(HttpError::Timeout);
        }
        if let Ok(output) = tokio::time::timeout(left.min(SLICE), &mut fut).await {
            return Ok(output);
        }
    }
}

/// A TLS handshake that failed: a refused certificate says so and why, anything else is a
/// connect failure.
fn tls_failure(url: &Url, error: &std::io::Error) -> HttpError {
    let rustls_error = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match rustls_error {
        Some(rustls::Error::InvalidCertificate(why)) => HttpError::Certificate {
            host: url.host.clone(),
            reason: certificate_reason(why),
        },
        _ => HttpError::Connect {
            addr: url.authority.clone(),
            reason: format!("TLS handshake failed: {error}"),
        },
    }
}

fn certificate_reason(why: &rustls::CertificateError) -> String {
    use rustls::CertificateError as E;
    match why {
        E::UnknownIssuer => "it is signed by an unknown issuer (add its CA with --ca-file)".into(),
        E::Expired | E::ExpiredContext { .. } => "it has expired".into(),
        E::NotValidYet | E::NotValidYetContext { .. } => "it is not valid yet".into(),
        E::NotValidForName | E::NotValidForNameContext { .. } => {
            "it is not valid for this host name".into()
        }
        E::Revoked => "it is revoked".into(),
        other => format!("{other:?}"),
    }
}

/// One response: status, headers (names lower-cased) and a body still to be read.
pub struct Response<'c> {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    body: Incoming,
    conn: &'c mut Conn,
    done: bool,
}

impl Response<'_> {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Reads the next piece of the body (empty at the end), waiting at most until `deadline`.
    pub fn read_some(
        &mut self,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<Vec<u8>, HttpError> {
        if self.done {
            return Ok(Vec::new());
        }
        let (body, conn) = (&mut self.body, &mut *self.conn);
        let (driver, closed) = (&mut conn.driver, &mut conn.closed);
        let frame = runtime().block_on(bounded(
            async {
                loop {
                    let next = match race(body.frame(), drive(driver, closed)).await {
                        Either::First(next) => next,
                        // The body may still hold what arrived before the close.
                        Either::Second(_) => body.frame().await,
                    };
                    match next {
                        None => return Ok(None),
                        Some(Err(e)) => return Err(HttpError::Answer(e.to_string())),
                        Some(Ok(frame)) => {
                            if let Ok(data) = frame.into_data() {
                                if !data.is_empty() {
                                    return Ok(Some(data));
                                }
                            }
                        }
                    }
                }
            },
            deadline,
            cancelled,
        ))??;
        match frame {
            Some(data) => Ok(data.to_vec()),
            None => {
                self.done = true;
                Ok(Vec::new())
            }
        }
    }

    /// The whole body, at most [`MAX_BODY`] bytes.
    pub fn read_all(
        &mut self,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<Vec<u8>, HttpError> {
        let mut body = Vec::new();
        loop {
            let piece = self.read_some(deadline, cancelled)?;
            if piece.is_empty() {
                return Ok(body);
            }
            body.extend_from_slice(&piece);
            if body.len() > MAX_BODY {
                return Err(HttpError::TooLarge { bytes: None });
            }
        }
    }
}

impl Drop for Response<'_> {
    fn drop(&mut self) {
        // Reusable only when read to the end (hyper keeps the connection alive unless the
        // answer said otherwise; a closed one is seen by `alive`).
        if self.done {
            self.conn.reusable = true;
            self.conn.idle_since = Instant::now();
        }
    }
}

/// A URL with its password replaced by `***`, for messages.
pub fn redact_url(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{path}"),
            None => text.to_owned(),
        },
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;

    #[test]
    fn urls() {
        let u = Url::parse("http://relay-1:7070/mcp?x=1").expect("url");
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (false, "relay-1", 7070, "/mcp?x=1")
        );
        let u = Url::parse("https://mcp.example/mcp").expect("url");
        assert_eq!(
            (u.tls, u.port, u.origin().as_str()),
            (true, 443, "https://mcp.example:443")
        );
        let u = Url::parse("http://[::1]:9/").expect("url");
        assert_eq!((u.host.as_str(), u.port), ("::1", 9));
        assert_eq!(Url::parse("http://h").expect("url").path, "/");
        for bad in ["ftp://h/", "http://", "http://user:pw@h/", "http://h:x/"] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    /// A server that answers each request on one kept-alive connection with the next of
    /// `answers` (raw HTTP), then keeps the connection open a while.
    fn serve(answers: Vec<&'static str>) -> Url {
        serve_then(answers, Duration::from_secs(5))
    }

    /// [`serve`], closing the connection `linger` after the last answer.
    fn serve_then(answers: Vec<&'static str>, linger: Duration) -> Url {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("accept");
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            for answer in answers {
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let _ = stream.write_all(answer.as_bytes());
            }
            std::thread::sleep(linger);
        });
        Url::parse(&format!("http://127.0.0.1:{port}/x")).expect("url")
    }

    #[test]
    fn length_and_chunked_bodies_on_one_connection() {
        let url = serve(vec![
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        ]);
        let never = AtomicBool::new(false);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut conn = Conn::connect(&url, Duration::from_secs(2)).expect("connect");
        let mut response = conn
            .exchange(&url, "POST", &[("X-A", "1")], b"{}", deadline, &never)
            .expect("exchange");
        assert_eq!(response.status, 200);
        assert_eq!(response.read_all(deadline, &never).expect("body"), b"hello");
        drop(response);
        assert!(conn.alive(), "read to the end: reusable");
        // Not after the peer closed it while idle (seen at once, not on the next request).
        let url2 = serve_then(
            vec!["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"],
            Duration::ZERO,
        );
        let mut closing = Conn::connect(&url2, Duration::from_secs(2)).expect("connect");
        let mut answer = closing
            .exchange(&url2, "GET", &[], b"", deadline, &never)
            .expect("exchange");
        assert_eq!(answer.read_all(deadline, &never).expect("body"), b"ok");
        drop(answer);
        let closed_at = Instant::now() + Duration::from_secs(10);
        while closing.alive() {
            assert!(
                Instant::now() < closed_at,
                "a closed connection still looks alive"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut response = conn
            .exchange(&url, "GET", &[], b"", deadline, &never)
            .expect("second exchange on the same connection");
        assert_eq!(response.read_all(deadline, &never).expect("body"), b"abcde");
    }

    #[test]
    fn connect_failures_are_before_send_and_silence_is_a_timeout() {
        let free = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = free.local_addr().expect("addr").port();
        drop(free);
        let url = Url::parse(&format!("http://127.0.0.1:{port}/")).expect("url");
        let err = Conn::connect(&url, Duration::from_secs(2))
            .err()
            .expect("refused");
        assert!(err.is_before_send(), "{err}");

        let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = Url::parse(&format!(
            "http://127.0.0.1:{}/",
            silent.local_addr().expect("addr").port()
        ))
        .expect("url");
        let mut conn = Conn::connect(&url, Duration::from_secs(2)).expect("connect");
        let never = AtomicBool::new(false);
        let started = Instant::now();
        let deadline = started + Duration::from_millis(300);
        let err = conn
            .exchange(&url, "GET", &[], b"", deadline, &never)
            .err()
            .expect("silence");
        assert!(matches!(err, HttpError::Timeout), "{err}");
        assert!(!err.is_before_send());
        assert!(started.elapsed() < Duration::from_secs(2));

        // A cancel is noticed within a slice, not at the deadline.
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cancelled);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            flag.store(true, Ordering::Relaxed);
        });
        let started = Instant::now();
        let mut conn = Conn::connect(&url, Duration::from_secs(2)).expect("connect");
        let err = conn
            .exchange(
                &url,
                "GET",
                &[],
                b"",
                started + Duration::from_secs(30),
                &cancelled,
            )
            .err()
            .expect("cancelled");
        assert!(matches!(err, HttpError::Cancelled), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}
