//! The flags of the bench drivers that measure one `coremcp` build with one plugins folder:
//! `--host <coremcp> --plugins <dir> [--calls N]`.

use std::path::PathBuf;

/// What those flags say.
pub struct HostArgs {
    pub host: PathBuf,
    pub plugins: PathBuf,
    pub calls: usize,
}

impl HostArgs {
    /// Reads the process arguments; `calls` defaults to `default_calls` and is at least
    /// `min_calls`.
    pub fn parse(default_calls: usize, min_calls: usize) -> Result<Self, String> {
        let mut args = std::env::args().skip(1);
        let (mut host, mut plugins, mut calls) = (None, None, default_calls);
        while let Some(flag) = args.next() {
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--host" => host = Some(PathBuf::from(value)),
                "--plugins" => plugins = Some(PathBuf::from(value)),
                "--calls" => calls = value.parse().map_err(|e| format!("--calls: {e}"))?,
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(Self {
            host: host.ok_or("--host is required")?,
            plugins: plugins.ok_or("--plugins is required")?,
            calls: calls.max(min_calls),
        })
    }
}
