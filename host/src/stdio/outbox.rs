//! The writer of protocol messages to the real stdout, which honours a [`Cork`](cork::Cork): a
//! thread that has several answers in hand sends them in one `write`.
//!
//! Senders never wait for one another's `write`: a sender appends its message to the queue and,
//! if no one is writing, becomes the writer and flushes the queue until it is empty — so under
//! load several answers leave in one `write`, and idle, each leaves at once.
//!
//! Invariants:
//! - Every message leaves whole, after every message the same thread sent before it.
//! - A corked thread that sends takes the writer's role without writing; what it and every other
//!   thread send meanwhile waits in the queue until its last cork drops, which writes it all
//!   out. A cork is held only while its thread has more answers already in hand (an upstream
//!   server's reader with whole lines still buffered), never across a wait, so nothing waits
//!   for more than the handling of those answers.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use coremcp_wire::cork::{self, Uncork};

use crate::session::Outbox;

/// Writes protocol messages to the real stdout (see the module's documentation).
pub struct StdoutOutbox {
    me: Weak<StdoutOutbox>,
    file: File,
    queue: Mutex<Queue>,
    broken: AtomicBool,
}

#[derive(Default)]
struct Queue {
    bytes: Vec<u8>,
    writing: bool,
}

impl StdoutOutbox {
    pub fn new(file: File) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            file,
            queue: Mutex::new(Queue::default()),
            broken: AtomicBool::new(false),
        })
    }

    fn write(&self, bytes: &[u8]) {
        if let Err(e) = (&self.file).write_all(bytes) {
            if !self.broken.swap(true, Ordering::Relaxed) {
                tracing::warn!("stdout closed ({e}); answers are dropped from now on");
            }
        }
    }

    /// As the writer: writes the queue out until it is empty, then gives up the role.
    fn write_queue(&self) {
        let mut batch = Vec::new();
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        while !queue.bytes.is_empty() {
            std::mem::swap(&mut batch, &mut queue.bytes);
            drop(queue);
            self.write(&batch);
            batch.clear();
            queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        }
        queue.writing = false;
    }
}

impl Uncork for StdoutOutbox {
    fn uncorked(&self) {
        self.write_queue();
    }
}

impl Outbox for StdoutOutbox {
    fn send(&self, message: String) {
        if self.broken.load(Ordering::Relaxed) {
            return;
        }
        let mut batch = message.into_bytes();
        batch.push(b'\n');
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.writing {
            queue.bytes.extend_from_slice(&batch);
            return;
        }
        queue.writing = true;
        if cork::corked() {
            if let Some(me) = self.me.upgrade() {
                queue.bytes.extend_from_slice(&batch);
                cork::defer(me);
                return;
            }
        }
        // Nobody writes, so nothing waits (the writer leaves only with the queue empty): this
        // message goes out as it is, without a copy, and what others queue meanwhile after it.
        drop(queue);
        self.write(&batch);
        self.write_queue();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coremcp_wire::cork::Cork;
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};

    /// An outbox writing to a pipe, and the pipe's other end, which never blocks.
    fn piped() -> (Arc<StdoutOutbox>, File) {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two new descriptors, owned below and by nothing else.
        let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
        assert_eq!(made, 0);
        // SAFETY: just created, owned here alone.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        (StdoutOutbox::new(File::from(write)), File::from(read))
    }

    /// Each `read` of the pipe: with the outbox's writes being whole, one `read` per `write`.
    fn reads(pipe: &mut File) -> Vec<String> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        got
    }

    #[test]
    fn uncorked_each_message_leaves_at_once() {
        let (out, mut pipe) = piped();
        out.send("a".into());
        assert_eq!(reads(&mut pipe), ["a\n"]);
        out.send("b".into());
        assert_eq!(reads(&mut pipe), ["b\n"]);
    }

    #[test]
    fn a_corked_burst_leaves_in_one_write_in_order_with_what_others_sent_meanwhile() {
        let (out, mut pipe) = piped();
        {
            let _cork = Cork::hold();
            out.send("1".into());
            {
                let _inner = Cork::hold();
                out.send("2".into());
            }
            assert!(reads(&mut pipe).is_empty(), "an inner cork writes nothing");
            let other = Arc::clone(&out);
            std::thread::spawn(move || other.send("from another thread".into()))
                .join()
                .expect("sent");
            out.send("3".into());
            assert!(reads(&mut pipe).is_empty(), "held until the cork drops");
        }
        assert_eq!(reads(&mut pipe), ["1\n2\nfrom another thread\n3\n"]);
        out.send("after".into());
        assert_eq!(
            reads(&mut pipe),
            ["after\n"],
            "the writer's role was given up"
        );
    }

    #[test]
    fn a_cork_on_another_thread_holds_nothing_here() {
        let (out, mut pipe) = piped();
        let (release, corked) = std::sync::mpsc::channel::<()>();
        let (ready, wait) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let _cork = Cork::hold();
            ready.send(()).expect("ready");
            let _ = corked.recv();
        });
        wait.recv().expect("corked");
        out.send("x".into());
        assert_eq!(reads(&mut pipe), ["x\n"]);
        release.send(()).expect("released");
        holder.join().expect("joined");
    }
}
