//! The top-level `"id"` of a JSON-RPC message read in pieces, keeping nothing of the message
//! but a few bytes of state: what a reader needs to answer (or fail) the request behind a line
//! too long to hold — a client's request over the stdio limit, a server's answer over the
//! upstream limit.
//!
//! Invariants: only the key `id` of the outermost object counts, wherever it comes (first, as
//! most write it, or last, after megabytes of `params`); strings, escapes and nesting are
//! tracked, so an `"id"` inside a value is never taken; an id is a number (an integer, perhaps
//! negative) or a string of at most [`MAX_ID_BYTES`], kept as the JSON text it was written as;
//! anything else is no id.

/// The longest id kept (its JSON text, quotes included); a longer one is no id.
pub const MAX_ID_BYTES: usize = 256;

/// Scans a message fed in pieces for its top-level id (see the module's documentation).
#[derive(Debug, Default)]
pub struct IdScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key (after `{` or `,`).
    key_next: bool,
    /// The key being read, while it still may be `id` (`None` once it cannot).
    key: Option<Vec<u8>>,
    state: State,
    /// The id's text being read (a number's characters, or a string's, quotes included).
    text: Vec<u8>,
    found: Option<String>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    #[default]
    Looking,
    /// Read the key `id`: a `:` comes next.
    Colon,
    /// After `"id":`: the value comes next.
    Value,
    /// Reading a number.
    Number,
    /// Reading a string (inside its quotes).
    Text,
}

impl IdScan {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.step(b);
        }
    }

    /// The id as it was written (`7`, `"a-1"`), once its value was read whole.
    pub fn raw(&self) -> Option<&str> {
        self.found.as_deref()
    }

    /// The id when it is a number that fits a `u64` (the ids this host gives its own requests).
    pub fn id(&self) -> Option<u64> {
        self.found.as_deref().and_then(|t| t.parse().ok())
    }

    fn step(&mut self, b: u8) {
        if self.in_string {
            self.string_byte(b);
            return;
        }
        if self.state == State::Number {
            if (b.is_ascii_digit() || b == b'-') && self.text.len() < MAX_ID_BYTES {
                self.text.push(b);
                return;
            }
            let number = std::str::from_utf8(&self.text).ok();
            let integer = number.filter(|n| {
                n.trim_start_matches('-')
                    .bytes()
                    .all(|d| d.is_ascii_digit())
            });
            let ends = matches!(b, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n');
            if let (Some(integer), true) = (integer, ends) {
                self.found = valid(integer.to_owned());
            }
            self.state = State::Looking;
        }
        match (self.state, b) {
            (_, b' ' | b'\t' | b'\r' | b'\n') => {}
            (State::Colon, b':') => self.state = State::Value,
            (State::Value, b'0'..=b'9' | b'-') => {
                self.text.clear();
                self.text.push(b);
                self.state = State::Number;
            }
            (State::Value, b'"') => {
                self.text.clear();
                self.text.push(b);
                self.state = State::Text;
                self.in_string = true;
                self.key = None;
                self.key_next = false;
            }
            _ => {
                self.state = State::Looking;
                match b {
                    b'"' => {
                        self.in_string = true;
                        self.key = (self.depth == 1 && self.key_next).then(Vec::new);
                        self.key_next = false;
                    }
                    b'{' | b'[' => {
                        self.depth += 1;
                        self.key_next = b == b'{' && self.depth == 1;
                    }
                    b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                    b',' => self.key_next = self.depth == 1,
                    _ => self.key_next = false,
                }
            }
        }
    }

    /// One byte inside a string: a key that may be `id`, the id's own text, or anything else.
    fn string_byte(&mut self, b: u8) {
        let closes = !self.escaped && b == b'"';
        if self.state == State::Text {
            if self.text.len() < MAX_ID_BYTES {
                self.text.push(b);
            } else {
                // Too long to be an id worth keeping: read on as any string.
                self.state = State::Looking;
            }
        }
        if self.escaped {
            self.escaped = false;
            self.key = None;
        } else if b == b'\\' {
            self.escaped = true;
        } else if closes {
            self.in_string = false;
            if self.state == State::Text {
                self.found = String::from_utf8(std::mem::take(&mut self.text))
                    .ok()
                    .and_then(valid);
                self.state = State::Looking;
            } else if self.key.take().is_some_and(|k| k == b"id") && self.found.is_none() {
                self.state = State::Colon;
            }
        } else if let Some(key) = &mut self.key {
            key.push(b);
            if key.len() > 2 {
                self.key = None;
            }
        }
    }
}

/// `text` when it is an id an answer can carry as it is: a JSON string, or an integer (a
/// malformed escape or a lone `-` is no id, so an answer under it always parses).
fn valid(text: String) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    (value.is_string() || value.is_number()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned(text: &str) -> Option<String> {
        let mut scan = IdScan::default();
        // Fed a byte at a time: pieces may split anything.
        for b in text.as_bytes() {
            scan.feed(std::slice::from_ref(b));
        }
        scan.raw().map(str::to_owned)
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is_as_written() {
        let check = |text: &str, want: Option<&str>| {
            assert_eq!(scanned(text).as_deref(), want, "{text}");
        };
        check(r#"{"jsonrpc":"2.0","id":7,"result":{"x":1}}"#, Some("7"));
        check(
            r#"{"result":{"id":1,"t":"\"id\":2"},"jsonrpc":"2.0","id":42}"#,
            Some("42"),
        );
        check(
            r#"{ "id" : 12345 , "result": [ {"id": 9} ] }"#,
            Some("12345"),
        );
        check(r#"{"result":"a \"id\": 3 \\","id":8}"#, Some("8"));
        check(r#"{"result":{"nested":{"id":5}}}"#, None);
        check(r#"{"idx":4,"id":"s1"}"#, Some(r#""s1""#));
        check(r#"{"id":"a \"q\" b","method":"x"}"#, Some(r#""a \"q\" b""#));
        check(r#"{"id":-3}"#, Some("-3"));
        check(r#"{"xid":4}"#, None);
        check(r#"["id", 3]"#, None);
        check(r#"{"id":1.5}"#, None);
        check(r#"{"id":null}"#, None);
        // What an answer could not carry as written is no id.
        check(r#"{"id":"bad \x escape","method":"x"}"#, None);
        check(r#"{"id":--1,"method":"x"}"#, None);
        check(r#"{"id":-,"method":"x"}"#, None);
        let long = format!(r#"{{"id":"{}","method":"x"}}"#, "i".repeat(300));
        check(&long, None);
    }

    #[test]
    fn a_number_is_an_id_only_when_it_fits() {
        let mut scan = IdScan::default();
        scan.feed(br#"{"id":18446744073709551616}"#);
        assert_eq!(scan.raw(), Some("18446744073709551616"));
        assert_eq!(scan.id(), None, "too large for our own ids");
        let mut scan = IdScan::default();
        scan.feed(br#"{"result":{},"id":31}"#);
        assert_eq!(scan.id(), Some(31));
    }
}
