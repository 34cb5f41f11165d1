//! The trust boundaries of forwarding, through real processes: who may write where a
//! `remote_host` call goes, where the relay token goes, that a `remote_host` call is judged as
//! if it ran here and again, for the same principal, where it runs, and that a call that comes
//! back to a Core MCP it passed through is refused at once.

use std::time::{Duration, Instant};

use coremcp_tests::http::{Client, Recorder, Serve};
use coremcp_tests::{is_error, plugins, text, Server, TempDir};
use serde_json::json;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";
const PEER: &str = "peer-token-0123456789a";

/// A tokens file of alice, bob and peer in `dir`.
fn tokens(dir: &TempDir) -> String {
    coremcp_tests::tokens_file(dir, &[("alice", ALICE), ("bob", BOB), ("peer", PEER)])
}

/// A client of `serve` holding `token`, initialized.
fn client(serve: &Serve, token: &str) -> Client {
    let mut client = serve.client();
    client.token = Some(token.to_owned());
    client.initialize();
    client
}

fn url(serve: &Serve) -> String {
    format!("http://{}/mcp", serve.addr)
}

/// The Registry's host names.
fn host_names(client: &mut Client) -> Vec<String> {
    let listed = client.call("registry_host_list", json!({"status": "all"}));
    listed["structuredContent"]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|h| h["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_registry_record_earns_no_credential_and_remote_host_is_no_way_around_the_policy() {
    let dir = plugins(&["registry", "notepad", "ops"]);
    let secrets = TempDir::new("trust-tokens");
    let data = TempDir::new("trust-data");
    let tokens = tokens(&secrets);
    let data_path = data.path().to_string_lossy().into_owned();
    // The attack's set-up: alice and peer hold ops, the relay token is peer's, bob has no
    // grant; alice may also write Registry host addresses.
    let server = Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &[
            "--tokens",
            &tokens,
            "--data",
            &data_path,
            "--grants",
            "alice=ops,registry_host_add;peer=ops",
        ],
        &[("COREMCP_RELAY_TOKEN", PEER)],
    );
    let stolen = Recorder::start(
        "127.0.0.1",
        b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n",
    );
    let evil = format!("http://{}/mcp", stolen.addr);
    let mut bob = client(&server, BOB);
    let mut alice = client(&server, ALICE);

    // Bob may not say where calls go: the write is refused and nothing is written.
    let refused = bob.call(
        "registry_host_add",
        json!({"name": "evil", "address": "127.0.0.1", "core_mcp_url": evil}),
    );
    assert!(is_error(&refused), "{refused}");
    let why = text(&refused);
    assert!(
        why.contains(
            "registry_host_add with core_mcp_url or docker_endpoint is refused to the token \"bob\""
        ) && why.contains("names the tool itself"),
        "{why}"
    );
    let refused = bob.call(
        "registry_host_add",
        json!({"name": "box", "address": "127.0.0.1", "docker_endpoint": "tcp://127.0.0.1:9"}),
    );
    assert!(is_error(&refused), "{refused}");
    assert!(host_names(&mut bob).is_empty());
    // A host without an address is still bob's to add.
    let plain = bob.call(
        "registry_host_add",
        json!({"name": "plain", "address": "127.0.0.9"}),
    );
    assert!(!is_error(&plain), "{plain}");

    // A granted principal writes the record, but a record alone earns no credential: the call
    // reaches the listener without a token, and the answer says why.
    let added = alice.call(
        "registry_host_add",
        json!({"name": "evil", "address": "127.0.0.1", "core_mcp_url": evil}),
    );
    assert!(!is_error(&added), "{added}");
    let answer = bob.call("notepad_list", json!({"remote_host": "evil"}));
    assert!(is_error(&answer), "{answer}");
    assert!(
        text(&answer).contains("401") && text(&answer).contains("--peer"),
        "{answer}"
    );
    let requests = stolen.requests();
    assert!(!requests.is_empty(), "the listener was never called");
    for request in &requests {
        let lower = request.to_ascii_lowercase();
        assert!(
            !lower.contains("authorization") && !request.contains(PEER),
            "a credential reached a Registry record's URL:\n{request}"
        );
        assert!(!request.contains("dev.coremcp/principal"), "{request}");
    }

    // remote_host is judged as if the call ran here: bob's shell_run is refused before it
    // goes anywhere, exactly as without remote_host.
    let this = url(&server);
    let added = alice.call(
        "registry_host_add",
        json!({"name": "self", "address": "127.0.0.1", "core_mcp_url": this}),
    );
    assert!(!is_error(&added), "{added}");
    let script = json!({"script": "echo ran > ran-by-bob.txt"});
    let here = bob.call("shell_run", script.clone());
    let mut there_args = script.clone();
    there_args["remote_host"] = json!("self");
    let there = bob.call("shell_run", there_args);
    for refused in [&here, &there] {
        assert!(is_error(refused), "{refused}");
        assert!(
            text(refused).contains("shell_run is refused to the token \"bob\""),
            "{refused}"
        );
    }
    // A granted principal's call goes, but without the relay token (this URL is no configured
    // peer), so it cannot run as peer over there either.
    let started = Instant::now();
    let tokenless = alice.call(
        "shell_run",
        json!({"script": "echo x > ran-by-alice.txt", "remote_host": "self"}),
    );
    assert!(is_error(&tokenless), "{tokenless}");
    assert!(text(&tokenless).contains("401"), "{tokenless}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(!std::path::Path::new("ran-by-alice.txt").exists());
    assert!(!std::path::Path::new("ran-by-bob.txt").exists());
}

#[test]
fn a_configured_peer_gets_the_token_and_the_principal_and_judges_the_same_principal() {
    // The far machine: a proxy-mode serve whose only grant is peer's, which knows the
    // calling Core MCP's token as a peer.
    let far_dir = plugins(&["ops"]);
    let far_secrets = TempDir::new("trust-far-tokens");
    let far_tokens = tokens(&far_secrets);
    let far_root = TempDir::new("trust-far-root");
    let far_root_path = far_root.path().to_string_lossy().into_owned();
    let far = Serve::start_on(
        far_dir.path(),
        "127.0.0.2:0",
        &[
            "--tokens",
            &far_tokens,
            "--peer-token",
            "peer",
            "--grants",
            "peer=ops;alice=shell_run",
            "--root",
            &far_root_path,
        ],
        &[],
    );
    let far_url = url(&far);
    let near_dir = plugins(&["registry", "ops"]);
    let near_secrets = TempDir::new("trust-near-tokens");
    let near_tokens = tokens(&near_secrets);
    let data = TempDir::new("trust-near-data");
    let data_path = data.path().to_string_lossy().into_owned();
    let near = Serve::start_on(
        near_dir.path(),
        "127.0.0.1:0",
        &[
            "--tokens",
            &near_tokens,
            "--data",
            &data_path,
            "--grants",
            // Where calls go is written with a grant naming the tool; the group's would not do.
            "alice=ops,registry_host_add;bob=ops",
            "--peer",
            &format!("http://{}", far.addr),
        ],
        &[("COREMCP_RELAY_TOKEN", PEER)],
    );
    let mut alice = client(&near, ALICE);
    let added = alice.call(
        "registry_host_add",
        json!({"name": "far", "address": "127.0.0.2", "core_mcp_url": far_url}),
    );
    assert!(!is_error(&added), "{added}");

    // Both are granted here; over there only alice is (peer's own grant does not stand in
    // for bob: the far side judges the principal the call is made for).
    let ran = alice.call(
        "shell_run",
        json!({"script": "echo far > by-alice.txt; pwd", "remote_host": "far"}),
    );
    assert!(!is_error(&ran), "{ran}");
    assert!(far_root.path().join("by-alice.txt").exists());
    let mut bob = client(&near, BOB);
    let refused = bob.call(
        "shell_run",
        json!({"script": "echo far > by-bob.txt", "remote_host": "far"}),
    );
    assert!(is_error(&refused), "{refused}");
    assert!(
        text(&refused).contains("shell_run is refused to the token \"bob\""),
        "{refused}"
    );
    assert!(!far_root.path().join("by-bob.txt").exists());

    // A client that is not a configured peer cannot pass for another principal.
    let mut direct = client(&far, BOB);
    let answer = direct.request(
        "tools/call",
        json!({"name": "shell_run", "arguments": {"script": "echo x > spoofed.txt"},
               "_meta": {"dev.coremcp/principal": "alice"}}),
    );
    let result = answer["result"].clone();
    assert!(is_error(&result), "{answer}");
    assert!(
        text(&result).contains("only another Core MCP configured as a peer"),
        "{answer}"
    );
    assert!(!far_root.path().join("spoofed.txt").exists());
}

#[test]
fn a_relay_that_leads_back_to_the_proxy_is_refused_at_once() {
    // A serve whose relay is itself: every forwarded call would bounce until its deadline.
    let dir = plugins(&["notepad"]);
    let port = coremcp_tests::free_port();
    let own = format!("http://127.0.0.1:{port}/mcp");
    let data = TempDir::new("trust-loop-data");
    let data_path = data.path().to_string_lossy().into_owned();
    let server = Serve::start_on(
        dir.path(),
        &format!("127.0.0.1:{port}"),
        &["--relay", &own, "--data", &data_path],
        &[],
    );
    let mut agent = server.client();
    agent.initialize();
    let started = Instant::now();
    let answer = agent.call("notepad_get", json!({"scope": "global", "key": "k"}));
    assert!(is_error(&answer), "{answer}");
    assert!(text(&answer).contains("route_loop"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // The same through a stdio proxy whose relay is that serve.
    let mut proxy = Server::start(dir.path(), &["--relay", &own], &[]);
    proxy.initialize();
    let started = Instant::now();
    let why = proxy.refused("notepad_get", json!({"scope": "global", "key": "k"}));
    assert!(why.contains("route_loop"), "{why}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A relay (`serve --service` on its own SQLite store) of `group`, which knows the proxy's
/// token as a peer's; the folders it needs live as long as it does.
struct PeerRelay {
    serve: Serve,
    _plugins: TempDir,
    _secrets: TempDir,
    _store: coremcp_tests::stores::StoreEnv,
}

impl PeerRelay {
    fn start(group: &str, label: &str) -> Self {
        let plugins = plugins(&[group]);
        let secrets = TempDir::new(&format!("{label}-tokens"));
        let token_file = tokens(&secrets);
        let store =
            coremcp_tests::stores::StoreEnv::new(coremcp_tests::stores::Backend::Sqlite, label);
        let mut args = vec![
            "--service".to_owned(),
            "--tokens".to_owned(),
            token_file,
            "--peer-token".to_owned(),
            "peer".to_owned(),
        ];
        args.extend(store.args());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let serve = Serve::start_on(plugins.path(), "127.0.0.1:0", &args, &[]);
        Self {
            serve,
            _plugins: plugins,
            _secrets: secrets,
            _store: store,
        }
    }
}

#[test]
fn a_relay_records_who_did_what_for_the_agent_a_peer_passed_the_call_on_for() {
    // The relay: a service on its own store, which knows the proxy's token as a peer's.
    let relay = PeerRelay::start("scrolls", "trust-actor");
    let relay = &relay.serve;
    // The agent's stdio Core MCP, which passes its calls on to the relay with the peer's
    // token; its client is this test harness ("coremcp-tests").
    let proxy_dir = plugins(&["scrolls"]);
    let data = TempDir::new("trust-actor-proxy");
    let data = data.path().to_string_lossy().into_owned();
    let relay_url = url(relay);
    let mut agent = Server::start(
        proxy_dir.path(),
        &["--data", &data, "--relay", &relay_url],
        &[("COREMCP_RELAY_TOKEN", PEER)],
    );
    agent.initialize();
    let created = agent.call(
        "scrolls_project_create",
        json!({"key": "CORE", "title": "Core"}),
    );
    assert!(!is_error(&created), "{created}");
    let feed = agent.call("scrolls_activity_list", json!({}));
    let actor = feed["structuredContent"]["items"][0]["actor"].clone();
    assert_eq!(
        actor, "coremcp-tests",
        "the agent's client, carried by the peer, not the peer's own token: {feed}"
    );
    // A caller that is not a peer cannot name a client: its claim is dropped.
    let mut bob = client(relay, BOB);
    let answer = bob.request(
        "tools/call",
        json!({"name": "scrolls_project_create",
               "arguments": {"key": "FAKE", "title": "Fake"},
               "_meta": {"dev.coremcp/client": "someone-else"}}),
    );
    assert!(answer["result"].get("isError").is_none(), "{answer}");
    let feed = bob.call("scrolls_activity_list", json!({}));
    let actor = feed["structuredContent"]["items"][0]["actor"].clone();
    assert_eq!(actor, "bob", "{feed}");
    // The caller's registered agent: here its client's name, since bob registered none.
    let registered = bob.call("scrolls_agent_register", json!({"name": "coremcp-tests"}));
    assert!(!is_error(&registered), "{registered}");
    let updated = bob.call(
        "scrolls_project_update",
        json!({"id": "FAKE", "title": "Renamed"}),
    );
    assert!(!is_error(&updated), "{updated}");
    let feed = bob.call("scrolls_activity_list", json!({}));
    let actor = feed["structuredContent"]["items"][0]["actor"].clone();
    assert_eq!(actor, "coremcp-tests", "{feed}");
}

/// A note written through a relay or `remote_host` records the agent who wrote it (the client
/// its Core MCP carried as a configured peer), never the Core MCP in between; a token's holder
/// is recorded by its principal.
#[test]
fn a_note_written_through_a_peer_records_the_agent_not_the_core_mcp_between() {
    let relay = PeerRelay::start("notepad", "trust-note");
    let relay = &relay.serve;
    let relay_url = url(relay);
    // The agent's stdio Core MCP: notepad through the relay, and the relay as a Registry host
    // that remote_host reaches (a configured peer).
    let proxy_dir = plugins(&["notepad", "registry"]);
    let data = TempDir::new("trust-note-proxy");
    let data = data.path().to_string_lossy().into_owned();
    let mut agent = Server::start(
        proxy_dir.path(),
        &[
            "--data",
            &data,
            "--relay",
            &relay_url,
            "--peer",
            &format!("http://{}", relay.addr),
        ],
        &[("COREMCP_RELAY_TOKEN", PEER)],
    );
    agent.initialize();
    agent.ok(
        "registry_host_add",
        json!({"name": "team", "address": "127.0.0.1", "core_mcp_url": relay_url}),
    );
    for (key, extra) in [
        ("relayed", json!({})),
        ("remote", json!({"remote_host": "team"})),
    ] {
        let mut set = json!({"scope": "global", "key": key, "value": "v"});
        set.as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        agent.ok("notepad_set", set);
        let got = agent.ok("notepad_get", json!({"scope": "global", "key": key}));
        assert_eq!(
            got["updated_by"], "coremcp-tests 0",
            "{key}: the agent's client, not the Core MCP between: {got}"
        );
    }
    // A token's holder is recorded by its principal, beside its client.
    let mut bob = client(relay, BOB);
    let set = bob.call(
        "notepad_set",
        json!({"scope": "global", "key": "bob", "value": "v"}),
    );
    assert!(!is_error(&set), "{set}");
    let got = bob.call("notepad_get", json!({"scope": "global", "key": "bob"}));
    let by = got["structuredContent"]["updated_by"]
        .as_str()
        .unwrap_or_default();
    assert!(by.starts_with("bob ("), "{got}");
}

/// A `--peer` prefix allows the URLs below it, and nothing a server could resolve elsewhere:
/// a Registry host whose address walks out of the allowed path with a dot segment, plain or
/// percent-encoded, gets no relay token.
#[test]
fn a_url_that_walks_out_of_a_peer_path_gets_no_token() {
    let dir = plugins(&["registry", "notepad"]);
    let secrets = TempDir::new("trust-walk-tokens");
    let data = TempDir::new("trust-walk-data");
    let tokens = tokens(&secrets);
    let listener = Recorder::start(
        "127.0.0.1",
        b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n",
    );
    let peer = format!("http://{}/mcp", listener.addr);
    let server = Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &[
            "--tokens",
            &tokens,
            "--data",
            &data.path().to_string_lossy(),
            "--grants",
            "alice=registry_host_add",
            "--peer",
            &peer,
        ],
        &[("COREMCP_RELAY_TOKEN", PEER)],
    );
    let mut alice = client(&server, ALICE);
    for (name, path) in [
        ("dots", "/mcp/../evil"),
        ("encoded", "/mcp/%2e%2e/evil"),
        ("mixed", "/mcp/.%2E/evil"),
    ] {
        let url = format!("http://{}{path}", listener.addr);
        let added = alice.call(
            "registry_host_add",
            json!({"name": name, "address": "127.0.0.1", "core_mcp_url": url}),
        );
        assert!(!is_error(&added), "{added}");
        let answer = alice.call("notepad_list", json!({"remote_host": name}));
        assert!(is_error(&answer), "{answer}");
    }
    let requests = listener.requests();
    assert!(requests.len() >= 3, "{requests:?}");
    for request in &requests {
        assert!(
            !request.to_ascii_lowercase().contains("authorization") && !request.contains(PEER),
            "the relay token went to a URL outside the peer's path:\n{request}"
        );
    }
}
