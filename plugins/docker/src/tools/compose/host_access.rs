//! What in a Compose project gives a container the host, judged one way wherever it is asked:
//! on Core MCP's own reading of the project's files before Compose runs, and on Compose's own
//! resolved configuration, the file `up` is then handed ([`super::resolved`]).
//!
//! A service is given the host by `privileged`, `cap_add`, `pid`/`ipc`/`uts`/`cgroup`/
//! `userns_mode`/`network_mode` `host`, `devices`, `device_cgroup_rules`, `gpus`, a
//! `security_opt` other than `no-new-privileges`, and a build that is `privileged`, asks for
//! `entitlements` or the host's network; a mount gives it the host when it binds `/`, an
//! ancestor of a protected path, anything inside `/proc`, `/sys`, `/dev` or `/boot`, a Docker or
//! containerd socket, or binds a system folder (`/etc`, `/root`, `/usr`, …, Docker's own data)
//! writable.
//!
//! Invariants:
//! - A boolean is off only when it is plainly off (`false`, or the strings Compose reads as
//!   false: `false`, `no`, `n`, `off`, any case): `yes`, `on`, `"true"`, a number, an
//!   interpolation left unresolved — anything else counts as on. A reader that disagrees with
//!   Compose can only refuse more.
//! - Nothing here reads a file or runs anything: it judges values it is handed.

use std::path::{Path, PathBuf};

use coremcp_plugin_sdk::prelude::*;

use super::reach::{self, Vars};

/// Trees any bind mount of (or above) hands over the host: the kernel's and the devices'.
const CONTROL_TREES: &[&str] = &["/proc", "/sys", "/dev", "/boot"];

/// Trees a writable bind mount of (or above) hands over the host: its configuration, root's
/// home, its programs and the container engines' own data.
const SYSTEM_TREES: &[&str] = &[
    "/etc",
    "/root",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/run/containerd",
    "/var/run/containerd",
];

/// The service keys whose value `host` shares one of the host's namespaces.
const HOST_NAMESPACES: &[&str] = &["pid", "ipc", "uts", "cgroup", "userns_mode", "network_mode"];

/// Whether a Compose boolean is on (see the module invariants): absent and `null` are off.
pub fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::String(s)) => !matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "false" | "no" | "n" | "off"
        ),
        Some(_) => true,
    }
}

/// Whether a list-or-mapping setting holds anything.
fn given(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Array(list)) => !list.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(_) => true,
    }
}

/// What service `name` (its settings, merged and interpolated) is given of the host besides
/// its mounts, in words.
pub fn service(name: &str, service: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let get = |key: &str| service.get(key);
    if truthy(get("privileged")) {
        found.push(format!("service {name} runs privileged"));
    }
    if given(get("cap_add")) {
        found.push(format!(
            "service {name} adds capabilities ({})",
            compact(&service["cap_add"])
        ));
    }
    for key in HOST_NAMESPACES {
        if service[*key]
            .as_str()
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("host"))
        {
            found.push(format!("service {name} shares the host's {key}"));
        }
    }
    for key in ["devices", "device_cgroup_rules", "gpus"] {
        if given(get(key)) {
            found.push(format!("service {name} is given host devices ({key})"));
        }
    }
    let weakening: Vec<String> = match get("security_opt") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .filter(|o| !o.as_str().is_some_and(hardens))
            .map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_owned))
            .collect(),
        Some(other) => vec![other.to_string()],
    };
    if !weakening.is_empty() {
        found.push(format!(
            "service {name} sets security_opt {}",
            weakening.join(", ")
        ));
    }
    if let Some(build) = get("build").filter(|b| b.is_object()) {
        if truthy(build.get("privileged")) {
            found.push(format!("service {name} builds privileged"));
        }
        if given(build.get("entitlements")) {
            found.push(format!("service {name} builds with entitlements"));
        }
        if build["network"]
            .as_str()
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("host"))
        {
            found.push(format!("service {name} builds on the host's network"));
        }
    }
    found
}

/// `no-new-privileges` (alone, or `:true`/`=true`): the one security option that only takes
/// away.
fn hardens(option: &str) -> bool {
    let option = option.trim();
    option == "no-new-privileges"
        || option
            .strip_prefix("no-new-privileges")
            .and_then(|rest| rest.strip_prefix([':', '=']))
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn compact(value: &Value) -> String {
    match value {
        Value::Array(list) => list
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// The top-level named volumes that bind a host folder: `driver_opts.device` with a bind
/// (`o` naming `bind`, or `type: none`) — name, device (interpolated) and whether `o` says
/// `ro`.
pub fn volume_devices(doc: &Value, vars: &Vars) -> Vec<(String, String, bool)> {
    let Some(volumes) = doc["volumes"].as_object() else {
        return Vec::new();
    };
    volumes
        .iter()
        .filter_map(|(name, volume)| {
            let opts = volume.get("driver_opts")?;
            let device = opts.get("device")?.as_str()?;
            let text = |key: &str| {
                opts.get(key)
                    .and_then(Value::as_str)
                    .map(|v| reach::interpolate(v, vars).unwrap_or_else(|_| v.to_owned()))
                    .unwrap_or_default()
            };
            let o = text("o");
            let options: Vec<&str> = o.split(',').map(str::trim).collect();
            // Any device the local driver mounts is judged: a bind of a folder, or a block
            // device (`type: ext4`), which is a host device all the same.
            let device = reach::interpolate(device, vars).unwrap_or_else(|_| device.to_owned());
            Some((name.clone(), device, options.contains(&"ro")))
        })
        .collect()
}

/// Where a daemon's socket may be on its machine: the usual places, the endpoint's own, the
/// rootless one; canonical too when the daemon is this machine's.
pub fn sockets(endpoint: &coremcp_docker_api::Endpoint, vars: &Vars, local: bool) -> Vec<PathBuf> {
    let mut sockets: Vec<PathBuf> = vec![
        "/var/run/docker.sock".into(),
        "/run/docker.sock".into(),
        "/run/containerd/containerd.sock".into(),
        "/var/run/containerd/containerd.sock".into(),
    ];
    if let coremcp_docker_api::Endpoint::Unix(path) = endpoint {
        sockets.push(path.into());
    }
    if let Some(runtime) = vars.get("XDG_RUNTIME_DIR") {
        sockets.push(Path::new(runtime).join("docker.sock"));
    }
    if local {
        let canonical: Vec<PathBuf> = sockets
            .iter()
            .filter_map(|s| s.canonicalize().ok())
            .collect();
        sockets.extend(canonical);
    }
    sockets
}

/// Why a bind of host path `source` hands the container the host, if it does (`sockets`: the
/// daemon's, from [`sockets`]).
pub fn mount(source: &Path, read_only: bool, sockets: &[PathBuf]) -> Option<String> {
    let shown = source.display();
    if source == Path::new("/") {
        return Some(format!("mounts {shown}, the whole host"));
    }
    if let Some(socket) = sockets.iter().find(|s| s.starts_with(source)) {
        return Some(format!(
            "mounts {shown}, which holds the container engine's socket {}",
            socket.display()
        ));
    }
    let control = |tree: &&&str| source.starts_with(tree) || Path::new(tree).starts_with(source);
    if let Some(tree) = CONTROL_TREES.iter().find(control) {
        return Some(format!("mounts {shown}, of the host's {tree}"));
    }
    // Above a system tree, even read-only, it holds that tree writable through nothing else;
    // inside one, read-only is a read (`/etc/localtime`), writable is control.
    if let Some(tree) = SYSTEM_TREES
        .iter()
        .find(|t| Path::new(t).starts_with(source))
    {
        return Some(format!("mounts {shown}, which holds the host's {tree}"));
    }
    if !read_only {
        if let Some(tree) = SYSTEM_TREES.iter().find(|t| source.starts_with(t)) {
            return Some(format!("mounts {shown} writable, inside the host's {tree}"));
        }
    }
    None
}

/// Everything Compose's resolved configuration `doc` (of a project in `dir`, read again with
/// `vars`) gives a container of the host, in words.
pub fn resolved(doc: &Value, dir: &Path, vars: &Vars, sockets: &[PathBuf]) -> Vec<String> {
    let doc = reach::merged_deep(doc);
    let mut found = Vec::new();
    for (name, device, read_only) in volume_devices(&doc, vars) {
        match reach::place(dir, &device, vars) {
            Ok(path) => found
                .extend(mount(&path, read_only, sockets).map(|why| format!("volume {name} {why}"))),
            Err(why) => found.push(format!("volume {name}'s device cannot be placed ({why})")),
        }
    }
    let Some(services) = doc["services"].as_object() else {
        return found;
    };
    for (name, settings) in services {
        let settings = reach::interpolated(settings, vars);
        found.extend(service(name, &settings));
        for volume in settings["volumes"].as_array().into_iter().flatten() {
            let Some((source, read_only)) = reach::bind_source(volume, vars) else {
                continue;
            };
            match reach::place(dir, &source, vars) {
                Ok(path) => found.extend(
                    mount(&path, read_only, sockets).map(|why| format!("service {name} {why}")),
                ),
                Err(why) => found.push(format!(
                    "service {name}'s mount {source} cannot be placed ({why})"
                )),
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_are_off_only_when_plainly_off() {
        for on in [
            json!(true),
            json!("yes"),
            json!("on"),
            json!("Y"),
            json!("TRUE"),
            json!(1),
            json!("${PRIV}"),
        ] {
            assert!(truthy(Some(&on)), "{on}");
        }
        for off in [
            json!(false),
            json!("no"),
            json!("Off"),
            json!("n"),
            json!(null),
        ] {
            assert!(!truthy(Some(&off)), "{off}");
        }
        assert!(!truthy(None));
    }

    #[test]
    fn every_way_a_service_is_given_the_host_is_named() {
        for (settings, says) in [
            (json!({"privileged": "on"}), "privileged"),
            (json!({"cap_add": ["SYS_ADMIN"]}), "SYS_ADMIN"),
            (json!({"pid": "host"}), "pid"),
            (json!({"ipc": "HOST"}), "ipc"),
            (json!({"userns_mode": "host"}), "userns_mode"),
            (json!({"network_mode": "host"}), "network_mode"),
            (json!({"devices": ["/dev/sda:/dev/sda"]}), "devices"),
            (json!({"security_opt": ["seccomp:unconfined"]}), "seccomp"),
            (
                json!({"build": {"context": ".", "privileged": true}}),
                "builds privileged",
            ),
        ] {
            let found = service("web", &settings);
            assert!(
                found.len() == 1 && found[0].contains(says),
                "{settings}: {found:?}"
            );
        }
        let plain = json!({"image": "x", "privileged": false, "cap_drop": ["ALL"],
                           "security_opt": ["no-new-privileges:true", "no-new-privileges"],
                           "network_mode": "bridge", "pid": "service:db"});
        assert_eq!(service("web", &plain), Vec::<String>::new());
    }

    #[test]
    fn mounts_of_the_host_are_told_from_ordinary_ones() {
        let sockets = vec![PathBuf::from("/var/run/docker.sock")];
        for (source, read_only, hands_over) in [
            ("/", true, true),
            ("/var", true, true),
            ("/var/run", true, true),
            ("/var/run/docker.sock", true, true),
            ("/proc", true, true),
            ("/proc/1/root", true, true),
            ("/sys/fs/cgroup", true, true),
            ("/etc", true, true),
            ("/etc/localtime", true, false),
            ("/etc/cron.d", false, true),
            ("/root/.ssh", false, true),
            ("/var/lib/docker", true, true),
            ("/srv/app/data", false, false),
            ("/home/dev/project", false, false),
        ] {
            let found = mount(Path::new(source), read_only, &sockets);
            assert_eq!(
                found.is_some(),
                hands_over,
                "{source} ro={read_only}: {found:?}"
            );
        }
    }

    #[test]
    fn a_resolved_configuration_is_judged_whole() {
        let doc: Value = serde_norway::from_str(
            "services:\n  web:\n    image: x\n    privileged: true\n    volumes:\n    - /:/host:rw\n    - /srv/data:/data:rw\n  db:\n    image: y\nvolumes:\n  root:\n    driver_opts:\n      type: none\n      o: bind\n      device: /\n",
        )
        .expect("yaml");
        let found = resolved(&doc, Path::new("/srv"), &Vars::new(), &[]);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found.iter().any(|f| f.starts_with("volume root mounts /")));
        assert!(found.iter().any(|f| f == "service web runs privileged"));
        assert!(found.iter().any(|f| f.starts_with("service web mounts /,")));
    }
}
