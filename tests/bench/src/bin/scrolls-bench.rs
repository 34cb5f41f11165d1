//! Scrolls through `coremcp stdio` on a store of 10 000 items in one project (200 epics, 2 000
//! stories, 7 800 subtasks, 1 000 dependencies; one item in a hundred has the word `quokka`):
//! serial `scrolls_task_create` and `scrolls_task_get`, `scrolls_ready_list` (limit 10),
//! `scrolls_progress_get` on the project and `scrolls_search` for the word, each against
//! `notepad_get` measured in the same run (the budgets are ratios to it: a create or get
//! within 2x, the views within 10x). Every measured call follows a `notepad_get` call, so the
//! machine's drift falls on both alike. On PostgreSQL the fill is followed by `ANALYZE`
//! (autovacuum's job a minute later), since the measures are of a store in use.
//!
//! usage: scrolls-bench --host <coremcp> --plugins <dir with notepad + scrolls> --data <dir>
//!                      --store <sqlite:|postgres://…> [--label NAME] [--calls N]

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use coremcp_bench::stdio_client::StdioClient;
use coremcp_bench::store_run::{self, percentile, StoreRun};
use serde_json::{json, Value};

/// The p50 of `n` serial calls of `make(i)`.
fn p50(
    host: &mut StdioClient,
    n: usize,
    tool: &str,
    make: impl Fn(usize) -> Value,
) -> Result<Duration, String> {
    let (mut times, _) = store_run::serial(host, n, tool, make)?;
    Ok(percentile(&mut times, 0.5))
}

/// The item's title: one in a hundred carries the searched word.
fn title(i: usize) -> String {
    if i % 100 == 0 {
        format!("item {i} quokka")
    } else {
        format!("item {i}")
    }
}

/// 200 epics, 2 000 stories and 7 800 subtasks under CORE, and 1 000 stories that depend on
/// another story.
fn fill(host: &mut StdioClient) -> Result<(), String> {
    host.call(
        "scrolls_project_create",
        json!({"key": "CORE", "title": "Core"}),
    )?;
    let (mut n, mut stories) = (0, Vec::new());
    let mut create = |host: &mut StdioClient, tool: &str, parent: &str| -> Result<String, String> {
        n += 1;
        // An epic names its project; the other levels their parent.
        let under = if tool == "scrolls_epic_create" {
            "project"
        } else {
            "parent"
        };
        let item = host.call(tool, json!({under: parent, "title": title(n)}))?;
        Ok(item["structuredContent"]["key"]
            .as_str()
            .unwrap_or_default()
            .to_owned())
    };
    for _ in 0..200 {
        let epic = create(host, "scrolls_epic_create", "CORE")?;
        for _ in 0..10 {
            stories.push(create(host, "scrolls_story_create", &epic)?);
        }
    }
    for (i, story) in stories.iter().enumerate() {
        let subtasks = if i < 1800 { 4 } else { 3 };
        for _ in 0..subtasks {
            create(host, "scrolls_subtask_create", story)?;
        }
    }
    for i in 0..1000 {
        let (story, on) = (&stories[i * 2 + 1], &stories[i * 2]);
        host.call(
            "scrolls_story_update",
            json!({"id": story, "depends_on": [on]}),
        )?;
    }
    Ok(())
}

fn run(opts: &StoreRun) -> Result<(), String> {
    let mut host = opts.start("scrolls-bench")?;
    let started = Instant::now();
    fill(&mut host)?;
    let filled = started.elapsed();
    if opts.store.starts_with("postgres") {
        store_run::analyze(&opts.store)?;
    }
    let note = json!({"scope": "global", "key": "bench"});
    host.call(
        "notepad_set",
        json!({"scope": "global", "key": "bench", "value": "v"}),
    )?;
    p50(&mut host, 100, "notepad_get", |_| note.clone())?;
    let base = ("notepad_get", &note);
    let (n, views) = (opts.calls, opts.calls / 5);
    type Make = Box<dyn Fn(usize) -> Value>;
    // Each measured with a notepad_get before every call; budgets as in the issue.
    let cases: Vec<(&str, &str, usize, Option<f64>, Make)> = vec![
        // A write of one row through the same path: what any write costs on this store.
        (
            "notepad_set (a write)",
            "notepad_set",
            n,
            None,
            Box::new(|i| json!({"scope": "global", "key": format!("bench-{i}"), "value": "v"})),
        ),
        (
            "scrolls_task_create",
            "scrolls_task_create",
            n,
            Some(2.0),
            Box::new(|i| json!({"parent": "CORE", "title": format!("task {i}")})),
        ),
        (
            "scrolls_task_get",
            "scrolls_task_get",
            n,
            Some(2.0),
            Box::new(move |i| json!({"id": format!("CORE-{}", 10_001 + i % n)})),
        ),
        (
            "scrolls_ready_list 10",
            "scrolls_ready_list",
            views,
            Some(10.0),
            Box::new(|_| json!({"limit": 10})),
        ),
        (
            "scrolls_progress_get",
            "scrolls_progress_get",
            views,
            Some(10.0),
            Box::new(|_| json!({"id": "CORE"})),
        ),
        (
            "scrolls_search (1%)",
            "scrolls_search",
            views,
            Some(10.0),
            Box::new(|_| json!({"query": "quokka"})),
        ),
    ];
    let found = host.call("scrolls_search", json!({"query": "quokka", "limit": 100}))?;
    let hits = found["structuredContent"]["items"]
        .as_array()
        .map_or(0, Vec::len);
    println!(
        "{}: 10 000 items written in {:.1} s; serial calls through coremcp stdio, each after a \
         notepad_get (the baseline)",
        opts.label,
        filled.as_secs_f64()
    );
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for (name, tool, calls, budget, make) in cases {
        let (base, p) = store_run::paired(&mut host, calls, base, tool, make)?;
        let ratio = p.as_secs_f64() / base.as_secs_f64();
        let verdict = match budget {
            Some(b) if ratio <= b => format!("budget {b}x: ok"),
            Some(b) => format!("budget {b}x: OVER"),
            None => "for reference".to_owned(),
        };
        println!(
            "  {name:<25} p50 {:8.1} us  baseline {:6.1} us  {ratio:5.1}x ({verdict})",
            us(p),
            us(base)
        );
    }
    println!("  search found {hits} items for the word in 1% of titles");
    Ok(())
}

fn main() -> std::process::ExitCode {
    match StoreRun::from_args(500, &[]).and_then(|opts| run(&opts)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scrolls-bench: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
