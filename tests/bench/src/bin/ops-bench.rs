//! `shell_run` of `true` through `coremcp stdio` against starting `bash -c true` directly, in
//! alternation in one run (so the machine's drift falls on both alike): the p50 of each and
//! what Core MCP adds to a script (budget: at most 2 ms).
//!
//! usage: ops-bench --host <coremcp> --plugins <dir with the ops plugin> --root <dir> [--calls N]

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use coremcp_bench::stdio_client::StdioClient;
use coremcp_bench::store_run::percentile;
use serde_json::json;

/// What shell_run may add to a script's own start and exit.
const BUDGET: Duration = Duration::from_millis(2);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn run() -> Result<(), String> {
    let (mut host, mut plugins, mut root, mut calls) = (None, None, None, 200usize);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--host" => host = Some(PathBuf::from(value)),
            "--plugins" => plugins = Some(PathBuf::from(value)),
            "--root" => root = Some(PathBuf::from(value)),
            "--calls" => {
                calls = value
                    .parse::<usize>()
                    .map_err(|e| format!("--calls: {e}"))?
                    .max(10)
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let host = host.ok_or("--host is required")?;
    let plugins = plugins.ok_or("--plugins is required")?;
    let root = root.ok_or("--root is required")?;
    let mut client = StdioClient::start::<_, &std::ffi::OsStr>(
        &host,
        [
            "--plugins".as_ref(),
            plugins.as_os_str(),
            "--root".as_ref(),
            root.as_os_str(),
        ],
        "ops-bench",
    )?;
    let args = json!({"script": "true", "shell": "bash"});
    // Warm: the plugin loads on the first call.
    client.call("shell_run", args.clone())?;
    let (mut direct, mut through) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for _ in 0..calls {
        let t = Instant::now();
        #[allow(clippy::disallowed_methods)] // The baseline: bash started the plain way.
        let status = std::process::Command::new("bash")
            .args(["-c", "true"])
            .status()
            .map_err(|e| format!("bash: {e}"))?;
        direct.push(t.elapsed());
        if !status.success() {
            return Err(format!("bash -c true: {status}"));
        }
        let t = Instant::now();
        let result = client.call("shell_run", args.clone())?;
        through.push(t.elapsed());
        if result["structuredContent"]["exit_code"] != 0 {
            return Err(format!("shell_run true: {result}"));
        }
    }
    let (d, s) = (percentile(&mut direct, 0.5), percentile(&mut through, 0.5));
    let added = s.saturating_sub(d);
    println!("{calls} alternating runs each, p50:");
    println!("  bash -c true (started directly)   {:.2} ms", ms(d));
    println!("  shell_run script=true (stdio)     {:.2} ms", ms(s));
    println!(
        "  added by Core MCP {:.2} ms, ratio {:.2}x (budget: at most {} ms added): {}",
        ms(added),
        ms(s) / ms(d),
        BUDGET.as_millis(),
        if added <= BUDGET { "ok" } else { "OVER BUDGET" }
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ops-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
