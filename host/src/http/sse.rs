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

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Interval, MissedTickBehavior};

/// How often an idle stream sends a keep-alive comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The keep-alive comment.
const COMMENT: &[u8] = b": keep-alive\n\n";

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
        }
    }

    fn frame(bytes: Bytes) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(Some(Ok(Frame::data(bytes))))
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
        if let Some(last) = this.last.take() {
            // The answer is in; flush what was queued before it, then the answer itself.
            if let Ok(note) = this.notes.try_recv() {
                this.last = Some(last);
                return Self::frame(event(&note));
            }
            this.done = true;
            return Self::frame(event(&last));
        }
        match this.notes.poll_recv(cx) {
            Poll::Ready(Some(note)) => {
                this.keep_alive.reset();
                return Self::frame(event(&note));
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
