//! The bounded line reader of stdin: splits a byte stream into lines of at most a limit, and
//! reports (never keeps) a longer one by its size and, read as it streams past, its id.

use std::io::{self, BufRead};

use coremcp_wire::id_scan::IdScan;

/// What the line reader found.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    Line(&'a [u8]),
    /// A line of `bytes` bytes was discarded for exceeding the limit; `id` is its top-level
    /// id as written, when one could be read as it streamed past.
    Oversize {
        bytes: u64,
        id: Option<String>,
    },
}

/// Splits a byte stream into lines of at most `limit` bytes.
pub struct LineReader<R> {
    inner: R,
    limit: usize,
    partial: Vec<u8>,
    /// Bytes of an oversize line discarded so far, and its id as scanned so far.
    discarding: Option<(u64, IdScan)>,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R, limit: usize) -> Self {
        Self {
            inner,
            limit,
            partial: Vec::new(),
            discarding: None,
        }
    }

    /// Reads until the next event or the end of input (`Ok(false)`).
    pub fn next(&mut self, mut on: impl FnMut(Event<'_>)) -> io::Result<bool> {
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                if let Some((bytes, scan)) = self.discarding.take() {
                    on(oversize(bytes, &scan));
                } else if !self.partial.is_empty() {
                    on(Event::Line(&self.partial));
                    self.partial = Vec::new();
                }
                return Ok(false);
            }
            match memchr::memchr(b'\n', chunk) {
                Some(pos) => {
                    if let Some((bytes, mut scan)) = self.discarding.take() {
                        scan.feed(&chunk[..pos]);
                        on(oversize(bytes + pos as u64, &scan));
                    } else if self.partial.is_empty() && pos <= self.limit {
                        on(Event::Line(&chunk[..pos]));
                    } else if self.partial.len() + pos > self.limit {
                        let mut scan = IdScan::default();
                        scan.feed(&self.partial);
                        scan.feed(&chunk[..pos]);
                        on(oversize((self.partial.len() + pos) as u64, &scan));
                        self.partial = Vec::new();
                    } else {
                        self.partial.extend_from_slice(&chunk[..pos]);
                        on(Event::Line(&self.partial));
                        self.partial.clear();
                    }
                    self.inner.consume(pos + 1);
                    return Ok(true);
                }
                None => {
                    let len = chunk.len();
                    if let Some((bytes, scan)) = &mut self.discarding {
                        *bytes += len as u64;
                        scan.feed(chunk);
                    } else if self.partial.len() + len > self.limit {
                        let mut scan = IdScan::default();
                        scan.feed(&self.partial);
                        scan.feed(chunk);
                        self.discarding = Some(((self.partial.len() + len) as u64, scan));
                        // Give the memory back: the line is lost anyway.
                        self.partial = Vec::new();
                    } else {
                        self.partial.extend_from_slice(chunk);
                    }
                    self.inner.consume(len);
                }
            }
        }
    }
}

impl<R> LineReader<io::BufReader<R>> {
    /// Whether bytes read from the input wait in the buffer (so the next line may need no
    /// read).
    pub fn has_buffered(&self) -> bool {
        !self.inner.buffer().is_empty()
    }
}

/// The event of a discarded line of `bytes`, with the id `scan` read from it.
fn oversize(bytes: u64, scan: &IdScan) -> Event<'static> {
    Event::Oversize {
        bytes,
        id: scan.raw().map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` through a reader with `limit` and a tiny buffer (so lines span chunks),
    /// and describes the events.
    fn check(input: &[u8], limit: usize, expected: &[&str]) {
        let mut reader = LineReader::new(io::BufReader::with_capacity(4, input), limit);
        let mut got = Vec::new();
        while reader
            .next(|e| {
                got.push(match e {
                    Event::Line(l) => String::from_utf8_lossy(l).into_owned(),
                    Event::Oversize { bytes, id: None } => format!("<oversize {bytes}>"),
                    Event::Oversize {
                        bytes,
                        id: Some(id),
                    } => format!("<oversize {bytes} id {id}>"),
                })
            })
            .expect("read")
        {}
        assert_eq!(got, expected, "{:?}", String::from_utf8_lossy(input));
    }

    #[test]
    fn framing() {
        check(b"", 100, &[]);
        check(b"a\nbb\n", 100, &["a", "bb"]);
        check(b"a\n\nb", 100, &["a", "", "b"]);
        check(b"0123456789\nok\n", 10, &["0123456789", "ok"]);
        check(b"0123456789X\nok\n", 10, &["<oversize 11>", "ok"]);
        check(b"0123456789XYZ", 10, &["<oversize 13>"]);
        // A whole over-long line in one read of the buffer is over the limit all the same.
        let mut reader = LineReader::new(io::BufReader::with_capacity(64, &b"xxxx\nok\n"[..]), 2);
        let mut got = Vec::new();
        while reader.next(|e| got.push(format!("{e:?}"))).expect("read") {}
        assert_eq!(got, ["Oversize { bytes: 4, id: None }", "Line([111, 107])"]);
        check(
            b"ab\n0123456789abcdefghij\ncd\n",
            10,
            &["ab", "<oversize 20>", "cd"],
        );
        // The id of a discarded line is read as it streams past, wherever it is.
        check(
            br#"{"id":7,"params":"0123456789"}"#,
            10,
            &["<oversize 30 id 7>"],
        );
        check(
            b"{\"params\":\"0123456789\",\"id\":\"r-1\"}\nok\n",
            10,
            &["<oversize 34 id \"r-1\">", "ok"],
        );
    }

    #[test]
    fn oversize_memory_stays_bounded() {
        let big = vec![b'x'; 1_000_000];
        let input = [big.as_slice(), b"\nafter\n"].concat();
        let mut reader =
            LineReader::new(io::BufReader::with_capacity(1024, input.as_slice()), 1000);
        let mut events = Vec::new();
        while reader
            .next(|e| events.push(format!("{e:?}").chars().take(40).collect::<String>()))
            .expect("read")
        {
            assert!(
                reader.partial.capacity() <= 4096,
                "buffer grew past the limit"
            );
        }
        assert_eq!(events.len(), 2);
        assert_eq!(events[0], "Oversize { bytes: 1000000, id: None }");
    }
}
