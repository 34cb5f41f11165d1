//! `GET /api/status`: what this server is and how its parts are, as JSON.
//!
//! `{"mode": "proxy"|"service", "version", "advertise"?, "sessions", "groups": [{"id", "state",
//! …}], "relays": […], "routes": […], "upstream": […]}`. Group states are read without loading
//! anything: `not_installed`, `not_loaded` (installed, not needed yet), `loaded` (with `version`,
//! `api_version` and `tools`), or `failed` (with `error`); a group whose tools have cargo
//! features, loaded or not (from the manifest beside its library), has `features`: each
//! `{name, enabled}`. The relays and their failover state come from the
//! forwarding layer (`coremcp_relay::relay_status`), and each forwarded group's route
//! (`own_store`, or `forwarded` with its targets and, for a Consul service, what it resolved
//! to last) from `coremcp_relay::route_status`; `recent_errors` holds the last failed calls
//! (`crate::metrics`) — each principal sees only its own (an error can quote the call's
//! arguments), this machine's own user and the operators (`--operator`) every one. No field is
//! ever `null`.

use serde_json::{json, Value};

use crate::config::Config;
use coremcp_engine::loader::LoadError;
use coremcp_engine::PluginSet;
use coremcp_upstream::hub::Upstreams;

/// The status document, as `viewer` may see it: every principal's recent errors (`None`), or
/// only that principal's own.
pub fn status(
    config: &Config,
    plugins: &PluginSet,
    upstreams: &Upstreams,
    sessions: usize,
    viewer: Option<&str>,
) -> Value {
    let groups: Vec<Value> = plugins
        .slots()
        .iter()
        .map(|slot| match slot.state() {
            None if slot.installed() => {
                let mut group = json!({"id": slot.id, "state": "not_loaded"});
                // Its tools' features as its manifest beside it says, without loading it.
                let listed = match slot.listing() {
                    Some(coremcp_engine::Listing::Listed(tools)) => Some(tools.as_ref().clone()),
                    _ => coremcp_engine::sidecar::read(&slot.path, &slot.id),
                };
                let features = features(listed.iter().flatten().filter_map(|t| t.feature.as_ref()));
                if !features.is_empty() {
                    group["features"] = features.into();
                }
                group
            }
            None | Some(Err(LoadError::NotInstalled { .. })) => {
                json!({"id": slot.id, "state": "not_installed"})
            }
            Some(Ok(loaded)) => {
                let mut group = json!({
                    "id": slot.id,
                    "state": "loaded",
                    "version": loaded.library.manifest.plugin_version,
                    "api_version": loaded.library.manifest.api_version,
                    "tools": loaded.tools().len(),
                });
                let features = features(
                    loaded
                        .library
                        .manifest
                        .tools
                        .iter()
                        .filter_map(|t| t.feature.as_ref()),
                );
                if !features.is_empty() {
                    group["features"] = features.into();
                }
                group
            }
            Some(Err(e)) => json!({"id": slot.id, "state": "failed", "error": e.to_string()}),
        })
        .collect();
    let mut doc = json!({
        "mode": if config.service_mode { "service" } else { "proxy" },
        "version": env!("CARGO_PKG_VERSION"),
        "sessions": sessions,
        "groups": groups,
        "relays": coremcp_relay::relay_status(&config.relay),
        "routes": coremcp_relay::route_status(&config.relay),
        "upstream": upstreams.status(),
        "recent_errors": crate::metrics::recent_errors(viewer),
    });
    if let Some(url) = &config.advertise {
        doc["advertise"] = url.as_str().into();
    }
    doc
}

/// Each feature once, in the order first met: `{name, enabled}`.
fn features<'a>(gates: impl Iterator<Item = &'a coremcp_plugin_api::FeatureGate>) -> Vec<Value> {
    let mut seen: Vec<&str> = Vec::new();
    gates
        .filter(|f| {
            let new = !seen.contains(&f.name.as_str());
            if new {
                seen.push(&f.name);
            }
            new
        })
        .map(|f| json!({"name": f.name, "enabled": f.enabled}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_has_its_shape_without_loading_anything() {
        let scratch = crate::http::tests::Scratch::new();
        let mut config = Config::with_plugins(scratch.path().to_owned());
        config.service_mode = true;
        let plugins = PluginSet::discover(&config.engine()).expect("discover");
        let doc = status(&config, &plugins, &Upstreams::none(), 3, None);
        assert_eq!(doc["mode"], "service");
        assert_eq!(doc["sessions"], 3);
        assert_eq!(doc["relays"], json!([]));
        assert_eq!(doc["upstream"], json!([]));
        let groups = doc["groups"].as_array().expect("groups");
        assert!(!groups.is_empty());
        assert!(
            groups.iter().all(|g| g["state"] == "not_installed"),
            "{doc}"
        );
    }
}
