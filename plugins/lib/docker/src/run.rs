//! One Engine API exchange inside a tool call: the runtime it runs on, the client for an
//! endpoint, and the bound of the call's deadline and stop flag.
//!
//! A request is a `'static` future (it owns a clone of the client and its arguments): it runs
//! on the runtime's worker while the calling thread waits for its answer, the deadline or a
//! cancel, and a request given up on is aborted, never left running.
//!
//! The runtime is this library's own (one worker thread, built on first use): the host's tokio
//! is another copy in another library and never runs our futures. Requests go over
//! [`crate::transport`], which bounds every answer. A client is kept per endpoint
//! once its API version is negotiated, so a call costs one exchange, not two; a client whose
//! daemon could not be reached is dropped and negotiated afresh next time.

use std::collections::HashMap;
use std::future::Future;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bollard::Docker;
use coremcp_plugin_sdk::Ctx;
use tokio::runtime::Runtime;

use crate::{DockerError, Endpoint};

/// The client's own request timeout, past any call's deadline.
const BACKSTOP_SECS: u64 = 900;
/// How long before the call's deadline a request is given up on, to answer in time.
const ANSWER_MARGIN: Duration = Duration::from_millis(400);
/// How often a waiting call looks at its stop flag.
const POLL: Duration = Duration::from_millis(20);

fn runtime() -> Result<&'static Runtime, DockerError> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("coremcp-docker")
                .enable_io()
                .enable_time()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| DockerError::Unreachable {
            endpoint: "(none)".into(),
            detail: format!("the Docker client's runtime could not start: {e}"),
        })
}

fn clients() -> &'static Mutex<HashMap<Endpoint, Docker>> {
    static CLIENTS: OnceLock<Mutex<HashMap<Endpoint, Docker>>> = OnceLock::new();
    CLIENTS.get_or_init(Default::default)
}

/// The client for `endpoint`, its API version negotiated with the daemon (within the call).
pub fn daemon(ctx: &Ctx<'_>, endpoint: &Endpoint) -> Result<Docker, DockerError> {
    if let Some(client) = clients().lock().ok().and_then(|c| c.get(endpoint).cloned()) {
        return Ok(client);
    }
    let name = endpoint.to_string();
    // The client is kept for later calls, whose deadlines differ: its own timeout is only a
    // backstop past the longest call (the call's deadline is what bounds a request).
    let timeout = BACKSTOP_SECS;
    let client = crate::transport::client(endpoint, timeout)
        .map_err(|e| DockerError::from_bollard(&name, "", e))?;
    let client = exchange(ctx, endpoint, "", async {
        client.negotiate_version().await
    })?;
    if let Ok(mut cache) = clients().lock() {
        cache.insert(endpoint.clone(), client.clone());
    }
    Ok(client)
}

/// Runs `request` against `endpoint`'s daemon until it answers, the call's deadline passes or
/// the call is cancelled. `what` names the object a "not found" answer is about.
///
/// The request runs whole on the runtime's worker (the calling thread only waits): driven from
/// the calling thread, every frame of a streamed answer would cross threads twice (a 5 000-line
/// log took 10x the time).
pub fn exchange<T, F>(
    ctx: &Ctx<'_>,
    endpoint: &Endpoint,
    what: &str,
    request: F,
) -> Result<T, DockerError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, bollard::errors::Error>> + Send + 'static,
{
    let name = endpoint.to_string();
    let (tx, rx) = mpsc::sync_channel(1);
    let task = runtime()?.spawn(async move {
        let _ = tx.send(request.await);
    });
    let answer = loop {
        // Given up a moment before the deadline, so that this error (which names the
        // endpoint) reaches the agent rather than the host's generic one.
        let left = ctx.remaining().saturating_sub(ANSWER_MARGIN);
        if ctx.is_cancelled() || left.is_zero() {
            task.abort();
            if ctx.is_cancelled() && !left.is_zero() {
                return Err(DockerError::Cancelled { endpoint: name });
            }
            forget(endpoint);
            return Err(DockerError::Deadline { endpoint: name });
        }
        match rx.recv_timeout(left.min(POLL)) {
            Ok(answer) => break answer,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(DockerError::Api {
                    endpoint: name,
                    status: 0,
                    message: "the request ended without an answer (its task failed)".into(),
                })
            }
        }
    };
    answer.map_err(|e| {
        let e = DockerError::from_bollard(&name, what, e);
        if matches!(e, DockerError::Unreachable { .. }) {
            forget(endpoint);
        }
        e
    })
}

fn forget(endpoint: &Endpoint) {
    if let Ok(mut cache) = clients().lock() {
        cache.remove(endpoint);
    }
}
