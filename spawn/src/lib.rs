//! The one place Core MCP starts child processes (publishing CLIs, shells, upstream servers).
//!
//! Two ways to run one: [`run`] to completion with a deadline, or [`start`] a long-lived child
//! (an upstream MCP server) whose pipes the caller owns ([`Running`]).
//!
//! Invariants:
//! - Every child gets a **scrubbed environment**: credential-named variables
//!   ([`is_credential_name`]) are dropped; a caller passes one on only through an explicit
//!   `env` entry.
//! - A child never inherits the caller's stdin or stdout: stdin is a pipe or null, stdout is
//!   captured, so a child can never write into the MCP protocol stream.
//! - Captured output is bounded ([`Spec::max_output`]): the rest is drained and counted, never
//!   kept, so a chatty child cannot exhaust memory.
//! - A child that outlives its deadline (or whose caller is cancelled) is killed with its whole
//!   process group.
//!
//! `Command::new` is disallowed everywhere else in the workspace (clippy.toml).

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Exact variable names dropped from every child's environment.
const CREDENTIAL_NAMES: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "NPM_TOKEN",
    "PGPASSWORD",
];

/// Name endings dropped from every child's environment.
const CREDENTIAL_SUFFIXES: &[&str] = &["_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD"];

/// Whether an environment variable name looks like a credential and is scrubbed.
pub fn is_credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    CREDENTIAL_NAMES.contains(&upper.as_str())
        || CREDENTIAL_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// The current environment minus credential-named variables.
pub fn scrubbed_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(name, _)| !name.to_str().is_some_and(is_credential_name))
        .collect()
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    /// Extra variables, set after the scrub (the explicit way to pass a credential).
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to the child's stdin, which is then closed; `None` gives it no stdin.
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// At most this many bytes of stdout, and of stderr, are kept.
    pub max_output: usize,
}

impl Spec {
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            stdin: None,
            timeout: Duration::from_secs(30),
            max_output: 8 * 1024 * 1024,
        }
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }
}

/// Captured output of one stream.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    /// The first `max_output` bytes.
    pub bytes: Vec<u8>,
    /// Bytes produced beyond what was kept.
    pub dropped: u64,
}

impl Captured {
    /// The output as text (lossy), cut to `max_chars` with a note of what was left out.
    pub fn excerpt(&self, max_chars: usize) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        let text = text.trim();
        let total = text.chars().count();
        if total <= max_chars && self.dropped == 0 {
            return text.to_owned();
        }
        let kept: String = text.chars().take(max_chars).collect();
        let left = (total.saturating_sub(max_chars)) as u64 + self.dropped;
        format!("{kept}… ({left} more bytes not shown)")
    }
}

/// A child that ran to completion.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Captured,
    pub stderr: Captured,
    pub duration: Duration,
}

/// Why a child did not run to completion.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("{program}: command not found")]
    NotFound { program: String },
    #[error("{program}: permission denied")]
    PermissionDenied { program: String },
    #[error("{program}: could not start: {source}")]
    Start { program: String, source: io::Error },
    #[error("{program} did not finish within {} s and was killed", timeout.as_secs_f64())]
    TimedOut {
        program: String,
        timeout: Duration,
        stdout: Captured,
        stderr: Captured,
    },
    #[error("{program} was stopped: the call was cancelled")]
    Cancelled { program: String },
    #[error("{program}: waiting for it failed: {source}")]
    Wait { program: String, source: io::Error },
}

/// How often a running child's caller is checked for cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// Runs a child to completion (or its deadline), capturing bounded output.
///
/// `cancel`, when given, is polled; once set the child is killed and `Cancelled` returned.
pub fn run(spec: &Spec, cancel: Option<&AtomicBool>) -> Result<Finished, SpawnError> {
    let program = spec.program.to_string_lossy().into_owned();
    let started = Instant::now();
    let stdin = if spec.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let mut child = start_child(spec, stdin)?;
    let pid = child.id() as libc::pid_t;

    if let (Some(input), Some(mut pipe)) = (spec.stdin.clone(), child.stdin.take()) {
        // A child that does not read its stdin must not block us: write from a thread.
        thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let stdout = child.stdout.take().map(|p| capture(p, spec.max_output));
    let stderr = child.stderr.take().map(|p| capture(p, spec.max_output));

    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let deadline = started + spec.timeout;
    let status = loop {
        let now = Instant::now();
        if now >= deadline {
            kill_group(pid);
            let _ = done_rx.recv();
            return Err(SpawnError::TimedOut {
                program,
                timeout: spec.timeout,
                stdout: join(stdout),
                stderr: join(stderr),
            });
        }
        let wait = match cancel {
            Some(_) => (deadline - now).min(CANCEL_POLL),
            None => deadline - now,
        };
        match done_rx.recv_timeout(wait) {
            Ok(Ok(status)) => break status,
            Ok(Err(source)) => return Err(SpawnError::Wait { program, source }),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    kill_group(pid);
                    let _ = done_rx.recv();
                    return Err(SpawnError::Cancelled { program });
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(SpawnError::Wait {
                    program,
                    source: io::Error::other("the waiting thread ended"),
                })
            }
        }
    };
    Ok(Finished {
        status,
        stdout: join(stdout),
        stderr: join(stderr),
        duration: started.elapsed(),
    })
}

/// The command for `spec`: scrubbed environment plus its explicit `env`, stdout and stderr
/// piped, its own process group (so killing it kills grandchildren too).
fn start_child(spec: &Spec, stdin: Stdio) -> Result<Child, SpawnError> {
    let program = spec.program.to_string_lossy().into_owned();
    #[allow(clippy::disallowed_methods)] // This module is the one place children start.
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(scrubbed_env())
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    spawn_retrying(&mut command).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => SpawnError::NotFound { program },
        io::ErrorKind::PermissionDenied => SpawnError::PermissionDenied { program },
        _ => SpawnError::Start { program, source },
    })
}

/// A long-lived child ([`start`]): its pipes are the caller's to read and write.
///
/// Dropping it kills the child's whole process group and reaps the child, so a forgotten
/// server never outlives its owner.
#[derive(Debug)]
pub struct Running {
    child: Child,
    pid: libc::pid_t,
    /// Its stdin (a pipe); take it to write.
    pub stdin: Option<ChildStdin>,
    /// Its stdout (a pipe); take it to read.
    pub stdout: Option<ChildStdout>,
    /// Its stderr (a pipe); take it to read.
    pub stderr: Option<ChildStderr>,
    reaped: Option<ExitStatus>,
}

/// Starts a child that keeps running: stdin, stdout and stderr are pipes, the environment is
/// scrubbed (plus `spec.env`), and it leads its own process group. `spec.stdin`,
/// `spec.timeout` and `spec.max_output` are for [`run`] and are not used here: the caller
/// bounds what it reads.
pub fn start(spec: &Spec) -> Result<Running, SpawnError> {
    let mut child = start_child(spec, Stdio::piped())?;
    let pid = child.id() as libc::pid_t;
    Ok(Running {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        pid,
        reaped: None,
    })
}

impl Running {
    /// The child's process id (also its process group id).
    pub fn id(&self) -> u32 {
        self.pid as u32
    }

    /// Its exit status if it has ended, without waiting.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.reaped.is_none() {
            self.reaped = self.child.try_wait()?;
        }
        Ok(self.reaped)
    }

    /// Kills the child's whole process group and reaps the child; returns its exit status.
    /// Calling it again is harmless.
    pub fn kill(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.reaped {
            return Ok(status);
        }
        kill_group(self.pid);
        let status = self.child.wait()?;
        self.reaped = Some(status);
        Ok(status)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Closing stdin first lets a well-behaved child see the end; the kill follows at once.
        self.stdin.take();
        let _ = self.kill();
    }
}

/// Starts the command, retrying briefly on `ETXTBSY`: an executable that was just written can
/// still be open for writing in a child some other thread forked meanwhile.
fn spawn_retrying(command: &mut Command) -> io::Result<std::process::Child> {
    let mut attempts = 0;
    loop {
        match command.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempts < 20 => {
                attempts += 1;
                thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: kill(2) with a negative pid signals the process group the child leads (it was
    // started with process_group(0)); it touches no memory of ours.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

fn capture(mut pipe: impl Read + Send + 'static, max: usize) -> thread::JoinHandle<Captured> {
    thread::spawn(move || {
        let mut captured = Captured::default();
        let mut buf = [0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let room = max.saturating_sub(captured.bytes.len()).min(n);
                    captured.bytes.extend_from_slice(&buf[..room]);
                    captured.dropped += (n - room) as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        captured
    })
}

fn join(handle: Option<thread::JoinHandle<Captured>>) -> Captured {
    handle.and_then(|h| h.join().ok()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names() {
        for name in [
            "OPENAI_API_KEY",
            "GH_TOKEN",
            "db_password",
            "AWS_ACCESS_KEY_ID",
            "X_SECRET",
        ] {
            assert!(is_credential_name(name), "{name} should be scrubbed");
        }
        for name in ["PATH", "HOME", "TOKENIZER", "SECRETARY"] {
            assert!(!is_credential_name(name), "{name} should be kept");
        }
    }

    fn sh(script: &str) -> Spec {
        Spec::new("sh").args(["-c", script])
    }

    #[test]
    fn captures_output_and_status() {
        let done = run(&sh("echo out; echo err >&2; exit 3"), None).expect("runs");
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(done.stdout.bytes, b"out\n");
        assert_eq!(done.stderr.bytes, b"err\n");
    }

    #[test]
    fn scrubs_credentials_unless_passed_explicitly() {
        std::env::set_var("COREMCP_SPAWN_TEST_TOKEN", "leak");
        let mut spec = sh("echo \"[$COREMCP_SPAWN_TEST_TOKEN][$EXPLICIT_TOKEN]\"");
        spec.env.push(("EXPLICIT_TOKEN".into(), "given".into()));
        let done = run(&spec, None).expect("runs");
        assert_eq!(String::from_utf8_lossy(&done.stdout.bytes), "[][given]\n");
    }

    #[test]
    fn bounds_output() {
        let mut spec = sh("head -c 100000 /dev/zero");
        spec.max_output = 1000;
        let done = run(&spec, None).expect("runs");
        assert_eq!(done.stdout.bytes.len(), 1000);
        assert_eq!(done.stdout.dropped, 99_000);
        assert!(done
            .stdout
            .excerpt(10)
            .ends_with("(99990 more bytes not shown)"));
    }

    #[test]
    fn kills_on_timeout_with_the_process_group() {
        let mut spec = sh("sleep 30 & sleep 30");
        spec.timeout = Duration::from_millis(200);
        let started = Instant::now();
        let err = run(&spec, None).expect_err("times out");
        assert!(matches!(err, SpawnError::TimedOut { .. }), "{err}");
        // The backgrounded grandchild holds the pipes; it was killed with the group, or the
        // capture threads would have waited 30 s.
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn cancel_stops_the_child() {
        let flag = AtomicBool::new(false);
        let spec = sh("sleep 30");
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(100));
                flag.store(true, Ordering::Relaxed);
            });
            let err = run(&spec, Some(&flag)).expect_err("cancelled");
            assert!(matches!(err, SpawnError::Cancelled { .. }), "{err}");
        });
    }

    #[test]
    fn missing_program_is_named() {
        let err = run(&Spec::new("/nonexistent/cli"), None).expect_err("fails");
        assert_eq!(err.to_string(), "/nonexistent/cli: command not found");
    }

    #[test]
    fn feeds_stdin() {
        let mut spec = sh("cat");
        spec.stdin = Some(b"hello".to_vec());
        let done = run(&spec, None).expect("runs");
        assert_eq!(done.stdout.bytes, b"hello");
    }
    #[test]
    fn a_started_child_talks_over_its_pipes() {
        let mut spec = sh("read line; echo \"got $line\"; echo note >&2; sleep 30");
        spec.env.push(("EXPLICIT_TOKEN".into(), "given".into()));
        let mut running = start(&spec).expect("starts");
        let mut stdin = running.stdin.take().expect("stdin");
        stdin.write_all(b"hi\n").expect("write");
        let mut out = io::BufReader::new(running.stdout.take().expect("stdout"));
        let mut line = String::new();
        io::BufRead::read_line(&mut out, &mut line).expect("read");
        assert_eq!(line, "got hi\n");
        let mut err = io::BufReader::new(running.stderr.take().expect("stderr"));
        let mut line = String::new();
        io::BufRead::read_line(&mut err, &mut line).expect("read");
        assert_eq!(line, "note\n");
        assert!(running.try_wait().expect("try_wait").is_none());
        let started = Instant::now();
        let status = running.kill().expect("kill");
        assert!(!status.success());
        assert!(started.elapsed() < Duration::from_secs(5));
        // Again: harmless, same status.
        assert_eq!(running.kill().expect("kill again"), status);
    }

    #[test]
    fn a_started_child_gets_the_scrubbed_environment() {
        std::env::set_var("COREMCP_SPAWN_START_API_KEY", "leak");
        let mut spec = sh("echo \"[$COREMCP_SPAWN_START_API_KEY][$EXPLICIT_TOKEN]\"");
        spec.env.push(("EXPLICIT_TOKEN".into(), "given".into()));
        let mut running = start(&spec).expect("starts");
        let mut text = String::new();
        running
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut text)
            .expect("read");
        assert_eq!(text, "[][given]\n");
    }

    #[test]
    fn dropping_a_started_child_kills_its_group() {
        // The grandchild holds stdout open: once the group is killed the pipe reaches its end.
        let mut running = start(&sh("sleep 30 & sleep 30")).expect("starts");
        let mut stdout = running.stdout.take().expect("stdout");
        let started = Instant::now();
        drop(running);
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).expect("read");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_missing_program_is_named_when_started() {
        let err = start(&Spec::new("/nonexistent/server")).expect_err("fails");
        assert_eq!(err.to_string(), "/nonexistent/server: command not found");
    }
}
