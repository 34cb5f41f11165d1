//! A Consul agent double for the routing tests. Consul cannot be installed on these machines,
//! so this serves the one endpoint Core MCP reads, `GET /v1/health/service/SERVICE`, with the
//! JSON shape of Consul's HTTP API documentation (Health → "List Service Instances for
//! Service": an array of `{"Node", "Service", "Checks"}` entries) and its `passing` filter
//! (an entry is left out when one of its checks is not `passing`). It speaks real HTTP/1.1
//! with keep-alive, answers 403 like Consul's ACLs when a token is required and missing or
//! wrong, and can be taken away whole (`stop`: the listener and every connection closed).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

/// One registered instance of a service.
#[derive(Debug, Clone)]
pub struct Instance {
    pub node: String,
    /// The node's address (used when `service_address` is empty, as Consul does).
    pub node_address: String,
    pub service_address: String,
    pub port: u16,
    /// `passing`, `warning` or `critical`.
    pub status: String,
}

impl Instance {
    /// A passing instance at `addr` (`host:port`), registered with its service address.
    pub fn at(node: &str, addr: SocketAddr) -> Self {
        Self {
            node: node.to_owned(),
            node_address: "192.0.2.1".to_owned(),
            service_address: addr.ip().to_string(),
            port: addr.port(),
            status: "passing".to_owned(),
        }
    }
}

#[derive(Default)]
struct State {
    services: HashMap<String, Vec<Instance>>,
    token: Option<String>,
}

/// The running double.
pub struct ConsulDouble {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stopped: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    /// Requests served.
    pub requests: Arc<AtomicU64>,
}

impl ConsulDouble {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the Consul double");
        let addr = listener.local_addr().expect("addr");
        listener.set_nonblocking(true).expect("nonblocking");
        let double = Self {
            addr,
            state: Arc::default(),
            stopped: Arc::default(),
            conns: Arc::default(),
            requests: Arc::default(),
        };
        let (state, stopped, conns, requests) = (
            double.state.clone(),
            double.stopped.clone(),
            double.conns.clone(),
            double.requests.clone(),
        );
        thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        // As Consul's Go server does: no Nagle delay on small answers.
                        let _ = stream.set_nodelay(true);
                        if let Ok(clone) = stream.try_clone() {
                            conns.lock().expect("conns").push(clone);
                        }
                        let (state, requests) = (state.clone(), requests.clone());
                        thread::spawn(move || serve(stream, &state, &requests));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
            // The listener is dropped here: connects are refused from now on.
        });
        double
    }

    /// Registers `instances` as the whole of `service` (an empty list deregisters it).
    pub fn set(&self, service: &str, instances: Vec<Instance>) {
        let mut state = self.state.lock().expect("state");
        state.services.insert(service.to_owned(), instances);
    }

    /// Sets the status of the instance on `node` of `service`.
    pub fn mark(&self, service: &str, node: &str, status: &str) {
        let mut state = self.state.lock().expect("state");
        for i in state.services.entry(service.to_owned()).or_default() {
            if i.node == node {
                i.status = status.to_owned();
            }
        }
    }

    /// Requires this ACL token in `X-Consul-Token`.
    pub fn require_token(&self, token: &str) {
        self.state.lock().expect("state").token = Some(token.to_owned());
    }

    /// Takes the agent away: no new connection is accepted and every open one is closed.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        for conn in self.conns.lock().expect("conns").drain(..) {
            let _ = conn.shutdown(std::net::Shutdown::Both);
        }
        // Wait for the accept loop to drop the listener.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(self.addr).is_ok() && std::time::Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ConsulDouble {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>, requests: &AtomicU64) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let target = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
        let mut token = None;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("x-consul-token") {
                    token = Some(value.trim().to_owned());
                }
            }
        }
        requests.fetch_add(1, Ordering::SeqCst);
        let (status, body) = answer(&target, token.as_deref(), state);
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nX-Consul-Index: 42\r\n\
             X-Consul-Knownleader: true\r\nX-Consul-Lastcontact: 0\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        if out
            .write_all(head.as_bytes())
            .and_then(|()| out.write_all(body.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

fn answer(target: &str, token: Option<&str>, state: &Mutex<State>) -> (&'static str, String) {
    let state = state.lock().expect("state");
    if state.token.is_some() && state.token.as_deref() != token {
        return ("403 Forbidden", "ACL not found".to_owned());
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let Some(service) = path.strip_prefix("/v1/health/service/") else {
        return ("404 Not Found", "404 page not found".to_owned());
    };
    let passing = query
        .split('&')
        .any(|p| p == "passing" || p == "passing=true");
    let entries: Vec<Value> = state
        .services
        .get(service)
        .into_iter()
        .flatten()
        .filter(|i| !passing || i.status == "passing")
        .map(|i| entry(service, i))
        .collect();
    ("200 OK", Value::from(entries).to_string())
}

/// One entry as Consul's health endpoint writes it.
fn entry(service: &str, i: &Instance) -> Value {
    let id = format!("{service}-{}", i.node);
    json!({
        "Node": {
            "ID": "40e4a748-2192-161a-0510-9bf59fe950b5",
            "Node": i.node,
            "Address": i.node_address,
            "Datacenter": "dc1",
            "TaggedAddresses": {"lan": i.node_address, "wan": i.node_address},
            "Meta": {"consul-network-segment": ""},
            "CreateIndex": 7,
            "ModifyIndex": 9
        },
        "Service": {
            "ID": id,
            "Service": service,
            "Tags": ["mcp"],
            "Address": i.service_address,
            "TaggedAddresses": {},
            "Meta": null,
            "Port": i.port,
            "Weights": {"Passing": 10, "Warning": 1},
            "EnableTagOverride": false,
            "Namespace": "default",
            "CreateIndex": 12,
            "ModifyIndex": 12
        },
        "Checks": [
            {"Node": i.node, "CheckID": "serfHealth", "Name": "Serf Health Status",
             "Status": "passing", "Notes": "", "Output": "Agent alive and reachable",
             "ServiceID": "", "ServiceName": "", "ServiceTags": [], "Namespace": "default"},
            {"Node": i.node, "CheckID": format!("service:{id}"),
             "Name": format!("Service '{service}' check"), "Status": i.status, "Notes": "",
             "Output": "", "ServiceID": id, "ServiceName": service, "ServiceTags": ["mcp"],
             "Namespace": "default"}
        ]
    })
}
