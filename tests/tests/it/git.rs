//! The Git group against real repositories: each test creates repositories with the real `git`
//! CLI in temporary folders (bare ones as push targets), starts the real `coremcp` with the
//! Git plugin and `--root` on a folder holding them, and checks the tools' structured answers
//! against what git itself says.
//!
//! git runs isolated from the machine's configuration: `GIT_CONFIG_GLOBAL` points at a file
//! in the test's folder and `GIT_CONFIG_NOSYSTEM=1`, for the test's own git and the server's.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use coremcp_tests::{hints, is_error, nulls, plugins, text, Server, TempDir};
use serde_json::{json, Value};

/// Variables that would redirect git away from the repository a test names.
const REDIRECTS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
];

/// Runs the real git in `dir` with an isolated configuration and returns its trimmed stdout.
fn git_env(lab: &Path, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    #[allow(clippy::disallowed_methods)] // Tests start the real tools directly.
    let mut command = Command::new("git");
    for name in REDIRECTS {
        command.env_remove(name);
    }
    let out = command
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", lab.join("gitconfig"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// One test's world: `root/` (the server's only root) and `outside/` beside it, a plugins
/// folder with the Git plugin, and a running server.
struct Lab {
    dir: TempDir,
    _plugins: TempDir,
    server: Server,
}

impl Lab {
    fn new() -> Self {
        let dir = TempDir::new("git");
        std::fs::create_dir_all(dir.path().join("root")).expect("mkdir root");
        std::fs::create_dir_all(dir.path().join("outside")).expect("mkdir outside");
        std::fs::write(
            dir.path().join("gitconfig"),
            "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
        )
        .expect("write gitconfig");
        let plugins = plugins(&["git"]);
        let root = dir.path().join("root");
        let config = dir.path().join("gitconfig");
        let config = config.to_str().expect("utf-8 temp path");
        let mut server = Server::start(
            plugins.path(),
            &["--root", root.to_str().expect("utf-8 temp path")],
            &[("GIT_CONFIG_GLOBAL", config), ("GIT_CONFIG_NOSYSTEM", "1")],
        );
        server.initialize();
        Self {
            dir,
            _plugins: plugins,
            server,
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    fn git(&self, dir: &Path, args: &[&str]) -> String {
        git_env(self.dir.path(), dir, args, &[])
    }

    /// A new repository (branch `main`, a test identity) at `path`.
    fn init(&self, path: &Path) {
        std::fs::create_dir_all(path).expect("mkdir repo");
        self.git(path, &["init", "-q"]);
        self.identity(path);
    }

    fn identity(&self, path: &Path) {
        self.git(path, &["config", "user.name", "Test Author"]);
        self.git(path, &["config", "user.email", "author@example.com"]);
    }

    /// A bare repository at `path` (a push target).
    fn bare(&self, path: &Path) {
        self.git(
            self.dir.path(),
            &["init", "-q", "--bare", path.to_str().expect("utf-8")],
        );
    }

    /// A clone of `from` at `to`, with the test identity.
    fn clone(&self, from: &Path, to: &Path) {
        self.git(
            self.dir.path(),
            &[
                "clone",
                "-q",
                from.to_str().expect("utf-8"),
                to.to_str().expect("utf-8"),
            ],
        );
        self.identity(to);
    }

    /// Writes `files` and commits them all with `message`; returns the new sha.
    fn commit(&self, repo: &Path, files: &[(&str, &str)], message: &str) -> String {
        for (name, content) in files {
            write(&repo.join(name), content);
        }
        self.git(repo, &["add", "-A"]);
        self.git(repo, &["commit", "-q", "-m", message]);
        self.git(repo, &["rev-parse", "HEAD"])
    }

    /// A tool call's full result.
    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.server.call(tool, args)
    }

    /// A tool call that must succeed; its structured content (never with a `null`).
    fn ok(&mut self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args.clone());
        assert!(!is_error(&result), "{tool} {args}: {}", text(&result));
        let structured = result["structuredContent"].clone();
        assert!(
            structured.is_object(),
            "{tool} {args}: no structuredContent: {result}"
        );
        assert_eq!(nulls(&structured), Vec::<String>::new(), "{tool}: nulls");
        structured
    }

    /// A tool call that must fail; its error text.
    fn err(&mut self, tool: &str, args: Value) -> String {
        let result = self.call(tool, args.clone());
        assert!(is_error(&result), "{tool} {args} should fail: {result}");
        text(&result).to_owned()
    }
}

fn write(path: &Path, content: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, content).expect("write file");
}

fn s(path: &Path) -> String {
    path.to_str().expect("utf-8 temp path").to_owned()
}

fn paths(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("an array")
        .iter()
        .map(|e| {
            e.get("path")
                .unwrap_or(e)
                .as_str()
                .expect("a path")
                .to_owned()
        })
        .collect()
}

#[test]
fn git_tools_are_listed_with_their_annotations() {
    let mut lab = Lab::new();
    let tools = lab.server.request("tools/list", json!({}))["result"]["tools"].clone();
    let git: Vec<&Value> = tools
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("git_")))
        .collect();
    let names: Vec<&str> = git.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "git_status",
            "git_diff",
            "git_log",
            "git_show",
            "git_branch_list",
            "git_add",
            "git_commit",
            "git_push"
        ]
    );
    for tool in &git {
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{tool}");
        // The host publishes remote_host for every tool that takes it.
        assert_eq!(
            tool["inputSchema"]["properties"]["remote_host"]["type"], "string",
            "{tool}"
        );
    }
    let by_name = |name: &str| git.iter().find(|t| t["name"] == name).expect("listed");
    assert_eq!(hints(by_name("git_status"))["readOnlyHint"], true);
    assert_eq!(hints(by_name("git_add"))["idempotentHint"], true);
    assert_eq!(hints(by_name("git_commit"))["readOnlyHint"], false);
    assert_eq!(hints(by_name("git_push"))["openWorldHint"], true);
    assert_eq!(hints(by_name("git_push"))["destructiveHint"], true);
    assert_eq!(
        by_name("git_log")["inputSchema"]["properties"]["max_count"]["maximum"],
        200
    );
}

#[test]
fn git_status_reports_a_dirty_repository() {
    let mut lab = Lab::new();
    let repo = lab.root().join("repo");
    lab.init(&repo);
    // Before the first commit: a branch with no head.
    write(&repo.join("first.txt"), "1\n");
    let status = lab.ok("git_status", json!({"repo_path": "repo"}));
    assert_eq!(status["branch"], "main");
    assert!(status.get("head").is_none(), "{status}");
    assert_eq!(status["untracked"], json!(["first.txt"]));

    let head = lab.commit(
        &repo,
        &[("a.txt", "a\n"), ("b.txt", "b\n"), ("gone.txt", "g\n")],
        "base",
    );
    write(&repo.join("a.txt"), "a changed\n");
    write(&repo.join("b.txt"), "b changed\n");
    write(&repo.join("c new.txt"), "c\n");
    lab.git(&repo, &["add", "b.txt", "c new.txt"]);
    write(&repo.join("b.txt"), "b changed twice\n");
    std::fs::remove_file(repo.join("gone.txt")).expect("rm");
    write(&repo.join("untracked/d.txt"), "d\n");

    let status = lab.ok("git_status", json!({"repo_path": s(&repo)}));
    assert_eq!(status["branch"], "main");
    assert_eq!(status["head"], head);
    assert_eq!(status["clean"], false);
    assert_eq!(
        status["staged"],
        json!([{"path": "b.txt", "status": "modified"}, {"path": "c new.txt", "status": "added"}])
    );
    assert_eq!(
        status["unstaged"],
        json!([
            {"path": "a.txt", "status": "modified"},
            {"path": "b.txt", "status": "modified"},
            {"path": "gone.txt", "status": "deleted"}
        ])
    );
    assert_eq!(status["untracked"], json!(["untracked/"]));
    assert_eq!(
        status["counts"],
        json!({"staged": 2, "unstaged": 3, "untracked": 1, "conflicted": 0})
    );
    assert!(status.get("upstream").is_none());

    // A folder inside the work tree opens the same repository; the default is the first root.
    let inner = lab.ok("git_status", json!({"repo_path": "repo/untracked"}));
    assert_eq!(inner["repo"], status["repo"]);
    let text = lab.err("git_status", json!({}));
    assert!(text.contains("not a git repository"), "{text}");

    // A merge conflict lands in `conflicted`.
    lab.git(&repo, &["stash", "-u", "-q"]);
    lab.git(&repo, &["checkout", "-q", "-b", "other"]);
    lab.commit(&repo, &[("a.txt", "other side\n")], "other");
    lab.git(&repo, &["checkout", "-q", "main"]);
    lab.commit(&repo, &[("a.txt", "main side\n")], "main");
    #[allow(clippy::disallowed_methods)] // Tests start the real tools directly: a failing merge.
    let merged = Command::new("git")
        .current_dir(&repo)
        .args(["merge", "-q", "other"])
        .env("GIT_CONFIG_GLOBAL", lab.dir.path().join("gitconfig"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git merge");
    assert!(!merged.status.success(), "the merge conflicts");
    let status = lab.ok("git_status", json!({"repo_path": "repo"}));
    assert_eq!(
        status["conflicted"],
        json!([{"path": "a.txt", "status": "both_modified"}])
    );
}

#[test]
fn git_diff_of_the_work_tree_the_index_and_revisions() {
    let mut lab = Lab::new();
    let repo = lab.root().join("repo");
    lab.init(&repo);
    lab.commit(
        &repo,
        &[
            ("a.txt", "one\ntwo\nthree\n"),
            ("b.txt", "b\n"),
            ("dir/gone.txt", "g\n"),
        ],
        "base",
    );
    lab.commit(&repo, &[("a.txt", "one\nTWO\nthree\n")], "second");
    write(&repo.join("a.txt"), "one\nTWO\nthree\nfour\n");
    write(&repo.join("b.txt"), "b staged\n");
    lab.git(&repo, &["add", "b.txt"]);
    std::fs::remove_dir_all(repo.join("dir")).expect("rm dir");

    let diff = lab.ok("git_diff", json!({"repo_path": "repo"}));
    assert_eq!(paths(&diff["files"]), ["a.txt", "dir/gone.txt"]);
    assert_eq!(diff["insertions"], 1);
    assert_eq!(diff["deletions"], 1);
    let patch = diff["text"].as_str().expect("text");
    assert!(
        patch.contains("+four") && !patch.contains("b staged"),
        "{patch}"
    );
    assert_eq!(diff["truncated"], false);

    let staged = lab.ok("git_diff", json!({"repo_path": "repo", "staged": true}));
    assert_eq!(paths(&staged["files"]), ["b.txt"]);
    assert!(staged["text"].as_str().expect("text").contains("+b staged"));

    // A file deleted with its folder can still be named.
    let gone = lab.ok(
        "git_diff",
        json!({"repo_path": "repo", "paths": ["dir/gone.txt"]}),
    );
    assert_eq!(paths(&gone["files"]), ["dir/gone.txt"]);
    assert_eq!(gone["deletions"], 1);

    let range = lab.ok(
        "git_diff",
        json!({"repo_path": "repo", "target": "HEAD~1..HEAD", "context_lines": 0}),
    );
    assert_eq!(paths(&range["files"]), ["a.txt"]);
    let patch = range["text"].as_str().expect("text");
    assert!(
        patch.contains("@@ -2 +2 @@") && patch.contains("+TWO") && !patch.contains("\n one"),
        "{patch}"
    );

    let stat = lab.ok(
        "git_diff",
        json!({"repo_path": "repo", "target": "HEAD~1", "stat_only": true}),
    );
    let summary = stat["text"].as_str().expect("text");
    assert!(!summary.contains("diff --git"), "{summary}");
    assert!(
        summary.contains("a.txt | +2 -1") && summary.contains("3 files changed"),
        "{summary}"
    );

    // Literal pathspecs: a glob matches nothing.
    let glob = lab.ok(
        "git_diff",
        json!({"repo_path": "repo", "paths": ["*.txt"], "target": "HEAD~1"}),
    );
    assert_eq!(glob["files"], json!([]));

    let bad = lab.call(
        "git_diff",
        json!({"repo_path": "repo", "target": "no-such-rev"}),
    );
    assert!(
        is_error(&bad) && text(&bad).contains("(not_found)"),
        "{bad}"
    );
    let option = lab.err(
        "git_diff",
        json!({"repo_path": "repo", "target": "--output=x"}),
    );
    assert!(option.contains("must not start with \"-\""), "{option}");
}

#[test]
fn git_diff_and_show_cut_large_text_at_max_chars() {
    let mut lab = Lab::new();
    let repo = lab.root().join("repo");
    lab.init(&repo);
    lab.commit(&repo, &[("small.txt", "s\n")], "base");
    let big: String = (0..4000)
        .map(|i| format!("line {i} with \"quotes\" and text\n"))
        .collect();
    lab.commit(&repo, &[("big.txt", &big)], "big");
    write(&repo.join("big.txt"), &big.replace("line", "LINE"));

    let cut = lab.ok("git_diff", json!({"repo_path": "repo", "max_chars": 500}));
    assert_eq!(cut["truncated"], true);
    let patch = cut["text"].as_str().expect("text");
    assert!(patch.chars().count() <= 500, "{patch}");
    assert!(
        cut["hint"].as_str().unwrap_or_default().contains("offset"),
        "{cut}"
    );
    assert!(
        cut["total_chars"].as_u64().expect("total") > 200_000,
        "{cut}"
    );
    assert_eq!(cut["insertions"], 4000, "the stats stay whole");
    // The work tree's patch reads whole in pieces from text_next_offset.
    let mut read = patch.to_owned();
    let mut next = cut["text_next_offset"].clone();
    let mut pieces = 1;
    while next.is_u64() {
        let piece = lab.ok("git_diff", json!({"repo_path": "repo", "offset": next}));
        assert_eq!(piece["text_offset"], next, "{}", piece["text_offset"]);
        read.push_str(piece["text"].as_str().expect("text"));
        next = piece["text_next_offset"].clone();
        pieces += 1;
    }
    let repo_dir = lab.root().join("repo");
    let whole = lab.git(&repo_dir, &["diff", "--no-color"]);
    assert_eq!(read.trim_end(), whole, "the diff read whole");
    assert!(pieces > 10, "{pieces} pieces");

    // The default keeps the whole answer under the host's limit: structuredContent survives.
    let default = lab.ok("git_diff", json!({"repo_path": "repo"}));
    assert_eq!(default["truncated"], true);
    let result = lab.call("git_diff", json!({"repo_path": "repo", "max_chars": 19000}));
    assert!(
        result.get("structuredContent").is_some(),
        "fits the host limit"
    );

    let show = lab.ok(
        "git_show",
        json!({"repo_path": "repo", "revision": "HEAD", "max_chars": 300}),
    );
    assert_eq!(show["truncated"], true);
    assert_eq!(show["text_truncated"], true, "{show}");
    // A commit's patch reads whole in pieces from text_next_offset, like a file.
    let mut patch = show["text"].as_str().expect("text").to_owned();
    let mut next = show["text_next_offset"].clone();
    while next.is_u64() {
        let piece = lab.ok(
            "git_show",
            json!({"repo_path": "repo", "revision": "HEAD", "offset": next}),
        );
        assert!(
            piece.get("structuredContent").is_none(),
            "a result, not a call"
        );
        patch.push_str(piece["text"].as_str().expect("text"));
        next = piece["text_next_offset"].clone();
    }
    let repo_dir = lab.root().join("repo");
    let whole = lab.git(
        &repo_dir,
        &["show", "--format=", "--no-color", "--patch", "HEAD"],
    );
    assert_eq!(patch.trim_end(), whole, "the patch read whole");
    let file = lab.ok(
        "git_show",
        json!({"repo_path": "repo", "revision": "HEAD", "path": "big.txt", "max_chars": 300}),
    );
    assert_eq!(file["truncated"], true);
    assert_eq!(file["text_truncated"], true);
    assert_eq!(file["size"], big.len());
    // The file reads whole in pieces from text_next_offset.
    let mut whole = file["text"].as_str().expect("text").to_owned();
    let mut next = file["text_next_offset"].clone();
    while next.is_u64() {
        let piece = lab.ok(
            "git_show",
            json!({"repo_path": "repo", "revision": "HEAD", "path": "big.txt", "offset": next}),
        );
        whole.push_str(piece["text"].as_str().expect("text"));
        next = piece["text_next_offset"].clone();
    }
    assert_eq!(whole, big);
    assert!(
        file["text"]
            .as_str()
            .expect("text")
            .starts_with("line 0 with"),
        "{file}"
    );
}

/// A file of 8 MB read with git_show costs a call the window it shows, not the file: 32 reads
/// at once held 279 MB before. The window reads on to the end, whole characters included.
#[test]
fn git_show_reads_a_large_file_in_bounded_windows() {
    let mut lab = Lab::new();
    let repo = lab.root().join("repo");
    lab.init(&repo);
    // Multi-byte characters across the whole file, 8 MB of it.
    let line = "é ümlaut € line of text with some width to it 😀\n";
    let big: String = line.repeat((8 << 20) / line.len());
    lab.commit(&repo, &[("big.txt", &big)], "big");
    let total = big.chars().count();
    let first = lab.ok(
        "git_show",
        json!({"repo_path": "repo", "revision": "HEAD", "path": "big.txt", "max_chars": 1000}),
    );
    assert_eq!(first["size"], big.len());
    assert_eq!(first["text_total_chars"], total);
    assert_eq!(
        first["text"].as_str().expect("text"),
        &big[..big.char_indices().nth(1000).expect("1000").0]
    );
    // The last window, from an offset near the end.
    let offset = total - 100;
    let last = lab.ok(
        "git_show",
        json!({"repo_path": "repo", "revision": "HEAD", "path": "big.txt", "offset": offset}),
    );
    let end: String = big.chars().skip(offset).collect();
    assert_eq!(last["text"], end.as_str());
    assert_eq!(last["text_truncated"], false);
    assert_eq!(last["text_offset"], offset);
    // Thirty-two at once.
    let before = lab.server.memory_kb("VmRSS");
    lab.server.reset_peak_memory();
    let ids: Vec<Value> = (0..32)
        .map(|n| {
            let id = json!(format!("show-{n}"));
            lab.server
                .send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "git_show", "arguments":
                    {"repo_path": "repo", "revision": "HEAD", "path": "big.txt",
                     "offset": n * 100_000}}}));
            id
        })
        .collect();
    for id in &ids {
        let answer = lab.server.answer(id, std::time::Duration::from_secs(60));
        assert_eq!(
            answer["result"]["structuredContent"]["size"],
            big.len(),
            "{id}"
        );
    }
    let peak = lab.server.memory_kb("VmHWM").saturating_sub(before);
    eprintln!("32 git_show of an 8 MB file at once: {peak} kB over the start");
    assert!(peak < 64 * 1024, "32 reads at once took {peak} kB");
}

#[test]
fn git_log_filters_history() {
    let mut lab = Lab::new();
    let repo = lab.root().join("repo");
    lab.init(&repo);
    let at = |date: &str| {
        vec![
            ("GIT_AUTHOR_DATE", date.to_owned()),
            ("GIT_COMMITTER_DATE", date.to_owned()),
        ]
    };
    let commit = |lab: &Lab, file: &str, message: &str, date: &str, author: &str| {
        write(&repo.join(file), &format!("{message}\n"));
        lab.git(&repo, &["add", "-A"]);
        let env = at(date);
        let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let who = format!("{author} <{}@example.com>", author.to_lowercase());
        env.push(("GIT_AUTHOR_NAME", author));
        git_env(
            lab.dir.path(),
            &repo,
            &["commit", "-q", "-m", message, "--author", &who],
            &env,
        );
    };
    commit(
        &lab,
        "a.txt",
        "Add a\n\nWhy: the body explains.",
        "2024-01-10T10:00:00+02:00",
        "Alice",
    );
    commit(&lab, "b.txt", "Add b", "2024-02-10T10:00:00+02:00", "Bob");
    commit(
        &lab,
        "docs/readme.md",
        "Document the fix",
        "2024-03-10T10:00:00+02:00",
        "Alice",
    );
    lab.git(&repo, &["checkout", "-q", "-b", "topic"]);
    commit(
        &lab,
        "c.txt",
        "Topic work",
        "2024-04-10T10:00:00+02:00",
        "Carol",
    );
    lab.git(&repo, &["checkout", "-q", "main"]);

    let log = lab.ok("git_log", json!({"repo_path": "repo"}));
    let subjects = |log: &Value| -> Vec<String> {
        log["commits"]
            .as_array()
            .expect("commits")
            .iter()
            .map(|c| c["subject"].as_str().expect("s").to_owned())
            .collect()
    };
    assert_eq!(subjects(&log), ["Document the fix", "Add b", "Add a"]);
    assert_eq!(log["has_more"], false);
    let first = &log["commits"][2];
    assert_eq!(first["author_name"], "Alice");
    assert_eq!(first["author_email"], "alice@example.com");
    assert_eq!(first["date"], "2024-01-10T10:00:00+02:00");
    assert_eq!(first["body"], "Why: the body explains.");
    assert!(log["commits"][0].get("body").is_none());
    let head = lab.git(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(log["commits"][0]["sha"], head);
    assert!(head.starts_with(log["commits"][0]["short_sha"].as_str().expect("short")));

    let two = lab.ok("git_log", json!({"repo_path": "repo", "max_count": 2}));
    assert_eq!(
        (two["count"].clone(), two["has_more"].clone()),
        (json!(2), json!(true))
    );
    assert_eq!(
        subjects(&lab.ok("git_log", json!({"repo_path": "repo", "author": "ALICE"}))).len(),
        0,
        "case-sensitive"
    );
    assert_eq!(
        subjects(&lab.ok("git_log", json!({"repo_path": "repo", "author": "Alice"}))),
        ["Document the fix", "Add a"]
    );
    assert_eq!(
        subjects(&lab.ok("git_log", json!({"repo_path": "repo", "grep": "^Add"}))),
        ["Add b", "Add a"]
    );
    assert_eq!(
        subjects(&lab.ok("git_log", json!({"repo_path": "repo", "path": "docs"}))),
        ["Document the fix"]
    );
    assert_eq!(
        subjects(&lab.ok(
            "git_log",
            json!({"repo_path": "repo", "since": "2024-02-01", "until": "2024-03-01"})
        )),
        ["Add b"]
    );
    assert_eq!(
        subjects(&lab.ok(
            "git_log",
            json!({"repo_path": "repo", "rev": "topic", "max_count": 1})
        )),
        ["Topic work"]
    );
    assert_eq!(
        subjects(&lab.ok(
            "git_log",
            json!({"repo_path": "repo", "rev": "main..topic"})
        )),
        ["Topic work"]
    );

    let bad = lab.call("git_log", json!({"repo_path": "repo", "rev": "nope"}));
    assert!(
        is_error(&bad) && text(&bad).contains("(not_found)"),
        "{bad}"
    );
    let over = lab.err("git_log", json!({"repo_path": "repo", "max_count": 201}));
    assert!(over.contains("above the maximum 200"), "{over}");
    let option = lab.err("git_log", json!({"repo_path": "repo", "rev": "--all"}));
    assert!(option.contains("must not start with \"-\""), "{option}");
    // A date git cannot read is named, not taken as "now" (which answers no commits).
    for field in ["since", "until"] {
        let bad = lab.err(
            "git_log",
            json!({"repo_path": "repo", field: "garbage-date"}),
        );
        assert!(
            bad.starts_with("git_log failed (invalid_arguments)")
                && bad.contains(field)
                && bad.contains("garbage-date"),
            "{bad}"
        );
    }
    assert_eq!(
        subjects(&lab.ok(
            "git_log",
            json!({"repo_path": "repo", "since": "20 years ago", "grep": "^Add b"})
        )),
        ["Add b"]
    );

    // A repository with no commits yet has an empty history.
    lab.init(&lab.root().join("empty"));
    let empty = lab.ok("git_log", json!({"repo_path": "empty"}));
    assert_eq!(empty["commits"], json!([]));
}

#[test]
fn git_show_gives_a_commit_or_a_file_at_a_revision() {
    let mut lab = Lab::new();
    let repo = lab.root().join("repo");
    lab.init(&repo);
    let first = lab.commit(
        &repo,
        &[("src/lib.rs", "fn old() {}\n"), ("keep.txt", "k\n")],
        "First",
    );
    let second = lab.commit(
        &repo,
        &[("src/lib.rs", "fn new() {}\n")],
        "Second\n\nWith a body.",
    );
    std::fs::remove_dir_all(repo.join("src")).expect("rm src");
    lab.git(&repo, &["add", "-A"]);
    lab.git(&repo, &["commit", "-q", "-m", "Remove src"]);

    let show = lab.ok(
        "git_show",
        json!({"repo_path": "repo", "revision": "HEAD~1"}),
    );
    assert_eq!(show["commit"]["sha"], second);
    assert_eq!(show["commit"]["subject"], "Second");
    assert_eq!(show["commit"]["body"], "With a body.");
    assert_eq!(show["commit"]["parents"], json!([first]));
    assert_eq!(paths(&show["files"]), ["src/lib.rs"]);
    let patch = show["text"].as_str().expect("text");
    assert!(
        patch.starts_with("diff --git")
            && patch.contains("-fn old() {}")
            && patch.contains("+fn new() {}"),
        "{patch}"
    );

    let stat = lab.ok(
        "git_show",
        json!({"repo_path": "repo", "revision": &first[..10], "stat_only": true}),
    );
    assert_eq!(stat["commit"]["sha"], first);
    let summary = stat["text"].as_str().expect("text");
    assert!(
        !summary.contains("diff --git") && summary.contains("2 files changed"),
        "{summary}"
    );

    // A file at a revision, though the file (and its folder) is gone from the work tree now.
    let file = lab.ok(
        "git_show",
        json!({"repo_path": "repo", "revision": "HEAD~2", "path": "src/lib.rs"}),
    );
    assert_eq!(file["text"], "fn old() {}\n");
    assert_eq!(file["type"], "blob");
    assert_eq!(file["commit"], first);
    let folder = lab.ok(
        "git_show",
        json!({"repo_path": "repo", "revision": "HEAD~1", "path": "."}),
    );
    assert_eq!(folder["type"], "tree");
    assert_eq!(folder["text"], "keep.txt\nsrc/");

    let missing = lab.call(
        "git_show",
        json!({"repo_path": "repo", "revision": "HEAD", "path": "src/lib.rs"}),
    );
    assert!(
        is_error(&missing) && text(&missing).contains("(not_found)"),
        "{missing}"
    );
    assert!(
        text(&missing).contains("does not exist at revision"),
        "{missing}"
    );
    let bad = lab.call(
        "git_show",
        json!({"repo_path": "repo", "revision": "no-such-branch"}),
    );
    assert!(
        is_error(&bad) && text(&bad).contains("(not_found)"),
        "{bad}"
    );
    let required = lab.err("git_show", json!({"repo_path": "repo"}));
    assert!(
        required.contains("missing required argument \"revision\""),
        "{required}"
    );
}

#[test]
fn git_branch_list_with_upstream_ahead_and_behind() {
    let mut lab = Lab::new();
    let root = lab.root();
    let origin = root.join("origin.git");
    lab.bare(&origin);
    let seed = root.join("seed");
    lab.clone(&origin, &seed);
    lab.commit(&seed, &[("a.txt", "a\n")], "base");
    lab.git(&seed, &["push", "-q", "origin", "main"]);
    let repo = root.join("repo");
    lab.clone(&origin, &repo);
    // The remote moves on by one commit, the clone by two of its own.
    lab.commit(&seed, &[("seed.txt", "s\n")], "remote work");
    lab.git(&seed, &["push", "-q", "origin", "main"]);
    lab.commit(&repo, &[("r1.txt", "1\n")], "local one");
    let local_two = lab.commit(&repo, &[("r2.txt", "2\n")], "local two");
    lab.git(&repo, &["fetch", "-q"]);
    lab.git(&repo, &["branch", "-q", "feature"]);
    lab.git(&repo, &["checkout", "-q", "feature"]);
    let only_feature = lab.commit(&repo, &[("f.txt", "f\n")], "feature only");

    let list = lab.ok("git_branch_list", json!({"repo_path": "repo"}));
    assert_eq!(list["current"], "feature");
    let branches = list["branches"].as_array().expect("branches");
    let names: Vec<&str> = branches.iter().filter_map(|b| b["name"].as_str()).collect();
    assert_eq!(names, ["feature", "main"]);
    let main = &branches[1];
    assert_eq!(main["upstream"], "origin/main");
    assert_eq!(
        (main["ahead"].clone(), main["behind"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(main["sha"], local_two);
    assert_eq!(main["subject"], "local two");
    assert!(main["date"].as_str().expect("date").contains('T'));
    assert!(branches[0].get("upstream").is_none() && branches[0]["current"] == true);

    let remote = lab.ok(
        "git_branch_list",
        json!({"repo_path": "repo", "scope": "remote"}),
    );
    let names: Vec<&str> = remote["branches"]
        .as_array()
        .expect("b")
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["origin/main"],
        "origin/HEAD is a symref, not listed"
    );
    assert_eq!(remote["branches"][0]["remote"], true);
    let all = lab.ok(
        "git_branch_list",
        json!({"repo_path": "repo", "scope": "all"}),
    );
    assert_eq!(all["count"], 3);

    let contains = lab.ok(
        "git_branch_list",
        json!({"repo_path": "repo", "contains": only_feature}),
    );
    assert_eq!(contains["count"], 1);
    assert_eq!(contains["branches"][0]["name"], "feature");
    let bad = lab.call(
        "git_branch_list",
        json!({"repo_path": "repo", "contains": "deadbeef-nope"}),
    );
    assert!(
        is_error(&bad) && text(&bad).contains("(not_found)"),
        "{bad}"
    );
    let scope = lab.err(
        "git_branch_list",
        json!({"repo_path": "repo", "scope": "everything"}),
    );
    assert!(scope.contains("is not one of"), "{scope}");

    // git_status reports the same upstream state.
    lab.git(&repo, &["checkout", "-q", "main"]);
    let status = lab.ok("git_status", json!({"repo_path": "repo"}));
    assert_eq!(status["upstream"], "origin/main");
    assert_eq!(
        (status["ahead"].clone(), status["behind"].clone()),
        (json!(2), json!(1))
    );
}

/// 601 branches with long names: every page fits, the walk reaches each branch exactly once in
/// ref order, and a name glob narrows the list (its count is every match).
#[test]
fn git_branch_list_pages_through_every_branch_and_filters_by_a_glob() {
    let mut lab = Lab::new();
    let repo = lab.root().join("many");
    lab.init(&repo);
    let sha = lab.commit(&repo, &[("a.txt", "a\n")], "base");
    let names: Vec<String> = (0..600)
        .map(|i| {
            let kind = if i % 3 == 0 { "feature" } else { "fix" };
            format!("{kind}/{i:04}-{}", "n".repeat(120))
        })
        .collect();
    // Loose refs written as git writes them (a git per branch would take a minute).
    for name in &names {
        write(
            &repo.join(".git/refs/heads").join(name),
            &format!("{sha}\n"),
        );
    }
    assert_eq!(
        lab.git(&repo, &["for-each-ref", "--count=1000", "--format=x"])
            .lines()
            .count(),
        601
    );
    let mut all = vec!["main".to_owned()];
    all.extend(names.iter().cloned());
    all.sort();
    let mut seen: Vec<String> = Vec::new();
    let mut args = json!({"repo_path": "many"});
    let mut pages = 0;
    loop {
        let page = lab.ok("git_branch_list", args.clone());
        assert_eq!(page["count"], 601, "{}", page["count"]);
        pages += 1;
        seen.extend(
            page["branches"]
                .as_array()
                .expect("branches")
                .iter()
                .map(|b| b["name"].as_str().expect("name").to_owned()),
        );
        match page.get("next_cursor") {
            Some(cursor) => args["cursor"] = cursor.clone(),
            None => break,
        }
    }
    assert_eq!(seen, all, "every branch once, in ref order");
    assert!(pages >= 4, "{pages} pages, each fitting one answer");
    let features = lab.ok(
        "git_branch_list",
        json!({"repo_path": "many", "pattern": "feature/*"}),
    );
    assert_eq!(features["count"], 200);
    let shown = features["branches"].as_array().expect("branches");
    assert!(!shown.is_empty() && features.get("next_cursor").is_some());
    assert!(shown
        .iter()
        .all(|b| b["name"].as_str().unwrap_or("").starts_with("feature/")));
    let bad = lab.err(
        "git_branch_list",
        json!({"repo_path": "many", "pattern": "--all"}),
    );
    assert!(bad.contains("pattern"), "{bad}");
    let bad = lab.err(
        "git_branch_list",
        json!({"repo_path": "many", "cursor": "nonsense"}),
    );
    assert!(bad.contains("cursor"), "{bad}");
}

/// A walk of `git_log` by its cursor sees every commit once, in order, even while new commits
/// land on the branch between its pages (the cursor holds where the walk began).
#[test]
fn git_log_walks_the_whole_history_by_cursor_while_commits_land() {
    let mut lab = Lab::new();
    let repo = lab.root().join("long");
    lab.init(&repo);
    let mut history = Vec::new();
    for i in 0..250 {
        lab.git(
            &repo,
            &[
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                &format!("commit {i:03}"),
            ],
        );
        history.push(lab.git(&repo, &["rev-parse", "HEAD"]));
    }
    history.reverse();
    let mut seen: Vec<String> = Vec::new();
    let mut args = json!({"repo_path": "long"});
    let mut pages = 0;
    loop {
        let page = lab.ok("git_log", args.clone());
        seen.extend(
            page["commits"]
                .as_array()
                .expect("commits")
                .iter()
                .map(|c| c["sha"].as_str().expect("sha").to_owned()),
        );
        pages += 1;
        // New work lands between pages; the walk goes on from where it began.
        lab.git(
            &repo,
            &[
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                &format!("landed {pages}"),
            ],
        );
        match page.get("next_cursor") {
            Some(cursor) => {
                assert_eq!(page["has_more"], true);
                args["cursor"] = cursor.clone();
            }
            None => break,
        }
    }
    assert_eq!(seen, history, "every commit once, newest first");
    assert!(pages >= 12, "{pages}");
    let bad = lab.err("git_log", json!({"repo_path": "long", "cursor": "zz"}));
    assert!(bad.contains("cursor"), "{bad}");
}

#[test]
fn git_add_and_commit_round_trip() {
    let mut lab = Lab::new();
    let repo = lab.root().join("repo");
    lab.init(&repo);
    lab.commit(
        &repo,
        &[("keep.txt", "k\n"), ("old/gone.txt", "g\n")],
        "base",
    );
    write(&repo.join("new.txt"), "new\n");
    write(&repo.join("keep.txt"), "changed\n");
    write(&repo.join("sub/deep.txt"), "deep\n");
    std::fs::remove_dir_all(repo.join("old")).expect("rm old");

    let nothing = lab.call(
        "git_commit",
        json!({"repo_path": "repo", "message": "empty"}),
    );
    assert!(
        is_error(&nothing) && text(&nothing).contains("nothing to commit"),
        "{nothing}"
    );

    let added = lab.ok(
        "git_add",
        json!({"repo_path": "repo", "paths": ["new.txt", "old/gone.txt"]}),
    );
    assert_eq!(added["added"], json!(["new.txt", "old/gone.txt"]));
    assert_eq!(
        added["staged"],
        json!([{"path": "new.txt", "status": "added"}, {"path": "old/gone.txt", "status": "deleted"}])
    );
    let again = lab.ok(
        "git_add",
        json!({"repo_path": "repo", "paths": ["new.txt", "old/gone.txt"]}),
    );
    assert_eq!(again["staged"], added["staged"], "idempotent");
    // Relative to repo_path, which may be a folder of the work tree.
    let sub = lab.ok("git_add", json!({"repo_path": "repo/sub", "paths": ["."]}));
    assert_eq!(sub["added"], json!(["sub"]));

    let commit = lab.ok(
        "git_commit",
        json!({"repo_path": "repo", "message": "Add new, drop old\n\nDetails."}),
    );
    let head = lab.git(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(commit["sha"], head);
    assert!(head.starts_with(commit["short_sha"].as_str().expect("short")));
    assert_eq!(commit["branch"], "main");
    assert_eq!(commit["summary"], "Add new, drop old");
    assert_eq!(commit["files_changed"], 3);
    assert_eq!(
        lab.git(&repo, &["log", "-1", "--format=%B"]),
        "Add new, drop old\n\nDetails."
    );
    assert_eq!(
        lab.git(&repo, &["log", "-1", "--format=%an <%ae>"]),
        "Test Author <author@example.com>"
    );

    // keep.txt is modified but unstaged: `all` commits it.
    let nothing = lab.err(
        "git_commit",
        json!({"repo_path": "repo", "message": "nope"}),
    );
    assert!(
        nothing.contains("nothing to commit") && nothing.contains("all: true"),
        "{nothing}"
    );
    let all = lab.ok(
        "git_commit",
        json!({"repo_path": "repo", "message": "All tracked", "all": true}),
    );
    assert_eq!(all["files_changed"], 1);
    let status = lab.ok("git_status", json!({"repo_path": "repo"}));
    assert_eq!(status["clean"], true, "{status}");
    let empty = lab.ok(
        "git_commit",
        json!({"repo_path": "repo", "message": "Empty", "allow_empty": true}),
    );
    assert_eq!(empty["files_changed"], 0);
    assert_eq!(lab.git(&repo, &["rev-list", "--count", "HEAD"]), "4");
    let blank = lab.err("git_commit", json!({"repo_path": "repo", "message": "  "}));
    assert!(blank.contains("must not be empty"), "{blank}");
    let missing = lab.call(
        "git_add",
        json!({"repo_path": "repo", "paths": ["no-such.txt"]}),
    );
    assert!(
        is_error(&missing) && text(&missing).contains("(not_found)"),
        "{missing}"
    );
    let none = lab.err("git_add", json!({"repo_path": "repo", "paths": []}));
    assert!(none.contains("at least one path"), "{none}");
}

#[test]
fn git_commit_quotes_a_failing_pre_commit_hook() {
    let mut lab = Lab::new();
    let repo = lab.root().join("repo");
    lab.init(&repo);
    let base = lab.commit(&repo, &[("a.txt", "a\n")], "base");
    let hook = repo.join(".git/hooks/pre-commit");
    write(
        &hook,
        "#!/bin/sh\necho 'lint: trailing whitespace in a.txt' >&2\nexit 1\n",
    );
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    write(&repo.join("a.txt"), "a \n");
    lab.ok("git_add", json!({"repo_path": "repo", "paths": ["a.txt"]}));

    let refused = lab.err(
        "git_commit",
        json!({"repo_path": "repo", "message": "Change a"}),
    );
    assert!(
        refused.contains("lint: trailing whitespace in a.txt"),
        "{refused}"
    );
    assert!(refused.contains("git commit failed"), "{refused}");
    assert_eq!(
        lab.git(&repo, &["rev-parse", "HEAD"]),
        base,
        "no commit was made"
    );

    std::fs::remove_file(&hook).expect("rm hook");
    let commit = lab.ok(
        "git_commit",
        json!({"repo_path": "repo", "message": "Change a"}),
    );
    assert_ne!(commit["sha"], base);
}

#[test]
fn git_push_creates_the_upstream_then_fast_forwards() {
    let mut lab = Lab::new();
    let origin = lab.root().join("origin.git");
    lab.bare(&origin);
    let repo = lab.root().join("repo");
    lab.init(&repo);
    lab.git(&repo, &["remote", "add", "origin", &s(&origin)]);
    let first = lab.commit(&repo, &[("a.txt", "a\n")], "first");

    let push = lab.ok("git_push", json!({"repo_path": "repo"}));
    assert_eq!(push["branch"], "main");
    assert_eq!(push["set_upstream"], true);
    assert_eq!(push["upstream"], "origin/main");
    assert_eq!(
        push["refs"],
        json!([{"status": "new", "local_ref": "refs/heads/main", "remote_ref": "refs/heads/main", "summary": "[new branch]"}])
    );
    assert_eq!(lab.git(&origin, &["rev-parse", "main"]), first);
    assert_eq!(
        lab.git(&repo, &["rev-parse", "--abbrev-ref", "main@{upstream}"]),
        "origin/main"
    );

    let second = lab.commit(&repo, &[("b.txt", "b\n")], "second");
    let status = lab.ok("git_status", json!({"repo_path": "repo"}));
    assert_eq!(status["ahead"], 1);
    let push = lab.ok("git_push", json!({"repo_path": "repo", "tags": false}));
    assert_eq!(push["set_upstream"], false, "it has an upstream now");
    assert_eq!(push["refs"][0]["status"], "fast_forward");
    assert_eq!(lab.git(&origin, &["rev-parse", "main"]), second);
    let again = lab.ok("git_push", json!({"repo_path": "repo"}));
    assert_eq!(again["refs"][0]["status"], "up_to_date");

    // A named branch, and tags.
    lab.git(&repo, &["branch", "topic"]);
    lab.git(&repo, &["tag", "v1"]);
    let topic = lab.ok(
        "git_push",
        json!({"repo_path": "repo", "branch": "topic", "tags": true}),
    );
    let remote_refs: Vec<&str> = topic["refs"]
        .as_array()
        .expect("refs")
        .iter()
        .filter_map(|r| r["remote_ref"].as_str())
        .collect();
    assert!(
        remote_refs.contains(&"refs/heads/topic") && remote_refs.contains(&"refs/tags/v1"),
        "{topic}"
    );
    assert_eq!(lab.git(&origin, &["rev-parse", "v1"]), second);

    let unknown = lab.call(
        "git_push",
        json!({"repo_path": "repo", "remote": "upstream"}),
    );
    assert!(
        is_error(&unknown)
            && text(&unknown).contains("no remote named \"upstream\" (configured: origin)"),
        "{unknown}"
    );
    let outside = lab.outside().join("target.git");
    lab.bare(&outside);
    let url = lab.err(
        "git_push",
        json!({"repo_path": "repo", "remote": s(&outside)}),
    );
    assert!(url.contains("pushes only to configured remotes"), "{url}");
    assert_eq!(
        lab.git(&outside, &["for-each-ref"]),
        "",
        "nothing was pushed outside"
    );
    let missing = lab.call(
        "git_push",
        json!({"repo_path": "repo", "branch": "no-such"}),
    );
    assert!(
        is_error(&missing) && text(&missing).contains("(not_found)"),
        "{missing}"
    );
    let option = lab.err(
        "git_push",
        json!({"repo_path": "repo", "branch": "--mirror"}),
    );
    assert!(option.contains("must not start with \"-\""), "{option}");
    let force = lab.err("git_push", json!({"repo_path": "repo", "force": true}));
    assert!(force.contains("unknown argument \"force\""), "{force}");
}

#[test]
fn read_only_git_tools_run_no_program_the_repository_configures() {
    let mut lab = Lab::new();
    let repo = lab.root().join("repo");
    lab.init(&repo);
    write(
        &repo.join(".gitattributes"),
        "*.txt diff=evil filter=evil\n",
    );
    lab.commit(&repo, &[("a.txt", "one\n")], "first");
    lab.commit(&repo, &[("a.txt", "two\n")], "second");
    // Each program, were it run, leaves a marker beside the repository.
    let ran = lab.dir.path().join("ran");
    std::fs::create_dir_all(&ran).expect("mkdir");
    let marker = |name: &str| format!("touch {}/{name}", ran.display());
    let program = |name: &str| format!("sh -c '{}; cat' --", marker(name));
    for (key, value) in [
        ("core.fsmonitor", marker("fsmonitor")),
        (
            "diff.evil.textconv",
            format!("sh -c '{}; cat \"$0\"'", marker("textconv")),
        ),
        ("diff.evil.command", marker("external-diff")),
        ("diff.external", marker("diff-external")),
        ("filter.evil.clean", program("clean")),
        ("filter.evil.smudge", program("smudge")),
    ] {
        lab.git(&repo, &["config", key, &value]);
    }
    // A dirty, stat-changed file: status and diff would run the clean filter on it.
    write(&repo.join("a.txt"), "three\n");
    lab.ok("git_status", json!({"repo_path": "repo"}));
    let diff = lab.ok("git_diff", json!({"repo_path": "repo"}));
    assert!(diff.to_string().contains("three"), "{diff}");
    lab.ok(
        "git_diff",
        json!({"repo_path": "repo", "target": "HEAD~1..HEAD"}),
    );
    lab.ok("git_diff", json!({"repo_path": "repo", "target": "HEAD~1"}));
    lab.ok("git_log", json!({"repo_path": "repo", "path": "a.txt"}));
    lab.ok("git_show", json!({"repo_path": "repo", "revision": "HEAD"}));
    lab.ok(
        "git_show",
        json!({"repo_path": "repo", "revision": "HEAD", "path": "a.txt"}),
    );
    let markers: Vec<String> = std::fs::read_dir(&ran)
        .expect("read")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        markers.is_empty(),
        "programs the repository configured ran: {markers:?}"
    );
    // The same programs do run for plain git (the set-up is live).
    lab.git(&repo, &["status"]);
    lab.git(&repo, &["diff", "HEAD~1", "HEAD"]);
    assert!(ran.join("fsmonitor").exists() || ran.join("clean").exists());
}

#[test]
fn git_write_tools_run_no_program_the_repository_configures() {
    let mut lab = Lab::new();
    let origin = lab.root().join("origin.git");
    lab.bare(&origin);
    let repo = lab.root().join("repo");
    lab.init(&repo);
    lab.git(&repo, &["remote", "add", "origin", &s(&origin)]);
    // Nothing listens on port 1: an SSH push fails at once, after its command ran.
    lab.git(&repo, &["remote", "add", "far", "ssh://127.0.0.1:1/x.git"]);
    lab.commit(&repo, &[("a.txt", "a\n")], "first");
    // Each program, were it run, leaves a marker beside the repository; extra arguments go to
    // `$0` and `$@` of the shell.
    let ran = lab.dir.path().join("ran");
    std::fs::create_dir_all(&ran).expect("mkdir");
    let program =
        |name: &str, then: &str| format!("sh -c 'touch {}/{name}; {then}' --", ran.display());
    // A signing program is run as a file, not through the shell.
    let script = |name: &str| {
        let path = lab.dir.path().join(name);
        write(
            &path,
            &format!("#!/bin/sh\ntouch {}/{name}\nexit 1\n", ran.display()),
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        s(&path)
    };
    // The user's own settings are theirs, and keep working.
    for (key, value) in [
        ("core.sshCommand", program("user-ssh", "exit 1")),
        ("gpg.program", script("user-gpg")),
    ] {
        lab.git(lab.dir.path(), &["config", "--global", key, &value]);
    }
    for (key, value) in [
        ("core.fsmonitor", program("fsmonitor", "exit 1")),
        ("core.sshCommand", program("repo-ssh", "exit 1")),
        ("gpg.program", script("repo-gpg")),
        (
            "remote.origin.receivepack",
            format!("touch {}/receivepack; git-receive-pack", ran.display()),
        ),
    ] {
        lab.git(&repo, &["config", key, &value]);
    }
    let markers = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&ran)
            .expect("read")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };

    write(&repo.join("b.txt"), "b\n");
    lab.ok("git_add", json!({"repo_path": "repo", "paths": ["b.txt"]}));
    let commit = lab.ok(
        "git_commit",
        json!({"repo_path": "repo", "message": "second"}),
    );
    let head = lab.git(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(commit["sha"], head.as_str(), "{commit}");
    let push = lab.ok("git_push", json!({"repo_path": "repo"}));
    assert_eq!(push["refs"][0]["status"], "new", "{push}");
    assert_eq!(lab.git(&origin, &["rev-parse", "main"]), head);
    let far = lab.err("git_push", json!({"repo_path": "repo", "remote": "far"}));
    assert!(far.contains("git push"), "{far}");
    // A signed commit asks the user's signing program, never the repository's.
    lab.git(&repo, &["config", "commit.gpgSign", "true"]);
    write(&repo.join("c.txt"), "c\n");
    lab.ok("git_add", json!({"repo_path": "repo", "paths": ["c.txt"]}));
    let signed = lab.err(
        "git_commit",
        json!({"repo_path": "repo", "message": "third"}),
    );
    assert!(signed.contains("gpg"), "{signed}");
    assert_eq!(
        markers(),
        ["user-gpg", "user-ssh"],
        "only the user's own programs ran"
    );

    // The same programs do run for plain git (the set-up is live).
    lab.git(&repo, &["push", "-q", "origin", "main:refs/heads/plain"]);
    lab.git(&repo, &["status"]);
    let all = markers();
    assert!(
        all.contains(&"receivepack".to_owned()) && all.contains(&"fsmonitor".to_owned()),
        "{all:?}"
    );
}

#[test]
fn git_push_never_writes_to_a_local_repository_outside_the_roots() {
    let mut lab = Lab::new();
    let outside = lab.outside().join("stolen.git");
    lab.bare(&outside);
    let repo = lab.root().join("repo");
    lab.init(&repo);
    lab.commit(&repo, &[("a.txt", "a\n")], "first");
    // A configured remote whose URL is a path outside, a file:// URL, one rewritten there by
    // pushInsteadOf, and a remote helper (which a repository could turn on for itself).
    lab.git(&repo, &["remote", "add", "plain", &s(&outside)]);
    lab.git(
        &repo,
        &["remote", "add", "file", &format!("file://{}", s(&outside))],
    );
    lab.git(&repo, &["remote", "add", "rewritten", "safe:stolen.git"]);
    lab.git(
        &repo,
        &[
            "config",
            &format!("url.{}/.pushInsteadOf", s(&lab.outside())),
            "safe:",
        ],
    );
    lab.git(
        &repo,
        &["remote", "add", "helper", "ext::sh -c touch% ext-ran"],
    );
    lab.git(&repo, &["config", "protocol.ext.allow", "always"]);
    for remote in ["plain", "file", "rewritten"] {
        let why = lab.err("git_push", json!({"repo_path": "repo", "remote": remote}));
        assert!(
            why.contains(&format!("remote \"{remote}\" pushes to"))
                && why.contains("outside the roots"),
            "{remote}: {why}"
        );
    }
    let why = lab.err("git_push", json!({"repo_path": "repo", "remote": "helper"}));
    assert!(why.contains("remote helper"), "{why}");
    assert!(!repo.join("ext-ran").exists());
    assert_eq!(
        lab.git(&outside, &["for-each-ref"]),
        "",
        "nothing was pushed outside"
    );
    // Inside the roots a local remote is fine.
    let inside = lab.root().join("mirror.git");
    lab.bare(&inside);
    lab.git(&repo, &["remote", "add", "mirror", &s(&inside)]);
    lab.ok("git_push", json!({"repo_path": "repo", "remote": "mirror"}));
}

#[test]
fn git_push_rejects_non_fast_forward_and_honours_force_with_lease() {
    let mut lab = Lab::new();
    let root = lab.root();
    let origin = root.join("origin.git");
    lab.bare(&origin);
    let a = root.join("a");
    lab.clone(&origin, &a);
    lab.commit(&a, &[("base.txt", "base\n")], "base");
    lab.git(&a, &["push", "-q", "-u", "origin", "main"]);
    let b = root.join("b");
    lab.clone(&origin, &b);

    let from_a = lab.commit(&a, &[("a.txt", "a\n")], "from a");
    lab.ok("git_push", json!({"repo_path": "a"}));
    let from_b = lab.commit(&b, &[("b.txt", "b\n")], "from b");

    // b has not seen a's commit.
    let result = lab.call("git_push", json!({"repo_path": "b"}));
    assert!(is_error(&result), "{result}");
    let message = text(&result);
    assert!(message.contains("failed (conflict)"), "{message}");
    assert!(message.contains("push rejected (fetch first)"), "{message}");
    assert!(
        message.contains("pull or rebase first, or use force_with_lease"),
        "{message}"
    );
    assert_eq!(lab.git(&origin, &["rev-parse", "main"]), from_a);

    // After a fetch the rejection is a plain non-fast-forward.
    lab.git(&b, &["fetch", "-q"]);
    let message = lab.err("git_push", json!({"repo_path": "b"}));
    assert!(
        message.contains("push rejected (non-fast-forward)"),
        "{message}"
    );
    assert!(
        message.contains("the remote has commits you do not have"),
        "{message}"
    );

    // With the lease b has (it saw a's commit), the overwrite goes through.
    let forced = lab.ok(
        "git_push",
        json!({"repo_path": "b", "force_with_lease": true}),
    );
    assert_eq!(forced["refs"][0]["status"], "forced");
    assert_eq!(forced["force_with_lease"], true);
    assert_eq!(lab.git(&origin, &["rev-parse", "main"]), from_b);

    // a's view is stale now: its lease refuses to overwrite b's commit.
    lab.commit(&a, &[("a2.txt", "a2\n")], "more from a");
    let message = lab.err(
        "git_push",
        json!({"repo_path": "a", "force_with_lease": true}),
    );
    assert!(message.contains("push rejected (stale info)"), "{message}");
    assert!(message.contains("failed (conflict)"), "{message}");
    assert_eq!(lab.git(&origin, &["rev-parse", "main"]), from_b);
}

#[test]
fn git_tools_refuse_paths_outside_the_roots() {
    let mut lab = Lab::new();
    let root = lab.root();
    let repo = root.join("repo");
    lab.init(&repo);
    lab.commit(&repo, &[("a.txt", "a\n")], "base");
    // A real repository outside the roots, and ways to reach it.
    let outside_repo = lab.outside().join("secret");
    lab.init(&outside_repo);
    lab.commit(&outside_repo, &[("secret.txt", "s\n")], "secret");
    symlink(&outside_repo, root.join("link-out")).expect("symlink");
    symlink(&outside_repo, repo.join("out")).expect("symlink");
    symlink(root.join("loop-b"), root.join("loop-a")).expect("symlink");
    symlink(root.join("loop-a"), root.join("loop-b")).expect("symlink");
    symlink(repo.join("loop2"), repo.join("loop1")).expect("symlink");
    symlink(repo.join("loop1"), repo.join("loop2")).expect("symlink");
    std::fs::create_dir_all(root.join("plain")).expect("mkdir");
    let outside_abs = s(&outside_repo);

    let repo_paths = [
        ("../outside/secret".to_owned(), "\"..\" is not allowed"),
        (outside_abs.clone(), "an absolute path outside the roots"),
        ("link-out".to_owned(), "leads outside the roots"),
        ("loop-a".to_owned(), "a symlink loop"),
        ("plain".to_owned(), "not a git repository"),
    ];
    let tools = [
        ("git_status", json!({})),
        ("git_diff", json!({})),
        ("git_log", json!({})),
        ("git_show", json!({"revision": "HEAD"})),
        ("git_branch_list", json!({})),
        ("git_add", json!({"paths": ["."]})),
        ("git_commit", json!({"message": "m", "allow_empty": true})),
        ("git_push", json!({})),
    ];
    for (tool, base) in &tools {
        for (repo_path, needle) in &repo_paths {
            let mut args = base.clone();
            args["repo_path"] = json!(repo_path);
            let message = lab.err(tool, args);
            assert!(
                message.contains(needle),
                "{tool} repo_path={repo_path}: {message}"
            );
            assert!(
                message.contains("repo_path"),
                "{tool}: names the argument: {message}"
            );
        }
    }

    let path_escapes = [
        (
            "../../outside/secret/secret.txt".to_owned(),
            "\"..\" is not allowed",
        ),
        (
            format!("{outside_abs}/secret.txt"),
            "an absolute path outside the roots",
        ),
        ("out/secret.txt".to_owned(), "leads outside the roots"),
        ("out".to_owned(), "leads outside the roots"),
        ("out/not-yet/new.txt".to_owned(), "leads outside the roots"),
        ("loop1".to_owned(), "a symlink loop"),
        ("../loop-a".to_owned(), "\"..\" is not allowed"),
    ];
    let path_tools = [
        ("git_diff", "paths", json!({"repo_path": "repo"})),
        ("git_add", "paths", json!({"repo_path": "repo"})),
        ("git_log", "path", json!({"repo_path": "repo"})),
        (
            "git_show",
            "path",
            json!({"repo_path": "repo", "revision": "HEAD"}),
        ),
    ];
    for (tool, arg, base) in &path_tools {
        for (path, needle) in &path_escapes {
            let mut args = base.clone();
            args[*arg] = if *arg == "paths" {
                json!(["a.txt", path])
            } else {
                json!(path)
            };
            let message = lab.err(tool, args);
            assert!(message.contains(needle), "{tool} {arg}={path}: {message}");
        }
    }
    // Inside the roots but outside the work tree.
    let message = lab.err(
        "git_add",
        json!({"repo_path": "repo", "paths": [s(&root.join("plain"))]}),
    );
    assert!(message.contains("outside the repository"), "{message}");
    // Pathspec magic is a literal name, not an escape.
    let magic = lab.call(
        "git_add",
        json!({"repo_path": "repo", "paths": [":(top)a.txt"]}),
    );
    assert!(is_error(&magic), "{magic}");
    assert_eq!(
        lab.git(&outside_repo, &["status", "--porcelain"]),
        "",
        "the outside repository is untouched"
    );
    assert_eq!(
        lab.git(&repo, &["status", "--porcelain"]),
        "?? loop1\n?? loop2\n?? out",
        "nothing staged"
    );
}

#[test]
fn git_repository_discovery_stops_at_the_roots() {
    // The root is a folder inside a repository that lies outside the roots.
    let dir = TempDir::new("git-outer");
    let plugins = plugins(&["git"]);
    std::fs::write(
        dir.path().join("gitconfig"),
        "[init]\n\tdefaultBranch = main\n",
    )
    .expect("config");
    let outer = dir.path().join("outer");
    std::fs::create_dir_all(outer.join("inside")).expect("mkdir");
    git_env(dir.path(), &outer, &["init", "-q"], &[]);
    let config = s(&dir.path().join("gitconfig"));
    let mut server = Server::start(
        plugins.path(),
        &["--root", &s(&outer.join("inside"))],
        &[
            ("GIT_CONFIG_GLOBAL", config.as_str()),
            ("GIT_CONFIG_NOSYSTEM", "1"),
        ],
    );
    server.initialize();
    let result = server.call("git_status", json!({}));
    assert!(is_error(&result), "{result}");
    assert!(text(&result).contains("not a git repository"), "{result}");
}

#[test]
fn git_tools_refuse_a_repository_whose_git_directory_lies_outside_the_roots() {
    let mut lab = Lab::new();
    let root = lab.root();
    // The victim, outside the roots, with a hook that would tell if a commit ran there.
    let victim = lab.outside().join("victim");
    lab.init(&victim);
    lab.commit(&victim, &[("v.txt", "v\n")], "victim");
    let marker = lab.outside().join("hook-ran");
    let hook = victim.join(".git/hooks/pre-commit");
    write(&hook, &format!("#!/bin/sh\ntouch '{}'\n", s(&marker)));
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let victim_git = victim.join(".git").canonicalize().expect("canonical");

    // 1. A `.git` file inside the roots pointing at the victim's git directory.
    let pointer = root.join("pointer");
    std::fs::create_dir_all(&pointer).expect("mkdir");
    write(
        &pointer.join(".git"),
        &format!("gitdir: {}\n", s(&victim_git)),
    );
    write(&pointer.join("new.txt"), "n\n");
    // 2. A worktree whose own admin folder is inside the roots but whose common directory
    //    (`commondir`) is the victim's.
    lab.git(
        &victim,
        &["worktree", "add", "-q", &s(&root.join("wt")), "-b", "wt"],
    );
    let admin = root.join("wt-admin");
    std::fs::rename(victim_git.join("worktrees/wt"), &admin).expect("move admin");
    write(&admin.join("commondir"), &format!("{}\n", s(&victim_git)));
    write(&root.join("wt/.git"), &format!("gitdir: {}\n", s(&admin)));
    // 3. A repository inside the roots that borrows the victim's objects.
    let borrower = root.join("borrower");
    lab.init(&borrower);
    write(
        &borrower.join(".git/objects/info/alternates"),
        &format!("{}\n", s(&victim_git.join("objects"))),
    );

    let cases = [
        ("pointer", "its git directory"),
        ("wt", "its common git directory"),
        ("borrower", "its alternate object store"),
    ];
    let tools = [
        ("git_status", json!({})),
        ("git_diff", json!({})),
        ("git_log", json!({})),
        ("git_show", json!({"revision": "HEAD"})),
        ("git_branch_list", json!({})),
        ("git_add", json!({"paths": ["."]})),
        ("git_commit", json!({"message": "m", "allow_empty": true})),
        ("git_push", json!({})),
    ];
    for (repo_path, what) in cases {
        for (tool, base) in &tools {
            let mut args = base.clone();
            args["repo_path"] = json!(repo_path);
            let message = lab.err(tool, args);
            assert!(
                message.contains(&format!("argument \"repo_path\" ({repo_path})"))
                    && message.contains(what)
                    && message.contains(&s(&victim_git))
                    && message.contains("is outside them (work tree "),
                "{tool} {repo_path}: {message}"
            );
        }
    }
    assert!(!marker.exists(), "the victim's hook never ran");
    assert_eq!(
        lab.git(&victim, &["rev-list", "--count", "--all"]),
        "1",
        "nothing was committed there"
    );
    assert_eq!(lab.git(&victim, &["status", "--porcelain"]), "");

    // A worktree kept wholly inside the roots is served as usual.
    let main = root.join("main");
    lab.init(&main);
    lab.commit(&main, &[("m.txt", "m\n")], "main");
    lab.git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            &s(&root.join("inside-wt")),
            "-b",
            "side",
        ],
    );
    let status = lab.ok("git_status", json!({"repo_path": "inside-wt"}));
    assert_eq!(status["branch"], "side", "{status}");
}
