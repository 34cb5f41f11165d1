//! `coremcp plugins`: every plugin file in the plugins folder, loaded, with its group,
//! version, API version, tool count and load status.

use std::process::ExitCode;

use crate::cli::Failure;
use crate::config::{Config, GroupSelection};
use crate::plugins::PluginSet;

pub fn run(mut config: Config) -> Result<ExitCode, Failure> {
    config.groups = GroupSelection::All;
    let plugins = PluginSet::discover(&config).map_err(Failure::usage)?;
    plugins.load_installed();
    let mut text = format!(
        "plugins folder: {}\n{:<22} {:<9} {:<5} {:>5}  {}\n",
        plugins.dir().display(),
        "GROUP",
        "VERSION",
        "API",
        "TOOLS",
        "STATUS"
    );
    let mut files = 0;
    for slot in plugins.slots().iter().filter(|s| s.installed) {
        files += 1;
        let line = match slot.state() {
            Some(Ok(loaded)) => {
                let m = &loaded.library.manifest;
                format!(
                    "{:<22} {:<9} {:<5} {:>5}  loaded\n",
                    slot.id,
                    m.plugin_version,
                    m.api_version,
                    m.tools.len()
                )
            }
            Some(Err(e)) => format!(
                "{:<22} {:<9} {:<5} {:>5}  failed: {e}\n",
                slot.id, "-", "-", "-"
            ),
            None => format!(
                "{:<22} {:<9} {:<5} {:>5}  not loaded\n",
                slot.id, "-", "-", "-"
            ),
        };
        text.push_str(&line);
    }
    if files == 0 {
        text.push_str("(no plugin files: libcoremcp_<group>.so)\n");
    }
    super::print(&text).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
