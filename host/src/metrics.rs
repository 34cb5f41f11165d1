//! Prometheus metrics (`GET /metrics`), in the text format of the `prometheus-client` crate.
//!
//! Two kinds of family:
//! - counted as things happen (calls, their latency, calls in flight, plugin load time), in one
//!   process-wide registry: a call's [`Subject`] finds its series once per name, so an update
//!   is a few atomic operations, and no lock is held across a call;
//! - read at scrape time from the `/api/status` document (sessions, relays, upstream servers),
//!   so the numbers a person sees on the page and in a graph are the same numbers.
//!
//! Invariants: every family is named `coremcp_…`; label values are bounded: a catalog tool is
//! named by its catalog name, a tool outside the catalog only once its plugin serves it, an
//! upstream tool by its server (`mcp__<id>`), and a name nobody serves is counted as
//! `unknown`.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use serde_json::Value;

/// Built once: building a searcher costs more than searching a short text with it.
static ERROR_HEAD: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"error\":{\"code\""));

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    ToolError,
    Refused,
    Timeout,
    Cancelled,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Refused => "refused",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// A finished call's outcome from its answer: a JSON-RPC response as the host writes it
    /// (`render` puts `isError` last), or a JSON-RPC error. Reads only the answer's ends.
    pub fn of_answer(answer: &str) -> Self {
        let head = &answer.as_bytes()[..answer.len().min(96)];
        let is_error = answer.ends_with(",\"isError\":true}}") || ERROR_HEAD.find(head).is_some();
        match is_error {
            true => Outcome::ToolError,
            false => Outcome::Ok,
        }
    }
}

type Label = (&'static str, Cow<'static, str>);

/// Who a call is counted under: its group and tool, with the series it updates, found once
/// per name (a lookup by label set hashes every label; a call only clones an `Arc`).
#[derive(Debug, Clone)]
pub struct Subject {
    series: Arc<Series>,
}

/// One subject's series, each taken from its family the first time it is updated (so that an
/// outcome that never happened shows no zero series).
#[derive(Debug)]
struct Series {
    group: Cow<'static, str>,
    tool: Cow<'static, str>,
    /// How quick the tool has been lately (kept here: this is the tool's state found once
    /// per call).
    pace: coremcp_engine::pace::Pace,
    calls: [OnceLock<Counter>; 5],
    latency: OnceLock<Histogram>,
    upstream_latency: OnceLock<Histogram>,
}

impl Subject {
    /// The subject of a call of `tool`, served by the group `group` (when known).
    pub fn of(tool: &str, group: Option<&str>) -> Self {
        // Labels borrowed from the call first: only a subject seen for the first time owns
        // copies of them.
        if let Some(rest) = tool.strip_prefix("mcp__") {
            let server = coremcp_upstream::publish::split_name(tool).map_or(rest, |(id, _)| id);
            let label = &tool[..5 + server.len()];
            return Self::known("upstream", label).unwrap_or_else(|| {
                Self::named(Cow::Borrowed("upstream"), Cow::Owned(label.to_owned()))
            });
        }
        if let Some(catalog) = coremcp_catalog::group_of(tool) {
            return Self::known(catalog.id, tool).unwrap_or_else(|| {
                let name = catalog
                    .names()
                    .find(|n| *n == tool)
                    .map_or(Cow::Owned(tool.to_owned()), Cow::Borrowed);
                Self::named(Cow::Borrowed(catalog.id), name)
            });
        }
        match group {
            Some(group) => Self::known(group, tool).unwrap_or_else(|| {
                Self::named(Cow::Owned(group.to_owned()), Cow::Owned(tool.to_owned()))
            }),
            None => Self::unknown(),
        }
    }

    /// A name nobody serves.
    pub fn unknown() -> Self {
        Self::named(Cow::Borrowed("unknown"), Cow::Borrowed("unknown"))
    }

    /// Every subject so far, by tool label.
    fn subjects() -> &'static RwLock<HashMap<Cow<'static, str>, Arc<Series>>> {
        static KNOWN: OnceLock<RwLock<HashMap<Cow<'static, str>, Arc<Series>>>> = OnceLock::new();
        KNOWN.get_or_init(RwLock::default)
    }

    /// The subject of these labels, if one was made before.
    fn known(group: &str, tool: &str) -> Option<Self> {
        Self::subjects()
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
            .filter(|series| series.group == group)
            .map(|series| Self {
                series: Arc::clone(series),
            })
    }

    /// The subject of these labels, sharing the series of every earlier subject of them.
    fn named(group: Cow<'static, str>, tool: Cow<'static, str>) -> Self {
        if let Some(known) = Self::known(&group, &tool) {
            return known;
        }
        let series = Arc::new(Series {
            group,
            tool: tool.clone(),
            pace: coremcp_engine::pace::Pace::default(),
            calls: Default::default(),
            latency: OnceLock::new(),
            upstream_latency: OnceLock::new(),
        });
        // A tool that changed groups (a reload) replaces its entry: the set stays bounded by
        // the tools served.
        Self::subjects()
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(tool, Arc::clone(&series));
        Self { series }
    }

    fn group(&self) -> &str {
        &self.series.group
    }

    /// How quick the subject's tool has been lately.
    pub fn pace(&self) -> &coremcp_engine::pace::Pace {
        &self.series.pace
    }

    fn upstream_server(&self) -> Option<&str> {
        let tool = &self.series.tool;
        (self.group() == "upstream").then(|| tool.strip_prefix("mcp__").unwrap_or(tool))
    }
}

struct Metrics {
    registry: Registry,
    calls: Family<[Label; 3], Counter>,
    latency: Family<[Label; 1], Histogram, fn() -> Histogram>,
    upstream_latency: Family<[Label; 1], Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    load_seconds: Family<[Label; 1], Gauge<f64, std::sync::atomic::AtomicU64>>,
    oversized: Family<[Label; 2], Counter>,
}

fn latency_histogram() -> Histogram {
    // 100 µs to about 100 s.
    Histogram::new(exponential_buckets(0.0001, 4.0, 11))
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let mut registry = Registry::default();
        let calls = Family::<[Label; 3], Counter>::default();
        registry.register(
            "coremcp_calls",
            "Tool calls by group, tool and outcome (ok, tool_error, refused, timeout, cancelled)",
            calls.clone(),
        );
        let latency = Family::<[Label; 1], Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        registry.register(
            "coremcp_call_duration_seconds",
            "Tool call latency by group, from the request to the answer",
            latency.clone(),
        );
        let upstream_latency =
            Family::<[Label; 1], Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        registry.register(
            "coremcp_upstream_call_duration_seconds",
            "Upstream MCP server call latency by server",
            upstream_latency.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "coremcp_calls_in_flight",
            "Tool calls started and not answered yet",
            in_flight.clone(),
        );
        let load_seconds = Family::default();
        registry.register(
            "coremcp_plugin_load_seconds",
            "How long the last load of each group's plugin library took",
            load_seconds.clone(),
        );
        let oversized = Family::<[Label; 2], Counter>::default();
        registry.register(
            "coremcp_oversized_results",
            "Built-in tool answers larger than the result limit, withheld by the host (a defect: \
             every tool fits its own answers)",
            oversized.clone(),
        );
        Metrics {
            registry,
            calls,
            oversized,
            latency,
            upstream_latency,
            in_flight,
            load_seconds,
        }
    })
}

/// A call was registered (it is in flight until [`finished`]).
pub fn started() {
    metrics().in_flight.inc();
}

/// The recent failures a person sees on the status page (newest last, at most
/// [`RECENT_ERRORS`]). Only a failing call takes this lock.
fn recent() -> &'static Mutex<VecDeque<Value>> {
    static RECENT: OnceLock<Mutex<VecDeque<Value>>> = OnceLock::new();
    RECENT.get_or_init(Mutex::default)
}

/// How many recent failures are kept.
pub const RECENT_ERRORS: usize = 20;

/// Remembers a failed call of `principal` (as grants name it): `answer` is its JSON-RPC
/// response.
pub fn failed(subject: &Subject, tool: &str, answer: &str, principal: &str) {
    let parsed: Value = serde_json::from_str(answer).unwrap_or(Value::Null);
    let message = parsed["result"]["content"][0]["text"]
        .as_str()
        .or_else(|| parsed["error"]["message"].as_str())
        .unwrap_or("");
    let message: String = message.chars().take(300).collect();
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut recent = recent().lock().unwrap_or_else(PoisonError::into_inner);
    if recent.len() == RECENT_ERRORS {
        recent.pop_front();
    }
    recent.push_back(serde_json::json!({
        "at_unix_ms": at, "group": subject.group(), "tool": tool, "message": message,
        "principal": principal,
    }));
}

/// The recent failures `viewer` may see, oldest first: all of them (`None`: this machine's
/// own user, or an operator), or only the principal's own — an error's message can quote the
/// call's arguments, which are never shown to another principal.
pub fn recent_errors(viewer: Option<&str>) -> Vec<Value> {
    let recent = recent().lock().unwrap_or_else(PoisonError::into_inner);
    recent
        .iter()
        .filter(|e| viewer.is_none_or(|who| e["principal"] == who))
        .cloned()
        .collect()
}

/// A call registered with [`started`] ended after `took`.
pub fn finished(subject: &Subject, outcome: Outcome, took: Duration) {
    let m = metrics();
    m.in_flight.dec();
    count(subject, outcome);
    // A completed call's pace is its plugin's run time, recorded where it ran.
    if matches!(outcome, Outcome::Timeout | Outcome::Cancelled) {
        subject.series.pace.record(took, false);
    }
    if outcome != Outcome::Cancelled {
        let seconds = took.as_secs_f64();
        let series = &subject.series;
        series
            .latency
            .get_or_init(|| {
                m.latency
                    .get_or_create(&[("group", series.group.clone())])
                    .clone()
            })
            .observe(seconds);
        if let Some(server) = subject.upstream_server() {
            series
                .upstream_latency
                .get_or_init(|| {
                    m.upstream_latency
                        .get_or_create(&[("server", Cow::Owned(server.to_owned()))])
                        .clone()
                })
                .observe(seconds);
        }
    }
}

/// A call answered without running (refused by policy, an unknown tool, a group not enabled).
pub fn refused(subject: &Subject) {
    count(subject, Outcome::Refused);
}

fn count(subject: &Subject, outcome: Outcome) {
    let series = &subject.series;
    series.calls[outcome as usize]
        .get_or_init(|| {
            metrics()
                .calls
                .get_or_create(&[
                    ("group", series.group.clone()),
                    ("tool", series.tool.clone()),
                    ("outcome", Cow::Borrowed(outcome.as_str())),
                ])
                .clone()
        })
        .inc();
}

/// A built-in tool's answer was larger than the result limit and withheld (a defect).
pub fn oversized(subject: &Subject) {
    let series = &subject.series;
    metrics()
        .oversized
        .get_or_create(&[
            ("group", series.group.clone()),
            ("tool", series.tool.clone()),
        ])
        .inc();
}

/// A group's plugin library loaded in `took`.
pub fn plugin_loaded(group: &str, took: Duration) {
    metrics()
        .load_seconds
        .get_or_create(&[("group", Cow::Owned(group.to_owned()))])
        .set(took.as_secs_f64());
}

/// The exposition: the counted families, then those read from `status` (the `/api/status`
/// document).
pub fn render(status: &Value) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_text::encode(&mut out, &metrics().registry);
    let _ = prometheus_text::encode(&mut out, &from_status(status));
    out
}

/// The families read at scrape time. Counters of the status document (relay attempts,
/// restarts) are totals since start, so they are exposed as counters set to that total.
fn from_status(status: &Value) -> Registry {
    let mut registry = Registry::default();
    let sessions: Gauge = Gauge::default();
    sessions.set(status["sessions"].as_i64().unwrap_or(0));
    registry.register("coremcp_sessions_open", "MCP sessions open", sessions);

    let text = |v: &Value| Cow::Owned(v.as_str().unwrap_or("").to_owned());
    let relay_down = Family::<[Label; 1], Gauge>::default();
    let relay_attempts = Family::<[Label; 1], Counter>::default();
    let relay_failures = Family::<[Label; 1], Counter>::default();
    let relay_failovers = Family::<[Label; 1], Counter>::default();
    let relay_unanswered = Family::<[Label; 1], Counter>::default();
    for relay in status["relays"].as_array().into_iter().flatten() {
        let label = [("relay", text(&relay["url"]))];
        let down = relay["state"] == "down";
        relay_down.get_or_create(&label).set(i64::from(down));
        let total = |key: &str| relay[key].as_u64().unwrap_or(0);
        relay_attempts
            .get_or_create(&label)
            .inc_by(total("attempts"));
        relay_failures
            .get_or_create(&label)
            .inc_by(total("connect_failures"));
        relay_failovers
            .get_or_create(&label)
            .inc_by(total("failovers"));
        relay_unanswered
            .get_or_create(&label)
            .inc_by(total("unanswered"));
    }
    registry.register(
        "coremcp_relay_down",
        "1 while a relay is marked down after a connect failure or an unanswered call",
        relay_down,
    );
    registry.register(
        "coremcp_relay_attempts",
        "Calls sent to each relay",
        relay_attempts,
    );
    registry.register(
        "coremcp_relay_connect_failures",
        "Connect failures of each relay",
        relay_failures,
    );
    registry.register(
        "coremcp_relay_failovers",
        "Calls passed on from each relay to the next after a connect failure",
        relay_failovers,
    );
    registry.register(
        "coremcp_relay_unanswered",
        "Calls each relay took and left unanswered until their deadline",
        relay_unanswered,
    );

    let upstream_state = Family::<[Label; 2], Gauge>::default();
    let upstream_restarts = Family::<[Label; 1], Counter>::default();
    let upstream_tools = Family::<[Label; 1], Gauge>::default();
    for server in status["upstream"].as_array().into_iter().flatten() {
        let id = text(&server["id"]);
        upstream_state
            .get_or_create(&[("server", id.clone()), ("state", text(&server["state"]))])
            .set(1);
        upstream_restarts
            .get_or_create(&[("server", id.clone())])
            .inc_by(server["restarts"].as_u64().unwrap_or(0));
        upstream_tools
            .get_or_create(&[("server", id)])
            .set(server["tools"].as_i64().unwrap_or(0));
    }
    registry.register(
        "coremcp_upstream_state",
        "Each upstream MCP server's state (1 for the state it is in)",
        upstream_state,
    );
    registry.register(
        "coremcp_upstream_restarts",
        "Restarts of each upstream MCP server",
        upstream_restarts,
    );
    registry.register(
        "coremcp_upstream_tools",
        "Tools each upstream MCP server offers",
        upstream_tools,
    );
    registry
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_stay_bounded() {
        let s = Subject::of("git_status", Some("git"));
        assert_eq!((s.group(), s.series.tool.as_ref()), ("git", "git_status"));
        assert!(
            matches!(s.series.tool, Cow::Borrowed(_)),
            "catalog names are not copied"
        );
        let s = Subject::of("mcp__time__get_current_time", None);
        assert_eq!(
            (s.group(), s.series.tool.as_ref()),
            ("upstream", "mcp__time")
        );
        assert_eq!(s.upstream_server(), Some("time"));
        let s = Subject::of("made_up", None);
        assert_eq!((s.group(), s.series.tool.as_ref()), ("unknown", "unknown"));
        let s = Subject::of("fixture_echo", Some("fixture"));
        assert_eq!(
            (s.group(), s.series.tool.as_ref()),
            ("fixture", "fixture_echo")
        );
    }

    #[test]
    fn outcomes_follow_the_result() {
        let answer = |result: &str| coremcp_wire::rpc::response("1", result);
        let failed = coremcp_wire::render::call_error_text("no");
        assert_eq!(Outcome::of_answer(&answer(&failed)), Outcome::ToolError);
        let fine = coremcp_wire::render::call_success("{\"a\":1}");
        assert_eq!(Outcome::of_answer(&answer(&fine)), Outcome::Ok);
        let refused = coremcp_wire::rpc::error(Some("1"), coremcp_wire::rpc::INVALID_PARAMS, "bad");
        assert_eq!(Outcome::of_answer(&refused), Outcome::ToolError);
    }

    #[test]
    fn the_exposition_holds_counted_and_status_families() {
        let subject = Subject::of("notepad_get", None);
        started();
        finished(&subject, Outcome::Ok, Duration::from_millis(3));
        refused(&Subject::unknown());
        let status = json!({
            "sessions": 2,
            "relays": [{"url": "http://a:1/mcp", "state": "down", "attempts": 5,
                        "connect_failures": 2, "failovers": 1, "unanswered": 4}],
            "upstream": [{"id": "time", "state": "running", "restarts": 3, "tools": 2}],
        });
        let text = render(&status);
        for line in [
            "coremcp_calls_total{group=\"notepad\",tool=\"notepad_get\",outcome=\"ok\"}",
            "coremcp_calls_total{group=\"unknown\",tool=\"unknown\",outcome=\"refused\"}",
            "coremcp_call_duration_seconds_bucket{group=\"notepad\",le=",
            "coremcp_sessions_open 2",
            "coremcp_relay_down{relay=\"http://a:1/mcp\"} 1",
            "coremcp_relay_failovers_total{relay=\"http://a:1/mcp\"} 1",
            "coremcp_relay_unanswered_total{relay=\"http://a:1/mcp\"} 4",
            "coremcp_upstream_state{server=\"time\",state=\"running\"} 1",
            "coremcp_upstream_restarts_total{server=\"time\"} 3",
        ] {
            assert!(text.contains(line), "{line} missing in:\n{text}");
        }
    }

    #[test]
    fn each_principal_sees_only_its_own_recent_errors() {
        let subject = Subject::of("fixture_echo", Some("fixture"));
        let answer = |text: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{text}"}}],"isError":true}}}}"#
            )
        };
        failed(
            &subject,
            "fixture_echo",
            &answer("alice-only-words"),
            "alice",
        );
        failed(&subject, "fixture_echo", &answer("bob-only-words"), "bob");
        let seen =
            |viewer: Option<&str>| serde_json::to_string(&recent_errors(viewer)).expect("json");
        let alice = seen(Some("alice"));
        assert!(alice.contains("alice-only-words") && !alice.contains("bob-only-words"));
        let bob = seen(Some("bob"));
        assert!(bob.contains("bob-only-words") && !bob.contains("alice-only-words"));
        let all = seen(None);
        assert!(all.contains("alice-only-words") && all.contains("bob-only-words"));
    }
}
