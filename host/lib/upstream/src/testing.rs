//! What the unit tests of the HTTP transports ([`super::http`], [`super::sse`]) share: a tiny
//! std-only HTTP/1.1 test server whose handler writes each answer itself, reply helpers, a
//! polling wait, and the halves (server and client) of the tests whose bodies are the same for
//! both transports: requests in flight at once ([`SlowFast`]) and cancellation ([`Hangs`]).
//!
//! Invariants: test-only (`#[cfg(test)]`); nothing here touches the network beyond 127.0.0.1,
//! and every wait is bounded (a failing test fails, it never hangs).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::rpc::UpstreamError;
use super::wait::lock;

/// A transport's `request` (method, params, timeout, cancel flag), as the shared tests call it.
pub type Request<T> = fn(&T, &str, Value, Duration, &AtomicBool) -> Result<Value, UpstreamError>;

/// One request the test server read.
pub(crate) struct Seen {
    pub verb: String,
    pub headers: Vec<(String, String)>,
    /// The JSON body (`null` when there is none, or it is not JSON).
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC method of the body, or "".
    pub fn method(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

/// An HTTP/1.1 server on 127.0.0.1 (a thread per connection, kept alive) whose `handler`
/// writes each answer itself; its base URL (`http://127.0.0.1:PORT`).
pub fn serve<F>(handler: F) -> String
where
    F: Fn(&Seen, &mut TcpStream) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let handler = Arc::new(handler);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let handler = Arc::clone(&handler);
            thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                while let Some(seen) = read_request(&mut reader) {
                    handler(&seen, &mut stream);
                }
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let verb = line.split(' ').next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        verb,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// Writes a complete answer: `status`, the `extra` headers, and `body` as JSON (none when
/// `null`).
pub fn reply(stream: &mut TcpStream, status: u16, extra: &[(&str, &str)], body: &Value) {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(format!("{head}{body}").as_bytes());
}

/// Answers 202 Accepted with no body.
pub fn accepted(stream: &mut TcpStream) {
    reply(stream, 202, &[], &Value::Null);
}

/// The JSON-RPC response to `seen` with `result`.
pub fn result(seen: &Seen, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": result})
}

/// Waits up to `limit` for `done`; whether it came.
pub fn until(limit: Duration, done: impl Fn() -> bool) -> bool {
    let end = Instant::now() + limit;
    while !done() {
        if Instant::now() >= end {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Compiles only when `T` can be shared between threads.
pub(crate) fn shareable<T: Send + Sync>() {}

/// Requests in flight at once do not wait for each other: "slow" is answered only once "fast",
/// sent after it, was. The server half is [`SlowFast::server`], the client half
/// [`SlowFast::check`].
#[derive(Clone, Default)]
pub(crate) struct SlowFast {
    slow_seen: Arc<AtomicBool>,
    fast_answered: Arc<AtomicBool>,
}

impl SlowFast {
    /// A handler for [`serve`] that answers "slow" (`{"after_fast": …}`, once "fast" was
    /// answered or 5 s passed) and "fast" (`{"fast": true}`) with `answer(request, stream,
    /// result)`, and anything else 202 Accepted.
    pub fn server<A>(&self, answer: A) -> impl Fn(&Seen, &mut TcpStream) + Send + Sync + 'static
    where
        A: Fn(&Seen, &mut TcpStream, Value) + Send + Sync + 'static,
    {
        let this = self.clone();
        move |seen, stream| match seen.method() {
            "slow" => {
                this.slow_seen.store(true, Ordering::SeqCst);
                let after = until(Duration::from_secs(5), || {
                    this.fast_answered.load(Ordering::SeqCst)
                });
                answer(seen, stream, json!({"after_fast": after}));
            }
            "fast" => {
                answer(seen, stream, json!({"fast": true}));
                this.fast_answered.store(true, Ordering::SeqCst);
            }
            _ => accepted(stream),
        }
    }

    /// Sends "slow" from another thread and, once the server has it, "fast": fast must be
    /// answered within 3 s, and slow after it.
    pub fn check<T: Send + Sync + 'static>(&self, t: &Arc<T>, request: Request<T>) {
        let slow = {
            let t = Arc::clone(t);
            thread::spawn(move || {
                let never = AtomicBool::new(false);
                request(&t, "slow", json!({}), Duration::from_secs(10), &never)
            })
        };
        assert!(until(Duration::from_secs(5), || self
            .slow_seen
            .load(Ordering::SeqCst)));
        let started = Instant::now();
        let never = AtomicBool::new(false);
        let fast = request(t, "fast", json!({}), Duration::from_secs(10), &never).expect("fast");
        assert_eq!(fast, json!({"fast": true}));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "fast waited for slow"
        );
        let slow = slow.join().expect("thread").expect("slow");
        assert_eq!(slow, json!({"after_fast": true}));
    }
}

/// A request given up is told to the server: the server half ([`Hangs::server`]) notes the
/// "hang" requests (never answered) and `notifications/cancelled`; the client halves are
/// [`Hangs::cancel`] and [`Hangs::time_out`].
#[derive(Clone, Default)]
pub(crate) struct Hangs {
    /// The id of the last "hang" request.
    hung: Arc<Mutex<Option<Value>>>,
    /// The params of every `notifications/cancelled`.
    told: Arc<Mutex<Vec<Value>>>,
}

impl Hangs {
    /// A handler for [`serve`] that notes what it got and answers 202 Accepted, except "hang"
    /// unless `accept_hang` (then it gets no HTTP answer at all: the connection stays open until
    /// the client drops it).
    pub fn server(
        &self,
        accept_hang: bool,
    ) -> impl Fn(&Seen, &mut TcpStream) + Send + Sync + 'static {
        let this = self.clone();
        move |seen, stream| {
            let method = seen.method();
            match method {
                "hang" => *lock(&this.hung) = Some(seen.body["id"].clone()),
                "notifications/cancelled" => lock(&this.told).push(seen.body["params"].clone()),
                _ => {}
            }
            if accept_hang || method != "hang" {
                accepted(stream);
            }
        }
    }

    /// Sends "hang" and sets its cancel flag 100 ms after the server got it: the call must end
    /// cancelled within 1.5 s of that, and the server be told once, with its id and a reason.
    /// Then a call whose flag is set before it starts ends cancelled at once.
    pub fn cancel<T>(&self, t: &T, request: Request<T>) {
        let cancel = Arc::new(AtomicBool::new(false));
        let setter = {
            let (cancel, hung) = (Arc::clone(&cancel), Arc::clone(&self.hung));
            thread::spawn(move || {
                assert!(until(Duration::from_secs(5), || lock(&hung).is_some()));
                thread::sleep(Duration::from_millis(100));
                cancel.store(true, Ordering::SeqCst);
                Instant::now()
            })
        };
        let err =
            request(t, "hang", json!({}), Duration::from_secs(30), &cancel).expect_err("cancelled");
        let ended = Instant::now();
        let set = setter.join().expect("setter");
        assert!(
            matches!(&err, UpstreamError::Cancelled { method } if method == "hang"),
            "{err}"
        );
        assert!(
            ended - set < Duration::from_millis(1500),
            "{:?}",
            ended - set
        );
        let id = lock(&self.hung)
            .clone()
            .expect("the request reached the server");
        assert!(until(Duration::from_secs(2), || !lock(&self.told).is_empty()));
        let told = lock(&self.told).clone();
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0]["requestId"], id);
        assert!(told[0]["reason"].is_string());
        let err =
            request(t, "hang", json!({}), Duration::from_secs(30), &cancel).expect_err("cancelled");
        assert!(matches!(err, UpstreamError::Cancelled { .. }), "{err}");
    }

    /// Sends "hang" with a 300 ms timeout: the call must end timed out within 2 s, and the
    /// server be told about request `id`.
    pub(crate) fn time_out<T>(&self, t: &T, request: Request<T>, id: u64) {
        let before = lock(&self.told).len();
        let never = AtomicBool::new(false);
        let started = Instant::now();
        let err =
            request(t, "hang", json!({}), Duration::from_millis(300), &never).expect_err("timeout");
        assert!(
            matches!(&err, UpstreamError::Timeout { method, .. } if method == "hang"),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(until(Duration::from_secs(2), || lock(&self.told).len() > before));
        assert_eq!(lock(&self.told)[before]["requestId"], id);
    }
}
