//! Newline-delimited input with a bound on the line length (DESIGN §7: 8 MB), for reading an
//! upstream server's stdout.
//!
//! Invariant: memory held is at most the bound plus one read buffer, whatever the peer sends. A
//! line longer than the bound is discarded as it streams (never buffered whole) and reported as
//! [`Line::TooLong`] with its length once its newline (or the end) arrives.

use std::io::{self, BufRead};

/// One unit read from the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its newline (and without a trailing `\r`).
    Text(Vec<u8>),
    /// A line over the bound, discarded; `bytes` is its length.
    TooLong { bytes: u64 },
}

/// Reads bounded lines from `reader`.
pub struct Lines<R> {
    reader: R,
    max: usize,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R, max: usize) -> Self {
        Self { reader, max }
    }

    /// The next line; `None` at the end of the stream. A last line without a newline counts.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut line = Vec::new();
        let mut discarded: Option<u64> = None;
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(match discarded {
                    Some(bytes) => Some(Line::TooLong { bytes }),
                    None if line.is_empty() => None,
                    None => Some(Line::Text(trim_cr(line))),
                });
            }
            let (piece, found) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            match &mut discarded {
                Some(bytes) => *bytes += piece.len() as u64,
                None if line.len() + piece.len() > self.max => {
                    discarded = Some((line.len() + piece.len()) as u64);
                    line = Vec::new();
                }
                None => line.extend_from_slice(piece),
            }
            let used = found.unwrap_or(buf.len());
            self.reader.consume(used);
            if found.is_some() {
                return Ok(Some(match discarded {
                    Some(bytes) => Line::TooLong { bytes },
                    None => Line::Text(trim_cr(line)),
                }));
            }
        }
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
                    Line::TooLong { bytes: 16 },
                    Line::Text(b"two".to_vec()),
                    Line::Text(Vec::new()),
                    Line::Text(b"last".to_vec()),
                ],
                "buffer {buffer}"
            );
        }
        assert_eq!(all(b"0123456789", 4, 2), [Line::TooLong { bytes: 10 }]);
        assert_eq!(all(b"", 4, 2), []);
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
            Some(Line::TooLong { bytes: 64 << 20 })
        );
        assert_eq!(
            lines.next_line().expect("read"),
            Some(Line::Text(b"ok".to_vec()))
        );
    }
}
