//! Server-sent events (`text/event-stream`) cut into events: the `event:` name and the `data:`
//! lines (joined with `\n`), and, as the stream goes, the last event id (`id:`) and the
//! reconnection delay (`retry:`) a client resuming the stream needs.
//!
//! Invariants: what is held between calls is the unfinished event only; [`Events::held`] lets
//! a caller on an endless stream refuse an event that grows past its bound; an event whose data
//! is empty (a priming event that only sets an id) is not dispatched, as the SSE standard says.

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field, `message` when absent.
    pub name: String,
    pub data: String,
}

/// An incremental event parser.
#[derive(Debug, Default)]
pub struct Events {
    partial: Vec<u8>,
    name: Option<String>,
    data: Option<String>,
    last_id: Option<String>,
    retry: Option<std::time::Duration>,
}

impl Events {
    /// Feeds bytes; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.partial.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &self.partial[start..]) {
            let raw = &self.partial[start..start + offset];
            start += offset + 1;
            let line = String::from_utf8_lossy(raw.strip_suffix(b"\r").unwrap_or(raw));
            if line.is_empty() {
                let name = self.name.take();
                if let Some(data) = self.data.take().filter(|d| !d.is_empty()) {
                    out.push(Event {
                        name: name.unwrap_or_else(|| "message".to_owned()),
                        data,
                    });
                }
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "data" => match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                },
                "event" => self.name = Some(value.to_owned()),
                // An id holding NUL is ignored (the standard's rule); an empty one resets it.
                "id" if !value.contains('\0') => {
                    self.last_id = (!value.is_empty()).then(|| value.to_owned());
                }
                "retry" => {
                    if let Ok(ms) = value.parse::<u64>() {
                        self.retry = Some(std::time::Duration::from_millis(ms));
                    }
                }
                _ => {}
            }
        }
        self.partial.drain(..start);
        out
    }

    /// The last event id the stream set (what `Last-Event-ID` sends when resuming).
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection delay the stream asked for, if it did.
    pub fn retry(&self) -> Option<std::time::Duration> {
        self.retry
    }

    /// Bytes held for the event not finished yet.
    pub fn held(&self) -> usize {
        self.partial.len() + self.data.as_ref().map_or(0, String::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(events: Vec<Event>) -> Vec<String> {
        events.into_iter().map(|e| e.data).collect()
    }

    #[test]
    fn a_stream_gives_the_name_and_data_of_each_event() {
        let mut events = Events::default();
        assert!(events
            .feed(b": ping\n\nevent: endpoint\r\ndata: /m?s=1\n\ndata: {\"a\"")
            .iter()
            .any(|e| e.name == "endpoint" && e.data == "/m?s=1"));
        assert_eq!(data(events.feed(b":1}\ndata:2\n\n")), ["{\"a\":1}\n2"]);
        assert!(events.feed(b"data: x\n").is_empty());
        assert!(events.held() > 0);
        let last = events.feed(b"\n");
        assert_eq!(last[0].name, "message");
        assert_eq!(last[0].data, "x");
        assert_eq!(events.held(), 0);
    }

    #[test]
    fn ids_and_retry_are_kept_and_priming_events_are_not_dispatched() {
        let mut events = Events::default();
        assert!(events
            .feed(b"id: event-1\nretry: 500\ndata: \n\n")
            .is_empty());
        assert_eq!(events.last_id(), Some("event-1"));
        assert_eq!(events.retry(), Some(std::time::Duration::from_millis(500)));
        let next = events.feed(b"event: message\nid: event-2\ndata: {}\n\n");
        assert_eq!(data(next), ["{}"]);
        assert_eq!(events.last_id(), Some("event-2"));
        events.feed(b"id: a\0b\nretry: soon\n\n");
        assert_eq!(
            events.last_id(),
            Some("event-2"),
            "an id with NUL is ignored"
        );
        assert_eq!(events.retry(), Some(std::time::Duration::from_millis(500)));
        events.feed(b"id:\n\n");
        assert_eq!(events.last_id(), None, "an empty id resets it");
    }
}
