//! A soak run: mixed calls against a real `coremcp serve` (proxy mode) and a `coremcp stdio`
//! for a long while — plugin tools, a forwarded group through a relay that is killed and
//! restarted, an upstream MCP server, another upstream that crash-loops (refreshed by SIGHUP
//! so it keeps crash-looping), HTTP sessions opened and ended — sampling each host's RSS,
//! open descriptors and threads. Growth should be flat: the figures at the end are compared
//! with those after the warm-up.
//!
//! usage: soak --host <coremcp> --plugins <dir: fixture, notepad> --fixture <misbehave.py>
//!             [--seconds N] [--every N]

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use coremcp_bench::http_call::http_call;
use coremcp_bench::procs::{free_addr, wait_listening, Proc};
use coremcp_bench::stdio_client::StdioClient;
use coremcp_net::client::Url;
use coremcp_relay::client::McpClient;
use serde_json::{json, Value};

struct Options {
    host: PathBuf,
    plugins: PathBuf,
    fixture: PathBuf,
    seconds: u64,
    every: u64,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut opts = Options {
        host: PathBuf::new(),
        plugins: PathBuf::new(),
        fixture: PathBuf::new(),
        seconds: 600,
        every: 60,
    };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--host" => opts.host = PathBuf::from(value),
            "--plugins" => opts.plugins = PathBuf::from(value),
            "--fixture" => opts.fixture = PathBuf::from(value),
            "--seconds" => opts.seconds = value.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--every" => opts.every = value.parse().map_err(|e| format!("--every: {e}"))?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    for (name, path) in [
        ("--host", &opts.host),
        ("--plugins", &opts.plugins),
        ("--fixture", &opts.fixture),
    ] {
        if path.as_os_str().is_empty() {
            return Err(format!("{name} is required"));
        }
    }
    opts.every = opts.every.clamp(5, opts.seconds.max(5));
    Ok(opts)
}

/// What one host process holds now: (RSS kB, open descriptors, threads).
fn sample(pid: u32) -> Option<(u64, usize, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    Some((field("VmRSS:")?, fds, field("Threads:")?))
}

/// Counts of calls by kind: done, and failed.
#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    failed: AtomicU64,
}

impl Tally {
    fn note(&self, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.ok.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

#[derive(Default)]
struct Tallies {
    plugin: Tally,
    forwarded: Tally,
    upstream: Tally,
    crashloop: Tally,
    sessions: Tally,
}

fn stdio_call(client: &mut StdioClient, tool: &str, args: Value) -> Result<(), String> {
    let result = client.request("tools/call", json!({"name": tool, "arguments": args}))?;
    if result.get("isError") == Some(&Value::Bool(true)) {
        Err(format!("{tool}: {result}"))
    } else {
        Ok(())
    }
}

fn run(opts: &Options) -> Result<(), String> {
    let scratch = std::env::temp_dir().join(format!("coremcp-soak-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let store = format!("sqlite:{}", scratch.join("store").display());
    let config = scratch.join("mcp.json");
    let fixture = opts.fixture.to_string_lossy().into_owned();
    std::fs::write(
        &config,
        json!({"servers": [
            {"id": "m", "command": "python3", "args": [fixture, "calls"]},
            {"id": "loop", "command": "python3", "args": [fixture, "crashloop"]},
        ]})
        .to_string(),
    )
    .map_err(|e| e.to_string())?;
    let config = config.to_string_lossy().into_owned();
    let plugins = opts.plugins.to_string_lossy().into_owned();
    let command = |args: &[&str]| {
        #[allow(clippy::disallowed_methods)] // The soak starts the binary it measures.
        let mut command = Command::new(&opts.host);
        command
            .args(args)
            .args(["--plugins", &plugins, "--store", &store])
            .env("COREMCP_MCP_CONFIG", &config)
            .env("COREMCP_MCP_SERVERS", "")
            .env("COREMCP_MCP_GRANTS", "*=m,loop;stdio=m,loop")
            .env("COREMCP_MCP_PREAPPROVED", "m,loop")
            .env("COREMCP_DATA", scratch.join("data"))
            .env_remove("COREMCP_GROUPS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    };
    let relay_addr = free_addr("127.0.0.2")?;
    let start_relay = || -> Result<Proc, String> {
        let child = command(&["serve", "--service", "--listen", &relay_addr])
            .spawn()
            .map_err(|e| format!("start the relay: {e}"))?;
        let proc = Proc(child);
        wait_listening(&relay_addr)?;
        Ok(proc)
    };
    let mut relay = Some(start_relay()?);
    let relay_url = format!("http://{relay_addr}/mcp");
    let proxy_addr = free_addr("127.0.0.1")?;
    let proxy = Proc(
        command(&[
            "serve",
            "--listen",
            &proxy_addr,
            "--relay",
            &relay_url,
            "--relay-retry",
            "2",
        ])
        .spawn()
        .map_err(|e| format!("start coremcp serve: {e}"))?,
    );
    wait_listening(&proxy_addr)?;
    let mut stdio_command = command(&["stdio", "--relay", &relay_url, "--relay-retry", "2"]);
    stdio_command.arg("--call-timeout").arg("10");
    let stdio = StdioClient::spawn(stdio_command, "soak")?;
    let stdio_pid = stdio.pid();

    let tallies = Arc::new(Tallies::default());
    let stop = Arc::new(AtomicBool::new(false));
    let url = Url::parse(&format!("http://{proxy_addr}/mcp")).map_err(|e| e.to_string())?;
    let mut workers = Vec::new();
    // Four HTTP clients, each leaving its session for a new one every 200 calls.
    for worker in 0..4 {
        let (tallies, stop, url) = (Arc::clone(&tallies), Arc::clone(&stop), url.clone());
        workers.push(thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut client = McpClient::new(url.clone(), true);
                for _ in 0..200 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    n += 1;
                    let key = format!("k{worker}-{}", n % 50);
                    tallies
                        .plugin
                        .note(http_call(&mut client, "fixture_echo", &json!({"n": n})));
                    tallies.forwarded.note(http_call(
                        &mut client,
                        "notepad_set",
                        &json!({"scope": "global", "key": key, "value": "v"}),
                    ));
                    if n % 4 == 0 {
                        tallies.upstream.note(http_call(
                            &mut client,
                            "mcp__m__echo",
                            &json!({"message": "soak"}),
                        ));
                    }
                    if n % 25 == 0 {
                        tallies.crashloop.note(http_call(
                            &mut client,
                            "mcp__loop__echo",
                            &json!({"message": "x"}),
                        ));
                    }
                }
                // Dropped without DELETE: past 256 of them, the host ends the least recently
                // used idle ones of this principal.
                tallies.sessions.note(Ok(()));
            }
        }));
    }
    {
        let (tallies, stop) = (Arc::clone(&tallies), Arc::clone(&stop));
        let mut stdio = stdio;
        workers.push(thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                tallies
                    .plugin
                    .note(stdio_call(&mut stdio, "fixture_echo", json!({"n": n})));
                tallies.forwarded.note(stdio_call(
                    &mut stdio,
                    "notepad_get",
                    json!({"scope": "global", "key": "k0-1"}),
                ));
                if n % 4 == 0 {
                    tallies.upstream.note(stdio_call(
                        &mut stdio,
                        "mcp__m__echo",
                        json!({"message": "soak"}),
                    ));
                }
                if n % 100 == 0 {
                    let _ = stdio.request("tools/list", json!({}));
                }
            }
        }));
    }

    let pids = [("serve", proxy.0.id()), ("stdio", stdio_pid)];
    let started = Instant::now();
    let warm_up = Duration::from_secs(opts.every.min(30));
    thread::sleep(warm_up);
    let first: Vec<_> = pids.iter().map(|(_, pid)| sample(*pid)).collect();
    let mut peak = first.clone();
    println!(
        "soak: {} s of mixed calls; samples every {} s (relay killed and restarted, crash loop refreshed, each period)",
        opts.seconds, opts.every
    );
    println!(
        "{:>6}  {:<6} {:>9} {:>5} {:>8}",
        "t (s)", "host", "RSS (kB)", "fds", "threads"
    );
    let print = |t: u64, samples: &[Option<(u64, usize, u64)>]| {
        for ((name, _), s) in pids.iter().zip(samples) {
            match s {
                Some((rss, fds, threads)) => {
                    println!("{t:>6}  {name:<6} {rss:>9} {fds:>5} {threads:>8}")
                }
                None => println!("{t:>6}  {name:<6} (gone)"),
            }
        }
    };
    print(started.elapsed().as_secs(), &first);
    let end = started + Duration::from_secs(opts.seconds);
    while Instant::now() < end {
        let next = (Instant::now() + Duration::from_secs(opts.every)).min(end);
        // Mid-period: the relay dies for 3 s, and the upstream configuration is refreshed
        // (the crash-looping server starts again).
        thread::sleep(Duration::from_secs(opts.every / 2).min(next - Instant::now()));
        relay.take();
        thread::sleep(Duration::from_secs(3));
        relay = Some(start_relay()?);
        for pid in [proxy.0.id(), stdio_pid] {
            // SAFETY: kill(2) on a child this process started; it touches no memory of ours.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGHUP);
            }
        }
        thread::sleep(next.saturating_duration_since(Instant::now()));
        let now: Vec<_> = pids.iter().map(|(_, pid)| sample(*pid)).collect();
        for (p, n) in peak.iter_mut().zip(&now) {
            if let (Some(p), Some(n)) = (p.as_mut(), n) {
                p.0 = p.0.max(n.0);
                p.1 = p.1.max(n.1);
                p.2 = p.2.max(n.2);
            }
        }
        print(started.elapsed().as_secs(), &now);
    }
    stop.store(true, Ordering::Relaxed);
    let last: Vec<_> = pids.iter().map(|(_, pid)| sample(*pid)).collect();
    for worker in workers {
        let _ = worker.join();
    }
    println!();
    println!(
        "{:<6} {:>22} {:>22} {:>22}",
        "host", "RSS kB (warm → end, peak)", "fds", "threads"
    );
    for (i, (name, _)) in pids.iter().enumerate() {
        match (first[i], last[i], peak[i]) {
            (Some(a), Some(b), Some(p)) => println!(
                "{name:<6} {:>22} {:>22} {:>22}",
                format!(
                    "{} → {} ({:.2}x, {})",
                    a.0,
                    b.0,
                    b.0 as f64 / a.0 as f64,
                    p.0
                ),
                format!("{} → {} ({})", a.1, b.1, p.1),
                format!("{} → {} ({})", a.2, b.2, p.2)
            ),
            _ => println!("{name:<6} did not live to the end"),
        }
    }
    let t = &tallies;
    println!();
    for (kind, tally) in [
        ("plugin tool", &t.plugin),
        ("forwarded (relay killed each period)", &t.forwarded),
        ("upstream", &t.upstream),
        ("crash-looping upstream", &t.crashloop),
        ("HTTP sessions", &t.sessions),
    ] {
        println!(
            "{kind:<40} {:>8} ok {:>7} failed",
            tally.ok.load(Ordering::Relaxed),
            tally.failed.load(Ordering::Relaxed)
        );
    }
    drop(relay);
    drop(proxy);
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

fn main() -> std::process::ExitCode {
    match parse_args().and_then(|opts| run(&opts)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
