//! The key that seals a 2026 `requestState` (`coremcp_wire::modern::state`), kept in
//! `<data>/keys/request-state.key` so that it survives a restart and every process on that
//! data folder accepts the states the others issued.
//!
//! Invariants: the key file is created once, whole, with mode 0600 (a second process that loses
//! the race reads the winner's key); without a data folder the key lives in memory only, and
//! says so.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use coremcp_wire::modern::state::Sealer;

/// The sealer of this process: the key of `data_dir` (created there on first use), or an
/// in-memory key when there is none.
pub fn sealer(data_dir: Option<&Path>) -> &'static Sealer {
    static SEALER: OnceLock<Sealer> = OnceLock::new();
    SEALER.get_or_init(|| {
        let secret = match data_dir.map(key_path) {
            Some(path) => match load_or_create(&path) {
                Ok(secret) => secret,
                Err(e) => {
                    tracing::error!(
                        "cannot keep the request-state key at {}: {e}; using a key in memory \
                         (approvals asked by this process cannot be answered through another)",
                        path.display()
                    );
                    random().unwrap_or([7u8; 32])
                }
            },
            None => {
                tracing::warn!("no data folder: the request-state key is kept in memory");
                random().unwrap_or([7u8; 32])
            }
        };
        Sealer::from_secret(&secret)
    })
}

/// Where the key of `data_dir` lives.
pub fn key_path(data_dir: &Path) -> PathBuf {
    data_dir.join("keys").join("request-state.key")
}

/// Reads the key file, or creates it whole (a temporary file linked into place, so a reader
/// never sees half a key and a second creator keeps the first one's).
fn load_or_create(path: &Path) -> std::io::Result<[u8; 32]> {
    if let Ok(secret) = read_key(path) {
        return Ok(secret);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    set_mode(dir, 0o700);
    let secret = random()?;
    let tmp = dir.join(format!(".request-state.key.{}", std::process::id()));
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        set_mode(&tmp, 0o600);
        file.write_all(hex(&secret).as_bytes())?;
        file.sync_all()?;
    }
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(secret),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(path),
        Err(e) => Err(e),
    }
}

fn read_key(path: &Path) -> std::io::Result<[u8; 32]> {
    let text = std::fs::read_to_string(path)?;
    let text = text.trim();
    let invalid = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not 64 hex digits", path.display()),
        )
    };
    if text.len() != 64 {
        return Err(invalid());
    }
    let mut secret = [0u8; 32];
    for (i, byte) in secret.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| invalid())?;
    }
    Ok(secret)
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
}

fn random() -> std::io::Result<[u8; 32]> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_created_once_and_shared() {
        let dir = std::env::temp_dir().join(format!("coremcp-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = key_path(&dir);
        let first = load_or_create(&path).expect("created");
        let second = load_or_create(&path).expect("read");
        assert_eq!(first, second);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&path, "short").expect("write");
        assert!(read_key(&path).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
