//! MCP 2026-07-28 against 2025-06-18, in one run (issue: the stateless protocol): the same
//! `tools/call` of `fixture_echo` —
//!
//! 1. over stdio: a process that began with `initialize` against one that speaks 2026 (every
//!    request carries its `_meta` envelope, every answer gets `resultType`);
//! 2. over HTTP to one `coremcp serve`: a 2025 session (`Mcp-Session-Id` looked up on every
//!    POST) against sessionless 2026 POSTs (envelope and routing headers checked, the id
//!    replaced and put back).
//!
//! Both sides of each pair go through the same client code (a line-per-message pipe, a
//! keep-alive HTTP/1.1 connection), and their batches are interleaved so that a noisy machine
//! weighs on both alike. The budget: per-request `_meta` handling costs under 10 % at p50, and
//! a sessionless HTTP call is not slower than a session's.
//!
//! 3. in this process, what the 2026 handling itself costs per request — the envelope read and
//!    checked, `resultType` put into the answer — against the p50 of the 2025 call over stdio
//!    (end to end, a small machine decides which process its scheduler favours, which moves
//!    a p50 by more than the envelope costs: the figure of 1 says how much is the protocol's).
//!
//! usage: modern-bench --host <coremcp> --plugins <dir with the fixture> [--calls N]

#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use coremcp_bench::host_args::HostArgs;
use coremcp_bench::procs::{self, free_addr};
use coremcp_bench::stdio_client::StdioClient;
use serde_json::{json, Value};

const BATCH: usize = 100;

fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "modern-bench", "version": "0"}
    })
}

/// The text of a `tools/call` of `fixture_echo` after its id (`{"jsonrpc":"2.0","id":N` comes
/// first), made once: the clients of both eras only write the id, so the figures are the
/// server's, not the cost of building JSON in this driver.
fn call_tail(modern: bool) -> String {
    let mut params = json!({"name": "fixture_echo", "arguments": {"text": "x"}});
    if modern {
        params["_meta"] = envelope();
    }
    format!(",\"method\":\"tools/call\",\"params\":{params}}}")
}

fn call_message(id: u64, tail: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id}{tail}")
}

/// A status, the response headers (lowercase names) and the body.
type Reply = (u16, Vec<(String, String)>, String);

/// One keep-alive HTTP/1.1 connection, POSTing JSON-RPC messages to `/mcp`.
struct Http {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    addr: String,
}

impl Http {
    fn connect(addr: &str) -> Result<Self, String> {
        let stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let writer = stream.try_clone().map_err(|e| e.to_string())?;
        Ok(Self {
            reader: BufReader::new(stream),
            writer,
            addr: addr.to_owned(),
        })
    }

    /// POSTs `body` with `headers`; the status, the response headers and the body.
    fn post(&mut self, headers: &[(&str, &str)], body: &str) -> Result<Reply, String> {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        head.push_str(body);
        self.writer
            .write_all(head.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        self.reader
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or(format!("bad status line {line:?}"))?;
        let mut headers = Vec::new();
        let mut length = 0;
        loop {
            line.clear();
            self.reader
                .read_line(&mut line)
                .map_err(|e| e.to_string())?;
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            if let Some((name, value)) = trimmed.split_once(':') {
                let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_owned());
                if name == "content-length" {
                    length = value.parse().map_err(|_| "bad content-length")?;
                }
                headers.push((name, value));
            }
        }
        let mut body = vec![0u8; length];
        self.reader
            .read_exact(&mut body)
            .map_err(|e| e.to_string())?;
        Ok((
            status,
            headers,
            String::from_utf8(body).map_err(|e| e.to_string())?,
        ))
    }
}

fn check(answer: &Value) -> Result<(), String> {
    match answer.get("result") {
        Some(result) if result["isError"] != json!(true) => Ok(()),
        _ => Err(format!("fixture_echo: {answer}")),
    }
}

struct StdioEra {
    client: StdioClient,
    tail: String,
    next_id: u64,
}

impl StdioEra {
    fn start(opts: &Options, modern: bool) -> Result<Self, String> {
        let plugins = opts.plugins.to_str().ok_or("--plugins is not UTF-8")?;
        let args = ["--plugins", plugins];
        let client = match modern {
            true => StdioClient::start_bare(&opts.host, args)?,
            false => StdioClient::start(&opts.host, args, "modern-bench")?,
        };
        Ok(Self {
            client,
            tail: call_tail(modern),
            next_id: 1_000,
        })
    }

    fn call(&mut self) -> Result<(), String> {
        let id = self.next_id;
        self.next_id += 1;
        self.client.send_line(&call_message(id, &self.tail))?;
        check(&self.client.receive()?)
    }
}

struct HttpEra {
    http: Http,
    /// The 2025 session; `None`: 2026, sessionless.
    session: Option<String>,
    tail: String,
    next_id: u64,
}

impl HttpEra {
    fn legacy(addr: &str) -> Result<Self, String> {
        let mut http = Http::connect(addr)?;
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "modern-bench", "version": "0"}}});
        let (status, headers, body) = http.post(&[], &init.to_string())?;
        let session = headers
            .into_iter()
            .find(|(n, _)| n == "mcp-session-id")
            .map(|(_, v)| v)
            .ok_or(format!("initialize gave no session ({status}): {body}"))?;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        http.post(
            &[
                ("Mcp-Session-Id", &session),
                ("MCP-Protocol-Version", "2025-06-18"),
            ],
            &note.to_string(),
        )?;
        Ok(Self {
            http,
            session: Some(session),
            tail: call_tail(false),
            next_id: 1,
        })
    }

    fn modern(addr: &str) -> Result<Self, String> {
        Ok(Self {
            http: Http::connect(addr)?,
            session: None,
            tail: call_tail(true),
            next_id: 1,
        })
    }

    fn call(&mut self) -> Result<(), String> {
        let id = self.next_id;
        self.next_id += 1;
        let body = call_message(id, &self.tail);
        let (status, _, answer) = match &self.session {
            Some(session) => self.http.post(
                &[
                    ("Mcp-Session-Id", session),
                    ("MCP-Protocol-Version", "2025-06-18"),
                ],
                &body,
            )?,
            None => self.http.post(
                &[
                    ("MCP-Protocol-Version", "2026-07-28"),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "fixture_echo"),
                ],
                &body,
            )?,
        };
        if status != 200 {
            return Err(format!("status {status}: {answer}"));
        }
        check(&serde_json::from_str(&answer).map_err(|e| e.to_string())?)
    }
}

type Options = HostArgs;

fn parse_args() -> Result<Options, String> {
    HostArgs::parse(4000, BATCH * 2)
}

/// `calls` timed calls of each side, in interleaved batches after a warm-up; the p50 of each.
fn compare(
    calls: usize,
    mut old: impl FnMut() -> Result<(), String>,
    mut new: impl FnMut() -> Result<(), String>,
) -> Result<(Duration, Duration), String> {
    for _ in 0..BATCH {
        old()?;
        new()?;
    }
    let (mut a, mut b) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    while a.len() < calls {
        for _ in 0..BATCH {
            let t = Instant::now();
            old()?;
            a.push(t.elapsed());
        }
        for _ in 0..BATCH {
            let t = Instant::now();
            new()?;
            b.push(t.elapsed());
        }
    }
    a.sort();
    b.sort();
    Ok((a[a.len() / 2], b[b.len() / 2]))
}

/// The time per request of what a 2026 request adds on its way through: its envelope read and
/// checked (keys, version, log level) and `resultType` added to its answer (median of rounds).
fn envelope_cost() -> Duration {
    use coremcp_wire::modern;
    let message = call_message(7, &call_tail(true));
    let params: Value = serde_json::from_str::<Value>(&message).expect("json")["params"].clone();
    let params = serde_json::value::RawValue::from_string(params.to_string()).expect("raw");
    let answer = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"text\":\"x\"}"}],"structuredContent":{"text":"x"}}}"#;
    let mut rounds = Vec::new();
    for _ in 0..15 {
        let n = 20_000;
        let started = Instant::now();
        for _ in 0..n {
            let envelope = modern::envelope(Some(&params)).expect("envelope");
            modern::check_version(&envelope).expect("version");
            std::hint::black_box(modern::completed(std::hint::black_box(answer.to_owned())));
        }
        rounds.push(started.elapsed() / n);
    }
    rounds.sort();
    rounds[rounds.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn report(what: &str, old: Duration, new: Duration) {
    println!(
        "  {what:<34} 2025-06-18 p50 {:6.1} us   2026-07-28 p50 {:6.1} us   ({:.3}x)",
        us(old),
        us(new),
        new.as_secs_f64() / old.as_secs_f64()
    );
}

/// Processes started per era on stdio: which process a scheduler favours varies from one to
/// the next on a small shared machine, so each era's figure pools several.
const PROCESSES: usize = 6;

fn run(opts: &Options) -> Result<(), String> {
    let mut legacy = Vec::new();
    let mut modern = Vec::new();
    for _ in 0..PROCESSES {
        legacy.push(StdioEra::start(opts, false)?);
        modern.push(StdioEra::start(opts, true)?);
    }
    let (mut i, mut j) = (0, 0);
    let (old, new) = compare(
        opts.calls,
        || {
            i += 1;
            legacy[(i / BATCH) % PROCESSES].call()
        },
        || {
            j += 1;
            modern[(j / BATCH) % PROCESSES].call()
        },
    )?;
    println!(
        "fixture_echo, {} serial calls each, interleaved in batches of {BATCH}:",
        opts.calls
    );
    report(&format!("stdio ({PROCESSES} processes each)"), old, new);
    let per_request = envelope_cost();
    println!(
        "  the 2026 handling itself (envelope + resultType, in process): {:.2} us per request, \
         {:.1} % of the 2025 stdio p50",
        us(per_request),
        100.0 * per_request.as_secs_f64() / old.as_secs_f64()
    );

    let addr = free_addr("127.0.0.1")?;
    let _server = procs::serve(&opts.host, &opts.plugins, &addr, &[] as &[&str], &[])?;
    let mut legacy = HttpEra::legacy(&addr)?;
    let mut modern = HttpEra::modern(&addr)?;
    let (old, new) = compare(opts.calls, || legacy.call(), || modern.call())?;
    report("HTTP (session vs sessionless)", old, new);
    Ok(())
}

fn main() {
    let result = parse_args().and_then(|opts| run(&opts));
    if let Err(e) = result {
        eprintln!("modern-bench: {e}");
        std::process::exit(1);
    }
}
