//! The recent stderr of an upstream server: a bounded ring of the last bytes written, kept for
//! error reports ("the server exited: <what it said>").
//!
//! Invariant: at most [`Ring::capacity`] bytes are held however much the server writes.

use std::collections::VecDeque;

/// The last `capacity` bytes pushed.
#[derive(Debug, Clone)]
pub(crate) struct Ring {
    bytes: VecDeque<u8>,
    capacity: usize,
    dropped: u64,
}

impl Ring {
    pub fn new(capacity: usize) -> Self {
        Self {
            bytes: VecDeque::with_capacity(capacity),
            capacity,
            dropped: 0,
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        let data = if data.len() > self.capacity {
            self.dropped += (data.len() - self.capacity) as u64;
            &data[data.len() - self.capacity..]
        } else {
            data
        };
        let over = (self.bytes.len() + data.len()).saturating_sub(self.capacity);
        self.bytes.drain(..over);
        self.dropped += over as u64;
        self.bytes.extend(data);
    }

    /// The kept text (lossy UTF-8, trimmed), prefixed with `…` when older output was dropped;
    /// `None` when nothing was written.
    pub fn excerpt(&self) -> Option<String> {
        let (a, b) = self.bytes.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).trim().to_owned();
        if text.is_empty() {
            return None;
        }
        Some(if self.dropped > 0 {
            format!("…{}", text.trim_start_matches('\u{fffd}'))
        } else {
            text
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_last_bytes() {
        let mut ring = Ring::new(8);
        assert_eq!(ring.excerpt(), None);
        ring.push(b"hello ");
        assert_eq!(ring.excerpt().as_deref(), Some("hello"));
        ring.push(b"world!");
        assert_eq!(ring.excerpt().as_deref(), Some("…o world!"));
        ring.push(&[b'z'; 100]);
        assert_eq!(ring.excerpt().as_deref(), Some("…zzzzzzzz"));
        assert_eq!(ring.bytes.len(), 8);
    }
}
