//! Which protocol era a session speaks, and the outbox that shapes what it sends for it.
//!
//! A session is undecided until its first request: stdio decides the era of the whole process
//! there (a request other than `initialize` that carries the 2026 protocol-version key makes it
//! modern), as the official SDK does; an HTTP session is legacy (created by `initialize`) or
//! modern (the one sessionless session of a principal) from the start.
//!
//! Invariants of [`EraOutbox`] once modern: every successful answer carries `resultType`; an
//! untagged `notifications/tools/list_changed` (the legacy announcement every code path makes)
//! never goes out as such, but once per open `subscriptions/listen` that asked for it, tagged
//! with that subscription's id; nothing of the 2026 shape is ever added while legacy.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::outbox::Outbox;
use coremcp_wire::modern::{self, Filter};
use coremcp_wire::rpc;

/// A session's era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Undecided,
    /// 2024-11-05 … 2025-11-25: `initialize`, a session, server-to-client requests.
    Legacy,
    /// 2026-07-28: `_meta` on every request, no handshake.
    Modern,
}

const LIST_CHANGED: &str = "notifications/tools/list_changed";
const PROMPTS_CHANGED: &str = "notifications/prompts/list_changed";
const RESOURCES_CHANGED: &str = "notifications/resources/list_changed";

/// A legacy announcement: its text, its method, and whether a subscription's filter wants it.
type Announcement = (String, &'static str, fn(&Filter) -> bool);

/// The outbox of a session: the transport's, shaped for the era.
pub struct EraOutbox {
    inner: Arc<dyn Outbox>,
    era: AtomicU8,
    /// Open `subscriptions/listen` requests: their ids (JSON text) and filters.
    listens: Mutex<Vec<(String, Filter)>>,
    /// The untagged announcements, as the legacy paths write them.
    announcements: [Announcement; 3],
}

impl EraOutbox {
    pub fn new(inner: Arc<dyn Outbox>, era: Era) -> Self {
        Self {
            inner,
            era: AtomicU8::new(era as u8),
            listens: Mutex::new(Vec::new()),
            announcements: [
                (
                    rpc::notification_without_params(LIST_CHANGED),
                    LIST_CHANGED,
                    |f| f.tools,
                ),
                (
                    rpc::notification_without_params(PROMPTS_CHANGED),
                    PROMPTS_CHANGED,
                    |f| f.prompts,
                ),
                (
                    rpc::notification_without_params(RESOURCES_CHANGED),
                    RESOURCES_CHANGED,
                    |f| f.resources,
                ),
            ],
        }
    }

    pub fn era(&self) -> Era {
        match self.era.load(Ordering::Acquire) {
            1 => Era::Legacy,
            2 => Era::Modern,
            _ => Era::Undecided,
        }
    }

    /// Settles an undecided era on `era`; the era it has from then on.
    pub fn decide(&self, era: Era) -> Era {
        match self.era.compare_exchange(
            Era::Undecided as u8,
            era as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => era,
            Err(_) => self.era(),
        }
    }

    /// Opens subscription `id`: acknowledged first (granting the task ids `tasks`), then its
    /// notifications.
    pub fn listen(&self, id: &str, filter: Filter, tasks: &[String]) {
        let mut listens = self.lock();
        listens.retain(|(open, _)| open != id);
        // The acknowledgment is sent under the lock, so no notification of this subscription
        // can overtake it.
        self.inner.send(modern::acknowledged(id, filter, tasks));
        listens.push((id.to_owned(), filter));
    }

    /// Sends `message`, a notification of subscription `id`, if that subscription is still
    /// open; false once it is not.
    pub fn notify(&self, id: &str, message: String) -> bool {
        let listens = self.lock();
        if !listens.iter().any(|(open, _)| open == id) {
            return false;
        }
        self.inner.send(message);
        true
    }

    /// Closes subscription `id` (the client cancelled it); true if it was open.
    pub fn unlisten(&self, id: &str) -> bool {
        let mut listens = self.lock();
        let before = listens.len();
        listens.retain(|(open, _)| open != id);
        listens.len() != before
    }

    /// Ends every subscription gracefully (the server is shutting down).
    pub fn end_listens(&self) {
        let ended: Vec<(String, Filter)> = std::mem::take(&mut *self.lock());
        for (id, _) in ended {
            self.inner.send(modern::listen_ended(&id));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Filter)>> {
        self.listens.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Outbox for EraOutbox {
    fn send(&self, message: String) {
        if self.era() != Era::Modern {
            return self.inner.send(message);
        }
        if let Some((_, method, wants)) = self.announcements.iter().find(|(m, ..)| *m == message) {
            let listens = self.lock();
            for (id, _) in listens.iter().filter(|(_, f)| wants(f)) {
                self.inner.send(modern::tagged_notification(method, id));
            }
            return;
        }
        self.inner.send(modern::completed(message));
    }

    fn send_for(&self, request: &str, message: String) {
        self.inner.send_for(request, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Sink(Mutex<Vec<String>>);
    impl Outbox for Sink {
        fn send(&self, message: String) {
            self.0.lock().expect("lock").push(message);
        }
    }

    #[test]
    fn legacy_passes_through_and_modern_tags_announcements_per_subscription() {
        let sink = Arc::new(Sink::default());
        let out = EraOutbox::new(Arc::clone(&sink) as Arc<dyn Outbox>, Era::Undecided);
        out.send(rpc::response("1", "{}"));
        out.send(rpc::notification_without_params(LIST_CHANGED));
        assert_eq!(out.decide(Era::Legacy), Era::Legacy);
        assert_eq!(out.decide(Era::Modern), Era::Legacy, "decided once");
        let sent = std::mem::take(&mut *sink.0.lock().expect("lock"));
        assert_eq!(sent[0], rpc::response("1", "{}"));
        assert!(sent[1].contains(LIST_CHANGED));

        let sink = Arc::new(Sink::default());
        let out = EraOutbox::new(Arc::clone(&sink) as Arc<dyn Outbox>, Era::Modern);
        out.listen(
            "7",
            Filter {
                tools: true,
                ..Filter::default()
            },
            &[],
        );
        out.listen("8", Filter::default(), &[]);
        out.send(rpc::notification_without_params(LIST_CHANGED));
        out.send(rpc::response("2", "{}"));
        assert!(out.unlisten("7"));
        assert!(!out.unlisten("7"));
        out.send(rpc::notification_without_params(LIST_CHANGED));
        out.end_listens();
        let sent = std::mem::take(&mut *sink.0.lock().expect("lock"));
        assert_eq!(sent.len(), 5, "{sent:?}");
        assert!(sent[0].contains("acknowledged") && sent[0].contains(":7}"));
        assert!(sent[1].contains("acknowledged") && sent[1].contains(":8}"));
        assert_eq!(sent[2], modern::tagged_notification(LIST_CHANGED, "7"));
        assert!(sent[3].contains("\"resultType\":\"complete\""));
        assert_eq!(sent[4], modern::listen_ended("8"));
    }
}
