//! Sign-in through the team's identity provider (OAuth 2.1, MCP's authorization spec), against
//! the real npm `oidc-provider` (`coremcp_tests::oidc`): `coremcp serve --oauth-issuer` as a
//! resource server — metadata, challenge, and every way a token can be wrong — and a proxy
//! signing in to its relay with the client credentials grant.

use std::thread;
use std::time::{Duration, Instant};

use coremcp_tests::http::{request, Client, Recorder, Serve};
use coremcp_tests::oidc::{self, Provider};
use coremcp_tests::{free_port, plugins, Server, TempDir};
use serde_json::json;

/// A static token accepted beside OAuth.
const STATIC: &str = "ci-token-0123456789abcdef";

/// `coremcp serve` on `port` trusting `issuer`, with one static token too, and a grant that
/// takes `notepad_delete` from every token with the scope `notes`.
fn relay(dir: &TempDir, port: u16, issuer: &str) -> Serve {
    let listen = format!("127.0.0.1:{port}");
    Serve::start_on(
        dir.path(),
        &listen,
        &[
            "--oauth-issuer",
            issuer,
            "--grants",
            "scope:notes=!notepad_delete",
        ],
        &[
            ("COREMCP_TOKENS_TEXT", &format!("ci {STATIC}")),
            ("COREMCP_LOG", "coremcp=debug"),
        ],
    )
}

/// A provider (signing with key `k1`) and a server trusting it.
struct Setup {
    provider: Provider,
    provider_port: u16,
    issuer: String,
    relay: Serve,
    port: u16,
    dir: TempDir,
}

/// A provider on a free port signing with key `k1`: it, its port and its issuer URL.
fn start_provider(script: &str) -> (Provider, u16, String) {
    let provider_port = free_port();
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let provider = Provider::start(script, provider_port, &issuer, "k1");
    (provider, provider_port, issuer)
}

fn set_up(script: &str) -> Setup {
    let (provider, provider_port, issuer) = start_provider(script);
    let port = free_port();
    let dir = plugins(&["notepad", "registry"]);
    let relay = relay(&dir, port, &issuer);
    Setup {
        provider,
        provider_port,
        issuer,
        relay,
        port,
        dir,
    }
}

/// An MCP client of `serve` presenting `token`.
fn client(serve: &Serve, token: &str) -> Client {
    let mut client = serve.client();
    client.token = Some(token.to_owned());
    client
}

/// What `POST /mcp` with `token` is answered: the status and the challenge.
fn refused(serve: &Serve, token: &str) -> (u16, String) {
    let bearer = format!("Bearer {token}");
    let response = request(
        serve.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    let challenge = response
        .header("www-authenticate")
        .unwrap_or_default()
        .to_owned();
    (response.status, challenge)
}

/// base64url without padding (to take a real token apart and put it together differently).
fn b64url(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

#[test]
fn a_server_accepts_its_providers_tokens_and_refuses_every_other() {
    let Some(script) = oidc::script() else {
        return;
    };
    let Setup {
        provider,
        provider_port,
        issuer,
        relay,
        port,
        dir: _dir,
    } = set_up(&script);
    let audience = format!("http://127.0.0.1:{port}/mcp");

    // No token: 401 pointing at the metadata, which points at the provider (RFC 9728).
    let anonymous = request(relay.addr, "POST", "/mcp", &[], b"{}");
    assert_eq!(anonymous.status, 401);
    let metadata_url = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        anonymous.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\"").as_str())
    );
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let doc = request(relay.addr, "GET", path, &[], b"");
        assert_eq!(doc.status, 200, "{path}");
        let doc = doc.json();
        assert_eq!(doc["resource"], audience.as_str(), "{doc}");
        assert_eq!(doc["authorization_servers"], json!([issuer]), "{doc}");
    }

    // A token of the provider for this server: in, as its subject.
    let token = provider.token("sdk", &audience);
    let mut sdk = client(&relay, &token);
    sdk.initialize();
    sdk.call(
        "notepad_set",
        json!({"scope": "global", "key": "k", "value": "v"}),
    );
    let got = sdk.call("notepad_get", json!({"scope": "global", "key": "k"}));
    let by = got["structuredContent"]["updated_by"]
        .as_str()
        .unwrap_or_default();
    assert!(
        by.starts_with("oauth:sdk ("),
        "the token's sub is the principal: {got}"
    );
    // Its scope is a principal of the grants too: `notes` may not delete.
    let delete = sdk.call("notepad_delete", json!({"scope": "global", "key": "k"}));
    assert_eq!(delete["isError"], true, "{delete}");
    let text = delete["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("refused to the OAuth principal \"sdk\"")
            && text.contains("scope:notes=!notepad_delete"),
        "{text}"
    );
    // A static token still works beside it.
    let mut ci = client(&relay, STATIC);
    ci.initialize();

    // For another resource: refused, and told why.
    let elsewhere = provider.token("sdk", "http://127.0.0.1:9/mcp");
    let (status, challenge) = refused(&relay, &elsewhere);
    assert_eq!(status, 401);
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains("not for this server"),
        "{challenge}"
    );

    // `alg: none`: the same claims, unsigned.
    let parts: Vec<&str> = token.split('.').collect();
    let unsigned = format!(
        "{}.{}.",
        b64url(br#"{"alg":"none","typ":"at+jwt","kid":"k1"}"#),
        parts[1]
    );
    let (status, challenge) = refused(&relay, &unsigned);
    assert_eq!(status, 401, "{challenge}");
    // A real token's signature on other claims.
    let forged = format!("{}.{}.{}", parts[0], b64url(br#"{"sub":"root"}"#), parts[2]);
    let (status, challenge) = refused(&relay, &forged);
    assert_eq!(status, 401, "{challenge}");

    // Signed by another key under the same kid and issuer name: an impostor provider.
    let impostor_port = free_port();
    let impostor = Provider::start(&script, impostor_port, &issuer, "k1");
    let wrong_signer = impostor.token("sdk", &audience);
    let (status, challenge) = refused(&relay, &wrong_signer);
    assert_eq!(status, 401);
    assert!(
        challenge.contains("signature does not verify"),
        "{challenge}"
    );
    drop(impostor);

    // Expired: a token that lives 1 s, past the 5 s of skew allowed.
    let short = provider.token("short", &audience);
    thread::sleep(Duration::from_secs(7));
    let (status, challenge) = refused(&relay, &short);
    assert_eq!(status, 401);
    assert!(challenge.contains("expired"), "{challenge}");

    // The provider rotates its key (a new kid): the server fetches the keys again.
    drop(provider);
    let rotated = Provider::start(&script, provider_port, &issuer, "k2");
    let fresh = rotated.token("sdk", &audience);
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut after = client(&relay, &fresh);
    loop {
        let message = after.message(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "coremcp-tests", "version": "0"}}),
        );
        let response = after.post(&message);
        if response.status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the rotated key was never picked up: {} {:?}\n{}",
            response.status,
            response.header("www-authenticate"),
            relay.stderr()
        );
        thread::sleep(Duration::from_millis(200));
    }
    // The log line may still be in the pipe when the answer arrives.
    relay.wait_stderr(
        "fetched the OAuth issuer's keys again",
        Duration::from_secs(10),
    );
    // The old key is gone from the provider: its tokens are no longer accepted.
    let (status, _) = refused(&relay, &token);
    assert_eq!(status, 401);
}

#[test]
fn a_proxy_signs_in_to_its_relay_with_client_credentials() {
    let Some(script) = oidc::script() else {
        return;
    };
    let Setup {
        provider,
        provider_port,
        issuer,
        relay,
        port,
        dir,
    } = set_up(&script);
    let relay_url = format!("http://127.0.0.1:{port}/mcp");
    let data = TempDir::new("proxy-data");
    let args = [
        "--relay",
        relay_url.as_str(),
        "--data",
        &data.path().to_string_lossy(),
    ];
    let sign_in = |secret: &str| -> Vec<(String, String)> {
        vec![
            ("COREMCP_RELAY_OAUTH_ISSUER".into(), issuer.clone()),
            ("COREMCP_RELAY_OAUTH_CLIENT_ID".into(), "proxy".into()),
            ("COREMCP_RELAY_OAUTH_CLIENT_SECRET".into(), secret.into()),
            ("COREMCP_RELAY_OAUTH_SCOPE".into(), "notes".into()),
        ]
    };
    let env = sign_in("proxy-secret-0123456789");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut proxy = Server::start(dir.path(), &args, &env);
    proxy.initialize();
    proxy.ok(
        "notepad_set",
        json!({"scope": "global", "key": "signed-in", "value": "v"}),
    );
    let got = proxy.ok(
        "notepad_get",
        json!({"scope": "global", "key": "signed-in"}),
    );
    let by = got["updated_by"].as_str().unwrap_or_default();
    assert!(
        by.starts_with("oauth:proxy ("),
        "the relay saw the proxy's client id: {got}"
    );

    // An attacker's Registry record: its URL gets no token (none is even asked for it) and no
    // principal, though the proxy signs in to its relay.
    let stolen = Recorder::start(
        "127.0.0.1",
        b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n",
    );
    let evil = format!("http://{}/mcp", stolen.addr);
    proxy.ok(
        "registry_host_add",
        json!({"name": "evil", "address": "127.0.0.1", "core_mcp_url": evil}),
    );
    let answer = proxy.refused("notepad_list", json!({"remote_host": "evil"}));
    assert!(answer.contains("401"), "{answer}");
    let requests = stolen.requests();
    assert!(!requests.is_empty(), "the listener was never called");
    for request in &requests {
        let lower = request.to_ascii_lowercase();
        assert!(
            !lower.contains("authorization") && !request.contains("dev.coremcp/principal"),
            "a credential reached a Registry record's URL:\n{request}"
        );
    }
    relay.wait_stderr("OAuth access token accepted", Duration::from_secs(10));

    // The provider rotates its key, and the relay learns of it (a token of the new key): the
    // token the proxy holds is refused now, so it fetches a new one and sends the call again.
    drop(provider);
    let rotated = Provider::start(&script, provider_port, &issuer, "k2");
    let fresh = rotated.token("sdk", &relay_url);
    let deadline = Instant::now() + Duration::from_secs(15);
    while refused(&relay, &fresh).0 == 401 {
        assert!(Instant::now() < deadline, "{}", relay.stderr());
        thread::sleep(Duration::from_millis(200));
    }
    let refusals = || {
        relay
            .stderr()
            .matches("refused an OAuth access token")
            .count()
    };
    let before = refusals();
    let got = proxy.ok(
        "notepad_get",
        json!({"scope": "global", "key": "signed-in"}),
    );
    assert_eq!(got["value"], "v");
    // The log line may still be in the pipe when the answer arrives.
    let deadline = Instant::now() + Duration::from_secs(10);
    while refusals() == before && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        refusals(),
        before + 1,
        "the held token was refused once, then a new one taken: {}",
        relay.stderr()
    );
    drop(proxy);

    // A wrong secret: the call fails saying the sign-in failed, and that nothing ran.
    let env = sign_in("not-the-secret-0123456789");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut wrong = Server::start(dir.path(), &args, &env);
    wrong.initialize();
    let error = wrong.refused(
        "notepad_get",
        json!({"scope": "global", "key": "signed-in"}),
    );
    assert!(
        error.contains("cannot sign in to") && error.contains("invalid_client"),
        "{error}"
    );
    assert!(!error.contains("may have run"), "{error}");
}

#[test]
fn an_oauth_principals_scopes_are_judged_again_on_the_relay() {
    let Some(script) = oidc::script() else {
        return;
    };
    let (provider, _, issuer) = start_provider(&script);
    let dir = plugins(&["notepad"]);
    // The relay knows the devbox's Core MCP as a peer (its token named by --peer-token), and
    // takes notepad_delete from every principal with the scope `notes`.
    let peer_token = "devbox-token-0123456789abcdef";
    let relay = Serve::start_on(
        dir.path(),
        "127.0.0.1:0",
        &[
            "--peer-token",
            "devbox",
            "--grants",
            "scope:notes=!notepad_delete",
        ],
        &[("COREMCP_TOKENS_TEXT", &format!("devbox {peer_token}"))],
    );
    let relay_url = format!("http://{}/mcp", relay.addr);
    // A shared devbox: agents sign in to it with the provider's tokens; it forwards Notepad.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let devbox = Serve::start_on(
        dir.path(),
        &listen,
        &["--oauth-issuer", &issuer, "--relay", &relay_url],
        &[("COREMCP_RELAY_TOKEN", peer_token)],
    );
    let token = provider.token("sdk", &format!("http://{listen}/mcp"));
    let mut agent = client(&devbox, &token);
    agent.initialize();
    let set = agent.call(
        "notepad_set",
        json!({"scope": "global", "key": "scoped", "value": "v"}),
    );
    assert_ne!(set["isError"], true, "{set}");
    let delete = agent.call(
        "notepad_delete",
        json!({"scope": "global", "key": "scoped"}),
    );
    assert_eq!(delete["isError"], true, "{delete}");
    let text = delete["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("refused to the OAuth principal \"sdk\"")
            && text.contains("scope:notes=!notepad_delete"),
        "the relay judged the agent's scopes: {text}"
    );
}

/// A client credentials token's subject is the client id, which anyone who can register a
/// client chooses. Here the provider's client `sdk` names itself like this server's static
/// token `sdk`, which is a peer (`--peer-token sdk`), an operator and granted `shell_run`: the
/// OAuth subject gets none of that — it is `oauth:sdk`, a principal of its own kind — and a
/// grant written `oauth:sdk` applies to it alone. A start that could only mean an OAuth subject
/// by a bare name is refused, saying how to write it; a token not typed `at+jwt` is not an
/// access token unless the server is told its issuer cannot type them.
#[test]
fn an_oauth_subject_is_never_the_static_principal_of_its_name() {
    let Some(script) = oidc::script() else {
        return;
    };
    let (provider, _, issuer) = start_provider(&script);
    let dir = plugins(&["notepad", "ops"]);
    let root = TempDir::new("oauth-kinds-root");
    let root_arg = root.path().to_string_lossy().into_owned();
    const SDK: &str = "sdk-static-token-0123456789";
    const CI: &str = "ci-static-token-0123456789ab";
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let audience = format!("http://{listen}/mcp");
    let serve = Serve::start_on(
        dir.path(),
        &listen,
        &[
            "--oauth-issuer",
            &issuer,
            "--root",
            &root_arg,
            "--peer-token",
            "sdk",
            "--operator",
            "sdk",
            "--grants",
            "sdk=shell_run; oauth:sdk=!notepad_delete",
        ],
        &[("COREMCP_TOKENS_TEXT", &format!("sdk {SDK};ci {CI}"))],
    );
    let jwt = provider.token("sdk", &audience);
    let mut oauth = client(&serve, &jwt);
    oauth.initialize();
    let mut static_sdk = client(&serve, SDK);
    static_sdk.initialize();
    let mut ci = client(&serve, CI);
    ci.initialize();

    // Not a peer: naming another principal is refused, and nothing runs.
    let forged = oauth.request(
        "tools/call",
        json!({"name": "shell_run", "arguments": {"script": "echo x > forged.txt"},
               "_meta": {"dev.coremcp/principal": "ci"}}),
    );
    let text = forged["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("configured as a peer"), "{forged}");
    assert!(!root.path().join("forged.txt").exists());
    // Not the static token's grants.
    let run = oauth.call("shell_run", json!({"script": "echo x > by-oauth.txt"}));
    assert_eq!(run["isError"], true, "{run}");
    let text = run["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("refused to the OAuth principal \"sdk\"")
            && text.contains("COREMCP_GRANTS=\"oauth:sdk=shell_run\""),
        "{text}"
    );
    assert!(!root.path().join("by-oauth.txt").exists());
    let run = static_sdk.call("shell_run", json!({"script": "echo x > by-static.txt"}));
    assert_ne!(run["isError"], true, "{run}");
    assert!(root.path().join("by-static.txt").exists());
    // Not an operator: another principal's errors stay hidden from it.
    let failed = ci.call(
        "notepad_get",
        json!({"scope": "global", "key": "ci-private-key"}),
    );
    assert_eq!(failed["isError"], true, "{failed}");
    let errors = |token: &str| -> String {
        let bearer = format!("Bearer {token}");
        request(
            serve.addr,
            "GET",
            "/api/status",
            &[("Authorization", &bearer)],
            b"",
        )
        .json()["recent_errors"]
            .to_string()
    };
    assert!(
        errors(SDK).contains("ci-private-key"),
        "the operator sees it"
    );
    let seen = errors(&jwt);
    assert!(!seen.contains("ci-private-key"), "{seen}");
    // A grant written oauth:sdk is the OAuth subject's alone.
    oauth.call(
        "notepad_set",
        json!({"scope": "global", "key": "k", "value": "v"}),
    );
    let delete = oauth.call("notepad_delete", json!({"scope": "global", "key": "k"}));
    assert_eq!(delete["isError"], true, "{delete}");
    let by = oauth.call("notepad_get", json!({"scope": "global", "key": "k"}));
    assert!(
        by["structuredContent"]["updated_by"]
            .as_str()
            .is_some_and(|b| b.starts_with("oauth:sdk")),
        "{by}"
    );
    let delete = static_sdk.call("notepad_delete", json!({"scope": "global", "key": "k"}));
    assert_ne!(delete["isError"], true, "{delete}");

    // A token typed JWT is not an access token here...
    let plain = provider.token("plainjwt", &audience);
    let (status, challenge) = refused(&serve, &plain);
    assert_eq!(status, 401);
    assert!(challenge.contains("not at+jwt"), "{challenge}");
    drop(serve);
    // ...unless the server is told its issuer cannot type them.
    let lenient = Serve::start_on(
        dir.path(),
        &listen,
        &["--oauth-issuer", &issuer, "--oauth-untyped-tokens"],
        &[],
    );
    let mut plain_client = client(&lenient, &plain);
    plain_client.initialize();
    drop(lenient);

    // A bare name no token has, with nothing that could forward it: refused at the start.
    for (flag, value) in [("--operator", "alice"), ("--grants", "alice=shell_run")] {
        let (code, _, stderr) = coremcp_tests::run(
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--plugins",
                &dir.path().to_string_lossy(),
                "--oauth-issuer",
                &issuer,
                flag,
                value,
            ],
            &[("COREMCP_TOKENS_TEXT", &format!("ci {CI}"))],
        );
        assert_eq!(code, 2, "{flag} {value}: {stderr}");
        assert!(stderr.contains("oauth:alice"), "{flag} {value}: {stderr}");
    }
}
