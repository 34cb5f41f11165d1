//! `docker_compose`: one Compose command for one project, through the Compose command the host
//! is configured with (`COREMCP_COMPOSE`, e.g. `docker compose` or `docker-compose`; without
//! it, `docker-compose` where installed, else `docker compose`).
//!
//! Invariants:
//! - `project_dir` and every one of `files` are inside the roots; the command runs there, with
//!   `DOCKER_HOST` set to the daemon the call names, through `coremcp-spawn` (scrubbed
//!   environment, bounded output, killed at the call's deadline or on cancel).
//! - `ps` answers the project's containers from the Engine API (`ps -a -q` gives their ids,
//!   which every Compose version prints alike), in the same summary as
//!   `docker_container_list`; `config` answers the resolved project as JSON (Compose's YAML
//!   parsed here, since Compose v1 has no JSON output).
//! - A Compose command that fails is a tool error carrying the end of what it printed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use coremcp_docker_api::summary;
use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::budget::{chars, fit_array, tail, RESULT_BUDGET};
use coremcp_plugin_sdk::prelude::*;
use coremcp_spawn::{Finished, SpawnError, Spec};

use super::common::answer;

pub const TOOL: Tool = Tool::typed("docker_compose", &typed(handler)).hints(Hints::DESTRUCTIVE);

/// The host configuration key of the Compose command.
const COMPOSE_KEY: &str = "compose.cmd";
/// Bytes of each stream kept while Compose runs.
const KEPT_BYTES: usize = 1024 * 1024;
/// Characters of Compose's own output an answer shows at most.
const SHOWN_CHARS: usize = 6_000;

/// Run a Compose command (ps, config, up, down, pull, start, stop, restart, logs) for one project;
/// project_dir and files inside the roots. Uses COREMCP_COMPOSE.
#[derive(Debug, Args)]
pub struct Compose {
    /// the Compose command
    action: ComposeAction,
    /// inside the roots (default the first)
    #[arg(min_len = 1, max_len = 4096)]
    project_dir: Option<String>,
    /// relative to project_dir
    #[arg(max_items = 10)]
    files: Vec<String>,
    /// default: from the folder
    #[arg(min_len = 1, max_len = 64)]
    project_name: Option<String>,
    /// only these services
    #[arg(max_items = 50)]
    services: Vec<String>,
    /// Registry host (default this machine)
    #[arg(min_len = 1, max_len = 200)]
    host: Option<String>,
    /// up: build images first
    #[arg(default)]
    build: bool,
    /// down: volumes too
    #[arg(default)]
    remove_volumes: bool,
    /// logs: last lines (default 200)
    #[arg(min = 1, max = 5000, default = 200)]
    tail: u64,
}

/// A Compose command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum ComposeAction {
    Ps,
    Config,
    Up,
    Down,
    Pull,
    Start,
    Stop,
    Restart,
    Logs,
}

impl ComposeAction {
    fn name(self) -> &'static str {
        Self::VALUES[self as usize]
    }
}

fn handler(ctx: &Ctx<'_>, args: Compose) -> Result<Value, ToolError> {
    let roots = Roots::from_host()?;
    let target = coremcp_docker_api::resolve(ctx, args.host.as_deref())?;
    let plan = plan(
        &roots,
        &args,
        coremcp_plugin_sdk::config(COMPOSE_KEY).as_deref(),
    )?;
    let mut spec = Spec::new(&plan.program).args(&plan.args);
    spec.cwd = Some(plan.dir.clone());
    spec.env = vec![("DOCKER_HOST".into(), target.endpoint.to_string().into())];
    spec.max_output = KEPT_BYTES;
    spec.keep_end = true;
    let remaining = ctx
        .remaining()
        .saturating_sub(std::time::Duration::from_millis(300));
    spec.timeout = remaining.max(std::time::Duration::from_millis(1));
    let shown = plan.shown();
    let finished = coremcp_spawn::run(&spec, Some(ctx.raw().cancelled))
        .map_err(|e| spawn_error(&plan.program, &shown, e))?;
    if !finished.status.success() {
        return Err(ToolError::new(
            codes::FAILED,
            format!(
                "{shown} failed ({}):\n{}",
                finished.status,
                output(&finished, 3_000)
            ),
        ));
    }
    let mut out = answer(
        &target,
        json!({
            "action": args.action.name(),
            "project_dir": plan.dir.display().to_string(),
            "command": shown,
        }),
    );
    match args.action {
        ComposeAction::Ps => {
            let ids: Vec<String> = String::from_utf8_lossy(&finished.stdout.bytes)
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            let containers = if ids.is_empty() {
                Vec::new()
            } else {
                let filters = HashMap::from([("id".to_owned(), ids)]);
                summary::list(ctx, &target.endpoint, true, filters)?
            };
            let listed: Vec<Value> = containers.iter().map(summary::summary).collect();
            out["count"] = listed.len().into();
            out["containers"] = listed.into();
            let dropped = fit_array(&mut out, "containers", RESULT_BUDGET);
            if dropped > 0 {
                out["more"] = dropped.into();
            }
        }
        ComposeAction::Config => {
            let text = String::from_utf8_lossy(&finished.stdout.bytes);
            let config: Value = serde_norway::from_str(&text).map_err(|e| {
                ToolError::new(
                    codes::FAILED,
                    format!("{shown} printed a configuration that is not YAML: {e}"),
                )
            })?;
            out["config"] = config;
            if chars(&out) > RESULT_BUDGET {
                let start: String = text.chars().take(SHOWN_CHARS).collect();
                if let Some(o) = out.as_object_mut() {
                    o.remove("config");
                }
                out["config_yaml"] = start.into();
                out["truncated"] = true.into();
                out["hint"] = "the resolved configuration is larger than a result; pass services \
                               or read the Compose files"
                    .into();
            }
        }
        _ => {
            out["output"] = output(&finished, SHOWN_CHARS).into();
        }
    }
    Ok(out)
}

/// A Compose command line, ready to run.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub program: String,
    pub args: Vec<String>,
    pub dir: PathBuf,
}

impl Plan {
    /// The command line as an agent reads it (paths inside the roots only).
    fn shown(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The command line for `args` with `configured` as the Compose command.
pub fn plan(roots: &Roots, args: &Compose, configured: Option<&str>) -> Result<Plan, ToolError> {
    let mut words = command_words(configured)?;
    let program = words.remove(0);
    let dir = roots.resolve("project_dir", args.project_dir.as_deref(), None)?;
    if !dir.is_dir() {
        return Err(invalid(
            "project_dir",
            format!("{}: not a folder", dir.display()),
        ));
    }
    let mut line = words;
    line.extend(["--project-directory".into(), path_text(&dir)]);
    for (i, file) in args.files.iter().enumerate() {
        let field = format!("files[{i}]");
        let path = roots.resolve(&field, Some(file), Some(&dir))?;
        if !path.is_file() {
            return Err(invalid(&field, format!("{}: not a file", path.display())));
        }
        line.extend(["-f".into(), path_text(&path)]);
    }
    if let Some(name) = &args.project_name {
        let ok = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-'));
        if !ok {
            return Err(invalid(
                "project_name",
                "a Compose project name is lowercase letters, digits, '_' and '-', starting with \
                 a letter or digit",
            ));
        }
        line.extend(["-p".into(), name.clone()]);
    }
    line.push(args.action.name().into());
    let flags: &[&str] = match args.action {
        ComposeAction::Ps => &["-a", "-q"],
        ComposeAction::Up if args.build => &["-d", "--build"],
        ComposeAction::Up => &["-d"],
        ComposeAction::Down if args.remove_volumes => &["--volumes"],
        ComposeAction::Logs => &["--no-color"],
        _ => &[],
    };
    line.extend(flags.iter().map(|f| (*f).to_owned()));
    if args.action == ComposeAction::Logs {
        line.extend(["--tail".into(), args.tail.to_string()]);
    }
    for (field, set, action) in [
        ("build", args.build, ComposeAction::Up),
        ("remove_volumes", args.remove_volumes, ComposeAction::Down),
    ] {
        if set && args.action != action {
            return Err(invalid(
                field,
                format!("applies to action {} only", action.name()),
            ));
        }
    }
    if !args.services.is_empty() {
        if args.action == ComposeAction::Down {
            return Err(invalid("services", "down takes the whole project"));
        }
        for (i, service) in args.services.iter().enumerate() {
            let ok = !service.is_empty()
                && service.len() <= 128
                && !service.starts_with('-')
                && service
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
            if !ok {
                return Err(invalid(
                    &format!("services[{i}]"),
                    format!("{service:?} is not a service name"),
                ));
            }
        }
        if args.action != ComposeAction::Config {
            line.extend(args.services.iter().cloned());
        }
    }
    Ok(Plan {
        program,
        args: line,
        dir,
    })
}

/// The Compose command's words: the configured one, else `docker-compose` where it is on
/// `PATH`, else `docker compose`.
pub fn command_words(configured: Option<&str>) -> Result<Vec<String>, ToolError> {
    if let Some(text) = configured.map(str::trim).filter(|t| !t.is_empty()) {
        let words: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        if words
            .iter()
            .any(|w| w.contains(['\'', '"', '$', '`', ';', '|', '&']))
        {
            return Err(ToolError::new(
                codes::NOT_CONFIGURED,
                format!(
                    "COREMCP_COMPOSE is {text:?}: it is a program and its arguments separated by \
                     spaces, without quotes or shell syntax (e.g. \"docker compose\")"
                ),
            ));
        }
        return Ok(words);
    }
    if coremcp_spawn::which("docker-compose").is_some() {
        return Ok(vec!["docker-compose".into()]);
    }
    Ok(vec!["docker".into(), "compose".into()])
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The end of what Compose printed (it reports progress on stderr), at most `max` characters.
fn output(finished: &Finished, max: usize) -> String {
    let mut text = String::from_utf8_lossy(&finished.stderr.bytes).into_owned();
    text.push_str(&String::from_utf8_lossy(&finished.stdout.bytes));
    let (end, cut) = tail(&text, max);
    match cut {
        0 => end.to_owned(),
        _ => format!("…[{cut} characters before this not shown]\n{end}"),
    }
}

fn spawn_error(program: &str, shown: &str, e: SpawnError) -> ToolError {
    let code = match &e {
        SpawnError::NotFound { .. } | SpawnError::PermissionDenied { .. } => codes::NOT_CONFIGURED,
        SpawnError::TimedOut { .. } => codes::TIMEOUT,
        SpawnError::Cancelled { .. } => codes::CANCELLED,
        SpawnError::Start { .. } | SpawnError::Wait { .. } => codes::FAILED,
    };
    let mut message = format!("{shown}: {e}");
    if let SpawnError::NotFound { .. } = e {
        message.push_str(&format!(
            " ({program} is not installed; install Compose, or set COREMCP_COMPOSE to the \
             command that runs it, e.g. \"docker compose\")"
        ));
    }
    ToolError::new(code, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coremcp_plugin_kit::testing::TempTree;

    fn args(value: Value) -> Compose {
        coremcp_plugin_sdk::testing::parse(value).expect("args")
    }

    #[test]
    fn plans_are_confined_and_checked() {
        let tree = TempTree::new("compose", "inside", "x.yml", "services: {}\n");
        tree.write("proj/compose.yml", "services: {}\n");
        let roots = tree.roots();
        let up = plan(
            &roots,
            &args(
                json!({"action": "up", "project_dir": "proj", "files": ["compose.yml"],
                         "project_name": "demo", "services": ["web"], "build": true}),
            ),
            Some("docker compose"),
        )
        .expect("plan");
        assert_eq!(up.program, "docker");
        let dir = path_text(&up.dir);
        let file = format!("{dir}/compose.yml");
        assert_eq!(
            up.args,
            [
                "compose",
                "--project-directory",
                &dir,
                "-f",
                &file,
                "-p",
                "demo",
                "up",
                "-d",
                "--build",
                "web"
            ]
        );
        for (bad, says) in [
            (
                json!({"action": "ps", "project_dir": "/"}),
                "outside the roots",
            ),
            (
                json!({"action": "ps", "project_dir": "proj", "files": ["../../outside/x.yml"]}),
                "files[0]",
            ),
            (json!({"action": "ps", "project_name": "Demo"}), "lowercase"),
            (json!({"action": "ps", "services": ["--rm"]}), "services[0]"),
            (
                json!({"action": "down", "services": ["web"]}),
                "whole project",
            ),
            (json!({"action": "ps", "build": true}), "build"),
        ] {
            let e = plan(&roots, &args(bad.clone()), Some("docker-compose"))
                .expect_err(&bad.to_string());
            assert!(e.message.contains(says), "{bad}: {}", e.message);
        }
        let e = command_words(Some("sh -c 'rm -rf /'")).expect_err("quotes");
        assert!(e.message.contains("COREMCP_COMPOSE"), "{}", e.message);
    }
}
