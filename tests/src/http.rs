//! Test support for `coremcp serve`: start a real server on a free port, and a tiny blocking
//! HTTP/1.1 client over `std::net::TcpStream` (one connection per request, `Connection: close`;
//! `Content-Length` and chunked bodies; SSE events read one at a time). Every read has a
//! deadline, so a broken server fails a test instead of hanging the suite.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{coremcp, scratch_data_dir, WAIT};

/// A running `coremcp serve`.
pub struct Serve {
    child: Child,
    /// Where it listens (read from its start line).
    pub addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Serve {
    /// Starts `coremcp serve --plugins DIR --listen 127.0.0.1:0 EXTRA…` and waits until it
    /// listens.
    pub fn start(plugins: &Path, extra: &[&str]) -> Self {
        Self::start_on(plugins, "127.0.0.1:0", extra, &[])
    }

    /// Starts `coremcp serve --plugins DIR --listen LISTEN EXTRA…` with `env` added.
    pub fn start_on(plugins: &Path, listen: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        #[allow(clippy::disallowed_methods)] // Tests start the binary under test directly.
        let mut command = Command::new(coremcp());
        let mut child = command
            .arg("serve")
            .arg("--plugins")
            .arg(plugins)
            .args(["--listen", listen])
            .args(extra)
            .env("COREMCP_DATA", scratch_data_dir())
            .envs(crate::harness_env().iter().copied())
            .envs(env.iter().copied())
            .env_remove("COREMCP_GROUPS")
            .env_remove("COREMCP_TOKENS")
            .env_remove("COREMCP_LISTEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start coremcp serve");
        let mut pipe = child.stderr.take().expect("stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let writer = Arc::clone(&stderr);
        thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                writer
                    .lock()
                    .expect("stderr")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let deadline = Instant::now() + WAIT;
        let addr = loop {
            let text = stderr.lock().expect("stderr").clone();
            if let Some(addr) = text
                .split("listening on ")
                .nth(1)
                .and_then(|rest| {
                    rest.strip_prefix("http://")
                        .or(rest.strip_prefix("https://"))
                })
                .and_then(|rest| rest.split("/mcp").next())
                .and_then(|a| a.parse().ok())
            {
                break addr;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("coremcp serve exited ({status}) before listening:\n{text}");
            }
            assert!(
                Instant::now() < deadline,
                "coremcp serve never said where it listens:\n{text}"
            );
            thread::sleep(Duration::from_millis(10));
        };
        Self {
            child,
            addr,
            stderr,
        }
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr").clone()
    }

    /// Waits until stderr contains `needle`.
    pub fn wait_stderr(&self, needle: &str, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        loop {
            let text = self.stderr();
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "stderr never said {needle:?}:\n{text}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends the server a signal.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on the child we started; it touches no memory of ours.
        let rc = unsafe { libc::kill(self.pid() as libc::pid_t, signal) };
        assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Waits (bounded) for the process to exit; its exit code.
    pub fn wait_exit(&mut self, wait: Duration) -> Option<i32> {
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// An MCP client of this server.
    pub fn client(&self) -> Client {
        Client::new(self.addr)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header names in lowercase, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}), status {}: {}", self.status, self.text()))
    }

    /// The JSON messages of an SSE body, in order.
    pub fn events(&self) -> Vec<Value> {
        sse_messages(&self.text())
    }
}

/// The `data:` of each event in an SSE text, parsed as JSON (comments, and priming events
/// whose data is empty, skipped — as SSE clients do).
pub fn sse_messages(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            (!data.concat().is_empty()).then(|| {
                serde_json::from_str(&data.join("\n"))
                    .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {event}"))
            })
        })
        .collect()
}

/// Connects to `to` from the loopback address `from` (a second "machine"), with a read
/// deadline.
pub fn connect_from(from: std::net::Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(to) = to else {
        return Err(std::io::Error::other("IPv4 only"));
    };
    let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let (source, target) = (sockaddr(from, 0), sockaddr(*to.ip(), to.port()));
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a new socket of ours; bind and connect read the local address structs; the
    // descriptor is owned by the TcpStream from then on (or closed here on failure).
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let bound = libc::bind(fd, (&source as *const libc::sockaddr_in).cast(), len);
        if bound != 0 || libc::connect(fd, (&target as *const libc::sockaddr_in).cast(), len) != 0 {
            let err = std::io::Error::last_os_error();
            libc::close(fd);
            return Err(err);
        }
        let stream = TcpStream::from_raw_fd(fd);
        stream.set_read_timeout(Some(WAIT))?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}

/// Raises this process's descriptor limit to its hard limit (a test that holds a thousand
/// sockets needs more than the usual 1 024).
pub fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the local struct only.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Connects with a read deadline.
fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
    stream.set_read_timeout(Some(WAIT)).expect("timeout");
    stream.set_nodelay(true).expect("nodelay");
    stream
}

/// The request head; `Host` is the address unless `headers` names one (an empty value leaves
/// a header out).
fn head(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> String {
    let mut text = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        text.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        if !value.is_empty() {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    text
}

/// Sends one request (`Connection: close`) and reads the whole response.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut stream = connect(addr);
    let mut text = head(addr, method, path, headers);
    text.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(text.as_bytes()).expect("write head");
    stream.write_all(body).expect("write body");
    read_response(BufReader::new(stream))
}

/// Sends only a request head (the caller writes the body, or not) and returns the stream.
pub fn send_head(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> TcpStream {
    let mut stream = connect(addr);
    let mut text = head(addr, method, path, headers);
    text.push_str("\r\n");
    stream.write_all(text.as_bytes()).expect("write head");
    stream
}

/// Reads a status line and headers.
fn read_head<R: BufRead>(reader: &mut R) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header line");
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    (status, headers)
}

/// Reads a whole response (a 1xx interim response is skipped).
pub fn read_response<R: BufRead>(mut reader: R) -> Response {
    let (status, headers) = loop {
        let (status, headers) = read_head(&mut reader);
        if !(100..200).contains(&status) {
            break (status, headers);
        }
    };
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    if response.header("transfer-encoding") == Some("chunked") {
        let mut body = Body {
            reader,
            chunked: true,
            left: None,
        };
        while let Some(chunk) = body.next_chunk() {
            response.body.extend_from_slice(&chunk);
        }
    } else if let Some(len) = response.header("content-length") {
        let len: usize = len.parse().expect("content-length");
        response.body.resize(len, 0);
        reader.read_exact(&mut response.body).expect("body");
    } else {
        reader.read_to_end(&mut response.body).expect("body");
    }
    response
}

/// A response body read chunk by chunk.
struct Body<R> {
    reader: R,
    chunked: bool,
    /// Bytes left of a `Content-Length` body.
    left: Option<usize>,
}

impl<R: BufRead> Body<R> {
    /// The next piece of the body, or `None` at its end.
    fn next_chunk(&mut self) -> Option<Vec<u8>> {
        if !self.chunked {
            if self.left == Some(0) {
                return None;
            }
            let mut buf = vec![0u8; 8192.min(self.left.unwrap_or(8192))];
            let n = self.reader.read(&mut buf).ok()?;
            if n == 0 {
                return None;
            }
            buf.truncate(n);
            if let Some(left) = &mut self.left {
                *left -= n;
            }
            return Some(buf);
        }
        let mut line = String::new();
        self.reader.read_line(&mut line).ok()?;
        let size = usize::from_str_radix(line.trim().split(';').next()?, 16).ok()?;
        if size == 0 {
            return None;
        }
        let mut chunk = vec![0u8; size];
        self.reader.read_exact(&mut chunk).ok()?;
        let mut crlf = [0u8; 2];
        self.reader.read_exact(&mut crlf).ok()?;
        Some(chunk)
    }
}

/// An open event stream (a GET stream, or a POST answered as SSE), read event by event.
pub struct EventStream {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    body: Body<BufReader<TcpStream>>,
    buffer: String,
}

impl EventStream {
    /// Sends a request and reads the response head; the body is read by [`EventStream::next`].
    pub fn open(
        addr: SocketAddr,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Self {
        let mut stream = connect(addr);
        let mut text = head(addr, method, path, headers);
        text.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(text.as_bytes()).expect("write head");
        stream.write_all(body).expect("write body");
        let mut reader = BufReader::new(stream);
        let (status, headers) = read_head(&mut reader);
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v == "chunked");
        let left = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok());
        Self {
            status,
            headers,
            body: Body {
                reader,
                chunked,
                left,
            },
            buffer: String::new(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The next raw event (comments included), or `None` when the stream ends.
    pub fn next_raw(&mut self) -> Option<String> {
        loop {
            if let Some(at) = self.buffer.find("\n\n") {
                let event = self.buffer[..at + 2].to_owned();
                self.buffer.drain(..at + 2);
                return Some(event);
            }
            let chunk = self.body.next_chunk()?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The next JSON-RPC message (comments skipped), or `None` when the stream ends.
    pub fn next_message(&mut self) -> Option<Value> {
        loop {
            let event = self.next_raw()?;
            if let Some(message) = sse_messages(&event).into_iter().next() {
                return Some(message);
            }
        }
    }

    /// Waits for a message with this method (others are skipped).
    pub fn wait_for(&mut self, method: &str) -> Value {
        loop {
            match self.next_message() {
                Some(message) if message["method"] == method => return message,
                Some(_) => {}
                None => panic!("the stream ended before {method}"),
            }
        }
    }
}

/// An MCP client over Streamable HTTP.
pub struct Client {
    pub addr: SocketAddr,
    pub session: Option<String>,
    pub token: Option<String>,
    pub accept: String,
    next_id: u64,
}

impl Client {
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            session: None,
            token: None,
            accept: "application/json, text/event-stream".to_owned(),
            next_id: 0,
        }
    }

    /// The headers every message carries: Accept, Content-Type, the session, the version and
    /// the token (when set).
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![
            ("Accept".to_owned(), self.accept.clone()),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id".to_owned(), session.clone()));
            headers.push(("MCP-Protocol-Version".to_owned(), "2025-06-18".to_owned()));
        }
        if let Some(token) = &self.token {
            headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
        }
        headers
    }

    /// POSTs one message with the client's headers plus `extra`.
    pub fn post_with(&self, message: &Value, extra: &[(&str, &str)]) -> Response {
        let owned = self.headers();
        let mut headers: Vec<(&str, &str)> = owned
            .iter()
            .filter(|(n, _)| !extra.iter().any(|(e, _)| e.eq_ignore_ascii_case(n)))
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        headers.extend_from_slice(extra);
        request(
            self.addr,
            "POST",
            "/mcp",
            &headers,
            message.to_string().as_bytes(),
        )
    }

    pub fn post(&self, message: &Value) -> Response {
        self.post_with(message, &[])
    }

    /// A request message with a fresh id.
    pub fn message(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
    }

    /// `initialize` (then `notifications/initialized`); keeps the session id; the result.
    pub fn initialize(&mut self) -> Value {
        self.initialize_with(json!({}))
    }

    /// [`Client::initialize`] declaring these client `capabilities`.
    pub fn initialize_with(&mut self, capabilities: Value) -> Value {
        let message = self.message(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                   "clientInfo": {"name": "coremcp-tests", "version": "0"}}),
        );
        let response = self.post(&message);
        assert_eq!(response.status, 200, "initialize: {}", response.text());
        self.session = Some(
            response
                .header("mcp-session-id")
                .expect("initialize answers with Mcp-Session-Id")
                .to_owned(),
        );
        let answer = single_answer(&response);
        let note = self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(note.status, 202, "initialized: {}", note.text());
        answer["result"].clone()
    }

    /// Sends a request; the answer (result or error), from a JSON or an SSE response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let message = self.message(method, params);
        let response = self.post(&message);
        assert_eq!(response.status, 200, "{method}: {}", response.text());
        let answer = single_answer(&response);
        assert_eq!(answer["id"], message["id"], "{answer}");
        answer
    }

    /// `tools/call`; the result (panics on a JSON-RPC error).
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        match answer.get("result") {
            Some(result) => {
                crate::check_answer(tool, result);
                result.clone()
            }
            None => panic!("{tool}: JSON-RPC error {answer}"),
        }
    }

    /// Opens the GET stream.
    pub fn listen(&self) -> EventStream {
        let owned = self.headers();
        let mut headers: Vec<(&str, &str)> = owned
            .iter()
            .filter(|(n, _)| n != "Accept" && n != "Content-Type")
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        headers.push(("Accept", "text/event-stream"));
        EventStream::open(self.addr, "GET", "/mcp", &headers, b"")
    }

    /// DELETE: ends the session.
    pub fn delete(&self) -> Response {
        let owned = self.headers();
        let headers: Vec<(&str, &str)> = owned
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        request(self.addr, "DELETE", "/mcp", &headers, b"")
    }
}

/// The one answer in a JSON or SSE response (the SSE one is its last event).
pub fn single_answer(response: &Response) -> Value {
    match response.header("content-type") {
        Some("application/json") => response.json(),
        Some("text/event-stream") => response
            .events()
            .pop()
            .unwrap_or_else(|| panic!("an event stream without events: {}", response.text())),
        other => panic!("unexpected content type {other:?}: {}", response.text()),
    }
}

/// A listener that records every HTTP request it receives (head and body, as text) and answers
/// each with `answer` (a whole HTTP response): the stand-in for whoever a test must prove
/// receives nothing it should not.
pub struct Recorder {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    /// Listens on `ip` (a free port) and answers every request with `answer`.
    pub fn start(ip: &str, answer: &'static [u8]) -> Self {
        let listener = std::net::TcpListener::bind((ip, 0)).expect("bind recorder");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let seen = Arc::clone(&seen);
                thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    // Requests on one kept-alive connection, one after another.
                    loop {
                        let mut head = String::new();
                        let mut line = String::new();
                        loop {
                            line.clear();
                            match reader.read_line(&mut line) {
                                Ok(0) | Err(_) => return,
                                Ok(_) => {}
                            }
                            head.push_str(&line);
                            if line == "\r\n" {
                                break;
                            }
                        }
                        let length = head
                            .lines()
                            .find_map(|l| {
                                let (name, value) = l.split_once(':')?;
                                name.eq_ignore_ascii_case("content-length")
                                    .then(|| value.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        let mut body = vec![0u8; length];
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        head.push_str(&String::from_utf8_lossy(&body));
                        seen.lock().expect("requests").push(head);
                        if stream.write_all(answer).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self { addr, requests }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("requests").clone()
    }
}
