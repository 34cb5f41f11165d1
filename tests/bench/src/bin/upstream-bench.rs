//! An upstream MCP server's tool called directly and through coremcp, in one run: the real
//! `@modelcontextprotocol/server-everything`'s `echo` over stdio, against the same tool as
//! `mcp__everything__echo` through `coremcp stdio` (which runs server-everything as its
//! upstream server). For each: serial p50 and p90 after a warm-up, and calls/s with 16 requests
//! in flight on the one stdio connection; then the hop's overhead (through minus direct, and the
//! ratio).
//!
//! usage: upstream-bench --host <coremcp> --everything <mcp-server-everything>
//!        [--plugins <dir>] [--calls N]
//!
//! Without `--plugins` coremcp gets an empty plugins folder, so the figures are the upstream
//! hop alone. The server-everything path must not contain whitespace (it goes into
//! `COREMCP_MCP_SERVERS`, which splits on it).

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coremcp_bench::stdio_client::StdioClient;
use serde_json::{json, Value};

const IN_FLIGHT: usize = 16;
const WARM_UP: usize = 200;
const DIRECT_TOOL: &str = "echo";
const THROUGH_TOOL: &str = "mcp__everything__echo";
/// How long coremcp may take to publish the upstream tool.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(30);

struct Options {
    host: PathBuf,
    everything: PathBuf,
    plugins: Option<PathBuf>,
    calls: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let (mut host, mut everything, mut plugins, mut calls) = (None, None, None, 2000);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--host" => host = Some(PathBuf::from(value)),
            "--everything" => everything = Some(PathBuf::from(value)),
            "--plugins" => plugins = Some(PathBuf::from(value)),
            "--calls" => calls = value.parse().map_err(|e| format!("--calls: {e}"))?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(Options {
        host: host.ok_or("--host is required")?,
        everything: everything.ok_or("--everything is required")?,
        plugins,
        calls: calls.max(100),
    })
}

/// A scratch folder removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Self, String> {
        let path =
            std::env::temp_dir().join(format!("coremcp-upstream-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(path.join("plugins"))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Serial figures and the pipelined rate of one way of calling the tool.
struct Figures {
    p50: Duration,
    p90: Duration,
    rate: f64,
}

fn measure(client: &mut StdioClient, tool: &str, calls: usize) -> Result<Figures, String> {
    let args = json!({"message": "upstream bench"});
    let expected = json!("Echo: upstream bench");
    let one = |client: &mut StdioClient| -> Result<(), String> {
        let result = client.call(tool, args.clone())?;
        if result["content"][0]["text"] != expected {
            return Err(format!("{tool}: unexpected answer {result}"));
        }
        Ok(())
    };
    for _ in 0..WARM_UP {
        one(client)?;
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        one(client)?;
        times.push(t.elapsed());
    }
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    let total = calls * 4;
    let took = client.pipelined(tool, &args, total, IN_FLIGHT)?;
    Ok(Figures {
        p50: at(0.5),
        p90: at(0.9),
        rate: total as f64 / took.as_secs_f64(),
    })
}

fn names(listing: &Value) -> Vec<&str> {
    listing["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default()
}

/// `coremcp stdio` with server-everything as its upstream server "everything", once
/// `mcp__everything__echo` is listed. Its stderr goes to `log`.
fn through_coremcp(opts: &Options, plugins: &Path, log: &Path) -> Result<StdioClient, String> {
    let everything = opts
        .everything
        .to_str()
        .ok_or("--everything is not UTF-8")?;
    if everything.chars().any(char::is_whitespace) {
        return Err(format!(
            "{everything} contains whitespace, which COREMCP_MCP_SERVERS cannot express"
        ));
    }
    let stderr = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    #[allow(clippy::disallowed_methods)] // The bench starts the binary it measures.
    let mut command = Command::new(&opts.host);
    command
        .arg("stdio")
        .arg("--plugins")
        .arg(plugins)
        .env_remove("COREMCP_GROUPS")
        .env_remove("COREMCP_MCP_PREAPPROVED")
        .env("COREMCP_MCP_CONFIG", "")
        .env(
            "COREMCP_MCP_SERVERS",
            format!("everything={everything} stdio"),
        )
        .env("COREMCP_MCP_GRANTS", "stdio=everything")
        .env("COREMCP_MCP_REQUIRE_APPROVAL", "false")
        .stderr(Stdio::from(stderr));
    let mut client = StdioClient::spawn(command, "upstream-bench")?;
    let deadline = Instant::now() + PUBLISH_TIMEOUT;
    loop {
        let listing = client.request("tools/list", json!({}))?;
        if names(&listing).contains(&THROUGH_TOOL) {
            return Ok(client);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "coremcp did not list {THROUGH_TOOL} within {} s (it listed {:?})",
                PUBLISH_TIMEOUT.as_secs(),
                names(&listing)
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn row(label: &str, f: &Figures) {
    println!(
        "  {label:<32} {:>9.1} {:>9.1} {:>12.0}",
        us(f.p50),
        us(f.p90),
        f.rate
    );
}

fn run(opts: &Options, scratch: &Scratch) -> Result<(), String> {
    let n = opts.calls;
    println!(
        "server-everything echo: {n} serial calls after {WARM_UP} warm-up; {} calls with \
         {IN_FLIGHT} in flight on one stdio connection",
        n * 4
    );
    println!(
        "  {:<32} {:>9} {:>9} {:>12}",
        "", "p50 us", "p90 us", "calls/s"
    );

    #[allow(clippy::disallowed_methods)] // The bench starts the server it measures.
    let mut command = Command::new(&opts.everything);
    command.arg("stdio").stderr(Stdio::null());
    let mut direct = StdioClient::spawn(command, "upstream-bench")?;
    let d = measure(&mut direct, DIRECT_TOOL, n)?;
    drop(direct);
    row("direct (stdio)", &d);

    let plugins = opts
        .plugins
        .clone()
        .unwrap_or_else(|| scratch.0.join("plugins"));
    let log = scratch.0.join("coremcp-stderr.log");
    let t = through_coremcp(opts, &plugins, &log)
        .and_then(|mut client| measure(&mut client, THROUGH_TOOL, n))
        .map_err(|e| {
            let stderr = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = stderr.lines().collect();
            let tail = lines[lines.len().saturating_sub(20)..].join("\n");
            format!("{e}\ncoremcp stderr (last lines):\n{tail}")
        })?;
    row("through coremcp stdio", &t);
    println!(
        "  hop overhead: p50 +{:.1} us ({:.2}x), p90 +{:.1} us ({:.2}x), \
         throughput {:.2}x of direct",
        us(t.p50) - us(d.p50),
        t.p50.as_secs_f64() / d.p50.as_secs_f64(),
        us(t.p90) - us(d.p90),
        t.p90.as_secs_f64() / d.p90.as_secs_f64(),
        t.rate / d.rate
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let outcome = parse_args().and_then(|opts| {
        let scratch = Scratch::new()?;
        run(&opts, &scratch)
    });
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("upstream-bench: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
