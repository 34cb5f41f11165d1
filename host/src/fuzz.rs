//! Property tests over what the binary parses from outside: stdin through the stdio line
//! reader and the tokens file. The library crates hold their own (`fuzz.rs` in
//! `host/lib/wire`, `net`, `upstream` and `engine`). Each property runs `PROPTEST_CASES`
//! cases (256 by default, so `cargo test` stays quick; `scripts/fuzz` runs many more).

use std::io::BufReader;

use proptest::collection::vec;
use proptest::prelude::*;

use crate::http::auth::Tokens;
use coremcp_wire::testing::{config, model_lines};

proptest! {
    #![proptest_config(config())]

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
                crate::stdio::lines::Event::Oversize { bytes, .. } => Err(bytes),
            }))
            .expect("in memory")
        {}
        // The stdio reader keeps a trailing `\r` (serde_json reads it as whitespace).
        let model = model_lines(&input, max);
        prop_assert_eq!(got, model);
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
