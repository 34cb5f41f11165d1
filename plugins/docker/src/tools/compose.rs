//! `docker_compose`: one Compose command for one project, through the Compose command the host
//! is configured with (`COREMCP_COMPOSE`, e.g. `docker compose` or `docker-compose`; without
//! it, `docker-compose` where installed, else `docker compose`).
//!
//! Invariants:
//! - `project_dir` and every one of `files` are inside the roots; the command runs there, with
//!   `DOCKER_HOST` set to the daemon the call names, through `coremcp-spawn` (scrubbed
//!   environment, bounded output, killed at the call's deadline or on cancel), and always with
//!   its Compose files named (`-f`, found in `project_dir` when none are given), so neither
//!   `COMPOSE_FILE` nor a `.env` picks others.
//! - `ps`, `config` and `logs` (which need no grant) reach nothing outside the roots: every
//!   file the project reads (`.env`, `env_file`, `extends`, `include`, `secrets`/`configs`
//!   files, `label_file`, build contexts) and every bind mount on this machine's daemon is
//!   checked first ([`reach`], which reads the files as Compose does: merge keys at every depth,
//!   `.env` where it really is and interpolated), and one outside is refused, naming it —
//!   unless the call says `reach_outside_roots`, which makes it need `up`'s grant.
//! - `up` runs exactly what was checked ([`resolved`]): Compose resolves the project
//!   (`config`), the resolved document is judged ([`host_access`]), and `up` is handed that
//!   document, so no second reading can disagree. Nothing that gives a container the host — a
//!   bind of `/`, of a socket or of the kernel's trees, `privileged` in any spelling, added
//!   capabilities, host namespaces, devices, weakening `security_opt` — runs unless the call
//!   says `allow_host_access` (which over HTTP only a grant naming `docker_compose` allows).
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
use coremcp_plugin_sdk::budget::{chars, fit_array, result_budget, tail};
use coremcp_plugin_sdk::prelude::*;
use coremcp_spawn::{Finished, SpawnError, Spec};

use super::common::answer;

mod host_access;
mod reach;
mod resolved;

pub const TOOL: Tool = Tool::typed("docker_compose", &typed(handler)).hints(Hints::DESTRUCTIVE);

/// The host configuration key of the Compose command.
const COMPOSE_KEY: &str = "compose.cmd";
/// Bytes of each stream kept while Compose runs.
const KEPT_BYTES: usize = 1024 * 1024;
/// Containers of a project `ps` keeps: more than one answer can show.
const PS_KEPT: usize = 500;
/// Bytes of the resolved configuration `up` is handed at most (the whole of it is judged).
const RESOLVED_BYTES: usize = 8 * 1024 * 1024;
/// Characters of Compose's own output an answer shows at most.
const SHOWN_CHARS: usize = 6_000;

/// Run one Compose command for a project (project_dir and files inside the roots) through
/// COREMCP_COMPOSE; ps and config answer JSON.
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
    /// Registry host (default: here)
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
    /// ps/config/logs outside the roots (up's grant)
    #[arg(default)]
    reach_outside_roots: bool,
    /// up: may give a container the host (HTTP: the tool's grant)
    #[arg(default)]
    allow_host_access: bool,
    /// kill Compose after, s
    #[arg(min = 1, max = 600, default = 120)]
    timeout_s: u64,
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
    let vars = check_reach(&roots, &args, &plan, &target.endpoint)?;
    // `up` is handed the project as Compose resolved it and as it was judged (`resolved`).
    let (line, _resolved) = if args.action == ComposeAction::Up {
        let project = plan.project_for_up(&vars);
        let config = plan.line(&plan.files, &[], Some(&project), &["config".to_owned()]);
        let printed = run_compose(ctx, &args, &plan, &config, &target.endpoint, RESOLVED_BYTES)?;
        let local = matches!(target.endpoint, coremcp_docker_api::Endpoint::Unix(_));
        let sockets = host_access::sockets(&target.endpoint, &vars, local);
        let judge = |doc: &Value| host_access::resolved(doc, &plan.dir, &vars, &sockets);
        let resolved = resolved::prepare(
            &printed.stdout.bytes,
            printed.stdout.dropped,
            &judge,
            args.allow_host_access,
        )?;
        let extra = ["--env-file".to_owned(), path_text(&resolved.env_file)];
        let line = plan.line(
            std::slice::from_ref(&resolved.file),
            &extra,
            Some(&project),
            &plan.tail,
        );
        (line, Some(resolved))
    } else {
        (plan.args.clone(), None)
    };
    let shown = plan.shown();
    let finished = run_compose(ctx, &args, &plan, &line, &target.endpoint, KEPT_BYTES)?;
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
            let found = if ids.is_empty() {
                summary::Listing::default()
            } else {
                let filters = HashMap::from([("id".to_owned(), ids)]);
                summary::list(ctx, &target.endpoint, true, filters, PS_KEPT, |_| true)?
            };
            let listed: Vec<Value> = found.kept.iter().map(summary::summary).collect();
            out["count"] = found.matched.into();
            out["containers"] = listed.into();
            let dropped = fit_array(&mut out, "containers", result_budget()) + found.matched
                - found.kept.len();
            if dropped > 0 {
                out["more"] = dropped.into();
                out["hint"] = "docker_container_list with compose_project pages every container \
                               of the project (label com.docker.compose.service=NAME for one \
                               service)"
                    .into();
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
            if chars(&out) > result_budget() {
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

/// Runs Compose with `line` in the project folder for this call: `DOCKER_HOST` set to the
/// daemon, bounded output (`kept` bytes of each stream), the call's deadline; a failed command is
/// a tool error quoting what it printed.
fn run_compose(
    ctx: &Ctx<'_>,
    args: &Compose,
    plan: &Plan,
    line: &[String],
    endpoint: &coremcp_docker_api::Endpoint,
    kept: usize,
) -> Result<Finished, ToolError> {
    let mut spec = Spec::new(&plan.program).args(line);
    spec.cwd = Some(plan.dir.clone());
    spec.env = vec![("DOCKER_HOST".into(), endpoint.to_string().into())];
    spec.max_output = kept;
    spec.keep_end = kept == KEPT_BYTES;
    // The call's deadline (which a `timeout_s` extends) wins; keep a moment to answer in,
    // and to say what a killed Compose left behind.
    let remaining = ctx
        .remaining()
        .saturating_sub(std::time::Duration::from_millis(1_500));
    spec.timeout = std::time::Duration::from_secs(args.timeout_s)
        .min(remaining.max(std::time::Duration::from_millis(1)));
    let shown = std::iter::once(plan.program.as_str())
        .chain(line.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let finished = coremcp_spawn::run(&spec, Some(ctx.raw().cancelled)).map_err(|e| {
        let timed_out = matches!(e, SpawnError::TimedOut { .. });
        let mut error = spawn_error(&plan.program, &shown, e);
        if timed_out {
            let project = args
                .project_name
                .clone()
                .unwrap_or_else(|| project_name_of(&plan.dir));
            error
                .message
                .push_str(&left_behind(ctx, endpoint, &project));
        }
        error
    })?;
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
    Ok(finished)
}

/// The environment Compose runs with, for its interpolation: what it inherits and
/// `DOCKER_HOST`.
fn compose_vars(
    dir: &Path,
    endpoint: &coremcp_docker_api::Endpoint,
    may_read: &dyn Fn(&str, &Path) -> Result<(), ToolError>,
) -> Result<reach::Vars, ToolError> {
    let inherited = coremcp_spawn::child_env(&coremcp_spawn::Inherit::Scrubbed)
        .into_iter()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .chain([("DOCKER_HOST".to_owned(), endpoint.to_string())]);
    reach::vars(dir, inherited, may_read)
}

/// Refuses what the call may not reach (see the module invariants) before Compose runs; the
/// variables Compose will interpolate with.
fn check_reach(
    roots: &Roots,
    args: &Compose,
    plan: &Plan,
    endpoint: &coremcp_docker_api::Endpoint,
) -> Result<reach::Vars, ToolError> {
    let read_only = matches!(
        args.action,
        ComposeAction::Ps | ComposeAction::Config | ComposeAction::Logs
    );
    if args.reach_outside_roots && !read_only {
        return Err(invalid(
            "reach_outside_roots",
            "applies to ps, config and logs only (the other actions need a grant, and may reach \
             outside the roots)",
        ));
    }
    if args.allow_host_access && args.action != ComposeAction::Up {
        return Err(invalid("allow_host_access", "applies to action up only"));
    }
    let confined = read_only && !args.reach_outside_roots;
    let outside = |field: &str, path: &str| {
        invalid(
            "project_dir",
            format!(
                "docker_compose {}: {field} reaches {path}, outside the roots; ps, config and \
                 logs stay inside the roots like the files tools (pass reach_outside_roots: true, \
                 which needs up's grant, to allow it)",
                args.action.name()
            ),
        )
    };
    let may_read = |field: &str, path: &Path| -> Result<(), ToolError> {
        if confined && !roots.contains(path) {
            return Err(outside(field, &path.display().to_string()));
        }
        Ok(())
    };
    let vars = compose_vars(&plan.dir, endpoint, &may_read)?;
    let reached = reach::read(&plan.dir, &plan.files, &vars, &may_read)?;
    // A bind mount's source is on the daemon's machine: this one's only for a local socket.
    let local = matches!(endpoint, coremcp_docker_api::Endpoint::Unix(_));
    if confined {
        for r in reached.paths.iter().filter(|r| !r.mount || local) {
            match &r.path {
                Ok(path) if roots.contains(path) => {}
                Ok(path) => return Err(outside(&r.field, &path.display().to_string())),
                Err(why) => {
                    return Err(invalid(
                        "project_dir",
                        format!(
                            "docker_compose {}: {} cannot be placed ({why}), so it cannot be \
                             kept inside the roots",
                            args.action.name(),
                            r.field
                        ),
                    ))
                }
            }
        }
    }
    if args.action == ComposeAction::Up && !args.allow_host_access {
        let sockets = host_access::sockets(endpoint, &vars, local);
        for r in reached.paths.iter().filter(|r| r.mount) {
            let why = match &r.path {
                Ok(path) => host_access::mount(path, r.read_only, &sockets),
                Err(why) => Some(format!("cannot be placed ({why})")),
            };
            if let Some(why) = why {
                return Err(host_access_refused(&format!("{} {why}", r.field)));
            }
        }
        if let Some(first) = reached.host_access.first() {
            return Err(host_access_refused(first));
        }
    }
    Ok(vars)
}

/// The refusal of an `up` that would hand over the host.
fn host_access_refused(what: &str) -> ToolError {
    ToolError::new(
        codes::INVALID_ARGUMENTS,
        format!(
            "docker_compose up: {what}, which gives the container the host; it is refused \
             unless the call says allow_host_access: true (over HTTP that needs a grant naming \
             docker_compose itself)"
        ),
    )
}

/// The Compose files Compose would pick in `dir` without `-f`: the first of its names that
/// exists, and its override.
fn default_files(dir: &Path) -> Vec<PathBuf> {
    const FAMILIES: [(&str, &str); 4] = [
        ("compose.yaml", "compose.override.yaml"),
        ("compose.yml", "compose.override.yml"),
        ("docker-compose.yaml", "docker-compose.override.yaml"),
        ("docker-compose.yml", "docker-compose.override.yml"),
    ];
    for (main, extra) in FAMILIES {
        let main = dir.join(main);
        if main.is_file() {
            let mut files = vec![main];
            let extra = dir.join(extra);
            if extra.is_file() {
                files.push(extra);
            }
            return files;
        }
    }
    Vec::new()
}

/// A Compose command line, ready to run.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub program: String,
    /// The whole line after the program.
    pub args: Vec<String>,
    pub dir: PathBuf,
    /// The Compose files, named with `-f` (canonical, inside the roots).
    pub files: Vec<PathBuf>,
    /// The configured command's own leading words (`compose` of `docker compose`).
    words: Vec<String>,
    /// `-p NAME` when the call names the project.
    project: Option<String>,
    /// The action, its flags and its services.
    tail: Vec<String>,
}

impl Plan {
    /// A line of this plan's command with other Compose files, options after them, the project
    /// name (the call's, else `project`) and another action.
    fn line(
        &self,
        files: &[PathBuf],
        options: &[String],
        project: Option<&str>,
        tail: &[String],
    ) -> Vec<String> {
        let mut line = self.words.clone();
        line.extend(["--project-directory".into(), path_text(&self.dir)]);
        for file in files {
            line.extend(["-f".into(), path_text(file)]);
        }
        line.extend(options.iter().cloned());
        if let Some(name) = self.project.as_deref().or(project) {
            line.extend(["-p".into(), name.to_owned()]);
        }
        line.extend(tail.iter().cloned());
        line
    }

    /// The project name both of `up`'s Compose commands are given, so the second, which reads
    /// no `.env`, names the project as the first did: the call's, else `COMPOSE_PROJECT_NAME`
    /// (the environment's, else the `.env`'s), else the folder's, as Compose derives it.
    fn project_for_up(&self, vars: &reach::Vars) -> String {
        self.project
            .clone()
            .or_else(|| {
                vars.get("COMPOSE_PROJECT_NAME")
                    .map(|n| normalized_name(n))
                    .filter(|n| !n.is_empty())
            })
            .unwrap_or_else(|| project_name_of(&self.dir))
    }

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
    let mut files = Vec::new();
    for (i, file) in args.files.iter().enumerate() {
        let field = format!("files[{i}]");
        let path = roots.resolve(&field, Some(file), Some(&dir))?;
        if !path.is_file() {
            return Err(invalid(&field, format!("{}: not a file", path.display())));
        }
        files.push(path);
    }
    if files.is_empty() {
        // Found here and named, as Compose would find them, so nothing else picks others.
        for (i, found) in default_files(&dir).into_iter().enumerate() {
            let field = format!("project_dir's Compose file {}", i + 1);
            files.push(roots.resolve(&field, Some(&path_text(&found)), Some(&dir))?);
        }
        if files.is_empty() {
            return Err(invalid(
                "project_dir",
                format!(
                    "{}: no Compose file (compose.yaml, compose.yml, docker-compose.yaml, \
                     docker-compose.yml); name one in files",
                    dir.display()
                ),
            ));
        }
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
    }
    let mut tail = vec![args.action.name().to_owned()];
    let flags: &[&str] = match args.action {
        ComposeAction::Ps => &["-a", "-q"],
        ComposeAction::Up if args.build => &["-d", "--build"],
        ComposeAction::Up => &["-d"],
        ComposeAction::Down if args.remove_volumes => &["--volumes"],
        ComposeAction::Logs => &["--no-color"],
        _ => &[],
    };
    tail.extend(flags.iter().map(|f| (*f).to_owned()));
    if args.action == ComposeAction::Logs {
        tail.extend(["--tail".into(), args.tail.to_string()]);
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
            tail.extend(args.services.iter().cloned());
        }
    }
    let mut plan = Plan {
        program,
        args: Vec::new(),
        dir,
        files,
        words,
        project: args.project_name.clone(),
        tail,
    };
    plan.args = plan.line(&plan.files, &[], None, &plan.tail);
    Ok(plan)
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

/// The project name Compose gives a project folder: its name, normalised.
fn project_name_of(dir: &Path) -> String {
    normalized_name(&dir.file_name().unwrap_or_default().to_string_lossy())
}

/// A project name as Compose normalises one: lowercased, keeping letters, digits, `_` and `-`.
fn normalized_name(name: &str) -> String {
    name.to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-'))
        .collect()
}

/// What a killed Compose command left: the project's containers and their states, as the
/// daemon reports them now (or why that could not be read).
fn left_behind(ctx: &Ctx<'_>, endpoint: &coremcp_docker_api::Endpoint, project: &str) -> String {
    let filters = HashMap::from([(
        "label".to_owned(),
        vec![format!("com.docker.compose.project={project}")],
    )]);
    let found = match summary::list(ctx, endpoint, true, filters, 20, |_| true) {
        Ok(found) => found,
        Err(e) => return format!(". The project's state could not be read: {e}"),
    };
    if found.matched == 0 {
        return format!(". Project {project} has no containers now.");
    }
    let states: Vec<String> = found
        .kept
        .iter()
        .map(|c| {
            let name = c.names.first().map_or("?", |n| n.trim_start_matches('/'));
            let state = if c.state.is_empty() {
                "unknown"
            } else {
                &c.state
            };
            format!("{name} {state}")
        })
        .collect();
    let more = found.matched.saturating_sub(states.len());
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(
        ". Compose's whole process group was killed; project {project} now has: {}{more} \
         (pass a larger timeout_s, up to 600, to let it finish)",
        states.join(", ")
    )
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
        tree.write("compose.yaml", "services: {}\n");
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

    #[test]
    fn without_files_the_ones_compose_would_pick_are_named() {
        let tree = TempTree::new("compose-find", "inside", "x.yml", "services: {}\n");
        tree.write("p/docker-compose.yml", "services: {}\n")
            .write("p/docker-compose.override.yml", "services: {}\n")
            .write("p/other.yml", "services: {}\n");
        let ps = plan(
            &tree.roots(),
            &args(json!({"action": "ps", "project_dir": "p"})),
            Some("docker-compose"),
        )
        .expect("plan");
        let names: Vec<String> = ps
            .files
            .iter()
            .map(|f| f.file_name().expect("name").to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["docker-compose.yml", "docker-compose.override.yml"]);
        assert_eq!(ps.args.iter().filter(|a| *a == "-f").count(), 2);
        tree.write("empty/readme", "");
        let e = plan(
            &tree.roots(),
            &args(json!({"action": "ps", "project_dir": "empty"})),
            Some("docker-compose"),
        )
        .expect_err("no file");
        assert!(e.message.contains("no Compose file"), "{}", e.message);
    }

    /// The outcome of checking `compose` (the project's only file) for `call`.
    fn reach_of(tree: &TempTree, compose: &str, call: Value) -> Result<(), ToolError> {
        tree.write("proj/compose.yml", compose);
        let mut call = call;
        call["project_dir"] = json!("proj");
        let args = args(call);
        let roots = tree.roots();
        let plan = plan(&roots, &args, Some("docker-compose"))?;
        let local = coremcp_docker_api::Endpoint::Unix("/var/run/docker.sock".into());
        check_reach(&roots, &args, &plan, &local).map(drop)
    }

    #[test]
    fn the_actions_without_a_grant_reach_nothing_outside_the_roots() {
        let tree = TempTree::new("compose-reach", "inside", "secret.env", "TOKEN=s3cret\n");
        let outside = tree.outside().canonicalize().expect("outside");
        let secret = outside.join("secret.env");
        std::fs::write(
            outside.join("base.yml"),
            "services:\n  web:\n    image: busybox\n",
        )
        .expect("write");
        let config = json!({"action": "config"});
        for (compose, field) in [
            (
                format!("services:\n  web:\n    image: busybox\n    env_file: {}\n", secret.display()),
                "services.web.env_file[0]",
            ),
            (
                "services:\n  web:\n    image: busybox\n    env_file:\n      - path: ../../outside/secret.env\n".to_owned(),
                "services.web.env_file[0]",
            ),
            (
                "x: &c\n  env_file: ../../outside/secret.env\nservices:\n  web:\n    <<: *c\n    image: busybox\n".to_owned(),
                "services.web.env_file[0]",
            ),
            (
                "services:\n  web:\n    extends:\n      file: ../../outside/base.yml\n      service: web\n".to_owned(),
                "services.web.extends.file",
            ),
            (
                "include:\n  - ../../outside/base.yml\nservices: {}\n".to_owned(),
                "include[0].path",
            ),
            (
                "services:\n  web:\n    build: ../..\n".to_owned(),
                "services.web.build",
            ),
            (
                "services:\n  web:\n    image: busybox\n    volumes:\n      - /etc:/host-etc:ro\n".to_owned(),
                "services.web.volumes[0]",
            ),
            (
                "secrets:\n  s:\n    file: ${OUTSIDE_DIR:-../../outside}/secret.env\nservices: {}\n".to_owned(),
                "secrets.s.file",
            ),
            // Merge keys at the services level, and as a list of anchors.
            (
                "x: &all\n  web:\n    image: busybox\n    env_file: ../../outside/secret.env\nservices:\n  <<: *all\n".to_owned(),
                "services.web.env_file[0]",
            ),
            (
                "x: &a {image: busybox}\ny: &b {env_file: ../../outside/secret.env}\nservices:\n  web:\n    <<: [*a, *b]\n".to_owned(),
                "services.web.env_file[0]",
            ),
            // `extends` given through a merge key.
            (
                "x: &e\n  extends:\n    file: ../../outside/base.yml\n    service: web\nservices:\n  web:\n    <<: *e\n".to_owned(),
                "services.web.extends.file",
            ),
        ] {
            let e = reach_of(&tree, &compose, config.clone()).expect_err(&compose);
            assert!(
                e.message.contains(field) && e.message.contains("outside the roots"),
                "{compose}: {}",
                e.message
            );
            // Saying so makes the call need up's grant, and then it may.
            let mut allowed = config.clone();
            allowed["reach_outside_roots"] = json!(true);
            assert!(reach_of(&tree, &compose, allowed).is_ok(), "{compose}");
        }
        // Inside the roots all is well, `..` and variables included.
        tree.write("proj/.env", "DATA=./data\n")
            .write("shared/app.env", "A=1\n");
        let inside = "services:\n  web:\n    image: busybox\n    env_file: ../shared/app.env\n    volumes:\n      - ${DATA}:/data\n      - named:/n\n";
        assert!(reach_of(&tree, inside, config.clone()).is_ok());
        let e = reach_of(
            &tree,
            "services:\n  web:\n    env_file: ${MISSING:?set MISSING}\n",
            config.clone(),
        )
        .expect_err("unplaceable");
        assert!(e.message.contains("cannot be placed"), "{}", e.message);
        // A `.env` value that names another: interpolated as Compose does.
        tree.write(
            "proj/.env",
            format!("D={}\nP=${{D}}/secret.env\n", outside.display()),
        );
        let e = reach_of(
            &tree,
            "services:\n  web:\n    image: busybox\n    env_file: ${P}\n",
            config.clone(),
        )
        .expect_err("interpolated .env");
        assert!(
            e.message.contains(&secret.display().to_string()),
            "{}",
            e.message
        );
        // A `.env` that is a symlink to a file outside: never read.
        std::fs::remove_file(tree.inside().join("proj/.env")).expect("rm");
        tree.symlink(&secret, "proj/.env");
        let e = reach_of(&tree, "services:\n  web:\n    image: busybox\n", config)
            .expect_err(".env symlink");
        assert!(
            e.message.contains(".env") && e.message.contains("outside the roots"),
            "{}",
            e.message
        );
        std::fs::remove_file(tree.inside().join("proj/.env")).expect("rm");
    }

    #[test]
    fn up_hands_over_the_host_only_when_the_call_says_so() {
        let tree = TempTree::new("compose-host", "inside", "x", "");
        let up = json!({"action": "up"});
        for (compose, says) in [
            ("services:\n  web:\n    image: busybox\n    volumes:\n      - /:/host\n", "mounts /"),
            (
                "services:\n  web:\n    image: busybox\n    volumes:\n      - /var/run/docker.sock:/var/run/docker.sock\n",
                "docker.sock",
            ),
            (
                "services:\n  web:\n    image: busybox\n    volumes:\n      - type: bind\n        source: /var/run\n        target: /r\n",
                "mounts",
            ),
            ("services:\n  web:\n    image: busybox\n    privileged: true\n", "privileged"),
            // YAML 1.1 booleans, which Compose honours.
            ("services:\n  web:\n    image: busybox\n    privileged: yes\n", "privileged"),
            ("services:\n  web:\n    image: busybox\n    privileged: on\n", "privileged"),
            // A `/` bind mount written through a merge key in the volumes list.
            (
                "x-v: &v\n  type: bind\n  source: /\n  target: /host\nservices:\n  web:\n    image: busybox\n    volumes:\n      - <<: *v\n",
                "mounts /",
            ),
            ("services:\n  web:\n    image: busybox\n    cap_add: [SYS_ADMIN]\n", "capabilities"),
            ("services:\n  web:\n    image: busybox\n    pid: host\n", "pid"),
            ("services:\n  web:\n    image: busybox\n    devices: [/dev/sda]\n", "devices"),
            (
                "services:\n  web:\n    image: busybox\n    security_opt: [apparmor=unconfined]\n",
                "security_opt",
            ),
            (
                "volumes:\n  h:\n    driver_opts: {type: none, o: bind, device: /}\nservices:\n  web:\n    image: busybox\n",
                "mounts /",
            ),
        ] {
            let e = reach_of(&tree, compose, up.clone()).expect_err(compose);
            assert!(
                e.message.contains(says) && e.message.contains("allow_host_access"),
                "{compose}: {}",
                e.message
            );
            let allowed = json!({"action": "up", "allow_host_access": true});
            assert!(reach_of(&tree, compose, allowed).is_ok(), "{compose}");
        }
        // A granted up may reach outside the roots otherwise.
        let outside = "services:\n  web:\n    image: busybox\n    volumes:\n      - /var/log:/l:ro\n      - /etc/localtime:/etc/localtime:ro\n";
        assert!(reach_of(&tree, outside, up).is_ok());
        let e = reach_of(
            &tree,
            outside,
            json!({"action": "down", "allow_host_access": true}),
        )
        .expect_err("up only");
        assert!(e.message.contains("allow_host_access"), "{}", e.message);
    }
}
