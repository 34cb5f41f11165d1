//! Seele search of several words on PostgreSQL against SQLite, in one run: the same 2 000
//! nodes of 100 000 characters of prose-like text (a Zipf-distributed 30 000-word vocabulary,
//! so common words are in nearly every node and rare ones in few) imported into both stores,
//! then the same multi-word queries sent to both in turn, call by call, so the machine's drift
//! falls on both alike. Budget: PostgreSQL's p50 within 2x SQLite's on every query.
//!
//! usage: search-bench --host <coremcp> --plugins <dir with seele> --data <dir>
//!                     --pg <postgres://…> [--nodes N] [--chars N] [--calls N]

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use coremcp_bench::stdio_client::StdioClient;
use coremcp_bench::store_run::{analyze, percentile};
use serde_json::{json, Value};

/// Words the queries use, placed in the text at their own rates (per word of text).
const PLANTED: &[(&str, f64)] = &[
    ("relay", 0.004),
    ("failover", 0.001),
    ("quorum", 0.0002),
    ("replica", 0.0005),
    ("latency", 0.002),
];

/// The queries: common with rare, all rare, three words, one common with a prefix.
const QUERIES: &[&str] = &[
    "relay failover",
    "quorum replica",
    "relay latency failover",
    "latency replic",
    "the relay",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The vocabulary: the Zipf rank's word ("the", "of", … then made-up words).
fn vocabulary() -> Vec<String> {
    let common = [
        "the", "of", "and", "to", "a", "in", "is", "it", "that", "for", "on", "with", "as", "was",
        "be", "by", "this", "are", "or", "from",
    ];
    let mut words: Vec<String> = common.iter().map(|w| (*w).to_owned()).collect();
    let syllables = [
        "ka", "lo", "mi", "ren", "sta", "vor", "qui", "del", "tan", "por",
    ];
    let mut i = 0usize;
    while words.len() < 30_000 {
        let (a, b, c) = (i % 10, (i / 10) % 10, (i / 100) % 10);
        let n = i / 1000;
        words.push(format!(
            "{}{}{}{n}",
            syllables[a], syllables[b], syllables[c]
        ));
        i += 1;
    }
    words
}

/// Node `i`'s body: `chars` characters of words drawn by Zipf's law, the planted words at
/// their rates, in sentences.
fn body(i: usize, chars: usize, vocab: &[String], cumulative: &[f64]) -> String {
    let mut rng = Rng(i as u64 * 7919 + 1);
    let mut text = String::with_capacity(chars + 64);
    let mut in_sentence = 0;
    while text.len() < chars {
        let roll = rng.next();
        let planted = PLANTED.iter().scan(0.0, |acc, (w, p)| {
            *acc += p;
            Some((*w, *acc))
        });
        let word = match planted.into_iter().find(|(_, acc)| roll < *acc) {
            Some((w, _)) => w,
            None => {
                let r = rng.next();
                let at = cumulative.partition_point(|c| *c < r).min(vocab.len() - 1);
                vocab[at].as_str()
            }
        };
        text.push_str(word);
        in_sentence += 1;
        if in_sentence > 12 && rng.next() < 0.1 {
            text.push_str(".\n");
            in_sentence = 0;
        } else {
            text.push(' ');
        }
    }
    text
}

fn fill(hosts: &mut [StdioClient; 2], nodes: usize, chars: usize) -> Result<(), String> {
    let vocab = vocabulary();
    let weights: Vec<f64> = (1..=vocab.len()).map(|r| 1.0 / r as f64).collect();
    let sum: f64 = weights.iter().sum();
    let cumulative: Vec<f64> = weights
        .iter()
        .scan(0.0, |acc, w| {
            *acc += w / sum;
            Some(*acc)
        })
        .collect();
    // Within seele_import's 4 MB a call.
    let per_call = (3_500_000 / chars.max(1)).clamp(1, 200);
    for start in (0..nodes).step_by(per_call) {
        let batch: Vec<Value> = (start..(start + per_call).min(nodes))
            .map(|i| {
                json!({"path": format!("big/part-{}/node-{i}", i % 40),
                       "title": format!("Node {i}"), "body": body(i, chars, &vocab, &cumulative)})
            })
            .collect();
        for host in hosts.iter_mut() {
            let done = host.call("seele_import", json!({"nodes": batch}))?;
            if done["structuredContent"]["created"].as_u64() != Some(batch.len() as u64) {
                return Err(format!("import at {start}: {}", &done.to_string()[..300]));
            }
        }
    }
    Ok(())
}

/// Runs one SQL statement with `psql` from `PATH` against `url`.
fn psql(url: &str, sql: &str) -> Result<(), String> {
    #[allow(clippy::disallowed_methods)] // A bench tool run by hand, with the user's own URL.
    let status = std::process::Command::new("psql")
        .args(["-X", "-q", url, "-c", sql])
        .status()
        .map_err(|e| format!("psql: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or(format!("psql {sql:?} failed: {status}"))
}

/// A new, empty database beside the one `url` names, and its URL: each run fills its own.
fn fresh_database(url: &str) -> Result<(String, String), String> {
    let name = format!("search_bench_{}", std::process::id());
    psql(url, &format!("CREATE DATABASE {name}"))?;
    let (base, query) = url.split_once('?').map_or((url, ""), |(b, q)| (b, q));
    let (server, _) = base.rsplit_once('/').ok_or(format!("{url}: no database"))?;
    let sep = if query.is_empty() { "" } else { "?" };
    Ok((name.clone(), format!("{server}/{name}{sep}{query}")))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn run() -> Result<bool, String> {
    let (mut host, mut plugins, mut data, mut pg) = (None, None, None, None);
    let (mut nodes, mut chars, mut calls) = (2_000usize, 100_000usize, 30usize);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number = || value.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--host" => host = Some(PathBuf::from(&value)),
            "--plugins" => plugins = Some(PathBuf::from(&value)),
            "--data" => data = Some(PathBuf::from(&value)),
            "--pg" => pg = Some(value.clone()),
            "--nodes" => nodes = number()?.max(10),
            "--chars" => chars = number()?.max(100),
            "--calls" => calls = number()?.max(5),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let (host, plugins, data, pg) = (
        host.ok_or("--host is required")?,
        plugins.ok_or("--plugins is required")?,
        data.ok_or("--data is required")?,
        pg.ok_or("--pg is required")?,
    );
    let start = |store: &str, dir: &str| -> Result<StdioClient, String> {
        let dir = data.join(dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let args = [
            "--plugins".as_ref(),
            plugins.as_os_str(),
            "--data".as_ref(),
            dir.as_os_str(),
            "--store".as_ref(),
            store.as_ref(),
            "--call-timeout".as_ref(),
            "600".as_ref(),
        ];
        StdioClient::start::<_, &std::ffi::OsStr>(&host, args, "search-bench")
    };
    let admin = pg;
    let (database, pg) = fresh_database(&admin)?;
    let outcome = measure(
        start("sqlite:", "sqlite")?,
        start(&pg, "pg")?,
        &pg,
        (nodes, chars, calls),
    );
    psql(
        &admin,
        &format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"),
    )?;
    outcome
}

/// Fills both hosts and times the queries on both; whether every query kept the budget.
fn measure(
    sqlite: StdioClient,
    postgres: StdioClient,
    pg: &str,
    (nodes, chars, calls): (usize, usize, usize),
) -> Result<bool, String> {
    let mut hosts = [sqlite, postgres];
    let filled = Instant::now();
    fill(&mut hosts, nodes, chars)?;
    analyze(pg)?;
    println!(
        "  {nodes} nodes of {chars} characters imported into both stores in {:.0} s",
        filled.elapsed().as_secs_f64()
    );
    let mut ok = true;
    for query in QUERIES {
        let args = json!({"query": query});
        let mut times: [Vec<Duration>; 2] = Default::default();
        let mut found = [0usize; 2];
        for round in 0..calls + 3 {
            for (k, host) in hosts.iter_mut().enumerate() {
                let t = Instant::now();
                let answer = host.call("seele_search", args.clone())?;
                let took = t.elapsed();
                found[k] = answer["structuredContent"]["items"]
                    .as_array()
                    .map_or(0, Vec::len);
                // The first rounds warm both stores' caches.
                if round >= 3 {
                    times[k].push(took);
                }
            }
        }
        let [sqlite, postgres] = times.map(|mut t| percentile(&mut t, 0.5));
        let ratio = postgres.as_secs_f64() / sqlite.as_secs_f64();
        let within = ratio <= 2.0;
        ok &= within;
        println!(
            "  seele_search {query:?} (limit 10, {} and {} shown): SQLite p50 {:.1} ms, \
             PostgreSQL p50 {:.1} ms, {ratio:.2}x (budget 2x: {})",
            found[0],
            found[1],
            ms(sqlite),
            ms(postgres),
            if within { "ok" } else { "OVER" }
        );
    }
    Ok(ok)
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("search-bench: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
