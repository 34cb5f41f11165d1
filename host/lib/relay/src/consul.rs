//! Service addresses from Consul's health API (`GET /v1/health/service/SERVICE?passing=true`),
//! looked up on **every** call so a service that moves is reached on the next call.
//!
//! Each entry of Consul's answer is `{"Node": {"Address", …}, "Service": {"Address", "Port",
//! …}, "Checks": […]}`; an instance is reached at `http://ADDRESS:PORT/mcp`, with the service
//! address, or the node's when the service has none (as Consul's DNS interface does). The
//! order is Consul's.
//!
//! Invariants:
//! - One lookup waits at most [`LOOKUP_TIMEOUT`] (connect and answer) and never past the
//!   call's deadline, so an agent that is gone or hangs costs a bounded wait, never a hang.
//! - One kept-alive connection to the agent is reused across lookups; a broken one is dropped.
//! - Every failure names the agent and what it answered (status and the start of the body).

use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use coremcp_net::client::{Conn, HttpError, Url};

/// Consul's own default agent address.
pub const DEFAULT_AGENT: &str = "127.0.0.1:8500";

/// The Consul agent `consul://` targets are resolved with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// `host:port` of the agent's HTTP API.
    pub addr: String,
    /// Sent as `X-Consul-Token` when set.
    pub token: Option<String>,
}

impl Default for Agent {
    fn default() -> Self {
        Self {
            addr: DEFAULT_AGENT.to_owned(),
            token: None,
        }
    }
}

/// How long one lookup may take, connect included.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);
/// The most of an unexpected answer quoted in an error.
const QUOTED: usize = 200;

/// Why a service could not be resolved.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum ConsulError {
    /// The agent could not be reached or did not answer in time.
    #[error("Consul at {agent} could not be asked for {service}: {error}")]
    Unreachable {
        agent: String,
        service: String,
        error: HttpError,
    },
    /// The agent answered, but not with a list of instances.
    #[error("Consul at {agent} answered {status} for {service}: {body}")]
    Answer {
        agent: String,
        service: String,
        status: u16,
        body: String,
    },
    /// The agent lists no passing instance.
    #[error("Consul at {agent} lists no passing instance of {service} (it answered {answer})")]
    NonePassing {
        agent: String,
        service: String,
        answer: String,
    },
}

/// A Consul agent's HTTP API.
pub struct Consul {
    agent: Agent,
    conn: Mutex<Option<Conn>>,
}

impl Consul {
    pub fn new(agent: Agent) -> Self {
        Self {
            agent,
            conn: Mutex::new(None),
        }
    }

    /// The agent's address, for messages and the status page.
    pub fn addr(&self) -> &str {
        &self.agent.addr
    }

    /// The MCP URLs of the passing instances of `service`, in Consul's order.
    pub(crate) fn passing(
        &self,
        service: &str,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<Vec<String>, ConsulError> {
        let deadline = deadline.min(Instant::now() + LOOKUP_TIMEOUT);
        let unreachable = |error: HttpError| ConsulError::Unreachable {
            agent: self.agent.addr.clone(),
            service: service.to_owned(),
            error,
        };
        let url = Url::parse(&format!(
            "http://{}/v1/health/service/{service}?passing=true",
            self.agent.addr
        ))
        .map_err(unreachable)?;
        let (status, body) = self.get(&url, deadline, cancelled).map_err(unreachable)?;
        let text = String::from_utf8_lossy(&body);
        let quoted = || {
            text.chars()
                .take(QUOTED)
                .collect::<String>()
                .trim()
                .to_owned()
        };
        if status != 200 {
            return Err(ConsulError::Answer {
                agent: self.agent.addr.clone(),
                service: service.to_owned(),
                status,
                body: quoted(),
            });
        }
        let entries = match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Array(entries)) => entries,
            _ => {
                return Err(ConsulError::Answer {
                    agent: self.agent.addr.clone(),
                    service: service.to_owned(),
                    status,
                    body: format!("not a JSON list of instances: {}", quoted()),
                })
            }
        };
        let urls: Vec<String> = entries.iter().filter_map(instance_url).collect();
        if urls.is_empty() {
            return Err(ConsulError::NonePassing {
                agent: self.agent.addr.clone(),
                service: service.to_owned(),
                answer: format!("200 with {} usable entries: {}", entries.len(), quoted()),
            });
        }
        Ok(urls)
    }

    /// One GET on the kept connection (a new one when there is none or it went stale).
    fn get(
        &self,
        url: &Url,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> Result<(u16, Vec<u8>), HttpError> {
        let mut slot = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = slot.take().and_then(|mut c| c.alive().then_some(c));
        let mut conn = match kept {
            Some(conn) => conn,
            None => {
                let left = deadline.saturating_duration_since(Instant::now());
                Conn::connect(url, left.max(Duration::from_millis(1)))?
            }
        };
        let mut headers: Vec<(&str, &str)> = vec![("Accept", "application/json")];
        if let Some(token) = &self.agent.token {
            headers.push(("X-Consul-Token", token));
        }
        let (status, body) = {
            let mut response = conn.exchange(url, "GET", &headers, b"", deadline, cancelled)?;
            let status = response.status;
            (status, response.read_all(deadline, cancelled)?)
        };
        if conn.alive() {
            *slot = Some(conn);
        }
        Ok((status, body))
    }
}

/// `http://ADDRESS:PORT/mcp` of one health entry: the service's address, else the node's.
fn instance_url(entry: &Value) -> Option<String> {
    let service = &entry["Service"];
    let port = service["Port"]
        .as_u64()
        .filter(|p| (1..=65535).contains(p))?;
    let address = service["Address"]
        .as_str()
        .filter(|a| !a.is_empty())
        .or_else(|| entry["Node"]["Address"].as_str().filter(|a| !a.is_empty()))?;
    if address.contains(['/', '@', ' ', '?', '#']) {
        return None;
    }
    Some(match address.contains(':') {
        true => format!("http://[{address}]:{port}/mcp"),
        false => format!("http://{address}:{port}/mcp"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn instances_use_the_service_address_else_the_node_address() {
        let entry = |node: &str, service: &str, port: u64| {
            json!({"Node": {"Node": "n1", "Address": node},
                   "Service": {"ID": "seele-1", "Service": "seele", "Address": service, "Port": port},
                   "Checks": []})
        };
        assert_eq!(
            instance_url(&entry("10.0.0.1", "10.0.0.9", 7070)).as_deref(),
            Some("http://10.0.0.9:7070/mcp")
        );
        assert_eq!(
            instance_url(&entry("10.0.0.1", "", 7070)).as_deref(),
            Some("http://10.0.0.1:7070/mcp")
        );
        assert_eq!(
            instance_url(&entry("", "fd00::1", 7070)).as_deref(),
            Some("http://[fd00::1]:7070/mcp")
        );
        assert_eq!(instance_url(&entry("10.0.0.1", "", 0)), None);
        assert_eq!(instance_url(&entry("evil@host/x", "", 80)), None);
        assert_eq!(instance_url(&json!({"Service": {}})), None);
    }

    #[test]
    fn an_agent_that_is_gone_is_a_clear_error_within_the_timeout() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        drop(listener);
        let consul = Consul::new(Agent {
            addr: addr.clone(),
            token: None,
        });
        let started = Instant::now();
        let err = consul
            .passing(
                "seele",
                Instant::now() + Duration::from_secs(30),
                &AtomicBool::new(false),
            )
            .expect_err("nobody listens");
        assert!(started.elapsed() <= LOOKUP_TIMEOUT + Duration::from_millis(500));
        let text = err.to_string();
        assert!(text.contains(&addr) && text.contains("seele"), "{text}");
    }
}
