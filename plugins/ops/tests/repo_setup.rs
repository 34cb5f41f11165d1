//! `repo_setup`'s git half against real repositories: a clone of a local bare repository
//! inside the roots (origin, branch, origin/HEAD, the repository's .githooks only when asked),
//! a second run that only reports, and what it refuses (a path outside the roots or inside a
//! `.git` folder, a folder with files, another repository's checkout, a local source outside
//! the roots, a remote helper).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

use coremcp_ops::tools::repo_setup::{set_up, Setup, Source};
use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::testing::parse;
use coremcp_plugin_sdk::{CallCtx, Ctx, ToolError};
use serde_json::{json, Value};

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    #[allow(clippy::disallowed_methods)] // Test set-up drives the real git directly.
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A bare repository with one commit on main and a .githooks folder, inside the root.
fn fixture(label: &str) -> (Scratch, PathBuf, Source) {
    let top =
        std::env::temp_dir().join(format!("coremcp-repo-setup-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&top);
    let work = top.join("work");
    std::fs::create_dir_all(work.join(".githooks")).expect("mkdir");
    std::fs::write(work.join(".githooks/pre-commit"), "#!/bin/sh\nexit 0\n").expect("hook");
    std::fs::write(work.join("README.md"), "hello\n").expect("file");
    git(&work, &["init", "-q"]);
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "first"]);
    let root = top.join("root");
    std::fs::create_dir_all(root.join("origins")).expect("root");
    git(
        &top,
        &["clone", "-q", "--bare", "work", "root/origins/origin.git"],
    );
    let source = Source {
        name: "demo".into(),
        url: root.join("origins/origin.git").display().to_string(),
        default_branch: "main".into(),
        recorded: None,
        recorded_url: None,
    };
    (
        Scratch(top),
        root.canonicalize().expect("canonical"),
        source,
    )
}

fn setup(root: &Path, source: &Source, args: Value) -> Result<Value, ToolError> {
    let cancelled = AtomicBool::new(false);
    let raw = CallCtx {
        deadline_unix_ms: coremcp_plugin_sdk::time::now_ms() as u64 + 60_000,
        cancelled: &cancelled,
    };
    let roots = Roots::new(vec![root.to_owned()]).expect("roots");
    set_up(&Ctx::new(&raw), &roots, &parse::<Setup>(args)?, source)
}

#[test]
fn a_clone_is_set_up_once_and_then_only_reported() {
    let (_scratch, root, source) = fixture("clone");
    let first = setup(
        &root,
        &source,
        json!({"source": "CORE/demo", "hooks": true}),
    )
    .expect("clone");
    assert_eq!(
        (first["action"].clone(), first["changed"].clone()),
        (json!("cloned"), json!(true)),
        "{first}"
    );
    let checkout = root.join("demo");
    assert_eq!(first["path"], checkout.display().to_string());
    assert_eq!(git(&checkout, &["remote", "get-url", "origin"]), source.url);
    assert_eq!(git(&checkout, &["symbolic-ref", "--short", "HEAD"]), "main");
    assert_eq!(
        git(
            &checkout,
            &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"]
        ),
        "origin/main"
    );
    assert_eq!(git(&checkout, &["config", "core.hooksPath"]), ".githooks");
    assert_eq!(first["hooks"]["installed"], true);

    let second = setup(&root, &source, json!({"source": "CORE/demo"})).expect("second run");
    assert_eq!(
        (second["action"].clone(), second["changed"].clone()),
        (json!("present"), json!(false)),
        "{second}"
    );
    assert_eq!(second["branch"], "main");
    assert_eq!(second["hooks"]["installed"], true);

    // Without asking, the repository's hooks stay off.
    let bare = setup(
        &root,
        &source,
        json!({"source": "CORE/demo", "path": "plain"}),
    )
    .expect("no hooks");
    assert_eq!(bare["hooks"]["installed"], false);
    let plain = root.join("plain");
    #[allow(clippy::disallowed_methods)] // Test set-up drives the real git directly.
    let set = Command::new("git")
        .args(["config", "--get", "core.hooksPath"])
        .current_dir(&plain)
        .status()
        .expect("git");
    assert!(!set.success(), "core.hooksPath is set without hooks: true");
}

#[test]
fn a_local_source_outside_the_roots_and_a_remote_helper_are_refused() {
    let (scratch, root, source) = fixture("outside");
    let outside = scratch.0.join("elsewhere.git");
    git(
        &scratch.0,
        &["clone", "-q", "--bare", "work", "elsewhere.git"],
    );
    for url in [
        outside.display().to_string(),
        format!("file://{}", outside.display()),
        "ext::sh -c touch% /tmp/coremcp-ext-ran".to_owned(),
    ] {
        let from = Source {
            url: url.clone(),
            ..source.clone()
        };
        let err = setup(&root, &from, json!({"source": "CORE/demo", "path": "x"})).expect_err(&url);
        assert!(
            err.message.contains("outside the roots") || err.message.contains("remote helper"),
            "{url}: {}",
            err.message
        );
        assert!(!root.join("x").exists(), "{url} was cloned");
    }
    assert!(!Path::new("/tmp/coremcp-ext-ran").exists());
    // A checkout never goes inside a .git folder.
    git(&root, &["init", "-q", "inner"]);
    let err = setup(
        &root,
        &source,
        json!({"source": "CORE/demo", "path": "inner/.git/hooks/x"}),
    )
    .expect_err("inside .git");
    assert!(err.message.contains(".git folder"), "{}", err.message);
}

#[test]
fn paths_that_are_not_this_checkout_are_refused() {
    let (scratch, root, source) = fixture("refuse");
    std::fs::create_dir_all(root.join("busy")).expect("mkdir");
    std::fs::write(root.join("busy/file.txt"), "mine\n").expect("file");
    // Another repository: a history of its own, which shares no commit with the source's.
    let other = root.join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    git(&other, &["init", "-q"]);
    std::fs::write(other.join("mine.txt"), "mine\n").expect("file");
    git(&other, &["add", "."]);
    git(&other, &["commit", "-q", "-m", "unrelated"]);
    git(
        &other,
        &[
            "remote",
            "add",
            "origin",
            "https://example.invalid/other.git",
        ],
    );
    for (args, says) in [
        (
            json!({"source": "CORE/demo", "path": "busy"}),
            "not a git checkout",
        ),
        (
            json!({"source": "CORE/demo", "path": "other"}),
            "shares no commit",
        ),
        (
            json!({"source": "CORE/demo", "path": scratch.0.join("elsewhere").display().to_string()}),
            "outside the roots",
        ),
        (
            json!({"source": "CORE/demo", "branch": "--upload-pack=x"}),
            "not a branch name",
        ),
    ] {
        let err = setup(&root, &source, args.clone()).expect_err(&args.to_string());
        assert!(err.message.contains(says), "{args}: {}", err.message);
    }
    assert_eq!(
        std::fs::read_to_string(root.join("busy/file.txt")).expect("kept"),
        "mine\n"
    );
    // The refused repository keeps its own origin.
    assert_eq!(
        git(&other, &["remote", "get-url", "origin"]),
        "https://example.invalid/other.git"
    );
    let missing = Source {
        url: root.join("origins/missing.git").display().to_string(),
        ..source
    };
    let err = setup(
        &root,
        &missing,
        json!({"source": "CORE/demo", "path": "fresh"}),
    )
    .expect_err("no such repository");
    assert!(err.message.contains("clone"), "{}", err.message);
}

#[test]
fn a_present_checkout_is_reconciled_with_the_source_and_reports_each_change() {
    let (scratch, root, source) = fixture("reconcile");
    setup(&root, &source, json!({"source": "CORE/demo"})).expect("clone");
    let checkout = root.join("demo");
    // The source moved (a new URL) and its default branch is now `trunk`; the checkout has
    // drifted: origin points elsewhere and origin/HEAD is unset.
    git(&scratch.0.join("work"), &["branch", "trunk"]);
    git(
        &scratch.0,
        &["clone", "-q", "--bare", "work", "root/origins/moved.git"],
    );
    git(
        &checkout,
        &["remote", "set-url", "origin", "/nowhere/old.git"],
    );
    git(&checkout, &["remote", "set-head", "origin", "--delete"]);
    std::fs::write(checkout.join("wip.txt"), "work in progress\n").expect("wip");
    let moved = Source {
        url: root.join("origins/moved.git").display().to_string(),
        default_branch: "trunk".into(),
        ..source.clone()
    };
    let out = setup(&root, &moved, json!({"source": "CORE/demo"})).expect("reconcile");
    assert_eq!(
        (out["action"].clone(), out["changed"].clone()),
        (json!("reconciled"), json!(true)),
        "{out}"
    );
    let changes = out["changes"].to_string();
    assert!(
        changes.contains("origin: /nowhere/old.git") && changes.contains("origin/HEAD"),
        "{out}"
    );
    assert_eq!(git(&checkout, &["remote", "get-url", "origin"]), moved.url);
    assert_eq!(
        git(
            &checkout,
            &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"]
        ),
        "origin/trunk"
    );
    // The working tree and its branch are left alone.
    assert_eq!(git(&checkout, &["symbolic-ref", "--short", "HEAD"]), "main");
    assert!(checkout.join("wip.txt").is_file());
    // Idempotent: the next run finds nothing to change.
    let again = setup(&root, &moved, json!({"source": "CORE/demo"})).expect("again");
    assert_eq!(
        (
            again["action"].clone(),
            again["changed"].clone(),
            again["changes"].clone()
        ),
        (json!("present"), json!(false), json!([])),
        "{again}"
    );
}

#[test]
fn a_second_checkout_path_is_refused_unless_moved() {
    let (_scratch, root, source) = fixture("second");
    setup(&root, &source, json!({"source": "CORE/demo"})).expect("clone");
    let recorded = Source {
        recorded: Some(root.join("demo").display().to_string()),
        ..source
    };
    // Without path: the recorded checkout.
    let out = setup(&root, &recorded, json!({"source": "CORE/demo"})).expect("recorded");
    assert_eq!(
        out["path"],
        root.join("demo").display().to_string(),
        "{out}"
    );
    let err = setup(
        &root,
        &recorded,
        json!({"source": "CORE/demo", "path": "elsewhere"}),
    )
    .expect_err("second path");
    assert_eq!(err.code.as_str(), "conflict", "{}", err.message);
    assert!(
        err.message.contains("already checked out") && err.message.contains("move: true"),
        "{}",
        err.message
    );
    assert!(!root.join("elsewhere").exists());
    let moved = setup(
        &root,
        &recorded,
        json!({"source": "CORE/demo", "path": "elsewhere", "move": true}),
    )
    .expect("moved");
    assert_eq!(moved["action"], "cloned", "{moved}");
    assert!(root.join("elsewhere/README.md").is_file());
}

#[test]
fn the_recorded_checkout_keeps_the_url_it_was_made_from() {
    let (scratch, root, source) = fixture("made-from");
    setup(&root, &source, json!({"source": "CORE/demo"})).expect("clone");
    let checkout = root.join("demo");
    git(
        &scratch.0,
        &["clone", "-q", "--bare", "work", "root/origins/moved.git"],
    );
    // Recorded with the URL it was cloned from; the Registry's URL has changed since.
    let changed = Source {
        url: root.join("origins/moved.git").display().to_string(),
        recorded: Some(checkout.display().to_string()),
        recorded_url: Some(source.url.clone()),
        ..source.clone()
    };
    let out = setup(&root, &changed, json!({"source": "CORE/demo"})).expect("kept");
    assert_eq!(out["origin"], source.url.as_str(), "{out}");
    assert_eq!(out["changed"], false, "{out}");
    assert_eq!(
        out["source_url_changed"]["registry"],
        changed.url.as_str(),
        "{out}"
    );
    assert_eq!(git(&checkout, &["remote", "get-url", "origin"]), source.url);
    // Changed by hand: restored.
    git(&checkout, &["remote", "set-url", "origin", &changed.url]);
    let out = setup(&root, &changed, json!({"source": "CORE/demo"})).expect("restored");
    assert_eq!(
        git(&checkout, &["remote", "get-url", "origin"]),
        source.url,
        "{out}"
    );
    // Followed only when named.
    let out = setup(
        &root,
        &changed,
        json!({"source": "CORE/demo", "follow_url": changed.url}),
    )
    .expect("followed");
    assert_eq!(
        git(&checkout, &["remote", "get-url", "origin"]),
        changed.url,
        "{out}"
    );
    assert!(out.get("source_url_changed").is_none(), "{out}");
}
