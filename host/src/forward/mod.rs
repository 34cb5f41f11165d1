//! Calls that run in another Core MCP: the forwarded groups over the ordered relay list
//! (ARCHITECTURE.md: the path of one call), and any call with `remote_host` to that Registry host's
//! Core MCP.
//!
//! Failover, exactly: relays are tried in order, skipping any marked down. A relay that cannot
//! be **connected** to (refused, unreachable, connect timeout) is marked down for the retry
//! period (30 s) and the next is tried; once the period is over, one call probes it again (the
//! others keep skipping it meanwhile), so a dead relay costs one connect attempt per period,
//! not one per call, and calls return to it as soon as it answers. Anything from a **live**
//! relay — a JSON-RPC error, an `isError` result, a timeout or a broken connection after the
//! request was sent — comes back as it is and is never sent elsewhere: the call may have had
//! effects. The decision is made on the error's type ([`HttpError::is_before_send`]), never on
//! its text. All relays down → one error naming each relay and why.
//!
//! Invariants: connections and MCP sessions to a peer are kept and reused (opening one per
//! call would cost a handshake each time); the state is process-wide, shared by every session.

pub mod client;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::config::{redact_url, Config};
use crate::net::http1::{HttpError, Url};
use client::{McpClient, Reply};

/// How long one connect attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Idle connections kept per peer.
const IDLE_PER_PEER: usize = 16;

/// Why a forwarded call got no answer from a peer.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// No relay could be connected to (each with why, or for how long it is still skipped).
    #[error("no relay could take the call: {}", list(.0))]
    AllDown(Vec<(String, String)>),
    /// The peer was reached and failed after the request was sent (or before, for a single
    /// peer such as a `remote_host` target); the call was not sent anywhere else.
    #[error("{peer}: {error}")]
    Peer { peer: String, error: HttpError },
}

fn list(down: &[(String, String)]) -> String {
    down.iter()
        .map(|(url, why)| format!("{url} ({why})"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// One peer: its URL, idle sessions to it, and (for relays) whether it is down.
struct Peer {
    /// As configured, with any password hidden (for messages).
    shown: String,
    url: Result<Url, HttpError>,
    idle: Mutex<Vec<McpClient>>,
    health: Mutex<Health>,
}

#[derive(Default)]
struct Health {
    down_until: Option<Instant>,
    reason: Option<String>,
    probing: bool,
    connect_failures: u64,
}

impl Peer {
    fn new(url: &str) -> Self {
        Self {
            shown: redact_url(url),
            url: Url::parse(url),
            idle: Mutex::new(Vec::new()),
            health: Mutex::new(Health::default()),
        }
    }

    fn call(
        &self,
        tool: &str,
        arguments: &str,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<Reply, HttpError> {
        let url = self.url.clone()?;
        let reused = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut client = reused.unwrap_or_else(|| McpClient::new(url));
        let outcome = client.call_tool(tool, arguments, deadline, cancelled, CONNECT_TIMEOUT);
        if client.reusable() {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            if idle.len() < IDLE_PER_PEER {
                idle.push(client);
            }
        }
        outcome
    }
}

/// The relay list of this process, in priority order.
pub struct Relays {
    peers: Vec<Peer>,
    retry_after: Duration,
}

/// What a relay is doing, for `/api/status`.
enum Turn {
    Try,
    Skip(String),
}

impl Relays {
    pub fn new(urls: &[String], retry_after: Duration) -> Self {
        Self {
            peers: urls.iter().map(|u| Peer::new(u)).collect(),
            retry_after,
        }
    }

    /// Calls `tool` on the first relay that can be connected to.
    pub fn call(
        &self,
        tool: &str,
        arguments: &str,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<Reply, ForwardError> {
        let mut down = Vec::new();
        for peer in &self.peers {
            if let Turn::Skip(why) = self.turn(peer) {
                down.push((peer.shown.clone(), why));
                continue;
            }
            let outcome = peer.call(tool, arguments, deadline, cancelled);
            let mut health = peer.health.lock().unwrap_or_else(PoisonError::into_inner);
            health.probing = false;
            match outcome {
                Err(error) if error.is_before_send() => {
                    health.down_until = Some(Instant::now() + self.retry_after);
                    health.connect_failures += 1;
                    health.reason = Some(error.to_string());
                    tracing::warn!(
                        relay = %peer.shown,
                        "relay {} {error}; skipping it for {} s",
                        peer.shown,
                        self.retry_after.as_secs()
                    );
                    down.push((peer.shown.clone(), error.to_string()));
                }
                Err(error) => {
                    return Err(ForwardError::Peer {
                        peer: peer.shown.clone(),
                        error,
                    })
                }
                Ok(reply) => {
                    if health.down_until.take().is_some() {
                        tracing::info!(relay = %peer.shown, "relay {} answers again", peer.shown);
                    }
                    health.reason = None;
                    return Ok(reply);
                }
            }
        }
        Err(ForwardError::AllDown(down))
    }

    /// Whether a call may try `peer` now. Past its down period exactly one call probes it.
    fn turn(&self, peer: &Peer) -> Turn {
        let mut health = peer.health.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(until) = health.down_until else {
            return Turn::Try;
        };
        let reason = health.reason.clone().unwrap_or_default();
        let now = Instant::now();
        if now < until {
            let left = until - now;
            return Turn::Skip(format!(
                "{reason}; skipped for {} s more",
                left.as_secs() + 1
            ));
        }
        if health.probing {
            return Turn::Skip(format!("{reason}; another call is trying it again"));
        }
        health.probing = true;
        Turn::Try
    }

    /// Each relay's state, for `/api/status`.
    pub fn status(&self) -> Vec<Value> {
        let now = Instant::now();
        self.peers
            .iter()
            .map(|peer| {
                let health = peer.health.lock().unwrap_or_else(PoisonError::into_inner);
                let mut entry = json!({
                    "url": peer.shown,
                    "state": match health.down_until {
                        Some(until) if until > now => "down",
                        Some(_) => "retrying",
                        None => "up",
                    },
                    "connect_failures": health.connect_failures,
                });
                if let Some(until) = health.down_until.filter(|u| *u > now) {
                    entry["retry_in_ms"] = json!(until.duration_since(now).as_millis() as u64);
                }
                if let Some(reason) = &health.reason {
                    entry["reason"] = json!(reason);
                }
                entry
            })
            .collect()
    }
}

/// The relays of this process (`None` when none is configured: forwarded groups then run
/// in-process on the store).
pub fn relays(config: &Config) -> Option<Arc<Relays>> {
    static RELAYS: OnceLock<Option<Arc<Relays>>> = OnceLock::new();
    RELAYS
        .get_or_init(|| {
            (!config.relays.is_empty())
                .then(|| Arc::new(Relays::new(&config.relays, config.relay_retry)))
        })
        .clone()
}

/// The relay states for `/api/status` (empty without relays).
pub fn relay_status(config: &Config) -> Vec<Value> {
    relays(config).map_or_else(Vec::new, |r| r.status())
}

/// Calls `tool` on the Core MCP at `url` (a `remote_host` target): one peer, no failover.
pub fn call_remote(
    url: &str,
    tool: &str,
    arguments: &str,
    deadline: Instant,
    cancelled: &AtomicBool,
) -> Result<Reply, ForwardError> {
    static REMOTES: OnceLock<Mutex<HashMap<String, Arc<Peer>>>> = OnceLock::new();
    let peer = REMOTES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(url.to_owned())
        .or_insert_with(|| Arc::new(Peer::new(url)))
        .clone();
    peer.call(tool, arguments, deadline, cancelled)
        .map_err(|error| ForwardError::Peer {
            peer: peer.shown.clone(),
            error,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn dead_url() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        format!("http://127.0.0.1:{port}/mcp")
    }

    #[test]
    fn dead_relays_are_skipped_for_the_retry_period_then_probed_once() {
        let dead = dead_url();
        let other = dead_url();
        let relays = Relays::new(&[dead.clone(), other.clone()], Duration::from_millis(300));
        let cancelled = AtomicBool::new(false);
        let deadline = || Instant::now() + Duration::from_secs(5);
        let err = relays
            .call("x", "{}", deadline(), &cancelled)
            .expect_err("all down");
        let text = err.to_string();
        assert!(text.starts_with("no relay could take the call: "), "{text}");
        assert!(text.contains(&dead) && text.contains(&other), "{text}");
        // Within the period nobody connects again.
        let err = relays
            .call("x", "{}", deadline(), &cancelled)
            .expect_err("down");
        assert!(err.to_string().contains("skipped for"), "{err}");
        let failures = |r: &Relays| -> Vec<u64> {
            r.status()
                .iter()
                .map(|s| s["connect_failures"].as_u64().expect("count"))
                .collect()
        };
        assert_eq!(failures(&relays), [1, 1]);
        assert_eq!(relays.status()[0]["state"], "down");
        std::thread::sleep(Duration::from_millis(350));
        assert!(relays.call("x", "{}", deadline(), &cancelled).is_err());
        assert_eq!(failures(&relays), [2, 2]);
    }

    #[test]
    fn a_live_relay_that_times_out_is_not_failed_over() {
        let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
        let silent_url = format!("http://{}/mcp", silent.local_addr().expect("addr"));
        let second = dead_url();
        let relays = Relays::new(&[silent_url.clone(), second], Duration::from_secs(30));
        let cancelled = AtomicBool::new(false);
        let err = relays
            .call(
                "x",
                "{}",
                Instant::now() + Duration::from_millis(300),
                &cancelled,
            )
            .expect_err("timeout");
        match err {
            ForwardError::Peer { peer, error } => {
                assert_eq!(peer, silent_url);
                assert!(matches!(error, HttpError::Timeout), "{error}");
            }
            other => panic!("expected the first relay's timeout, got {other}"),
        }
        // The second relay was never tried, so it has no failure counted.
        assert_eq!(relays.status()[1]["connect_failures"], 0);
        assert_eq!(relays.status()[0]["state"], "up");
    }
}
