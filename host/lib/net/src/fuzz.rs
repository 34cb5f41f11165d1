//! Property tests over the event-stream parser: the same events however the stream is cut,
//! and no panic on arbitrary bytes. `PROPTEST_CASES` cases (256 by default).

use proptest::collection::vec;
use proptest::prelude::*;

use crate::events::{Event, Events};
use coremcp_wire::testing::{config, pieces};

proptest! {
    #![proptest_config(config())]

    #[test]
    fn events_are_the_same_however_the_stream_is_cut(
        events in vec(("[a-z]{0,8}", vec("[^\r\n]{0,12}", 1..4)), 0..6),
        crlf in any::<bool>(),
        cuts in vec(any::<usize>(), 0..10),
    ) {
        let newline = if crlf { "\r\n" } else { "\n" };
        let mut text = String::from(": a comment");
        text.push_str(newline);
        text.push_str(newline);
        let mut expected = Vec::new();
        for (name, lines) in &events {
            if !name.is_empty() {
                text.push_str(&format!("event: {name}{newline}"));
            }
            for line in lines {
                text.push_str(&format!("data: {line}{newline}"));
            }
            text.push_str(newline);
            let data = lines.join("\n");
            // An event whose data is empty is not dispatched, as SSE says.
            if !data.is_empty() {
                expected.push(Event {
                    name: if name.is_empty() { "message".to_owned() } else { name.clone() },
                    // `data: ` loses its one space, as SSE says; the line keeps its own.
                    data,
                });
            }
        }
        let mut parser = Events::default();
        let mut got = Vec::new();
        for piece in pieces(text.as_bytes(), &cuts) {
            got.extend(parser.feed(&piece));
        }
        prop_assert_eq!(got, expected);
        prop_assert_eq!(parser.held(), 0);
    }

    #[test]
    fn the_event_parser_never_panics(bytes in vec(any::<u8>(), 0..512), cuts in vec(any::<usize>(), 0..6)) {
        let mut parser = Events::default();
        for piece in pieces(&bytes, &cuts) {
            let _ = parser.feed(&piece);
        }
        prop_assert!(parser.held() <= bytes.len());
    }
}
