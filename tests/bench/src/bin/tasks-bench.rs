//! What MCP tasks cost, in one `coremcp stdio` speaking 2026-07-28 on one SQLite store, each
//! figure against its baseline measured in the same run, batches interleaved so a noisy
//! machine weighs on both alike:
//!
//! 1. a call that is not a task (`fixture_echo`) from a request that declares the tasks
//!    extension, against the same call from one that does not: p50 within 3 %;
//! 2. creating a task (`slow_compute` with 0 s, answered with its `CreateTaskResult` once the
//!    task is in the store) against a `notepad_set` on the same store: p50 at most 2x;
//! 3. `tasks/get` of a finished task against a `notepad_get`: p50 at most 2x.
//!
//! usage: tasks-bench --host <coremcp> --plugins <dir with fixture, fixture_tasks, notepad>
//!        [--calls N]

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use coremcp_bench::host_args::HostArgs;
use coremcp_bench::stdio_client::StdioClient;
use serde_json::{json, Value};

const BATCH: usize = 50;
const TASKS: &str = "io.modelcontextprotocol/tasks";

fn envelope(tasks: bool) -> Value {
    let capabilities = match tasks {
        true => json!({"extensions": {TASKS: {}}}),
        false => json!({}),
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-bench", "version": "0"}
    })
}

/// One 2026 request; its result (a JSON-RPC error is a failure of the bench).
fn ask(
    client: &mut StdioClient,
    method: &str,
    mut params: Value,
    tasks: bool,
) -> Result<Value, String> {
    params["_meta"] = envelope(tasks);
    let result = client.request(method, params)?;
    if result["isError"] == json!(true) {
        return Err(format!("{method}: {result}"));
    }
    Ok(result)
}

/// A request's text after its id, made once: the driver only writes the id, so the figures
/// are the server's, not the cost of building JSON here.
fn tail(method: &str, mut params: Value, tasks: bool) -> String {
    params["_meta"] = envelope(tasks);
    format!(",\"method\":\"{method}\",\"params\":{params}}}")
}

/// Sends the request `tail` under the next id and reads its answer (an error or an error
/// result fails the bench).
fn send(client: &mut StdioClient, next: &mut u64, tail: &str) -> Result<(), String> {
    *next += 1;
    client.send_line(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{next}{tail}"))?;
    let answer = client.receive()?;
    match answer.get("result") {
        Some(result) if result["isError"] != json!(true) => Ok(()),
        _ => Err(format!("{tail}: {answer}")),
    }
}

/// One kind of request measured.
struct Side {
    label: &'static str,
    times: Vec<Duration>,
}

impl Side {
    fn new(label: &'static str) -> Self {
        Self {
            label,
            times: Vec::new(),
        }
    }

    fn p50(&mut self) -> f64 {
        self.times.sort_unstable();
        self.times[self.times.len() / 2].as_secs_f64() * 1e6
    }
}

/// Runs `a` and `b` `calls` times each, in interleaved batches.
fn interleaved(
    calls: usize,
    a: &mut Side,
    run_a: &mut dyn FnMut() -> Result<(), String>,
    b: &mut Side,
    run_b: &mut dyn FnMut() -> Result<(), String>,
) -> Result<(), String> {
    let mut done = 0;
    while done < calls {
        batch(a, run_a)?;
        batch(b, run_b)?;
        done += BATCH;
    }
    Ok(())
}

/// One batch of `run`, timed into `side`.
fn batch(side: &mut Side, run: &mut dyn FnMut() -> Result<(), String>) -> Result<(), String> {
    for _ in 0..BATCH {
        let started = Instant::now();
        run()?;
        side.times.push(started.elapsed());
    }
    Ok(())
}

fn report(what: &str, base: &mut Side, measured: &mut Side, budget: f64) -> bool {
    let (b, m) = (base.p50(), measured.p50());
    let ratio = m / b;
    let ok = ratio <= budget;
    println!(
        "{what:<54} {:>9.1} us {:<16} {:>9.1} us {:<16} {ratio:>5.2}x (budget {budget}x) {}",
        m,
        measured.label,
        b,
        base.label,
        if ok { "PASS" } else { "OVER" }
    );
    ok
}

fn run() -> Result<bool, String> {
    let args = HostArgs::parse(2000, BATCH * 2)?;
    let data = std::env::temp_dir().join(format!("coremcp-tasks-bench-{}", std::process::id()));
    std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
    let plugins = args.plugins.to_string_lossy().into_owned();
    let data_arg = data.to_string_lossy().into_owned();
    let mut client = StdioClient::start_bare(
        &args.host,
        ["--plugins", plugins.as_str(), "--data", data_arg.as_str()],
    )?;
    ask(&mut client, "server/discover", json!({}), true)?;
    let echo = json!({"name": "fixture_echo", "arguments": {"text": "x"}});
    let set = json!({"name": "notepad_set",
                     "arguments": {"scope": "global", "key": "bench", "value": "v"}});
    let get = json!({"name": "notepad_get", "arguments": {"scope": "global", "key": "bench"}});
    let create = json!({"name": "slow_compute", "arguments": {"seconds": 0}});
    // Warm: every group loaded, every table made.
    for params in [&echo, &set, &get] {
        ask(&mut client, "tools/call", params.clone(), false)?;
    }
    let warm = ask(&mut client, "tools/call", create.clone(), true)?;
    let task = warm["taskId"]
        .as_str()
        .ok_or(format!("slow_compute made no task: {warm}"))?
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    while ask(&mut client, "tasks/get", json!({"taskId": task}), true)?["status"] != "completed" {
        if Instant::now() > deadline {
            return Err("the warm-up task never completed".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let calls = args.calls;
    println!("== MCP tasks: {calls} calls a side, batches of {BATCH} interleaved, SQLite ==");
    let client = std::cell::RefCell::new(client);
    // Ids far from the ones `request` used.
    let next = std::cell::Cell::new(1_000_000u64);
    let run = |tail: &str| -> Result<(), String> {
        let mut id = next.get();
        let outcome = send(&mut client.borrow_mut(), &mut id, tail);
        next.set(id);
        outcome
    };
    let (echo_plain, echo_declared) = (
        tail("tools/call", echo.clone(), false),
        tail("tools/call", echo, true),
    );
    let (set_call, create_call) = (
        tail("tools/call", set, false),
        tail("tools/call", create, true),
    );
    let (get_call, get_task) = (
        tail("tools/call", get, false),
        tail("tasks/get", json!({"taskId": task}), true),
    );
    let (mut plain, mut declared) = (Side::new("undeclared"), Side::new("declared"));
    interleaved(
        calls,
        &mut plain,
        &mut || run(&echo_plain),
        &mut declared,
        &mut || run(&echo_declared),
    )?;
    let (mut setting, mut creating) = (Side::new("notepad_set"), Side::new("task created"));
    interleaved(
        calls,
        &mut setting,
        &mut || run(&set_call),
        &mut creating,
        &mut || run(&create_call),
    )?;
    let (mut getting, mut polling) = (Side::new("notepad_get"), Side::new("tasks/get"));
    interleaved(
        calls,
        &mut getting,
        &mut || run(&get_call),
        &mut polling,
        &mut || run(&get_task),
    )?;
    let mut ok = report(
        "a call that is not a task, extension declared (p50)",
        &mut plain,
        &mut declared,
        1.03,
    );
    ok &= report(
        "creating a task vs notepad_set (p50)",
        &mut setting,
        &mut creating,
        2.0,
    );
    ok &= report(
        "tasks/get vs notepad_get (p50)",
        &mut getting,
        &mut polling,
        2.0,
    );
    drop(client);
    let _ = std::fs::remove_dir_all(&data);
    Ok(ok)
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("tasks-bench: {e}");
            std::process::exit(2);
        }
    }
}
