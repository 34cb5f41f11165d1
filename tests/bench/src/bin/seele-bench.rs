//! Seele on a store of 20 000 nodes (about 2 KB each, imported 200 per call; one node in a
//! hundred has the word `quokka`), in one run:
//!
//! 1. `seele_search` for the word through `coremcp stdio`, each call right after a
//!    `notepad_get` (the baseline; budget: p50 within 10x), p50 and p99;
//! 2. the extra cost of one routed hop: `seele_read` over HTTP to a relay that passes Seele on
//!    (`serve --service --route seele=URL`) against the same call made straight to the owner
//!    (`serve --service` on the store) — budget: under 150 us at p50;
//! 3. the cost of the Consul lookup made on every call: the same relay with
//!    `--route seele=consul://seele` against the URL route. Consul cannot be installed here:
//!    the lookups go to the test suite's Consul double (real HTTP and Consul's JSON, so the
//!    client's work is real; a real agent's own time is not in the figure).
//!
//! The three HTTP paths are called in turn, call by call, so the machine's drift falls on all
//! alike. On PostgreSQL the fill is followed by `ANALYZE`.
//!
//! usage: seele-bench --host <coremcp> --plugins <dir with notepad + seele> --data <dir>
//!                    --store <sqlite:|postgres://…> [--label NAME] [--calls N] [--nodes N]

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use coremcp_bench::http_call::http_call;
use coremcp_bench::procs::{self, free_addr};
use coremcp_bench::stdio_client::StdioClient;
use coremcp_bench::store_run::{self, percentile, StoreRun};
use coremcp_net::client::Url;
use coremcp_relay::client::McpClient;
use coremcp_tests::consul::{ConsulDouble, Instance};
use serde_json::{json, Value};

/// A word of a 4 000-word vocabulary, picked by a small deterministic generator.
fn word(seed: &mut u64) -> String {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    format!("w{}", (*seed >> 33) % 4000)
}

/// Node `i`'s body: about 2 KB of vocabulary words; one node in a hundred has `quokka`.
fn body(i: usize) -> String {
    let mut seed = i as u64 + 1;
    let mut text = format!("# Node {i}\n");
    while text.len() < 2000 {
        text.push_str(&word(&mut seed));
        text.push(' ');
    }
    if i % 100 == 0 {
        text.push_str("quokka");
    }
    text
}

fn path(i: usize) -> String {
    format!("bench/part-{}/node-{i}", i % 50)
}

fn fill(host: &mut StdioClient, nodes: usize) -> Result<(), String> {
    for start in (0..nodes).step_by(200) {
        let batch: Vec<Value> = (start..(start + 200).min(nodes))
            .map(|i| json!({"path": path(i), "body": body(i), "tags": [format!("t{}", i % 20)]}))
            .collect();
        let done = host.call("seele_import", json!({"nodes": batch}))?;
        if done["structuredContent"]["created"].as_u64() != Some(batch.len() as u64) {
            return Err(format!("import at {start}: {done}"));
        }
    }
    Ok(())
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

/// The routed-hop and Consul-lookup figures: three HTTP paths to the same node, in turn.
fn hops(opts: &StoreRun, nodes: usize) -> Result<(), String> {
    let store = [
        "--data".as_ref(),
        opts.data.as_os_str(),
        "--store".as_ref(),
        opts.store.as_ref(),
    ];
    let mut owner_args: Vec<&std::ffi::OsStr> = vec!["--service".as_ref()];
    owner_args.extend(store);
    let owner_addr = free_addr("127.0.0.1")?;
    let _owner = procs::serve(&opts.host, &opts.plugins, &owner_addr, &owner_args, &[])?;
    let relay_data = opts.data.join("relay");
    std::fs::create_dir_all(&relay_data).map_err(|e| e.to_string())?;
    let relay_data = relay_data.to_string_lossy().into_owned();
    let route = format!("seele=http://{owner_addr}/mcp");
    let url_addr = free_addr("127.0.0.1")?;
    let url_args = ["--service", "--data", &relay_data, "--route", &route];
    let _url_relay = procs::serve(&opts.host, &opts.plugins, &url_addr, &url_args, &[])?;
    let consul = ConsulDouble::start();
    let owner_sock = owner_addr
        .parse()
        .map_err(|e| format!("{owner_addr}: {e}"))?;
    consul.set("seele", vec![Instance::at("owner", owner_sock)]);
    let consul_addr = consul.addr.to_string();
    let consul_relay_addr = free_addr("127.0.0.1")?;
    let consul_args = [
        "--service",
        "--data",
        &relay_data,
        "--route",
        "seele=consul://seele",
        "--consul",
        &consul_addr,
    ];
    let _consul_relay = procs::serve(
        &opts.host,
        &opts.plugins,
        &consul_relay_addr,
        &consul_args,
        &[],
    )?;

    let mut paths = [
        client(&owner_addr)?,
        client(&url_addr)?,
        client(&consul_relay_addr)?,
    ];
    let mut floor = client(&owner_addr)?;
    let note = json!({"scope": "global", "key": "bench"});
    http_call(
        &mut floor,
        "notepad_set",
        &json!({"scope": "global", "key": "bench", "value": "v"}),
    )?;
    let mut times: [Vec<Duration>; 4] = Default::default();
    let n = opts.calls * 2;
    for i in 0..(n + 100) {
        let args = json!({"path": path(i * 7 % nodes), "max_chars": 200});
        let mut round = [Duration::ZERO; 4];
        for (k, c) in paths.iter_mut().enumerate() {
            let t = Instant::now();
            http_call(c, "seele_read", &args)?;
            round[k] = t.elapsed();
        }
        // What one whole small call over HTTP costs here: the floor of any extra hop.
        let t = Instant::now();
        http_call(&mut floor, "notepad_get", &note)?;
        round[3] = t.elapsed();
        // The first 100 rounds warm the sessions and caches.
        if i >= 100 {
            for (k, d) in round.into_iter().enumerate() {
                times[k].push(d);
            }
        }
    }
    let [direct, url, via_consul, small] = times.map(|mut t| percentile(&mut t, 0.5));
    let hop = us(url) - us(direct);
    let lookup = us(via_consul) - us(url);
    println!(
        "  seele_read over HTTP, {n} calls each, p50: to the owner {:.1} us; through a relay's \
         URL route {:.1} us; through a consul:// route {:.1} us",
        us(direct),
        us(url),
        us(via_consul)
    );
    println!(
        "  a whole notepad_get over HTTP to the owner (one more exchange's floor) p50 {:.1} us; \
         the hop is {:.2}x it",
        us(small),
        hop / us(small)
    );
    println!(
        "  one routed hop adds {hop:.1} us at p50 (budget < 150 us: {}); the Consul lookup on \
         every call adds {lookup:.1} us more ({} lookups answered by the double)",
        if hop < 150.0 { "ok" } else { "OVER" },
        consul.requests.load(std::sync::atomic::Ordering::SeqCst)
    );
    Ok(())
}

fn run(opts: &StoreRun) -> Result<(), String> {
    let nodes = opts.number("--nodes");
    let mut host = opts.start("seele-bench")?;
    let started = Instant::now();
    fill(&mut host, nodes)?;
    let filled = started.elapsed();
    if opts.store.starts_with("postgres") {
        store_run::analyze(&opts.store)?;
    }
    let note = json!({"scope": "global", "key": "bench"});
    host.call(
        "notepad_set",
        json!({"scope": "global", "key": "bench", "value": "v"}),
    )?;
    store_run::serial(&mut host, 100, "notepad_get", |_| note.clone())?;
    let found = host.call("seele_search", json!({"query": "quokka", "limit": 50}))?;
    let hits = found["structuredContent"]["items"]
        .as_array()
        .map_or(0, Vec::len);
    println!(
        "{}: {nodes} nodes (~2 KB each) imported in {:.1} s, 200 per call; search finds {hits} \
         (limit 50) for a word in 1% of the nodes",
        opts.label,
        filled.as_secs_f64()
    );
    let (mut base, mut search) = store_run::paired_times(
        &mut host,
        opts.calls,
        ("notepad_get", &note),
        "seele_search",
        |_| json!({"query": "quokka"}),
    )?;
    let (b50, s50, s99) = (
        percentile(&mut base, 0.5),
        percentile(&mut search, 0.5),
        percentile(&mut search, 0.99),
    );
    let ratio = s50.as_secs_f64() / b50.as_secs_f64();
    println!(
        "  seele_search (limit 10) p50 {:.1} us, p99 {:.1} us; notepad_get p50 {:.1} us; {ratio:.1}x \
         at p50 (budget 10x: {}), p99 {:.1}x the baseline's p50",
        us(s50),
        us(s99),
        us(b50),
        if ratio <= 10.0 { "ok" } else { "OVER" },
        s99.as_secs_f64() / b50.as_secs_f64()
    );
    let (_, two) = store_run::paired(
        &mut host,
        opts.calls,
        ("notepad_get", &note),
        "seele_search",
        |_| json!({"query": "quokka w7"}),
    )?;
    println!("  seele_search of two words p50 {:.1} us", us(two));
    drop(host);
    hops(opts, nodes)
}

fn main() -> std::process::ExitCode {
    match StoreRun::from_args(500, &[("--nodes", 20_000, 1000)]).and_then(|opts| run(&opts)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seele-bench: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
