//! What the Docker tools share: checking a container reference, reaching the daemon a call
//! names, and redacting credentials in environment lists.

use coremcp_docker_api::{daemon, resolve, Target};
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::{Ctx, ToolError};
use serde_json::{json, Value};

/// A connected daemon and where it is.
pub struct Daemon {
    pub target: Target,
    pub docker: bollard::Docker,
}

/// The daemon of Registry host `host`, or this machine's.
pub fn connect(ctx: &Ctx<'_>, host: Option<&str>) -> Result<Daemon, ToolError> {
    let target = resolve(ctx, host)?;
    let docker = daemon(ctx, &target.endpoint)?;
    Ok(Daemon { target, docker })
}

/// The daemon's inspect document of container `name`.
pub fn inspect(
    ctx: &Ctx<'_>,
    d: &Daemon,
    name: &str,
) -> Result<bollard::models::ContainerInspectResponse, ToolError> {
    let (docker, owned) = (d.docker.clone(), name.to_owned());
    let what = format!("no container \"{name}\"");
    let found = coremcp_docker_api::exchange(ctx, &d.target.endpoint, &what, async move {
        docker.inspect_container(&owned, None).await
    })?;
    Ok(found)
}

/// A container id or name as the Engine API takes it in a path: letters, digits and `_.-`,
/// an optional leading `/`.
pub fn container_ref(field: &str, value: &str) -> Result<String, ToolError> {
    let name = value.strip_prefix('/').unwrap_or(value);
    let ok = !name.is_empty()
        && name.len() <= 256
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !ok {
        return Err(invalid(
            field,
            format!("{value:?} is not a container id or name (letters, digits, '_', '.', '-')"),
        ));
    }
    Ok(name.to_owned())
}

/// `KEY=VALUE` with the value replaced when the key names a credential.
pub fn redact_env(entry: &str) -> String {
    match entry.split_once('=') {
        Some((key, _)) if coremcp_spawn::is_credential_name(key) => format!("{key}=<redacted>"),
        _ => entry.to_owned(),
    }
}

/// `fields` with the daemon the answer came from (`host` only when one was named).
pub fn answer(target: &Target, mut fields: Value) -> Value {
    let mut out = json!({"endpoint": target.endpoint.to_string()});
    if let Some(host) = &target.host {
        out["host"] = host.as_str().into();
    }
    if let (Some(out), Value::Object(fields)) = (out.as_object_mut(), fields.take()) {
        out.extend(fields);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_redaction() {
        assert_eq!(container_ref("c", "/web-1").expect("name"), "web-1");
        for bad in ["", "a/b", "x?all=1", "../v1.41/info", "a b"] {
            assert!(container_ref("c", bad).is_err(), "{bad}");
        }
        assert_eq!(redact_env("GITHUB_TOKEN=abc"), "GITHUB_TOKEN=<redacted>");
        assert_eq!(redact_env("PATH=/bin"), "PATH=/bin");
    }
}
