//! Property tests over what the upstream client parses from outside: a server's stdout through
//! the bounded line reader, the top-level id scan of discarded answers, `mcp.json` and
//! `COREMCP_MCP_SERVERS`. `PROPTEST_CASES` cases (256 by default): nothing panics or hangs on
//! arbitrary input, and well-formed input generated at random comes out as a model says.

use std::io::BufReader;
use std::path::Path;

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::config::{parse_file, parse_inline, Transport};
use crate::lines::{Line, Lines};
use coremcp_wire::id_scan::IdScan;
use coremcp_wire::testing::{config, json_value, model_lines, pieces};

proptest! {
    #![proptest_config(config())]

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
}
