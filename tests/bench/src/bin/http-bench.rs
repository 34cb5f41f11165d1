//! Streamable HTTP and forwarding, measured in one run (issue: HTTP, relays, remote_host):
//!
//! 1. a trivial tool (`fixture_echo`) over HTTP to `coremcp serve`: serial p50 and calls/s with
//!    16 calls in flight (16 client sessions), against the same tool over `coremcp stdio`;
//! 2. a forwarded `notepad_get` agent → `coremcp stdio --relay` → relay → store, against the
//!    same call made directly to the relay over HTTP (the overhead of the hop);
//! 3. the first call after the first relay dies (one refused connect, then the second relay),
//!    against a call that goes straight to the second;
//! 4. the same forwarded call to a relay over https (its certificate from a CA made here with
//!    the `openssl` CLI, trusted with `--ca-file`): the first call (TCP, TLS handshake, MCP
//!    session) reported alone, then the warm p50 against the http hop of 2.
//!
//! usage: http-bench --host <coremcp> --plugins <dir with fixture + notepad> [--calls N]

#![allow(clippy::print_stdout)]

use std::path::Path;
use std::time::{Duration, Instant};

use coremcp_bench::host_args::HostArgs;
use coremcp_bench::http_call::http_call;
use coremcp_bench::procs::{self, free_addr, Proc};
use coremcp_bench::stdio_client::StdioClient;
use coremcp_net::client::Url;
use coremcp_relay::client::McpClient;
use serde_json::json;

type Options = HostArgs;

fn parse_args() -> Result<Options, String> {
    HostArgs::parse(2000, 100)
}

/// `coremcp serve --listen ADDR ARGS…`, once it accepts connections.
fn serve(opts: &Options, addr: &str, args: &[&str]) -> Result<Proc, String> {
    procs::serve(&opts.host, &opts.plugins, addr, args, &[])
}

/// `coremcp stdio --plugins DIR ARGS…`.
fn start_stdio(opts: &Options, args: &[&str]) -> Result<StdioClient, String> {
    let mut all = vec![
        "--plugins",
        opts.plugins.to_str().ok_or("--plugins is not UTF-8")?,
    ];
    all.extend_from_slice(args);
    StdioClient::start(&opts.host, all, "http-bench")
}

/// An agent: `coremcp stdio` with these relays (in order), its own data folder, and `extra`.
fn start_agent(
    opts: &Options,
    relays: &[&str],
    data: &str,
    extra: &[&str],
) -> Result<StdioClient, String> {
    let mut args: Vec<&str> = extra.to_vec();
    for relay in relays {
        args.extend_from_slice(&["--relay", relay]);
    }
    args.extend_from_slice(&["--data", data]);
    start_stdio(opts, &args)
}

/// p50 of `n` serial calls of `call`.
fn p50(n: usize, mut call: impl FnMut() -> Result<(), String>) -> Result<Duration, String> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        call()?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn client(addr: &str) -> Result<McpClient, String> {
    Ok(McpClient::new(
        Url::parse(&format!("http://{addr}/mcp")).map_err(|e| e.to_string())?,
        true,
    ))
}

fn run(opts: &Options) -> Result<(), String> {
    let echo = json!({"text": "x"});
    let n = opts.calls;

    // 1. Trivial tool over HTTP vs stdio.
    let addr = free_addr("127.0.0.1")?;
    let _server = serve(opts, &addr, &[])?;
    let mut http = client(&addr)?;
    p50(200, || http_call(&mut http, "fixture_echo", &echo))?;
    let http_p50 = p50(n, || http_call(&mut http, "fixture_echo", &echo))?;
    let mut stdio = start_stdio(opts, &[])?;
    p50(200, || stdio.call("fixture_echo", echo.clone()).map(drop))?;
    let stdio_p50 = p50(n, || stdio.call("fixture_echo", echo.clone()).map(drop))?;
    let per_thread = n;
    let started = Instant::now();
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let addr = addr.clone();
            let echo = echo.clone();
            std::thread::spawn(move || -> Result<(), String> {
                let mut c = client(&addr)?;
                for _ in 0..per_thread {
                    http_call(&mut c, "fixture_echo", &echo)?;
                }
                Ok(())
            })
        })
        .collect();
    for w in workers {
        w.join().map_err(|_| "a worker panicked".to_owned())??;
    }
    let rate = (16 * per_thread) as f64 / started.elapsed().as_secs_f64();
    println!("fixture_echo, {n} serial calls each:");
    println!("  stdio (baseline)  p50 {:7.1} us", us(stdio_p50));
    println!(
        "  HTTP              p50 {:7.1} us  ({:.2}x stdio)",
        us(http_p50),
        http_p50.as_secs_f64() / stdio_p50.as_secs_f64()
    );
    println!("  HTTP, 16 in flight (16 sessions): {rate:.0} calls/s");

    // 2. Forwarded notepad_get: agent → relay → store, vs straight to the relay.
    let data = std::env::temp_dir().join(format!("coremcp-http-bench-{}", std::process::id()));
    let data_arg = data.to_string_lossy().into_owned();
    let first_addr = free_addr("127.0.0.2")?;
    let second_addr = free_addr("127.0.0.3")?;
    let relay_args = ["--service", "--data", data_arg.as_str()];
    let mut first = serve(opts, &first_addr, &relay_args)?;
    let _second = serve(opts, &second_addr, &relay_args)?;
    let mut direct = client(&first_addr)?;
    http_call(
        &mut direct,
        "notepad_set",
        &json!({"scope": "global", "key": "bench", "value": "v"}),
    )?;
    let get = json!({"scope": "global", "key": "bench"});
    p50(200, || http_call(&mut direct, "notepad_get", &get))?;
    let direct_p50 = p50(n, || http_call(&mut direct, "notepad_get", &get))?;
    let (first_url, second_url) = (
        format!("http://{first_addr}/mcp"),
        format!("http://{second_addr}/mcp"),
    );
    let agent_data = format!("{data_arg}-agent");
    let mut agent = start_agent(opts, &[&first_url, &second_url], &agent_data, &[])?;
    p50(200, || agent.call("notepad_get", get.clone()).map(drop))?;
    let hop_p50 = p50(n, || agent.call("notepad_get", get.clone()).map(drop))?;
    println!("notepad_get on a relay (SQLite store), {n} serial calls each:");
    println!(
        "  straight to the relay over HTTP    p50 {:7.1} us",
        us(direct_p50)
    );
    println!(
        "  agent stdio -> relay -> store      p50 {:7.1} us  (hop adds {:.1} us, {:.2}x)",
        us(hop_p50),
        us(hop_p50) - us(direct_p50),
        hop_p50.as_secs_f64() / direct_p50.as_secs_f64()
    );

    // 3. The first relay dies: the first call after it, and the ones after that.
    let _ = first.0.kill();
    let _ = first.0.wait();
    let t = Instant::now();
    agent.call("notepad_get", get.clone()).map(drop)?;
    let first_after = t.elapsed();
    let after_p50 = p50(200, || agent.call("notepad_get", get.clone()).map(drop))?;
    println!(
        "first relay killed: first call {:.1} us (one refused connect, then the second relay); \
         next calls p50 {:.1} us (it is skipped)",
        us(first_after),
        us(after_p50)
    );
    // 4. The hop over https.
    let tls_dir = data.join("tls");
    std::fs::create_dir_all(&tls_dir).map_err(|e| e.to_string())?;
    let tls_addr = free_addr("127.0.0.4")?;
    let authority = coremcp_tests::tls::TestCa::new(&tls_dir, "bench-ca");
    let relay_cert = authority.issue("relay", "IP:127.0.0.4", 2);
    let ca = authority.cert().to_string_lossy().into_owned();
    let (cert, key) = (
        relay_cert.cert.to_string_lossy().into_owned(),
        relay_cert.key.to_string_lossy().into_owned(),
    );
    let tls_data = format!("{data_arg}-tls");
    let _tls_relay = serve(
        opts,
        &tls_addr,
        &[
            "--service",
            "--data",
            &tls_data,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ],
    )?;
    let tls_agent_data = format!("{data_arg}-tls-agent");
    let tls_url = format!("https://{tls_addr}/mcp");
    let mut tls_agent = start_agent(opts, &[&tls_url], &tls_agent_data, &["--ca-file", &ca])?;
    tls_agent.call(
        "notepad_set",
        json!({"scope": "global", "key": "bench", "value": "v"}),
    )?;
    // The agent's first call opened its connection; a second agent shows the cold call alone.
    let cold_data = format!("{tls_agent_data}-cold");
    let mut cold_agent = start_agent(opts, &[&tls_url], &cold_data, &["--ca-file", &ca])?;
    let t = Instant::now();
    cold_agent.call("notepad_get", get.clone()).map(drop)?;
    let cold = t.elapsed();
    p50(200, || tls_agent.call("notepad_get", get.clone()).map(drop))?;
    let tls_p50 = p50(n, || tls_agent.call("notepad_get", get.clone()).map(drop))?;
    println!("notepad_get through a relay over https, {n} serial calls:");
    println!(
        "  first call of a new agent (TCP + TLS handshake + MCP session) {:.1} us",
        us(cold)
    );
    println!(
        "  warm p50 {:7.1} us  ({:.2}x the http hop above; budget 1.30x)",
        us(tls_p50),
        tls_p50.as_secs_f64() / hop_p50.as_secs_f64()
    );
    for dir in [&data_arg, &agent_data, &tls_data, &tls_agent_data] {
        let _ = std::fs::remove_dir_all(Path::new(dir));
    }
    let _ = std::fs::remove_dir_all(&cold_data);
    Ok(())
}

fn main() -> std::process::ExitCode {
    match parse_args().and_then(|opts| run(&opts)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("http-bench: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
