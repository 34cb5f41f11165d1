//! `publishing`: the publishing CLI, run with the caller's arguments unchanged.
//!
//! Invariants: arguments are never interpreted, quoted or joined; the CLI runs through the
//! spawn crate (scrubbed environment, bounded output, killed at its deadline) in a folder
//! inside the roots (`cwd` is confined like every local path argument; default: the first
//! root); output that is not JSON, a non-zero exit, a timeout or a missing CLI are errors that
//! carry an excerpt of what the CLI said. JSON larger than an answer may hold is answered as
//! its text, cut with a marker, in an answer that says so.

use std::time::Duration;

use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::{budget, codes, typed, Args, Ctx, Hints, Tool, ToolError};
use coremcp_spawn::{Finished, SpawnError, Spec};
use serde_json::Value;

/// The host configuration key holding the CLI command (from `COREMCP_PUBLISH_CMD`).
const CMD_KEY: &str = "publish.cmd";
/// The CLI's own time limit when `timeout_s` is not given (the call's deadline follows it).
const DEFAULT_TIMEOUT_S: u64 = 120;
/// How much of the CLI's output an error quotes.
const EXCERPT_CHARS: usize = 2000;

pub const TOOL: Tool = Tool::typed("publishing", &typed(publishing)).hints(Hints::DESTRUCTIVE);

/// Run the publishing CLI with these arguments (argv, no shell) and return its JSON stdout.
#[derive(Debug, Args)]
pub struct Publish {
    /// argv, verbatim
    #[arg(required)]
    args: Vec<String>,
    /// inside the roots (default the first)
    cwd: Option<String>,
    /// stdin text
    stdin: Option<String>,
    /// kill after, s
    #[arg(min = 1, max = 600, default = DEFAULT_TIMEOUT_S)]
    timeout_s: u64,
}

fn publishing(ctx: &Ctx<'_>, args: Publish) -> Result<Value, ToolError> {
    let command = coremcp_plugin_sdk::config(CMD_KEY).unwrap_or_default();
    let spec = build_spec(&command, &args, &Roots::from_host()?, ctx.remaining())?;
    let finished = coremcp_spawn::run(&spec, Some(ctx.raw().cancelled)).map_err(spawn_error)?;
    interpret(&finished)
}

/// The child to run: the configured command (program plus fixed leading arguments, split on
/// whitespace) followed by the caller's `args` exactly as given.
fn build_spec(
    command: &str,
    args: &Publish,
    roots: &Roots,
    remaining: Duration,
) -> Result<Spec, ToolError> {
    let mut words = command.split_whitespace();
    let program = words.next().ok_or_else(|| {
        ToolError::new(
            codes::NOT_CONFIGURED,
            "no publishing CLI is configured: set COREMCP_PUBLISH_CMD to its command",
        )
    })?;
    let mut spec = Spec::new(program).args(words).args(&args.args);
    let cwd = args.cwd.as_deref();
    let dir = roots.resolve("cwd", cwd, None)?;
    if !dir.is_dir() {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!(
                "argument \"cwd\" ({}): not a folder",
                cwd.unwrap_or_default()
            ),
        ));
    }
    spec.cwd = Some(dir);
    spec.stdin = args.stdin.as_ref().map(|s| s.as_bytes().to_vec());
    let asked = Duration::from_secs(args.timeout_s);
    // The host's deadline for the call wins over a longer CLI limit.
    spec.timeout = asked.min(remaining);
    Ok(spec)
}

fn spawn_error(err: SpawnError) -> ToolError {
    let code = match &err {
        SpawnError::NotFound { .. } | SpawnError::PermissionDenied { .. } => codes::NOT_CONFIGURED,
        SpawnError::TimedOut { .. } => codes::TIMEOUT,
        SpawnError::Cancelled { .. } => codes::CANCELLED,
        SpawnError::Start { .. } | SpawnError::Wait { .. } => codes::FAILED,
    };
    let mut message = format!("publishing CLI: {err}");
    if let SpawnError::NotFound { .. } = err {
        message.push_str(" (check COREMCP_PUBLISH_CMD)");
    }
    if let SpawnError::TimedOut { stdout, stderr, .. } = &err {
        append_excerpts(
            &mut message,
            &stdout.excerpt(EXCERPT_CHARS),
            &stderr.excerpt(EXCERPT_CHARS),
        );
    }
    ToolError::new(code, message)
}

fn interpret(done: &Finished) -> Result<Value, ToolError> {
    let stdout = done.stdout.excerpt(EXCERPT_CHARS);
    let stderr = done.stderr.excerpt(EXCERPT_CHARS);
    if !done.status.success() {
        let how = match done.status.code() {
            Some(code) => format!("exited with status {code}"),
            None => "was killed by a signal".to_owned(),
        };
        let mut message = format!("publishing CLI {how}");
        append_excerpts(&mut message, &stdout, &stderr);
        return Err(ToolError::new(codes::FAILED, message));
    }
    if done.stdout.dropped > 0 {
        return Err(ToolError::new(
            codes::FAILED,
            format!(
                "publishing CLI output is larger than {} bytes and was not read as JSON",
                done.stdout.bytes.len()
            ),
        ));
    }
    if done.stdout.bytes.iter().all(u8::is_ascii_whitespace) {
        let mut message = "publishing CLI printed nothing on stdout (expected JSON)".to_owned();
        append_excerpts(&mut message, "", &stderr);
        return Err(ToolError::new(codes::FAILED, message));
    }
    let output: Value = serde_json::from_slice(&done.stdout.bytes).map_err(|e| {
        let mut message = format!("publishing CLI output is not JSON ({e})");
        append_excerpts(&mut message, &stdout, &stderr);
        ToolError::new(codes::FAILED, message)
    })?;
    Ok(fit_output(output))
}

/// The CLI's JSON as the answer when it fits; otherwise its text, cut with the usual marker,
/// in `{"truncated": true, "total_chars", "text"}` — the CLI owns its output's shape, so it
/// is cut as text rather than pruned, and the answer says so and still parses.
fn fit_output(output: Value) -> Value {
    if budget::chars(&output) <= budget::result_budget() {
        return output;
    }
    let text = output.to_string();
    let total = text.chars().count();
    let mut answer = serde_json::json!({"truncated": true, "total_chars": total, "text": text});
    budget::fit(
        &mut answer,
        "text",
        None,
        "the CLI's JSON is larger than an answer may hold: ask it for less (a filter, a page)",
    );
    answer
}

fn append_excerpts(message: &mut String, stdout: &str, stderr: &str) {
    if !stdout.is_empty() {
        message.push_str(&format!("; stdout: {stdout}"));
    }
    if !stderr.is_empty() {
        message.push_str(&format!("; stderr: {stderr}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Publish {
        let map = value.as_object().cloned().expect("object");
        coremcp_plugin_sdk::args::ToolArgs::parse(map).expect("valid arguments")
    }

    fn run(command: &str, call: Value) -> Result<Value, ToolError> {
        let roots = Roots::new(vec![std::env::temp_dir()]).expect("roots");
        let spec = build_spec(command, &args(call), &roots, Duration::from_secs(10))?;
        interpret(&coremcp_spawn::run(&spec, None).map_err(spawn_error)?)
    }

    #[test]
    fn passes_args_verbatim_and_returns_json() {
        let script = r#"printf '{"argv":['; sep=; for a in "$@"; do printf '%s"%s"' "$sep" "$a"; sep=,; done; printf ']}'"#;
        let dir = std::env::temp_dir().join(format!("publish-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let cli = dir.join("cli.sh");
        std::fs::write(&cli, format!("#!/bin/sh\n{script}\n")).expect("write cli");
        let mut perms = std::fs::metadata(&cli).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&cli, perms).expect("chmod");
        let out = run(
            cli.to_str().expect("utf-8 path"),
            json!({"args": ["release", "a b", "$HOME", "*"]}),
        )
        .expect("runs");
        assert_eq!(out, json!({"argv": ["release", "a b", "$HOME", "*"]}));
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn json_too_large_for_an_answer_is_cut_as_text_and_says_so() {
        let small = serde_json::json!({"ok": true});
        assert_eq!(fit_output(small.clone()), small);
        let rows: Vec<Value> = (0..2000)
            .map(|i| serde_json::json!({"id": i, "name": format!("package \"{i}\"")}))
            .collect();
        let big = serde_json::json!({ "packages": rows });
        let answer = fit_output(big.clone());
        assert!(
            budget::chars(&answer) <= budget::result_budget(),
            "{}",
            budget::chars(&answer)
        );
        assert_eq!(answer["truncated"], true);
        assert_eq!(answer["total_chars"], big.to_string().chars().count());
        let text = answer["text"].as_str().expect("text");
        assert!(text.starts_with("{\"packages\":[{"), "{}", &text[..40]);
        assert!(text.contains("…[truncated at "), "the marker");
        assert!(
            text.chars().count() > 12_000,
            "escapes shrink the cut only as much as needed"
        );
    }

    #[test]
    fn errors_carry_what_the_cli_said() {
        let cases = [
            (
                "sh -c",
                json!({"args": ["echo nope; echo bad >&2; exit 4"]}),
                codes::FAILED,
                "exited with status 4; stdout: nope; stderr: bad",
            ),
            (
                "sh -c",
                json!({"args": ["echo plain text"]}),
                codes::FAILED,
                "output is not JSON",
            ),
            (
                "sh -c",
                json!({"args": ["true"]}),
                codes::FAILED,
                "printed nothing on stdout",
            ),
            (
                "/nonexistent/publish",
                json!({"args": []}),
                codes::NOT_CONFIGURED,
                "command not found (check COREMCP_PUBLISH_CMD)",
            ),
            (
                "",
                json!({"args": []}),
                codes::NOT_CONFIGURED,
                "set COREMCP_PUBLISH_CMD",
            ),
            (
                "sh -c",
                json!({"args": ["sleep 5"], "timeout_s": 1}),
                codes::TIMEOUT,
                "did not finish within 1 s",
            ),
        ];
        for (command, call, code, needle) in cases {
            let err = run(command, call.clone()).expect_err("fails");
            assert_eq!(err.code.as_str(), code, "{call}: {err}");
            assert!(err.message.as_str().contains(needle), "{call}: {err}");
        }
    }

    #[test]
    fn reads_stdin_and_cwd_inside_the_roots() {
        let tmp = std::env::temp_dir().canonicalize().expect("temp dir");
        let script = "printf '{\"in\":\"%s\",\"cwd\":\"%s\"}' \"$(cat)\" \"$PWD\"";
        let out = run(
            "sh -c",
            json!({"args": [script], "stdin": "hi", "cwd": tmp.to_string_lossy()}),
        )
        .expect("runs");
        assert_eq!(out, json!({"in": "hi", "cwd": tmp.to_string_lossy()}));
        let err = run("sh -c", json!({"args": [script], "cwd": "/"})).expect_err("outside");
        assert!(err.message.as_str().contains("outside the roots"), "{err}");
    }
}
