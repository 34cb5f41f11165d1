//! `docker_container_inspect`: one container, trimmed to what an agent acts on (state, health,
//! command, mounts, networks) or, with `raw`, the daemon's whole document.
//!
//! Invariant: environment values named like credentials are `<redacted>` in both forms; a
//! field the daemon leaves out or sends empty is left out, never sent as `null`.

use coremcp_docker_api::summary::short_id;
use coremcp_plugin_sdk::budget::result_budget;
use coremcp_plugin_sdk::prelude::*;

use super::common::{answer, connect, container_ref, inspect, redact_env};

pub const TOOL: Tool = Tool::typed("docker_container_inspect", &typed(handler)).hints(Hints::READ);

/// Inspect a container: state, health, command, environment (credentials redacted), mounts,
/// networks.
#[derive(Debug, Args)]
pub struct Inspect {
    /// id, id prefix or name
    #[arg(min_len = 1, max_len = 256)]
    container: String,
    /// Registry host (default: here)
    #[arg(min_len = 1, max_len = 200)]
    host: Option<String>,
    /// the daemon's whole document
    #[arg(default)]
    raw: bool,
}

fn handler(ctx: &Ctx<'_>, args: Inspect) -> Result<Value, ToolError> {
    let name = container_ref("container", &args.container)?;
    let d = connect(ctx, args.host.as_deref())?;
    let found = inspect(ctx, &d, &name)?;
    let mut doc = serde_json::to_value(&found).map_err(|e| {
        ToolError::new(
            codes::INTERNAL,
            format!("the inspect answer did not serialise: {e}"),
        )
    })?;
    if let Some(Value::Array(env)) = doc.pointer_mut("/Config/Env") {
        for entry in env.iter_mut() {
            if let Value::String(text) = entry {
                *text = redact_env(text);
            }
        }
    }
    if args.raw {
        strip_nulls(&mut doc);
        let mut out = answer(&d.target, json!({}));
        out["container"] = doc;
        if coremcp_plugin_sdk::budget::chars(&out) > result_budget() {
            return Err(ToolError::new(
                codes::FAILED,
                format!(
                    "the raw inspect document of \"{name}\" is larger than a result may be; \
                     inspect it without raw"
                ),
            ));
        }
        return Ok(out);
    }
    Ok(answer(&d.target, json!({"container": trimmed(&doc)})))
}

/// The trimmed view of an inspect document (Engine API field names in, snake_case out).
pub fn trimmed(doc: &Value) -> Value {
    let mut out = Map::new();
    out.insert(
        "id".into(),
        short_id(doc["Id"].as_str().unwrap_or_default()).into(),
    );
    let name = doc["Name"].as_str().unwrap_or_default();
    out.insert("name".into(), name.trim_start_matches('/').into());
    copy(
        &mut out,
        doc,
        &[("image", "/Config/Image"), ("image_id", "/Image")],
    );
    copy(
        &mut out,
        doc,
        &[("created", "/Created"), ("restart_count", "/RestartCount")],
    );
    let mut state = Map::new();
    copy(
        &mut state,
        doc,
        &[
            ("status", "/State/Status"),
            ("running", "/State/Running"),
            ("paused", "/State/Paused"),
            ("restarting", "/State/Restarting"),
            ("oom_killed", "/State/OOMKilled"),
            ("dead", "/State/Dead"),
            ("pid", "/State/Pid"),
            ("exit_code", "/State/ExitCode"),
            ("error", "/State/Error"),
            ("started_at", "/State/StartedAt"),
            ("finished_at", "/State/FinishedAt"),
        ],
    );
    if let Some(health) = doc.pointer("/State/Health").filter(|h| h.is_object()) {
        let mut h = Map::new();
        copy(
            &mut h,
            health,
            &[("status", "/Status"), ("failing_streak", "/FailingStreak")],
        );
        if let Some(last) = health["Log"].as_array().and_then(|l| l.last()) {
            let output = last["Output"].as_str().unwrap_or_default();
            let (end, _) = coremcp_plugin_sdk::budget::tail(output, 500);
            h.insert(
                "last".into(),
                json!({"exit_code": last["ExitCode"].as_i64().unwrap_or_default(), "output": end}),
            );
        }
        state.insert("health".into(), Value::Object(h));
    }
    out.insert("state".into(), Value::Object(state));
    let mut config = Map::new();
    copy(
        &mut config,
        doc,
        &[
            ("cmd", "/Config/Cmd"),
            ("entrypoint", "/Config/Entrypoint"),
            ("working_dir", "/Config/WorkingDir"),
            ("user", "/Config/User"),
            ("env", "/Config/Env"),
            ("labels", "/Config/Labels"),
            ("restart_policy", "/HostConfig/RestartPolicy/Name"),
            ("network_mode", "/HostConfig/NetworkMode"),
        ],
    );
    if let Some(ports) = doc
        .pointer("/Config/ExposedPorts")
        .and_then(Value::as_object)
    {
        let mut ports: Vec<&String> = ports.keys().collect();
        ports.sort();
        config.insert("exposed_ports".into(), json!(ports));
    }
    out.insert("config".into(), Value::Object(config));
    let mounts: Vec<Value> = doc["Mounts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let mut mount = Map::new();
            copy(
                &mut mount,
                m,
                &[
                    ("type", "/Type"),
                    ("name", "/Name"),
                    ("source", "/Source"),
                    ("destination", "/Destination"),
                    ("rw", "/RW"),
                ],
            );
            Value::Object(mount)
        })
        .collect();
    out.insert("mounts".into(), mounts.into());
    let mut networks = Map::new();
    for (net, settings) in doc
        .pointer("/NetworkSettings/Networks")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let mut n = Map::new();
        copy(
            &mut n,
            settings,
            &[
                ("ip_address", "/IPAddress"),
                ("gateway", "/Gateway"),
                ("mac_address", "/MacAddress"),
            ],
        );
        networks.insert(net.clone(), Value::Object(n));
    }
    out.insert("networks".into(), Value::Object(networks));
    Value::Object(out)
}

/// Copies each `(key, pointer)` of `from` that is present and not null or `""` into `to`.
fn copy(to: &mut Map<String, Value>, from: &Value, fields: &[(&str, &str)]) {
    for (key, pointer) in fields {
        match from.pointer(pointer) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {}
            Some(value) => {
                to.insert((*key).to_owned(), value.clone());
            }
        }
    }
}

/// Removes every `null` member, at any depth (a client that reads `null` as a value chokes).
fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trimmed_view_keeps_what_matters_and_no_nulls() {
        let doc = json!({
            "Id": "0123456789abcdef", "Name": "/web", "Image": "sha256:1",
            "Created": "2026-01-01T00:00:00Z", "RestartCount": 0,
            "State": {"Status": "exited", "Running": false, "ExitCode": 3, "Error": "",
                      "Health": {"Status": "unhealthy", "FailingStreak": 2,
                                 "Log": [{"ExitCode": 1, "Output": "no"}]}},
            "Config": {"Image": "busybox", "Cmd": ["sh"], "Env": ["A=1"], "Labels": null,
                       "ExposedPorts": {"80/tcp": {}}},
            "Mounts": [{"Type": "volume", "Source": "/v", "Destination": "/d", "RW": true}],
            "NetworkSettings": {"Networks": {"none": {"IPAddress": ""}}}
        });
        let t = trimmed(&doc);
        assert_eq!(t["id"], "0123456789ab");
        assert_eq!(t["name"], "web");
        assert_eq!(t["state"]["exit_code"], 3);
        assert!(t["state"].get("error").is_none());
        assert_eq!(t["state"]["health"]["last"]["output"], "no");
        assert!(t["config"].get("labels").is_none());
        assert_eq!(t["config"]["exposed_ports"], json!(["80/tcp"]));
        assert_eq!(t["mounts"][0]["rw"], true);
        assert_eq!(t["networks"]["none"], json!({}));
        let mut with_null = json!({"a": null, "b": [{"c": null, "d": 1}]});
        strip_nulls(&mut with_null);
        assert_eq!(with_null, json!({"b": [{"d": 1}]}));
    }
}
