//! The service driven with in-memory requests: every rule of the transport that needs no
//! plugin and no socket. (The integration suite drives a real `coremcp serve`.)

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::HeaderMap;
use hyper::{Request, StatusCode};
use serde_json::{json, Value};

use super::auth::{Principal, Tokens};
use super::Service;
use crate::config::Config;
use coremcp_engine::PluginSet;
use coremcp_upstream::hub::Upstreams;

/// A folder removed on drop (an empty plugins folder for the tests here).
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "coremcp-http-unit-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("create scratch dir");
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const TOKENS: &str = "ci 0123456789abcdef0123\n";
const HOST: &str = "127.0.0.1:7070";

struct Harness {
    _scratch: Scratch,
    service: Service,
    runtime: tokio::runtime::Runtime,
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

fn harness(tokens: Option<&str>) -> Harness {
    let scratch = Scratch::new();
    let config = Config::with_plugins(scratch.path().to_owned());
    let plugins = Arc::new(PluginSet::discover(&config.engine()).expect("discover"));
    let tokens = tokens.map(|t| Tokens::parse(t, "tokens").expect("tokens"));
    let service = Service::new(
        config,
        plugins,
        Upstreams::none(),
        tokens,
        None,
        HOST.parse().expect("addr"),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    Harness {
        _scratch: scratch,
        service,
        runtime,
    }
}

impl Harness {
    /// Sends a request with the usual headers (Host, Accept of both, JSON content), each of
    /// which `headers` may replace (an empty value removes it).
    fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut builder = Request::builder().method(method).uri(path);
        let defaults = [
            ("host", HOST),
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
        ];
        for (name, value) in defaults {
            if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                builder = builder.header(name, value);
            }
        }
        for (name, value) in headers {
            if !value.is_empty() {
                builder = builder.header(*name, *value);
            }
        }
        let request = builder
            .body(Full::new(Bytes::from(body.to_owned())))
            .expect("request");
        self.runtime.block_on(async {
            let response = self.service.handle(request).await;
            let (parts, body) = response.into_parts();
            let bytes = body.collect().await.expect("infallible").to_bytes();
            Reply {
                status: parts.status,
                headers: parts.headers,
                body: String::from_utf8(bytes.to_vec()).expect("utf-8"),
            }
        })
    }

    fn post(&self, headers: &[(&str, &str)], message: Value) -> Reply {
        self.send("POST", "/mcp", headers, &message.to_string())
    }

    /// `initialize`; the session id.
    fn initialize(&self, headers: &[(&str, &str)]) -> String {
        let reply = self.post(
            headers,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "unit", "version": "0"}}}),
        );
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(reply.json()["result"]["protocolVersion"], "2025-06-18");
        reply
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned()
    }
}

fn request(id: u64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}})
}

#[test]
fn initialize_creates_a_session_that_later_requests_name() {
    let h = harness(None);
    let id = h.initialize(&[]);
    assert_eq!(id.len(), 32);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    let session = h.service.sessions().get(&id).expect("in the table");
    assert_eq!(session.principal(), &Principal::Local);

    let with = [
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let ping = h.post(&with, request(2, "ping"));
    assert_eq!(ping.status, StatusCode::OK);
    assert_eq!(
        ping.json(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );
    assert!(
        ping.header("mcp-session-id").is_none(),
        "only initialize sets it"
    );

    let list = h.post(&with, request(3, "tools/list"));
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.json()["result"]["tools"].is_array(), "{}", list.body);
    assert!(!list.body.contains("null"), "{}", list.body);

    let unknown = h.post(&with, request(4, "resources/list"));
    assert_eq!(unknown.json()["error"]["code"], -32601);

    let notified = h.post(
        &with,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(notified.status, StatusCode::ACCEPTED);
    assert_eq!(notified.body, "");
    let response = h.post(&with, json!({"jsonrpc": "2.0", "id": 9, "result": {}}));
    assert_eq!(response.status, StatusCode::ACCEPTED);
}

#[test]
fn sessions_are_required_known_and_of_a_supported_version() {
    let h = harness(None);
    let id = h.initialize(&[]);
    let missing = h.post(&[], request(2, "ping"));
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.json()["id"], 2);
    assert!(missing.json()["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("Mcp-Session-Id")));
    let note = h.post(
        &[],
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(note.status, StatusCode::BAD_REQUEST);

    let unknown = h.post(
        &[("mcp-session-id", "00000000000000000000000000000000")],
        request(3, "ping"),
    );
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);

    let bad = h.post(
        &[
            ("mcp-session-id", &id),
            ("mcp-protocol-version", "2099-01-01"),
        ],
        request(4, "ping"),
    );
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let message = bad.json()["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        message.contains("2099-01-01") && message.contains("2025-06-18"),
        "{message}"
    );

    // No header: 2025-03-26 is assumed, which we speak.
    let assumed = h.post(&[("mcp-session-id", &id)], request(5, "ping"));
    assert_eq!(assumed.status, StatusCode::OK);
}

#[test]
fn delete_ends_the_session() {
    let h = harness(None);
    let id = h.initialize(&[]);
    let with = [("mcp-session-id", id.as_str())];
    assert_eq!(h.send("DELETE", "/mcp", &with, "").status, StatusCode::OK);
    assert_eq!(
        h.post(&with, request(2, "ping")).status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        h.send("DELETE", "/mcp", &with, "").status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        h.send("DELETE", "/mcp", &[], "").status,
        StatusCode::BAD_REQUEST
    );
}

#[test]
fn the_get_stream_needs_its_accept_and_is_one_per_session() {
    let h = harness(None);
    let id = h.initialize(&[]);
    let plain = h.send(
        "GET",
        "/mcp",
        &[("mcp-session-id", &id), ("accept", "application/json")],
        "",
    );
    assert_eq!(plain.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(plain.header("allow"), Some("GET, POST, DELETE"));

    let session = h.service.sessions().get(&id).expect("session");
    let _open = session.router().listen().expect("a stream held open");
    let second = h.send(
        "GET",
        "/mcp",
        &[("mcp-session-id", &id), ("accept", "text/event-stream")],
        "",
    );
    assert_eq!(second.status, StatusCode::CONFLICT);

    let no_session = h.send("GET", "/mcp", &[("accept", "text/event-stream")], "");
    assert_eq!(no_session.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        h.send("PUT", "/mcp", &[], "").status,
        StatusCode::METHOD_NOT_ALLOWED
    );
}

#[test]
fn a_get_stream_opens_as_an_event_stream() {
    let h = harness(None);
    let id = h.initialize(&[]);
    let session = h.service.sessions().get(&id).expect("session");
    let request = Request::get("/mcp")
        .header("host", HOST)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .body(Full::new(Bytes::new()))
        .expect("request");
    let first = h.runtime.block_on(async {
        let response = h.service.handle(request).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers().get("content-type").map(|v| v.as_bytes()),
            Some(&b"text/event-stream"[..])
        );
        let mut body = response.into_body();
        crate::session::Outbox::send(
            session.router().as_ref(),
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}".to_owned(),
        );
        let frame = body.frame().await.expect("a frame").expect("infallible");
        String::from_utf8(frame.into_data().expect("data").to_vec()).expect("utf-8")
    });
    assert_eq!(
        first,
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
    );
}

#[test]
fn a_client_that_accepts_only_sse_gets_its_answers_as_events() {
    let h = harness(None);
    let reply = h.post(
        &[("accept", "text/event-stream")],
        json!({"jsonrpc": "2.0", "id": "a", "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "unit", "version": "0"}}}),
    );
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert!(reply.header("mcp-session-id").is_some());
    // A priming event (an id, no data), then the answer with the next id of the stream.
    let (priming, rest) = reply
        .body
        .split_once("\n\n")
        .unwrap_or_else(|| panic!("two events: {:?}", reply.body));
    assert!(
        priming.starts_with("id: s") && priming.ends_with("-0\nretry: 1000\ndata: "),
        "{priming:?}"
    );
    let data = rest
        .split_once("\nevent: message\ndata: ")
        .map(|(id, data)| {
            assert!(id.starts_with("id: s") && id.ends_with("-1"), "{id:?}");
            data
        })
        .and_then(|data| data.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("one message: {rest:?}"));
    let answer: Value = serde_json::from_str(data).expect("JSON");
    assert_eq!(answer["id"], "a");
    assert!(answer["result"]["capabilities"]["tools"].is_object());
}

#[test]
fn bad_bodies_and_headers_are_refused_with_a_reason() {
    let h = harness(None);
    let garbage = h.send("POST", "/mcp", &[], "{not json");
    assert_eq!(garbage.status, StatusCode::BAD_REQUEST);
    assert_eq!(garbage.json()["error"]["code"], -32700);
    assert_eq!(garbage.json()["id"], Value::Null);
    let batch = h.send("POST", "/mcp", &[], "[]");
    assert_eq!(batch.status, StatusCode::BAD_REQUEST);
    assert_eq!(batch.json()["error"]["code"], -32600);

    let huge = h.send(
        "POST",
        "/mcp",
        &[("content-length", &(8 * 1024 * 1024 + 1).to_string())],
        "",
    );
    assert_eq!(huge.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(huge.header("connection"), Some("close"));

    let html = h.post(&[("accept", "text/html")], request(1, "initialize"));
    assert_eq!(html.status, StatusCode::NOT_ACCEPTABLE);
    let text = h.post(&[("content-type", "text/plain")], request(1, "initialize"));
    assert_eq!(text.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[test]
fn dns_rebinding_is_refused() {
    let h = harness(None);
    let init = request(1, "initialize");
    let host = h.post(&[("host", "evil.example:7070")], init.clone());
    assert_eq!(host.status, StatusCode::FORBIDDEN);
    let origin = h.post(&[("origin", "http://evil.example")], init.clone());
    assert_eq!(origin.status, StatusCode::FORBIDDEN);
    assert!(origin.body.contains("evil.example"), "{}", origin.body);
    let wrong_port = h.post(&[("host", "localhost:7071")], init.clone());
    assert_eq!(wrong_port.status, StatusCode::FORBIDDEN);
    let local = h.post(
        &[
            ("host", "localhost:7070"),
            ("origin", "http://localhost:7070"),
        ],
        init,
    );
    assert_eq!(local.status, StatusCode::OK, "{}", local.body);
    let status = h.send("GET", "/api/status", &[("host", "evil.example")], "");
    assert_eq!(status.status, StatusCode::FORBIDDEN);
}

#[test]
fn other_paths_health_and_status() {
    let h = harness(None);
    for path in [
        "/index.html",
        "/mcp/",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        assert_eq!(
            h.send("GET", path, &[], "").status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    let health = h.send("GET", "/healthz", &[], "");
    assert_eq!(
        (health.status, health.body.as_str()),
        (StatusCode::OK, "ok\n")
    );
    let status = h.send("GET", "/api/status", &[], "");
    assert_eq!(status.status, StatusCode::OK);
    let doc = status.json();
    assert_eq!(doc["mode"], "proxy");
    assert!(doc["groups"].is_array() && doc["relays"].is_array() && doc["upstream"].is_array());
}

#[test]
fn the_page_is_served_without_a_token_and_the_metrics_with_one() {
    let h = harness(Some(TOKENS));
    let page = h.send("GET", "/", &[], "");
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(page
        .header("content-security-policy")
        .is_some_and(|p| p.contains("connect-src 'self'") && p.contains("frame-ancestors 'none'")));
    assert!(page.body.contains("/api/status") && page.body.contains("textContent"));
    assert!(
        !page.body.contains("innerHTML"),
        "untrusted text is never parsed as HTML"
    );
    assert_eq!(
        h.send("POST", "/", &[], "").status,
        StatusCode::METHOD_NOT_ALLOWED
    );

    assert_eq!(
        h.send("GET", "/metrics", &[], "").status,
        StatusCode::UNAUTHORIZED
    );
    let right = [("authorization", "Bearer 0123456789abcdef0123")];
    let metrics = h.send("GET", "/metrics", &right, "");
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(metrics
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/plain; version=0.0.4")));
    for family in ["coremcp_calls_in_flight", "coremcp_sessions_open"] {
        assert!(
            metrics.body.contains(&format!("# TYPE {family} gauge")),
            "{}",
            metrics.body
        );
    }
}

#[test]
fn the_status_with_hosts_says_why_they_cannot_be_read() {
    let h = harness(None);
    let plain = h.send("GET", "/api/status", &[], "").json();
    assert!(plain.get("hosts").is_none() && plain.get("hosts_error").is_none());
    let with = h.send("GET", "/api/status?hosts=true", &[], "").json();
    assert!(
        with["hosts_error"]
            .as_str()
            .is_some_and(|e| e.contains("registry")),
        "{with}"
    );
}

#[test]
fn a_reload_from_another_origin_is_refused() {
    let h = harness(None);
    let host = ("host", "localhost:7070");
    let foreign = h.send(
        "POST",
        "/api/mcp/refresh",
        &[host, ("origin", "http://localhost:9999")],
        "",
    );
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{}", foreign.body);
    assert!(foreign.body.contains("own page"), "{}", foreign.body);
    // Its own page, and a client that is not a browser, get past the guard (the upstream
    // client is off in this harness, which is what they are told).
    for headers in [
        &[host, ("origin", "http://localhost:7070")][..],
        &[host][..],
    ] {
        let own = h.send("POST", "/api/mcp/refresh", headers, "");
        assert_ne!(own.status, StatusCode::FORBIDDEN, "{}", own.body);
    }
}

#[test]
fn tokens_are_required_when_configured() {
    let h = harness(Some(TOKENS));
    let init = request(1, "initialize");
    let none = h.post(&[], init.clone());
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        none.header("www-authenticate"),
        Some("Bearer realm=\"coremcp\"")
    );
    let wrong = h.post(
        &[("authorization", "Bearer 0123456789abcdef0124")],
        init.clone(),
    );
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong
        .header("www-authenticate")
        .is_some_and(|c| c.starts_with("Bearer") && c.contains("invalid_token")));
    assert_eq!(
        h.send("GET", "/api/status", &[], "").status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(h.send("GET", "/healthz", &[], "").status, StatusCode::OK);

    let right = [("authorization", "Bearer 0123456789abcdef0123")];
    let id = h.initialize(&right);
    let session = h.service.sessions().get(&id).expect("session");
    assert_eq!(session.principal(), &Principal::Token("ci".into()));
    let ping = h.post(
        &[right[0], ("mcp-session-id", id.as_str())],
        request(2, "ping"),
    );
    assert_eq!(ping.status, StatusCode::OK);
}

#[test]
fn the_listener_needs_tokens_off_loopback() {
    let public = super::resolve_listen("0.0.0.0:7070").expect("addr");
    assert!(matches!(
        super::check_exposure(public, false),
        Err(super::ServeError::TokensRequired(_))
    ));
    assert!(super::check_exposure(public, true).is_ok());
    let local = super::resolve_listen("127.0.0.2:7070").expect("addr");
    assert!(super::check_exposure(local, false).is_ok());
    assert!(super::resolve_listen("[::1]:0").is_ok());
    assert!(matches!(
        super::resolve_listen("no port"),
        Err(super::ServeError::Address(_))
    ));
}
