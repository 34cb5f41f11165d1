//! How a request reaches a daemon: one HTTP/1.1 connection per request, over the endpoint's
//! Unix socket or TCP address, whose answer is **bounded** ([`MAX_ANSWER`]).
//!
//! A Docker endpoint can be anything a Registry host record names, so its answers are outside
//! input: an answer over the bound is refused, naming its size (when the daemon announced it)
//! and the bound, and never held whole. The bound is counted on every byte read from the
//! connection, head and body alike, so neither a `Content-Length` that lies nor an endless
//! chunked body gets past it.
//!
//! Invariant: no more than [`MAX_ANSWER`] bytes (plus one read buffer) of one answer are ever
//! read from a daemon.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bollard::{BollardRequest, Docker};
use hyper::body::Incoming;
use hyper::Response;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::Endpoint;

/// The most one answer may hold (the host's bound on an HTTP body).
pub const MAX_ANSWER: u64 = 8 * 1024 * 1024;

/// An answer over [`MAX_ANSWER`]: what the daemon announced (when it did).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("its answer{} is over the {MAX_ANSWER}-byte (8 MB) limit, so it was refused", .announced.map_or_else(String::new, |n| format!(" of {n} bytes")))]
pub struct TooLarge {
    pub announced: Option<u64>,
}

impl TooLarge {
    /// The `TooLarge` carried by `error` or somewhere in its chain of sources, if any.
    pub fn within(error: &bollard::errors::Error) -> Option<Self> {
        // bollard's I/O error is transparent: its source is the payload's source, not itself.
        if let bollard::errors::Error::IOError { err } = error {
            if let Some(found) = Self::inside(err) {
                return Some(found);
            }
        }
        let mut next = std::error::Error::source(error);
        while let Some(error) = next {
            if let Some(found) = error.downcast_ref::<TooLarge>() {
                return Some(*found);
            }
            if let Some(found) = error.downcast_ref::<io::Error>().and_then(Self::inside) {
                return Some(found);
            }
            next = error.source();
        }
        None
    }

    /// The `TooLarge` an I/O error carries as its payload (hidden from `source()`).
    fn inside(error: &io::Error) -> Option<Self> {
        error.get_ref()?.downcast_ref::<TooLarge>().copied()
    }
}

/// A client of `endpoint` on this transport (`timeout`: the client's own backstop, seconds).
pub fn client(endpoint: &Endpoint, timeout: u64) -> Result<Docker, bollard::errors::Error> {
    let endpoint = Arc::new(endpoint.clone());
    Docker::connect_with_custom_transport(
        move |request: BollardRequest| {
            let endpoint = Arc::clone(&endpoint);
            async move { send(&endpoint, request).await }
        },
        // The authority bollard writes into its URIs; the transport connects by the endpoint.
        Some("http://docker"),
        timeout,
        bollard::API_DEFAULT_VERSION,
    )
}

/// `GET path` (with its query) of `client`'s API version on `endpoint`: the body, read whole
/// within [`MAX_ANSWER`]; an answer that is not a success is an error carrying the daemon's
/// message, as bollard reports one.
pub async fn get(
    endpoint: &Endpoint,
    client: &Docker,
    path: &str,
) -> Result<bytes::Bytes, bollard::errors::Error> {
    use http_body_util::BodyExt;
    let version = client.client_version();
    let uri = format!(
        "/v{}.{}{path}",
        version.major_version, version.minor_version
    );
    let request = hyper::Request::get(uri)
        .body(bollard::body_full(bytes::Bytes::new()))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let response = send(endpoint, request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        let message = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| text.chars().take(500).collect());
        return Err(bollard::errors::Error::DockerResponseServerError {
            status_code: status.as_u16(),
            message,
        });
    }
    Ok(body)
}

/// Sends one request on a new connection to `endpoint`.
async fn send(
    endpoint: &Endpoint,
    mut request: BollardRequest,
) -> Result<Response<Incoming>, bollard::errors::Error> {
    let stream: Box<dyn Stream> = match endpoint {
        Endpoint::Unix(path) => Box::new(tokio::net::UnixStream::connect(path).await?),
        Endpoint::Tcp(authority) => {
            let stream = tokio::net::TcpStream::connect(authority.as_str()).await?;
            stream.set_nodelay(true)?;
            Box::new(stream)
        }
    };
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(Bounded::new(stream))).await?;
    tokio::spawn(connection);
    // On a connection of its own a request names its path only.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()?;
    *request.uri_mut() = path;
    let host = match endpoint {
        Endpoint::Unix(_) => "docker".to_owned(),
        Endpoint::Tcp(authority) => authority.clone(),
    };
    // An endpoint is checked as HOST:PORT when parsed, so it is a valid header value.
    let host = hyper::header::HeaderValue::from_str(&host)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    request.headers_mut().insert(hyper::header::HOST, host);
    let response = sender.send_request(request).await?;
    let announced = response
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(announced) = announced.filter(|n| *n > MAX_ANSWER) {
        let too_large = TooLarge {
            announced: Some(announced),
        };
        return Err(io::Error::new(io::ErrorKind::InvalidData, too_large).into());
    }
    Ok(response)
}

/// A connection's byte stream.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// A stream whose reads end in an error once more than [`MAX_ANSWER`] bytes came in.
struct Bounded {
    inner: Box<dyn Stream>,
    read: u64,
}

impl Bounded {
    fn new(inner: Box<dyn Stream>) -> Self {
        Self { inner, read: 0 }
    }
}

impl AsyncRead for Bounded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.read > MAX_ANSWER {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                TooLarge { announced: None },
            )));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let got = (buf.filled().len() - before) as u64;
        self.read += got;
        polled
    }
}

impl AsyncWrite for Bounded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, bytes)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_too_large_is_found_behind_the_errors_that_carry_it() {
        let found = TooLarge {
            announced: Some(200 << 20),
        };
        let io = io::Error::new(io::ErrorKind::InvalidData, found);
        let bollard: bollard::errors::Error = io.into();
        assert_eq!(TooLarge::within(&bollard), Some(found));
        assert!(found.to_string().contains("of 209715200 bytes"), "{found}");
        let other: bollard::errors::Error = io::Error::other("reset").into();
        assert_eq!(TooLarge::within(&other), None);
    }
}
