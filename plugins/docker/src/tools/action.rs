//! `docker_container_action`: start, stop, restart, kill, pause, unpause or remove one
//! container.
//!
//! Invariants: an action that finds the container already so (start on a running one, stop on
//! a stopped one, read from the daemon first, or its 304 answer) is a success with
//! `changed: false`, not an error, so a retry is safe; the
//! answer carries the state the daemon reports afterwards; a running container is removed
//! only with `force`.

use bollard::errors::Error as BollardError;
use bollard::query_parameters::{
    KillContainerOptions, RemoveContainerOptions, RestartContainerOptions, StopContainerOptions,
};
use coremcp_docker_api::exchange;
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::prelude::*;

use super::common::{answer, connect, container_ref, inspect};

pub const TOOL: Tool =
    Tool::typed("docker_container_action", &typed(handler)).hints(Hints::DESTRUCTIVE);

/// Start, stop, restart, kill, pause, unpause or remove a container (remove needs force while
/// running). An action already done answers changed: false.
#[derive(Debug, Args)]
pub struct Action {
    /// id, id prefix or name
    #[arg(min_len = 1, max_len = 256)]
    container: String,
    /// what to do
    action: Verb,
    /// Registry host (default: here)
    #[arg(min_len = 1, max_len = 200)]
    host: Option<String>,
    /// stop/restart grace, s
    #[arg(min = 0, max = 600, default = 10)]
    timeout_s: u64,
    /// remove: even if running
    #[arg(default)]
    force: bool,
    /// remove: its volumes too
    #[arg(default)]
    remove_volumes: bool,
}

/// A lifecycle action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Verb {
    Start,
    Stop,
    Restart,
    Kill,
    Pause,
    Unpause,
    Remove,
}

fn handler(ctx: &Ctx<'_>, args: Action) -> Result<Value, ToolError> {
    let name = container_ref("container", &args.container)?;
    if (args.force || args.remove_volumes) && args.action != Verb::Remove {
        let field = if args.force {
            "force"
        } else {
            "remove_volumes"
        };
        return Err(invalid(field, "applies to action remove only"));
    }
    let d = connect(ctx, args.host.as_deref())?;
    let before = inspect(ctx, &d, &name)?;
    let (running, paused) = before.state.as_ref().map_or((false, false), |s| {
        (s.running == Some(true), s.paused == Some(true))
    });
    let done_already = match args.action {
        Verb::Start => running,
        Verb::Stop => !running,
        Verb::Pause => paused,
        Verb::Unpause => running && !paused,
        Verb::Restart | Verb::Kill | Verb::Remove => false,
    };
    let changed = !done_already && {
        let what = format!("no container \"{name}\"");
        let request = perform(
            d.docker.clone(),
            name.clone(),
            args.action,
            Options::of(&args),
        );
        exchange(ctx, &d.target.endpoint, &what, request)?
    };
    let verb = Verb::VALUES[args.action as usize];
    let mut out = answer(
        &d.target,
        json!({"container": name, "action": verb, "changed": changed}),
    );
    if args.action == Verb::Remove {
        out["removed"] = true.into();
        return Ok(out);
    }
    let after = inspect(ctx, &d, &name)?;
    if let Some(state) = after.state {
        if let Some(status) = state.status {
            out["state"] = status.to_string().into();
        }
        if let Some(code) = state.exit_code.filter(|_| state.running != Some(true)) {
            out["exit_code"] = code.into();
        }
    }
    Ok(out)
}

/// What an action takes besides its verb.
#[derive(Debug, Clone, Copy)]
struct Options {
    grace: i32,
    force: bool,
    remove_volumes: bool,
}

impl Options {
    fn of(args: &Action) -> Self {
        Self {
            grace: args.timeout_s as i32,
            force: args.force,
            remove_volumes: args.remove_volumes,
        }
    }
}

/// Performs `verb` on container `name`; whether it changed anything.
async fn perform(
    docker: bollard::Docker,
    name: String,
    verb: Verb,
    o: Options,
) -> Result<bool, BollardError> {
    let done = match verb {
        Verb::Start => docker.start_container(&name, None).await,
        Verb::Stop => {
            let options = StopContainerOptions {
                t: Some(o.grace),
                signal: None,
            };
            docker.stop_container(&name, Some(options)).await
        }
        Verb::Restart => {
            let options = RestartContainerOptions {
                t: Some(o.grace),
                signal: None,
            };
            docker.restart_container(&name, Some(options)).await
        }
        Verb::Kill => {
            let options = KillContainerOptions {
                signal: "SIGKILL".into(),
            };
            docker.kill_container(&name, Some(options)).await
        }
        Verb::Pause => docker.pause_container(&name).await,
        Verb::Unpause => docker.unpause_container(&name).await,
        Verb::Remove => {
            let options = RemoveContainerOptions {
                force: o.force,
                v: o.remove_volumes,
                link: false,
            };
            docker.remove_container(&name, Some(options)).await
        }
    };
    already(done)
}

/// Whether the action changed anything: the daemon answers 304 when it was already done.
fn already(done: Result<(), BollardError>) -> Result<bool, BollardError> {
    match done {
        Ok(()) => Ok(true),
        Err(BollardError::DockerResponseServerError {
            status_code: 304, ..
        }) => Ok(false),
        Err(e) => Err(e),
    }
}
