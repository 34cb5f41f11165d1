//! `shell_run` called as the host calls it, with real bash children: output and exit codes,
//! `cwd` inside the roots, a timeout that kills grandchildren, 100 MB of output kept bounded,
//! credential-named `env` keys refused, a cancel in the middle of a run, and the shell choice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coremcp_ops::tools::shell_run::{choose, run_in, tail, Run, Shell};
use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::testing::parse;
use coremcp_plugin_sdk::ToolError;
use serde_json::{json, Value};

thread_local! {
    static ROOT: std::cell::RefCell<Option<std::path::PathBuf>> = const { std::cell::RefCell::new(None) };
}

/// `shell_run` with the test's scratch folder as the only root, as the host would call it
/// (arguments checked by the schema, then parsed), stopped when `cancelled` is set.
fn call_with(args: Value, cancelled: &AtomicBool) -> Result<Value, ToolError> {
    let root = ROOT.with(|r| r.borrow().clone()).expect("inside with_root");
    let roots = Roots::new(vec![root]).expect("roots");
    run_in(
        &roots,
        parse::<Run>(args)?,
        Duration::from_secs(60),
        cancelled,
    )
}

fn call(args: Value) -> Result<Value, ToolError> {
    call_with(args, &AtomicBool::new(false))
}

/// A scratch folder made the only root (the host's `roots` value) for the calls of this test.
fn with_root<T>(f: impl FnOnce(&std::path::Path) -> T) -> T {
    let dir = std::env::temp_dir().join(format!(
        "coremcp-ops-{}-{}",
        std::process::id(),
        coremcp_plugin_sdk::time::now_ms()
    ));
    std::fs::create_dir_all(dir.join("sub")).expect("scratch");
    let dir = dir.canonicalize().expect("canonical");
    ROOT.with(|r| *r.borrow_mut() = Some(dir.clone()));
    let out = f(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn run(args: Value) -> Value {
    call(args.clone()).unwrap_or_else(|e| panic!("shell_run {args}: {e}"))
}

#[test]
fn a_script_runs_in_bash_with_its_output_exit_code_and_folder() {
    with_root(|root| {
        let out = run(json!({
            "shell": "bash",
            "script": "echo out; echo err >&2; pwd; echo \"$GREETING\"; exit 3",
            "cwd": "sub",
            "env": {"GREETING": "hello"}
        }));
        assert_eq!(
            (out["ok"].clone(), out["exit_code"].clone()),
            (json!(false), json!(3))
        );
        let stdout = out["stdout"].as_str().expect("stdout");
        assert_eq!(
            stdout,
            format!("out\n{}\nhello\n", root.join("sub").display())
        );
        assert_eq!(out["stderr"], "err\n");
        assert!(out.get("stdout_truncated").is_none(), "{out}");
        let outside = call(json!({"shell": "bash", "script": "true", "cwd": "/"}))
            .expect_err("outside the roots");
        assert!(outside.message.contains("\"cwd\""), "{outside}");
    });
}

#[test]
fn credential_keys_in_env_are_refused_by_name() {
    with_root(|_| {
        for key in [
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "COREMCP_STORE",
            "DB_PASSWORD",
        ] {
            let err =
                call(json!({"script": "true", "shell": "bash", "env": {key: "x"}})).expect_err(key);
            assert!(
                err.message.contains(&format!("\"env.{key}\""))
                    && err.message.contains("credential"),
                "{err}"
            );
        }
        let err = call(json!({"script": "true", "shell": "bash", "env": {"A B": "x"}}))
            .expect_err("bad name");
        assert!(err.message.contains("variable name"), "{err}");
    });
}

#[test]
fn a_timeout_kills_the_whole_process_tree() {
    with_root(|root| {
        let marker = root.join("grandchild-alive");
        // The grandchild would write the marker after 3 s; the script times out after 1 s.
        let script = format!("(sleep 3; touch {}) & sleep 30", marker.display());
        let started = Instant::now();
        let err = call(json!({"shell": "bash", "script": script, "timeout_s": 1}))
            .expect_err("times out");
        assert_eq!(err.code.as_str(), "timeout", "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(3500));
        assert!(!marker.exists(), "a grandchild survived the timeout");
    });
}

#[test]
fn a_hundred_megabytes_of_output_stay_bounded() {
    with_root(|_| {
        let out = run(json!({
            "shell": "bash",
            "script": "head -c 104857600 /dev/zero | tr '\\0' 'x' | fold -w 100; echo THE-END"
        }));
        assert_eq!(out["exit_code"], 0);
        assert_eq!(out["stdout_truncated"], true);
        assert_eq!(out["stdout_total_bytes"], 104_857_600 + 1_048_575 + 8);
        let stdout = out["stdout"].as_str().expect("stdout");
        assert!(stdout.len() < 20_000, "{} bytes shown", stdout.len());
        // The end is what is kept (fold leaves the last line open, so the echo joins it).
        assert!(
            stdout.ends_with("xTHE-END\n"),
            "{}",
            &stdout[stdout.len() - 50..]
        );
        assert!(
            stdout.starts_with("…[") && stdout.contains("not shown"),
            "{}",
            &stdout[..200]
        );
        assert!(serde_json::to_string(&out).expect("json").chars().count() < 19_500);
    });
}

#[test]
fn a_cancel_stops_the_script_at_once() {
    with_root(|_| {
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cancelled);
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            flag.store(true, Ordering::SeqCst);
        });
        let started = Instant::now();
        let err = call_with(json!({"shell": "bash", "script": "sleep 30"}), &cancelled)
            .expect_err("cancelled");
        stopper.join().expect("stopper");
        assert_eq!(err.code.as_str(), "cancelled", "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    });
}

#[test]
fn the_shell_is_the_named_one_then_pwsh_then_the_configured_one() {
    let none = |_: &str| false;
    let pwsh = |p: &str| p == "pwsh";
    assert_eq!(
        choose(Some(Shell::Sh), None, &pwsh).expect("named"),
        Shell::Sh
    );
    assert_eq!(
        choose(None, Some("bash"), &pwsh).expect("pwsh"),
        Shell::Pwsh
    );
    assert_eq!(
        choose(None, Some("/bin/sh"), &none).expect("configured"),
        Shell::Sh
    );
    assert_eq!(choose(None, None, &none).expect("default"), Shell::Bash);
    let bad = choose(None, Some("fish"), &none).expect_err("unknown shell");
    assert!(bad.message.contains("COREMCP_SHELL"), "{bad}");
    let (end, cut) = tail("line one\nline two\nline three", 12);
    assert_eq!((end, cut), ("line three", 18));
}
