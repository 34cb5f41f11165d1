//! `coremcp stdio`: proxy mode over stdin/stdout, what an agent client starts.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::Failure;
use crate::config::Config;
use crate::session::Session;
use coremcp_engine::PluginSet;
use coremcp_upstream::hub::Upstreams;
use coremcp_wire::policy::Caller;

/// How long the upstream servers get to stop at exit.
const SHUTDOWN: Duration = Duration::from_secs(2);

/// Runs the session; with `status_listen`, also its status listener (and its address file).
pub fn run(config: Config, status_listen: Option<&str>) -> Result<ExitCode, Failure> {
    one_malloc_arena();
    if let Some(listen) = status_listen {
        // Refused before anything starts, like every other bad flag.
        let addr =
            crate::http::resolve_listen(listen).map_err(|e| Failure::usage(e.to_string()))?;
        if !addr.ip().is_loopback() {
            let e = crate::http::ServeError::StatusNotLoopback(addr);
            return Err(Failure::usage(e.to_string()));
        }
    }
    let plugins = Arc::new(PluginSet::discover(&config.engine()).map_err(Failure::usage)?);
    let mut hub = None;
    let mut status = Ok(None);
    let served = crate::stdio::serve(|out| {
        // Said once SIGHUP is blocked: from here on a SIGHUP reloads, and never ends the process.
        tracing::info!(
            plugins = %plugins.dir().display(),
            groups = %plugins.installed_ids().join(","),
            "coremcp stdio ready"
        );
        crate::hardening::say_how_children_are_kept();
        // Here, after SIGHUP is blocked, so that no server's thread can take it.
        let upstreams = Upstreams::start(&config.upstream);
        hub = Some(Arc::clone(&upstreams));
        if let Some(listen) = status_listen {
            status = start_status(&config, &plugins, &upstreams, listen);
        }
        let facts = (config.clone(), Arc::clone(&plugins), Arc::clone(&upstreams));
        crate::host_ops::register(
            &config,
            Arc::clone(&plugins),
            Arc::new(move |viewer: Option<&str>| {
                let (config, plugins, upstreams) = &facts;
                crate::http::status::status(config, plugins, upstreams, 1, viewer)
            }),
        );
        crate::tasks::init(&config);
        Session::new(config, plugins, upstreams, Caller::Stdio, out)
    });
    // What runs as a task ends with the process, and says so.
    crate::tasks::stop_all(SHUTDOWN);
    // Gone as the session ends: nobody should find a status that no longer answers.
    drop(status);
    if let Some(hub) = hub {
        hub.shutdown(SHUTDOWN);
    }
    served.map_err(|e| Failure::runtime(format!("stdio: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

/// One session, mostly one call at a time: every thread allocates from glibc's main arena.
/// Otherwise each thread that allocates (the reader, each group's first call) gets an arena of
/// its own, mapped and touched anew, which costs page faults at start-up and resident memory
/// for as long as the process lives. Called before any other thread starts.
fn one_malloc_arena() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets an allocator parameter; no thread other than this one exists
    // yet, so no allocation races with the change.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Starts the status listener and writes the address file (kept until the returned guard is
/// dropped). A failure is logged and the session goes on without it: the agent's tools
/// matter more than a page about them.
fn start_status(
    config: &Config,
    plugins: &Arc<PluginSet>,
    upstreams: &Arc<Upstreams>,
    listen: &str,
) -> Result<Option<crate::status_files::StatusFile>, String> {
    let addr = crate::http::status_listener(
        config.clone(),
        Arc::clone(plugins),
        Arc::clone(upstreams),
        listen,
    )
    .map_err(|e| {
        tracing::error!("--status-listen: {e}");
        e.to_string()
    })?;
    let url = format!("http://{addr}/");
    tracing::info!(%url, "status page");
    let Some(data) = &config.data_dir else {
        tracing::warn!("no data folder: the status address is not recorded for coremcp status");
        return Ok(None);
    };
    match crate::status_files::StatusFile::write(data, &url) {
        Ok(file) => Ok(Some(file)),
        Err(e) => {
            tracing::error!(
                "cannot record the status address under {}: {e}",
                data.display()
            );
            Ok(None)
        }
    }
}
