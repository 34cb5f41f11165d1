//! Property tests over everything the host parses from outside: JSON-RPC lines (and batches),
//! both bounded line readers, the event-stream parser, `mcp.json` and `COREMCP_MCP_SERVERS`,
//! the tokens file, the top-level id scan of discarded answers (the ELF check of plugin files is
//! fuzzed in `coremcp-engine`). Each property runs `PROPTEST_CASES` cases (256 by default, so `cargo test` stays
//! quick; `scripts/fuzz` runs many more). Properties are of two kinds: nothing panics or hangs on
//! arbitrary input, and well-formed input generated at random comes out as a model says.

use std::io::BufReader;
use std::path::Path;

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::http::auth::Tokens;
use coremcp_net::events::{Event, Events};
use coremcp_upstream::config::{parse_file, parse_inline, Transport};
use coremcp_upstream::lines::{IdScan, Line, Lines};
use coremcp_wire::rpc::{self, Incoming};

fn config() -> ProptestConfig {
    ProptestConfig {
        // Failures print their shrunk input; nothing is written into the source tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Arbitrary JSON values, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec((".{0,8}", inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// `bytes` cut into pieces at `cuts` (offsets modulo the length).
fn pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| if bytes.is_empty() { 0 } else { c % bytes.len() })
        .collect();
    at.push(0);
    at.push(bytes.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
}

/// The model of a bounded line reader: lines split on `\n`, a trailing `\r` dropped, lines
/// longer than `max` replaced by their length.
fn model_lines(input: &[u8], max: usize) -> Vec<Result<Vec<u8>, u64>> {
    let mut out = Vec::new();
    let mut parts: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    for part in parts {
        if part.len() > max {
            out.push(Err(part.len() as u64));
        } else {
            out.push(Ok(part.to_vec()));
        }
    }
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn json_strings_are_escaped_as_serde_json_escapes_them(text in "(.|[\\x00-\\x1f\"\\\\\\x7f\u{2028}])*") {
        prop_assert_eq!(coremcp_wire::rpc::json_string(&text), serde_json::Value::from(text.as_str()).to_string());
    }

    #[test]
    fn rpc_parse_never_panics(bytes in vec(any::<u8>(), 0..512)) {
        let _ = rpc::parse(&bytes);
    }

    #[test]
    fn rpc_parse_classifies_generated_messages(
        id in prop_oneof![any::<i64>().prop_map(Value::from), "[a-z0-9-]{1,12}".prop_map(Value::from)],
        method in "[a-z/_]{1,20}",
        params in json_value(),
        notification in any::<bool>(),
    ) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if !notification {
            message["id"] = id.clone();
        }
        // `"params": null` is read as no params (clients send it).
        let params_ok = params.is_object() || params.is_array() || params.is_null();
        message["params"] = params;
        let text = message.to_string();
        match (rpc::parse(text.as_bytes()), notification, params_ok) {
            (Incoming::Request { id: got, method: m, .. }, false, true) => {
                prop_assert_eq!(got.get(), id.to_string());
                prop_assert_eq!(m.as_ref(), method.as_str());
            }
            (Incoming::Notification { method: m, .. }, true, true) => {
                prop_assert_eq!(m.as_ref(), method.as_str());
            }
            (Incoming::Invalid { code, .. }, _, false) => prop_assert_eq!(code, rpc::INVALID_REQUEST),
            (other, n, p) => prop_assert!(false, "{text}: {other:?} (notification {n}, params ok {p})"),
        }
    }

    #[test]
    fn rpc_batches_are_refused_whatever_they_hold(items in vec(json_value(), 0..5)) {
        let text = Value::Array(items).to_string();
        match rpc::parse(text.as_bytes()) {
            Incoming::Invalid { code, message, .. } => {
                prop_assert_eq!(code, rpc::INVALID_REQUEST);
                prop_assert!(message.contains("batch"), "{message}");
            }
            other => prop_assert!(false, "{text}: {other:?}"),
        }
    }

    #[test]
    fn the_stdio_reader_matches_its_model_however_input_arrives(
        input in vec(prop_oneof![Just(b'\n'), Just(b'x'), Just(b'\r'), any::<u8>()], 0..400),
        max in 1usize..40,
        capacity in 1usize..64,
    ) {
        let mut reader = crate::stdio::lines::LineReader::new(
            BufReader::with_capacity(capacity, input.as_slice()), max);
        let mut got: Vec<Result<Vec<u8>, u64>> = Vec::new();
        while reader
            .next(|e| got.push(match e {
                crate::stdio::lines::Event::Line(l) => Ok(l.to_vec()),
                crate::stdio::lines::Event::Oversize(n) => Err(n),
            }))
            .expect("in memory")
        {}
        // The stdio reader keeps a trailing `\r` (serde_json reads it as whitespace).
        let model = model_lines(&input, max);
        prop_assert_eq!(got, model);
    }

    #[test]
    fn the_upstream_reader_matches_its_model_however_input_arrives(
        input in vec(prop_oneof![Just(b'\n'), Just(b'x'), Just(b'\r'), any::<u8>()], 0..400),
        max in 1usize..40,
        capacity in 1usize..64,
    ) {
        let mut lines = Lines::new(BufReader::with_capacity(capacity, input.as_slice()), max);
        let mut got: Vec<Result<Vec<u8>, u64>> = Vec::new();
        while let Some(line) = lines.next_line().expect("in memory") {
            got.push(match line {
                Line::Text(t) => Ok(t),
                Line::TooLong { bytes, .. } => Err(bytes),
            });
        }
        // This one drops a trailing `\r`; a line is over the bound by its length with it.
        let model: Vec<Result<Vec<u8>, u64>> = model_lines(&input, max)
            .into_iter()
            .map(|line| line.map(|mut text| {
                if text.last() == Some(&b'\r') {
                    text.pop();
                }
                text
            }))
            .collect();
        prop_assert_eq!(got, model);
    }

    #[test]
    fn the_id_of_a_response_is_found_wherever_it_is(
        id in any::<u64>(),
        result in json_value(),
        extra in vec(("[a-z]{1,6}", json_value()), 0..4),
        id_last in any::<bool>(),
        cuts in vec(any::<usize>(), 0..8),
    ) {
        let mut members: Vec<String> = vec![
            "\"jsonrpc\":\"2.0\"".to_owned(),
            format!("\"result\":{result}"),
        ];
        for (key, value) in &extra {
            if key != "id" {
                members.push(format!("{}:{value}", Value::from(key.as_str())));
            }
        }
        let id_member = format!("\"id\" : {id}");
        if id_last { members.push(id_member) } else { members.insert(0, id_member) }
        let text = format!("{{{}}}", members.join(","));
        let mut scan = IdScan::default();
        for piece in pieces(text.as_bytes(), &cuts) {
            scan.feed(&piece);
        }
        prop_assert_eq!(scan.id(), Some(id), "{}", text);
    }

    #[test]
    fn the_id_scan_never_panics(bytes in vec(any::<u8>(), 0..512)) {
        let mut scan = IdScan::default();
        scan.feed(&bytes);
        let _ = scan.id();
    }

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

    #[test]
    fn mcp_json_never_panics_and_names_where_it_refuses(servers in json_value(), keys in vec(json_value(), 0..3)) {
        for document in [json!({"servers": servers.clone()}), json!({"servers": keys}), servers] {
            match parse_file(&document.to_string(), Path::new("mcp.json")) {
                Ok(parsed) => prop_assert!(parsed.iter().all(|s| !s.id.is_empty())),
                Err(message) => prop_assert!(!message.is_empty() && !message.contains('\n'), "{message}"),
            }
        }
    }

    #[test]
    fn generated_servers_parse_back(
        entries in vec(("[A-Za-z0-9][A-Za-z0-9-]{0,10}", "[a-z/]{1,12}", vec("[a-z0-9=.-]{1,6}", 0..4)), 1..6),
    ) {
        let mut unique: Vec<&(String, String, Vec<String>)> = Vec::new();
        for entry in &entries {
            if !unique.iter().any(|u| u.0 == entry.0) {
                unique.push(entry);
            }
        }
        let ids: Vec<String> = unique.iter().map(|(id, _, _)| id.clone()).collect();
        let servers: Vec<Value> = unique
            .iter()
            .map(|(id, command, args)| json!({"id": id, "command": command, "args": args}))
            .collect();
        let parsed = parse_file(&json!({"servers": servers}).to_string(), Path::new("mcp.json"))
            .map_err(TestCaseError::fail)?;
        prop_assert_eq!(parsed.iter().map(|s| s.id.clone()).collect::<Vec<_>>(), ids);
        let inline: Vec<String> = unique
            .iter()
            .map(|(id, command, args)| format!("{id}={command} {}", args.join(" ")))
            .collect();
        let parsed = parse_inline(&inline.join(";")).map_err(TestCaseError::fail)?;
        prop_assert_eq!(parsed.len(), unique.len());
        for (server, (_, command, args)) in parsed.iter().zip(&unique) {
            match &server.transport {
                Transport::Stdio { command: c, args: a, .. } => {
                    prop_assert_eq!(c, command);
                    prop_assert_eq!(a, args);
                }
                other => prop_assert!(false, "{other:?}"),
            }
        }
    }

    #[test]
    fn the_inline_parser_never_panics(text in ".{0,200}") {
        match parse_inline(&text) {
            Ok(servers) => prop_assert!(servers.iter().all(|s| !s.id.contains('_'))),
            Err(message) => prop_assert!(message.contains("COREMCP_MCP_SERVERS"), "{message}"),
        }
    }

    #[test]
    fn tokens_files_parse_and_check(
        entries in vec(("[a-z][a-z0-9._-]{0,8}", "[!-~]{16,40}"), 1..5),
        noise in vec(prop_oneof![Just(String::new()), "# .{0,20}"], 0..4),
        text in ".{0,200}",
    ) {
        let _ = Tokens::parse(&text, "tokens");
        let mut names: Vec<&str> = Vec::new();
        let mut lines: Vec<String> = noise.clone();
        let mut kept = Vec::new();
        for (name, token) in &entries {
            if names.contains(&name.as_str()) || kept.iter().any(|(_, t): &(String, String)| t == token) {
                continue;
            }
            names.push(name);
            lines.push(format!("  {name}\t{token}  "));
            kept.push((name.clone(), token.clone()));
        }
        let tokens = Tokens::parse(&lines.join("\n"), "tokens").map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(tokens.len(), kept.len());
        for (name, token) in &kept {
            let header = format!("Bearer {token}");
            match tokens.check(Some(header.as_bytes())) {
                Ok(principal) => prop_assert_eq!(principal.to_string(), name.clone()),
                Err(e) => prop_assert!(false, "{name}: {e:?}"),
            }
            let wrong = format!("Bearer {token}x");
            prop_assert!(tokens.check(Some(wrong.as_bytes())).is_err());
        }
    }
}
