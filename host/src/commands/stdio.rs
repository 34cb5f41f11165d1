//! `coremcp stdio`: proxy mode over stdin/stdout, what an agent client starts.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::Failure;
use crate::config::Config;
use crate::plugins::PluginSet;
use crate::policy::Caller;
use crate::session::Session;
use crate::upstream::hub::Upstreams;

/// How long the upstream servers get to stop at exit.
const SHUTDOWN: Duration = Duration::from_secs(2);

pub fn run(config: Config) -> Result<ExitCode, Failure> {
    let plugins = Arc::new(PluginSet::discover(&config).map_err(Failure::usage)?);
    tracing::info!(
        plugins = %plugins.dir().display(),
        groups = %plugins.installed_ids().join(","),
        "coremcp stdio ready"
    );
    let mut hub = None;
    let served = crate::stdio::serve(|out| {
        // Here, after SIGHUP is blocked, so that no server's thread can take it.
        let upstreams = Upstreams::start(&config.upstream);
        hub = Some(Arc::clone(&upstreams));
        let facts = (config.clone(), Arc::clone(&plugins), Arc::clone(&upstreams));
        crate::host_ops::register(
            &config,
            Arc::clone(&plugins),
            Arc::new(move || {
                let (config, plugins, upstreams) = &facts;
                crate::http::status::status(config, plugins, upstreams, 1)
            }),
        );
        Session::new(config, plugins, upstreams, Caller::Stdio, out)
    });
    if let Some(hub) = hub {
        hub.shutdown(SHUTDOWN);
    }
    served.map_err(|e| Failure::runtime(format!("stdio: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
