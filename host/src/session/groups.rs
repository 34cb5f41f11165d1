//! Dynamic groups (`--groups dynamic[,GROUP…]`): a session that starts with three meta tools
//! (beside `tools_search` and `tools_call`, see `search.rs`) and the groups it names, and
//! enables or disables the others at run time, so the agent carries only the tool lists its
//! work needs. A client that never lists again reaches the others through `tools_call`.
//!
//! Invariants:
//! - The meta tool names (`groups_list`, `groups_enable`, `groups_disable`) are outside the
//!   catalog (no catalog group is named `groups`) and are only served in dynamic mode.
//! - The enabled set only ever holds ids of this session's slots; an unknown id is refused with
//!   the known ones, and nothing changes.
//! - Enabling loads the group's library (as a first call would); disabling never unloads it
//!   (other sessions of an HTTP server share the plugins), it only hides its tools from this
//!   session, whose calls to them are then refused with the way to enable them.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use coremcp_plugin_api::{Annotations, Runs, ToolSpec};
use serde::Deserialize;
use serde_json::{json, Value};

use coremcp_engine::PluginSet;

pub const LIST: &str = "groups_list";
pub const ENABLE: &str = "groups_enable";
pub const DISABLE: &str = "groups_disable";

/// The groups a dynamic session has enabled.
pub struct Enabled(Mutex<BTreeSet<String>>);

impl Enabled {
    pub fn new(ids: &[String]) -> Self {
        Self(Mutex::new(ids.iter().cloned().collect()))
    }

    pub fn contains(&self, id: &str) -> bool {
        self.lock().contains(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `name` is one of the meta tools.
pub fn is_meta(name: &str) -> bool {
    matches!(name, LIST | ENABLE | DISABLE)
}

/// A meta tool as it is listed: the host serves it itself, never forwarded.
pub fn spec(
    name: &str,
    description: &str,
    input_schema: Value,
    annotations: Annotations,
) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema,
        annotations,
        runs: Runs::Local,
        remote_host: false,
        feature: None,
        guard: None,
        escalation: None,
        task: None,
    }
}

/// The meta tools, as they are listed.
pub fn specs() -> Vec<ToolSpec> {
    let groups_arg = |verb: &str| {
        json!({
            "type": "object",
            "properties": {"groups": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": format!("group ids (from groups_list) to {verb}"),
            }},
            "required": ["groups"],
            "additionalProperties": false,
        })
    };
    let switch = Annotations {
        read_only_hint: Some(false),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
    };
    vec![
        spec(
            LIST,
            "List the tool groups: what each is for, its tool count, and whether this session \
             has it enabled. Enable the ones your work needs with groups_enable.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            Annotations::READ_ONLY,
        ),
        spec(
            ENABLE,
            "Enable tool groups in this session: their tools are listed from now on \
             (tools/list_changed is sent).",
            groups_arg("enable"),
            switch,
        ),
        spec(
            DISABLE,
            "Disable tool groups in this session: their tools leave the list.",
            groups_arg("disable"),
            switch,
        ),
    ]
}

/// What a meta call did: its result (JSON) or a message naming the bad input, and whether the
/// enabled set changed.
pub struct Outcome {
    pub result: Result<Value, String>,
    pub changed: bool,
}

/// Runs the meta tool `name` with `args` (a JSON object's text).
pub fn call(plugins: &Arc<PluginSet>, enabled: &Enabled, name: &str, args: &str) -> Outcome {
    let refused = |message: String| Outcome {
        result: Err(message),
        changed: false,
    };
    if name == LIST {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct NoArgs {}
        if let Err(e) = serde_json::from_str::<NoArgs>(args) {
            return refused(format!("{LIST} takes no arguments: {e}"));
        }
        return Outcome {
            result: Ok(list(plugins, enabled)),
            changed: false,
        };
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Groups {
        groups: Vec<String>,
    }
    let ids = match serde_json::from_str::<Groups>(args) {
        Ok(g) if g.groups.is_empty() => {
            return refused(format!("{name}: \"groups\" needs at least one group id"))
        }
        Ok(g) => g.groups,
        Err(e) => return refused(format!("{name}: {e} (pass {{\"groups\": [\"git\"]}})")),
    };
    let known: Vec<&str> = plugins.slots().iter().map(|s| s.id.as_str()).collect();
    if let Some(unknown) = ids.iter().find(|id| !known.contains(&id.as_str())) {
        return refused(format!(
            "{name}: unknown group \"{unknown}\" (known: {})",
            known.join(", ")
        ));
    }
    let mut set = enabled.lock();
    let before = set.clone();
    for id in &ids {
        if name == ENABLE {
            set.insert(id.clone());
        } else {
            set.remove(id);
        }
    }
    let changed = *set != before;
    let now: Vec<String> = set.iter().cloned().collect();
    drop(set);
    let mut result = json!({"enabled": now, "changed": changed});
    if changed && name == ENABLE {
        // What the clients we know do (tests/clients/run): the model sees the new tools from
        // its next turn, not in the turn that enabled them.
        result["note"] = "the new tools are offered to you from your next turn".into();
    }
    if name == ENABLE {
        // Load now, so a broken library is reported here rather than at the first call.
        let mut errors = serde_json::Map::new();
        for id in &ids {
            let Some(index) = plugins.slots().iter().position(|s| &s.id == id) else {
                continue;
            };
            let slot = &plugins.slots()[index];
            if !slot.installed() {
                errors.insert(id.clone(), "not installed on this machine".into());
            } else if let Err(e) = plugins.load(index) {
                errors.insert(id.clone(), e.to_string().into());
            }
        }
        if !errors.is_empty() {
            result["load_errors"] = Value::Object(errors);
        }
    }
    Outcome {
        result: Ok(result),
        changed,
    }
}

fn list(plugins: &PluginSet, enabled: &Enabled) -> Value {
    let groups: Vec<Value> = plugins
        .slots()
        .iter()
        .map(|slot| {
            let mut row = json!({
                "id": slot.id,
                "enabled": enabled.contains(&slot.id),
                "installed": slot.installed(),
            });
            if let Some(group) = slot.catalog {
                row["title"] = group.title.into();
                row["purpose"] = group.purpose.into();
                row["tools"] = group.tools.len().into();
            }
            if let Some(Err(e)) = slot.state() {
                row["load_error"] = e.to_string().into();
            }
            if let Some(listing) = slot.listing().filter(|_| slot.catalog.is_none()) {
                row["tools"] = listing.count().into();
            }
            row
        })
        .collect();
    json!({"groups": groups})
}

/// The refusal of a call to a tool of a group this session has not enabled.
/// `switches`: whether the session has the group switches (`--groups dynamic`).
pub fn not_enabled(tool: &str, group: &str, switches: bool) -> String {
    let call = format!("tools_call with {{\"name\": \"{tool}\", \"arguments\": {{…}}}}");
    if switches {
        format!(
            "{tool} is in the \"{group}\" group, which this session has not enabled: call \
             {ENABLE} with {{\"groups\": [\"{group}\"]}} first, or call it through {call}"
        )
    } else {
        format!("{tool} is not listed in this session: call it through {call}")
    }
}

/// The refusal of a group switch where the clients share one session (sessionless 2026).
pub fn needs_a_session(name: &str) -> String {
    format!(
        "{name} needs a session, and this 2026 connection has none (its clients share one tool \
         list): call any tool through tools_call {{\"name\", \"arguments\"}}, finding it with \
         tools_search"
    )
}
