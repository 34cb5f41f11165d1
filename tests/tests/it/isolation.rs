//! Children kept out of each other, end to end (`coremcp_spawn::isolation`), as an attacker's
//! script would try it: a `shell_run` child reads every `/proc/<pid>/environ`, `mem` and `fd` it
//! can find — the host's, its keepers', an upstream server's holding a secret from `mcp.json`,
//! another call's child holding one — as root and as an unprivileged user; an upstream server
//! walks its ancestors; and a script kills its own parent to leave a `setsid` daemon behind, in
//! namespaces and where they are turned off (`COREMCP_CHILD_ISOLATION=off`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use coremcp_tests::{none_left_with, processes_with, text, unique_sleep, Server, TempDir};
use serde_json::{json, Value};

/// Secrets the host itself holds in its environment.
const HOST_SECRETS: &[(&str, &str)] = &[
    (
        "COREMCP_SQL",
        "default=postgres://app:host-sql-password@127.0.0.1:1/app",
    ),
    ("COREMCP_RELAY_TOKEN", "host-relay-token-0123456789"),
    ("AWS_SECRET_ACCESS_KEY", "host-aws-secret-value"),
];
/// The secret an upstream server is handed in its `mcp.json` entry.
const UPSTREAM_SECRET: &str = "upstream-secret-value-0123";
/// The secret in the environment of another call's child.
const SIBLING_SECRET: &str = "sibling-secret-value-4567";

/// `nobody`'s uid and gid, to run Core MCP as when the tests run as root.
fn nobody() -> (u32, u32) {
    // SAFETY: getpwnam(3) with a NUL-terminated name; the entry is read before any other call
    // of the passwd functions.
    let entry = unsafe { libc::getpwnam(c"nobody".as_ptr()) };
    assert!(!entry.is_null(), "no user nobody to run Core MCP as");
    // SAFETY: a non-null entry of getpwnam points to a valid passwd struct.
    unsafe { ((*entry).pw_uid, (*entry).pw_gid) }
}

/// The children of `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("proc")
        .filter_map(|e| {
            let child: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == pid).then_some(child)
        })
        .collect()
}

/// Waits until `find` finds something; what it found.
fn wait_for(what: &str, find: impl Fn() -> Vec<u32>) -> Vec<u32> {
    let deadline = Instant::now() + coremcp_tests::WAIT;
    loop {
        let found = find();
        if !found.is_empty() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what} never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An install any user can enter: the binary, the Ops plugin, the upstream fixture and an
/// `mcp.json` handing it a secret; `coremcp` started as `user` (uid, gid), or as this process.
struct Install {
    dir: TempDir,
    program: PathBuf,
}

impl Install {
    fn new(user: Option<(u32, u32)>) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new("isolation");
        let open = |path: &Path| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod")
        };
        open(dir.path());
        for sub in ["bin", "plugins", "data", "root"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
            open(&dir.path().join(sub));
        }
        let binary = dir.path().join("bin/coremcp");
        std::fs::copy(coremcp_tests::coremcp(), &binary).expect("copy coremcp");
        coremcp_tests::install_into("ops", &dir.path().join("plugins"));
        let fixture = dir.path().join("misbehave.py");
        std::fs::copy(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/upstream/misbehave.py"),
            &fixture,
        )
        .expect("copy fixture");
        std::fs::set_permissions(&fixture, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let servers = json!({"servers": [{
            "id": "spy",
            "command": "/usr/bin/python3",
            "args": [fixture.to_string_lossy(), "calls"],
            "env": {"UPSTREAM_TOKEN": UPSTREAM_SECRET},
        }]});
        std::fs::write(dir.path().join("mcp.json"), servers.to_string()).expect("mcp.json");
        let program = match user {
            Some((uid, gid)) => {
                for sub in ["data", "root"] {
                    let path = dir.path().join(sub);
                    let c =
                        std::ffi::CString::new(path.to_string_lossy().as_bytes()).expect("path");
                    // SAFETY: chown(2) on a NUL-terminated path we own.
                    assert_eq!(unsafe { libc::chown(c.as_ptr(), uid, gid) }, 0, "chown");
                }
                dir.script(
                    "as-user",
                    &format!(
                        "#!/bin/sh\nexec setpriv --reuid={uid} --regid={gid} --clear-groups -- {} \"$@\"\n",
                        binary.display()
                    ),
                )
            }
            None => binary,
        };
        Self { dir, program }
    }

    fn path(&self, sub: &str) -> String {
        self.dir.path().join(sub).to_string_lossy().into_owned()
    }

    fn start(&self, extra_env: &[(&str, &str)]) -> Server {
        let (data, root, plugins) = (self.path("data"), self.path("root"), self.path("plugins"));
        let config = self.path("mcp.json");
        let mut env: Vec<(&str, &str)> = HOST_SECRETS.to_vec();
        env.extend([
            ("COREMCP_DUMPABLE", "0"),
            ("COREMCP_MCP_CONFIG", config.as_str()),
            ("COREMCP_MCP_GRANTS", "stdio=spy"),
            ("COREMCP_MCP_PREAPPROVED", "spy"),
            ("HOME", data.as_str()),
        ]);
        env.extend_from_slice(extra_env);
        let mut host = Server::start_program(
            &self.program,
            &["--plugins", &plugins, "--data", &data, "--root", &root],
            &env,
        );
        host.initialize();
        host
    }
}

/// Every secret a child must never read, by what holds it.
fn secrets() -> Vec<(&'static str, &'static str)> {
    let mut all: Vec<(&str, &str)> = HOST_SECRETS.to_vec();
    all.push(("the upstream server's UPSTREAM_TOKEN", UPSTREAM_SECRET));
    all.push(("another call's child's SIBLING_TOKEN", SIBLING_SECRET));
    all
}

/// The attack, run by Core MCP started as `user` (or as this process).
fn a_child_sees_nothing_of_its_siblings_or_ancestors(user: Option<(u32, u32)>) {
    let who = match user {
        Some((uid, _)) => format!("as uid {uid}"),
        None => "as this user".to_owned(),
    };
    let install = Install::new(user);
    let mut host = install.start(&[]);
    let host_pid = host.pid();
    // The upstream server runs (and holds its secret).
    let deadline = Instant::now() + coremcp_tests::WAIT;
    let seen = loop {
        let result = host.call("mcp__spy__ancestors", json!({}));
        if let Ok(seen) = serde_json::from_str::<Value>(text(&result)) {
            break seen;
        }
        assert!(Instant::now() < deadline, "{who}: {result}");
        std::thread::sleep(Duration::from_millis(100));
    };
    // Walking up from itself, the upstream server reaches nothing of the host.
    let walked = seen.to_string();
    assert!(
        !walked.contains(&format!("\"pid\":{host_pid},"))
            && !walked.contains(&format!("\"pid\":{host_pid}}}")),
        "{who}: the upstream server reached the host: {walked}"
    );
    for (name, secret) in secrets() {
        assert!(
            !walked.contains(secret),
            "{who}: the upstream server read {name}"
        );
    }
    let upstream = wait_for("the upstream server", || processes_with("misbehave.py"));
    // Another call's child, holding a secret, runs meanwhile.
    let mark = unique_sleep();
    host.send(
        &json!({"jsonrpc": "2.0", "id": "sibling", "method": "tools/call",
        "params": {"name": "shell_run", "arguments": {
            "script": format!("SIBLING_TOKEN={SIBLING_SECRET} sleep {mark}"),
            "timeout_s": 120, "shell": "bash"}}}),
    );
    let sibling = wait_for("the sibling's sleep", || processes_with(&mark));
    let keepers = children_of(host_pid);
    let mut targets: Vec<u32> = vec![host_pid];
    targets.extend(&upstream);
    targets.extend(&sibling);
    targets.extend(&keepers);
    let targets: Vec<String> = targets.iter().map(u32::to_string).collect();
    let script = format!(
        "for pid in {}; do\n\
         for f in environ mem fd maps; do\n\
         [ -e /proc/$pid/$f ] && echo \"SEEN $pid $f\"\n\
         done\n\
         done\n\
         echo \"PIDS $(ls /proc | grep -cE '^[0-9]+$')\"\n\
         for e in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $e 2>/dev/null; done\n\
         touch written-in-the-roots.txt\n",
        targets.join(" ")
    );
    let ran = host.ok("shell_run", json!({"script": script, "shell": "bash"}));
    let out = ran["stdout"].as_str().expect("stdout");
    assert!(!out.contains("SEEN"), "{who}: a child saw {out}");
    for (name, secret) in secrets() {
        assert!(!out.contains(secret), "{who}: a child read {name}: {out}");
    }
    let visible: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("PIDS "))
        .and_then(|n| n.trim().parse().ok())
        .expect("a count of pids");
    assert!(
        visible <= 5,
        "{who}: a child sees {visible} processes: {out}"
    );
    assert!(
        Path::new(&install.path("root"))
            .join("written-in-the-roots.txt")
            .exists(),
        "{who}: the child kept its access to the roots"
    );
    drop(host);
    assert!(
        none_left_with(&mark),
        "{who}: the sibling outlived the host"
    );
}

#[test]
fn no_child_sees_the_host_its_keepers_upstream_servers_or_another_calls_child() {
    if coremcp_tests::is_root() {
        a_child_sees_nothing_of_its_siblings_or_ancestors(None);
        a_child_sees_nothing_of_its_siblings_or_ancestors(Some(nobody()));
    } else {
        a_child_sees_nothing_of_its_siblings_or_ancestors(None);
    }
}

#[test]
fn a_script_that_kills_its_own_parent_leaves_nothing_behind() {
    let dir = coremcp_tests::plugins(&["ops"]);
    let root = TempDir::new("isolation-parent");
    let root_arg = root.path().to_string_lossy().into_owned();
    for (label, env) in [
        ("in namespaces", vec![]),
        (
            "sharing the host's",
            vec![("COREMCP_CHILD_ISOLATION", "off")],
        ),
    ] {
        let mut host = Server::start(dir.path(), &["--root", &root_arg], &env);
        host.initialize();
        let mark = unique_sleep();
        let started = Instant::now();
        let result = host.call(
            "shell_run",
            json!({"script": format!("setsid sleep {mark} & sleep 0.3; kill -9 $PPID; sleep 0.3; echo after"),
                   "shell": "bash"}),
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{label}: {result}"
        );
        if env.is_empty() {
            // PID 1 of its namespace: the kill is ignored and the script goes on.
            let out = &result["structuredContent"];
            assert_eq!(out["stdout"], "after\n", "{label}: {result}");
        } else {
            host.wait_stderr("share this process's PID namespace", coremcp_tests::WAIT);
        }
        assert!(
            none_left_with(&mark),
            "{label}: the setsid sleep outlived the call: {:?}",
            processes_with(&mark)
        );
    }
}
