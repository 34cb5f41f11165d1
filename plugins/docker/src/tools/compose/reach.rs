//! What a Compose project reaches on this machine, read from its files before Compose runs:
//! the files it reads (`env_file`, `extends`, `include`, `secrets`/`configs` files,
//! `label_file`, build contexts and Dockerfiles), the host paths it bind-mounts, and its
//! privileged services.
//!
//! Paths are placed as Compose places them: `${VAR}` forms interpolated from the environment
//! Compose will get (the scrubbed one, then the project's `.env`), `~` from `HOME`, relative
//! ones from the folder of the file that names them (`include` from its own
//! `project_directory`), `..` followed, symlinks of the part that exists resolved. A value
//! that cannot be placed (an unset variable with `:?`, a malformed `${`) is reported as such,
//! so the caller can refuse it rather than guess.
//!
//! Invariants:
//! - A file is read here only after `may_read` allowed it (the caller confines reads of the
//!   actions that need no grant), and at most [`MAX_FILES`] files, [`MAX_DEPTH`] deep, each
//!   once.
//! - Nothing here runs Compose or touches the daemon.

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};

use coremcp_plugin_sdk::prelude::*;

/// Compose files read at most (the ones given, `include`d and `extends`ed).
pub const MAX_FILES: usize = 64;
/// How deep `include` and `extends` are followed.
pub const MAX_DEPTH: usize = 8;
/// The largest Compose file read.
const MAX_FILE_BYTES: u64 = 4 << 20;

/// One path a project reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// Where it is named: `services.web.env_file` (in `file`).
    pub field: String,
    /// A bind mount's host side (else a file Compose or the build reads).
    pub mount: bool,
    /// A bind mount the container may only read.
    pub read_only: bool,
    /// The path, or why it cannot be placed.
    pub path: Result<PathBuf, String>,
}

/// What a project reaches.
#[derive(Debug, Default)]
pub struct Reach {
    pub paths: Vec<Reached>,
    /// What its services are given of the host besides mounts ([`super::host_access`]), in
    /// words: "service web runs privileged".
    pub host_access: Vec<String>,
}

/// The variables Compose interpolates with.
pub type Vars = BTreeMap<String, String>;

/// The variables of a project in `dir` whose Compose process gets `env`: `env`, then the
/// project's `.env` for what `env` does not set. `.env` is read like every other file of the
/// project: where it really is (a symlink followed) and only after `may_read` allowed that
/// path; its values are interpolated as Compose's dotenv reader does ([`dotenv`]).
pub fn vars(
    dir: &Path,
    env: impl IntoIterator<Item = (String, String)>,
    may_read: &dyn Fn(&str, &Path) -> Result<(), ToolError>,
) -> Result<Vars, ToolError> {
    let env: Vars = env.into_iter().collect();
    let file = dir.join(".env");
    let mut vars = match file.canonicalize() {
        // A dangling link or no file: Compose reads none either.
        Err(_) => Vars::new(),
        Ok(real) if !real.is_file() => Vars::new(),
        Ok(real) => {
            may_read(".env", &real)?;
            dotenv(&read_text(&real)?, &env)
        }
    };
    vars.extend(env);
    Ok(vars)
}

/// `KEY=VALUE` lines as Compose's dotenv readers take them: `export ` allowed, `#` comments
/// (after a space, for an unquoted value), single-quoted values literal, double-quoted ones
/// with their escapes; unquoted and double-quoted values interpolated, a name looked up among
/// the lines before it first and then in `env`.
pub fn dotenv(text: &str, env: &Vars) -> Vars {
    let mut vars = Vars::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().to_owned();
        let value = value.trim_start();
        let value = if let Some(rest) = value.strip_prefix('\'') {
            rest.split_once('\'').map_or(rest, |(v, _)| v).to_owned()
        } else if let Some(rest) = value.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = rest.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('n') => out.push('\n'),
                        Some('t') => out.push('\t'),
                        Some(other) => out.push(other),
                        None => break,
                    },
                    other => out.push(other),
                }
            }
            expand_with(&out, &vars, env)
        } else {
            let cut = value.find(" #").or_else(|| value.find("\t#"));
            let value = cut.map_or(value, |at| &value[..at]).trim_end();
            expand_with(value, &vars, env)
        };
        vars.insert(key, value);
    }
    vars
}

/// `text` interpolated with `earlier` (the lines before) first, then `env`; kept as written
/// when it does not interpolate (Compose refuses such a file anyway).
fn expand_with(text: &str, earlier: &Vars, env: &Vars) -> String {
    if !text.contains('$') {
        return text.to_owned();
    }
    let mut both = env.clone();
    both.extend(earlier.iter().map(|(k, v)| (k.clone(), v.clone())));
    interpolate(text, &both).unwrap_or_else(|_| text.to_owned())
}

/// Reads the project of `files` (the Compose files, canonical, in order) whose project folder
/// is `dir`; `may_read` is asked before any file is read, with where it is named and its path.
pub fn read(
    dir: &Path,
    files: &[PathBuf],
    vars: &Vars,
    may_read: &dyn Fn(&str, &Path) -> Result<(), ToolError>,
) -> Result<Reach, ToolError> {
    let mut walk = Walk {
        vars,
        may_read,
        reach: Reach::default(),
        seen: HashSet::new(),
    };
    for file in files {
        walk.file("the Compose file", file, dir, None, 0)?;
    }
    Ok(walk.reach)
}

struct Walk<'a> {
    vars: &'a Vars,
    may_read: &'a dyn Fn(&str, &Path) -> Result<(), ToolError>,
    reach: Reach,
    /// Files read, with the one service asked of them (`None`: all).
    seen: HashSet<(PathBuf, Option<String>)>,
}

impl Walk<'_> {
    /// Reads `file` (named at `field`), whose relative paths start at `base`: every service,
    /// or only `only` (and what it extends) for an `extends`.
    fn file(
        &mut self,
        field: &str,
        file: &Path,
        base: &Path,
        only: Option<&str>,
        depth: usize,
    ) -> Result<(), ToolError> {
        let shown = file.display().to_string();
        if depth > MAX_DEPTH {
            return Err(refuse(format!(
                "{shown}: include and extends go more than {MAX_DEPTH} files deep"
            )));
        }
        if !self.seen.insert((file.to_owned(), only.map(str::to_owned))) {
            return Ok(());
        }
        if self.seen.len() > MAX_FILES {
            return Err(refuse(format!(
                "the project reads more than {MAX_FILES} Compose files"
            )));
        }
        (self.may_read)(field, file)?;
        let text = read_text(file)?;
        let doc: Value = serde_norway::from_str(&text).map_err(|e| {
            ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!("{shown} is not a Compose file (YAML): {e}"),
            )
        })?;
        // Merge keys at every depth, as Compose's YAML readers apply them: in a service, in
        // `services` itself, in a list item, as a list of anchors.
        let doc = merged_deep(&doc);
        if only.is_none() {
            self.includes(&doc, base, &shown, depth)?;
            for (kind, key) in [("secrets", "file"), ("configs", "file")] {
                for (name, entry) in entries(&doc[kind]) {
                    if let Some(path) = entry[key].as_str() {
                        self.note(&format!("{kind}.{name}.{key}"), &shown, base, path, false);
                    }
                }
            }
            // A named volume of the local driver can bind any host folder (`device`).
            for (name, device, read_only) in super::host_access::volume_devices(&doc, self.vars) {
                self.mount(
                    &format!("volumes.{name}.driver_opts.device"),
                    &shown,
                    base,
                    &device,
                    read_only,
                );
            }
        }
        for (name, service) in entries(&doc["services"]) {
            if only.is_some_and(|o| o != name) {
                continue;
            }
            self.service(&name, service, base, &shown, file, depth)?;
        }
        Ok(())
    }

    fn includes(
        &mut self,
        doc: &Value,
        base: &Path,
        shown: &str,
        depth: usize,
    ) -> Result<(), ToolError> {
        let Some(list) = doc["include"].as_array() else {
            return Ok(());
        };
        for (i, entry) in list.iter().enumerate() {
            let field = format!("include[{i}]");
            let (paths, project_dir, env_files) = match entry {
                Value::String(path) => (vec![path.as_str()], None, Vec::new()),
                Value::Object(_) => (
                    strings(&entry["path"]),
                    entry["project_directory"].as_str(),
                    strings(&entry["env_file"]),
                ),
                _ => continue,
            };
            for env_file in env_files {
                self.note(&format!("{field}.env_file"), shown, base, env_file, false);
            }
            for path in paths {
                let named = format!("{field}.path in {shown}");
                let Some(at) = self.note(&format!("{field}.path"), shown, base, path, false) else {
                    continue;
                };
                let own = match project_dir {
                    Some(dir) => place(base, dir, self.vars).ok(),
                    None => at.parent().map(Path::to_path_buf),
                };
                let own = own.unwrap_or_else(|| base.to_owned());
                self.file(&named, &at, &own, None, depth + 1)?;
            }
        }
        Ok(())
    }

    fn service(
        &mut self,
        name: &str,
        service: &Value,
        base: &Path,
        shown: &str,
        file: &Path,
        depth: usize,
    ) -> Result<(), ToolError> {
        let at = |key: &str| format!("services.{name}.{key}");
        for (i, env_file) in env_files(&service["env_file"]).into_iter().enumerate() {
            self.note(
                &format!("{}[{i}]", at("env_file")),
                shown,
                base,
                env_file,
                false,
            );
        }
        for label_file in strings(&service["label_file"]) {
            self.note(&at("label_file"), shown, base, label_file, false);
        }
        let interpolated = interpolated(service, self.vars);
        self.reach
            .host_access
            .extend(super::host_access::service(name, &interpolated));
        match &service["build"] {
            Value::String(context) => self.context(&at("build"), shown, base, context, None),
            build @ Value::Object(_) => {
                let context = build["context"].as_str().unwrap_or(".");
                let dockerfile = build["dockerfile"].as_str();
                self.context(&at("build.context"), shown, base, context, dockerfile);
                for (extra, path) in additional_contexts(&build["additional_contexts"]) {
                    let field = format!("{}.{extra}", at("build.additional_contexts"));
                    self.context(&field, shown, base, path, None);
                }
            }
            _ => {}
        }
        if let Some(volumes) = service["volumes"].as_array() {
            for (i, volume) in volumes.iter().enumerate() {
                let field = format!("{}[{i}]", at("volumes"));
                if let Some((source, read_only)) = bind_source(volume, self.vars) {
                    self.mount(&field, shown, base, &source, read_only);
                }
            }
        }
        match &service["extends"] {
            Value::Object(extends) => {
                let Some(parent) = extends.get("service").and_then(Value::as_str) else {
                    return Ok(());
                };
                match extends.get("file").and_then(Value::as_str) {
                    Some(other) => {
                        let named = format!("{} in {shown}", at("extends.file"));
                        if let Some(path) =
                            self.note(&at("extends.file"), shown, base, other, false)
                        {
                            let own = path
                                .parent()
                                .map_or_else(|| base.to_owned(), Path::to_path_buf);
                            self.file(&named, &path, &own, Some(parent), depth + 1)?;
                        }
                    }
                    None => self.file(shown, file, base, Some(parent), depth + 1)?,
                }
            }
            Value::String(parent) => self.file(shown, file, base, Some(parent), depth + 1)?,
            _ => {}
        }
        Ok(())
    }

    /// A build context (and its Dockerfile): a local folder, unless it is a URL or a named
    /// context of another kind.
    fn context(
        &mut self,
        field: &str,
        shown: &str,
        base: &Path,
        context: &str,
        dockerfile: Option<&str>,
    ) {
        let remote = context.contains("://")
            || context.starts_with("git@")
            || ["docker-image:", "service:", "target:", "oci-layout:"]
                .iter()
                .any(|p| context.starts_with(p));
        if remote {
            return;
        }
        let Some(folder) = self.note(field, shown, base, context, false) else {
            return;
        };
        if let Some(dockerfile) = dockerfile.filter(|d| !d.contains("://")) {
            self.note(
                &format!("{field} dockerfile"),
                shown,
                &folder,
                dockerfile,
                false,
            );
        }
    }

    /// Records `path` (named at `field` of `shown`, relative to `base`), a file Compose or
    /// the build reads; its place, if it has one.
    fn note(
        &mut self,
        field: &str,
        shown: &str,
        base: &Path,
        path: &str,
        mount: bool,
    ) -> Option<PathBuf> {
        let placed = place(base, path, self.vars);
        self.reach.paths.push(Reached {
            field: format!("{field} in {shown}"),
            mount,
            read_only: false,
            path: placed.clone(),
        });
        placed.ok()
    }

    /// Records the host side of a bind mount.
    fn mount(&mut self, field: &str, shown: &str, base: &Path, path: &str, read_only: bool) {
        self.reach.paths.push(Reached {
            field: format!("{field} in {shown}"),
            mount: true,
            read_only,
            path: place(base, path, self.vars),
        });
    }
}

/// The host side of a volume when it is a bind mount (short syntax `SRC:DST[:MODE]` whose
/// source is a path, or long syntax `type: bind`), and whether it is read-only.
pub fn bind_source(volume: &Value, vars: &Vars) -> Option<(String, bool)> {
    match volume {
        Value::String(spec) => {
            // A source is a path when it starts like one once interpolated (else a named
            // volume); a lone target is an anonymous volume.
            let spec = interpolate(spec, vars).unwrap_or_else(|_| spec.clone());
            let (source, rest) = spec.split_once(':')?;
            let path_like = source.starts_with(['.', '/', '~']);
            let read_only = rest
                .split_once(':')
                .is_some_and(|(_, mode)| mode.split(',').any(|m| m == "ro"));
            path_like.then(|| (source.to_owned(), read_only))
        }
        Value::Object(long) => {
            let bind = long.get("type").and_then(Value::as_str) == Some("bind");
            let read_only = super::host_access::truthy(long.get("read_only"));
            bind.then(|| {
                long.get("source").and_then(Value::as_str).map(|s| {
                    (
                        interpolate(s, vars).unwrap_or_else(|_| s.to_owned()),
                        read_only,
                    )
                })
            })
            .flatten()
        }
        _ => None,
    }
}

/// Places `text` (interpolated, `~` expanded) relative to `base`: absolute, `..` followed, the
/// part that exists canonical.
pub fn place(base: &Path, text: &str, vars: &Vars) -> Result<PathBuf, String> {
    let text = interpolate(text, vars)?;
    let text = match text.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            let home = vars
                .get("HOME")
                .ok_or_else(|| format!("{text}: ~ needs HOME, which is not set"))?;
            format!("{home}{rest}")
        }
        _ => text,
    };
    if text.is_empty() {
        return Err("an empty path".to_owned());
    }
    let mut normal = PathBuf::new();
    for part in base.join(&text).components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    Ok(coremcp_plugin_kit::canonical_prefix(&normal))
}

/// Compose's interpolation: `$$`, `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME-default}`,
/// `${NAME:?error}`, `${NAME?error}`, `${NAME:+other}`, `${NAME+other}` (defaults may nest).
/// An unset variable is empty, as Compose makes it.
pub fn interpolate(text: &str, vars: &Vars) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(inner) = rest.strip_prefix('{') {
            let end = closing(inner).ok_or_else(|| format!("{text}: an unclosed ${{"))?;
            out.push_str(&expand(&inner[..end], vars, text)?);
            rest = &inner[end + 1..];
        } else {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if len == 0 {
                out.push('$');
            } else {
                out.push_str(vars.get(&rest[..len]).map_or("", String::as_str));
            }
            rest = &rest[len..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The position of the `}` that closes a `${` whose contents start `inner`.
fn closing(inner: &str) -> Option<usize> {
    let mut depth = 0usize;
    let bytes = inner.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'{' if i > 0 && bytes[i - 1] == b'$' => depth += 1,
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// One `${…}`'s contents.
fn expand(inner: &str, vars: &Vars, text: &str) -> Result<String, String> {
    let len = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(inner.len());
    let (name, op) = inner.split_at(len);
    if name.is_empty() {
        return Err(format!("{text}: \"${{{inner}}}\" names no variable"));
    }
    let value = vars.get(name).map(String::as_str);
    let set = value.is_some();
    let non_empty = value.is_some_and(|v| !v.is_empty());
    let value = value.unwrap_or("");
    for (sign, needs) in [(":-", non_empty), ("-", set)] {
        if let Some(default) = op.strip_prefix(sign) {
            return if needs {
                Ok(value.to_owned())
            } else {
                interpolate(default, vars)
            };
        }
    }
    for (sign, needs) in [(":?", non_empty), ("?", set)] {
        if let Some(error) = op.strip_prefix(sign) {
            return if needs {
                Ok(value.to_owned())
            } else {
                Err(format!("{text}: {name} is not set ({error})"))
            };
        }
    }
    for (sign, needs) in [(":+", non_empty), ("+", set)] {
        if let Some(other) = op.strip_prefix(sign) {
            return if needs {
                interpolate(other, vars)
            } else {
                Ok(String::new())
            };
        }
    }
    if op.is_empty() {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{text}: \"${{{inner}}}\" is not a Compose interpolation"
        ))
    }
}

/// A mapping with its YAML merge keys (`<<: *anchor`, or a list of them) applied.
fn merged(value: &Value) -> Value {
    let Value::Object(map) = value else {
        return value.clone();
    };
    let mut out = serde_json::Map::new();
    for (k, v) in map {
        if k != "<<" {
            out.insert(k.clone(), v.clone());
        }
    }
    let sources: Vec<&Value> = match map.get("<<") {
        Some(Value::Array(list)) => list.iter().collect(),
        Some(one) => vec![one],
        None => Vec::new(),
    };
    for source in sources {
        if let Value::Object(fields) = merged(source) {
            for (k, v) in fields {
                out.entry(k).or_insert(v);
            }
        }
    }
    Value::Object(out)
}

/// `value` with its merge keys applied at every depth (a mapping's own first, then its
/// members'), as Compose's YAML readers apply them wherever a mapping is.
pub fn merged_deep(value: &Value) -> Value {
    match value {
        Value::Object(_) => match merged(value) {
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, merged_deep(&v))).collect())
            }
            other => other,
        },
        Value::Array(list) => Value::Array(list.iter().map(merged_deep).collect()),
        other => other.clone(),
    }
}

/// `value` with every string interpolated as Compose interpolates it (a string that cannot be
/// is kept as written).
pub fn interpolated(value: &Value, vars: &Vars) -> Value {
    match value {
        Value::String(text) if text.contains('$') => {
            Value::String(interpolate(text, vars).unwrap_or_else(|_| text.clone()))
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), interpolated(v, vars)))
                .collect(),
        ),
        Value::Array(list) => Value::Array(list.iter().map(|v| interpolated(v, vars)).collect()),
        other => other.clone(),
    }
}

/// A mapping's entries (none for anything else).
fn entries(value: &Value) -> Vec<(String, &Value)> {
    value
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v)).collect())
        .unwrap_or_default()
}

/// A string, or the strings of a list.
fn strings(value: &Value) -> Vec<&str> {
    match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// `env_file`: a path, or a list of paths and `{path, required}`.
fn env_files(value: &Value) -> Vec<&str> {
    match value {
        Value::Array(list) => list
            .iter()
            .filter_map(|e| e.as_str().or_else(|| e["path"].as_str()))
            .collect(),
        other => strings(other),
    }
}

/// `additional_contexts`: a mapping of name to path, or a list of `name=path`.
fn additional_contexts(value: &Value) -> Vec<(String, &str)> {
    match value {
        Value::Object(map) => map
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?)))
            .collect(),
        Value::Array(list) => list
            .iter()
            .filter_map(|e| {
                let (k, v) = e.as_str()?.split_once('=')?;
                Some((k.to_owned(), v))
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn read_text(file: &Path) -> Result<String, ToolError> {
    let shown = file.display();
    let meta = std::fs::metadata(file)
        .map_err(|e| ToolError::new(codes::NOT_FOUND, format!("{shown}: {e}")))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(refuse(format!(
            "{shown} is {} bytes, more than a Compose file of {MAX_FILE_BYTES} bytes",
            meta.len()
        )));
    }
    std::fs::read_to_string(file)
        .map_err(|e| ToolError::new(codes::FAILED, format!("{shown}: {e}")))
}

fn refuse(message: String) -> ToolError {
    ToolError::new(codes::INVALID_ARGUMENTS, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vars {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn interpolation_follows_compose() {
        let v = vars(&[("A", "a"), ("EMPTY", "")]);
        for (text, expected) in [
            ("${A}/x", "a/x"),
            ("$A/x", "a/x"),
            ("$$A", "$A"),
            ("${NOPE}", ""),
            ("${NOPE:-d}", "d"),
            ("${EMPTY:-d}", "d"),
            ("${EMPTY-d}", ""),
            ("${NOPE:-${A}}", "a"),
            ("${A:+alt}", "alt"),
            ("${NOPE:+alt}", ""),
            ("${A:?x}", "a"),
            ("plain", "plain"),
        ] {
            assert_eq!(interpolate(text, &v).as_deref(), Ok(expected), "{text}");
        }
        for bad in ["${NOPE:?needed}", "${A", "${}", "${A!}"] {
            assert!(interpolate(bad, &v).is_err(), "{bad}");
        }
    }

    #[test]
    fn paths_are_placed_as_compose_places_them() {
        let v = vars(&[("HOME", "/home/u"), ("D", "/srv")]);
        let base = Path::new("/nonexistent-compose-base/proj");
        assert_eq!(
            place(base, "../shared/.env", &v),
            Ok(PathBuf::from("/nonexistent-compose-base/shared/.env"))
        );
        assert_eq!(place(base, "~/x", &v), Ok(PathBuf::from("/home/u/x")));
        assert_eq!(place(base, "${D}/data", &v), Ok(PathBuf::from("/srv/data")));
        assert_eq!(place(base, "/../..", &v), Ok(PathBuf::from("/")));
        assert!(place(base, "${X:?set it}", &v).is_err());
    }

    #[test]
    fn bind_mounts_are_told_from_named_volumes() {
        let v = vars(&[("ROOT", "/")]);
        for (volume, expected) in [
            (json!("./data:/data"), Some(("./data", false))),
            (json!("/:/host:ro"), Some(("/", true))),
            (json!("/srv:/srv:ro,z"), Some(("/srv", true))),
            (json!("${ROOT}:/host"), Some(("/", false))),
            (json!("~/.ssh:/root/.ssh"), Some(("~/.ssh", false))),
            (json!("named:/data"), None),
            (json!("/anonymous"), None),
            (
                json!({"type": "bind", "source": "/var/run/docker.sock", "target": "/s"}),
                Some(("/var/run/docker.sock", false)),
            ),
            (
                json!({"type": "bind", "source": "${ROOT}", "target": "/s", "read_only": "yes"}),
                Some(("/", true)),
            ),
            (
                json!({"type": "volume", "source": "named", "target": "/d"}),
                None,
            ),
        ] {
            let found = bind_source(&volume, &v);
            let found = found.as_ref().map(|(s, ro)| (s.as_str(), *ro));
            assert_eq!(found, expected, "{volume}");
        }
    }

    #[test]
    fn dotenv_values_are_read_and_interpolated_as_compose_reads_them() {
        let env = vars(&[("HOME", "/home/u"), ("B", "from-env")]);
        let text = "# comment\nexport A=/outside\nB=${A}/secret.env\nC='${A}'\nD=\"${B}\\n\"\nE=plain # note\nF=${HOME}/x\nG=${NOPE:-${A}}\n";
        let got = dotenv(text, &env);
        assert_eq!(got["A"], "/outside");
        assert_eq!(got["B"], "/outside/secret.env", "the file's own A first");
        assert_eq!(got["C"], "${A}", "single quotes are literal");
        assert_eq!(got["D"], "/outside/secret.env\n");
        assert_eq!(got["E"], "plain");
        assert_eq!(got["F"], "/home/u/x");
        assert_eq!(got["G"], "/outside");
    }

    #[test]
    fn merge_keys_apply_at_every_depth() {
        let doc: Value = serde_norway::from_str(
            "x-v: &v {type: bind, source: /, target: /h}\nx-a: &a {env_file: ../a.env}\nx-b: &b {env_file: ../b.env, image: b}\nx-all: &all\n  web: {image: w}\nservices:\n  <<: *all\n  api:\n    <<: [*a, *b]\n    volumes:\n      - <<: *v\n",
        )
        .expect("yaml");
        let doc = merged_deep(&doc);
        assert_eq!(doc["services"]["web"]["image"], "w");
        assert_eq!(
            doc["services"]["api"]["env_file"], "../a.env",
            "the first anchor wins"
        );
        assert_eq!(doc["services"]["api"]["image"], "b");
        assert_eq!(doc["services"]["api"]["volumes"][0]["source"], "/");
        assert!(doc["services"].get("<<").is_none());
    }
}
