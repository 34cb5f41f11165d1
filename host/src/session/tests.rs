//! The session's decisions in milliseconds: a session over an empty plugins folder, its
//! messages caught by an outbox, through the call path's meta tools and refusals.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{Outbox, Session};
use crate::config::Config;
use crate::http::tests::Scratch;
use coremcp_engine::GroupSelection;
use coremcp_engine::PluginSet;
use coremcp_upstream::hub::Upstreams;
use coremcp_wire::policy::Caller;

/// Catches what a session sends.
#[derive(Default)]
struct Caught(Mutex<Vec<Value>>);

impl Outbox for Caught {
    fn send(&self, message: String) {
        let value = serde_json::from_str(&message).expect("every message is JSON");
        self.0.lock().expect("lock").push(value);
    }
}

struct Harness {
    session: Session,
    out: Arc<Caught>,
    next: u64,
    _plugins: Scratch,
}

impl Harness {
    /// An initialized session with `--groups groups` over an empty plugins folder.
    fn new(groups: &str) -> Self {
        let plugins = Scratch::new();
        let mut config = Config::with_plugins(plugins.path().to_owned());
        config.groups = GroupSelection::parse(groups).expect("groups");
        let set = Arc::new(PluginSet::discover(&config.engine()).expect("discover"));
        let out = Arc::new(Caught::default());
        let session = Session::new(
            config,
            set,
            Upstreams::none(),
            Caller::Stdio,
            Arc::clone(&out) as Arc<dyn Outbox>,
        );
        let mut harness = Self {
            session,
            out,
            next: 0,
            _plugins: plugins,
        };
        harness.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "unit", "version": "0"}}),
        );
        harness.notify("notifications/initialized");
        harness
    }

    fn notify(&mut self, method: &str) {
        let line = json!({"jsonrpc": "2.0", "method": method}).to_string();
        self.session.handle(line.as_bytes());
    }

    /// Sends a request and waits (polling, with a deadline) for its answer.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.session.handle(line.as_bytes());
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let found = {
                let mut caught = self.out.0.lock().expect("lock");
                let at = caught.iter().position(|m| m["id"] == id);
                at.map(|at| caught.remove(at))
            };
            if let Some(answer) = found {
                return answer;
            }
            assert!(Instant::now() < until, "no answer to {method}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    fn names(&mut self) -> Vec<String> {
        let listed = self.request("tools/list", json!({}));
        listed["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }
}

fn error_text(answer: &Value) -> &str {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn each_menu_lists_its_meta_tools() {
    let plain = Harness::new("all").names();
    assert!(
        !plain
            .iter()
            .any(|n| n.starts_with("tools_") || n.starts_with("groups_")),
        "{plain:?}"
    );
    assert_eq!(
        Harness::new("search").names(),
        ["tools_search", "tools_call"]
    );
    assert_eq!(
        Harness::new("dynamic").names(),
        [
            "groups_list",
            "groups_enable",
            "groups_disable",
            "tools_search",
            "tools_call"
        ]
    );
}

#[test]
fn meta_tools_answer_only_where_they_are_listed() {
    let mut plain = Harness::new("all");
    for meta in ["tools_search", "tools_call", "groups_list"] {
        let answer = plain.call(meta, json!({}));
        assert_eq!(answer["error"]["code"], -32602, "{meta}: {answer}");
    }
    let mut search = Harness::new("search");
    // The group switches are dynamic mode's, not search mode's.
    let answer = search.call("groups_list", json!({}));
    assert!(answer.get("error").is_some(), "{answer}");
}

#[test]
fn tools_call_names_an_inner_call_that_runs_as_a_direct_one() {
    let mut h = Harness::new("search");
    // An unknown inner tool is answered as a direct call of it is.
    let through = h.call("tools_call", json!({"name": "nope_tool"}));
    let direct = h.call("nope_tool", json!({}));
    assert_eq!(through["error"], direct["error"], "{through}");
    // A catalog tool whose group is not installed: what a full session answers a direct call.
    let through = h.call("tools_call", json!({"name": "git_status", "arguments": {}}));
    let direct = Harness::new("all").call("git_status", json!({}));
    let unavailable = "git_status is unavailable: the git group is not installed";
    assert!(error_text(&through).starts_with(unavailable), "{through}");
    assert!(error_text(&direct).starts_with(unavailable), "{direct}");
    // A direct call of a tool the session does not list points to tools_call.
    let direct = h.call("git_status", json!({}));
    assert!(error_text(&direct).contains("tools_call"), "{direct}");
    for (args, says) in [
        (json!({"name": "tools_search"}), "meta tool"),
        (json!({"name": "x", "arguments": "no"}), "object"),
        (json!({}), "name"),
    ] {
        let answer = h.call("tools_call", args.clone());
        assert!(error_text(&answer).contains(says), "{args}: {answer}");
    }
    // A search that matches nothing says so.
    let found = h.call("tools_search", json!({"query": "kubernetes helm"}));
    assert_eq!(
        found["result"]["structuredContent"]["matches"], 0,
        "{found}"
    );
}

#[test]
fn a_dynamic_session_refuses_a_hidden_tool_with_both_ways_to_reach_it() {
    let mut h = Harness::new("dynamic");
    let answer = h.call("git_status", json!({}));
    let text = error_text(&answer);
    assert!(
        text.contains("groups_enable") && text.contains("tools_call"),
        "{text}"
    );
    let enabled = h.call("groups_enable", json!({"groups": ["nope"]}));
    assert!(error_text(&enabled).contains("unknown group"), "{enabled}");
}
