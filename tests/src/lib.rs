//! Test support: find the built binaries, lay out plugin folders, and drive a real `coremcp`
//! process over real pipes. Every wait has a deadline, so a broken host fails a test instead of
//! hanging the suite.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub mod consul;
pub mod docker;
pub mod http;
pub mod oidc;
pub mod stores;
pub mod tls;

/// The default wait for one answer.
pub const WAIT: Duration = Duration::from_secs(20);

/// Set by `scripts/test`: every test runs, and one missing its outside service fails.
pub const RUN_ALL: &str = "COREMCP_TEST_ALL";

/// The value of `var`, which names something a test needs from outside the workspace (a
/// PostgreSQL server, an upstream MCP server from npm or PyPI, the `dist/` profiles): all of
/// them are provided by `scripts/test`. Without it, under plain `cargo test`, the test is
/// skipped with one line saying why (`None`); under `scripts/test` (`COREMCP_TEST_ALL=1`) its
/// absence fails the test, so the full run never skips silently.
pub fn external(var: &str, what: &str) -> Option<String> {
    external_part(var, what, "")
}

/// [`external`] for the part of a test that needs `var` (`part`: "the PostgreSQL half of "):
/// the line says only that part was skipped.
fn external_part(var: &str, what: &str, part: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Some(value),
        _ if std::env::var_os(RUN_ALL).is_some() => {
            panic!("{var} is not set: {what}; scripts/test provides it")
        }
        _ => {
            let test = thread::current().name().unwrap_or("a test").to_owned();
            // Past the harness's capture, so the line shows although the test passes.
            let _ = writeln!(
                std::io::stderr(),
                "skipped {part}{test}: {var} is not set ({what}; scripts/test provides it)"
            );
            None
        }
    }
}

/// The admin URL of the throwaway PostgreSQL, or `None` (skipped) without one.
pub fn postgres() -> Option<String> {
    external("COREMCP_TEST_PG_URL", "it needs a PostgreSQL server")
}

/// [`postgres`] for a test that runs on SQLite too: only its PostgreSQL half is skipped.
pub fn postgres_half() -> Option<String> {
    external_part(
        "COREMCP_TEST_PG_URL",
        "it needs a PostgreSQL server",
        "the PostgreSQL half of ",
    )
}

/// The cargo profile folder holding the built binaries (`target/debug`).
pub fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/debug/deps/tests-HASH → target/debug
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary lives in target/<profile>/deps")
        .to_owned()
}

/// Builds the workspace's binaries and plugin libraries once per test process when the tests
/// run under plain `cargo test`, which builds only the test targets (`scripts/test` has built
/// everything before, and says so with `COREMCP_TEST_ALL`). A no-op build costs a second.
fn ensure_built() {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let Some(cargo) = std::env::var_os("CARGO") else {
            return; // not run by cargo: whoever runs it built the workspace
        };
        if std::env::var_os(RUN_ALL).is_some() {
            return;
        }
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("tests/ is in the workspace");
        #[allow(clippy::disallowed_methods)] // cargo itself, with the caller's environment.
        let mut command = Command::new(cargo);
        command
            .args(["build", "--workspace", "--quiet"])
            .current_dir(workspace);
        if build_dir().ends_with("release") {
            command.arg("--release");
        }
        let status = command.status().expect("run cargo build");
        assert!(status.success(), "cargo build --workspace failed");
    });
}

/// The `coremcp` binary.
pub fn coremcp() -> PathBuf {
    ensure_built();
    let path = build_dir().join("coremcp");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace` first (scripts/test does)",
        path.display()
    );
    path
}

/// A built plugin library of the workspace, by group.
pub fn library(group: &str) -> PathBuf {
    ensure_built();
    let path = build_dir().join(format!(
        "libcoremcp_{group}{}",
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace`",
        path.display()
    );
    path
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The environment every process a test starts gets first (a test's own `env` wins): as an
/// ordinary user the tests read `/proc/<pid>/maps` of the processes they start, which an
/// undumpable process refuses to its own user; root reads it anyway.
pub fn harness_env() -> &'static [(&'static str, &'static str)] {
    if is_root() {
        &[]
    } else {
        &[("COREMCP_DUMPABLE", "1")]
    }
}

/// The data folder of processes a test starts without its own (`--data` or `COREMCP_DATA` in
/// their arguments win): under the build folder, never the user's XDG data dir.
pub fn scratch_data_dir() -> PathBuf {
    build_dir().join("test-scratch-data")
}

/// A tokens file (`NAME TOKEN` lines) of `entries` in `dir`; its path.
pub fn tokens_file(dir: &TempDir, entries: &[(&str, &str)]) -> String {
    let file = dir.path().join("tokens");
    let lines: String = entries
        .iter()
        .map(|(name, token)| format!("{name} {token}\n"))
        .collect();
    std::fs::write(&file, lines).expect("tokens");
    file.to_string_lossy().into_owned()
}

/// A folder removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "coremcp-test-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes an executable script and returns its path.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.0.join(name);
        std::fs::write(&path, body).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A plugins folder holding the given groups' libraries as installed ones: copies of the
/// built libraries with the install record (`coremcp plugins index`) beside each, since the
/// host refuses a library nobody installed.
pub fn plugins(groups: &[&str]) -> TempDir {
    let dir = TempDir::new("plugins");
    for group in groups {
        install_into(group, dir.path());
    }
    dir
}

/// Copies group `group`'s built library, as installed (with its install record), into `dir`.
pub fn install_into(group: &str, dir: &Path) {
    let indexed = indexed(group);
    let name = indexed.file_name().expect("file name").to_owned();
    let mut sidecar = name.clone();
    sidecar.push(".manifest.json");
    for (from, to) in [
        (indexed.clone(), dir.join(&name)),
        (indexed.with_file_name(&sidecar), dir.join(&sidecar)),
    ] {
        std::fs::copy(&from, &to).expect("copy the installed plugin");
        // The install record names the library by size and mtime: kept, no hash is needed.
        let modified = std::fs::metadata(&from)
            .and_then(|m| m.modified())
            .expect("mtime");
        std::fs::File::options()
            .write(true)
            .open(&to)
            .and_then(|f| f.set_modified(modified))
            .expect("set mtime");
    }
}

/// Group `group`'s built library, indexed once per test process in a folder of its own (the
/// record `coremcp plugins index` writes beside it): what [`install_into`] copies.
fn indexed(group: &str) -> PathBuf {
    static INDEXED: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut done = INDEXED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = done.iter().find(|(g, _)| g == group) {
        return path.clone();
    }
    let from = library(group);
    let top = build_dir().join("test-indexed");
    if done.is_empty() {
        // Folders of test processes that are gone.
        for entry in std::fs::read_dir(&top).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.split('-').next().unwrap_or_default();
            if !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = top.join(format!("{}-{group}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("indexed folder");
    let to = dir.join(from.file_name().expect("file name"));
    std::fs::copy(&from, &to).expect("copy plugin");
    let (code, _, stderr) = run(
        &["plugins", "--plugins", &dir.to_string_lossy(), "index"],
        &[],
    );
    assert_eq!(code, 0, "coremcp plugins index of {group}: {stderr}");
    done.push((group.to_owned(), to.clone()));
    to
}

/// Runs `coremcp ARGS` to completion (stdin closed) and returns (exit code, stdout, stderr).
pub fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    run_program(&coremcp(), args, env)
}

/// `coremcp plugins index` of `dir` (what an install records, for every library in it):
/// (exit code, stdout, stderr).
pub fn index_plugins(dir: &Path) -> (i32, String, String) {
    run(
        &["plugins", "index", "--plugins", &dir.to_string_lossy()],
        &[],
    )
}

/// Runs `PROGRAM ARGS` (an installed `coremcp`) like [`run`].
pub fn run_program(program: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    #[allow(clippy::disallowed_methods)] // Tests start the binary under test directly.
    let mut command = Command::new(program);
    let out = command
        .args(args)
        .env("COREMCP_DATA", scratch_data_dir())
        .envs(harness_env().iter().copied())
        .envs(env.iter().copied())
        .env_remove("COREMCP_GROUPS")
        .stdin(Stdio::null())
        .output()
        .expect("run coremcp");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `coremcp plugins` status line of `group` for the plugins in `dir`.
pub fn plugin_status(dir: &Path, group: &str) -> String {
    let (code, stdout, stderr) = run(&["plugins", "--plugins", &dir.to_string_lossy()], &[]);
    assert_eq!(code, 0, "coremcp plugins: {stderr}");
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(group))
        .unwrap_or_else(|| panic!("{group} not listed:\n{stdout}"))
        .to_owned()
}

/// A running `coremcp stdio`.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every stdout line, in order, as received.
    pub raw: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    /// Messages that arrived while waiting for something else.
    pub pending: Vec<Value>,
    next_id: u64,
    /// The result budget the session's client gets (10 000 once it introduced itself as Codex).
    pub budget: usize,
}

impl Server {
    /// Starts `coremcp stdio --plugins DIR EXTRA…` with `env` added.
    pub fn start(plugins: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let plugins = plugins.to_string_lossy().into_owned();
        let mut args = vec!["--plugins", plugins.as_str()];
        args.extend_from_slice(extra);
        Self::start_program(&coremcp(), &args, env)
    }

    /// Starts `PROGRAM stdio ARGS…` (an installed `coremcp`) with `env` added.
    pub fn start_program(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        #[allow(clippy::disallowed_methods)] // Tests start the binary under test directly.
        let mut command = Command::new(program);
        let mut child = command
            .arg("stdio")
            .args(args)
            .env("COREMCP_DATA", scratch_data_dir())
            .envs(crate::harness_env().iter().copied())
            .envs(env.iter().copied())
            .env_remove("COREMCP_GROUPS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start coremcp stdio");
        let stdout = child.stdout.take().expect("stdout");
        let mut stderr_pipe = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        let raw = Arc::new(Mutex::new(Vec::new()));
        let raw_writer = Arc::clone(&raw);
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                raw_writer.lock().expect("raw").push(line.clone());
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_writer = Arc::clone(&stderr);
        thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stderr_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                stderr_writer
                    .lock()
                    .expect("stderr")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            raw,
            stderr,
            pending: Vec::new(),
            next_id: 1000,
            budget: MAX_RESULT_CHARS,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr").clone()
    }

    /// Writes raw bytes to the server's stdin.
    pub fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to coremcp");
        stdin.flush().expect("flush");
    }

    /// Sends one message.
    pub fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write(line.as_bytes());
    }

    /// The next message from the server, or `None` after `wait`.
    pub fn recv(&mut self, wait: Duration) -> Option<Value> {
        match self.lines.recv_timeout(wait) {
            Ok(line) => Some(serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!(
                    "stdout line is not JSON ({e}): {line}\nstderr:\n{}",
                    self.stderr()
                )
            })),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Waits for the answer with this id, keeping other messages in `pending`.
    pub fn answer(&mut self, id: &Value, wait: Duration) -> Value {
        let deadline = Instant::now() + wait;
        if let Some(pos) = self.pending.iter().position(|m| m.get("id") == Some(id)) {
            return self.pending.remove(pos);
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(message) = self.recv(left) else {
                panic!(
                    "no answer to id {id} within {wait:?}\nstderr:\n{}",
                    self.stderr()
                );
            };
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
            self.pending.push(message);
        }
    }

    /// Sends a request and returns the whole answer (result or error).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(&id, WAIT)
    }

    /// `initialize` with `version`, then `notifications/initialized`; returns the result.
    pub fn initialize_with(&mut self, version: &str) -> Value {
        self.initialize_client(version, "coremcp-tests", "0")
    }

    /// [`Server::initialize_with`] as the client `name` (version "0.63.0"); every answer of a
    /// Codex session (`codex-mcp-client`) is then held to its 10 000 characters.
    pub fn initialize_as(&mut self, version: &str, name: &str) -> Value {
        self.initialize_client(version, name, "0.63.0")
    }

    fn initialize_client(&mut self, version: &str, name: &str, client_version: &str) -> Value {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": name, "version": client_version}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        if name == "codex-mcp-client" {
            self.budget = CODEX_RESULT_CHARS;
        }
        answer["result"].clone()
    }

    pub fn initialize(&mut self) -> Value {
        self.initialize_with("2025-06-18")
    }

    /// `tools/call`; returns the result (panics on a JSON-RPC error).
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call_raw(tool, arguments);
        check_answer_within(tool, &result, self.budget);
        result
    }

    /// [`Server::call`] without the result contract's check (for a test of the host's guard).
    pub fn call_raw(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        match answer.get("result") {
            Some(result) => result.clone(),
            None => panic!("{tool}: JSON-RPC error {answer}"),
        }
    }

    /// Calls a tool that must succeed; returns its structured content (an object, which never
    /// holds a `null`).
    pub fn ok(&mut self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args.clone());
        assert!(!is_error(&result), "{tool} {args}: {}", text(&result));
        let content = result["structuredContent"].clone();
        assert!(
            content.is_object(),
            "{tool}: no structured content: {result}"
        );
        assert_eq!(
            nulls(&result),
            Vec::<String>::new(),
            "{tool}: nulls in {result}"
        );
        content
    }

    /// Calls a tool that must fail; returns the error text.
    pub fn refused(&mut self, tool: &str, args: Value) -> String {
        let result = self.call(tool, args.clone());
        assert!(is_error(&result), "{tool} {args} should fail: {result}");
        text(&result).to_owned()
    }

    /// Closes stdin and waits (bounded) for the process to exit; returns its exit code.
    pub fn finish(&mut self, wait: Duration) -> Option<i32> {
        self.stdin = None;
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Sends the server a signal (`libc::SIGHUP` to reload its plugins).
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on the child we started; it touches no memory of ours.
        let rc = unsafe { libc::kill(self.pid() as libc::pid_t, signal) };
        assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Waits for a notification with this method, keeping other messages in `pending`.
    pub fn notification(&mut self, method: &str, wait: Duration) -> Value {
        if let Some(pos) = self.pending.iter().position(|m| m["method"] == method) {
            return self.pending.remove(pos);
        }
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(message) = self.recv(left) else {
                panic!("no {method} within {wait:?}\nstderr:\n{}", self.stderr());
            };
            if message["method"] == method {
                return message;
            }
            self.pending.push(message);
        }
    }

    /// Waits until stderr contains `needle`.
    pub fn wait_stderr(&self, needle: &str, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        loop {
            let text = self.stderr();
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "stderr never said {needle:?}:\n{text}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The names in a `tools/list` answer.
    pub fn tool_names(&mut self) -> Vec<String> {
        let answer = self.request("tools/list", json!({}));
        answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list: {answer}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }

    /// The plugin libraries mapped into the server process right now.
    pub fn mapped_plugins(&self) -> Vec<String> {
        self.mapped_files("libcoremcp_")
    }

    /// The distinct paths of the files whose name starts with `prefix` that the process has
    /// mapped, sorted.
    pub fn mapped_paths(&self, prefix: &str) -> Vec<String> {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.pid()))
            .expect("read /proc/PID/maps");
        // A library is mapped from a private copy, removed once mapped: " (deleted)".
        let mut found: Vec<String> = maps
            .lines()
            .filter_map(|l| l.find('/').map(|at| &l[at..]))
            .map(|path| path.strip_suffix(" (deleted)").unwrap_or(path))
            .filter(|path| {
                path.rsplit('/')
                    .next()
                    .is_some_and(|n| n.starts_with(prefix))
            })
            .map(str::to_owned)
            .collect();
        found.sort();
        found.dedup();
        found
    }

    /// The names of the files starting with `prefix` that the process has mapped, sorted.
    pub fn mapped_files(&self, prefix: &str) -> Vec<String> {
        let mut found: Vec<String> = self
            .mapped_paths(prefix)
            .iter()
            .filter_map(|path| path.rsplit('/').next())
            .map(str::to_owned)
            .collect();
        found.sort();
        found.dedup();
        found
    }

    /// A `/proc/PID/status` field in kB (`VmHWM`, `VmRSS`).
    pub fn memory_kb(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read /proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc status"))
    }

    /// Resets the process's peak resident size (`VmHWM`) to what it holds now, so that the
    /// next reading is the peak of what came after (`/proc/PID/clear_refs`; root, or the
    /// process's own user when it is dumpable).
    pub fn reset_peak_memory(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5")
            .expect("reset the peak RSS through /proc/PID/clear_refs");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a tool result's first content item.
/// A listed tool's hints with MCP's defaults filled in where the listing leaves them out
/// (`readOnlyHint` and `idempotentHint` false; a read-only tool is neither destructive nor
/// anything but idempotent).
pub fn hints(tool: &Value) -> Value {
    let a = &tool["annotations"];
    let read_only = a["readOnlyHint"] == true;
    json!({
        "readOnlyHint": read_only,
        "destructiveHint": if read_only { json!(false) } else { a.get("destructiveHint").cloned().unwrap_or(json!(true)) },
        "idempotentHint": read_only || a["idempotentHint"] == true,
        "openWorldHint": a.get("openWorldHint").cloned().unwrap_or(json!(true)),
    })
}

pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The result limit, in characters of text, as the host counts them.
pub const MAX_RESULT_CHARS: usize = 20_000;
/// A Codex session's result limit.
pub const CODEX_RESULT_CHARS: usize = 10_000;

/// The result contract every answer of every test keeps (ARCHITECTURE.md, "One result
/// contract"): its text fits [`MAX_RESULT_CHARS`]; a built-in tool's answer was never withheld
/// by the host's guard; and a built-in tool's structured answer is the same JSON as its text.
pub fn check_answer(tool: &str, result: &Value) {
    check_answer_within(tool, result, MAX_RESULT_CHARS)
}

/// [`check_answer`] in a session whose budget is `budget` characters.
pub fn check_answer_within(tool: &str, result: &Value, budget: usize) {
    let texts: Vec<&str> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect();
    let size: usize = texts.iter().map(|t| t.chars().count()).sum();
    record_size(tool, size, budget);
    assert!(
        size <= budget,
        "{tool}: {size} characters of text, over the session's result limit of {budget}"
    );
    let first = texts.first().copied().unwrap_or_default();
    assert!(
        !first.starts_with(&format!("{tool} ran, but its answer (")),
        "{tool}: the host withheld an answer too large to send (a defect): {first}"
    );
    if tool.starts_with("mcp__") {
        return;
    }
    if let Some(structured) = result.get("structuredContent") {
        let parsed: Value = serde_json::from_str(first)
            .unwrap_or_else(|e| panic!("{tool}: the text of a structured answer is not JSON: {e}"));
        let same = match structured.get("result") {
            Some(inner) if !parsed.is_object() => *inner == parsed,
            _ => *structured == parsed,
        };
        assert!(same, "{tool}: structuredContent differs from the text");
    }
}

/// With `COREMCP_TEST_SIZES` set to a file, each checked answer appends `tool size budget` to
/// it: the figures of the largest answer each tool gave in a run.
fn record_size(tool: &str, size: usize, budget: usize) {
    let Some(path) = std::env::var_os("COREMCP_TEST_SIZES") else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        // One write per line: tests append from many threads at once.
        let _ = file.write_all(format!("{tool} {size} {budget}\n").as_bytes());
    }
}

/// Whether a result is a tool error.
pub fn is_error(result: &Value) -> bool {
    result.get("isError") == Some(&Value::Bool(true))
}

/// Paths (`a.b[2]`) of every `null` in `value`.
pub fn nulls(value: &Value) -> Vec<String> {
    fn walk(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Null => out.push(at),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, format!("{at}[{i}]"), out);
                }
            }
            Value::Object(map) => {
                for (k, v) in map {
                    walk(v, format!("{at}.{k}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

/// A child process (a real upstream server a test started itself) killed when dropped.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A TCP port free on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// A `sleep` duration no other process uses: how a test finds a child it started from outside
/// that child's PID namespace, where the pids the child sees mean nothing.
pub fn unique_sleep() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "70.{:05}{:03}",
        std::process::id() % 100_000,
        NEXT.fetch_add(1, Ordering::Relaxed) % 1_000
    )
}

/// The processes of this machine whose command line holds `needle`.
pub fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("proc")
        .filter_map(|e| {
            let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline)
                .contains(needle)
                .then_some(pid)
        })
        .collect()
}

/// Waits (up to 5 s) until no process's command line holds `needle`; whether none does.
pub fn none_left_with(needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if processes_with(needle).is_empty() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}
