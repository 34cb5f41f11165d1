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
//! - The Registry host it registers is reachable as the operator said (`--advertise URL`,
//!   `COREMCP_ADVERTISE_URL`), never a guessed `http://<hostname>:7070/mcp`; without that
//!   address `register_host` is refused before anything changes.
//! - The secondary profile's client entry runs the secondary build (its binary, beside which
//!   its plugins are), where the docs tools stay listed and answer that their feature is not in
//!   this build; it is never this build with a `--groups` list that would hide them.
//! - A client's entry starts Core MCP with the `--groups` the README recommends for it
//!   (`dynamic` for Claude Code, which lists again; `search` for Codex, which never does),
//!   unless the user set `COREMCP_GROUPS`. No credential is written in any form: a setting
//!   whose name, value or arguments name one is left out of Codex's `env` table and named in
//!   the answer (`left_out`, with why, never its value).

use std::path::{Path, PathBuf};
use std::time::Duration;

use coremcp_plugin_sdk::prelude::*;
use coremcp_spawn::{SpawnError, Spec};

use crate::clients::{Client, Launch};

pub const TOOL: Tool = Tool::typed("bootstrap", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Prepare this machine: check prerequisites, create folders, merge the client's MCP entry
/// (backed up), optionally register the host. Idempotent.
#[derive(Debug, Args)]
pub struct Bootstrap {
    /// client whose MCP entry to write
    #[arg(default = ClientArg::None)]
    client: ClientArg,
    /// secondary: the build without docs tools
    #[arg(default = Profile::Default)]
    profile: Profile,
    /// add this machine at its --advertise URL
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

/// The host configuration key of the URL other machines reach this Core MCP at.
const ADVERTISE_KEY: &str = "advertise.url";

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
    // Both refusals come before anything changes.
    let advertise = coremcp_plugin_sdk::config(ADVERTISE_KEY);
    if args.register_host && advertise.is_none() {
        return Err(ToolError::new(
            codes::NOT_CONFIGURED,
            "bootstrap register_host: this Core MCP has no address other machines reach it at; \
             start it with --advertise URL or set COREMCP_ADVERTISE_URL (e.g. \
             http://devbox.example:7070/mcp, where a `coremcp serve` listens), then call again. \
             Nothing was changed",
        ));
    }
    let exe = match args.profile {
        Profile::Default => exe,
        Profile::Secondary => secondary_install(&exe)?,
    };
    let plan = Plan {
        home: PathBuf::from(home),
        exe,
        plugins: coremcp_plugin_sdk::config("plugins.dir").map(PathBuf::from),
        publish: coremcp_plugin_sdk::config("publish.cmd"),
        client_env: crate::clients::client_env(std::env::vars()),
        args,
    };
    let mut out = run(&plan, &env)?;
    if let (true, Some(url)) = (plan.args.register_host, advertise) {
        let host = register(&plan.args, &url);
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
    /// The Core MCP settings a client entry that needs them carries, and those it leaves out
    /// (`clients::client_env`).
    pub client_env: crate::clients::ClientEnv,
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
        // The README's `--groups` for the client, unless the user chose their own.
        let chosen = env("COREMCP_GROUPS").is_some_and(|g| !g.trim().is_empty());
        if let (Some(groups), false) = (client.recommended_groups(), chosen) {
            args.extend(["--groups".to_owned(), groups.to_owned()]);
        }
        // Only Codex needs the settings written: the other clients pass their environment on.
        let codex = client == Client::Codex;
        let launch = Launch {
            command: plan.exe.display().to_string(),
            args,
            env: match codex {
                true => plan.client_env.kept.clone(),
                false => Vec::new(),
            },
        };
        let mut entry = client_entry(client, &client.config_path(&plan.home, env), &launch, dry)?;
        if codex && !plan.client_env.left_out.is_empty() {
            entry["left_out"] = plan
                .client_env
                .left_out
                .iter()
                .map(|(name, why)| json!({"name": name, "why": why}))
                .collect::<Vec<_>>()
                .into();
        }
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
    if !launch.env.is_empty() {
        // The names only: a value may be a path the caller need not see again.
        let names: Vec<&str> = launch.env.iter().map(|(k, _)| k.as_str()).collect();
        out["env"] = names.into();
    }
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

/// The secondary build's `coremcp` for a client entry: this one when it is the secondary
/// install (`<dist>/secondary/bin/coremcp`), else the one beside this install.
pub fn secondary_install(exe: &Path) -> Result<PathBuf, ToolError> {
    let root = exe.parent().and_then(Path::parent);
    if root
        .and_then(Path::file_name)
        .is_some_and(|n| n == "secondary")
    {
        return Ok(exe.to_owned());
    }
    let beside = root
        .and_then(Path::parent)
        .map(|dist| dist.join("secondary/bin/coremcp"));
    match beside {
        Some(path) if path.is_file() => Ok(path),
        _ => {
            Err(ToolError::new(
                codes::NOT_CONFIGURED,
                format!(
                "bootstrap profile secondary: the client runs the secondary build, and there is \
                 none beside this one ({}); lay it out with scripts/build --profile secondary \
                 (into the same dist folder), or run bootstrap from the secondary build's \
                 coremcp. Nothing was changed",
                beside.map_or_else(|| "no install folder".to_owned(), |p| p.display().to_string())
            ),
            ))
        }
    }
}

/// The Registry host (name and address) `url` names: the host part of the URL.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.to_owned()
}

/// This machine's Registry host, at `url`: `added`, `updated`, `unchanged` or `would_*`; a
/// Registry that cannot be reached is reported in the entry, not as the whole call's failure.
fn register(args: &Bootstrap, url: &str) -> Value {
    let name = machine_name();
    let address = host_of(url);
    let mut out = json!({"name": name, "core_mcp_url": url, "address": address});
    let call = coremcp_plugin_kit::registry::call;
    let found = match call("registry_host_list", json!({"name": name, "status": "all"})) {
        Ok(page) => page["items"].as_array().and_then(|i| i.first()).cloned(),
        Err(e) => {
            out["action"] = "failed".into();
            out["error"] = e.message.as_str().into();
            return out;
        }
    };
    let (action, result) = match found {
        Some(host) if host["core_mcp_url"] == url && host["enabled"] == true => ("unchanged", None),
        Some(_) if args.dry_run => ("would_update", None),
        None if args.dry_run => ("would_add", None),
        Some(_) => (
            "updated",
            Some(call(
                "registry_host_update",
                json!({"name": name, "address": address, "core_mcp_url": url, "enabled": true}),
            )),
        ),
        None => (
            "added",
            Some(call(
                "registry_host_add",
                json!({"name": name, "address": address, "core_mcp_url": url}),
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

pub use coremcp_plugin_kit::machine::{host_name, machine_name};
