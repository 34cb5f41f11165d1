//! The gate every plugin file passes before this process maps it: a library that is not whole
//! and well-formed, or not the bytes that were installed, must never be able to crash the host.
//!
//! **Loading to serve** ([`Vetting::vetted_copy`]) maps only the bytes that were installed:
//! 1. The library must have an **install record** — the SHA-256 `plugins install` or `plugins
//!    index` wrote beside it (the sidecar manifest's head). One copied in by hand, or whose
//!    sidecar was removed, is refused, saying how to install it: nothing vouches for its bytes.
//! 2. Its bytes are **copied** to a file of their own, hashed on the way unless the record of
//!    files that passed holds the installed file with the same device, inode, size, mtime and
//!    ctime (which no user can set back), and compared with the install record; the installed
//!    file's identity is read again after the copy, so bytes changed meanwhile are never taken
//!    for the vetted ones. The copy is what is mapped: a file overwritten in place after it was
//!    loaded (`cp` over it) changes nothing this process runs — a SIGHUP reloads it through
//!    this same gate, or refuses it.
//!
//!    The copy is **shared by content**: `<data>/vetted-plugins/<sha256>/<file name>`, made
//!    once (written beside, renamed into place, never written again) and used by every process
//!    of this user whose installed file has those bytes, so sessions share its pages (as they
//!    shared the installed file's) and a process after the first copies nothing. An entry is
//!    used only while its own identity is the one recorded when it was made. Without a
//!    writable data folder on a mount that allows running code — or for bytes this process has
//!    already mapped (the dynamic loader would hand back that mapping) — the copy is private
//!    instead, in a new folder only this user may enter, removed once mapped.
//! 3. The copy's **structure** ([`super::elf`]): a whole ELF shared object for this machine.
//!
//! **Installing or indexing** ([`Vetting::vet`], `plugins install`, `plugins index`, and so
//! `scripts/build`), which writes the install record: the structure, then a **probe process**
//! (`coremcp probe-plugin FILE` opens the library and reads its manifest in a short-lived
//! child, so whatever a damaged library does while it is mapped and relocated kills only the
//! probe). A file that passed is remembered in `plugin-checks.json` under the data folder: its
//! path, identity, size and mtime are the fast path (no read at all); when they change, its
//! SHA-256 is compared with the files that passed (a rebuilt or re-copied library with the same
//! bytes is not probed again).
//!
//! Invariants:
//! - No library is mapped in this process to serve but a copy of bytes whose SHA-256 is the one
//!   recorded beside the installed file when it was installed or indexed; a shared copy only
//!   while its identity is the one recorded when it was made, and never twice in one process.
//! - No library is mapped to be installed or indexed before its structure passed, and, when a
//!   probe program is configured, before a probe survived it or its bytes match a file that did.
//! - A refusal is one line that names the file and what is wrong with it.
//! - The record is only ever replaced whole (written beside, then renamed); a record that is
//!   missing, unreadable or malformed only costs a hash or a probe.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::elf;
use crate::digest::{file_sha256, sha256};
use crate::error::LoadError;

/// The record's file name, under the data folder.
pub(crate) const RECORD_FILE: &str = "plugin-checks.json";
/// How long a probe may take to open a library.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// Files remembered at most (the newest are kept).
const RECORD_LIMIT: usize = 128;
/// How old a shared copy the record no longer names must be before it is removed.
const PRUNE_AFTER: Duration = Duration::from_secs(3600);
/// The hidden subcommand the probe runs.
pub(crate) const PROBE_COMMAND: &str = "probe-plugin";

/// How plugin files are vetted before they are mapped.
#[derive(Debug, Clone, Default)]
pub struct Vetting {
    /// The program run as the probe (`coremcp` itself); `None`: the structural check only.
    probe: Option<PathBuf>,
    /// Where files that passed are remembered; `None`: nowhere (every new process probes).
    record: Option<PathBuf>,
    /// Where the vetted copies shared by content live; `None`: every copy is private.
    shared: Option<PathBuf>,
}

/// One file that passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Passed {
    path: PathBuf,
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    /// An older record has none (0): the file is hashed again once.
    #[serde(default)]
    ctime_ns: i128,
    sha256: String,
}

/// The folder of the copies shared by content, under the data folder.
pub(crate) const SHARED_DIR: &str = "vetted-plugins";

/// A vetted copy of a library's installed bytes: shared by content, or private and removed
/// when dropped (a mapping of it outlives the file).
#[derive(Debug)]
pub(crate) struct VettedCopy {
    pub path: PathBuf,
    private: bool,
}

/// The bytes (by SHA-256) this process has mapped from a shared copy: the dynamic loader
/// hands back an object it already holds for the same file, so a second load of them (a
/// reload of unchanged bytes) takes a private copy.
static MAPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

impl Drop for VettedCopy {
    fn drop(&mut self) {
        if !self.private {
            return;
        }
        let _ = std::fs::remove_file(&self.path);
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    passed: Vec<Passed>,
}

/// Serialises this process's updates of the record (loads run on several threads).
static RECORD_LOCK: Mutex<()> = Mutex::new(());

impl Vetting {
    /// Probes with `probe` (the `coremcp` binary) and remembers passes under `data_dir`.
    pub fn new(probe: Option<PathBuf>, data_dir: Option<&Path>) -> Self {
        Self {
            probe,
            record: data_dir.map(|dir| dir.join(RECORD_FILE)),
            shared: data_dir.map(|dir| dir.join(SHARED_DIR)),
        }
    }

    /// The structural check only: what the probe process itself applies.
    pub fn structure_only() -> Self {
        Self::default()
    }

    /// A copy of the installed library `installed`, for loading to serve: its bytes those
    /// recorded at install (see the module doc).
    pub(crate) fn vetted_copy(&self, installed: &Path) -> Result<VettedCopy, LoadError> {
        let refuse = |reason: String| LoadError::Malformed {
            path: installed.to_owned(),
            reason,
        };
        let Some(recorded) = super::sidecar::installed_sha256(installed) else {
            return Err(LoadError::NotRecorded {
                path: installed.to_owned(),
            });
        };
        let (mut file, meta) = open_regular(installed, installed)?;
        let seen = identity(installed, &meta);
        let record = self.read_record();
        let known = record
            .passed
            .iter()
            .any(|p| same_file(p, &seen) && p.sha256 == recorded);
        let shared = self.shared_copy(installed, &mut file, &seen, (known, &record), &recorded)?;
        if let Some(copy) = shared {
            return Ok(copy);
        }
        let copy = VettedCopy {
            path: private_path(installed).map_err(|e| LoadError::Open {
                path: installed.to_owned(),
                reason: format!("cannot copy it for loading: {e}"),
            })?,
            private: true,
        };
        let hashed = copy_hashing(&mut file, &copy.path, !known).map_err(|e| LoadError::Open {
            path: installed.to_owned(),
            reason: format!("cannot copy it for loading: {e}"),
        })?;
        // Bytes written meanwhile would change the file's mtime and ctime: what was copied is
        // what was looked at only if its identity is the same now.
        let after = file.metadata().map_err(|e| refuse(e.to_string()))?;
        if !same_file(&identity(installed, &after), &seen) {
            return Err(LoadError::Changed {
                path: installed.to_owned(),
            });
        }
        // A file cut short is said to be so, before it is said to differ from the record.
        let copied = File::open(&copy.path).map_err(|e| refuse(e.to_string()))?;
        elf::check(&copied, meta.len()).map_err(refuse)?;
        if let Some(hash) = hashed {
            if hash != recorded {
                return Err(LoadError::Changed {
                    path: installed.to_owned(),
                });
            }
            self.remember(Passed {
                sha256: hash,
                ..seen
            });
        }
        Ok(copy)
    }

    /// The copy of `recorded`'s bytes shared by content (see the module doc), made now if need
    /// be from the open installed `file` (whose identity was `seen`, `known` from `record` to
    /// hold those bytes); `None` where there can be none, and a private copy is made instead.
    fn shared_copy(
        &self,
        installed: &Path,
        file: &mut File,
        seen: &Passed,
        (known, record): (bool, &Record),
        recorded: &str,
    ) -> Result<Option<VettedCopy>, LoadError> {
        let Some(shared) = &self.shared else {
            return Ok(None);
        };
        if MAPPED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|s| s == recorded)
        {
            return Ok(None);
        }
        let dir = shared.join(recorded);
        let path = dir.join(installed.file_name().unwrap_or_default());
        let source = Source {
            installed,
            seen,
            recorded,
        };
        if !self.made_before(&source, file, (known, record), &path)? {
            if !self.make_shared(&source, file, known, &dir, &path)? {
                return Ok(None);
            }
            self.prune_shared(shared, recorded);
        }
        Ok(use_shared(path, recorded))
    }

    /// Whether the shared copy at `path` was made before and is still as it was made; then
    /// the installed file need only hold its bytes (checked now unless `known`), else the call
    /// is refused as changed.
    fn made_before(
        &self,
        source: &Source<'_>,
        file: &mut File,
        (known, record): (bool, &Record),
        path: &Path,
    ) -> Result<bool, LoadError> {
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(false);
        };
        let entry = identity(path, &meta);
        let as_made = record
            .passed
            .iter()
            .any(|p| same_file(p, &entry) && p.sha256 == source.recorded);
        if !as_made {
            return Ok(false);
        }
        if !known {
            use std::io::Seek;
            let hash = file
                .seek(std::io::SeekFrom::Start(0))
                .and_then(|_| sha256(file))
                .map_err(|e| source.refuse(format!("reading it: {e}")))?;
            let after = file.metadata().map_err(|e| source.refuse(e.to_string()))?;
            if hash != source.recorded
                || !same_file(&identity(source.installed, &after), source.seen)
            {
                // A file cut short is said to be so, before it is said to differ.
                elf::check(file, after.len()).map_err(|e| source.refuse(e))?;
                return Err(source.changed());
            }
            self.remember(Passed {
                sha256: hash,
                ..source.seen.clone()
            });
        }
        Ok(true)
    }

    /// Makes the shared copy at `path` in `dir` from the installed `file`: written beside its
    /// place, checked, then renamed into it. `false`: none could be made (a private copy is
    /// made instead); refused when the installed bytes are not the recorded ones.
    fn make_shared(
        &self,
        source: &Source<'_>,
        file: &mut File,
        known: bool,
        dir: &Path,
        path: &Path,
    ) -> Result<bool, LoadError> {
        let (installed, seen, recorded) = (source.installed, source.seen, source.recorded);
        if let Some(shared) = &self.shared {
            if let Err(e) = shared_folder(shared, dir) {
                tracing::debug!("no shared copy of {}: {e}", installed.display());
                return Ok(false);
            }
        }
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = installed.file_name().unwrap_or_default();
        let temporary = dir.join(format!(
            ".{}.{}-{n}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let _ = std::fs::remove_file(&temporary);
        let made = (|| {
            let hashed = match copy_hashing(file, &temporary, !known) {
                Ok(hashed) => hashed,
                Err(e) => {
                    tracing::debug!("no shared copy of {}: {e}", installed.display());
                    return Ok(None);
                }
            };
            let after = file.metadata().map_err(|e| source.refuse(e.to_string()))?;
            if !same_file(&identity(installed, &after), seen) {
                return Err(source.changed());
            }
            let copied = File::open(&temporary).map_err(|e| source.refuse(e.to_string()))?;
            elf::check(&copied, seen.len).map_err(|e| source.refuse(e))?;
            if hashed.as_deref().is_some_and(|hash| hash != recorded) {
                return Err(source.changed());
            }
            if let Err(e) = std::fs::rename(&temporary, path) {
                tracing::debug!("no shared copy of {}: {e}", installed.display());
                return Ok(None);
            }
            Ok(Some(hashed))
        })();
        let _ = std::fs::remove_file(&temporary);
        let Some(hashed) = made? else {
            return Ok(false);
        };
        if hashed.is_some() {
            self.remember(Passed {
                sha256: recorded.to_owned(),
                ..seen.clone()
            });
        }
        let meta = std::fs::metadata(path).map_err(|e| source.refuse(e.to_string()))?;
        self.remember(Passed {
            sha256: recorded.to_owned(),
            ..identity(path, &meta)
        });
        Ok(true)
    }

    /// Removes the shared copies whose bytes the record no longer names (it keeps the newest
    /// [`RECORD_LIMIT`] files) and that were made more than [`PRUNE_AFTER`] ago, so the folder
    /// stays bounded without taking a copy from a process about to map it. A process that
    /// mapped one keeps its mapping.
    fn prune_shared(&self, shared: &Path, keep: &str) {
        let record = self.read_record();
        let Ok(entries) = std::fs::read_dir(shared) else {
            return;
        };
        let old = |entry: &std::fs::DirEntry| {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|made| made.elapsed().ok())
                .is_some_and(|age| age > PRUNE_AFTER)
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let named = name == keep || record.passed.iter().any(|p| p.sha256 == name);
            if !named && is_sha256(&name) && old(&entry) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }

    /// Vets the file at `path` for installing or indexing it (errors name `shown`): its
    /// structure, and a probe process unless its bytes passed before.
    pub(crate) fn vet(&self, path: &Path, shown: &Path) -> Result<(), LoadError> {
        let refuse = |reason: String| LoadError::Malformed {
            path: shown.to_owned(),
            reason,
        };
        let (mut file, meta) = open_regular(path, shown)?;
        elf::check(&file, meta.len()).map_err(refuse)?;
        let mut seen = identity(path, &meta);
        let record = self.read_record();
        let known = record.passed.iter().find(|p| same_file(p, &seen));
        let Some(probe) = &self.probe else {
            return Ok(());
        };
        if known.is_some() {
            return Ok(());
        }
        seen.sha256 = file_sha256(&mut file).map_err(|e| refuse(format!("reading it: {e}")))?;
        if !record.passed.iter().any(|p| p.sha256 == seen.sha256) {
            run_probe(probe, path, shown)?;
        }
        self.remember(seen);
        Ok(())
    }

    fn read_record(&self) -> Record {
        self.record
            .as_deref()
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Adds (or refreshes) a file that passed; failures only cost a later probe.
    fn remember(&self, passed: Passed) {
        let Some(path) = &self.record else { return };
        let _guard = RECORD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let mut record = self.read_record();
        record.passed.retain(|p| p.path != passed.path);
        record.passed.push(passed);
        let excess = record.passed.len().saturating_sub(RECORD_LIMIT);
        record.passed.drain(..excess);
        if let Err(e) = write_whole(path, &record) {
            tracing::debug!("cannot remember checked plugins in {}: {e}", path.display());
        }
    }
}

/// The file at `path`, opened, with its metadata; errors name `shown`. Anything but a regular
/// file is refused.
fn open_regular(path: &Path, shown: &Path) -> Result<(File, std::fs::Metadata), LoadError> {
    let file = File::open(path).map_err(|e| LoadError::Open {
        path: shown.to_owned(),
        reason: e.to_string(),
    })?;
    let refuse = |reason: String| LoadError::Malformed {
        path: shown.to_owned(),
        reason,
    };
    let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file".to_owned()));
    }
    Ok((file, meta))
}

/// What is known of a file by its metadata alone (no hash yet).
fn identity(path: &Path, meta: &std::fs::Metadata) -> Passed {
    Passed {
        path: path.to_owned(),
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        sha256: String::new(),
    }
}

fn is_sha256(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Makes `dir` (one entry of `shared`), both only this user may enter, on a mount that allows
/// mapping code.
fn shared_folder(shared: &Path, dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if let Some(data) = shared.parent() {
        std::fs::create_dir_all(data)?;
    }
    for folder in [shared, dir] {
        match std::fs::DirBuilder::new().mode(0o700).create(folder) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    let mode = std::fs::metadata(shared)?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "{} may be entered by others (mode {:o})",
            shared.display(),
            mode & 0o777
        )));
    }
    executable_mount(shared)
}

/// An error when code in files under `dir` cannot be mapped (a `noexec` mount).
fn executable_mount(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("a NUL in the path"))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a NUL-terminated string and `stat` a buffer of the size statvfs fills.
    if unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled `stat`.
    let stat = unsafe { stat.assume_init() };
    if stat.f_flag & libc::ST_NOEXEC != 0 {
        return Err(std::io::Error::other(format!(
            "{} is on a noexec mount, where a library cannot be mapped",
            dir.display()
        )));
    }
    Ok(())
}

/// A new, unique path for a private copy of `library`, under its own name (what `/proc/PID/maps`
/// then shows), in a new folder only this user may enter.
fn private_path(library: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = library.file_name().unwrap_or_default();
    executable_mount(&std::env::temp_dir()).map_err(|e| {
        std::io::Error::other(format!(
            "{e}; give Core MCP a data folder (--data) on a mount that allows it"
        ))
    })?;
    for _ in 0..64 {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("coremcp-plugin-{}-{n}", std::process::id()));
        // A new folder, never one left by an earlier process of the same pid.
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir.join(name)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no new folder for a private copy"))
}

/// Copies the open `file` (from its start) to the new file `to` (read-only: mode 0400),
/// hashing the bytes on the way when `hash`: their SHA-256.
fn copy_hashing(file: &mut File, to: &Path, hash: bool) -> std::io::Result<Option<String>> {
    use std::io::Seek;
    use std::os::unix::fs::OpenOptionsExt;
    file.seek(std::io::SeekFrom::Start(0))?;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o400)
        .open(to)?;
    let mut hasher = hash.then(Sha256::new);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if let Some(hasher) = &mut hasher {
                    hasher.update(&buf[..n]);
                }
                out.write_all(&buf[..n])?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hasher.map(|h| h.finalize().iter().map(|b| format!("{b:02x}")).collect()))
}

fn same_file(known: &Passed, seen: &Passed) -> bool {
    known.path == seen.path
        && known.dev == seen.dev
        && known.ino == seen.ino
        && known.len == seen.len
        && known.mtime_ns == seen.mtime_ns
        && known.ctime_ns == seen.ctime_ns
}

/// The installed file a shared copy is made from: its path, its identity when it was opened,
/// and the SHA-256 its install record holds.
struct Source<'a> {
    installed: &'a Path,
    seen: &'a Passed,
    recorded: &'a str,
}

impl Source<'_> {
    fn refuse(&self, reason: String) -> LoadError {
        LoadError::Malformed {
            path: self.installed.to_owned(),
            reason,
        }
    }

    fn changed(&self) -> LoadError {
        LoadError::Changed {
            path: self.installed.to_owned(),
        }
    }
}

/// The shared copy at `path` of the bytes `recorded`, remembered as mapped; `None` when it is
/// not usable: another process removed it meanwhile (pruned, or replaced) or it is damaged,
/// which is no reason to refuse the installed bytes — they get a private copy.
fn use_shared(path: PathBuf, recorded: &str) -> Option<VettedCopy> {
    let usable = File::open(&path)
        .and_then(|copy| Ok((copy.metadata()?.len(), copy)))
        .map_err(|e| e.to_string())
        .and_then(|(len, copy)| elf::check(&copy, len));
    if let Err(why) = usable {
        tracing::debug!("the shared copy {} is not usable: {why}", path.display());
        return None;
    }
    MAPPED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(recorded.to_owned());
    Some(VettedCopy {
        path,
        private: false,
    })
}

fn write_whole(path: &Path, record: &Record) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(".{RECORD_FILE}.{}.tmp", std::process::id()));
    let written = serde_json::to_vec(record)
        .map_err(std::io::Error::other)
        .and_then(|bytes| File::create(&temporary)?.write_all(&bytes))
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Opens the library in a probe process; an error if the probe did not survive it.
fn run_probe(program: &Path, path: &Path, shown: &Path) -> Result<(), LoadError> {
    let crashed = |how: String| LoadError::Crashed {
        path: shown.to_owned(),
        how,
    };
    let mut spec = coremcp_spawn::Spec::new(program)
        .args([std::ffi::OsStr::new(PROBE_COMMAND), path.as_os_str()]);
    spec.timeout = PROBE_TIMEOUT;
    spec.max_output = 64 * 1024;
    match coremcp_spawn::run(&spec, None) {
        Ok(done) if done.status.success() => {
            tracing::debug!(
                file = %shown.display(),
                elapsed_us = done.duration.as_micros() as u64,
                "plugin probe: {}",
                done.stdout.excerpt(300)
            );
            Ok(())
        }
        Ok(done) => Err(crashed(match done.status.signal() {
            Some(signal) => format!("killed by {}", signal_name(signal)),
            None => format!(
                "exit status {}: {}",
                done.status.code().unwrap_or(-1),
                done.stderr.excerpt(300).replace('\n', " ")
            ),
        })),
        Err(coremcp_spawn::SpawnError::TimedOut { .. }) => Err(crashed(format!(
            "it did not finish opening within {} s",
            PROBE_TIMEOUT.as_secs()
        ))),
        Err(e) => {
            // Without a probe the structural check still stands; say so and go on.
            tracing::warn!(
                file = %shown.display(),
                "cannot start the plugin probe ({e}); loading after the structural check only"
            );
            Ok(())
        }
    }
}

/// `SIGBUS (bus error)` and the like.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGBUS => "SIGBUS (bus error: a mapped page is missing from the file)",
        libc::SIGSEGV => "SIGSEGV (segmentation fault)",
        libc::SIGABRT => "SIGABRT (aborted)",
        libc::SIGILL => "SIGILL (illegal instruction)",
        libc::SIGFPE => "SIGFPE (arithmetic fault)",
        libc::SIGKILL => "SIGKILL",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf::tests::{as_library, own_bytes};
    use crate::sidecar::tests::manifest;
    use crate::sidecar::{write, Writer};

    /// A folder with a library of real ELF bytes in it, and a data folder beside.
    fn installed(name: &str) -> (PathBuf, PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("coremcp-vet-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins).expect("plugins");
        let library = plugins.join("libcoremcp_demo.so");
        std::fs::write(&library, as_library(own_bytes())).expect("library");
        (dir.clone(), library, dir.join("data"))
    }

    #[test]
    fn a_library_nobody_installed_is_never_copied_to_load() {
        let (dir, library, data) = installed("unrecorded");
        let vetting = Vetting::new(None, Some(&data));
        let refused = vetting.vetted_copy(&library).map(|c| c.path.clone());
        assert!(
            matches!(refused, Err(LoadError::NotRecorded { .. })),
            "{refused:?}"
        );
        assert!(!data.join(SHARED_DIR).exists(), "nothing was copied");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_installed_bytes_are_what_is_mapped_and_changed_ones_are_refused() {
        let (dir, library, data) = installed("recorded");
        write(&library, &manifest("demo"), Writer::Install).expect("install record");
        let recorded = crate::sidecar::installed_sha256(&library).expect("recorded");
        let vetting = Vetting::new(None, Some(&data));
        let shared = vetting.vetted_copy(&library).expect("vetted");
        assert!(!shared.private, "shared by content under the data folder");
        assert!(shared
            .path
            .starts_with(data.join(SHARED_DIR).join(&recorded)));
        let installed_bytes = std::fs::read(&library).expect("installed");
        assert!(std::fs::read(&shared.path).expect("copy") == installed_bytes);
        // The same bytes again in this process: a private copy, since the loader would hand
        // back what it mapped before.
        let again = Vetting::new(None, Some(&data))
            .vetted_copy(&library)
            .expect("vetted again");
        assert!(again.private && again.path != shared.path);
        // Bytes changed in place after the install: refused, whatever their structure.
        let mut changed = installed_bytes;
        let last = changed.len() - 1;
        changed[last] ^= 0xff;
        std::fs::write(&library, &changed).expect("changed");
        let refused = Vetting::new(None, Some(&data))
            .vetted_copy(&library)
            .map(|c| c.path.clone());
        assert!(
            matches!(refused, Err(LoadError::Changed { .. })),
            "{refused:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_record_keeps_the_newest_and_replaces_a_path() {
        let dir = std::env::temp_dir().join(format!("coremcp-vetting-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let vetting = Vetting::new(None, Some(&dir));
        let entry = |n: usize| Passed {
            path: PathBuf::from(format!("/p/{n}")),
            dev: 1,
            ino: n as u64,
            len: 2,
            mtime_ns: 3,
            ctime_ns: 4,
            sha256: format!("{n:064x}"),
        };
        // A file changed in place and its mtime set back is another file: its ctime moved.
        let mut touched = entry(0);
        touched.ctime_ns += 1;
        assert!(same_file(&entry(0), &entry(0)));
        assert!(!same_file(&entry(0), &touched));
        for n in 0..RECORD_LIMIT + 5 {
            vetting.remember(entry(n));
        }
        let mut again = entry(RECORD_LIMIT + 4);
        again.sha256 = "ab".repeat(32);
        vetting.remember(again.clone());
        let record = vetting.read_record();
        assert_eq!(record.passed.len(), RECORD_LIMIT);
        assert_eq!(record.passed.first(), Some(&entry(5)));
        assert_eq!(record.passed.last(), Some(&again));
        // A malformed record is no record.
        std::fs::write(dir.join(RECORD_FILE), b"{not json").expect("write");
        assert!(vetting.read_record().passed.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn signals_are_named() {
        assert!(signal_name(libc::SIGBUS).starts_with("SIGBUS"));
        assert_eq!(signal_name(64), "signal 64");
    }
}
