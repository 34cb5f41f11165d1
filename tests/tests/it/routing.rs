//! Service routing through the real binary: a relay (`coremcp serve --service --route
//! seele=…`) passes Seele's calls on to the Core MCP that owns the group, found by URL or in
//! Consul on every call (a Consul double: Consul cannot be installed here, see
//! `coremcp_tests::consul`). The owners are `coremcp serve --service` processes on their own
//! stores, so the store that answers tells which owner a call reached.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use coremcp_tests::consul::{ConsulDouble, Instance};
use coremcp_tests::http::{request, Serve};
use coremcp_tests::{plugins, Server, TempDir};
use serde_json::{json, Value};

/// A `coremcp serve --service` on its own SQLite store.
fn owner(dir: &std::path::Path, data: &TempDir) -> Serve {
    let data = data.path().to_string_lossy().into_owned();
    Serve::start(dir, &["--service", "--data", &data])
}

fn mcp(addr: SocketAddr) -> String {
    format!("http://{addr}/mcp")
}

/// The agent's side: `coremcp stdio --relay URL`.
fn agent(dir: &std::path::Path, relay: &Serve, data: &TempDir) -> Server {
    let data = data.path().to_string_lossy().into_owned();
    let mut server = Server::start(dir, &["--data", &data, "--relay", &mcp(relay.addr)], &[]);
    server.initialize();
    server
}

fn status(addr: SocketAddr) -> Value {
    request(addr, "GET", "/api/status", &[], b"").json()
}

fn seele_route(status: &Value) -> Value {
    let routes = status["routes"].as_array().expect("routes");
    routes
        .iter()
        .find(|r| r["group"] == "seele")
        .expect("seele route")
        .clone()
}

/// Which owner has the node: its title names it.
fn where_is(s: &mut Server, path: &str) -> String {
    let node = s.call("seele_read", json!({"path": path}));
    match coremcp_tests::is_error(&node) {
        true => "nowhere".to_owned(),
        false => node["structuredContent"]["title"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    }
}

#[test]
fn a_consul_route_follows_the_service_on_every_call() {
    let dir = plugins(&["seele"]);
    let (data_a, data_b, data_r, data_p) = (
        TempDir::new("owner-a"),
        TempDir::new("owner-b"),
        TempDir::new("relay"),
        TempDir::new("agent"),
    );
    let (a, b) = (owner(dir.path(), &data_a), owner(dir.path(), &data_b));
    let consul = ConsulDouble::start();
    consul.require_token("s3cret");
    consul.set("seele", vec![Instance::at("node-a", a.addr)]);
    let data = data_r.path().to_string_lossy().into_owned();
    let relay = Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &[
            "--service",
            "--data",
            &data,
            "--route",
            "seele=consul://seele",
            "--consul",
            &consul.addr.to_string(),
        ],
        &[("CONSUL_HTTP_TOKEN", "s3cret")],
    );
    let mut s = agent(dir.path(), &relay, &data_p);
    for (name, owner) in [("a", &a), ("b", &b)] {
        // Each owner holds a node whose title says who it is.
        let mut direct = Server::start(dir.path(), &["--relay", &mcp(owner.addr)], &[]);
        direct.initialize();
        direct.ok(
            "seele_write",
            json!({"path": "who", "title": name, "body": name}),
        );
    }
    assert_eq!(where_is(&mut s, "who"), "a");
    let route = seele_route(&status(relay.addr));
    assert_eq!(route["route"], "forwarded");
    assert_eq!(route["targets"][0]["consul_service"], "seele");
    assert_eq!(route["targets"][0]["resolved"], json!([mcp(a.addr)]));

    // The service moves: the very next call goes to B, with no restart.
    consul.set("seele", vec![Instance::at("node-b", b.addr)]);
    assert_eq!(where_is(&mut s, "who"), "b");
    assert_eq!(
        seele_route(&status(relay.addr))["targets"][0]["resolved"],
        json!([mcp(b.addr)])
    );

    // Two instances, in Consul's order; a critical one is not used.
    consul.set(
        "seele",
        vec![
            Instance::at("node-a", a.addr),
            Instance::at("node-b", b.addr),
        ],
    );
    assert_eq!(where_is(&mut s, "who"), "a");
    consul.mark("seele", "node-a", "critical");
    assert_eq!(where_is(&mut s, "who"), "b");
    consul.mark("seele", "node-a", "passing");

    // An instance that cannot be connected to is failed over, as in the relay list.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead_addr = dead.local_addr().expect("addr");
    drop(dead);
    consul.set(
        "seele",
        vec![
            Instance::at("node-dead", dead_addr),
            Instance::at("node-b", b.addr),
        ],
    );
    assert_eq!(where_is(&mut s, "who"), "b");

    // None passing: one error naming the service and what Consul answered.
    consul.mark("seele", "node-b", "critical");
    consul.mark("seele", "node-dead", "critical");
    let none = s.refused("seele_read", json!({"path": "who"}));
    assert!(
        none.contains("consul://seele")
            && none.contains("no passing instance of seele")
            && none.contains("200"),
        "{none}"
    );

    // A wrong token: Consul's 403 is named.
    let wrong = Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &[
            "--service",
            "--data",
            &data,
            "--route",
            "seele=consul://seele",
            "--consul",
            &consul.addr.to_string(),
        ],
        &[("CONSUL_HTTP_TOKEN", "wrong")],
    );
    let mut w = agent(dir.path(), &wrong, &TempDir::new("agent-w"));
    let denied = w.refused("seele_read", json!({"path": "who"}));
    assert!(
        denied.contains("403") && denied.contains("ACL not found"),
        "{denied}"
    );

    // Consul itself goes away: a clear error, well within the connect timeout.
    consul.set("seele", vec![Instance::at("node-a", a.addr)]);
    assert_eq!(where_is(&mut s, "who"), "a");
    consul.stop();
    let started = Instant::now();
    let gone = s.refused("seele_read", json!({"path": "who"}));
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        gone.contains(&format!("Consul at {}", consul.addr)) && gone.contains("seele"),
        "{gone}"
    );
    let route = seele_route(&status(relay.addr));
    assert_eq!(route["targets"][0]["state"], "lookup_failed");
}

#[test]
fn a_url_route_passes_calls_on_and_the_rest_stays_served_here() {
    let dir = plugins(&["seele", "notepad"]);
    let (data_a, data_r, data_p) = (
        TempDir::new("owner"),
        TempDir::new("relay"),
        TempDir::new("agent"),
    );
    let a = owner(dir.path(), &data_a);
    let data = data_r.path().to_string_lossy().into_owned();
    // The relay has no Seele library of its own: a routed group needs none.
    let relay_plugins = plugins(&["notepad"]);
    let relay = Serve::start(
        relay_plugins.path(),
        &[
            "--service",
            "--data",
            &data,
            "--route",
            &format!("seele={}", mcp(a.addr)),
        ],
    );
    let mut s = agent(dir.path(), &relay, &data_p);
    s.ok(
        "seele_write",
        json!({"path": "routed", "title": "t", "body": "b"}),
    );
    s.ok(
        "notepad_set",
        json!({"scope": "global", "key": "k", "value": "here"}),
    );
    // Seele's node is in the owner's store, Notepad's note in the relay's.
    let owner_db = data_a.path().join("seele.sqlite3");
    let relay_db = data_r.path().join("seele.sqlite3");
    assert!(owner_db.exists(), "the owner stored the node");
    assert!(
        !relay_db.exists(),
        "the relay opened no Seele store of its own"
    );
    assert!(
        data_r.path().join("nervhq.sqlite3").exists(),
        "notepad is served by the relay"
    );
    let route = seele_route(&status(relay.addr));
    assert_eq!(route["targets"][0]["url"], mcp(a.addr));
    let scrolls = status(relay.addr)["routes"]
        .as_array()
        .expect("routes")
        .iter()
        .find(|r| r["group"] == "scrolls")
        .cloned()
        .expect("scrolls");
    assert_eq!(scrolls["route"], "own_store");

    // A route to a service that routes the group again is refused there: one hop only.
    let data_x = TempDir::new("relay-x");
    let x = Serve::start(
        dir.path(),
        &[
            "--service",
            "--data",
            &data_x.path().to_string_lossy(),
            "--route",
            &format!("seele={}", mcp(relay.addr)),
        ],
    );
    let mut through_x = agent(dir.path(), &x, &TempDir::new("agent-x"));
    let looped = through_x.refused("seele_read", json!({"path": "routed"}));
    assert!(looped.contains("route_loop"), "{looped}");

    // `coremcp tools` shows the route, and a route in a proxy is refused.
    let target = format!("seele={}", mcp(a.addr));
    let (code, out, _) = coremcp_tests::run(
        &[
            "--plugins",
            &dir.path().to_string_lossy(),
            "--route",
            &target,
            "tools",
        ],
        &[],
    );
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("route seele: {}", mcp(a.addr))),
        "{out}"
    );
    let (code, _, err) = coremcp_tests::run(&["--route", &target, "stdio"], &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--route applies to coremcp serve --service"),
        "{err}"
    );
    let (code, _, err) = coremcp_tests::run(&["--route", "git=http://x:1/mcp", "tools"], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("not a forwarded group"), "{err}");
}

/// Three processes: agents' `coremcp stdio --relay consul://relay` → a relay found in Consul
/// (`--route seele=consul://seele`, `--route scrolls=URL`) → the owning `coremcp serve
/// --service` on PostgreSQL. A second agent, through its own proxy, sees the first one's
/// writes in both groups.
#[test]
fn three_processes_through_consul_to_an_owner_on_postgres() {
    use coremcp_tests::stores::StoreEnv;
    let dir = plugins(&["seele", "scrolls"]);
    let Some(store) = StoreEnv::postgres("routing-three") else {
        return;
    };
    let args = store.args();
    let mut owner_args: Vec<&str> = vec!["--service"];
    owner_args.extend(args.iter().map(String::as_str));
    let owner = Serve::start(dir.path(), &owner_args);
    let consul = ConsulDouble::start();
    consul.set("seele", vec![Instance::at("owner", owner.addr)]);
    let data_r = TempDir::new("relay");
    let data = data_r.path().to_string_lossy().into_owned();
    let scrolls = format!("scrolls={}", mcp(owner.addr));
    let consul_addr = consul.addr.to_string();
    let relay = Serve::start(
        dir.path(),
        &[
            "--service",
            "--data",
            &data,
            "--route",
            "seele=consul://seele",
            "--route",
            &scrolls,
            "--consul",
            &consul_addr,
        ],
    );
    consul.set("relay", vec![Instance::at("relay", relay.addr)]);
    let proxy = |label: &str| {
        let data = TempDir::new(label);
        let path = data.path().to_string_lossy().into_owned();
        let mut server = Server::start(
            dir.path(),
            &[
                "--data",
                &path,
                "--relay",
                "consul://relay",
                "--consul",
                &consul_addr,
            ],
            &[],
        );
        server.initialize();
        (server, data)
    };
    let (mut one, _d1) = proxy("agent-1");
    one.ok(
        "seele_write",
        json!({"path": "core/relays", "title": "Relays", "body": "Quorum first."}),
    );
    one.ok(
        "scrolls_project_create",
        json!({"key": "CORE", "title": "Core"}),
    );
    let (mut two, _d2) = proxy("agent-2");
    let found = two.ok("seele_search", json!({"query": "quorum"}));
    assert_eq!(found["items"][0]["path"], "core/relays");
    assert_eq!(
        two.ok("scrolls_project_get", json!({"id": "CORE"}))["title"],
        "Core"
    );
    // Both writes are in the owner's PostgreSQL schemas, none in the relay's own store.
    assert_eq!(
        store.query(
            "seele",
            "SELECT COUNT(*) FROM seele_node WHERE path = 'core/relays'"
        )[0][0]
            .as_deref(),
        Some("1")
    );
    assert!(!data_r.path().join("seele.sqlite3").exists());
    assert!(!data_r.path().join("scrolls.sqlite3").exists());
}
