//! `coremcp stdio`: proxy mode over stdin/stdout, what an agent client starts.

use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::Failure;
use crate::config::Config;
use crate::plugins::PluginSet;
use crate::session::Session;

pub fn run(config: Config) -> Result<ExitCode, Failure> {
    let plugins = Arc::new(PluginSet::discover(&config).map_err(Failure::usage)?);
    tracing::info!(
        plugins = %plugins.dir().display(),
        groups = %plugins.installed_ids().join(","),
        "coremcp stdio ready"
    );
    if let Some(line) = config.upstream.boot_line() {
        tracing::info!("{line}");
    }
    crate::stdio::serve(|out| Session::new(config, plugins, out))
        .map_err(|e| Failure::runtime(format!("stdio: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
