//! The raw JSON-RPC echo floor that `coremcp-bench` measures the host against.
//!
//! It reads newline-delimited JSON-RPC from stdin and answers every line that
//! carries an `"id"` with a canned reply (the id copied verbatim), picked by a
//! substring match on the method. It never parses JSON: it is the cheapest
//! stdio server possible, so its numbers are the floor for pipe + process
//! overhead on this machine.
#![allow(clippy::print_stdout)]

use std::io::{self, Read, Write};

use memchr::memmem::Finder;

const READ_BUF: usize = 1 << 20;

const INITIALIZE_RESULT: &[u8] = br#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"echo-floor","version":"0"}}"#;
const TOOLS_LIST_RESULT: &[u8] =
    br#"{"tools":[{"name":"fixture_echo","description":"echo","inputSchema":{"type":"object"}}]}"#;
const TOOLS_CALL_RESULT: &[u8] =
    br#"{"content":[{"type":"text","text":"{\"x\":1}"}],"structuredContent":{"x":1}}"#;
const EMPTY_RESULT: &[u8] = b"{}";

/// Precomputed substring searchers, built once.
struct Scanner {
    id: Finder<'static>,
    call: Finder<'static>,
    list: Finder<'static>,
    init: Finder<'static>,
}

impl Scanner {
    fn new() -> Self {
        Self {
            id: Finder::new(b"\"id\":"),
            call: Finder::new(b"\"tools/call\""),
            list: Finder::new(b"\"tools/list\""),
            init: Finder::new(b"\"initialize\""),
        }
    }

    /// The raw bytes of the id value, or `None` for a notification.
    fn id<'a>(&self, line: &'a [u8]) -> Option<&'a [u8]> {
        let start = self.id.find(line)? + b"\"id\":".len();
        let rest = trim_start(&line[start..]);
        let len = if rest.first() == Some(&b'"') {
            // String id: run to the closing quote, honouring backslash escapes.
            let mut i = 1;
            loop {
                match rest.get(i)? {
                    b'\\' => i += 2,
                    b'"' => break i + 1,
                    _ => i += 1,
                }
            }
        } else {
            memchr::memchr2(b',', b'}', rest)?
        };
        let id = trim_end(&rest[..len]);
        (!id.is_empty()).then_some(id)
    }

    fn result_for(&self, line: &[u8]) -> &'static [u8] {
        if self.call.find(line).is_some() {
            TOOLS_CALL_RESULT
        } else if self.list.find(line).is_some() {
            TOOLS_LIST_RESULT
        } else if self.init.find(line).is_some() {
            INITIALIZE_RESULT
        } else {
            EMPTY_RESULT
        }
    }
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &s[n..]
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    &s[..s.len() - n]
}

fn main() {
    if let Err(e) = run() {
        // A closed stdout just means the client went away.
        if e.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("echo-floor: {e}");
            std::process::exit(1);
        }
    }
}

fn run() -> io::Result<()> {
    let scanner = Scanner::new();
    // `Stdin` bypasses its own small buffer for reads at least that large, so
    // this reads the pipe directly.
    let mut input = io::stdin().lock();
    // A full line ending in '\n' goes straight through `Stdout`'s line buffer
    // as one write(2).
    let mut output = io::stdout().lock();
    let mut buf = vec![0u8; READ_BUF];
    let mut filled = 0;
    let mut reply = Vec::with_capacity(512);

    loop {
        if filled == buf.len() {
            // A single line longer than the buffer: grow.
            buf.resize(buf.len() * 2, 0);
        }
        let n = match input.read(&mut buf[filled..]) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let scan_from = filled;
        filled += n;

        let mut line_start = 0;
        let mut search = scan_from;
        while let Some(off) = memchr::memchr(b'\n', &buf[search..filled]) {
            let line_end = search + off;
            let line = &buf[line_start..line_end];
            if let Some(id) = scanner.id(line) {
                reply.clear();
                reply.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
                reply.extend_from_slice(id);
                reply.extend_from_slice(br#","result":"#);
                reply.extend_from_slice(scanner.result_for(line));
                reply.extend_from_slice(b"}\n");
                output.write_all(&reply)?;
                output.flush()?;
            }
            line_start = line_end + 1;
            search = line_start;
        }
        // Keep the partial trailing line for the next read.
        buf.copy_within(line_start..filled, 0);
        filled -= line_start;
    }
}
