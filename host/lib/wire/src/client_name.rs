//! The name of an agent's client, as Core MCP keeps it for "who did what" records
//! (`updated_by`, Scrolls' actors, the audit log) and tells a peer.
//!
//! Invariants: a kept name holds no control character (no newline that would forge a second
//! record line, no terminal escape), no bidirectional override that would reorder what a
//! reader sees, and at most [`MAX_CLIENT_CHARS`] characters, so a peer accepts it as sent
//! (a relay refuses anything else). A name with nothing left is no name.

/// The longest client name carried.
pub const MAX_CLIENT_CHARS: usize = 200;

/// `name version` as kept, from what a client said in `clientInfo`.
pub fn label(name: &str, version: Option<&str>) -> Option<String> {
    let whole = match version {
        Some(version) => format!("{name} {version}"),
        None => name.to_owned(),
    };
    let mut kept = String::with_capacity(whole.len().min(MAX_CLIENT_CHARS * 4));
    let mut count = 0;
    let mut space = false;
    for c in whole.chars() {
        if hidden(c) {
            continue;
        }
        if c.is_control() || c.is_whitespace() {
            space = !kept.is_empty();
            continue;
        }
        if space {
            if count + 2 > MAX_CLIENT_CHARS {
                break;
            }
            kept.push(' ');
            count += 1;
            space = false;
        }
        if count + 1 > MAX_CLIENT_CHARS {
            break;
        }
        kept.push(c);
        count += 1;
    }
    (!kept.is_empty()).then_some(kept)
}

/// The client's name without its version ("claude-code" of "claude-code 2.1.3"); a label
/// whose last word is no version is a name as a whole.
pub fn without_version(label: &str) -> &str {
    match label.rsplit_once(' ') {
        Some((name, version)) if version.starts_with(|v: char| v.is_ascii_digit()) => name,
        _ => label,
    }
}

/// Characters that change how text around them is shown without being seen: bidirectional
/// marks, embeddings, overrides and isolates.
fn hidden(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_name_is_kept_as_said() {
        assert_eq!(
            label("claude-code", Some("2.1.3")).as_deref(),
            Some("claude-code 2.1.3")
        );
        assert_eq!(label("opencode", None).as_deref(), Some("opencode"));
        assert_eq!(label("Cursor ✨", None).as_deref(), Some("Cursor ✨"));
    }

    #[test]
    fn lines_escapes_and_overrides_are_never_kept() {
        let forged = label(
            "evil\n2026-12-07 updated_by: alice\r\x1b[2J\x1b]0;x\x07",
            Some("1\u{202E}gpj"),
        )
        .expect("a name");
        assert!(
            !forged.chars().any(|c| c.is_control() || hidden(c)),
            "{forged:?}"
        );
        assert_eq!(forged, "evil 2026-12-07 updated_by: alice [2J ]0;x 1gpj");
        assert_eq!(label("\n\t\x1b", None), None, "nothing left");
        assert_eq!(label("  a  ", Some("")).as_deref(), Some("a"));
    }

    #[test]
    fn a_long_name_is_cut_to_what_a_peer_accepts() {
        let long = label(&"é".repeat(10_000), Some("1")).expect("a name");
        assert_eq!(long.chars().count(), MAX_CLIENT_CHARS);
        let spaced = label(&format!("{} b", "a".repeat(MAX_CLIENT_CHARS - 1)), None).expect("name");
        assert_eq!(
            spaced.chars().count(),
            MAX_CLIENT_CHARS - 1,
            "no trailing space"
        );
    }
}
