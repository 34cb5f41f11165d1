//! The credential scrub end to end: Core MCP starts with a full set of secrets in its
//! environment, and every kind of child it starts — the publishing CLI, git and its hooks, an
//! upstream MCP server — reports the environment it got. No secret arrives anywhere; git keeps
//! the SSH agent; an upstream server gets only the base list unless its entry asks for more.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use coremcp_tests::{plugins, text, Server, TempDir};
use serde_json::{json, Value};

/// Secrets (by name, or by value) a developer's shell may well hold.
const SECRETS: &[(&str, &str)] = &[
    (
        "DATABASE_URL",
        "postgres://app:db-password@db.internal:5432/app",
    ),
    (
        "COREMCP_SQL",
        "default=postgres://app:sql-password@127.0.0.1:1/app",
    ),
    ("API_KEY", "api-key-value"),
    ("SECRET_KEY", "secret-key-value"),
    ("PRIVATE_KEY", "private-key-value"),
    ("ACCESS_KEY", "access-key-value"),
    ("PASSWD", "passwd-value"),
    ("CREDENTIALS", "credentials-value"),
    ("GITLAB_PAT", "glpat-value"),
    (
        "SLACK_WEBHOOK_URL",
        "https://hooks.slack.com/services/T0/B0/secret",
    ),
    ("SESSION_COOKIE", "cookie-value"),
    ("DOCKER_AUTH_CONFIG", "{\"auths\":{}}"),
    (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "/keys/service-account.json",
    ),
    ("KUBECONFIG", "/keys/kubeconfig"),
    (
        "HTTPS_PROXY",
        "http://user:proxy-password@proxy.internal:3128",
    ),
    ("SSH_AUTH_SOCK", "/tmp/scrub-test-agent.sock"),
    ("OPENAI_API_KEY", "sk-value"),
    ("GH_TOKEN", "ghp-value"),
    ("AWS_SECRET_ACCESS_KEY", "aws-value"),
    ("PGPASSWORD", "pg-value"),
    ("npm_config__authToken", "npm-value"),
    ("CI_JOB_JWT", "ci-job-jwt-value"),
    ("SSHPASS", "sshpass-value"),
    (
        "AZURE_STORAGE_CONNECTION_STRING",
        "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=azure-key-value",
    ),
    ("BUNDLE_GEMS__EXAMPLE__COM", "user:bundle-password"),
    (
        "MONGO_URL",
        "mongodb://Zk3n9QpLx2TgW7vB4mHs@cluster.example.net/db",
    ),
    ("PGPASSFILE", "/keys/pgpass"),
    ("DOCKER_CONFIG", "/keys/docker"),
    ("GIT_ASKPASS", "/keys/askpass"),
    ("NPM_CONFIG_USERCONFIG", "/keys/npmrc"),
    ("npm_config_globalconfig", "/keys/global-npmrc"),
    ("PIP_CONFIG_FILE", "/keys/pip.conf"),
    ("AWS_CONFIG_FILE", "/keys/aws-config"),
    ("YARN_RC_FILENAME", "/keys/yarnrc.yml"),
];

/// git's configuration from the environment, as Copilot CLI starts servers with it (plus a
/// header a value could carry): a family kept or dropped whole, checked by name (its values
/// are ordinary words).
const GIT_CONFIG_FAMILY: &[(&str, &str)] = &[
    ("GIT_CONFIG_COUNT", "2"),
    ("GIT_CONFIG_KEY_0", "safe.bareRepository"),
    ("GIT_CONFIG_VALUE_0", "explicit"),
    ("GIT_CONFIG_KEY_1", "http.extraHeader"),
    (
        "GIT_CONFIG_VALUE_1",
        "Authorization: Bearer git-header-secret",
    ),
];

/// Ordinary variables the scrubbed environment keeps.
const PLAIN: &[(&str, &str)] = &[
    ("SCRUB_TEST_PLAIN", "kept"),
    ("HTTP_PROXY", "http://proxy.internal:3128"),
];

fn environment_of_the_host(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    SECRETS
        .iter()
        .chain(GIT_CONFIG_FAMILY)
        .chain(PLAIN)
        .chain(extra)
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Names of `seen` that are secrets (by name or by value).
fn leaked(seen: &BTreeMap<String, String>) -> Vec<String> {
    let values: Vec<&str> = SECRETS.iter().map(|(_, v)| *v).collect();
    seen.iter()
        .filter(|(name, value)| {
            SECRETS
                .iter()
                .chain(GIT_CONFIG_FAMILY)
                .any(|(s, _)| s == name)
                || values.contains(&value.as_str())
        })
        .map(|(name, _)| name.clone())
        .collect()
}

fn start(plugins_dir: &TempDir, args: &[&str], env: &[(String, String)]) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut server = Server::start(plugins_dir.path(), args, &env);
    server.initialize();
    server
}

#[test]
fn the_publishing_cli_gets_no_secret() {
    let bin = TempDir::new("scrub-cli");
    let cli = bin.script(
        "publish",
        "#!/usr/bin/env python3\nimport json, os\nprint(json.dumps({\"env\": dict(os.environ)}))\n",
    );
    let dir = plugins(&["publishing"]);
    let cli = cli.to_string_lossy().into_owned();
    let env = environment_of_the_host(&[("COREMCP_PUBLISH_CMD", &cli)]);
    let mut server = start(&dir, &[], &env);
    let result = server.call("publishing", json!({"args": []}));
    let seen: BTreeMap<String, String> =
        serde_json::from_value(result["structuredContent"]["env"].clone())
            .unwrap_or_else(|e| panic!("{e}: {result}"));
    assert_eq!(leaked(&seen), Vec::<String>::new(), "{seen:?}");
    assert!(!seen.keys().any(|k| k.starts_with("COREMCP_")), "{seen:?}");
    assert_eq!(
        seen.get("SCRUB_TEST_PLAIN").map(String::as_str),
        Some("kept")
    );
    assert!(seen.contains_key("HTTP_PROXY") && seen.contains_key("PATH"));
}

/// git's environment family, as Copilot CLI sets it, reaches git whole or not at all: with it
/// in the host's environment every git tool works (half of it broke every one of them).
#[test]
fn git_and_its_hooks_get_no_secret_but_keep_the_ssh_agent() {
    let lab = TempDir::new("scrub-git");
    let repo = lab.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    let git = |args: &[&str]| {
        #[allow(clippy::disallowed_methods)] // Tests start the real tools directly.
        let out = Command::new("git")
            .current_dir(&repo)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["config", "user.name", "Scrub Test"]);
    git(&["config", "user.email", "scrub@example.com"]);
    let dump = lab.path().join("hook-env");
    let hook = repo.join(".git/hooks/pre-commit");
    std::fs::write(&hook, format!("#!/bin/sh\nenv -0 > '{}'\n", dump.display())).expect("hook");
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::write(repo.join("a.txt"), "a\n").expect("write");

    let dir = plugins(&["git"]);
    let env = environment_of_the_host(&[
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_SSH_COMMAND", "ssh -o BatchMode=yes"),
    ]);
    let root = lab.path().to_string_lossy().into_owned();
    let mut server = start(&dir, &["--root", &root], &env);
    server.ok("git_status", json!({"repo_path": "repo"}));
    server.ok("git_add", json!({"repo_path": "repo", "paths": ["a.txt"]}));
    server.ok("git_commit", json!({"repo_path": "repo", "message": "m"}));
    let raw = std::fs::read(&dump).expect("the hook ran");
    let seen: BTreeMap<String, String> = raw
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (k, v) = entry.split_once('=')?;
            Some((k.to_owned(), v.to_owned()))
        })
        .collect();
    let mut leaks = leaked(&seen);
    leaks.retain(|name| name != "SSH_AUTH_SOCK");
    assert_eq!(leaks, Vec::<String>::new(), "{seen:?}");
    assert_eq!(
        seen.get("SSH_AUTH_SOCK").map(String::as_str),
        Some("/tmp/scrub-test-agent.sock"),
        "a push over SSH needs the agent"
    );
    assert_eq!(
        seen.get("GIT_SSH_COMMAND").map(String::as_str),
        Some("ssh -o BatchMode=yes")
    );
    assert_eq!(
        seen.get("SCRUB_TEST_PLAIN").map(String::as_str),
        Some("kept")
    );
}

/// The Python interpreter itself, not a wrapper script (a version manager's shim would add
/// variables of its own to what the server sees).
fn real_python() -> String {
    #[allow(clippy::disallowed_methods)] // Tests start the real tools directly.
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn an_upstream_server_gets_the_base_list_unless_its_entry_asks_for_more() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/upstream/misbehave.py")
        .to_string_lossy()
        .into_owned();
    let setup = TempDir::new("scrub-upstream");
    let config = setup.path().join("mcp.json");
    let python = real_python();
    let server = |id: &str, extra: Value| {
        let mut entry = json!({"id": id, "command": python, "args": [fixture, "calls"],
                               "env": {"HANDED_TOKEN": "handed"}});
        if let (Value::Object(entry), Value::Object(extra)) = (&mut entry, extra) {
            entry.extend(extra);
        }
        entry
    };
    let servers = json!({"servers": [
        server("base", json!({})),
        server("named", json!({"inheritEnv": ["SCRUB_TEST_PLAIN"]})),
        server("whole", json!({"inheritEnv": true})),
    ]});
    std::fs::write(&config, servers.to_string()).expect("mcp.json");
    let config = config.to_string_lossy().into_owned();
    let dir = plugins(&["fixture"]);
    let env = environment_of_the_host(&[
        ("COREMCP_MCP_CONFIG", &config),
        ("COREMCP_MCP_SERVERS", ""),
        ("COREMCP_MCP_GRANTS", "stdio=base,named,whole"),
        ("COREMCP_MCP_PREAPPROVED", "base,named,whole"),
        ("LC_ALL", "C.UTF-8"),
    ]);
    let mut host = start(&dir, &[], &env);
    let mut environ = |id: &str| -> BTreeMap<String, String> {
        let deadline = std::time::Instant::now() + coremcp_tests::WAIT;
        loop {
            let result = host.call(&format!("mcp__{id}__environ"), json!({}));
            if let Ok(seen) = serde_json::from_str(text(&result)) {
                return seen;
            }
            // Still connecting: the call says so; try again within the deadline.
            assert!(std::time::Instant::now() < deadline, "{id}: {result}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };

    let base = environ("base");
    let allowed = [
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "TMP",
        "TEMP",
        "HANDED_TOKEN",
        "CALL_LOG",
    ];
    let extra: Vec<&String> = base
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()) && !k.starts_with("LC_"))
        .collect();
    assert_eq!(extra, Vec::<&String>::new(), "only the base list: {base:?}");
    assert!(base.contains_key("PATH"));
    assert_eq!(base.get("LC_ALL").map(String::as_str), Some("C.UTF-8"));
    assert_eq!(base.get("HANDED_TOKEN").map(String::as_str), Some("handed"));

    let named = environ("named");
    assert_eq!(leaked(&named), Vec::<String>::new(), "{named:?}");
    assert_eq!(
        named.get("SCRUB_TEST_PLAIN").map(String::as_str),
        Some("kept")
    );
    assert!(!named.contains_key("HTTP_PROXY"));

    let whole = environ("whole");
    assert_eq!(leaked(&whole), Vec::<String>::new(), "{whole:?}");
    assert!(whole.contains_key("SCRUB_TEST_PLAIN") && whole.contains_key("HTTP_PROXY"));
    assert!(
        !whole.keys().any(|k| k.starts_with("COREMCP_")),
        "{whole:?}"
    );

    // Asking to inherit a credential is refused at start, naming the entry.
    std::fs::write(
        &config,
        json!({"servers": [server("bad", json!({"inheritEnv": ["GITLAB_PAT"]}))]}).to_string(),
    )
    .expect("mcp.json");
    let (code, _, err) = coremcp_tests::run(
        &["tools", "--plugins", &dir.path().to_string_lossy()],
        &[("COREMCP_MCP_CONFIG", &config)],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("servers[0].inheritEnv: \"GITLAB_PAT\" looks like a credential"),
        "{err}"
    );
}
