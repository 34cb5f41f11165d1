//! A small blocking HTTP/1.1 client for the calls the host makes to other Core MCPs (relays
//! and `remote_host` targets): one request at a time on a kept-alive `TcpStream`, bodies by
//! `Content-Length` or chunked, and an incremental reader for `text/event-stream` bodies.
//!
//! It runs on the pool thread of the call it serves, so no async runtime crosses a call.
//!
//! Invariants:
//! - Every read waits at most until the caller's deadline, in slices short enough to notice a
//!   cancel; what is read is bounded ([`MAX_BODY`], [`MAX_HEADER`]).
//! - Errors say whether the request was written ([`HttpError::is_before_send`]): only a failure
//!   before anything was sent may be retried elsewhere.
//! - `TCP_NODELAY` is set on every connection (Nagle would add ~40 ms per small request).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Largest response body read (the MCP HTTP bound).
pub const MAX_BODY: usize = 8 * 1024 * 1024;
/// Largest response head (status line and headers).
const MAX_HEADER: usize = 64 * 1024;
/// How often a blocked read looks at the cancel flag.
const SLICE: Duration = Duration::from_millis(100);

/// Why an exchange failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HttpError {
    /// The URL cannot be used (not `http://host:port/path`).
    #[error("{0}")]
    Url(String),
    /// No connection: refused, unreachable, name not resolved or the connect timed out.
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
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
    /// The answer is over [`MAX_BODY`] (`bytes`: its length, when the peer said it).
    #[error("the answer{} is over the {MAX_BODY}-byte limit", bytes.map_or_else(String::new, |b| format!(" of {b} bytes")))]
    TooLarge { bytes: Option<u64> },
}

impl HttpError {
    /// Whether nothing reached the peer, so the request may go elsewhere.
    pub fn is_before_send(&self) -> bool {
        matches!(self, Self::Url(_) | Self::Connect { .. })
    }
}

/// A parsed `http://host:port/path` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `host:port` as given (the `Host` header).
    pub authority: String,
    pub host: String,
    pub port: u16,
    /// The path and query, starting with `/`.
    pub path: String,
}

impl Url {
    pub fn parse(text: &str) -> Result<Self, HttpError> {
        if text.starts_with("https://") {
            return Err(HttpError::Url(format!(
                "{text}: https is not supported by this build's client; use http:// on a \
                 trusted network or put a TLS-terminating proxy in front"
            )));
        }
        let rest = text
            .strip_prefix("http://")
            .ok_or_else(|| HttpError::Url(format!("{text}: not an http:// URL")))?;
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
            _ => (authority, 80),
        };
        Ok(Self {
            authority: authority.to_owned(),
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            path: path.to_owned(),
        })
    }
}

/// One response: status, headers (names lower-cased) and a body still to be read.
pub struct Response<'c> {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    body: Body<'c>,
}

enum Body<'c> {
    Length(&'c mut Conn, usize),
    Chunked(&'c mut Conn, ChunkState),
    /// Read until the peer closes (no length given); the connection cannot be reused.
    Close(&'c mut Conn),
}

#[derive(Default)]
struct ChunkState {
    left: usize,
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
        match &mut self.body {
            Body::Length(conn, left) => {
                if *left == 0 {
                    return Ok(Vec::new());
                }
                let got = conn.read_upto(*left, deadline, cancelled)?;
                if got.is_empty() {
                    return Err(HttpError::Answer("the connection closed mid-answer".into()));
                }
                *left -= got.len();
                Ok(got)
            }
            Body::Chunked(conn, state) => {
                if state.done {
                    return Ok(Vec::new());
                }
                if state.left == 0 {
                    let line = conn.read_line(deadline, cancelled)?;
                    let size = line.split(';').next().unwrap_or("").trim();
                    let size = usize::from_str_radix(size, 16)
                        .map_err(|_| HttpError::Answer(format!("bad chunk size {size:?}")))?;
                    if size == 0 {
                        // Trailers, then the blank line.
                        while !conn.read_line(deadline, cancelled)?.is_empty() {}
                        state.done = true;
                        return Ok(Vec::new());
                    }
                    state.left = size;
                }
                let got = conn.read_upto(state.left, deadline, cancelled)?;
                if got.is_empty() {
                    return Err(HttpError::Answer("the connection closed mid-chunk".into()));
                }
                state.left -= got.len();
                if state.left == 0 {
                    conn.read_line(deadline, cancelled)?; // the CRLF after the chunk
                }
                Ok(got)
            }
            Body::Close(conn) => {
                conn.reusable = false;
                conn.read_upto(64 * 1024, deadline, cancelled)
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

    /// Whether the body was read to its end (so the connection may carry the next request).
    fn finished(&self) -> bool {
        match &self.body {
            Body::Length(_, left) => *left == 0,
            Body::Chunked(_, state) => state.done,
            Body::Close(_) => false,
        }
    }
}

impl Drop for Response<'_> {
    fn drop(&mut self) {
        let finished = self.finished();
        match &mut self.body {
            Body::Length(c, _) | Body::Chunked(c, _) | Body::Close(c) => {
                if finished {
                    c.idle_since = Instant::now();
                } else {
                    c.reusable = false;
                }
            }
        }
    }
}

/// One kept-alive connection to a peer.
pub struct Conn {
    reader: BufReader<TcpStream>,
    /// False once the connection is in an unknown state (broken, half-read, closed by the peer).
    reusable: bool,
    /// When it last finished an exchange (or connected).
    idle_since: Instant,
}

/// A connection idle longer than this is not reused: servers close idle connections (ours
/// after 5 s, Node's by default after 5 s too), and one closing just as a request goes out would
/// fail that request after it was sent.
const REUSE_IDLE_LIMIT: Duration = Duration::from_secs(4);

impl Conn {
    /// Connects to `url`'s host within `timeout` (each resolved address in turn).
    pub fn connect(url: &Url, timeout: Duration) -> Result<Self, HttpError> {
        let failed = |reason: String| HttpError::Connect {
            addr: url.authority.clone(),
            reason,
        };
        let addrs: Vec<SocketAddr> = (url.host.as_str(), url.port)
            .to_socket_addrs()
            .map_err(|e| failed(format!("cannot resolve {}: {e}", url.host)))?
            .collect();
        let mut last = "no address".to_owned();
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(Self {
                        reader: BufReader::new(stream),
                        reusable: true,
                        idle_since: Instant::now(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    last = format!("connect timed out after {} ms", timeout.as_millis());
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(failed(last))
    }

    /// Whether the connection can carry another request: reusable, and not closed by the peer
    /// while idle (a peek that would block means it is still open and quiet).
    pub fn alive(&mut self) -> bool {
        if !self.reusable
            || !self.reader.buffer().is_empty()
            || self.idle_since.elapsed() > REUSE_IDLE_LIMIT
        {
            return false;
        }
        let stream = self.reader.get_mut();
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        let open =
            matches!(stream.peek(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        open && stream.set_nonblocking(false).is_ok()
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
        let mut head = format!(
            "{method} {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
            url.path,
            url.authority,
            body.len()
        );
        for (name, value) in headers {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        self.reusable = false; // until the response is read whole
        let stream = self.reader.get_mut();
        let _ = stream.set_write_timeout(Some(remaining(deadline).max(Duration::from_millis(1))));
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body))
            .and_then(|()| stream.flush())
            .map_err(|e| HttpError::Send(e.to_string()))?;
        let status_line = self.read_line(deadline, cancelled)?;
        let status = status_line
            .strip_prefix("HTTP/1.")
            .and_then(|rest| rest.get(2..5))
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| HttpError::Answer(format!("not an HTTP answer: {status_line:?}")))?;
        let mut headers = Vec::new();
        let mut size = status_line.len();
        loop {
            let line = self.read_line(deadline, cancelled)?;
            if line.is_empty() {
                break;
            }
            size += line.len();
            if size > MAX_HEADER {
                return Err(HttpError::Answer(
                    "the answer's headers are too long".into(),
                ));
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
        let find = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let keep_alive = !find("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let body = if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            Body::Chunked(self, ChunkState::default())
        } else if let Some(length) = find("content-length") {
            let length = length
                .parse::<usize>()
                .map_err(|_| HttpError::Answer(format!("bad Content-Length {length:?}")))?;
            if length > MAX_BODY {
                return Err(HttpError::TooLarge {
                    bytes: Some(length as u64),
                });
            }
            Body::Length(self, length)
        } else if status == 204 || status == 304 || (100..200).contains(&status) {
            Body::Length(self, 0)
        } else {
            Body::Close(self)
        };
        let mut response = Response {
            status,
            headers,
            body,
        };
        if keep_alive {
            if let Body::Length(conn, _) | Body::Chunked(conn, _) = &mut response.body {
                conn.reusable = true;
            }
        }
        Ok(response)
    }

    fn read_line(
        &mut self,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<String, HttpError> {
        let mut line = Vec::new();
        loop {
            self.wait_readable(deadline, cancelled)?;
            let available = match self.reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if is_timeout(&e) => continue,
                Err(e) => return Err(HttpError::Answer(e.to_string())),
            };
            if available.is_empty() {
                return Err(HttpError::Answer("the connection closed".into()));
            }
            match available.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    line.extend_from_slice(&available[..i]);
                    self.reader.consume(i + 1);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    return String::from_utf8(line)
                        .map_err(|_| HttpError::Answer("a header line is not UTF-8".into()));
                }
                None => {
                    let n = available.len();
                    line.extend_from_slice(available);
                    self.reader.consume(n);
                    if line.len() > MAX_HEADER {
                        return Err(HttpError::Answer("a line of the answer is too long".into()));
                    }
                }
            }
        }
    }

    fn read_upto(
        &mut self,
        max: usize,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<Vec<u8>, HttpError> {
        loop {
            self.wait_readable(deadline, cancelled)?;
            let mut buf = vec![0u8; max.min(64 * 1024)];
            match self.reader.read(&mut buf) {
                Ok(n) => {
                    buf.truncate(n);
                    return Ok(buf);
                }
                Err(e) if is_timeout(&e) => continue,
                Err(e) => return Err(HttpError::Answer(e.to_string())),
            }
        }
    }

    /// Sets the next read's timeout to the next slice, or fails at the deadline or a cancel.
    fn wait_readable(
        &mut self,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<(), HttpError> {
        if cancelled.load(Ordering::Relaxed) {
            return Err(HttpError::Cancelled);
        }
        let left = remaining(deadline);
        if left.is_zero() {
            return Err(HttpError::Timeout);
        }
        let _ = self
            .reader
            .get_ref()
            .set_read_timeout(Some(left.min(SLICE)));
        Ok(())
    }
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn urls() {
        let url = Url::parse("http://127.0.0.2:7070/mcp").expect("url");
        assert_eq!(
            (url.host.as_str(), url.port, url.path.as_str()),
            ("127.0.0.2", 7070, "/mcp")
        );
        assert_eq!(url.authority, "127.0.0.2:7070");
        let url = Url::parse("http://relay").expect("url");
        assert_eq!((url.port, url.path.as_str()), (80, "/"));
        let url = Url::parse("http://[::1]:9/x").expect("url");
        assert_eq!((url.host.as_str(), url.port), ("::1", 9));
        assert!(Url::parse("https://a/mcp")
            .expect_err("tls")
            .to_string()
            .contains("https"));
        assert!(Url::parse("ftp://a").is_err());
        assert!(Url::parse("http://u:p@a/").is_err());
        assert!(Url::parse("http://a:x/").is_err());
    }

    /// A one-shot server that answers every request with `answers` in turn.
    fn serve(answers: Vec<&'static str>) -> Url {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            let (stream, _) = listener.accept().expect("accept");
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut writer = stream;
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
                reader.read_exact(&mut body).expect("body");
                writer.write_all(answer.as_bytes()).expect("answer");
            }
        });
        Url::parse(&format!("http://127.0.0.1:{port}/mcp")).expect("url")
    }

    #[test]
    fn length_and_chunked_bodies_on_one_connection() {
        let url = serve(vec![
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
        ]);
        let cancelled = AtomicBool::new(false);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut conn = Conn::connect(&url, Duration::from_secs(1)).expect("connect");
        let mut first = conn
            .exchange(&url, "POST", &[], b"{}", deadline, &cancelled)
            .expect("first");
        assert_eq!(first.status, 200);
        assert_eq!(first.header("x-a"), Some("b"));
        assert_eq!(
            first.read_all(deadline, &cancelled).expect("body"),
            b"hello"
        );
        drop(first);
        assert!(conn.alive());
        let mut second = conn
            .exchange(&url, "POST", &[], b"{}", deadline, &cancelled)
            .expect("second");
        assert_eq!(
            second.read_all(deadline, &cancelled).expect("body"),
            b"abcde"
        );
    }

    #[test]
    fn connect_failures_are_before_send_and_silence_is_a_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let url = Url::parse(&format!("http://127.0.0.1:{port}/mcp")).expect("url");
        let err = Conn::connect(&url, Duration::from_secs(1))
            .err()
            .expect("refused");
        assert!(err.is_before_send(), "{err}");
        // A peer that accepts and never answers.
        let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = Url::parse(&format!(
            "http://{}/mcp",
            silent.local_addr().expect("addr")
        ))
        .expect("url");
        let cancelled = AtomicBool::new(false);
        let mut conn = Conn::connect(&url, Duration::from_secs(1)).expect("connect");
        let started = Instant::now();
        let err = conn
            .exchange(
                &url,
                "POST",
                &[],
                b"{}",
                Instant::now() + Duration::from_millis(300),
                &cancelled,
            )
            .err()
            .expect("timeout");
        assert!(matches!(err, HttpError::Timeout), "{err}");
        assert!(!err.is_before_send());
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
