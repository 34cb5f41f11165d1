//! What a running task has written so far: one text stream (its processes' stdout and
//! stderr as they came, as a terminal shows them), kept up to its last [`KEPT`] bytes and read
//! by offset.
//!
//! Invariants: offsets count bytes from the task's first byte of output and never move back,
//! so a reader that keeps `next_offset` never sees a byte twice; a read starts and ends on a
//! character boundary (a character cut by the bound or by a chunk is never split into two
//! halves shown apart); what fell out of the bound is counted, never silently skipped.

/// Bytes of output a task keeps: enough for a dev server's banner and its recent requests.
pub const KEPT: usize = 1024 * 1024;

/// A task's output so far.
#[derive(Debug, Default)]
pub struct Output {
    /// The kept bytes: the stream from offset `start`.
    bytes: Vec<u8>,
    /// The offset of `bytes[0]`: bytes before it fell out of the bound.
    start: u64,
}

/// One read of the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub text: String,
    /// Where `text` starts (later than asked when the bytes asked for are gone).
    pub offset: u64,
    /// Where the next read starts.
    pub next_offset: u64,
    /// Bytes written so far.
    pub total: u64,
    /// Bytes between the asked offset and `offset` that are no longer kept.
    pub skipped: u64,
}

impl Output {
    /// Appends a chunk, dropping the oldest bytes past the bound.
    pub fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        // Trim once the buffer is a quarter over, so the copy is amortised.
        if self.bytes.len() > KEPT + KEPT / 4 {
            let cut = self.bytes.len() - KEPT;
            self.bytes.drain(..cut);
            self.start += cut as u64;
        }
    }

    /// Bytes written so far.
    pub fn total(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// At most `max` bytes of text from `offset`.
    pub fn read(&self, offset: u64, max: usize) -> Read {
        let total = self.total();
        let asked = offset.min(total);
        let from = asked.max(self.start);
        let mut at = (from - self.start) as usize;
        // Start on a character: skip the tail of one cut before it.
        while at < self.bytes.len() && is_continuation(self.bytes[at]) {
            at += 1;
        }
        let len = self.bytes.len();
        let mut end = (at + max).min(len);
        // End on one: a character cut by `max` is read next time …
        while end > at && end < len && is_continuation(self.bytes[end]) {
            end -= 1;
        }
        // … as is one still arriving.
        if end == len {
            end -= incomplete_tail(&self.bytes[at..end]);
        }
        let offset = self.start + at as u64;
        Read {
            text: String::from_utf8_lossy(&self.bytes[at..end]).into_owned(),
            offset,
            next_offset: self.start + end as u64,
            total,
            skipped: offset - asked,
        }
    }

    /// The last `lines` lines of the output, at most `max_chars` characters (the end kept).
    pub fn tail(&self, lines: usize, max_chars: usize) -> String {
        let kept = &self.bytes[self.bytes.len().saturating_sub(max_chars * 4)..];
        let text = String::from_utf8_lossy(kept);
        let text = text.trim_end();
        let mut from = text.len();
        for _ in 0..lines {
            match text[..from].rfind('\n') {
                Some(at) => from = at,
                None => {
                    from = 0;
                    break;
                }
            }
        }
        let tail = text[from..].trim_start_matches('\n');
        let count = tail.chars().count();
        match count > max_chars {
            true => {
                let skip = count - max_chars + 1;
                format!("…{}", tail.chars().skip(skip).collect::<String>())
            }
            false => tail.to_owned(),
        }
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// How many bytes at the end of `bytes` begin a character that is not complete in it.
fn incomplete_tail(bytes: &[u8]) -> usize {
    bytes.len() - coremcp_plugin_sdk::task::whole_characters(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_go_on_from_where_the_last_ended_and_never_split_a_character() {
        let mut out = Output::default();
        out.push("listening on é".as_bytes());
        // Half of the "é" has not arrived: the read stops before it.
        out.push(&[0xC3]);
        let first = out.read(0, 100);
        assert_eq!(first.text, "listening on é");
        assert_eq!(first.next_offset, "listening on é".len() as u64);
        out.push(&[0xA9, b'\n']);
        let second = out.read(first.next_offset, 100);
        assert_eq!(second.text, "é\n");
        assert_eq!(second.skipped, 0);
        // A bound that falls inside a character ends the read before it.
        let cut = out.read(0, 14);
        assert_eq!(cut.text, "listening on ");
        assert_eq!(out.read(cut.next_offset, 2).text, "é");
        // Past the end: nothing, where the end is.
        let past = out.read(10_000, 10);
        assert_eq!((past.text.as_str(), past.offset), ("", out.total()));
    }

    #[test]
    fn what_fell_out_of_the_bound_is_counted_and_skipped() {
        let mut out = Output::default();
        let line = "x".repeat(1023) + "\n";
        for _ in 0..2_000 {
            out.push(line.as_bytes());
        }
        assert_eq!(out.total(), 2_000 * 1024);
        let read = out.read(0, 4096);
        assert!(read.skipped > 0 && read.offset == read.skipped, "{read:?}");
        // At least the bound is kept.
        assert!(out.total() - read.offset >= KEPT as u64);
        assert_eq!(read.text.len(), 4096);
        assert_eq!(out.tail(2, 30), format!("…{}", "x".repeat(29)));
    }

    #[test]
    fn the_tail_is_the_last_lines() {
        let mut out = Output::default();
        out.push(b"compiling\nready in 300 ms\n\n  Local: http://localhost:5173/\n");
        assert_eq!(
            out.tail(3, 200),
            "ready in 300 ms\n\n  Local: http://localhost:5173/"
        );
        assert_eq!(out.tail(1, 200), "  Local: http://localhost:5173/");
        assert_eq!(Output::default().tail(3, 10), "");
    }
}
