//! `shell_run`: a script in PowerShell (`pwsh`) where it is installed, else in the configured
//! shell (`COREMCP_SHELL`, default `bash`), or in the shell the call names.
//!
//! Invariants:
//! - The script reaches the shell as a file in a private folder (`script::File`: mode 0700,
//!   removed when the run ends), never as an argument, so its size is not bounded by the
//!   kernel's argument limit and it is never re-quoted; and never on stdin, which the script's
//!   own commands get empty, so a command that reads stdin (`cat`, `read`, `ssh`, `python -`)
//!   cannot swallow the rest of the script.
//! - It runs through `coremcp-spawn`: a scrubbed environment plus the call's `env`, whose keys
//!   are checked by the same credential rule as the scrub (such a key is refused by name: a
//!   credential is never passed through a tool argument); `cwd` confined to the roots; output
//!   kept up to its last [`KEPT_BYTES`] per stream, the rest only counted; at `timeout_s` (or the
//!   call's deadline, or a cancel) the whole process group is killed, grandchildren included.
//! - The answer always fits the result limit: each stream keeps its **end** (where errors are),
//!   at most [`SHOWN_CHARS`] characters and fewer when escapes make them cost more, cut at a
//!   line start with a marker naming how much was left out.
//! - A non-zero exit is a result (`exit_code`, `ok: false`), not a tool error: the output is
//!   what the agent needs. A timeout, a cancel or a shell that cannot start are tool errors.
//! - Run as a task (a client that takes tasks; the host decides), the script may run up to a
//!   day (`timeout_s`, else at most [`MAX_TIMEOUT_S`]), and everything it writes reaches the
//!   task's output as it is written, which `task` + `offset` read back and `stop` ends.

mod script;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::args::invalid;
pub use coremcp_plugin_sdk::budget::tail;
use coremcp_plugin_sdk::{codes, typed, ArgEnum, Args, Ctx, Hints, Tool, ToolError};
use coremcp_spawn::{Captured, SpawnError, Spec};
use serde_json::{json, Map, Value};

pub const TOOL: Tool = Tool::typed("shell_run", &typed(shell_run)).hints(Hints::DESTRUCTIVE);

/// The host configuration key of the shell used where `pwsh` is not installed.
const SHELL_KEY: &str = "shell.cmd";
/// Bytes of each stream kept while the script runs; the rest is counted, not kept.
pub const KEPT_BYTES: usize = 1024 * 1024;
/// Characters of each stream the answer shows at most.
const SHOWN_CHARS: usize = 8_000;
/// The longest `timeout_s` of a call that does not run as a task.
pub const MAX_TIMEOUT_S: u64 = 600;
/// Output bytes one read of a task's output returns at most.
const READ_BYTES: usize = 12_000;

/// Run a script in pwsh if installed, else COREMCP_SHELL (default bash); no stdin. Returns
/// stdout, stderr, exit code, duration (a non-zero exit is no error).
#[derive(Debug, Args)]
pub struct Run {
    /// the script
    #[arg(min_len = 1, max_len = 1000000)]
    script: Option<String>,
    /// inside the roots (default the first)
    cwd: Option<String>,
    /// kill after, s (>600: tasks)
    #[arg(min = 1, max = 86400, default = 120)]
    timeout_s: u64,
    /// extra variables (credential names refused)
    env: Option<Map<String, Value>>,
    /// default: pwsh, else COREMCP_SHELL
    shell: Option<Shell>,
    /// a running task: read its output
    task: Option<String>,
    /// task: bytes read (next_offset)
    offset: Option<u64>,
    /// task: cancel it
    stop: Option<bool>,
}

/// A shell `shell_run` can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Shell {
    Pwsh,
    Powershell,
    Bash,
    Sh,
}

impl Shell {
    /// The program and the arguments before the script file's path.
    fn command(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Shell::Pwsh => (
                "pwsh",
                &["-NoLogo", "-NoProfile", "-NonInteractive", "-File"],
            ),
            Shell::Powershell => (
                "powershell",
                &["-NoLogo", "-NoProfile", "-NonInteractive", "-File"],
            ),
            Shell::Bash => ("bash", &[]),
            Shell::Sh => ("sh", &[]),
        }
    }

    /// The script file's extension (PowerShell runs only a `.ps1` file).
    fn extension(self) -> &'static str {
        match self {
            Shell::Pwsh | Shell::Powershell => "ps1",
            Shell::Bash | Shell::Sh => "sh",
        }
    }
}

fn shell_run(ctx: &Ctx<'_>, args: Run) -> Result<Value, ToolError> {
    if let Some(task) = args.task.as_deref() {
        return read_task(task, &args);
    }
    let task = coremcp_plugin_sdk::task::current();
    if task.is_none() && args.timeout_s > MAX_TIMEOUT_S {
        return Err(invalid(
            "timeout_s",
            format!(
                "{} s is longer than a call may run ({MAX_TIMEOUT_S} s); it may run longer as a \
                 task, when the client takes tasks",
                args.timeout_s
            ),
        ));
    }
    let roots = Roots::from_host()?;
    let tap = task.map(|task| {
        let writer = task.writer();
        coremcp_spawn::Tap(std::sync::Arc::new(move |bytes: &[u8]| writer.write(bytes)))
    });
    run_tapped(&roots, args, ctx.remaining(), ctx.raw().cancelled, tap)
}

/// Reads (or, with `stop`, cancels) the caller's running shell_run task `task`.
fn read_task(task: &str, args: &Run) -> Result<Value, ToolError> {
    if args.script.is_some() {
        return Err(invalid(
            "task",
            "give script to run one, or task to read a running one, not both",
        ));
    }
    if args.stop == Some(true) {
        coremcp_plugin_sdk::task::cancel(task)?;
    }
    // As much as fits the call's budget whole: escapes (quotes, control characters) make a
    // byte cost up to six characters, so a read that does not fit is made again, smaller —
    // never cut, which would leave its `next_offset` past what was shown.
    let budget = coremcp_plugin_sdk::budget::result_budget();
    let mut max = READ_BYTES.min(budget / 2);
    let mut read = loop {
        let read = coremcp_plugin_sdk::task::read(task, args.offset.unwrap_or(0), max)?;
        if coremcp_plugin_sdk::budget::chars(&read) + 300 <= budget || max <= 256 {
            break read;
        }
        max /= 2;
    };
    if args.stop == Some(true) {
        read["cancel"] = "asked: its processes are being stopped".into();
    }
    if read["running_here"] == true {
        let next = read["next_offset"].clone();
        read["next"] = format!("shell_run with task and offset {next} reads on").into();
    }
    Ok(read)
}

/// Runs `args` with `roots` as the roots, within `remaining`, stopped when `cancelled` is set.
pub fn run_in(
    roots: &Roots,
    args: Run,
    remaining: Duration,
    cancelled: &AtomicBool,
) -> Result<Value, ToolError> {
    run_tapped(roots, args, remaining, cancelled, None)
}

/// [`run_in`], with `tap` seeing the output as it is written.
fn run_tapped(
    roots: &Roots,
    args: Run,
    remaining: Duration,
    cancelled: &AtomicBool,
    tap: Option<coremcp_spawn::Tap>,
) -> Result<Value, ToolError> {
    let Some(script) = args.script.as_deref() else {
        return Err(invalid(
            "script",
            "is required: the script to run (or task, to read a running shell_run task)",
        ));
    };
    let shell = choose(
        args.shell,
        coremcp_plugin_sdk::config(SHELL_KEY).as_deref(),
        &on_path,
    )?;
    let (program, flags) = shell.command();
    let file = script::File::write(script, shell.extension())
        .map_err(|e| ToolError::new(codes::FAILED, format!("cannot write the script: {e}")))?;
    let mut spec = Spec::new(program)
        .args(flags)
        .args([file.path().to_string_lossy().into_owned()]);
    spec.env = env_of(args.env.as_ref())?;
    let dir = roots.resolve("cwd", args.cwd.as_deref(), None)?;
    if !dir.is_dir() {
        return Err(invalid("cwd", format!("{}: not a folder", dir.display())));
    }
    spec.cwd = Some(dir);
    // The script's commands read an empty stdin.
    spec.stdin = None;
    spec.max_output = KEPT_BYTES;
    spec.keep_end = true;
    spec.tap = tap;
    // The call's deadline wins over a longer limit; keep a moment to answer in.
    let remaining = remaining.saturating_sub(Duration::from_millis(200));
    spec.timeout = Duration::from_secs(args.timeout_s).min(remaining.max(Duration::from_millis(1)));
    let finished = coremcp_spawn::run(&spec, Some(cancelled)).map_err(|e| error(program, e))?;
    let mut out = json!({
        "shell": program,
        "ok": finished.status.success(),
        "duration_ms": finished.duration.as_millis() as u64,
    });
    // Exactly one of the two: a killed script has no exit code (and never a `null` one).
    match finished.status.code() {
        Some(code) => out["exit_code"] = code.into(),
        None => {
            let signal = std::os::unix::process::ExitStatusExt::signal(&finished.status);
            out["signal"] = signal.unwrap_or_default().into();
        }
    }
    // Each stream shows its end; escapes (quotes, control characters) can make that cost up
    // to six times its characters, so the ends shrink together until the answer fits.
    let mut shown = SHOWN_CHARS;
    for _ in 0..16 {
        put_stream(&mut out, "stdout", &finished.stdout, shown);
        put_stream(&mut out, "stderr", &finished.stderr, shown);
        let size = coremcp_plugin_sdk::budget::chars(&out);
        let budget = coremcp_plugin_sdk::budget::result_budget();
        if size <= budget || shown == 0 {
            break;
        }
        let scaled = (shown as u128 * (budget - 400) as u128 / size as u128) as usize;
        shown = scaled.min(shown - 1);
    }
    Ok(out)
}

/// The shell for a call: the one named, else `pwsh` when `present` finds it, else the
/// configured one (a name of [`Shell`]), else `bash`.
pub fn choose(
    named: Option<Shell>,
    configured: Option<&str>,
    present: &dyn Fn(&str) -> bool,
) -> Result<Shell, ToolError> {
    if let Some(shell) = named {
        return Ok(shell);
    }
    if present("pwsh") {
        return Ok(Shell::Pwsh);
    }
    let Some(configured) = configured.map(str::trim).filter(|c| !c.is_empty()) else {
        return Ok(Shell::Bash);
    };
    let name = Path::new(configured)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(configured);
    Shell::VALUES
        .iter()
        .position(|v| *v == name)
        .map(|i| [Shell::Pwsh, Shell::Powershell, Shell::Bash, Shell::Sh][i])
        .ok_or_else(|| {
            ToolError::new(
                codes::NOT_CONFIGURED,
                format!(
                    "COREMCP_SHELL is {configured:?}: shell_run runs one of {} (set it to one of \
                     them, or pass shell)",
                    Shell::VALUES.join(", ")
                ),
            )
        })
}

/// Whether `program` is an executable file on `PATH`.
fn on_path(program: &str) -> bool {
    coremcp_spawn::which(program).is_some()
}

/// The call's `env`, checked: names of letters, digits and `_` (not starting with a digit),
/// string values, no name the credential scrub would drop.
pub fn env_of(
    env: Option<&Map<String, Value>>,
) -> Result<Vec<(std::ffi::OsString, std::ffi::OsString)>, ToolError> {
    let mut out = Vec::new();
    for (name, value) in env.into_iter().flatten() {
        let at = format!("env.{name}");
        let plain = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !plain {
            return Err(invalid(
                &at,
                "a variable name is letters, digits and '_', not starting with a digit",
            ));
        }
        if coremcp_spawn::is_credential_name(name) {
            return Err(invalid(
                &at,
                format!(
                    "{name} names a credential (the same rule that keeps credentials out of every \
                     child's environment): credentials are not passed through tool arguments; \
                     configure them where the script can read them"
                ),
            ));
        }
        let Value::String(text) = value else {
            return Err(invalid(&at, "must be a string"));
        };
        if text.contains('\0') {
            return Err(invalid(&at, "must not contain a NUL character"));
        }
        out.push((name.into(), text.into()));
    }
    Ok(out)
}

/// `stream` of a finished script into `out`: its end, at most `limit` characters, with
/// `<stream>_truncated` and `<stream>_total_bytes` when anything was left out.
fn put_stream(out: &mut Value, stream: &str, captured: &Captured, limit: usize) {
    let text = String::from_utf8_lossy(&captured.bytes);
    let total = captured.bytes.len() as u64 + captured.dropped;
    let (shown, cut) = tail(&text, limit);
    let shown = match cut {
        0 => shown.to_owned(),
        _ => format!(
            "…[{} of {total} bytes not shown: the output is cut to its end; write it to a file \
             and read that, or narrow what the script prints]\n{shown}",
            total - shown.len() as u64
        ),
    };
    out[stream] = shown.into();
    if cut > 0 || captured.dropped > 0 {
        out[format!("{stream}_truncated")] = true.into();
        out[format!("{stream}_total_bytes")] = total.into();
    }
}

fn error(program: &str, err: SpawnError) -> ToolError {
    let code = match &err {
        SpawnError::NotFound { .. } | SpawnError::PermissionDenied { .. } => codes::NOT_CONFIGURED,
        SpawnError::TimedOut { .. } => codes::TIMEOUT,
        SpawnError::Cancelled { .. } => codes::CANCELLED,
        SpawnError::Start { .. } | SpawnError::Wait { .. } => codes::FAILED,
    };
    let mut message = format!("shell_run: {err}");
    if let SpawnError::NotFound { .. } = err {
        message.push_str(&format!(
            " ({program} is not installed; pass another shell, or set COREMCP_SHELL)"
        ));
    }
    if let SpawnError::TimedOut { stdout, stderr, .. } = &err {
        message.push_str(" (its whole process group was killed)");
        for (name, captured) in [("stdout", stdout), ("stderr", stderr)] {
            let text = String::from_utf8_lossy(&captured.bytes);
            let (end, _) = tail(&text, 2000);
            if !end.trim().is_empty() {
                message.push_str(&format!("\n{name} (end):\n{end}"));
            }
        }
    }
    ToolError::new(code, message)
}
