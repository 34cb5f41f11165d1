//! Request bodies read within a limit, and the plain responses every endpoint builds.
//!
//! Invariants: a request body is never held past [`MAX_BODY_BYTES`]: a declared
//! `Content-Length` above it is refused before a byte of the body is read, and a body without one
//! is read only until it passes the limit. Error responses on `/mcp` carry a JSON-RPC error
//! object, so a client always learns why.

use std::convert::Infallible;

use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Body as HttpBody, Bytes};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use crate::rpc;

/// The largest request body accepted (ARCHITECTURE.md, "Limits").
pub const MAX_BODY_BYTES: usize = crate::mcp::MAX_LINE_BYTES;

/// Every response body.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Why a body could not be read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("the request body exceeds the {} MB limit", MAX_BODY_BYTES / (1024 * 1024))]
    TooLarge,
    #[error("the request body could not be read: {0}")]
    Failed(String),
}

/// Reads a whole body of at most `limit` bytes; `declared` is its `Content-Length`.
pub async fn read_limited<B>(
    mut body: B,
    declared: Option<u64>,
    limit: usize,
) -> Result<Bytes, ReadError>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ReadError::TooLarge);
    }
    let mut out: Vec<u8> = Vec::with_capacity(declared.unwrap_or(0) as usize);
    while let Some(frame) = body.frame().await {
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
            block_on(read_limited(body, Some(11), 10)),
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
            block_on(read_limited(body, None, 10)),
            Err(ReadError::TooLarge)
        );
        let body = Chunks { chunks: 5, size: 2 };
        assert_eq!(
            block_on(read_limited(body, None, 10)).expect("fits").len(),
            10
        );
    }
}
