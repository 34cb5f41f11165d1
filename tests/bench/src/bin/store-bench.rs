//! Store round trips through `coremcp stdio`: serial `notepad_set` and `notepad_get` calls and
//! one 10 000-entry `notepad_bulk_set`, on the store given by `--store`, each against the same
//! host's trivial `fixture_echo` measured in the same run (so the ratios say what the store
//! costs on top of a call, whatever the machine's noise).
//!
//! usage: store-bench --host <coremcp> --plugins <dir with fixture + notepad> --data <dir>
//!                    --store <sqlite:|postgres://…> [--label NAME] [--calls N] [--bulk N]

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use coremcp_bench::stdio_client::StdioClient;
use coremcp_bench::store_run::{self, percentile, StoreRun};

use serde_json::{json, Value};

/// Serial round trips of `make(i)`: (p50, p99, calls per second).
fn serial(
    host: &mut StdioClient,
    n: usize,
    tool: &str,
    make: impl Fn(usize) -> Value,
) -> Result<(Duration, Duration, f64), String> {
    let (mut times, total) = store_run::serial(host, n, tool, make)?;
    Ok((
        percentile(&mut times, 0.5),
        percentile(&mut times, 0.99),
        n as f64 / total.as_secs_f64(),
    ))
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn run(opts: &StoreRun) -> Result<(), String> {
    let mut host = opts.start("store-bench")?;
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
    for round in 0..opts.number("--bulk") {
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
        opts.number("--bulk"),
        median.as_secs_f64() * 1e3,
        10_000.0 / median.as_secs_f64(),
        median.as_secs_f64() / set50.as_secs_f64()
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let outcome = StoreRun::from_args(2000, &[("--bulk", 3, 1)]).and_then(|opts| run(&opts));
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("store-bench: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
