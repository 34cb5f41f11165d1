//! The one place Core MCP starts child processes (publishing CLIs, shells, upstream servers).
//!
//! Two ways to run one: [`run`] to completion with a deadline, or [`start`] a long-lived child
//! (an upstream MCP server) whose pipes the caller owns ([`Running`]).
//!
//! Invariants:
//! - Every child gets a **scrubbed environment** ([`Inherit`]): variables whose name marks a
//!   credential ([`is_credential_name`]: credential words such as `KEY`, `TOKEN`, `PAT`,
//!   `COOKIE`, `AUTH`, `JWT`, every `COREMCP_*`, agent sockets, files and programs that hand
//!   one out such as `PGPASSFILE` or `GIT_ASKPASS`) or whose value holds one
//!   ([`is_credential_value`]: a URL with a password or a token, a connection string's key)
//!   are dropped; a family of variables that only work together (git's `GIT_CONFIG_COUNT`,
//!   `GIT_CONFIG_KEY_n`, `GIT_CONFIG_VALUE_n`, `GIT_CONFIG_PARAMETERS`) is dropped whole, never
//!   half; third-party children get only a short base list. A caller passes a credential on
//!   only through an explicit `env` entry.
//! - A child never inherits the caller's stdin or stdout: stdin is a pipe or null, stdout is
//!   captured, so a child can never write into the MCP protocol stream.
//! - Captured output is bounded ([`Spec::max_output`]): the rest is drained and counted, never
//!   kept, so a chatty child cannot exhaust memory.
//! - A child run to completion ([`run`]) leaves nothing behind: its own init ([`reaper`]) is
//!   the init of a PID namespace of its own (or, where the kernel refuses one, the subreaper
//!   of everything it starts), and when the program ends — or at its deadline, or on a cancel
//!   — every process the program left dies, `setsid` ones included, so the pipes reach their
//!   end and `run` returns at once. A long-lived child ([`start`]) is killed with its whole
//!   process group (and, in a namespace of its own, everything in it).
//! - No child sees another ([`isolation`]): each runs in PID and mount namespaces of its own
//!   with its own `/proc`, so it cannot read the environment, memory or descriptors of this
//!   process, its reapers, upstream servers or other calls' children; as root without the
//!   capabilities that would undo that. Where the kernel refuses namespaces, what a killed
//!   reaper leaves comes to this process (a subreaper from its start) and is swept
//!   ([`sweep`]).
//!
//! `Command::new` is disallowed everywhere else in the workspace (clippy.toml).

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

pub mod isolation;
mod reaper;
mod sweep;

pub use isolation::{describe as describe_isolation, mode as isolation_mode, Mode as Isolation};

/// Words of a variable name (split on `_`, `-` and `.`, compared in upper case) that mark it as
/// a credential: `GITLAB_PAT`, `SESSION_COOKIE`, `SLACK_WEBHOOK_URL`, `DOCKER_AUTH_CONFIG`.
const SECRET_WORDS: &[&str] = &[
    "KEY",
    "KEYS",
    "APIKEY",
    "SECRET",
    "SECRETS",
    "TOKEN",
    "TOKENS",
    "PASSWORD",
    "PASSWORDS",
    "PASSWD",
    "PASS",
    "PASSPHRASE",
    "CREDENTIAL",
    "CREDENTIALS",
    "CRED",
    "CREDS",
    "PAT",
    "COOKIE",
    "COOKIES",
    "AUTH",
    "WEBHOOK",
    "PRIVATE",
    "KEYRING",
    "DSN",
    "JWT",
];

/// Parts that mark a name as a credential wherever they appear, for names written without
/// separators (`PGPASSWORD`, `MYAPIKEY`).
const SECRET_PARTS: &[&str] = &[
    "PASSWORD",
    "PASSWD",
    "APIKEY",
    "CREDENTIAL",
    "PRIVATEKEY",
    "SECRETKEY",
    "CLIENTSECRET",
    "AUTHTOKEN",
    "ACCESSTOKEN",
    "APITOKEN",
    "AUTHKEY",
    "ASKPASS",
    "CONNECTION_STRING",
    "CONNECTIONSTRING",
];

/// Whole names that are credentials (or lead to them: files and programs that hold or hand
/// out one) without a telling word.
const SECRET_NAMES: &[&str] = &[
    "KUBECONFIG",
    "NETRC",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "SSHPASS",
    "PGPASSFILE",
    "PGSERVICEFILE",
    "DOCKER_CONFIG",
    // Package managers' and clouds' own configuration, where their tokens live.
    "NPM_CONFIG_USERCONFIG",
    "NPM_CONFIG_GLOBALCONFIG",
    "YARN_RC_FILENAME",
    "PIP_CONFIG_FILE",
    "AWS_CONFIG_FILE",
    "GH_CONFIG_DIR",
    "CLOUDSDK_CONFIG",
    "AZURE_CONFIG_DIR",
    "BOTO_CONFIG",
];

/// Families of variables that only mean something together and whose values can carry a
/// credential (`http.extraHeader`): git's configuration from the environment. A family is
/// dropped whole — dropping half of one (a count without its keys) breaks every git command.
fn in_dropped_family(upper: &str) -> bool {
    upper == "GIT_CONFIG_COUNT"
        || upper == "GIT_CONFIG_PARAMETERS"
        || upper.starts_with("GIT_CONFIG_KEY_")
        || upper.starts_with("GIT_CONFIG_VALUE_")
}

/// Names that keep the SSH agent reachable: scrubbed, except for git ([`Inherit::ScrubbedWithSsh`]).
const SSH_AGENT_NAMES: &[&str] = &["SSH_AUTH_SOCK", "SSH_AGENT_PID"];

/// What third-party children (upstream MCP servers) inherit by default, as the official MCP
/// SDKs do: who and where the user is, and nothing that could be a secret.
pub const BASE_NAMES: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TMP",
    "TEMP",
];

/// Where `program` would start from: itself when it names a path (holds a `/`), else the first
/// executable file of that name in a folder of `PATH`.
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = std::path::PathBuf::from(program);
        return runnable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| runnable(p))
}

/// Whether a variable *name* marks a credential: every `COREMCP_*` variable (Core MCP's own
/// settings carry connection URLs and token files), a credential word or part, or a known name.
pub fn is_credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper.starts_with("COREMCP_")
        || SECRET_NAMES.contains(&upper.as_str())
        || in_dropped_family(&upper)
    {
        return true;
    }
    // Bundler's per-host credentials: `BUNDLE_GEMS__EXAMPLE__COM=user:password`.
    if upper
        .strip_prefix("BUNDLE_")
        .is_some_and(|rest| rest.contains("__"))
    {
        return true;
    }
    let words: Vec<&str> = upper
        .split(['_', '-', '.'])
        .filter(|w| !w.is_empty())
        .collect();
    // `PWD` alone is the working directory; as a word of a longer name it is a password.
    words
        .iter()
        .any(|w| SECRET_WORDS.contains(w) || (*w == "PWD" && words.len() > 1))
        || SECRET_PARTS.iter().any(|part| upper.contains(part))
}

/// Whether a variable's *value* carries a credential: a URL with a password in it
/// (`postgres://user:pw@host`, a proxy `http://user:pw@proxy:3128`) or with a token in place
/// of a user (`mongodb://TOKEN@host`, `https://ghp_…@github.com`), or a connection string with
/// a password or a key (`password=`, `AccountKey=`, `SharedAccessKey=`).
pub fn is_credential_value(value: &OsStr) -> bool {
    let text = value.to_string_lossy();
    let lower = text.to_ascii_lowercase();
    let keyed = [
        "password=",
        "passwd=",
        "accountkey=",
        "sharedaccesskey=",
        "sharedaccesssignature=",
    ];
    if keyed.iter().any(|k| lower.contains(k)) {
        return true;
    }
    let mut rest = text.as_ref();
    while let Some(at) = rest.find("://") {
        rest = &rest[at + 3..];
        let authority = rest
            .split(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .next()
            .unwrap_or_default();
        if let Some((userinfo, _host)) = authority.rsplit_once('@') {
            if userinfo.contains(':') || looks_like_a_token(userinfo) {
                return true;
            }
        }
    }
    false
}

/// Whether a URL's user part is a token rather than a user name: long, or mixing letters and
/// digits at a length no user name needs (`git`, `app` and `alice` are user names).
fn looks_like_a_token(user: &str) -> bool {
    let letters = user.chars().any(|c| c.is_ascii_alphabetic());
    let digits = user.chars().any(|c| c.is_ascii_digit());
    user.len() >= 24 || (user.len() >= 12 && letters && digits)
}

/// Whether a variable is scrubbed from children: by its name or by its value.
pub fn is_secret(name: &OsStr, value: &OsStr) -> bool {
    name.to_str().is_none_or(is_credential_name) || is_credential_value(value)
}

/// What a child inherits of this process's environment; [`Spec::env`] is added on top.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Inherit {
    /// Everything but credentials ([`is_secret`]): the CLIs and shells Core MCP runs for its
    /// user.
    #[default]
    Scrubbed,
    /// As [`Inherit::Scrubbed`], keeping the SSH agent (`SSH_AUTH_SOCK`, `SSH_AGENT_PID`) a
    /// `git push` over SSH needs.
    ScrubbedWithSsh,
    /// Only [`BASE_NAMES`] and these names, and never a credential: third-party code (an
    /// upstream MCP server), which gets what the official SDKs give it.
    Base(Vec<String>),
}

/// The environment a child gets under `inherit` (before its explicit `env`).
pub fn child_env(inherit: &Inherit) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(name, value)| {
            let named = |list: &[&str]| name.to_str().is_some_and(|n| list.contains(&n));
            match inherit {
                Inherit::Scrubbed => !is_secret(name, value),
                Inherit::ScrubbedWithSsh => named(SSH_AGENT_NAMES) || !is_secret(name, value),
                Inherit::Base(also) => {
                    let listed = named(BASE_NAMES)
                        || name.to_str().is_some_and(|n| n.starts_with("LC_"))
                        || name.to_str().is_some_and(|n| also.iter().any(|a| a == n));
                    listed && !is_secret(name, value)
                }
            }
        })
        .collect()
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    /// What it inherits of this process's environment.
    pub inherit: Inherit,
    /// Extra variables, set after the scrub (the explicit way to pass a credential).
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to the child's stdin, which is then closed; `None` gives it no stdin.
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// At most this many bytes of stdout, and of stderr, are kept.
    pub max_output: usize,
    /// Keep the **last** `max_output` bytes of each stream instead of the first (a script's
    /// errors come at its end); `dropped` then counts the bytes dropped before them.
    pub keep_end: bool,
    /// Keep only this window of stdout, read as UTF-8 text (a file read from an offset): the
    /// characters before it and after it are counted, never kept.
    pub stdout_window: Option<Window>,
    /// Sees every piece of stdout and stderr as it is read, before the bound (a task's output,
    /// read while it runs).
    pub tap: Option<Tap>,
}

/// What sees a child's output as it is read ([`Spec::tap`]): both streams, in the order
/// their pieces are read, split anywhere (a character may span two pieces).
#[derive(Clone)]
pub struct Tap(pub std::sync::Arc<TapFn>);

/// The function a [`Tap`] calls with each piece read.
pub type TapFn = dyn Fn(&[u8]) + Send + Sync;

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tap")
    }
}

/// A window of a stream read as text: `keep` characters from character `skip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub skip: usize,
    pub keep: usize,
}

impl Spec {
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            inherit: Inherit::Scrubbed,
            env: Vec::new(),
            stdin: None,
            timeout: Duration::from_secs(30),
            max_output: 8 * 1024 * 1024,
            keep_end: false,
            stdout_window: None,
            tap: None,
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
    /// The first `max_output` bytes (with a [`Window`]: the window's, whole characters).
    pub bytes: Vec<u8>,
    /// Bytes produced beyond what was kept.
    pub dropped: u64,
    /// With a [`Window`]: every character the stream held (an invalid byte counts as one),
    /// and whether its first 8000 bytes held a NUL (binary content).
    pub chars: u64,
    pub binary: bool,
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
        stdout: Box<Captured>,
        stderr: Box<Captured>,
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
/// Whatever the program started is killed when it ends ([`reaper`]), so a background job
/// never holds the answer (nor outlives it).
pub fn run(spec: &Spec, cancel: Option<&AtomicBool>) -> Result<Finished, SpawnError> {
    let program = spec.program.to_string_lossy().into_owned();
    let started = Instant::now();
    let stdin = if spec.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let mut child = start_reaped(spec, stdin)?;
    let pid = child.id() as libc::pid_t;
    // Sharing this process's PID namespace, the program can kill its reaper: note where what
    // it then leaves would come from.
    let origin = match isolation::mode().isolated() {
        true => None,
        false => sweep::origin(pid),
    };

    if let (Some(input), Some(mut pipe)) = (spec.stdin.clone(), child.stdin.take()) {
        // A child that does not read its stdin must not block us: write from a thread.
        thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let stdout = child.stdout.take().map(|p| match spec.stdout_window {
        Some(window) => capture_window(p, window),
        None => capture(p, spec.max_output, spec.keep_end, spec.tap.clone()),
    });
    let stderr = child
        .stderr
        .take()
        .map(|p| capture(p, spec.max_output, spec.keep_end, spec.tap.clone()));

    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let deadline = started + spec.timeout;
    let status = loop {
        let now = Instant::now();
        if now >= deadline {
            stop(pid, &done_rx, origin.as_ref());
            return Err(SpawnError::TimedOut {
                program,
                timeout: spec.timeout,
                stdout: Box::new(join(stdout)),
                stderr: Box::new(join(stderr)),
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
                    stop(pid, &done_rx, origin.as_ref());
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
    // A reaper killed from inside (by the program, its child): what it left came to us.
    if let Some(origin) = origin.filter(|_| status.signal().is_some()) {
        sweep::sweep(&origin);
    }
    Ok(Finished {
        status,
        stdout: join(stdout),
        stderr: join(stderr),
        duration: started.elapsed(),
    })
}

/// How long the reaper may take to kill what the program left before its group is killed
/// over its head.
const REAPER_GRACE: Duration = Duration::from_secs(2);

/// Stops a child of [`run`]: its reaper kills everything the program started, then ends; if
/// it has not within [`REAPER_GRACE`], the whole process group is killed, and what that left
/// to this process is swept (`origin`, or the child itself).
fn stop(
    pid: libc::pid_t,
    done: &mpsc::Receiver<io::Result<ExitStatus>>,
    origin: Option<&sweep::Origin>,
) {
    let origin = origin.copied().or_else(|| sweep::origin(pid));
    // SAFETY: kill(2) of the reaper we started (not yet reaped: the waiting thread still
    // waits for it, so the pid is ours); it touches no memory of ours.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    if done.recv_timeout(REAPER_GRACE).is_err() {
        kill_group(pid);
        let _ = done.recv();
        if let Some(origin) = origin {
            sweep::sweep(&origin);
        }
    } else if let Some(origin) = origin.filter(|_| !isolation::mode().isolated()) {
        // The reaper may have been killed from inside just before.
        sweep::sweep(&origin);
    }
}

/// The command for `spec`, started under its own reaper ([`reaper`]).
fn start_reaped(spec: &Spec, stdin: Stdio) -> Result<Child, SpawnError> {
    start_with(spec, stdin, true)
}

/// The command for `spec`: scrubbed environment plus its explicit `env`, stdout and stderr
/// piped, its own process group (so killing it kills grandchildren too).
fn start_child(spec: &Spec, stdin: Stdio) -> Result<Child, SpawnError> {
    start_with(spec, stdin, false)
}

/// [`start_child`], under a reaper of its own when `reaped`.
fn start_with(spec: &Spec, stdin: Stdio, reaped: bool) -> Result<Child, SpawnError> {
    let program = spec.program.to_string_lossy().into_owned();
    #[allow(clippy::disallowed_methods)] // This module is the one place children start.
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(child_env(&spec.inherit))
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    if reaped {
        let isolated = match isolation::mode() {
            isolation::Mode::Namespaces { user } => Some(*user),
            isolation::Mode::Shared(_) => None,
        };
        // SAFETY: `reaper::split` makes only async-signal-safe calls (its invariants).
        unsafe {
            command.pre_exec(move || reaper::split(isolated));
        }
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
    /// Its keeper, when it runs in namespaces of its own: a group kill can leave the init to
    /// this process, to reap.
    origin: Option<sweep::Origin>,
}

/// Starts a child that keeps running: stdin, stdout and stderr are pipes, the environment is
/// scrubbed (plus `spec.env`), and it leads its own process group. `spec.stdin`,
/// `spec.timeout` and `spec.max_output` are for [`run`] and are not used here: the caller
/// bounds what it reads.
pub fn start(spec: &Spec) -> Result<Running, SpawnError> {
    // In namespaces of its own like every child, when the kernel grants them: kept and ended
    // by its keeper, like a child run to completion.
    let isolated = isolation::mode().isolated();
    let mut child = match isolated {
        true => start_reaped(spec, Stdio::piped())?,
        false => start_child(spec, Stdio::piped())?,
    };
    let pid = child.id() as libc::pid_t;
    Ok(Running {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        pid,
        reaped: None,
        origin: isolated.then(|| sweep::origin(pid)).flatten(),
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
        if let Some(origin) = &self.origin {
            sweep::sweep(origin);
        }
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

/// Reads a child's stream on a thread of its own, keeping at most `max` bytes; the result
/// arrives on the returned channel once the stream ends.
fn capture(
    mut pipe: impl Read + Send + 'static,
    max: usize,
    keep_end: bool,
    tap: Option<Tap>,
) -> mpsc::Receiver<Captured> {
    let (tx, rx) = mpsc::sync_channel(1);
    thread::spawn(move || {
        let mut captured = Captured::default();
        let mut buf = [0u8; 64 * 1024];
        loop {
            let read = pipe.read(&mut buf);
            if let (Some(tap), Ok(n)) = (&tap, &read) {
                if *n > 0 {
                    (tap.0)(&buf[..*n]);
                }
            }
            match read {
                Ok(0) => break,
                Ok(n) if keep_end => {
                    captured.bytes.extend_from_slice(&buf[..n]);
                    // Trim once the buffer is twice the bound, so the copy is amortised.
                    if captured.bytes.len() > max.saturating_mul(2).max(64 * 1024) {
                        let cut = captured.bytes.len() - max;
                        captured.bytes.drain(..cut);
                        captured.dropped += cut as u64;
                    }
                }
                Ok(n) => {
                    let room = max.saturating_sub(captured.bytes.len()).min(n);
                    captured.bytes.extend_from_slice(&buf[..room]);
                    captured.dropped += (n - room) as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if keep_end && captured.bytes.len() > max {
            let cut = captured.bytes.len() - max;
            captured.bytes.drain(..cut);
            captured.dropped += cut as u64;
        }
        let _ = tx.send(captured);
    });
    rx
}

/// Reads a child's stream on a thread of its own keeping only `window` of it as text (see
/// [`Window`]); the result arrives on the returned channel once the stream ends.
fn capture_window(
    mut pipe: impl Read + Send + 'static,
    window: Window,
) -> mpsc::Receiver<Captured> {
    let (tx, rx) = mpsc::sync_channel(1);
    thread::spawn(move || {
        let mut captured = Captured::default();
        let mut text = TextWindow::new(window);
        let mut buf = [0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => text.feed(&buf[..n], &mut captured),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(captured);
    });
    rx
}

/// The state of a [`Window`] read: characters are counted by their first byte (a UTF-8
/// continuation byte starts none), so the window is cut between whole characters.
struct TextWindow {
    window: Window,
    /// Bytes seen so far.
    seen: u64,
}

impl TextWindow {
    fn new(window: Window) -> Self {
        Self { window, seen: 0 }
    }

    fn feed(&mut self, piece: &[u8], captured: &mut Captured) {
        let end = self.window.skip.saturating_add(self.window.keep) as u64;
        for &byte in piece {
            if self.seen < 8000 && byte == 0 {
                captured.binary = true;
            }
            self.seen += 1;
            if byte & 0xC0 != 0x80 {
                captured.chars += 1;
            }
            // The index of the character this byte belongs to.
            let at = captured.chars.saturating_sub(1);
            if captured.chars > 0 && at >= self.window.skip as u64 && at < end {
                captured.bytes.push(byte);
            } else {
                captured.dropped += 1;
            }
        }
    }
}

/// How long a stream may stay open after its child ended (its reaper killed everything that
/// could hold it, so only a process stuck in the kernel can): then the call answers without it.
const STREAM_GRACE: Duration = Duration::from_secs(2);

/// What a capture kept, once its stream ended (or nothing, past [`STREAM_GRACE`]).
fn join(captured: Option<mpsc::Receiver<Captured>>) -> Captured {
    captured
        .and_then(|rx| rx.recv_timeout(STREAM_GRACE).ok())
        .unwrap_or_default()
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
            "API_KEY",
            "SECRET_KEY",
            "PRIVATE_KEY",
            "ACCESS_KEY",
            "PASSWD",
            "CREDENTIALS",
            "GITLAB_PAT",
            "SLACK_WEBHOOK_URL",
            "SESSION_COOKIE",
            "DOCKER_AUTH_CONFIG",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "KUBECONFIG",
            "SSH_AUTH_SOCK",
            "SSH_AGENT_PID",
            "PGPASSWORD",
            "MYSQL_PWD",
            "COREMCP_SQL",
            "coremcp_tokens",
            "SENTRY_DSN",
            "npm_config__auth",
            "npm_config__authToken",
            "MYAPITOKEN",
            "CI_JOB_JWT",
            "CI_JOB_JWT_V2",
            "SSHPASS",
            "AZURE_STORAGE_CONNECTION_STRING",
            "BUNDLE_GEMS__CONTRIBSYS__COM",
            "PGPASSFILE",
            "PGSERVICEFILE",
            "DOCKER_CONFIG",
            "NPM_CONFIG_USERCONFIG",
            "npm_config_userconfig",
            "npm_config_globalconfig",
            "YARN_RC_FILENAME",
            "PIP_CONFIG_FILE",
            "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE",
            "GH_CONFIG_DIR",
            "CLOUDSDK_CONFIG",
            "AZURE_CONFIG_DIR",
            "BOTO_CONFIG",
            "GIT_ASKPASS",
            "SSH_ASKPASS",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_KEY_0",
            "GIT_CONFIG_VALUE_0",
            "GIT_CONFIG_VALUE_12",
            "GIT_CONFIG_PARAMETERS",
        ] {
            assert!(is_credential_name(name), "{name} should be scrubbed");
        }
        for name in [
            "PATH",
            "HOME",
            "TOKENIZER",
            "SECRETARY",
            "PWD",
            "OLDPWD",
            "PATHEXT",
            "KEYBOARD_LAYOUT",
            "HTTP_PROXY",
            "GIT_SSH_COMMAND",
            "XDG_SESSION_ID",
            "LANG",
            "BUNDLE_PATH",
            "BUNDLE_GEMFILE",
            "GIT_CONFIG_GLOBAL",
            "GIT_CONFIG_NOSYSTEM",
            "NPM_CONFIG_REGISTRY",
            "PIP_INDEX_URL",
            "AWS_REGION",
        ] {
            assert!(!is_credential_name(name), "{name} should be kept");
        }
    }

    #[test]
    fn credential_values() {
        for value in [
            "postgres://app:s3cret@db:5432/app",
            "http://user:pass@proxy:3128",
            "see https://a.example and redis://:hunter2@cache:6379/0",
            "host=db user=app password=x",
            "Server=x;Passwd=y",
            "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=c2VjcmV0;EndpointSuffix=core",
            "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=abc",
            "mongodb://Zk3n9QpLx2TgW7vB4mHs@cluster.example.net/db",
            "https://ghp_0123456789abcdefghijABCDEFGHIJ0123@github.com/o/r.git",
        ] {
            assert!(is_credential_value(OsStr::new(value)), "{value}");
        }
        for value in [
            "http://proxy:3128",
            "postgres://app@db/app",
            "https://user@example.com/path:with:colons",
            "ssh://git@github.com/o/r.git",
            "https://alice.smith@example.com/",
            "/usr/bin:/bin",
            "mailto:someone@example.com",
        ] {
            assert!(!is_credential_value(OsStr::new(value)), "{value}");
        }
    }

    #[test]
    fn what_each_kind_of_child_inherits() {
        std::env::set_var("COREMCP_SPAWN_KEEP_ME", "1");
        std::env::set_var("SPAWN_TEST_PLAIN", "1");
        std::env::set_var("SSH_AUTH_SOCK", "/tmp/agent.sock");
        std::env::set_var("SPAWN_TEST_URL", "postgres://u:p@h/d");
        let names = |inherit: Inherit| -> Vec<String> {
            child_env(&inherit)
                .into_iter()
                .filter_map(|(n, _)| n.into_string().ok())
                .collect()
        };
        let scrubbed = names(Inherit::Scrubbed);
        assert!(scrubbed.contains(&"SPAWN_TEST_PLAIN".to_owned()));
        assert!(scrubbed.contains(&"PATH".to_owned()));
        for gone in ["COREMCP_SPAWN_KEEP_ME", "SSH_AUTH_SOCK", "SPAWN_TEST_URL"] {
            assert!(!scrubbed.contains(&gone.to_owned()), "{gone}");
        }
        let git = names(Inherit::ScrubbedWithSsh);
        assert!(git.contains(&"SSH_AUTH_SOCK".to_owned()));
        assert!(!git.contains(&"SPAWN_TEST_URL".to_owned()));
        let base = names(Inherit::Base(vec!["SPAWN_TEST_URL".into()]));
        assert!(base.contains(&"PATH".to_owned()));
        assert!(!base.contains(&"SPAWN_TEST_PLAIN".to_owned()));
        assert!(
            !base.contains(&"SPAWN_TEST_URL".to_owned()),
            "never a credential, even when named"
        );
        let base = names(Inherit::Base(vec!["SPAWN_TEST_PLAIN".into()]));
        assert!(base.contains(&"SPAWN_TEST_PLAIN".to_owned()));
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
        std::env::set_var("SPAWN_TEST_TOKEN", "leak");
        let mut spec = sh("echo \"[$SPAWN_TEST_TOKEN][$EXPLICIT_TOKEN]\"");
        spec.env.push(("EXPLICIT_TOKEN".into(), "given".into()));
        let done = run(&spec, None).expect("runs");
        assert_eq!(String::from_utf8_lossy(&done.stdout.bytes), "[][given]\n");
    }

    #[test]
    fn a_window_keeps_whole_characters_and_counts_the_rest() {
        let mut captured = Captured::default();
        let mut window = TextWindow::new(Window { skip: 2, keep: 3 });
        let text = "aé€😀bcd".as_bytes();
        // Fed in pieces that cut characters in two.
        for piece in text.chunks(3) {
            window.feed(piece, &mut captured);
        }
        assert_eq!(
            String::from_utf8(captured.bytes.clone()).expect("utf8"),
            "€😀b"
        );
        assert_eq!(captured.chars, 7);
        assert_eq!(captured.dropped, (text.len() - captured.bytes.len()) as u64);
        assert!(!captured.binary);
        let mut binary = Captured::default();
        TextWindow::new(Window { skip: 0, keep: 10 }).feed(b"ab\0cd", &mut binary);
        assert!(binary.binary);
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
    fn bounds_output_keeping_its_end() {
        let mut spec = sh("head -c 300000 /dev/zero; echo END");
        spec.max_output = 1000;
        spec.keep_end = true;
        let done = run(&spec, None).expect("runs");
        assert_eq!(done.stdout.bytes.len(), 1000);
        assert_eq!(done.stdout.dropped, 300_004 - 1000);
        assert!(done.stdout.bytes.ends_with(b"\0END\n"));
    }

    #[test]
    fn a_tap_sees_both_streams_whole_beyond_the_bound() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&seen);
        let mut spec = sh("head -c 5000 /dev/zero; echo out; echo err >&2");
        spec.max_output = 100;
        spec.tap = Some(Tap(std::sync::Arc::new(move |bytes: &[u8]| {
            sink.lock().expect("lock").extend_from_slice(bytes)
        })));
        let done = run(&spec, None).expect("runs");
        assert_eq!(done.stdout.bytes.len(), 100);
        let seen = seen.lock().expect("lock");
        assert_eq!(seen.len(), 5000 + 4 + 4);
        let text = String::from_utf8_lossy(&seen);
        assert!(text.contains("out\n") && text.contains("err\n"), "{text:?}");
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

    /// A `sleep` duration no other process uses: how a test finds the processes it started
    /// from outside their PID namespace, where their own pids mean nothing.
    fn marker() -> String {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        format!(
            "60.{:05}{:03}",
            std::process::id() % 100_000,
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// The processes (as this process sees them) whose command line holds `marker`.
    fn with_marker(marker: &str) -> Vec<String> {
        std::fs::read_dir("/proc")
            .expect("proc")
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.parse::<u32>().ok()?;
                let cmdline = std::fs::read(format!("/proc/{name}/cmdline")).ok()?;
                String::from_utf8_lossy(&cmdline)
                    .contains(marker)
                    .then_some(name)
            })
            .collect()
    }

    /// Waits (up to 5 s) until no process holds `marker`; whether none does.
    fn all_gone(marker: &str) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if with_marker(marker).is_empty() {
                return true;
            }
            thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_background_job_neither_holds_the_answer_nor_outlives_it() {
        let mark = marker();
        let mut spec = Spec::new("bash").args([
            "-c",
            &format!(
                "sleep {mark} & setsid sleep {mark} & \
                 (setsid sh -c 'sleep {mark} &' &); sleep 0.2; echo started"
            ),
        ]);
        spec.timeout = Duration::from_secs(30);
        let started = Instant::now();
        let done = run(&spec, None).expect("runs");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(done.status.success());
        assert_eq!(done.stdout.bytes, b"started\n");
        assert!(all_gone(&mark), "{:?} outlived the run", with_marker(&mark));
    }

    #[test]
    fn at_the_deadline_what_left_the_group_dies_too() {
        let mark = marker();
        let mut spec = Spec::new("bash").args([
            "-c",
            &format!("setsid sleep {mark} & echo waiting; sleep 60"),
        ]);
        spec.timeout = Duration::from_millis(500);
        let started = Instant::now();
        let err = run(&spec, None).expect_err("times out");
        assert!(started.elapsed() < Duration::from_secs(5));
        match err {
            SpawnError::TimedOut { stdout, .. } => assert_eq!(stdout.bytes, b"waiting\n"),
            other => panic!("{other}"),
        }
        assert!(all_gone(&mark), "the setsid sleep outlived the deadline");
    }

    #[test]
    fn a_program_that_kills_its_own_parent_leaves_nothing_behind() {
        // What a killed reaper leaves comes to the host, a subreaper from its start.
        // SAFETY: prctl(2) on this process.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        let mark = marker();
        let spec = Spec::new("bash").args([
            "-c",
            &format!("setsid sleep {mark} & sleep 0.2; kill -9 $PPID; echo after"),
        ]);
        let started = Instant::now();
        let done = run(&spec, None).expect("runs");
        assert!(started.elapsed() < Duration::from_secs(5));
        if isolation::mode().isolated() {
            // PID 1 of its namespace: the kill is ignored, the script goes on.
            assert!(done.status.success(), "{:?}", done.status);
            assert_eq!(done.stdout.bytes, b"after\n");
        }
        assert!(
            all_gone(&mark),
            "the setsid sleep outlived its killed parent"
        );
    }

    #[test]
    fn the_exit_status_and_a_killing_signal_are_the_programs() {
        let done = run(&sh("exit 7"), None).expect("runs");
        assert_eq!(done.status.code(), Some(7));
        let done = run(&sh("kill -TERM $$"), None).expect("runs");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&done.status),
            Some(libc::SIGTERM)
        );
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
