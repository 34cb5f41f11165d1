//! Server-sent event streams: the response body of a POST answered as `text/event-stream`, and
//! of the GET stream.
//!
//! Every JSON-RPC message is one `event: message` whose `data:` lines hold the message (a line
//! break inside it — JSON whitespace — starts a new `data:` line, which the client joins back).
//! A comment line (`: keep-alive`) goes out every [`KEEP_ALIVE`] while nothing else does, so
//! idle proxies keep the stream open and a client that went away is noticed.
//!
//! Invariants:
//! - A POST stream carries the request's notifications, then its answer, then ends; a
//!   notification that arrived before the answer is never sent after it.
//! - A GET stream never carries an answer; it ends when its session ends (its sender is
//!   dropped).
//! - Memory is bounded by the channels' capacity: senders use `try_send` and drop what does not
//!   fit (see `outbox.rs`).
//! - A POST stream is resumable (Streamable HTTP, "Resumability"): it opens with a priming
//!   event (an id, empty data), every event carries an id `STREAM-N`, and a stream the client
//!   drops before its answer is parked in the session ([`Parked`]) with its last
//!   [`REPLAY_KEPT`] events, so a `GET` with `Last-Event-ID` replays what came after that id
//!   and carries the rest, answer included.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Interval, MissedTickBehavior};

use super::outbox::{Parked, Router};

/// How often an idle stream sends a keep-alive comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The keep-alive comment.
const COMMENT: &[u8] = b": keep-alive\n\n";
/// Events a resumable stream keeps for replay.
pub const REPLAY_KEPT: usize = 64;
/// How long a client waits before resuming, as the priming event tells it.
const RETRY_MS: u64 = 1000;

/// One JSON-RPC message as an SSE event.
pub fn event(message: &str) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 32);
    out.extend_from_slice(b"event: message\n");
    let mut rest = message;
    loop {
        let (line, next) = match rest.find(['\r', '\n']) {
            Some(at) => {
                let skip = if rest[at..].starts_with("\r\n") { 2 } else { 1 };
                (&rest[..at], Some(&rest[at + skip..]))
            }
            None => (rest, None),
        };
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
        match next {
            Some(next) => rest = next,
            None => break,
        }
    }
    out.push(b'\n');
    Bytes::from(out)
}

/// The body of an event stream.
pub struct SseBody {
    notes: mpsc::Receiver<String>,
    /// The answer that ends a POST stream; `None` for the GET stream (or once taken).
    answer: Option<oneshot::Receiver<String>>,
    /// The answer, received while notifications were still queued.
    last: Option<String>,
    keep_alive: Interval,
    done: bool,
    /// Set for a resumable POST stream.
    resume: Option<Resume>,
    /// Run when the stream is dropped before its end (the client closed it): a 2026 request
    /// is cancelled that way.
    on_drop: Option<Box<dyn FnOnce() + Send>>,
}

/// What makes a POST stream resumable: its id, the events it sent (for replay), the events
/// still to replay to a client that resumed, and where it parks if the client goes away.
struct Resume {
    stream: String,
    next: u64,
    sent: std::collections::VecDeque<(u64, Bytes)>,
    replay: std::collections::VecDeque<Bytes>,
    park: std::sync::Arc<Router>,
}

/// `STREAM-N` split, for a `Last-Event-ID` of ours.
pub fn parse_event_id(id: &str) -> Option<(&str, u64)> {
    let (stream, n) = id.trim().rsplit_once('-')?;
    Some((stream, n.parse().ok()?))
}

impl SseBody {
    /// A POST stream: `notes` until `answer`, then the answer, then the end.
    pub fn request(notes: mpsc::Receiver<String>, answer: oneshot::Receiver<String>) -> Self {
        Self::new(notes, Some(answer), KEEP_ALIVE)
    }

    /// A GET stream: `notes` until their sender is dropped.
    pub fn listen(notes: mpsc::Receiver<String>) -> Self {
        Self::new(notes, None, KEEP_ALIVE)
    }

    /// A resumable POST stream named `stream`, parked in `router` if its client goes away.
    pub fn resumable(
        notes: mpsc::Receiver<String>,
        answer: oneshot::Receiver<String>,
        stream: String,
        router: std::sync::Arc<Router>,
    ) -> Self {
        let mut body = Self::new(notes, Some(answer), KEEP_ALIVE);
        let priming = format!("id: {stream}-0\nretry: {RETRY_MS}\ndata: \n\n");
        body.resume = Some(Resume {
            stream,
            next: 1,
            sent: std::collections::VecDeque::new(),
            replay: std::iter::once(Bytes::from(priming)).collect(),
            park: router,
        });
        body
    }

    /// A parked stream, resumed after event `after` of it: what it sent after that first.
    pub fn resumed(
        parked: Parked,
        stream: String,
        after: u64,
        router: std::sync::Arc<Router>,
    ) -> Self {
        let mut body = Self::new(parked.notes, parked.answer, KEEP_ALIVE);
        body.last = parked.last;
        let replay = parked
            .sent
            .iter()
            .filter(|(n, _)| *n > after)
            .map(|(_, bytes)| bytes.clone())
            .collect();
        body.resume = Some(Resume {
            stream,
            next: parked.next,
            sent: parked.sent,
            replay,
            park: router,
        });
        body
    }

    fn new(
        notes: mpsc::Receiver<String>,
        answer: Option<oneshot::Receiver<String>>,
        every: Duration,
    ) -> Self {
        let mut keep_alive = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        keep_alive.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self {
            notes,
            answer,
            last: None,
            keep_alive,
            done: false,
            resume: None,
            on_drop: None,
        }
    }

    /// Runs `f` if the stream is dropped before it ended.
    pub fn on_early_drop(mut self, f: impl FnOnce() + Send + 'static) -> Self {
        self.on_drop = Some(Box::new(f));
        self
    }

    /// One message as this stream sends it: with its id on a resumable stream (kept for
    /// replay).
    fn message(&mut self, message: &str) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let Some(resume) = self.resume.as_mut() else {
            return Self::frame(event(message));
        };
        let n = resume.next;
        resume.next += 1;
        let mut bytes = format!("id: {}-{n}\n", resume.stream).into_bytes();
        bytes.extend_from_slice(&event(message));
        let bytes = Bytes::from(bytes);
        if resume.sent.len() == REPLAY_KEPT {
            resume.sent.pop_front();
        }
        resume.sent.push_back((n, bytes.clone()));
        Self::frame(bytes)
    }

    fn frame(bytes: Bytes) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(Some(Ok(Frame::data(bytes))))
    }
}

impl Drop for SseBody {
    /// A resumable stream dropped before its answer parks, for a `GET` that resumes it.
    fn drop(&mut self) {
        if let Some(f) = self.on_drop.take().filter(|_| !self.done) {
            f();
        }
        let Some(resume) = self.resume.take() else {
            return;
        };
        if self.done || (self.answer.is_none() && self.last.is_none()) {
            resume.park.finished(&resume.stream);
            return;
        }
        let notes = std::mem::replace(&mut self.notes, mpsc::channel(1).1);
        let parked = Parked {
            notes,
            answer: self.answer.take(),
            last: self.last.take(),
            next: resume.next,
            sent: resume.sent,
        };
        resume.park.park(resume.stream, parked);
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(bytes) = this.resume.as_mut().and_then(|r| r.replay.pop_front()) {
            return Self::frame(bytes);
        }
        if let Some(last) = this.last.take() {
            // The answer is in; flush what was queued before it, then the answer itself.
            if let Ok(note) = this.notes.try_recv() {
                this.last = Some(last);
                return this.message(&note);
            }
            this.done = true;
            return this.message(&last);
        }
        match this.notes.poll_recv(cx) {
            Poll::Ready(Some(note)) => {
                this.keep_alive.reset();
                return this.message(&note);
            }
            Poll::Ready(None) if this.answer.is_none() => {
                this.done = true;
                return Poll::Ready(None);
            }
            Poll::Ready(None) | Poll::Pending => {}
        }
        if let Some(answer) = this.answer.as_mut() {
            match Pin::new(answer).poll(cx) {
                Poll::Ready(Ok(message)) => {
                    this.answer = None;
                    this.last = Some(message);
                    // Wake at once to flush (there is no waker registered for `last`).
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Ready(Err(_)) => {
                    // No answer will come (the session ended, or the client cancelled the call).
                    this.done = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => {}
            }
        }
        if this.keep_alive.poll_tick(cx).is_ready() {
            return Self::frame(Bytes::from_static(COMMENT));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
    }

    async fn next(body: &mut SseBody) -> Option<String> {
        body.frame().await.map(|frame| {
            let data = frame.expect("infallible").into_data().expect("data frame");
            String::from_utf8(data.to_vec()).expect("utf-8")
        })
    }

    #[test]
    fn events_split_line_breaks_into_data_lines() {
        assert_eq!(event("{}"), "event: message\ndata: {}\n\n");
        assert_eq!(
            event("{\n\"a\":1,\r\n\"b\":2\r}"),
            "event: message\ndata: {\ndata: \"a\":1,\ndata: \"b\":2\ndata: }\n\n"
        );
    }

    #[test]
    fn a_request_stream_sends_notes_then_the_answer_then_ends() {
        runtime().block_on(async {
            let (note_tx, note_rx) = mpsc::channel(8);
            let (answer_tx, answer_rx) = oneshot::channel();
            let mut body = SseBody::request(note_rx, answer_rx);
            note_tx.try_send("n1".to_owned()).expect("room");
            assert_eq!(
                next(&mut body).await.as_deref(),
                Some("event: message\ndata: n1\n\n")
            );
            // A note queued before the answer still goes first.
            note_tx.try_send("n2".to_owned()).expect("room");
            answer_tx.send("answer".to_owned()).expect("body waits");
            assert_eq!(
                next(&mut body).await.as_deref(),
                Some("event: message\ndata: n2\n\n")
            );
            assert_eq!(
                next(&mut body).await.as_deref(),
                Some("event: message\ndata: answer\n\n")
            );
            assert!(body.is_end_stream());
            assert_eq!(next(&mut body).await, None);
        });
    }

    #[test]
    fn a_resumable_stream_parks_when_dropped_and_resumes_after_the_last_event_seen() {
        runtime().block_on(async {
            let router = std::sync::Arc::new(Router::new());
            let (note_tx, note_rx) = mpsc::channel(8);
            let (answer_tx, answer_rx) = oneshot::channel();
            let mut body = SseBody::resumable(
                note_rx,
                answer_rx,
                "s7".into(),
                std::sync::Arc::clone(&router),
            );
            assert_eq!(
                next(&mut body).await.as_deref(),
                Some("id: s7-0\nretry: 1000\ndata: \n\n")
            );
            note_tx.try_send("n1".to_owned()).expect("room");
            note_tx.try_send("n2".to_owned()).expect("room");
            assert_eq!(
                next(&mut body).await.as_deref(),
                Some("id: s7-1\nevent: message\ndata: n1\n\n")
            );
            assert_eq!(
                next(&mut body).await.as_deref(),
                Some("id: s7-2\nevent: message\ndata: n2\n\n")
            );
            // The client goes away having seen only s7-1: the stream parks.
            drop(body);
            let parked = router.resume("s7").expect("parked");
            assert!(router.resume("s7").is_none(), "taken once");
            let (stream, after) = parse_event_id("s7-1").expect("our id");
            let mut resumed =
                SseBody::resumed(parked, stream.into(), after, std::sync::Arc::clone(&router));
            answer_tx
                .send("answer".to_owned())
                .expect("the resumed stream waits");
            assert_eq!(
                next(&mut resumed).await.as_deref(),
                Some("id: s7-2\nevent: message\ndata: n2\n\n"),
                "what came after s7-1 is replayed"
            );
            assert_eq!(
                next(&mut resumed).await.as_deref(),
                Some("id: s7-3\nevent: message\ndata: answer\n\n")
            );
            assert_eq!(next(&mut resumed).await, None);
            drop(resumed);
            assert!(
                router.resume("s7").is_none(),
                "a finished stream does not park"
            );
        });
    }

    #[test]
    fn event_ids_of_other_servers_are_not_ours() {
        assert_eq!(parse_event_id("s3-12"), Some(("s3", 12)));
        assert_eq!(parse_event_id("event-x"), None);
        assert_eq!(parse_event_id("12"), None);
    }

    #[test]
    fn a_request_stream_ends_when_no_answer_can_come() {
        runtime().block_on(async {
            let (_note_tx, note_rx) = mpsc::channel(8);
            let (answer_tx, answer_rx) = oneshot::channel::<String>();
            let mut body = SseBody::request(note_rx, answer_rx);
            drop(answer_tx);
            assert_eq!(next(&mut body).await, None);
        });
    }

    #[test]
    fn an_idle_stream_sends_keep_alive_comments_and_a_listen_stream_ends_with_its_sender() {
        runtime().block_on(async {
            let (note_tx, note_rx) = mpsc::channel(8);
            let mut body = SseBody::new(note_rx, None, Duration::from_millis(20));
            assert_eq!(next(&mut body).await.as_deref(), Some(": keep-alive\n\n"));
            note_tx.try_send("n".to_owned()).expect("room");
            assert_eq!(
                next(&mut body).await.as_deref(),
                Some("event: message\ndata: n\n\n")
            );
            drop(note_tx);
            assert_eq!(next(&mut body).await, None);
        });
    }
}
