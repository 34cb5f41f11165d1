//! Parsers for git's machine formats, each into serialisable structs. Pure functions of
//! git's output: no I/O here, so each is tested on captured text.
//!
//! Invariants: optional values are omitted from the JSON, never `null`; a record that does not
//! fit its format is skipped rather than guessed at.

pub mod log;
pub mod numstat;
pub mod push;
pub mod refs;
pub mod status;

/// `#[serde(skip_serializing_if = "is_false")]` for flags that matter only when set.
pub fn is_false(value: &bool) -> bool {
    !*value
}

/// Property tests (`PROPTEST_CASES` cases each; `scripts/fuzz` runs many more): git's output is
/// outside input too (a repository's names, messages and refs are anyone's), so no text makes
/// a parser panic, and generated records come back field for field.
#[cfg(test)]
mod fuzz {
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn config() -> ProptestConfig {
        ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    /// Text with the separators git's formats use, and anything else.
    fn git_text() -> impl Strategy<Value = String> {
        vec(
            prop_oneof![
                Just("\0".to_owned()),
                Just("\t".to_owned()),
                Just("\n".to_owned()),
                Just("\x1e".to_owned()),
                Just("\x1f".to_owned()),
                Just("# branch.ab +1 -2\n".to_owned()),
                Just("1 .M N... 100644 100644 100644 a b ".to_owned()),
                Just("2 R. N... 100644 100644 100644 a b R100 ".to_owned()),
                Just("u UU N... 1 2 3 4 a b c ".to_owned()),
                Just("[ahead 1, behind 2]".to_owned()),
                Just("!\trefs/heads/x:refs/heads/x\t[rejected] (fetch first)\n".to_owned()),
                "[ -~]{0,12}",
                ".{0,4}",
            ],
            0..40,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn no_output_makes_a_parser_panic(text in git_text()) {
            let _ = super::log::parse(&text);
            let files = super::numstat::parse(&text);
            let _ = super::numstat::totals(&files);
            let _ = super::numstat::summary(&files);
            let _ = super::push::parse(&text);
            let _ = super::refs::parse(&text);
            let _ = super::refs::parse_track(&text);
            let _ = super::status::parse(&text);
        }

        #[test]
        fn commits_come_back_field_for_field(
            commits in vec((
                "[0-9a-f]{40}", "[^\x1e\x1f]{0,12}", "[^\x1e\x1f@]{0,8}@[a-z]{1,6}",
                vec("[0-9a-f]{40}", 0..3), "[^\x1e\x1f\n]{0,20}", "[^\x1e\x1f]{0,40}",
            ), 0..5),
        ) {
            let mut text = String::new();
            for (sha, name, email, parents, subject, body) in &commits {
                text.push_str(&format!(
                    "\x1e{sha}\x1f{}\x1f{name}\x1f{email}\x1f2026-01-02T03:04:05+00:00\x1f{}\x1f{subject}\x1f{body}",
                    &sha[..7],
                    parents.join(" ")
                ));
            }
            let parsed = super::log::parse(&text);
            prop_assert_eq!(parsed.len(), commits.len());
            for (got, (sha, name, email, parents, subject, body)) in parsed.iter().zip(&commits) {
                prop_assert_eq!(&got.sha, sha);
                prop_assert_eq!(&got.author_name, name);
                prop_assert_eq!(&got.author_email, email);
                prop_assert_eq!(&got.parents, parents);
                prop_assert_eq!(&got.subject, subject);
                let body = body.trim();
                prop_assert_eq!(got.body.as_deref(), (!body.is_empty()).then_some(body));
            }
        }

        #[test]
        fn numstat_counts_add_up(
            files in vec((0u64..10_000, 0u64..10_000, "[a-z/._ -]{1,20}", any::<bool>()), 0..8),
        ) {
            let mut text = String::new();
            for (added, deleted, path, binary) in &files {
                if *binary {
                    text.push_str(&format!("-\t-\t{path}\0"));
                } else {
                    text.push_str(&format!("{added}\t{deleted}\t{path}\0"));
                }
            }
            let parsed = super::numstat::parse(&text);
            prop_assert_eq!(parsed.len(), files.len());
            let want = files
                .iter()
                .filter(|f| !f.3)
                .fold((0, 0), |(a, d), f| (a + f.0, d + f.1));
            prop_assert_eq!(super::numstat::totals(&parsed), want);
        }
    }
}
