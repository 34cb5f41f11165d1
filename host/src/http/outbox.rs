//! Where one HTTP session's outgoing messages go: the [`Outbox`] its [`Session`] writes to.
//!
//! - An **answer** goes to the POST waiting for that JSON-RPC id (as JSON or as the last event
//!   of its SSE stream). An answer nobody waits for any more (the client hung up, or cancelled)
//!   is dropped: answers never go to the GET stream.
//! - A **notification** (or a request of the server's own) goes to the POST stream it relates
//!   to, if that POST is answered as SSE: `notifications/progress` to the request that set the
//!   `progressToken`, anything else sent while calls run (`notifications/message`, a server
//!   request) to the most recent SSE request in flight. Otherwise — or when the message relates
//!   to no request, like `notifications/tools/list_changed` — it goes to the session's GET
//!   stream if one is open, else it is dropped.
//!
//! Invariants: each message goes to at most one stream; nothing here blocks (senders use
//! `try_send`, and a full stream drops the message with a warning), so memory stays bounded
//! whatever a slow client does; after [`Router::close`] every message is dropped.
//!
//! [`Session`]: crate::session::Session

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use hyper::body::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use crate::session::Outbox;
use coremcp_wire::rpc;

/// Messages a stream may have queued before more are dropped.
pub const STREAM_CAPACITY: usize = 256;

/// What a POST waits on.
#[derive(Debug)]
pub struct Expected {
    /// Tells this registration from a later one that reuses the id ([`Router::forget_expected`]).
    pub seq: u64,
    pub answer: oneshot::Receiver<String>,
    /// The notifications of an SSE-answered request.
    pub notes: Option<mpsc::Receiver<String>>,
}

/// Why a request cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpectError {
    #[error("request id {0} is already in use by a request in flight")]
    Duplicate(String),
    #[error("the session has ended")]
    Closed,
}

/// Why a GET stream cannot be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("this session already has a GET stream open")]
    Conflict,
    #[error("the session has ended")]
    Closed,
}

struct Waiter {
    answer: oneshot::Sender<String>,
    notes: Option<mpsc::Sender<String>>,
    /// `_meta.progressToken` of the request, as JSON text.
    progress: Option<String>,
    seq: u64,
    /// The client's own id (JSON text) of a sessionless request registered under one of ours:
    /// put back in its answer and in the subscription tag of its notifications.
    original: Option<String>,
}

#[derive(Default)]
struct Table {
    waiting: HashMap<String, Waiter>,
    stream: Option<mpsc::Sender<String>>,
    seq: u64,
    closed: bool,
    /// POST streams whose client went away before their answer, by stream id, with when.
    parked: HashMap<String, (std::time::Instant, Parked)>,
    /// Resumable POST streams still being sent.
    live: std::collections::HashSet<String>,
}

/// How long a dropped POST stream waits to be resumed.
pub const PARKED_FOR: std::time::Duration = std::time::Duration::from_secs(60);
/// Dropped POST streams one session keeps at most (the oldest goes first).
const PARKED_MAX: usize = 32;

/// A POST stream whose client went away before its answer, waiting for a `GET` that resumes
/// it (`Last-Event-ID`). The router keeps it; [`super::sse`] makes and resumes it.
pub struct Parked {
    pub(super) notes: mpsc::Receiver<String>,
    pub(super) answer: Option<oneshot::Receiver<String>>,
    pub(super) last: Option<String>,
    pub(super) next: u64,
    pub(super) sent: std::collections::VecDeque<(u64, Bytes)>,
}

/// The outbox of one HTTP session.
#[derive(Default)]
pub struct Router {
    table: Mutex<Table>,
}

/// Drops the parked streams kept past [`PARKED_FOR`] (their answers, if they come, are then
/// dropped like any other nobody waits for).
fn purge(table: &mut Table) {
    table.parked.retain(|_, (at, _)| at.elapsed() < PARKED_FOR);
}

impl Router {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request about to be handed to the session; `sse` asks for a notification
    /// stream. `id` is the request id as JSON text (echoed byte for byte by the session).
    pub fn expect(
        &self,
        id: &str,
        sse: bool,
        progress: Option<String>,
    ) -> Result<Expected, ExpectError> {
        self.expect_as(id, None, sse, progress)
    }

    /// Like [`Router::expect`] for a request registered under our id `id` in place of the
    /// client's `original`.
    pub fn expect_as(
        &self,
        id: &str,
        original: Option<String>,
        sse: bool,
        progress: Option<String>,
    ) -> Result<Expected, ExpectError> {
        let mut table = self.lock();
        if table.closed {
            return Err(ExpectError::Closed);
        }
        if table.waiting.get(id).is_some_and(|w| !w.answer.is_closed()) {
            return Err(ExpectError::Duplicate(id.to_owned()));
        }
        let (answer_tx, answer) = oneshot::channel();
        let (notes_tx, notes) = if sse {
            let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        table.seq += 1;
        let seq = table.seq;
        table.waiting.insert(
            id.to_owned(),
            Waiter {
                answer: answer_tx,
                notes: notes_tx,
                progress,
                seq,
                original,
            },
        );
        Ok(Expected { seq, answer, notes })
    }

    /// Stops waiting for `id` (the client hung up or cancelled it): its POST ends without an
    /// answer, and a late answer is dropped.
    pub fn forget(&self, id: &str) {
        self.lock().waiting.remove(id);
    }

    /// Like [`Router::forget`], only if `id` is still the registration `seq` (the POST that
    /// registered it went away).
    pub fn forget_expected(&self, id: &str, seq: u64) {
        let mut table = self.lock();
        if table.waiting.get(id).is_some_and(|w| w.seq == seq) {
            table.waiting.remove(id);
        }
    }

    /// A new POST stream's id (`s1`, `s2`, … within the session).
    pub fn stream_id(&self) -> String {
        let mut table = self.lock();
        table.seq += 1;
        let id = format!("s{}", table.seq);
        table.live.insert(id.clone());
        id
    }

    /// A resumable stream ended (answered, or with nothing left to wait for).
    pub fn finished(&self, stream: &str) {
        self.lock().live.remove(stream);
    }

    /// Whether `stream` is still being sent (its client may not be gone yet).
    pub fn is_live(&self, stream: &str) -> bool {
        self.lock().live.contains(stream)
    }

    /// Keeps a dropped POST stream for [`PARKED_FOR`], for a `GET` that resumes it.
    pub fn park(&self, stream: String, parked: Parked) {
        let mut table = self.lock();
        table.live.remove(&stream);
        if table.closed {
            return;
        }
        purge(&mut table);
        if table.parked.len() >= PARKED_MAX {
            let oldest = table
                .parked
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                table.parked.remove(&oldest);
            }
        }
        table
            .parked
            .insert(stream, (std::time::Instant::now(), parked));
    }

    /// Takes the parked stream `stream`, if it is still kept.
    pub fn resume(&self, stream: &str) -> Option<Parked> {
        let mut table = self.lock();
        purge(&mut table);
        table.parked.remove(stream).map(|(_, parked)| parked)
    }

    /// Opens the GET stream.
    pub fn listen(&self) -> Result<mpsc::Receiver<String>, StreamError> {
        let mut table = self.lock();
        if table.closed {
            return Err(StreamError::Closed);
        }
        if table.stream.as_ref().is_some_and(|s| !s.is_closed()) {
            return Err(StreamError::Conflict);
        }
        let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
        table.stream = Some(tx);
        Ok(rx)
    }

    /// Whether a request is waiting or a GET stream is open.
    pub fn busy(&self) -> bool {
        let mut table = self.lock();
        purge(&mut table);
        let table = table;
        table.waiting.values().any(|w| !w.answer.is_closed())
            || table.stream.as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Ends every stream and wait: POSTs still waiting end without an answer, the GET stream
    /// ends, and every later message is dropped.
    pub fn close(&self) {
        let mut table = self.lock();
        table.closed = true;
        table.waiting.clear();
        table.stream = None;
        table.parked.clear();
        table.live.clear();
    }

    /// Whether the session ended ([`Router::close`]).
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Ends the GET stream only (server shutdown: the stream must not hold the drain up).
    pub fn end_stream(&self) {
        self.lock().stream = None;
    }

    /// Hands the answer `message` to the POST waiting for `id`, in the id it was sent with.
    fn answer(&self, id: &str, message: String) {
        let mut table = self.lock();
        if table.closed {
            return;
        }
        match table.waiting.remove(id) {
            Some(waiter) => {
                let message = match &waiter.original {
                    Some(original) => retag(
                        coremcp_wire::modern::with_id(message, original),
                        id,
                        original,
                    ),
                    None => message,
                };
                if waiter.answer.send(message).is_err() {
                    tracing::debug!(id, "the client went away before its answer");
                }
            }
            None => tracing::debug!(id, "dropping an answer nobody waits for"),
        }
    }

    fn route(&self, message: String) {
        // Most messages are answers built by `rpc`: their id is read where it stands.
        if let Some(id) = rpc::answer_id(&message) {
            let id = id.to_owned();
            return self.answer(&id, message);
        }
        #[derive(Deserialize)]
        struct Peek<'a> {
            #[serde(borrow, default)]
            id: Option<&'a RawValue>,
            #[serde(borrow, default)]
            method: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            params: Option<PeekParams<'a>>,
        }
        #[derive(Deserialize)]
        struct PeekParams<'a> {
            #[serde(borrow, default, rename = "progressToken")]
            progress_token: Option<&'a RawValue>,
            #[serde(borrow, default, rename = "_meta")]
            meta: Option<PeekMeta<'a>>,
        }
        #[derive(Deserialize)]
        struct PeekMeta<'a> {
            #[serde(borrow, default, rename = "io.modelcontextprotocol/subscriptionId")]
            subscription: Option<&'a RawValue>,
        }
        let (id, method, token, subscription) = match serde_json::from_str::<Peek<'_>>(&message) {
            Ok(peek) => {
                let (token, subscription) = peek.params.map_or((None, None), |p| {
                    (
                        p.progress_token.map(|t| t.get().to_owned()),
                        p.meta
                            .and_then(|m| m.subscription)
                            .map(|s| s.get().to_owned()),
                    )
                });
                (
                    peek.id.map(|id| id.get().to_owned()),
                    peek.method.map(|m| m.into_owned()),
                    token,
                    subscription,
                )
            }
            Err(_) => {
                tracing::warn!("dropping an outgoing message that is not JSON-RPC");
                return;
            }
        };
        if let (Some(id), None) = (&id, &method) {
            return self.answer(id, message);
        }
        let table = self.lock();
        if table.closed {
            return;
        }
        let method = method.unwrap_or_default();
        if let Some(subscription) = subscription {
            // A subscription's notification goes to its stream only.
            let Some(waiter) = table.waiting.get(&subscription) else {
                return tracing::debug!(method, "a notification of an ended subscription; dropped");
            };
            let message = match &waiter.original {
                Some(original) => retag(message, &subscription, original),
                None => message,
            };
            if let Some(Err(e)) = waiter.notes.as_ref().map(|n| n.try_send(message)) {
                tracing::warn!(
                    method,
                    "a subscription stream is full or closed; a message was dropped: {e}"
                );
            }
            return;
        }
        let related = match (method.as_str(), token.as_deref()) {
            ("notifications/progress", Some(token)) => table
                .waiting
                .values()
                .find(|w| w.progress.as_deref() == Some(token))
                .and_then(|w| w.notes.as_ref()),
            ("notifications/progress", None) | ("notifications/tools/list_changed", _) => None,
            _ => table
                .waiting
                .values()
                .filter(|w| w.notes.as_ref().is_some_and(|n| !n.is_closed()))
                .max_by_key(|w| w.seq)
                .and_then(|w| w.notes.as_ref()),
        };
        match related.or(table.stream.as_ref()) {
            Some(stream) => {
                if let Err(e) = stream.try_send(message) {
                    tracing::warn!(
                        method,
                        "a client stream is full or closed; a message was dropped: {e}"
                    );
                }
            }
            None => tracing::debug!(method, "no stream to carry a notification; dropped"),
        }
    }
}

/// A message of subscription `ours` with the client's id `original` in its subscription tag.
fn retag(message: String, ours: &str, original: &str) -> String {
    /// Built once: every message a sessionless request gets looks for it.
    static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| {
            memchr::memmem::Finder::new(coremcp_wire::modern::SUBSCRIPTION_KEY.as_bytes())
        });
    let key = coremcp_wire::modern::SUBSCRIPTION_KEY;
    if KEY.find(message.as_bytes()).is_none() {
        return message;
    }
    let tag = format!("\"{key}\":{ours}");
    match message.contains(&tag) {
        true => message.replacen(&tag, &format!("\"{key}\":{original}"), 1),
        false => message,
    }
}

impl Outbox for Router {
    fn send(&self, message: String) {
        self.route(message);
    }

    /// A notification about request `request` goes to that request's stream when it has one;
    /// a sessionless request's goes nowhere else (another client of the principal must not
    /// see it); otherwise it is routed like any other.
    fn send_for(&self, request: &str, message: String) {
        let table = self.lock();
        if let Some(waiter) = table.waiting.get(request) {
            if let Some(notes) = waiter.notes.as_ref().filter(|n| !n.is_closed()) {
                if let Err(e) = notes.try_send(message) {
                    tracing::warn!("a client stream is full or closed; a message was dropped: {e}");
                }
                return;
            }
            if waiter.original.is_some() {
                return;
            }
        }
        drop(table);
        self.route(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(method: &str) -> String {
        format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\",\"params\":{{}}}}")
    }

    #[test]
    fn answers_go_to_their_request_and_only_once() {
        let router = Router::new();
        let mut one = router.expect("1", false, None).expect("registered");
        let mut two = router.expect("\"two\"", false, None).expect("registered");
        router.send("{\"jsonrpc\":\"2.0\",\"id\":\"two\",\"result\":{}}".to_owned());
        router.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".to_owned());
        assert!(one
            .answer
            .try_recv()
            .expect("answered")
            .contains("\"id\":1"));
        assert!(two.answer.try_recv().expect("answered").contains("two"));
        // Nobody waits now: a second answer is dropped, and the id is free again.
        router.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".to_owned());
        assert!(!router.busy());
        assert!(router.expect("1", false, None).is_ok());
    }

    #[test]
    fn a_duplicate_id_in_flight_is_refused() {
        let router = Router::new();
        let _first = router.expect("7", false, None).expect("registered");
        assert_eq!(
            router.expect("7", true, None).expect_err("duplicate"),
            ExpectError::Duplicate("7".into())
        );
    }

    #[test]
    fn notifications_go_to_the_related_sse_request_else_the_get_stream_else_nowhere() {
        let router = Router::new();
        // Nowhere to go: dropped without harm.
        router.send(note("notifications/message"));
        let mut stream = router.listen().expect("open");
        assert_eq!(
            router.listen().expect_err("one at a time"),
            StreamError::Conflict
        );
        let json = router.expect("1", false, None).expect("registered");
        // A JSON request cannot carry notifications: they go to the GET stream.
        router.send(note("notifications/message"));
        assert!(stream
            .try_recv()
            .expect("on the GET stream")
            .contains("message"));
        let mut sse = router
            .expect("2", true, Some("\"tok\"".into()))
            .expect("registered");
        let mut notes = sse.notes.take().expect("an SSE request has notes");
        router.send(note("notifications/message"));
        router.send(
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tok\",\"progress\":1}}"
                .to_owned(),
        );
        router.send(note("notifications/tools/list_changed"));
        assert!(notes
            .try_recv()
            .expect("log")
            .contains("notifications/message"));
        assert!(notes.try_recv().expect("progress").contains("progress"));
        assert!(
            notes.try_recv().is_err(),
            "list_changed is not about a request"
        );
        assert!(stream
            .try_recv()
            .expect("list_changed")
            .contains("list_changed"));
        // Progress for a token no request holds goes to the GET stream.
        router.send(
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":9}}"
                .to_owned(),
        );
        assert!(stream.try_recv().expect("progress").contains("progress"));
        drop(json);
    }

    #[test]
    fn a_closed_get_stream_can_be_reopened_and_close_ends_everything() {
        let router = Router::new();
        drop(router.listen().expect("open"));
        let mut stream = router.listen().expect("the first one went away");
        let mut waiting = router.expect("1", true, None).expect("registered");
        router.close();
        assert!(waiting.answer.try_recv().is_err(), "no answer will come");
        assert!(stream.try_recv().is_err());
        assert_eq!(router.listen().expect_err("ended"), StreamError::Closed);
        assert_eq!(
            router.expect("2", false, None).expect_err("ended"),
            ExpectError::Closed
        );
        router.send(note("notifications/message"));
    }

    #[test]
    fn a_full_stream_drops_instead_of_growing() {
        let router = Router::new();
        let mut stream = router.listen().expect("open");
        for _ in 0..STREAM_CAPACITY + 10 {
            router.send(note("notifications/message"));
        }
        let mut got = 0;
        while stream.try_recv().is_ok() {
            got += 1;
        }
        assert_eq!(got, STREAM_CAPACITY);
    }

    #[test]
    fn forgetting_a_request_ends_its_wait() {
        let router = Router::new();
        let mut waiting = router.expect("5", false, None).expect("registered");
        router.forget("5");
        assert!(matches!(
            waiting.answer.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
    }
}
