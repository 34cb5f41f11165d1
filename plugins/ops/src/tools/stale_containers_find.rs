//! `stale_containers_find`: containers past an age on this machine's Docker daemon (the host
//! `local`: `DOCKER_HOST`, else the default socket) and the Registry's Docker hosts, read-only.
//!
//! Invariants: without `hosts`, `local` is always looked at, so a single machine with no
//! Registry hosts never reads "nothing stale" from nothing looked at; a daemon reached twice
//! (a Registry host whose endpoint is the local one) is counted once; a Registry that cannot
//! be read is reported (`registry_error`) beside the local answer; a host whose daemon is down
//! (or whose endpoint cannot be used) is reported in its own entry and never fails the others; age is counted from the container's creation, as
//! `docker container prune --filter until=` counts it; each container is shown in the summary
//! `docker_container_list` uses (the same function), with its `age_s`. The containers are
//! listed host by host (in the order the hosts are looked at) and by name within a host, and
//! an answer that cannot show them all goes on from `next_cursor` (the host and name of the
//! last one shown), so a walk returns each stale container once.

use std::collections::HashMap;

use coremcp_docker_api::summary;
use coremcp_docker_api::target::docker_hosts;
use coremcp_docker_api::{resolve, Endpoint};
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::budget::{chars, result_budget};
use coremcp_plugin_sdk::prelude::*;

/// The name `hosts` and the answer give this machine's own daemon.
const LOCAL: &str = "local";

pub const TOOL: Tool = Tool::typed("stale_containers_find", &typed(handler)).hints(Hints::READ);

/// Stale containers (exited, dead, created; running with include_running) older than
/// older_than_s on the local daemon and the Registry's Docker hosts.
#[derive(Debug, Args)]
pub struct Find {
    /// "local" or Registry hosts (default: all)
    #[arg(max_items = 50)]
    hosts: Vec<String>,
    /// min age (default 7 days)
    #[arg(min = 0, max = 315360000, default = 604_800)]
    older_than_s: u64,
    /// default exited, dead, created
    #[arg(max_items = 6)]
    states: Vec<State>,
    /// running ones too
    #[arg(default)]
    include_running: bool,
    /// key or key=value
    #[arg(min_len = 1, max_len = 512)]
    label: Option<String>,
    /// next_cursor
    cursor: Option<String>,
}

/// A container state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum State {
    Created,
    Exited,
    Dead,
    Paused,
    Restarting,
    Removing,
}

fn handler(ctx: &Ctx<'_>, args: Find) -> Result<Value, ToolError> {
    if args.label.as_deref().is_some_and(|l| l.starts_with('=')) {
        return Err(invalid("label", "a label filter is `key` or `key=value`"));
    }
    let mut registry_error = None;
    let targets: Vec<(String, Result<Endpoint, ToolError>)> = if args.hosts.is_empty() {
        let mut all = vec![(LOCAL.to_owned(), Endpoint::local().map_err(ToolError::from))];
        match docker_hosts(ctx, true) {
            Ok(hosts) => all.extend(hosts),
            Err(e) => registry_error = Some(e.message),
        }
        all
    } else {
        args.hosts
            .iter()
            .map(|name| {
                let endpoint = if name == LOCAL {
                    Endpoint::local().map_err(ToolError::from)
                } else {
                    resolve(ctx, Some(name)).map(|t| t.endpoint)
                };
                (name.clone(), endpoint)
            })
            .collect()
    };
    let mut states: Vec<String> = if args.states.is_empty() {
        vec!["exited".into(), "dead".into(), "created".into()]
    } else {
        args.states
            .iter()
            .map(|s| State::VALUES[*s as usize].to_owned())
            .collect()
    };
    if args.include_running {
        states.push("running".into());
    }
    let now = coremcp_plugin_sdk::time::now_ms() / 1000;
    let cutoff = now - args.older_than_s.min(now as u64) as i64;
    let mut filters = HashMap::new();
    if let Some(label) = &args.label {
        filters.insert("label".to_owned(), vec![label.clone()]);
    }
    let (cursor_host, cursor_name) = match args.cursor.as_deref() {
        Some(cursor) => {
            let mut parts = coremcp_plugin_sdk::page::decode_cursor(cursor, 2)?;
            let name = parts.pop();
            (parts.pop(), name)
        }
        None => (None, None),
    };
    // Hosts before the cursor's were listed on earlier pages: counted, not listed again.
    let mut before_cursor = cursor_host.is_some();
    let mut total = 0;
    let mut reports = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for (host, endpoint) in targets {
        let mut report = json!({"host": host});
        let is_cursor_host = cursor_host.as_deref() == Some(host.as_str());
        if is_cursor_host {
            before_cursor = false;
        }
        let (keep, after) = match (before_cursor, is_cursor_host) {
            (true, _) => (0, None),
            (false, true) => (KEPT, cursor_name.as_deref()),
            (false, false) => (KEPT, None),
        };
        if let Ok(endpoint) = &endpoint {
            let key = endpoint.to_string();
            if let Some((first, _)) = seen.iter().find(|(_, e)| *e == key) {
                report["endpoint"] = key.into();
                report["same_daemon_as"] = first.as_str().into();
                reports.push(report);
                continue;
            }
            seen.push((host.clone(), key));
        }
        // Only what an answer can show is kept of each daemon's list; the rest is counted.
        let stale = |c: &summary::Container| states.contains(&c.state) && c.created <= cutoff;
        let found = endpoint.and_then(|endpoint| {
            report["endpoint"] = endpoint.to_string().into();
            summary::list_by_name(ctx, &endpoint, true, filters.clone(), (keep, after), stale)
                .map_err(ToolError::from)
        });
        match found {
            Ok(found) => {
                let shown: Vec<Value> = found
                    .kept
                    .iter()
                    .map(|c| {
                        let mut shown = summary::summary(c);
                        shown["age_s"] = (now - c.created).max(0).into();
                        shown
                    })
                    .collect();
                total += found.matched;
                report["ok"] = true.into();
                report["count"] = found.matched.into();
                if before_cursor {
                    report["listed_before"] = true.into();
                } else {
                    report["containers"] = shown.into();
                    if found.remaining > found.kept.len() {
                        report["more"] = (found.remaining - found.kept.len()).into();
                    }
                }
            }
            Err(e) => {
                report["ok"] = false.into();
                report["error"] = e.message.as_str().into();
            }
        }
        reports.push(report);
    }
    let mut out = json!({
        "older_than_s": args.older_than_s,
        "states": states,
        "total": total,
        "hosts": reports,
    });
    if let Some(error) = registry_error {
        out["registry_error"] = error.as_str().into();
    }
    fit(&mut out);
    Ok(out)
}

/// Stale containers kept of one daemon's list: more than one answer can show.
const KEPT: usize = 500;

/// Drops listed containers from the end (the last host's last ones first) until the answer
/// fits, counting them in their host's `more`, and sets `next_cursor` to the host and name of
/// the last one shown when any are left. A host whose list was cut short before (more than a
/// daemon's list keeps) ends what is shown: the hosts after it wait for the next page.
fn fit(out: &mut Value) {
    let Some(hosts) = out["hosts"].as_array_mut() else {
        return;
    };
    let listed = |h: &Value| h["containers"].as_array().map_or(0, Vec::len);
    if let Some(cut) = hosts
        .iter()
        .position(|h| h["more"].as_u64().unwrap_or(0) > 0)
    {
        for host in hosts.iter_mut().skip(cut + 1) {
            let dropped = listed(host);
            if dropped > 0 {
                host["containers"] = json!([]);
                host["more"] = (host["more"].as_u64().unwrap_or(0) + dropped as u64).into();
            }
        }
    }
    // Room for the cursor beside the lists.
    let budget = result_budget().saturating_sub(600);
    let mut size = chars(out);
    while size > budget {
        let Some(hosts) = out["hosts"].as_array_mut() else {
            return;
        };
        let Some(host) = hosts.iter_mut().rev().find(|h| listed(h) > 0) else {
            break;
        };
        if let Some(list) = host["containers"].as_array_mut() {
            if let Some(dropped) = list.pop() {
                size = size.saturating_sub(chars(&dropped) + 1);
            }
        }
        let more = host["more"].as_u64().unwrap_or(0) + 1;
        host["more"] = more.into();
    }
    let hosts = out["hosts"].as_array().cloned().unwrap_or_default();
    let left = hosts.iter().any(|h| h["more"].as_u64().unwrap_or(0) > 0);
    let last = hosts.iter().rev().find_map(|h| {
        let name = h["containers"].as_array()?.last()?["name"]
            .as_str()?
            .to_owned();
        Some((h["host"].as_str()?.to_owned(), name))
    });
    if let (true, Some((host, name))) = (left, last) {
        out["next_cursor"] = coremcp_plugin_sdk::page::encode_cursor(&[&host, &name]).into();
    }
}
