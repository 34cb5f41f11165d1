//! Newline-delimited input with a bound on the line length (ARCHITECTURE.md, "Limits": 8 MB), for
//! reading an upstream server's stdout.
//!
//! Invariant: memory held is at most the bound plus one read buffer, whatever the peer sends. A
//! line longer than the bound is discarded as it streams (never buffered whole) and reported as
//! [`Line::TooLong`] with its length once its newline (or the end) arrives — and with the
//! top-level `"id"` of the JSON-RPC message it held, wherever in the line that was
//! ([`IdScan`]), so the request it answered can be failed at once instead of waiting out its
//! deadline.

use coremcp_wire::id_scan::IdScan;
use std::io::{self, BufRead};

/// One unit read from the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its newline (and without a trailing `\r`).
    Text(Vec<u8>),
    /// A line over the bound, discarded; `bytes` is its length, `id` the numeric top-level
    /// `"id"` of the JSON object it held, if it had one.
    TooLong { bytes: u64, id: Option<u64> },
}

/// Reads bounded lines from `reader`.
pub(crate) struct Lines<R> {
    reader: R,
    max: usize,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R, max: usize) -> Self {
        Self { reader, max }
    }

    /// The next line; `None` at the end of the stream. A last line without a newline counts.
    pub(crate) fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut line = Vec::new();
        let mut discarded: Option<u64> = None;
        let mut scan = IdScan::default();
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(match discarded {
                    Some(bytes) => Some(Line::TooLong {
                        bytes,
                        id: scan.id(),
                    }),
                    None if line.is_empty() => None,
                    None => Some(Line::Text(trim_cr(line))),
                });
            }
            let (piece, found) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            match &mut discarded {
                Some(bytes) => {
                    *bytes += piece.len() as u64;
                    scan.feed(piece);
                }
                None if line.len() + piece.len() > self.max => {
                    discarded = Some((line.len() + piece.len()) as u64);
                    scan.feed(&line);
                    scan.feed(piece);
                    line = Vec::new();
                }
                None => line.extend_from_slice(piece),
            }
            let used = found.unwrap_or(buf.len());
            self.reader.consume(used);
            if found.is_some() {
                return Ok(Some(match discarded {
                    Some(bytes) => Line::TooLong {
                        bytes,
                        id: scan.id(),
                    },
                    None => Line::Text(trim_cr(line)),
                }));
            }
        }
    }
}

impl<R: io::Read> Lines<io::BufReader<R>> {
    /// Whether a whole line is waiting in the buffer (the next [`Lines::next_line`] reads
    /// nothing).
    pub(crate) fn line_buffered(&self) -> bool {
        memchr::memchr(b'\n', self.reader.buffer()).is_some()
    }
}

fn trim_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize, buffer: usize) -> Vec<Line> {
        let mut lines = Lines::new(io::BufReader::with_capacity(buffer, input), max);
        std::iter::from_fn(|| lines.next_line().expect("read")).collect()
    }

    #[test]
    fn lines_are_split_and_bounded() {
        let input = b"one\r\n0123456789abcdef\ntwo\n\nlast";
        for buffer in [1, 3, 64] {
            assert_eq!(
                all(input, 8, buffer),
                [
                    Line::Text(b"one".to_vec()),
                    Line::TooLong {
                        bytes: 16,
                        id: None
                    },
                    Line::Text(b"two".to_vec()),
                    Line::Text(Vec::new()),
                    Line::Text(b"last".to_vec()),
                ],
                "buffer {buffer}"
            );
        }
        assert_eq!(
            all(b"0123456789", 4, 2),
            [Line::TooLong {
                bytes: 10,
                id: None
            }]
        );
        assert_eq!(all(b"", 4, 2), []);
    }

    #[test]
    fn a_long_line_reports_the_id_it_answered() {
        let big = format!(r#"{{"result":{{"text":"{}"}},"id":31}}"#, "h".repeat(5000));
        let input = format!("{big}\n{{\"id\":1}}\n");
        for buffer in [7, 64, 8192] {
            assert_eq!(
                all(input.as_bytes(), 100, buffer),
                [
                    Line::TooLong {
                        bytes: big.len() as u64,
                        id: Some(31)
                    },
                    Line::Text(b"{\"id\":1}".to_vec())
                ],
                "buffer {buffer}"
            );
        }
    }

    #[test]
    fn a_huge_line_is_never_held() {
        // 64 MB streamed through a reader whose bound is 1 KB: the line buffer stays empty.
        struct Zeros(usize);
        impl io::Read for Zeros {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.0);
                buf[..n].fill(b'x');
                self.0 -= n;
                Ok(n)
            }
        }
        let reader = io::BufReader::new(io::Read::chain(Zeros(64 << 20), &b"\nok\n"[..]));
        let mut lines = Lines::new(reader, 1024);
        assert_eq!(
            lines.next_line().expect("read"),
            Some(Line::TooLong {
                bytes: 64 << 20,
                id: None
            })
        );
        assert_eq!(
            lines.next_line().expect("read"),
            Some(Line::Text(b"ok".to_vec()))
        );
    }
}
