//! Benchmark driver behind `scripts/bench`: measures the coremcp host against
//! the raw JSON-RPC echo floor over stdio pipes (serial round trip, pipelined
//! throughput, cold start to `tools/list`) and prints a ratio table plus
//! pass/fail verdicts against the performance targets. The serial round trips of the two
//! targets are interleaved in blocks on two live connections, so their ratio compares like
//! with like on a shared machine.
#![allow(clippy::print_stdout)]

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use memchr::memmem::Finder;

type Result<T, E = String> = std::result::Result<T, E>;

const USAGE: &str = "\
usage: coremcp-bench --floor <echo-floor> --host <coremcp> --plugins <dir>
                     [--calls N] [--pipelined N] [--inflight N] [--cold N]
                     [--warmup N] [--timeout SECS] [--show-stderr]

  --floor PATH     the echo-floor binary (the raw JSON-RPC floor)
  --host PATH      the coremcp binary, run as `coremcp stdio --plugins DIR --groups fixture`
  --plugins DIR    plugin directory holding the fixture plugin
  --calls N        serial tools/call round trips per target, interleaved with the other
                   target's in 20 blocks (default 20000)
  --pipelined N    pipelined tools/call calls per target (default 50000)
  --inflight N     requests kept outstanding when pipelining (default 16, max 128)
  --cold N         cold starts per target (default 30)
  --warmup N       serial warm-up calls before measuring (default 1000)
  --timeout SECS   watchdog per phase: kill children and exit 1 (default 120)
  --show-stderr    let the children's stderr through (default: /dev/null)";

const PROTOCOL_VERSION: &str = "2025-06-18";
const TOOL: &str = "fixture_echo";
const P50_TARGET: f64 = 3.0;
const PIPELINED_TARGET: f64 = 0.10;
const COLD_TARGET_MS: f64 = 20.0;
/// The pipelined phase writes and reads from one thread, so everything in
/// flight must fit in the pipe buffers (64 KiB each way) or both sides block.
const MAX_INFLIGHT: usize = 128;
/// The newline-free line sent to the host to show its memory stays bounded.
const OVERSIZE_MIB: usize = 100;

fn main() {
    match run() {
        Ok(()) => {}
        Err(e) => {
            WATCHDOG.kill_all();
            eprintln!("coremcp-bench: {e}");
            std::process::exit(1);
        }
    }
}

// ---------------------------------------------------------------- options

struct Options {
    floor: PathBuf,
    host: PathBuf,
    plugins: PathBuf,
    calls: usize,
    pipelined: usize,
    inflight: usize,
    cold: usize,
    warmup: usize,
    timeout: Duration,
    show_stderr: bool,
}

fn usage_error(msg: &str) -> ! {
    eprintln!("coremcp-bench: {msg}\n\n{USAGE}");
    std::process::exit(2);
}

fn parse_args() -> Options {
    let mut floor = None;
    let mut host = None;
    let mut plugins = None;
    let mut calls = 20_000;
    let mut pipelined = 50_000;
    let mut inflight = 16;
    let mut cold = 30;
    let mut warmup = 1_000;
    let mut timeout = 120;
    let mut show_stderr = false;

    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        let flag = arg.to_string_lossy().into_owned();
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        if flag == "--show-stderr" {
            show_stderr = true;
            continue;
        }
        let Some(value) = args.next() else {
            usage_error(&format!("{flag} needs a value"));
        };
        // Only the warm-up may be zero.
        let min = usize::from(flag != "--warmup");
        let number = |v: &OsString| -> usize {
            match v.to_str().and_then(|s| s.parse::<usize>().ok()) {
                Some(n) if n >= min => n,
                _ => usage_error(&format!("{flag} needs an integer >= {min}")),
            }
        };
        match flag.as_str() {
            "--floor" => floor = Some(PathBuf::from(value)),
            "--host" => host = Some(PathBuf::from(value)),
            "--plugins" => plugins = Some(PathBuf::from(value)),
            "--calls" => calls = number(&value),
            "--pipelined" => pipelined = number(&value),
            "--inflight" => inflight = number(&value),
            "--cold" => cold = number(&value),
            "--warmup" => warmup = number(&value),
            "--timeout" => timeout = number(&value) as u64,
            _ => usage_error(&format!("unknown argument {flag}")),
        }
    }
    let (Some(floor), Some(host), Some(plugins)) = (floor, host, plugins) else {
        usage_error("--floor, --host and --plugins are required");
    };
    if inflight > MAX_INFLIGHT {
        usage_error(&format!("--inflight is at most {MAX_INFLIGHT}"));
    }
    Options {
        floor,
        host,
        plugins,
        calls,
        pipelined,
        inflight,
        cold,
        warmup,
        timeout: Duration::from_secs(timeout),
        show_stderr,
    }
}

// ---------------------------------------------------------------- watchdog

/// Holds every live child and the current phase's deadline. A background
/// thread kills all children and exits non-zero once the deadline passes, so
/// no blocking read or write can hang the bench.
struct Watchdog {
    state: Mutex<WatchState>,
}

struct WatchState {
    deadline: Option<Instant>,
    phase: String,
    children: Vec<(u64, Child)>,
    next_token: u64,
}

static WATCHDOG: Watchdog = Watchdog {
    state: Mutex::new(WatchState {
        deadline: None,
        phase: String::new(),
        children: Vec::new(),
        next_token: 0,
    }),
};

impl Watchdog {
    fn lock(&self) -> MutexGuard<'_, WatchState> {
        // A poisoned lock only means another thread panicked; the data is fine.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn start(&'static self) {
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(100));
            let mut st = self.lock();
            if st.deadline.is_some_and(|d| Instant::now() >= d) {
                eprintln!(
                    "coremcp-bench: watchdog: `{}` did not finish within its deadline; killing children",
                    st.phase
                );
                kill_children(&mut st.children);
                std::process::exit(1);
            }
        });
    }

    fn arm(&self, phase: String, timeout: Duration) {
        let mut st = self.lock();
        st.deadline = Some(Instant::now() + timeout);
        st.phase = phase;
    }

    fn register(&self, child: Child) -> u64 {
        let mut st = self.lock();
        st.next_token += 1;
        let token = st.next_token;
        st.children.push((token, child));
        token
    }

    fn take(&self, token: u64) -> Option<Child> {
        let mut st = self.lock();
        let pos = st.children.iter().position(|(t, _)| *t == token)?;
        Some(st.children.swap_remove(pos).1)
    }

    fn exit_status(&self, token: u64) -> Option<String> {
        let mut st = self.lock();
        let (_, child) = st.children.iter_mut().find(|(t, _)| *t == token)?;
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }

    fn kill_all(&self) {
        kill_children(&mut self.lock().children);
    }
}

fn kill_children(children: &mut Vec<(u64, Child)>) {
    for (_, child) in children.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    children.clear();
}

// ---------------------------------------------------------------- targets

struct Target {
    label: &'static str,
    program: PathBuf,
    args: Vec<OsString>,
    show_stderr: bool,
}

/// One running server: its pipes, plus the child parked in the watchdog.
struct Conn {
    label: &'static str,
    token: u64,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    request: Vec<u8>,
    checker: &'static Checker,
}

/// Substring searchers for reply checks, built once.
struct Checker {
    result: Finder<'static>,
    error: Finder<'static>,
    is_error: Finder<'static>,
    id: Finder<'static>,
    method: Finder<'static>,
}

enum Line {
    Reply,
    Notification,
}

impl Checker {
    fn new() -> Self {
        Self {
            result: Finder::new(b"\"result\""),
            error: Finder::new(b"\"error\""),
            is_error: Finder::new(b"\"isError\":true"),
            id: Finder::new(b"\"id\""),
            method: Finder::new(b"\"method\""),
        }
    }

    fn classify(&self, line: &[u8]) -> Result<Line, &'static str> {
        if self.is_error.find(line).is_some() {
            return Err("tool call reported \"isError\":true");
        }
        if self.result.find(line).is_some() {
            return Ok(Line::Reply);
        }
        if self.error.find(line).is_some() {
            return Err("JSON-RPC error reply");
        }
        if self.method.find(line).is_some() && self.id.find(line).is_none() {
            // A server-to-client notification (logging, list_changed): skip.
            return Ok(Line::Notification);
        }
        Err("reply without \"result\"")
    }
}

fn checker() -> &'static Checker {
    static CHECKER: std::sync::OnceLock<Checker> = std::sync::OnceLock::new();
    CHECKER.get_or_init(Checker::new)
}

fn excerpt(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line);
    let s = s.trim_end();
    if s.len() > 400 {
        let mut end = 400;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}... ({} bytes)", &s[..end], s.len())
    } else {
        s.to_owned()
    }
}

impl Target {
    // The bench may depend only on serde_json and memchr, and coremcp_spawn
    // captures bounded output rather than streaming a long-lived pipe; the
    // children here are the workspace's own binaries under test.
    #[allow(
        clippy::disallowed_methods,
        reason = "bench harness starting the binaries it measures"
    )]
    fn spawn(&self) -> Result<Conn> {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if self.show_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .map_err(|e| {
                format!(
                    "{}: cannot spawn {}: {e}",
                    self.label,
                    self.program.display()
                )
            })?;
        let stdin = child.stdin.take().ok_or("child stdin was not piped")?;
        let stdout = child.stdout.take().ok_or("child stdout was not piped")?;
        let pid = child.id();
        Ok(Conn {
            label: self.label,
            pid,
            token: WATCHDOG.register(child),
            stdin: Some(stdin),
            stdout: BufReader::with_capacity(1 << 16, stdout),
            line: Vec::with_capacity(1024),
            request: Vec::with_capacity(256),
            checker: checker(),
        })
    }
}

impl Conn {
    /// Writes `self.request` in one write call.
    fn send_request(&mut self) -> Result<()> {
        let stdin = self.stdin.as_mut().ok_or("stdin already closed")?;
        stdin
            .write_all(&self.request)
            .and_then(|()| stdin.flush())
            .map_err(|e| {
                format!(
                    "{}: write to child failed: {e}{}",
                    self.label,
                    self.status()
                )
            })
    }

    fn send(&mut self, msg: &str) -> Result<()> {
        self.request.clear();
        self.request.extend_from_slice(msg.as_bytes());
        self.request.push(b'\n');
        self.send_request()
    }

    fn send_call(&mut self, id: u64) -> Result<()> {
        self.request.clear();
        writeln!(
            self.request,
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{TOOL}\",\"arguments\":{{\"x\":1}}}}}}"
        )
        .map_err(|e| e.to_string())?;
        self.send_request()
    }

    fn status(&self) -> String {
        // Give a dying child a moment so its exit status is available.
        for _ in 0..20 {
            if let Some(s) = WATCHDOG.exit_status(self.token) {
                return format!(" (child exited: {s})");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        String::new()
    }

    /// Reads the next reply line into `self.line`, skipping server
    /// notifications; aborts on EOF, error replies and `isError`.
    fn recv(&mut self) -> Result<()> {
        loop {
            self.line.clear();
            let n = self
                .stdout
                .read_until(b'\n', &mut self.line)
                .map_err(|e| format!("{}: read from child failed: {e}", self.label))?;
            if n == 0 {
                return Err(format!(
                    "{}: child closed its stdout{}",
                    self.label,
                    self.status()
                ));
            }
            match self.checker.classify(&self.line) {
                Ok(Line::Reply) => return Ok(()),
                Ok(Line::Notification) => {}
                Err(what) => {
                    return Err(format!("{}: {what}: {}", self.label, excerpt(&self.line)))
                }
            }
        }
    }

    fn initialize(&mut self) -> Result<()> {
        self.send(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"{PROTOCOL_VERSION}\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"coremcp-bench\",\"version\":\"0\"}}}}}}"
        ))?;
        self.recv()?;
        self.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}")
    }

    fn tools_list(&mut self) -> Result<()> {
        self.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}")?;
        self.recv()
    }

    /// Checks (with a real JSON parse, outside any timed region) that the
    /// last line was a tools/list reply naming the fixture tool.
    fn check_tools_list(&self) -> Result<()> {
        let v: serde_json::Value = serde_json::from_slice(&self.line).map_err(|e| {
            format!(
                "{}: tools/list reply is not JSON ({e}): {}",
                self.label,
                excerpt(&self.line)
            )
        })?;
        let names: Vec<&str> = v["result"]["tools"]
            .as_array()
            .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        if names.contains(&TOOL) {
            Ok(())
        } else {
            Err(format!(
                "{}: tools/list does not offer `{TOOL}` (tools: {names:?}); is the fixture plugin in --plugins?",
                self.label
            ))
        }
    }

    /// Closes stdin and gives the child a short grace period to exit on EOF
    /// before killing it. Returns false if it had to be killed.
    fn shutdown(mut self) -> Result<bool> {
        drop(self.stdin.take());
        let mut child = WATCHDOG
            .take(self.token)
            .ok_or("child vanished from the watchdog")?;
        let grace = Instant::now() + Duration::from_secs(2);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return Ok(true),
                Ok(None) if Instant::now() < grace => std::thread::sleep(Duration::from_millis(1)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Ok(false);
                }
            }
        }
    }
}

// ---------------------------------------------------------------- measurements

#[derive(Default)]
struct Results {
    serial_p50_us: f64,
    serial_p99_us: f64,
    pipelined_per_s: f64,
    cold_median_ms: f64,
    cold_p90_ms: f64,
    replies: u64,
    killed_on_eof: usize,
}

/// Nearest-rank percentile of an already sorted slice.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Blocks the serial round trips are interleaved in.
const SERIAL_BLOCKS: usize = 20;

/// Serial round trips on one live connection to each of `targets`, in interleaved blocks, so
/// both see the same machine: on a shared machine one target's whole run can otherwise land in
/// a quieter or a busier stretch than the other's (the floor's own p50 was seen to vary 25x
/// between runs). Returns each target's `(p50, p99)` in microseconds, and the replies each
/// target gave (all checked).
fn serial_interleaved(targets: [&Target; 2], opts: &Options) -> Result<([(f64, f64); 2], u64)> {
    let mut conns = Vec::new();
    for target in targets {
        WATCHDOG.arm(format!("{}: initialize", target.label), opts.timeout);
        let mut conn = target.spawn()?;
        conn.initialize()?;
        conn.tools_list()?;
        conn.check_tools_list()?;
        conns.push(conn);
    }
    WATCHDOG.arm("serial round trips".to_owned(), opts.timeout);
    let mut id: u64 = 1;
    for conn in &mut conns {
        for _ in 0..opts.warmup {
            id += 1;
            conn.send_call(id)?;
            conn.recv()?;
        }
    }
    let block = opts.calls.div_ceil(SERIAL_BLOCKS);
    let mut lat: [Vec<Duration>; 2] = [Vec::with_capacity(opts.calls), Vec::new()];
    lat[1].reserve(opts.calls);
    for _ in 0..SERIAL_BLOCKS {
        for (conn, lat) in conns.iter_mut().zip(lat.iter_mut()) {
            for _ in 0..block {
                id += 1;
                let t = Instant::now();
                conn.send_call(id)?;
                conn.recv()?;
                lat.push(t.elapsed());
            }
        }
    }
    for conn in conns {
        conn.shutdown()?;
    }
    let figures = |lat: &mut Vec<Duration>| {
        lat.sort_unstable();
        (
            percentile(lat, 0.50).as_secs_f64() * 1e6,
            percentile(lat, 0.99).as_secs_f64() * 1e6,
        )
    };
    let replies = (2 + opts.warmup + block * SERIAL_BLOCKS) as u64;
    let [floor, host] = &mut lat;
    Ok(([figures(floor), figures(host)], replies))
}

/// Pipelined throughput and cold starts of `target` (the serial figures come from
/// [`serial_interleaved`]).
fn measure(target: &Target, opts: &Options) -> Result<Results> {
    let mut res = Results::default();
    let label = target.label;
    WATCHDOG.arm(format!("{label}: initialize"), opts.timeout);
    let mut conn = target.spawn()?;
    conn.initialize()?;
    conn.tools_list()?;
    conn.check_tools_list()?;
    res.replies += 2;
    let mut id: u64 = 1;

    // Pipelined: one thread keeps `inflight` requests outstanding, writing a
    // new one each time a reply is read.
    WATCHDOG.arm(format!("{label}: pipelined calls"), opts.timeout);
    let t = Instant::now();
    let mut sent = 0;
    while sent < opts.inflight.min(opts.pipelined) {
        id += 1;
        conn.send_call(id)?;
        sent += 1;
    }
    for _ in 0..opts.pipelined {
        conn.recv()?;
        if sent < opts.pipelined {
            id += 1;
            conn.send_call(id)?;
            sent += 1;
        }
    }
    res.pipelined_per_s = opts.pipelined as f64 / t.elapsed().as_secs_f64();
    res.replies += opts.pipelined as u64;
    if !conn.shutdown()? {
        res.killed_on_eof += 1;
    }

    // Cold start: spawn -> initialize -> initialized -> tools/list reply.
    let mut cold = Vec::with_capacity(opts.cold);
    for i in 0..opts.cold {
        WATCHDOG.arm(format!("{label}: cold start {}", i + 1), opts.timeout);
        let t = Instant::now();
        let mut conn = target.spawn()?;
        conn.initialize()?;
        conn.tools_list()?;
        cold.push(t.elapsed());
        conn.check_tools_list()?;
        res.replies += 2;
        if !conn.shutdown()? {
            res.killed_on_eof += 1;
        }
    }
    cold.sort_unstable();
    res.cold_median_ms = percentile(&cold, 0.50).as_secs_f64() * 1e3;
    res.cold_p90_ms = percentile(&cold, 0.90).as_secs_f64() * 1e3;
    Ok(res)
}

/// Peak RSS of the host (KiB) after `initialize`, and after a line of `mib` MiB without a
/// newline followed by a ping that must still be answered.
fn oversize_line_rss(target: &Target, mib: usize, timeout: Duration) -> Result<(u64, u64)> {
    WATCHDOG.arm(format!("{}: {mib} MiB line", target.label), timeout);
    let mut conn = target.spawn()?;
    conn.initialize()?;
    conn.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}")?;
    conn.recv()?;
    let before = peak_rss_kib(conn.pid)?;
    let chunk = vec![b'a'; 1 << 20];
    {
        let stdin = conn.stdin.as_mut().ok_or("stdin already closed")?;
        for _ in 0..mib {
            stdin.write_all(&chunk).map_err(|e| format!("write: {e}"))?;
        }
        stdin.write_all(b"\n").map_err(|e| format!("write: {e}"))?;
    }
    // The host reports the discarded line with a -32700 error (id null), then answers on.
    conn.line.clear();
    conn.stdout
        .read_until(b'\n', &mut conn.line)
        .map_err(|e| format!("read: {e}"))?;
    if !conn.line.windows(6).any(|w| w == b"-32700") {
        return Err(format!(
            "expected a -32700 report, got {}",
            excerpt(&conn.line)
        ));
    }
    conn.send("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}")?;
    conn.recv()?;
    let after = peak_rss_kib(conn.pid)?;
    conn.shutdown()?;
    Ok((before, after))
}

fn peak_rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| "no VmHWM in /proc status".to_owned())
}

// ---------------------------------------------------------------- report

fn pass(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

fn run() -> Result<()> {
    let opts = parse_args();
    if !opts.plugins.is_dir() {
        return Err(format!(
            "--plugins {} is not a directory",
            opts.plugins.display()
        ));
    }
    WATCHDOG.start();

    let floor = Target {
        label: "floor",
        program: opts.floor.clone(),
        args: Vec::new(),
        show_stderr: opts.show_stderr,
    };
    let host = Target {
        label: "coremcp",
        program: opts.host.clone(),
        args: vec![
            "stdio".into(),
            "--plugins".into(),
            opts.plugins.clone().into_os_string(),
            "--groups".into(),
            "fixture".into(),
        ],
        show_stderr: opts.show_stderr,
    };

    let ([(f_p50, f_p99), (h_p50, h_p99)], serial_replies) =
        serial_interleaved([&floor, &host], &opts)?;
    let mut f = measure(&floor, &opts)?;
    let mut h = measure(&host, &opts)?;
    (f.serial_p50_us, f.serial_p99_us) = (f_p50, f_p99);
    (h.serial_p50_us, h.serial_p99_us) = (h_p50, h_p99);
    f.replies += serial_replies;
    h.replies += serial_replies;
    let (rss_before, rss_after) = oversize_line_rss(&host, OVERSIZE_MIB, opts.timeout)?;

    let p50_ratio = h.serial_p50_us / f.serial_p50_us;
    let p99_ratio = h.serial_p99_us / f.serial_p99_us;
    let pipe_ratio = h.pipelined_per_s / f.pipelined_per_s;
    let cold_ratio = h.cold_median_ms / f.cold_median_ms;
    let cold_p90_ratio = h.cold_p90_ms / f.cold_p90_ms;

    let pipelined_label = format!("pipelined calls/s ({})", opts.inflight);
    println!(
        "{:<28} {:>12} {:>12}   ratio (coremcp/floor)",
        "metric", "floor", "coremcp"
    );
    println!(
        "{:<28} {:>12.1} {:>12.1}   {p50_ratio:.2}  (target <= {P50_TARGET:.2})",
        "serial p50 (us)", f.serial_p50_us, h.serial_p50_us
    );
    println!(
        "{:<28} {:>12.1} {:>12.1}   {p99_ratio:.2}",
        "serial p99 (us)", f.serial_p99_us, h.serial_p99_us
    );
    println!(
        "{:<28} {:>12.0} {:>12.0}   {pipe_ratio:.2}  (target >= {PIPELINED_TARGET:.2})",
        pipelined_label, f.pipelined_per_s, h.pipelined_per_s
    );
    println!(
        "{:<28} {:>12.2} {:>12.2}   {cold_ratio:.2}",
        "cold start median (ms)", f.cold_median_ms, h.cold_median_ms
    );
    println!(
        "{:<28} {:>12.2} {:>12.2}   {cold_p90_ratio:.2}",
        "cold start p90 (ms)", f.cold_p90_ms, h.cold_p90_ms
    );
    println!(
        "{:<28} {:>12} {:>12}",
        "replies checked", f.replies, h.replies
    );
    println!();
    println!(
        "p50 ratio {p50_ratio:.2} (target <= {P50_TARGET:.2}): {}",
        pass(p50_ratio <= P50_TARGET)
    );
    println!(
        "pipelined ratio {pipe_ratio:.2} (target >= {PIPELINED_TARGET:.2}): {}",
        pass(pipe_ratio >= PIPELINED_TARGET)
    );
    println!(
        "cold start to tools/list {:.1} ms (target <= {COLD_TARGET_MS:.0} ms): {}",
        h.cold_median_ms,
        pass(h.cold_median_ms <= COLD_TARGET_MS)
    );
    println!(
        "peak RSS {:.1} MiB after a {OVERSIZE_MIB} MiB line without a newline (host answering; {:.1} MiB before it)",
        rss_after as f64 / 1024.0,
        rss_before as f64 / 1024.0
    );
    let nproc = std::thread::available_parallelism().map_or(0, std::num::NonZeroUsize::get);
    println!(
        "nproc {nproc}; serial {} calls (+{} warm-up), pipelined {} calls, {} cold starts per target",
        opts.calls, opts.warmup, opts.pipelined, opts.cold
    );
    println!("note: figures are from one run on a shared machine; expect run-to-run noise");
    for (label, r) in [("floor", &f), ("coremcp", &h)] {
        if r.killed_on_eof > 0 {
            println!(
                "warning: {label} did not exit within 2 s of stdin EOF {} time(s) and was killed",
                r.killed_on_eof
            );
        }
    }
    Ok(())
}
