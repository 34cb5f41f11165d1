//! The performance goals of the second rung, each against its baseline, in one run: every
//! comparison runs `--rounds` times (3), and the table shows the median of the rounds' ratios,
//! the goal and whether it holds. Within a round, the baseline and Core MCP run side by side,
//! both processes alive, in alternating blocks ([`BLOCKS`] each; one start each, alternately,
//! for the cold starts), so a slow spell of a shared machine weighs on both alike.
//!
//! Baselines: the raw JSON-RPC echo floor, rmcp's echo server over `stdio_pipes` on a
//! current-thread runtime and over its stateless Streamable HTTP server with JSON answers
//! (`tests/bench/rmcp-baseline`, built by `scripts/bench`), and server-everything called
//! directly.
//!
//! usage: goals-bench --host <coremcp> --floor <echo-floor> --rmcp <rmcp-baseline>
//!        --all <plugins dir with every group, indexed> --pair <plugins dir: fixture, notepad>
//!        [--everything <mcp-server-everything>] [--calls N] [--rounds N]
//!        [--only stdio,cold,first,memory,http,upstream]   (default: every comparison)
//!        [--write FILE]   (also write the table as a page: docs/performance.md)
//!        [--versus <another coremcp>]   (with `--only versus`: this host against another
//!        build of it — a commit before a change — side by side: stdio and HTTP p50, HTTP
//!        calls/s at 16 in flight, spawn -> tools/list; each ratio this / other)
//!
//! The page names the machine (from /proc), the date and the commit (`COREMCP_BENCH_DATE` and
//! `COREMCP_BENCH_COMMIT`, which scripts/bench sets).

#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coremcp_bench::http_call::http_call;
use coremcp_bench::procs::{free_addr, serve, wait_listening, Proc};
use coremcp_bench::stdio_client::StdioClient;
use coremcp_net::client::Url;
use coremcp_relay::client::McpClient;
use serde_json::{json, Value};

const IN_FLIGHT: usize = 16;
const WARM_UP: usize = 200;
/// Blocks each side of a comparison runs in, alternating, within one round.
const BLOCKS: usize = 10;

struct Options {
    host: PathBuf,
    floor: PathBuf,
    rmcp: PathBuf,
    all: PathBuf,
    pair: PathBuf,
    everything: Option<PathBuf>,
    calls: usize,
    rounds: usize,
    /// The comparisons to run (`None`: all).
    only: Option<Vec<String>>,
    /// `--write`: the page the table is also written to.
    write: Option<PathBuf>,
    /// `--versus`: another build of the host, measured against this one (`versus` rows).
    versus: Option<PathBuf>,
}

impl Options {
    fn runs(&self, part: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|p| p == part))
    }
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let path = |v: Option<String>| v.map(PathBuf::from);
    let (mut host, mut floor, mut rmcp, mut all, mut pair, mut everything) =
        (None, None, None, None, None, None);
    let (mut calls, mut rounds, mut only, mut write, mut versus) = (3000, 3, None, None, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--host" => host = path(Some(value)),
            "--floor" => floor = path(Some(value)),
            "--rmcp" => rmcp = path(Some(value)),
            "--all" => all = path(Some(value)),
            "--pair" => pair = path(Some(value)),
            "--everything" => everything = path(Some(value)),
            "--calls" => calls = value.parse().map_err(|e| format!("--calls: {e}"))?,
            "--rounds" => rounds = value.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--only" => only = Some(value.split(',').map(str::to_owned).collect()),
            "--write" => write = path(Some(value)),
            "--versus" => versus = path(Some(value)),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(Options {
        host: host.ok_or("--host is required")?,
        floor: floor.ok_or("--floor is required")?,
        rmcp: rmcp.ok_or("--rmcp is required")?,
        all: all.ok_or("--all is required")?,
        pair: pair.ok_or("--pair is required")?,
        everything,
        calls: calls.max(200),
        rounds: rounds.max(1),
        only,
        write,
        versus,
    })
}

fn main() {
    let opts = match parse_args() {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("goals-bench: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&opts) {
        eprintln!("goals-bench: {e}");
        std::process::exit(1);
    }
}

/// A goal: the figure must be at most, or at least, this.
#[derive(Clone, Copy)]
enum Goal {
    AtMost(f64),
    AtLeast(f64),
}

struct Row {
    figure: &'static str,
    unit: &'static str,
    goal: Goal,
    rounds: Vec<f64>,
    detail: String,
}

impl Row {
    fn new(figure: &'static str, unit: &'static str, goal: Goal) -> Self {
        Self {
            figure,
            unit,
            goal,
            rounds: Vec::new(),
            detail: String::new(),
        }
    }

    fn median(&self) -> Option<f64> {
        let mut v = self.rounds.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    }

    /// The median, the goal, whether it holds, and the rounds, as the table shows them.
    fn cells(&self) -> (String, String, &'static str, String) {
        let goal = match self.goal {
            Goal::AtMost(g) => format!("<= {g}{}", self.unit),
            Goal::AtLeast(g) => format!(">= {g}{}", self.unit),
        };
        let holds = match (self.goal, self.median()) {
            (Goal::AtMost(g), Some(m)) => m <= g,
            (Goal::AtLeast(g), Some(m)) => m >= g,
            (_, None) => false,
        };
        let rounds: Vec<String> = self.rounds.iter().map(|r| format!("{r:.2}")).collect();
        (
            self.median()
                .map_or("not run".to_owned(), |m| format!("{m:.2}{}", self.unit)),
            goal,
            match (self.median(), holds) {
                (None, _) => "-",
                (Some(_), true) => "yes",
                (Some(_), false) => "NO",
            },
            rounds.join(" / "),
        )
    }

    fn print(&self) {
        let (median, goal, holds, rounds) = self.cells();
        println!(
            "| {:<58} | {median:>9} | {goal:>10} | {holds:<5} | {rounds} {}",
            self.figure, self.detail
        );
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn p50(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// CPU time (ns) every thread of `pid` has run so far.
fn cpu_ns(pid: u32) -> Result<u64, String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| e.to_string())?;
    let mut total = 0;
    for task in tasks.filter_map(Result::ok) {
        let text = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Ok(total)
}

fn rss_kb(pid: u32) -> Result<u64, String> {
    status_kb(pid, "VmRSS")
}

/// A kB figure of `/proc/PID/status`, e.g. `VmRSS`.
fn status_kb(pid: u32, field: &str) -> Result<u64, String> {
    proc_kb(pid, "status", field)
}

/// A kB figure of `/proc/PID/smaps_rollup`, e.g. `Pss`.
fn rollup_kb(pid: u32, field: &str) -> Result<u64, String> {
    proc_kb(pid, "smaps_rollup", field)
}

/// The `FIELD: N kB` figure of `/proc/PID/FILE`.
fn proc_kb(pid: u32, file: &str, field: &str) -> Result<u64, String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).map_err(|e| e.to_string())?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("no {field} in /proc/{pid}/{file}"))
}

/// `PROGRAM ARGS` on stdio pipes, with `env`, its stderr discarded, initialised.
fn stdio(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<StdioClient, String> {
    #[allow(clippy::disallowed_methods)] // The bench starts the servers it measures.
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(env.iter().copied())
        .env_remove("COREMCP_GROUPS")
        .stderr(Stdio::null());
    StdioClient::spawn(command, "goals-bench")
}

/// One side of a serial comparison: a client (an index into the clients) and its call.
struct Side<'a> {
    client: usize,
    tool: &'a str,
    args: Value,
}

/// What one side measured: its p50 round trip and its server's CPU per call (µs).
struct Serial {
    p50: Duration,
    cpu_us: f64,
}

/// `n` serial calls of every side, in [`BLOCKS`] alternating blocks (after a warm-up of each):
/// each side's p50 and its server's CPU per call.
fn serial(
    clients: &mut [StdioClient],
    sides: &[Side<'_>],
    n: usize,
) -> Result<Vec<Serial>, String> {
    for side in sides {
        for _ in 0..WARM_UP {
            call(&mut clients[side.client], side.tool, &side.args)?;
        }
    }
    let per_block = (n / BLOCKS).max(1);
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(n); sides.len()];
    let mut cpu = vec![0u64; sides.len()];
    for _ in 0..BLOCKS {
        for (i, side) in sides.iter().enumerate() {
            let client = &mut clients[side.client];
            let before = cpu_ns(client.pid())?;
            for _ in 0..per_block {
                let t = Instant::now();
                call(client, side.tool, &side.args)?;
                times[i].push(t.elapsed());
            }
            cpu[i] += cpu_ns(client.pid())?.saturating_sub(before);
        }
    }
    Ok(times
        .iter_mut()
        .zip(cpu)
        .map(|(times, cpu)| Serial {
            p50: p50(times),
            cpu_us: cpu as f64 / times.len() as f64 / 1e3,
        })
        .collect())
}

/// One call that must answer a result that is not a tool error.
fn call(client: &mut StdioClient, tool: &str, args: &Value) -> Result<(), String> {
    let result = client.request("tools/call", json!({"name": tool, "arguments": args}))?;
    if result["isError"] == json!(true) {
        return Err(format!("{tool}: {result}"));
    }
    Ok(())
}

/// Spawn → `initialize` → `initialized` → the `tools/list` answer read whole (not parsed):
/// the time of one start, and the answer's length.
fn cold(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<(Duration, usize), String> {
    let hello = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"goals-bench","version":"0"}}}"#,
        "\n"
    );
    let list = concat!(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        "\n"
    );
    let started = Instant::now();
    #[allow(clippy::disallowed_methods)] // The bench starts the servers it measures.
    let child = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .env_remove("COREMCP_GROUPS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("start {}: {e}", program.display()))?;
    let mut child = Proc(child);
    let mut stdin = child.0.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(child.0.stdout.take().ok_or("no stdout")?);
    let mut line = String::new();
    stdin
        .write_all(hello.as_bytes())
        .map_err(|e| e.to_string())?;
    stdout.read_line(&mut line).map_err(|e| e.to_string())?;
    stdin
        .write_all(list.as_bytes())
        .map_err(|e| e.to_string())?;
    line.clear();
    stdout.read_line(&mut line).map_err(|e| e.to_string())?;
    let took = started.elapsed();
    if !line.contains("\"tools\"") {
        return Err(format!("{}: no tool list: {line:.200}", program.display()));
    }
    drop(stdin);
    let _ = child.0.wait();
    Ok((took, line.len()))
}

fn http_client(addr: &str) -> Result<McpClient, String> {
    Ok(McpClient::new(
        Url::parse(&format!("http://{addr}/mcp")).map_err(|e| e.to_string())?,
        true,
    ))
}

/// Serial p50s and the rates with 16 clients in flight, over Streamable HTTP, of two servers
/// (`(address, tool)` each) in alternating blocks.
/// What [`http`] measured of one server: its serial p50, its rate with [`IN_FLIGHT`] calls in
/// flight, and the CPU per call (µs) it and this client process spent in that phase.
struct HttpFigures {
    p50: Duration,
    rate: f64,
    server_cpu_us: f64,
    client_cpu_us: f64,
}

/// CPU time (ns) this process has run so far, its ended threads included.
fn own_cpu_ns() -> Result<u64, String> {
    let stat = std::fs::read_to_string("/proc/self/stat").map_err(|e| e.to_string())?;
    // utime and stime are fields 14 and 15; the command name (field 2) ends at the last ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|n| n.parse::<u64>().ok())
        .sum();
    // USER_HZ is 100 on Linux whatever the kernel's own tick.
    Ok(ticks * 10_000_000)
}

fn http(servers: [(&str, &str, u32); 2], n: usize) -> Result<[HttpFigures; 2], String> {
    let args = json!({"text": "x"});
    let mut clients = [http_client(servers[0].0)?, http_client(servers[1].0)?];
    for (client, (_, tool, _)) in clients.iter_mut().zip(servers) {
        for _ in 0..WARM_UP {
            http_call(client, tool, &args)?;
        }
    }
    // The in-flight clients connect once (and learn the server's protocol) before any block.
    let mut workers: [Vec<McpClient>; 2] = [Vec::new(), Vec::new()];
    for (i, (addr, tool, _)) in servers.iter().enumerate() {
        for _ in 0..IN_FLIGHT {
            let mut client = http_client(addr)?;
            http_call(&mut client, tool, &args)?;
            workers[i].push(client);
        }
    }
    let per_block = (n / BLOCKS).max(1);
    let mut times: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    let (mut calls, mut spent) = ([0usize; 2], [Duration::ZERO; 2]);
    let (mut server_cpu, mut client_cpu) = ([0u64; 2], [0u64; 2]);
    for _ in 0..BLOCKS {
        for (i, (_, tool, pid)) in servers.iter().enumerate() {
            for _ in 0..per_block {
                let t = Instant::now();
                http_call(&mut clients[i], tool, &args)?;
                times[i].push(t.elapsed());
            }
            let per_worker = (per_block / 2).max(10);
            let (server_before, client_before) = (cpu_ns(*pid)?, own_cpu_ns()?);
            let started = Instant::now();
            let running: Vec<_> = std::mem::take(&mut workers[i])
                .into_iter()
                .map(|mut c| {
                    let (tool, args) = (tool.to_string(), args.clone());
                    std::thread::spawn(move || -> Result<McpClient, String> {
                        for _ in 0..per_worker {
                            http_call(&mut c, &tool, &args)?;
                        }
                        Ok(c)
                    })
                })
                .collect();
            for w in running {
                workers[i].push(
                    w.join()
                        .map_err(|_| "an HTTP worker panicked".to_owned())??,
                );
            }
            spent[i] += started.elapsed();
            server_cpu[i] += cpu_ns(*pid)?.saturating_sub(server_before);
            client_cpu[i] += own_cpu_ns()?.saturating_sub(client_before);
            calls[i] += IN_FLIGHT * per_worker;
        }
    }
    let figures = |i: usize, times: &mut Vec<Duration>| HttpFigures {
        p50: p50(times),
        rate: calls[i] as f64 / spent[i].as_secs_f64(),
        server_cpu_us: server_cpu[i] as f64 / calls[i] as f64 / 1e3,
        client_cpu_us: client_cpu[i] as f64 / calls[i] as f64 / 1e3,
    };
    let [first, second] = &mut times;
    Ok([figures(0, first), figures(1, second)])
}

/// A call of a tool of each group (an error answer still loads the group).
fn probes(data: &str) -> [(&'static str, Value); 11] {
    [
        ("registry_theme_list", json!({})),
        ("docs_read", json!({"path": "README.md"})),
        ("seele_search", json!({"query": "x"})),
        ("scrolls_theme_list", json!({})),
        ("notepad_list", json!({})),
        ("session_list_active", json!({})),
        ("git_status", json!({"path": data})),
        ("files_list", json!({"path": data})),
        ("core_status", json!({})),
        ("publishing", json!({})),
        ("docker_container_list", json!({})),
    ]
}

/// Each group's first call after an install (the plugins folder as `scripts/build` leaves it:
/// indexed, never loaded by this user), in a data folder of its own that nothing has used, less
/// the same call's steady p50 in that process: what loading the group costs its first caller
/// (the content check, the vetting if any, mapping, the store's schema). Also each library's
/// SHA-256 time here, the content check's share. The figure is the worst group's.
fn first_calls(opts: &Options, scratch: &Path) -> Result<(f64, String), String> {
    use sha2::Digest as _;
    let plugins = opts.all.to_string_lossy().into_owned();
    let mut worst = 0f64;
    let mut shown = Vec::new();
    let groups = probes(&scratch.to_string_lossy());
    // `core_status` is the host's own, in no library.
    let groups = groups.iter().filter(|(tool, _)| *tool != "core_status");
    for (n, (tool, args)) in groups.enumerate() {
        let fresh = scratch.join(format!("first-{n}"));
        let _ = std::fs::remove_dir_all(&fresh);
        std::fs::create_dir_all(&fresh).map_err(|e| e.to_string())?;
        let data = fresh.to_string_lossy().into_owned();
        let mut client = stdio(
            &opts.host,
            &["stdio", "--plugins", &plugins, "--data", &data],
            &[("COREMCP_DOCKER_HOST", "unix:///nonexistent/docker.sock")],
        )?;
        client.request("tools/list", json!({}))?;
        let request = json!({"name": tool, "arguments": args});
        let started = Instant::now();
        client.request("tools/call", request.clone())?;
        let first = started.elapsed();
        let mut steady = Vec::new();
        for _ in 0..21 {
            let started = Instant::now();
            client.request("tools/call", request.clone())?;
            steady.push(started.elapsed());
        }
        let extra = (first.saturating_sub(p50(&mut steady))).as_secs_f64() * 1e3;
        let group = tool.split('_').next().unwrap_or(tool);
        let library = opts.all.join(format!("libcoremcp_{group}.so"));
        let hash_ms = match std::fs::read(&library) {
            Ok(bytes) => {
                let started = Instant::now();
                let _ = sha2::Sha256::digest(&bytes);
                format!(" (hash {:.1})", started.elapsed().as_secs_f64() * 1e3)
            }
            Err(_) => String::new(),
        };
        worst = worst.max(extra);
        shown.push(format!("{group} {extra:.1}{hash_ms}"));
        let _ = std::fs::remove_dir_all(&fresh);
    }
    Ok((worst, format!("ms per group: {}", shown.join(", "))))
}

/// One call of a tool of every group (an error answer still loads the group), then the RSS,
/// what each group's first call added, and the proportional set size once a second session
/// has called every group too.
fn memory(opts: &Options, data: &str) -> Result<(f64, String), String> {
    let probes = probes(data);
    let plugins = opts.all.to_string_lossy();
    let start_session = || {
        stdio(
            &opts.host,
            &["stdio", "--plugins", &plugins, "--data", data],
            &[("COREMCP_DOCKER_HOST", "unix:///nonexistent/docker.sock")],
        )
    };
    let mut client = start_session()?;
    client.request("tools/list", json!({}))?;
    let mut before = rss_kb(client.pid())?;
    let start = before;
    let mut costs = Vec::new();
    for (tool, args) in &probes {
        client.request("tools/call", json!({"name": tool, "arguments": args}))?;
        let now = rss_kb(client.pid())?;
        let group = tool.split('_').next().unwrap_or(tool);
        costs.push(format!(
            "{group} {:.1}",
            (now.saturating_sub(before)) as f64 / 1024.0
        ));
        before = now;
    }
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", client.pid()))
        .map_err(|e| e.to_string())?;
    let mut loaded: Vec<&str> = maps
        .lines()
        .filter_map(|l| l.rsplit('/').next())
        .filter(|n| n.starts_with("libcoremcp_"))
        .collect();
    loaded.sort_unstable();
    loaded.dedup();
    if loaded.len() < probes.len() {
        return Err(format!("only {} groups loaded: {loaded:?}", loaded.len()));
    }
    // What the RSS is made of: the process's own (anonymous) pages, and pages of the
    // libraries' files (clean code and constants, which the page cache holds anyway).
    let (anon, file) = (
        status_kb(client.pid(), "RssAnon")?,
        status_kb(client.pid(), "RssFile")?,
    );
    // An agent's machine runs a session per agent: with a second one that called every group
    // too, the pages of the files count half to each (the proportional set size).
    let mut second = start_session()?;
    for (tool, args) in &probes {
        second.request("tools/call", json!({"name": tool, "arguments": args}))?;
    }
    let pss = rollup_kb(client.pid(), "Pss")?;
    drop(second);
    Ok((
        before as f64 / 1024.0,
        format!(
            "anonymous {:.1} MB + file-backed {:.1} MB; start {:.1} MB; PSS beside a second \
             session {:.1} MB; per group MB: {}",
            anon as f64 / 1024.0,
            file as f64 / 1024.0,
            start as f64 / 1024.0,
            pss as f64 / 1024.0,
            costs.join(", ")
        ),
    ))
}

fn run(opts: &Options) -> Result<(), String> {
    let n = opts.calls;
    let scratch = std::env::temp_dir().join(format!("coremcp-goals-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let data = scratch.to_string_lossy().into_owned();

    let mut stdio_p50 = Row::new(
        "stdio p50, fixture_echo / echo floor",
        "x",
        Goal::AtMost(1.3),
    );
    let mut cold_row = Row::new(
        "spawn -> tools/list, all 11 groups / rmcp",
        "x",
        Goal::AtMost(1.5),
    );
    let mut slow_first = Row::new(
        "first tools/list beside an upstream taking 10 s to start",
        " ms",
        Goal::AtMost(100.0),
    );
    let mut first = Row::new(
        "first call of a group after install, minus steady (worst)",
        " ms",
        Goal::AtMost(15.0),
    );
    let mut rss = Row::new(
        "RSS after one call of every group",
        " MB",
        Goal::AtMost(20.0),
    );
    let mut size = Row::new(
        "full profile on disk: coremcp and every library, stripped",
        " MB",
        Goal::AtMost(50.0),
    );
    let mut hop = Row::new(
        "upstream hop p50, through - direct (server-everything)",
        " us",
        Goal::AtMost(40.0),
    );
    let mut hop_rate = Row::new(
        "upstream, 16 in flight: through / direct",
        "x",
        Goal::AtLeast(0.95),
    );
    let mut cpu = Row::new(
        "server CPU per sequential stdio call / rmcp",
        "x",
        Goal::AtMost(1.0),
    );
    let mut http_p50 = Row::new("HTTP p50 / rmcp stateless JSON", "x", Goal::AtMost(0.8));
    let mut http_rate = Row::new("HTTP calls/s, 16 in flight / rmcp", "x", Goal::AtLeast(1.5));
    let mut notepad = Row::new(
        "notepad_get (SQLite) p50 / fixture_echo",
        "x",
        Goal::AtMost(1.3),
    );
    let mut versus = [
        Row::new(
            "stdio p50, fixture_echo: this / --versus",
            "x",
            Goal::AtMost(1.03),
        ),
        Row::new(
            "HTTP p50, fixture_echo: this / --versus",
            "x",
            Goal::AtMost(1.03),
        ),
        Row::new(
            "HTTP calls/s, 16 in flight: this / --versus",
            "x",
            Goal::AtLeast(0.97),
        ),
        Row::new(
            "spawn -> tools/list, all groups: this / --versus",
            "x",
            Goal::AtMost(1.03),
        ),
    ];

    if opts.runs("size") {
        let (mb, detail) = install_size(opts)?;
        size.rounds.push(mb);
        size.detail = detail;
    }
    for round in 1..=opts.rounds {
        eprintln!("goals-bench: round {round} of {}", opts.rounds);
        if opts.runs("stdio") {
            stdio_rows(opts, &data, n, [&mut stdio_p50, &mut cpu, &mut notepad])?;
        }
        if opts.runs("cold") {
            cold_rows(opts, &data, &mut cold_row)?;
            slow_first
                .rounds
                .push(first_list_beside_a_slow_upstream(opts, &data)?);
            slow_first.detail = "every group; the upstream server never answers".into();
        }
        if opts.runs("first") {
            let (worst, detail) = first_calls(opts, &scratch)?;
            first.rounds.push(worst);
            first.detail = detail;
        }
        if opts.runs("memory") {
            let (mb, detail) = memory(opts, &data)?;
            rss.rounds.push(mb);
            rss.detail = detail;
        }
        if opts.runs("http") {
            http_rows(opts, &data, n, [&mut http_p50, &mut http_rate])?;
        }
        if let Some(other) = opts.versus.as_ref().filter(|_| opts.runs("versus")) {
            versus_rows(opts, other, &data, n, &mut versus)?;
        }
        // The upstream hop: server-everything directly and through coremcp, both alive.
        if let Some(everything) = opts.everything.as_ref().filter(|_| opts.runs("upstream")) {
            let up = upstream(everything, opts, &data, n)?;
            let [direct, through] = up.p50;
            hop.rounds.push(us(through) - us(direct));
            hop.detail = format!("direct {:.1} us, through {:.1} us", us(direct), us(through));
            let [direct_rate, through_rate] = up.rate;
            hop_rate.rounds.push(through_rate / direct_rate);
            hop_rate.detail = format!(
                "direct {direct_rate:.0}/s, through {through_rate:.0}/s; CPU per call: \
                 server-everything {:.1} us (direct), coremcp {:.1} us (through)",
                up.everything_cpu_us, up.coremcp_cpu_us
            );
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    print_table(
        opts,
        n,
        &[
            &size,
            &stdio_p50,
            &cold_row,
            &slow_first,
            &first,
            &rss,
            &hop,
            &hop_rate,
            &cpu,
            &http_p50,
            &http_rate,
            &notepad,
        ]
        .into_iter()
        .chain(versus.iter().filter(|_| opts.versus.is_some()))
        .collect::<Vec<_>>(),
    );
    Ok(())
}

/// The stdio round trips and CPU: the floor, rmcp and coremcp alive together, in blocks; then
/// notepad_get against fixture_echo in one coremcp.
fn stdio_rows(opts: &Options, data: &str, n: usize, rows: [&mut Row; 3]) -> Result<(), String> {
    let [stdio_p50, cpu, notepad] = rows;
    let pair = opts.pair.to_string_lossy().into_owned();
    let echo = json!({"text": "x"});
    let mut clients = vec![
        stdio(&opts.floor, &[], &[])?,
        stdio(&opts.rmcp, &["stdio"], &[])?,
        stdio(
            &opts.host,
            &["stdio", "--plugins", &pair, "--data", data],
            &[],
        )?,
    ];
    let side = |client, tool| Side {
        client,
        tool,
        args: echo.clone(),
    };
    let measured = serial(
        &mut clients,
        &[
            side(0, "fixture_echo"),
            side(1, "echo"),
            side(2, "fixture_echo"),
        ],
        n,
    )?;
    let (floor, rmcp, host) = (&measured[0], &measured[1], &measured[2]);
    stdio_p50.rounds.push(us(host.p50) / us(floor.p50));
    stdio_p50.detail = format!(
        "floor {:.1} us, coremcp {:.1} us, rmcp {:.1} us",
        us(floor.p50),
        us(host.p50),
        us(rmcp.p50)
    );
    cpu.rounds.push(host.cpu_us / rmcp.cpu_us);
    cpu.detail = format!("coremcp {:.1} us, rmcp {:.1} us", host.cpu_us, rmcp.cpu_us);
    call(
        &mut clients[2],
        "notepad_set",
        &json!({"scope": "global", "key": "bench", "value": "v"}),
    )?;
    let measured = serial(
        &mut clients,
        &[
            side(2, "fixture_echo"),
            Side {
                client: 2,
                tool: "notepad_get",
                args: json!({"scope": "global", "key": "bench"}),
            },
        ],
        n,
    )?;
    notepad
        .rounds
        .push(us(measured[1].p50) / us(measured[0].p50));
    notepad.detail = format!(
        "fixture_echo {:.1} us, notepad_get {:.1} us",
        us(measured[0].p50),
        us(measured[1].p50)
    );
    Ok(())
}

/// Milliseconds from the `initialize` answer to the first `tools/list` answer, with every
/// group and an upstream server that takes 10 s to start (`sleep 10`, which never answers):
/// the listing must not wait for it.
fn first_list_beside_a_slow_upstream(opts: &Options, data: &str) -> Result<f64, String> {
    let all = opts.all.to_string_lossy().into_owned();
    #[allow(clippy::disallowed_methods)] // The bench starts the servers it measures.
    let child = Command::new(&opts.host)
        .args(["stdio", "--plugins", &all, "--data", data])
        .env("COREMCP_MCP_CONFIG", "")
        .env("COREMCP_MCP_SERVERS", "slow=sleep 10")
        .env("COREMCP_MCP_GRANTS", "stdio=slow")
        .env_remove("COREMCP_GROUPS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("start {}: {e}", opts.host.display()))?;
    let mut child = Proc(child);
    let mut stdin = child.0.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(child.0.stdout.take().ok_or("no stdout")?);
    let mut line = String::new();
    stdin
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"goals-bench","version":"0"}}}"#,
                "\n"
            )
            .as_bytes(),
        )
        .map_err(|e| e.to_string())?;
    stdout.read_line(&mut line).map_err(|e| e.to_string())?;
    let started = Instant::now();
    stdin
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
                "\n"
            )
            .as_bytes(),
        )
        .map_err(|e| e.to_string())?;
    line.clear();
    stdout.read_line(&mut line).map_err(|e| e.to_string())?;
    let took = started.elapsed();
    if !line.contains("\"tools\"") {
        return Err(format!("no tool list beside a slow upstream: {line:.200}"));
    }
    drop(stdin);
    drop(child);
    Ok(took.as_secs_f64() * 1e3)
}

/// Cold starts of rmcp and of coremcp with every group, one of each in turn.
fn cold_rows(opts: &Options, data: &str, row: &mut Row) -> Result<(), String> {
    let all = opts.all.to_string_lossy().into_owned();
    let starts = 41;
    let (mut rmcp, mut host, mut length) = (Vec::new(), Vec::new(), 0);
    for _ in 0..starts {
        rmcp.push(cold(&opts.rmcp, &["stdio"], &[])?.0);
        let (took, len) = cold(
            &opts.host,
            &["stdio", "--plugins", &all, "--data", data],
            &[],
        )?;
        host.push(took);
        length = len;
    }
    let (rmcp, host) = (p50(&mut rmcp), p50(&mut host));
    row.rounds.push(host.as_secs_f64() / rmcp.as_secs_f64());
    row.detail = format!(
        "rmcp {:.2} ms, coremcp {:.2} ms ({} KB listing)",
        rmcp.as_secs_f64() * 1e3,
        host.as_secs_f64() * 1e3,
        length / 1024
    );
    Ok(())
}

/// This host against another build of it (`--versus`), each pair alive together and measured
/// in alternating blocks: stdio and HTTP p50 of `fixture_echo`, HTTP calls/s with
/// [`IN_FLIGHT`] in flight, and spawn -> `tools/list` of every group, alternate starts.
///
/// Everything runs on one CPU ([`OneCpu`]): on a virtual machine a wake-up across CPUs costs
/// tens of microseconds more than one on the waker's own, and which of two servers the kernel
/// happens to keep beside the client otherwise decides the figure (rounds of 0.2x and 5x for
/// the same two builds). On one CPU both builds pay the same wake-ups, and the ratio is their
/// code's.
fn versus_rows(
    opts: &Options,
    other: &Path,
    data: &str,
    n: usize,
    rows: &mut [Row; 4],
) -> Result<(), String> {
    let _one_cpu = OneCpu::pin()?;
    let [stdio_p50, http_p50, http_rate, cold_p50] = rows;
    let pair = opts.pair.to_string_lossy().into_owned();
    let (this_data, other_data) = (format!("{data}/this"), format!("{data}/other"));
    let args = |data: &str| ["stdio", "--plugins", &pair, "--data", data].map(str::to_owned);
    let mut clients = vec![
        stdio(
            other,
            &args(&other_data).each_ref().map(String::as_str),
            &[],
        )?,
        stdio(
            &opts.host,
            &args(&this_data).each_ref().map(String::as_str),
            &[],
        )?,
    ];
    let echo = json!({"text": "x"});
    let sides = [0, 1].map(|client| Side {
        client,
        tool: "fixture_echo",
        args: echo.clone(),
    });
    let serial = serial(&mut clients, &sides, n)?;
    stdio_p50.rounds.push(us(serial[1].p50) / us(serial[0].p50));
    stdio_p50.detail = format!(
        "other {:.1} us, this {:.1} us",
        us(serial[0].p50),
        us(serial[1].p50)
    );
    drop(clients);

    let (other_addr, this_addr) = (free_addr("127.0.0.1")?, free_addr("127.0.0.1")?);
    let other_server = serve(
        other,
        &opts.pair,
        &other_addr,
        &["--data", &other_data],
        &[],
    )?;
    let this_server = serve(
        &opts.host,
        &opts.pair,
        &this_addr,
        &["--data", &this_data],
        &[],
    )?;
    let [was, now] = http(
        [
            (&other_addr, "fixture_echo", other_server.0.id()),
            (&this_addr, "fixture_echo", this_server.0.id()),
        ],
        n,
    )?;
    http_p50.rounds.push(us(now.p50) / us(was.p50));
    http_p50.detail = format!("other {:.1} us, this {:.1} us", us(was.p50), us(now.p50));
    http_rate.rounds.push(now.rate / was.rate);
    http_rate.detail = format!("other {:.0}/s, this {:.0}/s", was.rate, now.rate);
    drop((other_server, this_server));

    let all = opts.all.to_string_lossy().into_owned();
    let (mut was, mut now) = (Vec::new(), Vec::new());
    for _ in 0..41 {
        was.push(
            cold(
                other,
                &["stdio", "--plugins", &all, "--data", &other_data],
                &[],
            )?
            .0,
        );
        now.push(
            cold(
                &opts.host,
                &["stdio", "--plugins", &all, "--data", &this_data],
                &[],
            )?
            .0,
        );
    }
    let (was, now) = (p50(&mut was), p50(&mut now));
    cold_p50.rounds.push(now.as_secs_f64() / was.as_secs_f64());
    cold_p50.detail = format!(
        "other {:.2} ms, this {:.2} ms",
        was.as_secs_f64() * 1e3,
        now.as_secs_f64() * 1e3
    );
    Ok(())
}

/// This process and the children it starts meanwhile kept on the CPU it runs on, until
/// dropped (children started before are not affected; those started meanwhile keep it).
struct OneCpu(libc::cpu_set_t);

impl OneCpu {
    fn pin() -> Result<Self, String> {
        // SAFETY: sched_getaffinity/sched_setaffinity read and write a cpu_set_t of the size
        // given, for this thread (0), which owns no other state they touch; sched_getcpu only
        // reads this thread's CPU.
        unsafe {
            let mut before: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            if libc::sched_getaffinity(0, size, &mut before) != 0 {
                return Err(format!(
                    "sched_getaffinity: {}",
                    std::io::Error::last_os_error()
                ));
            }
            let cpu = libc::sched_getcpu().max(0) as usize;
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut one);
            if libc::sched_setaffinity(0, size, &one) != 0 {
                return Err(format!(
                    "sched_setaffinity: {}",
                    std::io::Error::last_os_error()
                ));
            }
            Ok(Self(before))
        }
    }
}

impl Drop for OneCpu {
    fn drop(&mut self) {
        // SAFETY: as in `pin`: this thread's mask, set back to what it was.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0);
        }
    }
}

/// HTTP against rmcp's stateless JSON server, both listening.
fn http_rows(opts: &Options, data: &str, n: usize, rows: [&mut Row; 2]) -> Result<(), String> {
    let [http_p50, http_rate] = rows;
    let rmcp_addr = free_addr("127.0.0.1")?;
    #[allow(clippy::disallowed_methods)] // The bench starts the servers it measures.
    let rmcp_server = Command::new(&opts.rmcp)
        .args(["http", &rmcp_addr])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("start rmcp-baseline http: {e}"))?;
    let rmcp_server = Proc(rmcp_server);
    wait_listening(&rmcp_addr)?;
    let addr = free_addr("127.0.0.1")?;
    let server = serve(&opts.host, &opts.pair, &addr, &["--data", data], &[])?;
    let [rmcp, host] = http(
        [
            (&rmcp_addr, "echo", rmcp_server.0.id()),
            (&addr, "fixture_echo", server.0.id()),
        ],
        n,
    )?;
    http_p50.rounds.push(us(host.p50) / us(rmcp.p50));
    http_p50.detail = format!(
        "rmcp {:.1} us, coremcp {:.1} us",
        us(rmcp.p50),
        us(host.p50)
    );
    http_rate.rounds.push(host.rate / rmcp.rate);
    // The client shares the machine: its CPU per call bounds what a faster server can gain.
    http_rate.detail = format!(
        "rmcp {:.0}/s, coremcp {:.0}/s; CPU per call: rmcp {:.1} us, coremcp {:.1} us, \
         the client {:.1} us (against rmcp) and {:.1} us (against coremcp)",
        rmcp.rate,
        host.rate,
        rmcp.server_cpu_us,
        host.server_cpu_us,
        rmcp.client_cpu_us,
        host.client_cpu_us
    );
    Ok(())
}

/// The table: each row's median, goal and rounds.
/// The size of the install measured (the host binary and every library, as laid out: stripped
/// by scripts/bench as scripts/build does), in MB of 10^6 bytes.
fn install_size(opts: &Options) -> Result<(f64, String), String> {
    let len = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.len())
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let host = len(&opts.host)?;
    let mut libraries = 0;
    for entry in std::fs::read_dir(&opts.all).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "so") {
            libraries += len(&path)?;
        }
    }
    let mb = |b: u64| b as f64 / 1e6;
    Ok((
        mb(host + libraries),
        format!(
            "coremcp {:.1} MB, libraries {:.1} MB",
            mb(host),
            mb(libraries)
        ),
    ))
}

/// The table as a page (`--write`): the machine, the date, the commit, the method, the rows.
fn write_page(path: &Path, opts: &Options, n: usize, rows: &[&Row]) -> Result<(), String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
        })
        .map_or("unknown CPU".to_owned(), |m| m.trim().to_owned());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    let env = |name: &str| std::env::var(name).unwrap_or_else(|_| "unknown".to_owned());
    let mut page = String::from(
        "# Performance: the overhead budget\n\n\
         Written by `scripts/bench --goals --write docs/performance.md`; run it again rather than \
         edit this page. Every figure is a ratio (or a difference) against a baseline measured \
         in the same run, side by side, so a shared machine's slow spells weigh on both.\n\n",
    );
    page.push_str(&format!(
        "- Machine: {cpu}, {cores} cores, {memory_gib:.0} GiB\n- Date: {}\n- Commit: {}\n\
         - Method: medians of {} rounds; {n} serial calls per figure, in {BLOCKS} blocks \
         alternating with the baseline's\n\n",
        env("COREMCP_BENCH_DATE"),
        env("COREMCP_BENCH_COMMIT"),
        opts.rounds
    ));
    page.push_str(
        "| Figure | Median | Goal | Holds | Rounds | Baseline and figures of the last round |\n",
    );
    page.push_str("|---|---|---|---|---|---|\n");
    for row in rows {
        let (median, goal, holds, rounds) = row.cells();
        page.push_str(&format!(
            "| {} | {median} | {goal} | {holds} | {rounds} | {} |\n",
            row.figure,
            row.detail.replace('|', "/")
        ));
    }
    std::fs::write(path, page).map_err(|e| format!("{}: {e}", path.display()))
}

fn print_table(opts: &Options, n: usize, rows: &[&Row]) {
    println!(
        "\nmedians of {} rounds ({} serial calls per figure, in {BLOCKS} blocks alternating with \
         the baseline's; each ratio is within its round)",
        opts.rounds, n
    );
    println!(
        "| {:<58} | {:>9} | {:>10} | {:<5} | rounds, last round's figures",
        "figure", "median", "goal", "holds"
    );
    println!(
        "|{}|{}|{}|{}|---",
        "-".repeat(60),
        "-".repeat(11),
        "-".repeat(12),
        "-".repeat(7)
    );
    for row in rows {
        row.print();
    }
    if opts.everything.is_none() {
        println!("(the upstream rows need --everything: server-everything was not given)");
    }
    if let Some(path) = &opts.write {
        match write_page(path, opts, n, rows) {
            Ok(()) => println!("written to {}", path.display()),
            Err(e) => eprintln!("goals-bench: cannot write the page: {e}"),
        }
    }
}

/// server-everything's `echo` directly, and through `coremcp stdio` as
/// `mcp__everything__echo`, both connected at once: each one's serial p50 and pipelined rate
/// ([`IN_FLIGHT`] in flight), in alternating blocks.
fn upstream(everything: &Path, opts: &Options, data: &str, n: usize) -> Result<Upstream, String> {
    let args = json!({"message": "goals"});
    let servers = format!("everything={} stdio", everything.display());
    let empty = Path::new(data).join("no-plugins");
    std::fs::create_dir_all(&empty).map_err(|e| e.to_string())?;
    let through = stdio(
        &opts.host,
        &[
            "stdio",
            "--plugins",
            &empty.to_string_lossy(),
            "--data",
            data,
        ],
        &[
            ("COREMCP_MCP_CONFIG", ""),
            ("COREMCP_MCP_SERVERS", &servers),
            ("COREMCP_MCP_GRANTS", "stdio=everything"),
            ("COREMCP_MCP_REQUIRE_APPROVAL", "false"),
        ],
    )?;
    let mut clients = vec![stdio(everything, &["stdio"], &[])?, through];
    let tools = ["echo", "mcp__everything__echo"];
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listing = clients[1].request("tools/list", json!({}))?;
        let listed = listing["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == tools[1]));
        if listed {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("{} was not listed within 30 s", tools[1]));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let sides: Vec<Side<'_>> = tools
        .iter()
        .enumerate()
        .map(|(client, tool)| Side {
            client,
            tool,
            args: args.clone(),
        })
        .collect();
    let measured = serial(&mut clients, &sides, n)?;
    let per_block = (2 * n / BLOCKS).max(IN_FLIGHT);
    let mut spent = [Duration::ZERO; 2];
    // The CPU of the process each side talks to: server-everything direct, coremcp through.
    let mut cpu = [0u64; 2];
    for _ in 0..BLOCKS {
        for (i, tool) in tools.iter().enumerate() {
            let before = cpu_ns(clients[i].pid())?;
            spent[i] += clients[i].pipelined(tool, &args, per_block, IN_FLIGHT)?;
            cpu[i] += cpu_ns(clients[i].pid())?.saturating_sub(before);
        }
    }
    let calls = (BLOCKS * per_block) as f64;
    let rate = |i: usize| calls / spent[i].as_secs_f64();
    Ok(Upstream {
        p50: [measured[0].p50, measured[1].p50],
        rate: [rate(0), rate(1)],
        everything_cpu_us: cpu[0] as f64 / calls / 1e3,
        coremcp_cpu_us: cpu[1] as f64 / calls / 1e3,
    })
}

/// What [`upstream`] measured: p50 and in-flight rate direct and through coremcp, and the CPU
/// per in-flight call (µs) of server-everything (direct) and of coremcp (through).
struct Upstream {
    p50: [Duration; 2],
    rate: [f64; 2],
    everything_cpu_us: f64,
    coremcp_cpu_us: f64,
}
