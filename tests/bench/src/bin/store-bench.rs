//! Store round trips through `coremcp stdio`: serial `notepad_set` and `notepad_get` calls and
//! one 10 000-entry `notepad_bulk_set`, on the store given by `--store`, each against the same
//! host's trivial `fixture_echo` measured in the same run (so the ratios say what the store
//! costs on top of a call, whatever the machine's noise).
//!
//! usage: store-bench --host <coremcp> --plugins <dir with fixture + notepad> --data <dir>
//!                    --store <sqlite:|postgres://…> [--label NAME] [--calls N] [--bulk N]

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use coremcp_bench::stdio_client::StdioClient;

use serde_json::{json, Value};

struct Options {
    host: PathBuf,
    plugins: PathBuf,
    data: PathBuf,
    store: String,
    label: String,
    calls: usize,
    bulk: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let (mut host, mut plugins, mut data, mut store) = (None, None, None, None);
    let (mut label, mut calls, mut bulk) = (None, 2000, 3);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<usize>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--host" => host = Some(PathBuf::from(value)),
            "--plugins" => plugins = Some(PathBuf::from(value)),
            "--data" => data = Some(PathBuf::from(value)),
            "--store" => store = Some(value),
            "--label" => label = Some(value),
            "--calls" => calls = number(&value)?.max(10),
            "--bulk" => bulk = number(&value)?.max(1),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let store: String = store.ok_or("--store is required")?;
    Ok(Options {
        host: host.ok_or("--host is required")?,
        plugins: plugins.ok_or("--plugins is required")?,
        data: data.ok_or("--data is required")?,
        label: label.unwrap_or_else(|| store.split(':').next().unwrap_or("store").to_owned()),
        store,
        calls,
        bulk,
    })
}

/// Serial round trips of `make(i)`: (p50, p99, calls per second).
fn serial(
    host: &mut StdioClient,
    n: usize,
    tool: &str,
    make: impl Fn(usize) -> Value,
) -> Result<(Duration, Duration, f64), String> {
    let mut times = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        host.call(tool, make(i))?;
        times.push(t.elapsed());
    }
    let total = started.elapsed();
    times.sort();
    let at = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    Ok((at(0.5), at(0.99), n as f64 / total.as_secs_f64()))
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn run(opts: &Options) -> Result<(), String> {
    let args = [
        "--plugins".as_ref(),
        opts.plugins.as_os_str(),
        "--data".as_ref(),
        opts.data.as_os_str(),
        "--store".as_ref(),
        opts.store.as_ref(),
        "--call-timeout".as_ref(),
        "600".as_ref(),
    ];
    let mut host = StdioClient::start::<_, &std::ffi::OsStr>(&opts.host, args, "store-bench")?;
    let echo = |_: usize| json!({"text": "x"});
    let note = |i: usize| json!({"scope": "global", "key": format!("bench/{}", i % 100), "value": format!("value {i}")});
    let read = |i: usize| json!({"scope": "global", "key": format!("bench/{}", i % 100)});
    // Warm up: load both plugins, open the store, fill the keys.
    serial(&mut host, 200, "fixture_echo", echo)?;
    serial(&mut host, 200, "notepad_set", note)?;
    let (echo50, echo99, echo_rate) = serial(&mut host, opts.calls, "fixture_echo", echo)?;
    let (set50, set99, set_rate) = serial(&mut host, opts.calls, "notepad_set", note)?;
    let (get50, get99, get_rate) = serial(&mut host, opts.calls, "notepad_get", read)?;
    let label = &opts.label;
    println!(
        "{label}: {} serial calls each through coremcp stdio",
        opts.calls
    );
    println!(
        "  fixture_echo (baseline)  p50 {:7.1} us  p99 {:7.1} us  {:7.0} calls/s",
        us(echo50),
        us(echo99),
        echo_rate
    );
    for (name, p50, p99, rate) in [
        ("notepad_set", set50, set99, set_rate),
        ("notepad_get", get50, get99, get_rate),
    ] {
        println!(
            "  {name:<24} p50 {:7.1} us  p99 {:7.1} us  {:7.0} calls/s  ({:.1}x the baseline p50)",
            us(p50),
            us(p99),
            rate,
            p50.as_secs_f64() / echo50.as_secs_f64()
        );
    }
    let pad = "v".repeat(100);
    let mut bulk_times = Vec::new();
    for round in 0..opts.bulk {
        let entries: Vec<Value> = (0..10_000)
            .map(|i| json!({"key": format!("k{i:05}"), "value": format!("{round}-{i}-{pad}")}))
            .collect();
        let args = json!({"scope": "project:BENCH", "entries": entries});
        let t = Instant::now();
        let result = host.call("notepad_bulk_set", args)?;
        bulk_times.push(t.elapsed());
        if result["structuredContent"]["set"] != json!(10_000) {
            return Err(format!(
                "notepad_bulk_set did not set 10 000 notes: {result}"
            ));
        }
    }
    bulk_times.sort();
    let median = bulk_times[bulk_times.len() / 2];
    println!(
        "  notepad_bulk_set 10 000 entries (~1.1 MB): median of {} {:.1} ms ({:.0} notes/s; {:.0}x one notepad_set p50)",
        opts.bulk,
        median.as_secs_f64() * 1e3,
        10_000.0 / median.as_secs_f64(),
        median.as_secs_f64() / set50.as_secs_f64()
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let outcome = parse_args().and_then(|opts| run(&opts));
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("store-bench: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
