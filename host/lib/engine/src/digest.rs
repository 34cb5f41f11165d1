//! The content hash of a plugin file, computed once per file identity in a process: the
//! vetting and the sidecar manifest of one library both need it.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// Files whose hash is remembered at most.
const KNOWN_LIMIT: usize = 128;

/// The SHA-256 of an open file, remembered by file identity for this process: the vetting and
/// the sidecar manifest of one library need it once, not twice.
pub(crate) fn file_sha256(file: &mut File) -> std::io::Result<String> {
    type Identity = (u64, u64, u64, i64, i64, i64, i64);
    static KNOWN: Mutex<Vec<(Identity, String)>> = Mutex::new(Vec::new());
    let meta = file.metadata()?;
    let identity = (
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
    );
    let known = |list: &Vec<(Identity, String)>| {
        list.iter()
            .find(|(id, _)| *id == identity)
            .map(|(_, hash)| hash.clone())
    };
    if let Some(hash) = known(&KNOWN.lock().unwrap_or_else(|e| e.into_inner())) {
        return Ok(hash);
    }
    let hash = sha256(file)?;
    let mut list = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if list.len() >= KNOWN_LIMIT {
        list.remove(0);
    }
    list.push((identity, hash.clone()));
    Ok(hash)
}

/// The SHA-256 of what is left to read of `file`, in hex.
pub(crate) fn sha256(file: &mut File) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
