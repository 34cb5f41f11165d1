//! `bootstrap`: prepares this machine for Core MCP work and answers a checklist — the
//! prerequisites found (with versions), the folders, the agent client's MCP entry, and the
//! machine's Registry host.
//!
//! Invariants:
//! - Idempotent: a second run finds everything in place and changes nothing (`changed: false`).
//! - A client file is merged, never replaced: everything else in it stays, a backup copy is
//!   written beside it before the first change (`<file>.coremcp-backup-<time>`), and the new
//!   text replaces it atomically. A file that cannot be read in its format is reported and left
//!   as it is.
//! - `dry_run` reports every change it would make and makes none.
//! - Never forwarded (`remote_host: false` in the catalog): it is about the machine the agent
//!   runs on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use coremcp_plugin_sdk::prelude::*;
use coremcp_spawn::{SpawnError, Spec};

use crate::clients::{Client, Launch};

pub const TOOL: Tool = Tool::typed("bootstrap", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Prepare this machine: check prerequisites, create config and plugin folders, merge the client's
/// MCP entry into its config (backed up), optionally register the host. Idempotent.
#[derive(Debug, Args)]
pub struct Bootstrap {
    /// client whose MCP entry to write
    #[arg(default = ClientArg::None)]
    client: ClientArg,
    /// secondary: no document tools
    #[arg(default = Profile::Default)]
    profile: Profile,
    /// add this machine to the Registry
    #[arg(default)]
    register_host: bool,
    /// change nothing
    #[arg(default)]
    dry_run: bool,
}

/// The `client` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ArgEnum)]
pub enum ClientArg {
    ClaudeCode,
    Codex,
    Vscode,
    Cursor,
    #[default]
    None,
}

/// The machine profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ArgEnum)]
pub enum Profile {
    #[default]
    Default,
    Secondary,
}

/// The groups the secondary (reduced) machine serves: all but the document tools.
const SECONDARY_GROUPS: &str =
    "registry,seele,scrolls,notepad,session,git,files,ops,publishing,docker";
/// The port `coremcp serve` listens on unless `COREMCP_LISTEN` says otherwise.
const DEFAULT_PORT: &str = "7070";

fn handler(_: &Ctx<'_>, args: Bootstrap) -> Result<Value, ToolError> {
    let env = |name: &str| std::env::var(name).ok();
    let home = env("HOME").filter(|h| h.starts_with('/')).ok_or_else(|| {
        ToolError::new(
            codes::NOT_CONFIGURED,
            "bootstrap: HOME is not set to an absolute path",
        )
    })?;
    let exe = std::env::current_exe().map_err(|e| {
        ToolError::new(
            codes::INTERNAL,
            format!("bootstrap: this program's path: {e}"),
        )
    })?;
    let plan = Plan {
        home: PathBuf::from(home),
        exe,
        plugins: coremcp_plugin_sdk::config("plugins.dir").map(PathBuf::from),
        publish: coremcp_plugin_sdk::config("publish.cmd"),
        args,
    };
    let mut out = run(&plan, &env)?;
    if plan.args.register_host {
        let host = register(&plan.args, &env);
        if host["action"] == "added" || host["action"] == "updated" {
            out["changed"] = true.into();
        }
        out["host"] = host;
    }
    Ok(out)
}

/// What a run works with: the user's home, this program, the host's plugin folder and
/// publishing CLI, the arguments.
pub struct Plan {
    pub home: PathBuf,
    pub exe: PathBuf,
    pub plugins: Option<PathBuf>,
    pub publish: Option<String>,
    pub args: Bootstrap,
}

/// The checklist for `plan` (all but the Registry host), changing the machine unless dry_run.
pub fn run(plan: &Plan, env: crate::clients::Env<'_>) -> Result<Value, ToolError> {
    let dry = plan.args.dry_run;
    let mut changed = false;
    let mut checks = vec![
        version_of("git", &["--version"]),
        version_of("pwsh", &["--version"]),
        version_of("docker", &["--version"]),
    ];
    checks.push(
        match plan
            .publish
            .as_deref()
            .and_then(|c| c.split_whitespace().next())
        {
            Some(program) => {
                let mut check = json!({"name": "publishing", "command": program,
                                   "found": coremcp_spawn::which(program).is_some()});
                if let Some(path) = coremcp_spawn::which(program) {
                    check["path"] = path.display().to_string().into();
                }
                check
            }
            None => json!({"name": "publishing", "found": false,
                       "note": "COREMCP_PUBLISH_CMD is not set"}),
        },
    );
    let config_dir = env("XDG_CONFIG_HOME")
        .filter(|v| v.starts_with('/'))
        .map_or_else(|| plan.home.join(".config"), PathBuf::from)
        .join("coremcp");
    let mut folders = vec![folder("config", &config_dir, dry)?];
    if let Some(plugins) = &plan.plugins {
        folders.push(folder("plugins", plugins, dry)?);
    }
    changed |= folders.iter().any(|f| f["action"] == "created");
    let mut out = json!({"dry_run": dry, "checks": checks, "folders": folders});
    let client = match plan.args.client {
        ClientArg::ClaudeCode => Some(Client::ClaudeCode),
        ClientArg::Codex => Some(Client::Codex),
        ClientArg::Vscode => Some(Client::Vscode),
        ClientArg::Cursor => Some(Client::Cursor),
        ClientArg::None => None,
    };
    if let Some(client) = client {
        let mut args = vec!["stdio".to_owned()];
        if plan.args.profile == Profile::Secondary {
            args.extend(["--groups".to_owned(), SECONDARY_GROUPS.to_owned()]);
        }
        let launch = Launch {
            command: plan.exe.display().to_string(),
            args,
        };
        let entry = client_entry(client, &client.config_path(&plan.home, env), &launch, dry)?;
        changed |= entry["action"] == "written";
        out["client"] = entry;
    }
    out["changed"] = changed.into();
    Ok(out)
}

/// `git --version` and the like: whether `program` runs, and the first line it prints.
fn version_of(program: &str, args: &[&str]) -> Value {
    let mut spec = Spec::new(program).args(args);
    spec.timeout = Duration::from_secs(10);
    spec.max_output = 4096;
    match coremcp_spawn::run(&spec, None) {
        Ok(done) => {
            let text = String::from_utf8_lossy(&done.stdout.bytes);
            let line = text.lines().next().unwrap_or_default().trim().to_owned();
            json!({"name": program, "found": true, "version": line})
        }
        Err(SpawnError::NotFound { .. }) => json!({"name": program, "found": false}),
        Err(e) => json!({"name": program, "found": true, "error": e.to_string()}),
    }
}

fn folder(role: &str, path: &Path, dry: bool) -> Result<Value, ToolError> {
    let shown = path.display().to_string();
    if path.is_dir() {
        return Ok(json!({"role": role, "path": shown, "action": "exists"}));
    }
    if dry {
        return Ok(json!({"role": role, "path": shown, "action": "would_create"}));
    }
    std::fs::create_dir_all(path)
        .map_err(|e| ToolError::new(codes::FAILED, format!("bootstrap: creating {shown}: {e}")))?;
    Ok(json!({"role": role, "path": shown, "action": "created"}))
}

/// Merges Core MCP's entry into `client`'s file at `path`: `unchanged`, `would_write` or
/// `written` (with the backup's path when there was a file).
fn client_entry(
    client: Client,
    path: &Path,
    launch: &Launch,
    dry: bool,
) -> Result<Value, ToolError> {
    let shown = path.display().to_string();
    let failed =
        |what: String| ToolError::new(codes::FAILED, format!("bootstrap: {shown}: {what}"));
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(failed(e.to_string())),
    };
    let mut out = json!({"client": client.name(), "path": shown, "entry": crate::clients::ENTRY,
                         "command": launch.command, "args": launch.args});
    let merged = client
        .merge(existing.as_deref(), launch)
        .map_err(|why| failed(format!("{why}; the file was left as it is")))?;
    let Some(text) = merged else {
        out["action"] = "unchanged".into();
        return Ok(out);
    };
    if dry {
        out["action"] = "would_write".into();
        return Ok(out);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
    }
    if existing.is_some() {
        let stamp = coremcp_plugin_sdk::time::now_rfc3339().replace([':', '-'], "");
        let backup = PathBuf::from(format!("{shown}.coremcp-backup-{stamp}"));
        std::fs::copy(path, &backup).map_err(|e| failed(format!("backing it up: {e}")))?;
        out["backup"] = backup.display().to_string().into();
    }
    coremcp_plugin_kit::atomic::write(path, text.as_bytes()).map_err(|e| failed(e.to_string()))?;
    out["action"] = "written".into();
    Ok(out)
}

/// This machine's Registry host: `added`, `updated`, `unchanged` or `would_*`; a Registry that
/// cannot be reached is reported in the entry, not as the whole call's failure.
fn register(args: &Bootstrap, env: crate::clients::Env<'_>) -> Value {
    let name = machine_name();
    let port = env("COREMCP_LISTEN")
        .and_then(|l| l.rsplit_once(':').map(|(_, p)| p.to_owned()))
        .filter(|p| !p.is_empty() && p != "0")
        .unwrap_or_else(|| DEFAULT_PORT.to_owned());
    let url = format!("http://{name}:{port}/mcp");
    let mut out = json!({"name": name, "core_mcp_url": url});
    let call = |tool: &str, args: Value| {
        coremcp_plugin_sdk::host_call("registry.call", &json!({"tool": tool, "args": args}))
    };
    let found = match call("registry_host_list", json!({"name": name, "status": "all"})) {
        Ok(page) => page["items"].as_array().and_then(|i| i.first()).cloned(),
        Err(e) => {
            out["action"] = "failed".into();
            out["error"] = e.message.as_str().into();
            return out;
        }
    };
    let (action, result) = match found {
        Some(host) if host["core_mcp_url"] == url.as_str() && host["enabled"] == true => {
            ("unchanged", None)
        }
        Some(_) if args.dry_run => ("would_update", None),
        None if args.dry_run => ("would_add", None),
        Some(_) => (
            "updated",
            Some(call(
                "registry_host_update",
                json!({"name": name, "core_mcp_url": url, "enabled": true}),
            )),
        ),
        None => (
            "added",
            Some(call(
                "registry_host_add",
                json!({"name": name, "address": name, "core_mcp_url": url}),
            )),
        ),
    };
    match result {
        Some(Err(e)) => {
            out["action"] = "failed".into();
            out["error"] = e.message.as_str().into();
        }
        _ => out["action"] = action.into(),
    }
    out
}

/// This machine's name as a Registry host name (`^[a-z0-9][a-z0-9-]{0,62}$`).
pub fn machine_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    host_name(&raw)
}

/// `raw` (a hostname) as a Registry host name: lowercase, the first label, other characters as
/// `-`, at most 63 characters; `localhost` when nothing is left.
pub fn host_name(raw: &str) -> String {
    let first = raw
        .trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut name: String = first
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name = name.trim_matches('-').chars().take(63).collect();
    if name.is_empty() {
        "localhost".into()
    } else {
        name
    }
}
