//! Placeholder translation: SQL is written once with PostgreSQL's `$1…$n` placeholders.
//!
//! Invariants:
//! - For SQLite every `$n` outside string literals, quoted identifiers and comments becomes `?n`
//!   (same number, so a placeholder may repeat and appear in any order); nothing else changes.
//! - `$` inside `'…'`, `"…"`, `-- …` and `/* … */`, and `$` that continues an identifier
//!   (`a$1`) or is not followed by a digit (`$$`), is left alone.
//! - PostgreSQL receives the text unchanged.

use std::borrow::Cow;

/// `$n` → `?n` outside string literals, quoted identifiers and comments.
pub(crate) fn to_sqlite(sql: &str) -> Cow<'_, str> {
    if !sql.contains('$') {
        return Cow::Borrowed(sql);
    }
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        Quoted(char),
        LineComment,
        BlockComment,
    }
    let mut out = String::with_capacity(sql.len());
    let mut state = State::Code;
    let mut prev: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match state {
            State::Code => match c {
                '\'' | '"' => state = State::Quoted(c),
                '-' if next == Some('-') => state = State::LineComment,
                '/' if next == Some('*') => {
                    out.push(c);
                    out.push('*');
                    chars.next();
                    state = State::BlockComment;
                    prev = Some('*');
                    continue;
                }
                '$' if next.is_some_and(|n| n.is_ascii_digit())
                    && !prev.is_some_and(|p| p.is_alphanumeric() || p == '_' || p == '$') =>
                {
                    out.push('?');
                    prev = Some('?');
                    continue;
                }
                _ => {}
            },
            State::Quoted(quote) => {
                // A doubled quote ('' or "") closes and at once reopens: same result.
                if c == quote {
                    state = State::Code;
                }
            }
            State::LineComment => {
                if c == '\n' {
                    state = State::Code;
                }
            }
            State::BlockComment => {
                if c == '*' && next == Some('/') {
                    out.push('*');
                    out.push('/');
                    chars.next();
                    state = State::Code;
                    prev = Some('/');
                    continue;
                }
            }
        }
        out.push(c);
        prev = Some(c);
    }
    Cow::Owned(out)
}

/// PostgreSQL column types of the portable subset (docs/tools.md) and what SQLite stores them
/// as: timestamps as RFC 3339 text, JSON as text, bytes as a BLOB.
const SQLITE_TYPES: [(&str, &str); 3] = [
    ("TIMESTAMPTZ", "TEXT"),
    ("JSONB", "TEXT"),
    ("BYTEA", "BLOB"),
];

/// Migration DDL is written for PostgreSQL; for SQLite the type names `TIMESTAMPTZ`, `JSONB`
/// and `BYTEA` (whole words, any case, outside literals and comments) become `TEXT`, `TEXT` and
/// `BLOB`, so they keep text affinity instead of SQLite's numeric default for unknown names.
pub(crate) fn ddl_to_sqlite(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut line_comment = false;
    let mut block_comment = false;
    let flush = |word: &mut String, out: &mut String| {
        let mapped = SQLITE_TYPES
            .iter()
            .find(|(pg, _)| pg.eq_ignore_ascii_case(word))
            .map_or(word.as_str(), |(_, lite)| lite);
        out.push_str(mapped);
        word.clear();
    };
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        let in_code = quote.is_none() && !line_comment && !block_comment;
        if in_code && (c.is_alphanumeric() || c == '_') {
            word.push(c);
            continue;
        }
        flush(&mut word, &mut out);
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if line_comment => line_comment = c != '\n',
            None if block_comment => {
                if c == '*' && chars.peek() == Some(&'/') {
                    out.push(c);
                    out.push('/');
                    chars.next();
                    block_comment = false;
                    continue;
                }
            }
            None => match c {
                '\'' | '"' => quote = Some(c),
                '-' if chars.peek() == Some(&'-') => line_comment = true,
                '/' if chars.peek() == Some(&'*') => {
                    out.push(c);
                    out.push('*');
                    chars.next();
                    block_comment = true;
                    continue;
                }
                _ => {}
            },
        }
        out.push(c);
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::{ddl_to_sqlite, to_sqlite};

    #[test]
    fn postgres_types_become_sqlite_types_in_code_only() {
        assert_eq!(
            ddl_to_sqlite(
                "CREATE TABLE t (at TIMESTAMPTZ NOT NULL, doc jsonb, raw Bytea, \
                 note TEXT DEFAULT 'TIMESTAMPTZ', jsonb_col TEXT) -- JSONB\n/* bytea */"
            ),
            "CREATE TABLE t (at TEXT NOT NULL, doc TEXT, raw BLOB, \
             note TEXT DEFAULT 'TIMESTAMPTZ', jsonb_col TEXT) -- JSONB\n/* bytea */"
        );
    }

    #[test]
    fn placeholders_become_numbered_question_marks() {
        assert_eq!(
            to_sqlite("SELECT * FROM t WHERE a = $1 AND b = $2"),
            "SELECT * FROM t WHERE a = ?1 AND b = ?2"
        );
        assert_eq!(
            to_sqlite("UPDATE t SET v = $12, w = $3 WHERE id = $12"),
            "UPDATE t SET v = ?12, w = ?3 WHERE id = ?12"
        );
        assert_eq!(to_sqlite("VALUES($1,$2)"), "VALUES(?1,?2)");
    }

    #[test]
    fn text_without_placeholders_is_unchanged() {
        let sql = "SELECT 1 FROM t WHERE a = 'x'";
        assert!(matches!(to_sqlite(sql), std::borrow::Cow::Borrowed(_)));
        assert_eq!(to_sqlite(sql), sql);
    }

    #[test]
    fn string_literals_are_left_alone() {
        assert_eq!(
            to_sqlite("SELECT '$1', $1, 'costs $2 '' or $3', $2"),
            "SELECT '$1', ?1, 'costs $2 '' or $3', ?2"
        );
        assert_eq!(
            to_sqlite("SELECT 'it''s $1' || $1"),
            "SELECT 'it''s $1' || ?1"
        );
    }

    #[test]
    fn quoted_identifiers_and_comments_are_left_alone() {
        assert_eq!(
            to_sqlite("SELECT \"col$1\" FROM t -- uses $1\nWHERE a = $1 /* not $2 */ AND b = $2"),
            "SELECT \"col$1\" FROM t -- uses $1\nWHERE a = ?1 /* not $2 */ AND b = ?2"
        );
    }

    #[test]
    fn dollars_that_are_not_placeholders_are_left_alone() {
        assert_eq!(to_sqlite("SELECT a$1, $$, $x, $"), "SELECT a$1, $$, $x, $");
        assert_eq!(to_sqlite("SELECT price$2 + $2"), "SELECT price$2 + ?2");
    }

    #[test]
    fn non_ascii_text_survives() {
        assert_eq!(
            to_sqlite("SELECT 'größe $1' AS \"naïve\", $1"),
            "SELECT 'größe $1' AS \"naïve\", ?1"
        );
    }
}
