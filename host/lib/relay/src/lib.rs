//! Calls that run in another Core MCP: the forwarded groups over the ordered relay list
//! (ARCHITECTURE.md: the path of one call), and any call with `remote_host` to that Registry host's
//! Core MCP.
//!
//! Failover, exactly: relays are tried in order, skipping any marked down. A relay that cannot
//! be **connected** to (refused, unreachable, or no connection and handshake within the connect
//! timeout, `--relay-connect-timeout`, 2 s) is marked down for the retry period (30 s) and the
//! next is tried; once the period is over, one call probes it again (the
//! others keep skipping it meanwhile), so a dead relay costs one connect attempt per period,
//! not one per call, and calls return to it as soon as it answers. Anything from a **live**
//! relay — a JSON-RPC error, an `isError` result, a timeout or a broken connection after the
//! request was sent — comes back as it is and is never sent elsewhere: the call may have had
//! effects. The decision is made on the error's type ([`HttpError::is_before_send`]), never on
//! its text. A relay that took a call and answered nothing by the call's deadline is hung: that
//! call is answered with the timeout (it may have run), and the relay is marked down for the
//! retry period like a dead one, so the calls after it go to the next relay at once. All relays
//! down → one error naming each relay and why.
//!
//! A target of the list may be `consul://SERVICE` ([`consul`]): its passing instances are
//! looked up in Consul on every call and tried in Consul's order, each with the same
//! connect-failure failover (and the same down period) as a relay given by URL; a lookup
//! that fails counts as that target being down, with Consul's answer as the reason.
//!
//! The same list type serves a service-mode Core MCP's `--route GROUP=TARGET`: one list per
//! routed group ([`route_of`]).
//!
//! Invariants: connections and MCP sessions to a peer are kept and reused (opening one per
//! call would cost a handshake each time), also across Consul lookups that return the same
//! instance; the state is process-wide, shared by every session.
//!
//! This crate never reads the configuration or the environment (the binary hands it
//! [`Settings`] and a call's [`hop::Outgoing`], its client name included), never serves a
//! client, and never imports the upstream servers or the plugin engine: it builds on
//! `coremcp-wire` and `coremcp-net`.

pub mod client;
pub mod consul;
pub mod hop;
pub mod peers;

pub use consul::Agent as ConsulAgent;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use client::{McpClient, Reply};
use coremcp_net::client::{redact_url, HttpError, Url};
use hop::Outgoing;

/// What this crate needs of the configuration, built from it in one place (the binary's
/// `config.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Relay base URLs (`http(s)://host:port/mcp`) or `consul://SERVICE`, in priority order;
    /// empty: forwarded groups run in-process on the store.
    pub relays: Vec<String>,
    /// How long a target that could not be connected to is skipped.
    pub retry: Duration,
    /// How long connecting to a peer Core MCP and its handshake may take together.
    pub connect_timeout: Duration,
    /// URL prefixes of other Core MCPs trusted with the relay token and a call's principal,
    /// beside the relays and routes (`--peer`).
    pub peers: Vec<String>,
    /// Service mode: each forwarded group passed on, with its targets in priority order.
    pub routes: Vec<(String, Vec<String>)>,
    /// The Consul agent for `consul://` targets.
    pub consul: ConsulAgent,
}

/// The default connect timeout (`--relay-connect-timeout`).
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

impl Default for Settings {
    fn default() -> Self {
        Self {
            relays: Vec::new(),
            retry: Duration::from_secs(30),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            peers: Vec::new(),
            routes: Vec::new(),
            consul: ConsulAgent::default(),
        }
    }
}

/// Idle connections kept per peer.
const IDLE_PER_PEER: usize = 16;

/// Why a forwarded call got no answer from a peer.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// No target could be connected to (each with why, or for how long it is still skipped);
    /// `what` says whose targets they were ("relay", "instance of the seele route").
    #[error("no {what} could take the call: {}", list(.down))]
    AllDown {
        what: String,
        down: Vec<(String, String)>,
    },
    /// The peer was reached and failed after the request was sent (or before, for a single
    /// peer such as a `remote_host` target); the call was not sent anywhere else.
    #[error("{peer}: {error}")]
    Peer { peer: String, error: HttpError },
}

impl ForwardError {
    /// Whether a request reached a peer and no answer came back: the call may have run there.
    pub fn may_have_run(&self) -> bool {
        match self {
            ForwardError::AllDown { .. } => false,
            ForwardError::Peer { error, .. } => {
                !error.is_before_send()
                    && !matches!(error, HttpError::Cancelled | HttpError::SignIn(_))
            }
        }
    }
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
    /// The operator configured it ([`peers`]): it is sent the credential and the principal.
    trusted: bool,
    /// How long connecting and the handshake may take together.
    connect_timeout: Duration,
    idle: Mutex<Vec<McpClient>>,
    health: Mutex<Health>,
}

#[derive(Default)]
struct Health {
    down_until: Option<Instant>,
    /// When the current down period began (wall clock, for a person reading the status).
    down_since: Option<std::time::SystemTime>,
    reason: Option<String>,
    probing: bool,
    /// Calls sent to it (each probe included).
    attempts: u64,
    connect_failures: u64,
    /// Calls it took and left unanswered until their deadline (each marked it down).
    unanswered: u64,
    /// Calls it passed on to the next target: skipped while down, or a connect failure.
    failovers: u64,
}

impl Peer {
    fn new(url: &str, trusted: bool, connect_timeout: Duration) -> Self {
        Self {
            shown: redact_url(url),
            url: Url::parse(url),
            trusted,
            connect_timeout,
            idle: Mutex::new(Vec::new()),
            health: Mutex::new(Health::default()),
        }
    }

    fn call(
        &self,
        tool: &str,
        arguments: &str,
        hop: &Outgoing,
        routed: bool,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<Reply, HttpError> {
        let url = self.url.clone()?;
        let reused = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut client = reused.unwrap_or_else(|| McpClient::new(url, self.trusted));
        let outcome = client.call_tool(
            tool,
            arguments,
            &hop.meta(self.trusted && client::has_credential(), routed),
            deadline,
            cancelled,
            self.connect_timeout,
        );
        if client.reusable() {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            if idle.len() < IDLE_PER_PEER {
                idle.push(client);
            }
        }
        outcome
    }
}

/// One target of a list: a peer by URL, or a Consul service resolved on every call.
enum Entry {
    Url(Arc<Peer>),
    Consul(ConsulTarget),
}

/// A `consul://SERVICE` target: its instances' peers (kept across lookups, by URL) and what
/// the last lookup found, for `/api/status`.
struct ConsulTarget {
    service: String,
    instances: Mutex<HashMap<String, Arc<Peer>>>,
    last: Mutex<Lookup>,
}

#[derive(Default)]
struct Lookup {
    resolved: Vec<String>,
    at: Option<Instant>,
    error: Option<String>,
    lookups: u64,
    failures: u64,
}

/// A list of targets in priority order: the relays of this process, or a routed group's.
pub struct Relays {
    entries: Vec<Entry>,
    retry_after: Duration,
    connect_timeout: Duration,
    consul: Option<Arc<consul::Consul>>,
    /// Whose targets these are, for messages ("relay").
    what: String,
    /// A route's list: its calls are marked so the receiver never routes them again.
    routed: bool,
}

/// What a relay is doing, for `/api/status`.
enum Turn {
    Try,
    Skip(String),
}

impl Relays {
    /// A list of `targets` (URLs or `consul://SERVICE`); `consul` resolves the latter.
    pub fn new(
        targets: &[String],
        retry_after: Duration,
        connect_timeout: Duration,
        consul: Option<Arc<consul::Consul>>,
        what: &str,
    ) -> Self {
        let entries = targets
            .iter()
            .map(|t| match t.strip_prefix("consul://") {
                Some(service) => Entry::Consul(ConsulTarget {
                    service: service.to_owned(),
                    instances: Mutex::new(HashMap::new()),
                    last: Mutex::new(Lookup::default()),
                }),
                None => Entry::Url(Arc::new(Peer::new(t, true, connect_timeout))),
            })
            .collect();
        Self {
            entries,
            retry_after,
            connect_timeout,
            consul,
            what: what.to_owned(),
            routed: false,
        }
    }

    /// Calls `tool` on the first target that can be connected to, carrying `hop`.
    pub fn call(
        &self,
        tool: &str,
        arguments: &str,
        hop: &Outgoing,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<Reply, ForwardError> {
        let mut down = Vec::new();
        for entry in &self.entries {
            let peers = match entry {
                Entry::Url(peer) => vec![Arc::clone(peer)],
                Entry::Consul(target) => match self.resolve(target, deadline, cancelled) {
                    Ok(peers) => peers,
                    Err(why) => {
                        down.push((format!("consul://{}", target.service), why));
                        continue;
                    }
                },
            };
            for peer in peers {
                if let Some(outcome) =
                    self.try_peer(&peer, tool, arguments, hop, deadline, cancelled, &mut down)
                {
                    return outcome;
                }
            }
        }
        Err(ForwardError::AllDown {
            what: self.what.clone(),
            down,
        })
    }

    /// Looks `target` up in Consul now: the peers of its passing instances, in Consul's order.
    fn resolve(
        &self,
        target: &ConsulTarget,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<Vec<Arc<Peer>>, String> {
        let Some(consul) = &self.consul else {
            return Err("no Consul agent is configured".to_owned());
        };
        let outcome = consul.passing(&target.service, deadline, cancelled);
        let mut last = target.last.lock().unwrap_or_else(PoisonError::into_inner);
        last.lookups += 1;
        last.at = Some(Instant::now());
        match outcome {
            Err(e) => {
                last.failures += 1;
                last.error = Some(e.to_string());
                tracing::warn!(service = %target.service, "{e}");
                Err(e.to_string())
            }
            Ok(urls) => {
                last.error = None;
                let mut instances = target
                    .instances
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                // Peers of instances Consul no longer lists are dropped with their sessions.
                instances.retain(|url, _| urls.contains(url));
                let peers = urls
                    .iter()
                    .map(|url| {
                        Arc::clone(instances.entry(url.clone()).or_insert_with(|| {
                            Arc::new(Peer::new(url, true, self.connect_timeout))
                        }))
                    })
                    .collect();
                last.resolved = urls;
                Ok(peers)
            }
        }
    }

    /// One attempt on `peer`: `Some` with the outcome when it was reached (or failed after the
    /// request was sent), `None` when it could not be connected to (noted in `down`).
    #[allow(clippy::too_many_arguments)]
    fn try_peer(
        &self,
        peer: &Peer,
        tool: &str,
        arguments: &str,
        hop: &Outgoing,
        deadline: Instant,
        cancelled: &AtomicBool,
        down: &mut Vec<(String, String)>,
    ) -> Option<Result<Reply, ForwardError>> {
        if let Turn::Skip(why) = self.turn(peer) {
            peer.health
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .failovers += 1;
            down.push((peer.shown.clone(), why));
            return None;
        }
        peer.health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .attempts += 1;
        let outcome = peer.call(tool, arguments, hop, self.routed, deadline, cancelled);
        let mut health = peer.health.lock().unwrap_or_else(PoisonError::into_inner);
        health.probing = false;
        match outcome {
            Err(error) if error.is_before_send() => {
                health.down_until = Some(Instant::now() + self.retry_after);
                health
                    .down_since
                    .get_or_insert_with(std::time::SystemTime::now);
                health.connect_failures += 1;
                health.failovers += 1;
                health.reason = Some(error.to_string());
                tracing::warn!(
                    relay = %peer.shown,
                    "{} {} {error}; skipping it for {} s",
                    self.what,
                    peer.shown,
                    self.retry_after.as_secs()
                );
                down.push((peer.shown.clone(), error.to_string()));
                None
            }
            Err(HttpError::Timeout) => {
                // It took the call and went silent: the call is not sent elsewhere (it may
                // have run), but the calls after it are.
                health.down_until = Some(Instant::now() + self.retry_after);
                health
                    .down_since
                    .get_or_insert_with(std::time::SystemTime::now);
                health.unanswered += 1;
                health.reason = Some("took a call and sent no answer by its deadline".to_owned());
                drop(health);
                // Its idle connections lead to the same silent process.
                peer.idle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clear();
                tracing::warn!(
                    relay = %peer.shown,
                    "{} {} took a call and sent no answer by its deadline; skipping it for {} s",
                    self.what,
                    peer.shown,
                    self.retry_after.as_secs()
                );
                Some(Err(ForwardError::Peer {
                    peer: peer.shown.clone(),
                    error: HttpError::Timeout,
                }))
            }
            Err(error) => Some(Err(ForwardError::Peer {
                peer: peer.shown.clone(),
                error,
            })),
            Ok(reply) => {
                health.down_since = None;
                if health.down_until.take().is_some() {
                    tracing::info!(relay = %peer.shown, "{} {} answers again", self.what, peer.shown);
                }
                health.reason = None;
                Some(Ok(reply))
            }
        }
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

    /// Each target's state, for `/api/status`: a URL's health, or a Consul service with what
    /// its last lookup resolved to and its instances' health.
    pub fn status(&self) -> Vec<Value> {
        let now = Instant::now();
        self.entries
            .iter()
            .map(|entry| match entry {
                Entry::Url(peer) => peer.status(now),
                Entry::Consul(target) => {
                    let last = target.last.lock().unwrap_or_else(PoisonError::into_inner);
                    let instances = target
                        .instances
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    let mut entry = json!({
                        "url": format!("consul://{}", target.service),
                        "consul_service": target.service,
                        "consul": self.consul.as_ref().map_or("", |c| c.addr()),
                        "state": match (&last.error, last.at) {
                            (_, None) => "not_looked_up",
                            (Some(_), _) => "lookup_failed",
                            (None, _) => "resolved",
                        },
                        "resolved": last.resolved,
                        "lookups": last.lookups,
                        "lookup_failures": last.failures,
                        "instances": last
                            .resolved
                            .iter()
                            .filter_map(|url| instances.get(url))
                            .map(|peer| peer.status(now))
                            .collect::<Vec<_>>(),
                    });
                    if let Some(at) = last.at {
                        entry["looked_up_ms_ago"] =
                            json!(now.duration_since(at).as_millis() as u64);
                    }
                    if let Some(error) = &last.error {
                        entry["reason"] = json!(error);
                    }
                    entry
                }
            })
            .collect()
    }
}

impl Peer {
    /// This peer's health, for `/api/status`.
    fn status(&self, now: Instant) -> Value {
        let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        let mut entry = json!({
            "url": self.shown,
            "state": match health.down_until {
                Some(until) if until > now => "down",
                Some(_) => "retrying",
                None => "up",
            },
            "attempts": health.attempts,
            "connect_failures": health.connect_failures,
            "unanswered": health.unanswered,
            "failovers": health.failovers,
        });
        if let Some(until) = health.down_until.filter(|u| *u > now) {
            entry["retry_in_ms"] = json!(until.duration_since(now).as_millis() as u64);
        }
        if let Some(since) = health.down_since {
            let ms = since
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            entry["down_since_unix_ms"] = json!(ms);
        }
        if let Some(reason) = &health.reason {
            entry["reason"] = json!(reason);
        }
        entry
    }
}

impl Relays {
    /// Each target in words, Consul services looked up now: `http://…/mcp`, or
    /// `consul://seele → http://10.0.0.9:7070/mcp`, or `consul://seele: <why not>`.
    pub fn describe(&self, timeout: Duration) -> Vec<String> {
        let cancelled = AtomicBool::new(false);
        self.entries
            .iter()
            .map(|entry| match entry {
                Entry::Url(peer) => peer.shown.clone(),
                Entry::Consul(target) => {
                    let deadline = Instant::now() + timeout;
                    match self.resolve(target, deadline, &cancelled) {
                        Ok(peers) => {
                            let urls: Vec<&str> = peers.iter().map(|p| p.shown.as_str()).collect();
                            format!("consul://{} → {}", target.service, urls.join(", "))
                        }
                        Err(why) => format!("consul://{}: {why}", target.service),
                    }
                }
            })
            .collect()
    }
}

/// The Consul agent of this process, shared by every list that names a `consul://` target.
fn consul_of(config: &Settings) -> Arc<consul::Consul> {
    static CONSUL: OnceLock<Arc<consul::Consul>> = OnceLock::new();
    Arc::clone(CONSUL.get_or_init(|| Arc::new(consul::Consul::new(config.consul.clone()))))
}

/// The list of `targets`, with the Consul agent when one of them needs it.
fn list_of(config: &Settings, targets: &[String], what: &str) -> Relays {
    let consul = targets
        .iter()
        .any(|t| t.starts_with("consul://"))
        .then(|| consul_of(config));
    Relays::new(targets, config.retry, config.connect_timeout, consul, what)
}

/// The routed groups of a service-mode process: each group's list, built once.
pub fn route_of(config: &Settings, group: &str) -> Option<Arc<Relays>> {
    static ROUTES: OnceLock<Vec<(String, Arc<Relays>)>> = OnceLock::new();
    ROUTES
        .get_or_init(|| {
            config
                .routes
                .iter()
                .map(|(group, targets)| {
                    let what = format!("instance of the {group} route");
                    let mut list = list_of(config, targets, &what);
                    list.routed = true;
                    (group.clone(), Arc::new(list))
                })
                .collect()
        })
        .iter()
        .find(|(g, _)| g == group)
        .map(|(_, r)| Arc::clone(r))
}

/// Each forwarded group's route, for `/api/status` and `coremcp tools`: served from this
/// process's store, or passed on to its targets (with their state).
pub fn route_status(config: &Settings) -> Vec<Value> {
    coremcp_catalog::GROUPS
        .iter()
        .filter(|g| g.runs == coremcp_plugin_api::Runs::Forwarded)
        .map(|g| match route_of(config, g.id) {
            Some(list) => json!({
                "group": g.id,
                "route": "forwarded",
                "targets": list.status(),
            }),
            None => json!({"group": g.id, "route": "own_store"}),
        })
        .collect()
}

/// The relays of this process (`None` when none is configured: forwarded groups then run
/// in-process on the store).
pub fn relays(config: &Settings) -> Option<Arc<Relays>> {
    static RELAYS: OnceLock<Option<Arc<Relays>>> = OnceLock::new();
    RELAYS
        .get_or_init(|| {
            (!config.relays.is_empty()).then(|| Arc::new(list_of(config, &config.relays, "relay")))
        })
        .clone()
}

/// The relay states for `/api/status` (empty without relays).
pub fn relay_status(config: &Settings) -> Vec<Value> {
    relays(config).map_or_else(Vec::new, |r| r.status())
}

/// The peers the operator trusts with the credential ([`peers`]): the relays, the route
/// targets and `--peer`, built once.
pub fn trusted(config: &Settings) -> &'static peers::Peers {
    static PEERS: OnceLock<peers::Peers> = OnceLock::new();
    PEERS.get_or_init(|| {
        let routes = config.routes.iter().flat_map(|(_, targets)| targets);
        let entries = config.relays.iter().chain(routes).chain(&config.peers);
        // Every entry was parsed as a URL when the configuration was resolved.
        peers::Peers::new(entries.map(String::as_str)).unwrap_or_default()
    })
}

/// Calls `tool` on the Core MCP at `url` (a `remote_host` target): one peer, no failover. The
/// credential and the principal go only to a URL the operator allowed ([`trusted`]).
pub fn call_remote(
    config: &Settings,
    url: &str,
    tool: &str,
    arguments: &str,
    hop: &Outgoing,
    deadline: Instant,
    cancelled: &AtomicBool,
) -> Result<Reply, ForwardError> {
    static REMOTES: OnceLock<Mutex<HashMap<String, Arc<Peer>>>> = OnceLock::new();
    let peer = REMOTES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(url.to_owned())
        .or_insert_with(|| {
            Arc::new(Peer::new(
                url,
                trusted(config).allows(url),
                config.connect_timeout,
            ))
        })
        .clone();
    peer.call(tool, arguments, hop, false, deadline, cancelled)
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
        let relays = Relays::new(
            &[dead.clone(), other.clone()],
            Duration::from_millis(300),
            Duration::from_secs(2),
            None,
            "relay",
        );
        let cancelled = AtomicBool::new(false);
        let deadline = || Instant::now() + Duration::from_secs(5);
        let err = relays
            .call("x", "{}", &Outgoing::default(), deadline(), &cancelled)
            .expect_err("all down");
        let text = err.to_string();
        assert!(text.starts_with("no relay could take the call: "), "{text}");
        assert!(text.contains(&dead) && text.contains(&other), "{text}");
        // Within the period nobody connects again.
        let err = relays
            .call("x", "{}", &Outgoing::default(), deadline(), &cancelled)
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
        assert!(relays
            .call("x", "{}", &Outgoing::default(), deadline(), &cancelled)
            .is_err());
        assert_eq!(failures(&relays), [2, 2]);
    }

    /// A peer on loopback that answers `server/discover` as a 2026 Core MCP and then takes
    /// every other request without ever answering; the requests it got, in order.
    fn hangs_after_discover() -> (String, Arc<Mutex<Vec<String>>>) {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut held = stream;
                    loop {
                        let mut length = 0;
                        let mut line = String::new();
                        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                            if line == "\r\n" {
                                break;
                            }
                            if let Some(v) =
                                line.to_ascii_lowercase().strip_prefix("content-length:")
                            {
                                length = v.trim().parse().expect("length");
                            }
                            line.clear();
                        }
                        if line.is_empty() {
                            return;
                        }
                        let mut body = vec![0; length];
                        reader.read_exact(&mut body).expect("body");
                        let request: Value = serde_json::from_slice(&body).expect("json");
                        let method = request["method"].as_str().unwrap_or_default().to_owned();
                        log.lock().expect("log").push(method.clone());
                        if method != "server/discover" {
                            // Taken, never answered: the connection stays open and silent.
                            std::thread::sleep(Duration::from_secs(3600));
                        }
                        let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {
                            "supportedVersions": ["2026-07-28"], "capabilities": {},
                            "serverInfo": {"name": "hung", "version": "0"}}})
                        .to_string();
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            answer.len()
                        );
                        held.write_all(head.as_bytes()).expect("write");
                        held.write_all(answer.as_bytes()).expect("write");
                    }
                });
            }
        });
        (url, seen)
    }

    #[test]
    fn a_peer_silent_in_the_handshake_is_failed_over_within_the_connect_timeout() {
        // Accepts connections (the kernel's backlog) and never answers anything.
        let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
        let silent_url = format!("http://{}/mcp", silent.local_addr().expect("addr"));
        let second = dead_url();
        let relays = Relays::new(
            &[silent_url.clone(), second.clone()],
            Duration::from_secs(30),
            Duration::from_millis(200),
            None,
            "relay",
        );
        let cancelled = AtomicBool::new(false);
        let started = Instant::now();
        let err = relays
            .call(
                "x",
                "{}",
                &Outgoing::default(),
                Instant::now() + Duration::from_secs(20),
                &cancelled,
            )
            .expect_err("both down");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "{took:?}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("{silent_url} (cannot connect to"))
                && text.contains("no answer to server/discover within the 0.2 s connect timeout"),
            "{text}"
        );
        assert!(text.contains(&second), "the next relay was tried: {text}");
        assert!(!err.may_have_run(), "no tool call was sent");
        assert_eq!(relays.status()[0]["state"], "down");
        assert_eq!(relays.status()[0]["connect_failures"], 1);
    }

    #[test]
    fn a_peer_that_takes_a_call_and_hangs_is_marked_down_and_the_call_not_sent_on() {
        let (hung_url, seen) = hangs_after_discover();
        let second = dead_url();
        let relays = Relays::new(
            &[hung_url.clone(), second],
            Duration::from_secs(30),
            Duration::from_secs(2),
            None,
            "relay",
        );
        let cancelled = AtomicBool::new(false);
        let err = relays
            .call(
                "x",
                "{}",
                &Outgoing::default(),
                Instant::now() + Duration::from_millis(400),
                &cancelled,
            )
            .expect_err("timeout");
        match &err {
            ForwardError::Peer { peer, error } => {
                assert_eq!(peer, &hung_url);
                assert!(matches!(error, HttpError::Timeout), "{error}");
            }
            other => panic!("expected the hung relay's timeout, got {other}"),
        }
        assert!(err.may_have_run());
        assert_eq!(
            *seen.lock().expect("seen"),
            ["server/discover", "tools/call"]
        );
        // The next relay was not tried for this call, but the hung one is now skipped.
        let status = relays.status();
        assert_eq!(status[1]["attempts"], 0);
        assert_eq!(status[0]["state"], "down");
        assert_eq!(status[0]["unanswered"], 1);
        assert_eq!(status[0]["connect_failures"], 0);
        let next = relays
            .call(
                "x",
                "{}",
                &Outgoing::default(),
                Instant::now() + Duration::from_secs(5),
                &cancelled,
            )
            .expect_err("the second is dead too");
        let text = next.to_string();
        assert!(
            text.contains("sent no answer by its deadline; skipped for"),
            "{text}"
        );
        assert_eq!(relays.status()[1]["attempts"], 1, "went on to the next");
        assert_eq!(
            seen.lock().expect("seen").len(),
            2,
            "not sent to the hung one"
        );
    }
}
