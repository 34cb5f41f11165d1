//! What keeps git from running a program a repository's own configuration names.
//!
//! A repository's `config` (and `config.worktree`, and what they include) is as writable as
//! any file in the roots, so a program it names is not the user's choice: whoever wrote the
//! file would run code through the next git tool. [`Guards`] are the `-c` settings and
//! options that set every such program back to the user's own (global or system) value or to
//! git's default, for a read and for a write.
//!
//! Invariants:
//! - Only what the repository's own scopes (`local`, `worktree`) set is touched; the user's
//!   global and system settings are theirs and keep working.
//! - A setting git reads "last wins" is overridden with `-c`; one it reads "first wins" (a
//!   remote's `receivepack`/`uploadpack`, `core.gitProxy`) gets a command-line option or a
//!   protocol switch instead, since a `-c` after the repository's value would not count.
//! - A repository with no program setting and no include costs no run of git: its config
//!   files are read as text first.
//! - The repository's hooks are not guarded: they are its own, and `repo_setup` enables the
//!   tracked ones only when asked.

use std::path::{Path, PathBuf};

use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{codes, Ctx};

use crate::{invoke, Mode};

/// The guards of one repository (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guards {
    /// `-c` settings for a read: every filter driver the repository declares switched off (a
    /// read of a file through one would run its `clean` program).
    pub read: Vec<String>,
    /// `-c` settings for a write (add, commit, fetch, push): every program setting the
    /// repository makes for itself set back to the user's value or git's default.
    pub write: Vec<String>,
    /// The pack programs the repository names for a remote, set back by an option.
    packs: Vec<Pack>,
}

/// A remote's `receivepack` or `uploadpack`, which git reads "first wins".
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pack {
    remote: String,
    /// The subcommand option that overrides it (`--receive-pack=`, `--upload-pack=`).
    option: &'static str,
    value: String,
}

/// A program setting, and what git does without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Program {
    /// Read "last wins": `-c key=value` with the user's value or this default.
    Setting(&'static str),
    /// `core.gitProxy` ("first wins", only for `git://`): that protocol is switched off.
    Proxy,
    /// A credential helper (a list; an empty value empties it): emptied, then the user's own
    /// helpers added back.
    Credential,
    /// A remote's pack program: the option that overrides it, and its default.
    Pack(&'static str, &'static str),
}

/// Settings git reads "last wins" whose value it runs, with git's default for each.
const SETTINGS: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.sshcommand", "ssh"),
    ("core.askpass", ""),
    ("gpg.program", "gpg"),
    ("gpg.openpgp.program", "gpg"),
    ("gpg.x509.program", "gpgsm"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("gpg.ssh.defaultkeycommand", ""),
];

/// What git would run for `key` (`section[.subsection].name`, section and name in lower case,
/// the subsection as written, as `git config` prints keys), if anything.
fn program(key: &str) -> Option<Program> {
    if let Some((_, default)) = SETTINGS.iter().find(|(name, _)| *name == key) {
        return Some(Program::Setting(default));
    }
    if key == "core.gitproxy" {
        return Some(Program::Proxy);
    }
    if key == "credential.helper" || (key.starts_with("credential.") && key.ends_with(".helper")) {
        return Some(Program::Credential);
    }
    let rest = key.strip_prefix("remote.")?;
    if rest.ends_with(".receivepack") {
        return Some(Program::Pack("--receive-pack=", "git-receive-pack"));
    }
    if rest.ends_with(".uploadpack") {
        return Some(Program::Pack("--upload-pack=", "git-upload-pack"));
    }
    None
}

/// What `git config --get-regexp` is asked for when the files' text is not enough.
const KEYS_ASKED: &str = r"^(filter\..*|core\.(fsmonitor|sshcommand|askpass|gitproxy)|gpg\.(.*\.)?(program|defaultkeycommand)|credential\.(.*\.)?helper|remote\..*\.(receivepack|uploadpack))$";

/// The guards of the repository whose git directories are `git_dirs`, found from `cwd`.
pub fn guards(
    ctx: &Ctx<'_>,
    cwd: &Path,
    ceilings: &str,
    git_dirs: &[&Path],
) -> Result<Guards, ToolError> {
    let mut found = Sections::default();
    for dir in git_dirs {
        for file in ["config", "config.worktree"] {
            if let Ok(text) = std::fs::read_to_string(dir.join(file)) {
                found.add(config_sections(&text));
            }
        }
    }
    if !found.includes && found.programs.is_empty() {
        return from_filters(found.filters);
    }
    // Something to set back, or an include to follow: git itself says what every scope sets
    // (including what an include names), which also gives the user's own values.
    let args: Vec<String> = ["config", "--includes", "--show-scope", "-z", "--get-regexp"]
        .iter()
        .map(|a| (*a).to_owned())
        .chain([KEYS_ASKED.to_owned()])
        .collect();
    let out = invoke(ctx, cwd, ceilings, Mode::Read, &args)?;
    // Exit 1 is "nothing matched".
    if !out.success() && out.code != 1 {
        return Err(crate::failure(&args, &out));
    }
    decide(&scoped_entries(&out.stdout.bytes))
}

/// [`guards`] for the repository git finds from `cwd`, asking git where its git directories
/// are; no guards where there is no repository (a clone's parent folder).
pub fn guards_at(ctx: &Ctx<'_>, cwd: &Path, ceilings: &str) -> Result<Guards, ToolError> {
    let args: Vec<String> = ["rev-parse", "--absolute-git-dir", "--git-common-dir"]
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    let out = invoke(ctx, cwd, ceilings, Mode::Read, &args)?;
    if !out.success() {
        return Ok(Guards::default());
    }
    let dirs: Vec<PathBuf> = out.text().lines().map(|l| cwd.join(l)).collect();
    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    guards(ctx, cwd, ceilings, &dirs)
}

impl Guards {
    /// `args` of a write with the pack option its remote needs inserted after the subcommand
    /// (`push` and `fetch` name their remote as the first argument that is not an option).
    ///
    /// A push or fetch that names no remote, in a repository that sets a pack program, is
    /// refused: git would pick the remote from the repository's own config.
    pub fn write_args(&self, args: &[String]) -> Result<Vec<String>, ToolError> {
        let Some((sub, rest)) = args.split_first() else {
            return Ok(Vec::new());
        };
        let option = match sub.as_str() {
            "push" => "--receive-pack=",
            "fetch" | "pull" | "ls-remote" => "--upload-pack=",
            _ => return Ok(args.to_vec()),
        };
        let packs: Vec<&Pack> = self.packs.iter().filter(|p| p.option == option).collect();
        if packs.is_empty() {
            return Ok(args.to_vec());
        }
        let Some(remote) = rest.iter().find(|a| !a.starts_with('-')) else {
            return Err(ToolError::new(
                codes::NOT_CONFIGURED,
                format!(
                    "the repository's config sets a remote's {} program: git {sub} must name \
                     its remote",
                    option.trim_start_matches("--").trim_end_matches('=')
                ),
            ));
        };
        let mut out = vec![sub.clone()];
        if let Some(pack) = packs.iter().find(|p| &p.remote == remote) {
            out.push(format!("{option}{}", pack.value));
        }
        out.extend(rest.iter().cloned());
        Ok(out)
    }
}

/// One entry of `git config --show-scope -z --get-regexp`: scope, key, value (none for a
/// key written without `=`).
type Entry = (String, String, Option<String>);

fn scoped_entries(bytes: &[u8]) -> Vec<Entry> {
    let text = String::from_utf8_lossy(bytes);
    let mut parts = text.split('\0');
    let mut entries = Vec::new();
    while let (Some(scope), Some(item)) = (parts.next(), parts.next()) {
        let (key, value) = match item.split_once('\n') {
            Some((key, value)) => (key, Some(value.to_owned())),
            None => (item, None),
        };
        entries.push((scope.to_owned(), key.to_owned(), value));
    }
    entries
}

/// Whether `scope` is the repository's own.
fn own(scope: &str) -> bool {
    matches!(scope, "local" | "worktree")
}

/// Whether `scope` is the user's (git's `command` scope is Core MCP's own `-c`).
fn users(scope: &str) -> bool {
    matches!(scope, "global" | "system")
}

/// The guards for what every scope sets (in git's order: system, global, local, worktree).
fn decide(entries: &[Entry]) -> Result<Guards, ToolError> {
    let mut filters = Vec::new();
    let mut programs: Vec<(&str, Program)> = Vec::new();
    for (_, key, _) in entries.iter().filter(|(scope, ..)| own(scope)) {
        if let Some(name) = key
            .strip_prefix("filter.")
            .and_then(|rest| rest.rsplit_once('.'))
            .map(|(name, _)| name)
        {
            filters.push(name.to_owned());
        } else if let Some(kind) = program(key) {
            programs.push((key.as_str(), kind));
        }
    }
    let mut guards = from_filters(filters)?;
    programs.sort_by(|a, b| a.0.cmp(b.0));
    programs.dedup_by(|a, b| a.0 == b.0);
    // The user's last value of `key` (git reads these "last wins").
    let user_value = |key: &str| {
        entries
            .iter()
            .filter(|(scope, k, _)| users(scope) && k == key)
            .filter_map(|(_, _, value)| value.clone())
            .next_back()
    };
    let mut credentials = false;
    for (key, kind) in programs {
        match kind {
            Program::Setting(default) => {
                let value = user_value(key).unwrap_or_else(|| default.to_owned());
                guards.write.push(setting(key, &value)?);
            }
            Program::Proxy => guards.write.push("protocol.git.allow=never".to_owned()),
            Program::Credential => credentials = true,
            Program::Pack(option, default) => {
                let remote = key
                    .strip_prefix("remote.")
                    .and_then(|rest| rest.rsplit_once('.'))
                    .map_or("", |(remote, _)| remote);
                guards.packs.push(Pack {
                    remote: remote.to_owned(),
                    option,
                    value: user_value(key).unwrap_or_else(|| default.to_owned()),
                });
            }
        }
    }
    if credentials {
        // An empty helper empties the list so far; the user's own come back in their order.
        guards.write.push("credential.helper=".to_owned());
        for (_, key, value) in entries
            .iter()
            .filter(|(scope, key, _)| users(scope) && program(key) == Some(Program::Credential))
        {
            guards
                .write
                .push(setting(key, value.as_deref().unwrap_or_default())?);
        }
    }
    Ok(guards)
}

/// `key=value` for `-c`, refused where git would split it elsewhere.
fn setting(key: &str, value: &str) -> Result<String, ToolError> {
    if key.contains(['=', '\n', '\0']) || value.contains('\0') {
        return Err(refuse("the setting", key));
    }
    Ok(format!("{key}={value}"))
}

fn refuse(what: &str, name: &str) -> ToolError {
    ToolError::new(
        codes::NOT_CONFIGURED,
        format!(
            "the repository configures {what} {name:?}, which cannot be switched off; rename \
             it in its .git/config"
        ),
    )
}

/// The read guards for `filters`, the names of the repository's own filter drivers.
fn from_filters(mut filters: Vec<String>) -> Result<Guards, ToolError> {
    filters.sort();
    filters.dedup();
    let mut guards = Guards::default();
    for name in &filters {
        if name.contains(['=', '\n', '\0']) {
            return Err(refuse("a filter driver named", name));
        }
        for key in ["clean", "smudge", "process"] {
            guards.read.push(format!("filter.{name}.{key}="));
        }
        guards.read.push(format!("filter.{name}.required=false"));
    }
    Ok(guards)
}

/// What a git configuration file's text declares: its filter drivers' names, the program
/// settings it makes (keys as `git config` prints them), and whether it includes other files.
#[derive(Debug, Default, PartialEq, Eq)]
struct Sections {
    filters: Vec<String>,
    programs: Vec<String>,
    includes: bool,
}

impl Sections {
    fn add(&mut self, more: Sections) {
        self.filters.extend(more.filters);
        self.programs.extend(more.programs);
        self.includes |= more.includes;
    }
}

fn config_sections(text: &str) -> Sections {
    let mut found = Sections::default();
    // The section (lower case) and subsection (as written) the lines are in.
    let mut current = String::new();
    for line in text.lines().map(str::trim_start) {
        let line = if let Some(header) = line.strip_prefix('[') {
            let Some((header, after)) = header.split_once(']') else {
                continue;
            };
            let (section, subsection) = match header.split_once(char::is_whitespace) {
                Some((section, rest)) => (
                    section,
                    Some(rest.trim().trim_matches('"').replace("\\\"", "\"")),
                ),
                None => match header.split_once('.') {
                    // The old form, `[section.subsection]`.
                    Some((section, name)) => (section, Some(name.to_owned())),
                    None => (header, None),
                },
            };
            let section = section.to_ascii_lowercase();
            if section == "include" || section == "includeif" {
                found.includes = true;
            }
            if section == "filter" {
                if let Some(name) = &subsection {
                    found.filters.push(name.clone());
                }
            }
            current = match subsection {
                Some(sub) => format!("{section}.{sub}"),
                None => section,
            };
            // A key may follow the header on its line.
            after.trim_start()
        } else {
            line
        };
        if line.starts_with(['#', ';']) || line.is_empty() {
            continue;
        }
        let name = line
            .split(|c: char| c == '=' || c.is_whitespace())
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let key = format!("{current}.{name}");
        if program(&key).is_some() {
            found.programs.push(key);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configs_filter_drivers_and_includes_are_found() {
        let found = config_sections(
            "[core]\n\tbare = false\n[filter \"lfs\"]\n\tclean = git-lfs clean\n\
             [Filter \"a.b\"] smudge = evil\n[filter.old]\n[remote \"origin\"]\n",
        );
        assert_eq!(found.filters, ["lfs", "a.b", "old"]);
        assert!(found.programs.is_empty());
        assert!(!found.includes);
        assert!(config_sections("[include]\n\tpath = other\n").includes);
        assert!(config_sections("[includeIf \"gitdir:~/w/\"]\n\tpath = x\n").includes);
    }

    #[test]
    fn a_configs_own_programs_are_found_whatever_their_case() {
        let found = config_sections(
            "[core]\n\tbare = false\n\tfsmonitor = ./watch\n\tsshCommand=evil\n\
             # askpass = commented\n[Core] GitProxy = proxy\n\
             [remote \"origin\"]\n\turl = x\n\treceivePack = evil\n\
             [remote \"a.b\"]\n\tuploadpack\n[user]\n\tfsmonitor = not core\n\
             [gpg \"ssh\"]\n\tprogram = evil\n[credential \"https://h\"]\n\thelper = !evil\n",
        );
        assert_eq!(
            found.programs,
            [
                "core.fsmonitor",
                "core.sshcommand",
                "core.gitproxy",
                "remote.origin.receivepack",
                "remote.a.b.uploadpack",
                "gpg.ssh.program",
                "credential.https://h.helper",
            ]
        );
        assert!(found.filters.is_empty());
    }

    fn entry(scope: &str, key: &str, value: &str) -> Entry {
        (scope.into(), key.into(), Some(value.into()))
    }

    #[test]
    fn the_repositorys_programs_go_back_to_the_users_or_gits_own() {
        let guards = decide(&[
            entry("global", "core.sshcommand", "ssh -i mine"),
            entry("global", "credential.helper", "store"),
            entry("local", "core.sshcommand", "evil"),
            entry("local", "core.fsmonitor", "./watch"),
            entry("worktree", "credential.https://h.helper", "!evil"),
            entry("local", "core.gitproxy", "evil"),
            entry("local", "remote.origin.receivepack", "evil"),
            entry("local", "filter.lfs.clean", "evil"),
            entry("command", "core.fsmonitor", "false"),
        ])
        .expect("guards");
        assert_eq!(
            guards.write,
            [
                "core.fsmonitor=false",
                "protocol.git.allow=never",
                "core.sshcommand=ssh -i mine",
                "credential.helper=",
                "credential.helper=store",
            ]
        );
        assert!(guards.read.contains(&"filter.lfs.clean=".to_owned()));
        let push = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
            guards.write_args(&args)
        };
        assert_eq!(
            push(&["push", "--porcelain", "origin", "main"]).expect("args"),
            [
                "push",
                "--receive-pack=git-receive-pack",
                "--porcelain",
                "origin",
                "main"
            ]
        );
        assert_eq!(
            push(&["push", "other", "main"]).expect("args"),
            ["push", "other", "main"],
            "another remote's setting is not this one's"
        );
        assert_eq!(
            push(&["fetch", "origin"]).expect("args"),
            ["fetch", "origin"],
            "no uploadpack was set"
        );
        assert!(push(&["push", "--porcelain"]).is_err(), "git would choose");
        assert_eq!(
            push(&["commit", "-m", "x"]).expect("args"),
            ["commit", "-m", "x"]
        );
    }

    #[test]
    fn a_key_git_would_split_elsewhere_is_refused() {
        assert!(decide(&[
            entry("global", "credential.https://h?a=b.helper", "mine"),
            entry("local", "credential.helper", "!evil"),
        ])
        .is_err());
        assert!(
            decide(&[entry("local", "credential.https://h?a=b.helper", "!evil")]).is_ok(),
            "emptying the list needs no key of the repository's"
        );
        assert!(decide(&[entry("local", "filter.a=b.clean", "x")]).is_err());
    }

    #[test]
    fn the_entries_of_git_config_z_are_read() {
        let entries = scoped_entries(b"global\0credential.helper\nstore\0local\0core.sshcommand\na\nb\0local\0core.askpass\0");
        assert_eq!(
            entries,
            [
                entry("global", "credential.helper", "store"),
                entry("local", "core.sshcommand", "a\nb"),
                ("local".into(), "core.askpass".into(), None),
            ]
        );
    }
}
