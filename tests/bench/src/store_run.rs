//! What the store benches share: their flags (`--host --plugins --data --store [--label]
//! [--calls N]` and a few of their own), the `coremcp stdio` host they start on that store, and
//! the timing of serial calls.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::stdio_client::StdioClient;

/// A bench run against one store.
pub struct StoreRun {
    pub host: PathBuf,
    pub plugins: PathBuf,
    pub data: PathBuf,
    /// `sqlite:` or a `postgres://` URL.
    pub store: String,
    pub label: String,
    pub calls: usize,
    /// The values of the caller's own numeric flags (`--bulk` …), by flag.
    numbers: HashMap<&'static str, usize>,
}

impl StoreRun {
    /// The run the process's arguments describe: `calls` calls unless `--calls` says (at least
    /// 10), and each of `own` (flag, default, least) a number.
    pub fn from_args(calls: usize, own: &[(&'static str, usize, usize)]) -> Result<Self, String> {
        let numeric: Vec<(&'static str, usize, usize)> = std::iter::once(("--calls", calls, 10))
            .chain(own.iter().copied())
            .collect();
        let mut numbers: HashMap<&'static str, usize> = numeric
            .iter()
            .map(|(flag, default, _)| (*flag, *default))
            .collect();
        let (mut host, mut plugins, mut data, mut store, mut label) =
            (None, None, None, None, None);
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--host" => host = Some(PathBuf::from(value)),
                "--plugins" => plugins = Some(PathBuf::from(value)),
                "--data" => data = Some(PathBuf::from(value)),
                "--store" => store = Some(value),
                "--label" => label = Some(value),
                other => {
                    let Some((flag, _, least)) = numeric.iter().find(|(f, _, _)| *f == other)
                    else {
                        return Err(format!("unknown flag {other}"));
                    };
                    let n = value
                        .parse::<usize>()
                        .map_err(|e| format!("{other} {value}: {e}"))?;
                    numbers.insert(flag, n.max(*least));
                }
            }
        }
        let store: String = store.ok_or("--store is required")?;
        Ok(Self {
            host: host.ok_or("--host is required")?,
            plugins: plugins.ok_or("--plugins is required")?,
            data: data.ok_or("--data is required")?,
            label: label.unwrap_or_else(|| store.split(':').next().unwrap_or("store").to_owned()),
            calls: numbers["--calls"],
            store,
            numbers,
        })
    }

    /// The value of one of the caller's own flags.
    pub fn number(&self, flag: &str) -> usize {
        self.numbers.get(flag).copied().unwrap_or_default()
    }

    /// `coremcp stdio` on the run's plugins, data folder and store, with a long call timeout
    /// (a bulk call may take long), named `name` in its errors.
    pub fn start(&self, name: &str) -> Result<StdioClient, String> {
        let args = [
            "--plugins".as_ref(),
            self.plugins.as_os_str(),
            "--data".as_ref(),
            self.data.as_os_str(),
            "--store".as_ref(),
            self.store.as_ref(),
            "--call-timeout".as_ref(),
            "600".as_ref(),
        ];
        StdioClient::start::<_, &std::ffi::OsStr>(&self.host, args, name)
    }
}

/// The times of `n` serial calls of `make(i)`, sorted, and how long they took in all.
pub fn serial(
    host: &mut StdioClient,
    n: usize,
    tool: &str,
    make: impl Fn(usize) -> Value,
) -> Result<(Vec<Duration>, Duration), String> {
    let mut times = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        host.call(tool, make(i))?;
        times.push(t.elapsed());
    }
    let total = started.elapsed();
    times.sort();
    Ok((times, total))
}

/// `n` serial calls of `make(i)`, each right after a call of `base` (so the machine's drift
/// falls on both alike): the p50s of the `base` calls and of the others.
pub fn paired(
    host: &mut StdioClient,
    n: usize,
    base: (&str, &Value),
    tool: &str,
    make: impl Fn(usize) -> Value,
) -> Result<(Duration, Duration), String> {
    let (mut bases, mut times) = paired_times(host, n, base, tool, make)?;
    Ok((percentile(&mut bases, 0.5), percentile(&mut times, 0.5)))
}

/// [`paired`]'s times themselves: of the `base` calls and of the others, each sorted.
pub fn paired_times(
    host: &mut StdioClient,
    n: usize,
    (base, base_args): (&str, &Value),
    tool: &str,
    make: impl Fn(usize) -> Value,
) -> Result<(Vec<Duration>, Vec<Duration>), String> {
    let (mut bases, mut times) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let t = Instant::now();
        host.call(base, base_args.clone())?;
        bases.push(t.elapsed());
        let t = Instant::now();
        host.call(tool, make(i))?;
        times.push(t.elapsed());
    }
    bases.sort();
    times.sort();
    Ok((bases, times))
}

/// The `p` percentile of `times` (sorted here), zero when there are none.
pub fn percentile(times: &mut [Duration], p: f64) -> Duration {
    times.sort();
    match times.len() {
        0 => Duration::ZERO,
        n => times[((n - 1) as f64 * p).round() as usize],
    }
}

/// `ANALYZE` the PostgreSQL database, as autovacuum does about a minute after a bulk load: the
/// planner then knows a bulk fill's rows (before, it takes the table for nearly empty and
/// may skip an index). Uses `psql` from `PATH`.
pub fn analyze(url: &str) -> Result<(), String> {
    #[allow(clippy::disallowed_methods)] // A bench tool run by hand, with the user's own URL.
    let status = std::process::Command::new("psql")
        .args(["-X", "-q", url, "-c", "ANALYZE"])
        .status()
        .map_err(|e| format!("psql (for ANALYZE after the fill): {e}"))?;
    if !status.success() {
        return Err(format!("psql ANALYZE failed: {status}"));
    }
    Ok(())
}
