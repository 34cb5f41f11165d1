//! Request bodies read within a limit, and the plain responses every endpoint builds.
//!
//! Invariants: a request body is never held past [`MAX_BODY_BYTES`]: a declared
//! `Content-Length` above it is refused before a byte of the body is read, and a body without one
//! is read only until it passes the limit. A body is never waited on past its [`Pace`]: a
//! client (authenticated or not) that stops sending, or trickles, is answered 408 and its
//! connection closed, so it cannot hold a connection and a session's request slot forever.
//! Error responses on `/mcp` carry a JSON-RPC error object, so a client always learns why.

use std::convert::Infallible;
use std::time::Duration;

use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Body as HttpBody, Bytes};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use coremcp_wire::rpc;

/// The largest request body accepted (ARCHITECTURE.md, "Limits").
pub const MAX_BODY_BYTES: usize = coremcp_wire::mcp::MAX_LINE_BYTES;

/// Every response body.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// How long a client may take to send a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// The longest wait for the next piece of it.
    pub idle: Duration,
    /// The longest wait for all of it (a 16 MB body at 300 kB/s).
    pub whole: Duration,
}

/// The pace every request body on `/mcp` keeps.
pub const BODY_PACE: Pace = Pace {
    idle: Duration::from_secs(10),
    whole: Duration::from_secs(60),
};

/// Why a body could not be read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("the request body exceeds the {} MB limit", MAX_BODY_BYTES / (1024 * 1024))]
    TooLarge,
    #[error("the request body could not be read: {0}")]
    Failed(String),
    #[error(
        "the request body was not sent in time: nothing for {} s, or not all of it within {} s",
        .0.idle.as_secs(),
        .0.whole.as_secs()
    )]
    TooSlow(Pace),
}

/// Reads a whole body of at most `limit` bytes at `pace`; `declared` is its `Content-Length`.
pub async fn read_limited<B>(
    mut body: B,
    declared: Option<u64>,
    limit: usize,
    pace: Pace,
) -> Result<Bytes, ReadError>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ReadError::TooLarge);
    }
    let whole = tokio::time::Instant::now() + pace.whole;
    let mut out: Vec<u8> = Vec::with_capacity(declared.unwrap_or(0) as usize);
    loop {
        let next = (tokio::time::Instant::now() + pace.idle).min(whole);
        let Ok(frame) = tokio::time::timeout_at(next, body.frame()).await else {
            return Err(ReadError::TooSlow(pace));
        };
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|e| ReadError::Failed(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                return Err(ReadError::TooLarge);
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(out))
}

/// A response with a whole body.
pub fn full(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed_unsync());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A response without a body.
pub fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Empty::new().boxed_unsync());
    *response.status_mut() = status;
    response
}

/// A plain-text response (outside `/mcp`).
pub fn text(status: StatusCode, text: impl Into<String>) -> Response<Body> {
    full(status, "text/plain; charset=utf-8", text.into())
}

/// A JSON response.
pub fn json(status: StatusCode, json: String) -> Response<Body> {
    full(status, "application/json", json)
}

/// A JSON-RPC error as an HTTP error (on `/mcp`): `id` is the request's, when known.
pub fn rpc_error(status: StatusCode, id: Option<&str>, code: i64, message: &str) -> Response<Body> {
    json(status, rpc::error(id, code, message))
}

/// 413: the connection is closed after it, since the rest of the body is not read.
pub fn too_large() -> Response<Body> {
    let mut response = rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        rpc::INVALID_REQUEST,
        &ReadError::TooLarge.to_string(),
    );
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// 408: the connection is closed after it, since the rest of the body is not read.
pub fn too_slow(why: &ReadError) -> Response<Body> {
    let mut response = rpc_error(
        StatusCode::REQUEST_TIMEOUT,
        None,
        rpc::INVALID_REQUEST,
        &why.to_string(),
    );
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A body of `chunks` chunks of `size` bytes, with no declared length.
    struct Chunks {
        chunks: usize,
        size: usize,
    }

    impl HttpBody for Chunks {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
            if self.chunks == 0 {
                return Poll::Ready(None);
            }
            self.chunks -= 1;
            Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from(vec![
                b'x';
                self.size
            ])))))
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn a_declared_length_over_the_limit_is_refused_unread() {
        let body = Chunks {
            chunks: usize::MAX,
            size: 1,
        };
        assert_eq!(
            block_on(read_limited(body, Some(11), 10, BODY_PACE)),
            Err(ReadError::TooLarge)
        );
    }

    #[test]
    fn a_stream_is_cut_when_it_passes_the_limit() {
        let body = Chunks {
            chunks: 1000,
            size: 4,
        };
        assert_eq!(
            block_on(read_limited(body, None, 10, BODY_PACE)),
            Err(ReadError::TooLarge)
        );
        let body = Chunks { chunks: 5, size: 2 };
        assert_eq!(
            block_on(read_limited(body, None, 10, BODY_PACE))
                .expect("fits")
                .len(),
            10
        );
    }

    /// A body that sends one byte every `every`, `bytes` in all, then never ends.
    struct Trickle {
        every: Duration,
        bytes: usize,
        sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    }

    impl HttpBody for Trickle {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
            if self.bytes == 0 {
                return Poll::Pending;
            }
            let every = self.every;
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
            match sleep.as_mut().poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(()) => {
                    self.sleep = None;
                    self.bytes -= 1;
                    Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from_static(b"x")))))
                }
            }
        }
    }

    use std::future::Future;

    #[test]
    fn a_body_that_stops_is_given_up_after_its_idle_wait() {
        let pace = Pace {
            idle: Duration::from_millis(50),
            whole: Duration::from_secs(600),
        };
        let body = Trickle {
            every: Duration::from_millis(1),
            bytes: 3,
            sleep: None,
        };
        assert_eq!(
            block_on(read_limited(body, Some(10), 10, pace)),
            Err(ReadError::TooSlow(pace))
        );
    }

    #[test]
    fn a_body_that_trickles_is_given_up_at_its_whole_wait() {
        // Every piece comes long before the idle wait; the whole never does.
        let pace = Pace {
            idle: Duration::from_secs(600),
            whole: Duration::from_millis(100),
        };
        let body = Trickle {
            every: Duration::from_millis(5),
            bytes: usize::MAX,
            sleep: None,
        };
        let started = std::time::Instant::now();
        assert_eq!(
            block_on(read_limited(body, None, usize::MAX, pace)),
            Err(ReadError::TooSlow(pace))
        );
        assert!(started.elapsed() < Duration::from_secs(600));
    }
}
