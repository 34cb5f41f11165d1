//! The manifest kept beside each plugin library, so that a listing needs no plugin code.
//!
//! `libcoremcp_<group>.so.manifest.json` is lines of JSON (format 3). The first, the head,
//! holds what identifies the library the manifest was read from (its size, its mtime and the
//! SHA-256 of its bytes), the host build that rendered the entries, each tool's name with the
//! length of its `tools/list` entry, and the length of the manifest line; then one line per
//! listed tool holds its entry, exactly as the host that wrote it renders it; the last line
//! holds the group's manifest, read only when the entries must be rendered again. A listing
//! reads the head and the entry lines and stops there: it parses the small head and takes the
//! entries as they are (checked against the lengths, never parsed, never copied: each is a
//! slice of the one buffer they were read into), so listing 107 tools costs a few reads, not a
//! JSON parse of every schema. It is written by `coremcp plugins install`, by `coremcp plugins
//! index` (which `scripts/build` runs), and by the host itself whenever it loaded a library
//! whose sidecar was missing or stale.
//!
//! Invariants:
//! - A sidecar is trusted only for the library it describes: size and mtime equal (the fast
//!   path, one `stat` and one small read), or, when they changed, the same size and the same
//!   content hash (a library rebuilt or copied to identical bytes). Anything else is stale, and
//!   the group is loaded to learn its manifest, as without a sidecar.
//! - The rendered entries are used only by the host build that rendered them (same version,
//!   same executable), only when the file is exactly as long as its head says (a file cut
//!   short or grown is stale), and only when every entry line has the length the head gives
//!   and is one JSON object's braces; any other build renders them again from the manifest.
//! - A sidecar only ever lists tools. What a call runs, and every check of the library
//!   (vetting, API version, layout, `init`), comes from loading the library itself; when the
//!   loaded manifest differs from the sidecar's, the loaded one wins.
//! - A sidecar is replaced whole (written beside, then renamed); a folder the process cannot
//!   write is left alone.

use std::fs::File;
use std::io::{Read, Write};
use std::ops::{Deref, Range};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use coremcp_plugin_api::{ApiVersion, FeatureGate, Manifest, TaskSpec};
use serde::{Deserialize, Serialize};

use crate::digest::file_sha256 as sha256;

/// What a library's sidecar file name adds to the library's.
pub(crate) const SUFFIX: &str = ".manifest.json";
/// A sidecar larger than this is not read (a manifest is tens of kilobytes).
const MAX_LEN: u64 = 4 << 20;
/// The layout described in the module documentation; another is stale.
const FORMAT: u32 = 4;
/// What the first read of a sidecar asks for: the head, and usually the entries too.
const FIRST_READ: usize = 8 << 10;

/// A tool's `tools/list` entry (JSON text, as [`coremcp_wire::render::tool_entry`] writes it): a
/// slice of the text it was rendered or read in, so the entries read from one sidecar share
/// that file's one buffer.
#[derive(Clone)]
pub struct Entry {
    text: Arc<String>,
    at: Range<usize>,
}

impl Entry {
    /// An entry that is the whole of `text`.
    pub fn new(text: String) -> Self {
        let at = 0..text.len();
        Self {
            text: Arc::new(text),
            at,
        }
    }
}

impl Deref for Entry {
    type Target = str;

    fn deref(&self) -> &str {
        // In bounds and at character boundaries: checked where the entry was cut.
        &self.text[self.at.clone()]
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// One tool as a listing shows it.
#[derive(Debug, Clone)]
pub struct ListedTool {
    pub name: String,
    /// Its `tools/list` entry; `None`: it is not listed (the reason was logged when it was
    /// rendered).
    pub entry: Option<Entry>,
    /// The cargo feature it is built behind, and whether this build has it.
    pub feature: Option<FeatureGate>,
    /// When its call runs as a task, as its manifest declares it (a group outside the
    /// catalog), so the route knows before the group loads.
    pub task: Option<&'static coremcp_catalog::Entry>,
}

/// The entry that judges when `name`'s call runs as a task, if its manifest says it may.
fn task_entry(name: &str, task: Option<&TaskSpec>) -> Option<&'static coremcp_catalog::Entry> {
    task.map(|task| coremcp_catalog::task_entry(name, task))
}

impl ListedTool {
    /// The entries of `manifest`'s tools, as this host renders them.
    pub fn render(manifest: &Manifest) -> Vec<Self> {
        Self::render_logged(manifest, false)
    }

    /// [`Self::render`], saying (once, where a sidecar is written) why a tool is not listed.
    fn render_logged(manifest: &Manifest, log: bool) -> Vec<Self> {
        manifest
            .tools
            .iter()
            .map(|spec| Self {
                name: spec.name.clone(),
                feature: spec.feature.clone(),
                task: task_entry(&spec.name, spec.task.as_ref()),
                entry: match coremcp_wire::render::tool_entry(spec) {
                    Ok(entry) => Some(Entry::new(entry)),
                    Err(why) => {
                        if log {
                            tracing::warn!(tool = %spec.name, "not listed: {why}");
                        }
                        None
                    }
                },
            })
            .collect()
    }

    /// Whether two listings show the same tools the same way.
    pub fn same(a: &[Self], b: &[Self]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.name == y.name && x.entry == y.entry && x.feature == y.feature)
    }
}

/// The sidecar's first line; the entries follow, the manifest is the last line.
#[derive(Debug, Serialize, Deserialize)]
struct Head {
    /// [`FORMAT`].
    format: u32,
    /// The library's size, mtime (ns since the epoch) and content hash when it was read.
    len: u64,
    mtime_ns: i128,
    sha256: String,
    group: String,
    api_version: String,
    /// The host build that rendered the entries ([`host_build`]).
    rendered_by: String,
    /// Each tool's name, in the manifest's order.
    tools: Vec<String>,
    /// The length of each tool's entry line, `None` for one that is not listed (two flat
    /// arrays, not an object per tool: a listing parses this head at every start).
    entry_lens: Vec<Option<usize>>,
    /// The length of the manifest line (without its newline).
    manifest_len: usize,
    /// Each tool's cargo feature gate, in the same order (`core_status` shows them before the
    /// group loads).
    features: Vec<Option<FeatureGate>>,
    /// Each tool's task declaration, in the same order; empty when no tool declares one (as
    /// in a sidecar written before tools could).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tasks: Vec<Option<TaskSpec>>,
    /// Whether `sha256` records the bytes that were installed (`plugins install`, `plugins
    /// index`, `scripts/build`): then a library with other bytes is refused at load. A sidecar
    /// the host wrote after loading a library nobody recorded only lists.
    #[serde(default)]
    installed: bool,
}

impl Head {
    /// The head of `manifest`'s sidecar, whose manifest line is `manifest_len` long.
    fn new(
        meta: &std::fs::Metadata,
        sha256: String,
        manifest: &Manifest,
        manifest_len: usize,
        installed: bool,
    ) -> (Self, Vec<ListedTool>) {
        let tools = ListedTool::render_logged(manifest, true);
        let head = Self {
            format: FORMAT,
            len: meta.len(),
            mtime_ns: mtime_ns(meta),
            sha256,
            group: manifest.group.clone(),
            api_version: manifest.api_version.clone(),
            rendered_by: host_build().to_owned(),
            tools: tools.iter().map(|t| t.name.clone()).collect(),
            entry_lens: tools
                .iter()
                .map(|t| t.entry.as_ref().map(|e| e.len()))
                .collect(),
            manifest_len,
            features: tools.iter().map(|t| t.feature.clone()).collect(),
            tasks: match manifest.tools.iter().any(|t| t.task.is_some()) {
                true => manifest.tools.iter().map(|t| t.task.clone()).collect(),
                false => Vec::new(),
            },
            installed,
        };
        (head, tools)
    }

    /// Where the entry lines end, counting from `start`, where they begin.
    fn entries_end(&self, start: usize) -> Option<usize> {
        self.entry_lens
            .iter()
            .flatten()
            .try_fold(start, |at, len| at.checked_add(*len)?.checked_add(1))
    }

    /// The tools with their entries, the lines of `text` at `lines`, or `None` when those are
    /// not the lines the head describes. The names move out of the head.
    fn tools(&mut self, text: &Arc<String>, lines: Range<usize>) -> Option<Vec<ListedTool>> {
        if self.tools.len() != self.entry_lens.len() || self.tools.len() != self.features.len() {
            return None;
        }
        let mut tasks = std::mem::take(&mut self.tasks);
        match tasks.len() {
            0 => tasks.resize(self.tools.len(), None),
            n if n != self.tools.len() => return None,
            _ => {}
        }
        let bytes = text.as_bytes();
        let mut at = lines.start;
        let mut tools = Vec::with_capacity(self.tools.len());
        let names = std::mem::take(&mut self.tools);
        let features = std::mem::take(&mut self.features);
        for (((name, entry_len), feature), task) in names
            .into_iter()
            .zip(self.entry_lens.iter().copied())
            .zip(features)
            .zip(tasks)
        {
            let entry = match entry_len {
                None => None,
                Some(len) => {
                    let end = at.checked_add(len)?;
                    // The braces are ASCII, so the slice's ends are character boundaries.
                    if end >= lines.end
                        || bytes.get(at) != Some(&b'{')
                        || bytes.get(end - 1) != Some(&b'}')
                        || bytes.get(end) != Some(&b'\n')
                    {
                        return None;
                    }
                    let entry = Entry {
                        text: Arc::clone(text),
                        at: at..end,
                    };
                    at = end + 1;
                    Some(entry)
                }
            };
            let task = task_entry(&name, task.as_ref());
            tools.push(ListedTool {
                name,
                entry,
                feature,
                task,
            });
        }
        (at == lines.end).then_some(tools)
    }
}

/// Why no sidecar was written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The folder (or the file) cannot be written by this process: nothing to do about it.
    #[error("the plugins folder is not writable: {0}")]
    ReadOnly(std::io::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The library changed while it was read.
    #[error("the library changed while its manifest was written")]
    Changed,
}

/// The sidecar file of the library at `library`.
pub(crate) fn path_of(library: &Path) -> PathBuf {
    let mut name = library.as_os_str().to_owned();
    name.push(SUFFIX);
    PathBuf::from(name)
}

/// This host build: its version and its executable's size and mtime.
fn host_build() -> &'static str {
    static BUILD: OnceLock<String> = OnceLock::new();
    BUILD.get_or_init(|| {
        let exe = std::env::current_exe()
            .and_then(std::fs::metadata)
            .map(|m| format!("{}.{}", m.len(), mtime_ns(&m)))
            .unwrap_or_default();
        format!("coremcp {} {exe}", env!("CARGO_PKG_VERSION"))
    })
}

/// The tools the sidecar of `library` lists for group `group`, if the sidecar describes the
/// library as it is now (see the module invariants). A sidecar that only needed its hash to
/// match, or that another host build rendered, is rewritten when the folder can be written.
pub fn read(library: &Path, group: &str) -> Option<Vec<ListedTool>> {
    read_for(library, &std::fs::metadata(library).ok()?, group)
}

/// [`read`], for the library whose metadata the caller read (`meta`).
pub(crate) fn read_for(
    library: &Path,
    meta: &std::fs::Metadata,
    group: &str,
) -> Option<Vec<ListedTool>> {
    let path = path_of(library);
    let mut opened = Opened::open(&path)?;
    let head_end = opened.line_end()?;
    let mut head: Head = serde_json::from_slice(&opened.bytes[..head_end]).ok()?;
    let usable = head.format == FORMAT
        && head.group == group
        && ApiVersion::parse(&head.api_version)
            .is_some_and(|plugin| ApiVersion::current().accepts(plugin));
    if !usable || head.len != meta.len() {
        return None;
    }
    let same_file = head.mtime_ns == mtime_ns(meta);
    if same_file && head.rendered_by == host_build() {
        // The fast path: the head and the entry lines; the manifest line is not read.
        if let Some(tools) = opened.entries(&mut head, head_end) {
            return Some(tools);
        }
    }
    if !same_file {
        let hash = File::open(library).and_then(|mut f| sha256(&mut f)).ok()?;
        if hash != head.sha256 {
            return None;
        }
    }
    let whole = Opened::open(&path)?.whole()?;
    let (_, _, manifest) = split(&whole)?;
    let manifest: Manifest = serde_json::from_str(manifest).ok()?;
    let (refreshed, tools) = Head::new(meta, head.sha256, &manifest, 0, head.installed);
    if refreshed.group != group {
        return None;
    }
    if let Err(e) = write_sidecar(library, refreshed, &tools, &manifest) {
        tracing::debug!(file = %library.display(), "sidecar manifest not refreshed: {e}");
    }
    Some(tools)
}

/// The SHA-256 of the bytes `library` was installed or indexed with, as recorded in its
/// sidecar's head (whatever the sidecar's format): `None` when nothing was recorded (no
/// sidecar, or one the host wrote for a library nobody installed).
pub(crate) fn installed_sha256(library: &Path) -> Option<String> {
    #[derive(Deserialize)]
    struct Recorded {
        sha256: String,
        #[serde(default)]
        installed: bool,
    }
    let mut opened = Opened::open(&path_of(library))?;
    let head_end = opened.line_end()?;
    let recorded: Recorded = serde_json::from_slice(&opened.bytes[..head_end]).ok()?;
    (recorded.installed && recorded.sha256.len() == 64).then_some(recorded.sha256)
}

/// Who writes a sidecar, which decides whether it records the installed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// `plugins install`, `plugins index` (and so `scripts/build`): the bytes are the
    /// installed ones from now on.
    Install,
    /// The host, after loading the library: it keeps whatever the sidecar recorded before.
    Host,
}

/// Whether the sidecar of `library` already holds `manifest` for the library as it is, as
/// this host renders it (so there is nothing to write). Never hashes.
pub fn holds(library: &Path, manifest: &Manifest) -> bool {
    let (Ok(meta), Some(whole)) = (
        std::fs::metadata(library),
        Opened::open(&path_of(library)).and_then(Opened::whole),
    ) else {
        return false;
    };
    let Some((head, entries, written)) = split(&whole) else {
        return false;
    };
    let (Ok(mut head), Ok(written_manifest)) = (
        serde_json::from_str::<Head>(head),
        serde_json::from_str::<Manifest>(written),
    ) else {
        return false;
    };
    head.format == FORMAT
        && head.len == meta.len()
        && head.mtime_ns == mtime_ns(&meta)
        && head.rendered_by == host_build()
        && head.manifest_len == written.len()
        && written_manifest == *manifest
        && head
            .tools(&whole, entries)
            .is_some_and(|tools| ListedTool::same(&tools, &ListedTool::render(manifest)))
}

/// Writes the sidecar of `library`, which `manifest` describes (read from it by the caller).
pub fn write(library: &Path, manifest: &Manifest, writer: Writer) -> Result<(), WriteError> {
    let mut file = File::open(library)?;
    let before = file.metadata()?;
    let sha256 = sha256(&mut file)?;
    let after = std::fs::metadata(library)?;
    if before.len() != after.len() || mtime_ns(&before) != mtime_ns(&after) {
        return Err(WriteError::Changed);
    }
    let installed = match writer {
        Writer::Install => true,
        // A record of installed bytes stays one while the bytes are the same.
        Writer::Host => installed_sha256(library).is_some_and(|recorded| recorded == sha256),
    };
    let (head, tools) = Head::new(&before, sha256, manifest, 0, installed);
    write_sidecar(library, head, &tools, manifest)
}

/// Writes `head` (its manifest length set here), the entries of `tools`, then `manifest`.
fn write_sidecar(
    library: &Path,
    mut head: Head,
    tools: &[ListedTool],
    manifest: &Manifest,
) -> Result<(), WriteError> {
    let manifest = serde_json::to_vec(manifest).map_err(std::io::Error::other)?;
    head.manifest_len = manifest.len();
    let mut bytes = serde_json::to_vec(&head).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    for entry in tools.iter().filter_map(|t| t.entry.as_deref()) {
        bytes.extend_from_slice(entry.as_bytes());
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(&manifest);
    bytes.push(b'\n');
    write_whole(&path_of(library), &bytes)
}

/// A whole sidecar's head line, the range of its entry lines, and its manifest line (compact
/// JSON holds no raw newline).
fn split(whole: &str) -> Option<(&str, Range<usize>, &str)> {
    let body = whole.strip_suffix('\n')?;
    let head_end = body.find('\n')?;
    let manifest_start = body.rfind('\n')? + 1;
    Some((
        &body[..head_end],
        head_end + 1..manifest_start,
        &body[manifest_start..],
    ))
}

/// An open sidecar, and the bytes read from its start so far. A file rewritten meanwhile is
/// renamed over, so the open one does not change; one cut short reads short, and is stale.
struct Opened {
    file: File,
    /// The file's length when it was opened.
    len: usize,
    bytes: Vec<u8>,
}

impl Opened {
    /// Opens the sidecar at `path` and reads its first [`FIRST_READ`] bytes.
    fn open(path: &Path) -> Option<Self> {
        let file = File::open(path).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() > MAX_LEN {
            return None;
        }
        let len = usize::try_from(meta.len()).ok()?;
        let mut opened = Self {
            file,
            len,
            bytes: Vec::new(),
        };
        opened.fill(len.min(FIRST_READ))?;
        Some(opened)
    }

    /// Reads on until the first `upto` bytes are in; `None` if the file ends before.
    fn fill(&mut self, upto: usize) -> Option<()> {
        let Some(more) = upto.checked_sub(self.bytes.len()).filter(|n| *n > 0) else {
            return Some(());
        };
        // Exactly what is asked for: no zeroed buffer first, no read past it.
        self.bytes.reserve_exact(more);
        (&self.file)
            .take(more as u64)
            .read_to_end(&mut self.bytes)
            .ok()?;
        (self.bytes.len() == upto).then_some(())
    }

    /// Where the first line ends (its newline), reading on until it is in.
    fn line_end(&mut self) -> Option<usize> {
        let mut searched = 0;
        loop {
            if let Some(at) = memchr::memchr(b'\n', &self.bytes[searched..]) {
                return Some(searched + at);
            }
            searched = self.bytes.len();
            if searched == self.len {
                return None;
            }
            self.fill(self.len.min(searched.saturating_mul(2)))?;
        }
    }

    /// The tools the entry lines after the head (which ends at `head_end`) list: read, and
    /// kept, in one buffer; `None` if the file is not what the head describes.
    fn entries(&mut self, head: &mut Head, head_end: usize) -> Option<Vec<ListedTool>> {
        let start = head_end + 1;
        let end = head.entries_end(start)?;
        if end.checked_add(head.manifest_len)?.checked_add(1)? != self.len {
            return None;
        }
        self.fill(end)?;
        let mut bytes = std::mem::take(&mut self.bytes);
        // What the first read took of the manifest line is not kept.
        bytes.truncate(end);
        let text = Arc::new(String::from_utf8(bytes).ok()?);
        head.tools(&text, start..end)
    }

    /// The whole file, as text.
    fn whole(mut self) -> Option<Arc<String>> {
        self.fill(self.len)?;
        String::from_utf8(self.bytes).ok().map(Arc::new)
    }
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec())
}

/// Writes `bytes` to a unique file beside `path`, then renames it over `path`.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary);
    let mut out = match created {
        Ok(out) => out,
        Err(e)
            if e.kind() == std::io::ErrorKind::PermissionDenied
                || e.raw_os_error() == Some(libc::EROFS) =>
        {
            return Err(WriteError::ReadOnly(e))
        }
        Err(e) => return Err(e.into()),
    };
    let written = out
        .write_all(bytes)
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    Ok(written?)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use coremcp_plugin_api::ToolSpec;

    pub(crate) fn manifest(group: &str) -> Manifest {
        Manifest {
            group: group.to_owned(),
            plugin_version: "1.2.3".to_owned(),
            api_version: ApiVersion::current().to_string(),
            tools: vec![serde_json::from_value::<ToolSpec>(serde_json::json!({
                "name": "demo_tool",
                "description": "A tool.",
                "input_schema": {"type": "object"},
                "runs": "local"
            }))
            .expect("spec")],
        }
    }

    fn names(tools: &[ListedTool]) -> Vec<String> {
        tools.iter().map(|t| t.name.clone()).collect()
    }

    fn folder(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("coremcp-sidecar-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        dir
    }

    #[test]
    fn a_sidecar_describes_only_its_library() {
        let dir = folder("describes");
        let library = dir.join("libcoremcp_demo.so");
        std::fs::write(&library, b"library bytes, version one").expect("library");
        let listed = |group: &str| read(&library, group).map(|tools| names(&tools));
        assert_eq!(listed("demo"), None, "no sidecar yet");
        write(&library, &manifest("demo"), Writer::Install).expect("written");
        assert_eq!(listed("demo"), Some(vec!["demo_tool".to_owned()]));
        let tools = read(&library, "demo").expect("listed");
        assert!(ListedTool::same(
            &tools,
            &ListedTool::render(&manifest("demo"))
        ));
        assert!(holds(&library, &manifest("demo")));
        assert_eq!(listed("other"), None, "another group's name");

        // The same bytes written again (a new mtime): the hash still matches, and the sidecar
        // takes the new mtime.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&library, b"library bytes, version one").expect("rewrite");
        assert!(!holds(&library, &manifest("demo")));
        assert_eq!(listed("demo"), Some(vec!["demo_tool".to_owned()]));
        assert!(holds(&library, &manifest("demo")), "refreshed");

        // Other bytes of the same size: stale.
        std::fs::write(&library, b"library bytes, version two").expect("rewrite");
        assert_eq!(listed("demo"), None);
        // A sidecar that is not JSON, or too large, is no sidecar.
        std::fs::write(path_of(&library), b"{not json").expect("junk");
        assert_eq!(listed("demo"), None);
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_an_install_or_index_records_the_installed_bytes() {
        let dir = folder("installed");
        let library = dir.join("libcoremcp_demo.so");
        std::fs::write(&library, b"library bytes").expect("library");
        // The host's own sidecar, after loading a library nobody installed, records nothing.
        write(&library, &manifest("demo"), Writer::Host).expect("written");
        assert_eq!(installed_sha256(&library), None);
        assert!(read(&library, "demo").is_some(), "it still lists");
        // An install records the bytes, and a host rewrite of the same bytes keeps the record.
        write(&library, &manifest("demo"), Writer::Install).expect("written");
        let recorded = installed_sha256(&library).expect("recorded");
        assert_eq!(recorded.len(), 64);
        write(&library, &manifest("demo"), Writer::Host).expect("rewritten");
        assert_eq!(installed_sha256(&library), Some(recorded));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn damaged_entry_lines_are_rendered_again_from_the_manifest() {
        let dir = folder("entries");
        let library = dir.join("libcoremcp_demo.so");
        std::fs::write(&library, b"library bytes").expect("library");
        write(&library, &manifest("demo"), Writer::Install).expect("written");
        let path = path_of(&library);
        let whole = std::fs::read(&path).expect("read");
        let rendered = ListedTool::render(&manifest("demo"));
        let head_end = memchr::memchr(b'\n', &whole).expect("head");
        let manifest_start = memchr::memrchr(b'\n', &whole[..whole.len() - 1]).expect("last") + 1;
        let listed = read(&library, "demo").expect("listed");
        assert!(ListedTool::same(&listed, &rendered), "the fast path");

        // An entry lengthened, an extra line before the manifest, the entries gone: each is
        // noticed, and the entries come from the manifest line instead, which also repairs
        // the file.
        let mut longer = whole.clone();
        longer.insert(head_end + 2, b' ');
        let mut extra = whole.clone();
        extra.splice(manifest_start..manifest_start, b"{}\n".iter().copied());
        let mut without = whole[..=head_end].to_vec();
        without.extend_from_slice(&whole[manifest_start..]);
        for damaged in [longer, extra, without] {
            std::fs::write(&path, &damaged).expect("damage");
            assert!(!holds(&library, &manifest("demo")));
            let tools = read(&library, "demo").expect("listed from the manifest");
            assert!(ListedTool::same(&tools, &rendered));
            assert!(holds(&library, &manifest("demo")), "repaired");
            assert_eq!(std::fs::read(&path).expect("read"), whole);
        }
        // Cut short (the manifest line with it), or without its manifest line: nothing is
        // trusted.
        for damaged in [&whole[..whole.len() - 3], &whole[..manifest_start]] {
            std::fs::write(&path, damaged).expect("damage");
            assert!(read(&library, "demo").is_none());
            assert!(!holds(&library, &manifest("demo")));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_listing_reads_neither_the_manifest_line_nor_past_a_large_head() {
        let dir = folder("fast");
        let library = dir.join("libcoremcp_demo.so");
        std::fs::write(&library, b"library bytes").expect("library");
        // Enough tools that the head alone outgrows the first read.
        let mut many = manifest("demo");
        let spec = many.tools[0].clone();
        many.tools = (0..400)
            .map(|i| {
                let mut tool = spec.clone();
                tool.name = format!("demo_tool_with_a_long_name_{i}");
                tool
            })
            .collect();
        write(&library, &many, Writer::Install).expect("written");
        let path = path_of(&library);
        let whole = std::fs::read(&path).expect("read");
        assert!(memchr::memchr(b'\n', &whole).expect("head") > FIRST_READ);
        let rendered = ListedTool::render(&many);
        assert!(ListedTool::same(
            &read(&library, "demo").expect("listed"),
            &rendered
        ));
        // The manifest line overwritten with as many other bytes: the fast path never looks.
        let manifest_start = memchr::memrchr(b'\n', &whole[..whole.len() - 1]).expect("last") + 1;
        let mut blanked = whole.clone();
        blanked[manifest_start..whole.len() - 1].fill(b'x');
        std::fs::write(&path, &blanked).expect("blank");
        let tools = read(&library, "demo").expect("listed without the manifest");
        assert!(ListedTool::same(&tools, &rendered));
        assert_eq!(
            &*tools[7].entry.clone().expect("entry"),
            &*rendered[7].entry.clone().expect("entry")
        );
        // But a check of what the file holds does read it.
        assert!(!holds(&library, &many));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_incompatible_api_version_is_not_trusted() {
        let dir = folder("api");
        let library = dir.join("libcoremcp_demo.so");
        std::fs::write(&library, b"bytes").expect("library");
        let mut old = manifest("demo");
        old.api_version = "0.1.0".to_owned();
        write(&library, &old, Writer::Install).expect("written");
        assert!(read(&library, "demo").is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
