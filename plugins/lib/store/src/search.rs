//! Ranked full-text search, the one part of the SQL that the two backends write differently:
//! SQLite indexes with FTS5 (an external-content table kept by triggers), PostgreSQL with a
//! generated `tsvector` column and a GIN index. An [`Index`] knows both: its migration DDL, the
//! condition that a row matches a query, and the rank to order by (higher is better).
//!
//! Invariants:
//! - A query is searched as words, never as syntax: it is split into runs of letters and digits
//!   here (lowercased, at most [`MAX_WORDS`] of at most [`MAX_WORD_CHARS`] characters), every
//!   word is required, and the words reach SQL only as one bound parameter, quoted for FTS5
//!   (`"word"`) or joined with `&` for `to_tsquery`. So `"`, `*`, `-`, `NEAR`, `needle-word`
//!   or SQL text in a query is never a syntax error or an injection.
//! - Both backends split the indexed text the same way as a query: FTS5's `unicode61` tokenizer
//!   (diacritics kept) and, on PostgreSQL, the `simple` configuration over the text with every
//!   run of other characters made a space (so e-mail addresses, paths and hyphenated words are
//!   words, as in SQLite). A row found on one backend is found on the other.
//! - The ranks differ (`bm25` and `ts_rank`); both favour rows where the words are frequent and
//!   the text short, and a caller orders by rank, then by a unique key, so equal ranks list in
//!   the same order on both.
//! - On SQLite the index follows the table's rowid, so a searched table never has its rowids
//!   renumbered (the store runs no `VACUUM`).

use crate::query::Query;
use crate::BackendKind;

/// The most words of a query that are searched; the rest are ignored.
pub const MAX_WORDS: usize = 16;
/// The longest word searched; a longer run of letters is cut to this many characters.
pub const MAX_WORD_CHARS: usize = 64;

/// A full-text index over some text columns of one table.
#[derive(Debug, Clone, Copy)]
pub struct Index {
    /// The table searched; on SQLite a rowid table.
    pub table: &'static str,
    /// Its text columns, searched together (NULL reads as empty).
    pub columns: &'static [&'static str],
}

/// How a statement finds the rows of an [`Index`] that match a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// What to add after `FROM <table>`: the join with the FTS5 table, or nothing.
    pub join: String,
    /// The condition, already added to the [`Query`].
    pub condition: String,
    /// The rank of a matching row: higher is better.
    pub rank: String,
}

/// The words of a user's query: runs of letters and digits, lowercased, in order, each once.
pub fn words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        let word: String = word
            .chars()
            .take(MAX_WORD_CHARS)
            .collect::<String>()
            .to_lowercase();
        if !word.is_empty() && !out.contains(&word) && out.len() < MAX_WORDS {
            out.push(word);
        }
    }
    out
}

impl Index {
    /// The FTS5 table of the index (SQLite).
    fn fts(&self) -> String {
        format!("{}_search", self.table)
    }

    /// The statements that create the index and index the rows already there, for `kind`. Run
    /// them in a migration after the table exists (`Migration::search`).
    pub fn ddl(&self, kind: BackendKind) -> String {
        let (table, fts) = (self.table, self.fts());
        let columns = self.columns.join(", ");
        match kind {
            BackendKind::Sqlite => {
                let values = |of: &str| {
                    let cols: Vec<String> =
                        self.columns.iter().map(|c| format!("{of}.{c}")).collect();
                    format!("{of}.rowid, {}", cols.join(", "))
                };
                let (new, old) = (values("new"), values("old"));
                format!(
                    "CREATE VIRTUAL TABLE {fts} USING fts5({columns}, content='{table}', \
                     content_rowid='rowid', tokenize='unicode61 remove_diacritics 0');
                     CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN
                         INSERT INTO {fts} (rowid, {columns}) VALUES ({new});
                     END;
                     CREATE TRIGGER {fts}_delete AFTER DELETE ON {table} BEGIN
                         INSERT INTO {fts} ({fts}, rowid, {columns}) VALUES ('delete', {old});
                     END;
                     CREATE TRIGGER {fts}_update AFTER UPDATE OF {columns} ON {table} BEGIN
                         INSERT INTO {fts} ({fts}, rowid, {columns}) VALUES ('delete', {old});
                         INSERT INTO {fts} (rowid, {columns}) VALUES ({new});
                     END;
                     INSERT INTO {fts} ({fts}) VALUES ('rebuild');"
                )
            }
            BackendKind::Postgres => {
                let text: Vec<String> = self
                    .columns
                    .iter()
                    .map(|c| format!("coalesce({c}, '')"))
                    .collect();
                format!(
                    "ALTER TABLE {table} ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS \
                     (to_tsvector('simple', regexp_replace({}, '[^[:alnum:]]+', ' ', 'g'))) \
                     STORED;
                     CREATE INDEX {fts} ON {table} USING GIN (search_tsv);",
                    text.join(" || ' ' || ")
                )
            }
        }
    }

    /// Adds "the row matches every one of `words`" to `q` (see [`words`]); `None` when there
    /// are no words, which matches nothing.
    pub fn matching(&self, kind: BackendKind, q: &mut Query, words: &[String]) -> Option<Match> {
        if words.is_empty() {
            return None;
        }
        let (table, fts) = (self.table, self.fts());
        Some(match kind {
            BackendKind::Sqlite => {
                // A quoted string is one FTS5 term, whatever it holds; quotes double inside.
                let terms: Vec<String> = words
                    .iter()
                    .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
                    .collect();
                let p = q.bind(terms.join(" "));
                let condition = format!("{fts} MATCH {p}");
                q.and(condition.clone());
                Match {
                    join: format!(" JOIN {fts} ON {fts}.rowid = {table}.rowid"),
                    condition,
                    rank: format!("-bm25({fts})"),
                }
            }
            BackendKind::Postgres => {
                // Words are letters and digits only: nothing in them is tsquery syntax.
                let p = q.bind(words.join(" & "));
                let query = format!("to_tsquery('simple', CAST({p} AS TEXT))");
                let condition = format!("{table}.search_tsv @@ {query}");
                q.and(condition.clone());
                Match {
                    join: String::new(),
                    condition,
                    rank: format!("ts_rank({table}.search_tsv, {query})"),
                }
            }
        })
    }
}

/// Up to `width` characters of `text` around the first of `words` it holds (case-insensitive),
/// with `…` where it was cut; the start of the text when it holds none. The same on both
/// backends, since it is computed here.
pub fn snippet(text: &str, words: &[String], width: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let lower: Vec<char> = chars
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    let first = words
        .iter()
        .filter_map(|w| {
            let w: Vec<char> = w.chars().collect();
            (0..lower.len()).find(|&i| lower[i..].starts_with(&w))
        })
        .min()
        .unwrap_or(0);
    // A little before the word, from a word's start, to a word's end where the text goes on.
    let lead = first.saturating_sub(width / 4);
    let start = (lead..first)
        .find(|&i| i == 0 || chars[i - 1].is_whitespace())
        .unwrap_or(first);
    let end = (start + width).min(chars.len());
    let end = match end < chars.len() {
        true => (start + 1..end)
            .rev()
            .find(|&i| chars[i].is_whitespace())
            .unwrap_or(end),
        false => end,
    };
    let mut out = chars[start..end].iter().collect::<String>();
    out = out.split_whitespace().collect::<Vec<_>>().join(" ");
    if start > 0 {
        out.insert(0, '…');
    }
    if end < chars.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_words_never_syntax() {
        let cases: [(&str, &[&str]); 7] = [
            ("Relay failover", &["relay", "failover"]),
            ("needle-word", &["needle", "word"]),
            (
                "\"quoted\" * -minus NEAR(a b)",
                &["quoted", "minus", "near", "a", "b"],
            ),
            ("'; DROP TABLE item; --", &["drop", "table", "item"]),
            ("Über café", &["über", "café"]),
            ("a a A", &["a"]),
            ("*** \" -- ", &[]),
        ];
        for (query, expected) in cases {
            assert_eq!(words(query), expected, "{query}");
        }
        assert_eq!(words(&"w ".repeat(40)).len(), 1);
        let many: String = (0..40).map(|i| format!("w{i} ")).collect();
        assert_eq!(words(&many).len(), MAX_WORDS);
        assert_eq!(words(&"x".repeat(500))[0].len(), MAX_WORD_CHARS);
    }

    #[test]
    fn the_words_reach_sql_only_as_a_parameter() {
        let index = Index {
            table: "item",
            columns: &["title", "body"],
        };
        let words = words("a\"b NEAR");
        for kind in [BackendKind::Sqlite, BackendKind::Postgres] {
            let mut q = Query::new();
            let m = index.matching(kind, &mut q, &words).expect("words");
            assert!(
                !m.condition.contains("near") && !m.rank.contains('"'),
                "{m:?}"
            );
            assert_eq!(q.params().len(), 1, "{kind:?}");
        }
        let mut q = Query::new();
        assert!(index.matching(BackendKind::Sqlite, &mut q, &[]).is_none());
        assert!(q.where_clause().is_empty());
    }

    #[test]
    fn snippets_cut_around_the_first_word() {
        let text = format!(
            "{} the relay failed over {}",
            "lead ".repeat(30),
            "tail ".repeat(30)
        );
        let cut = snippet(&text, &["failed".to_owned()], 40);
        assert!(
            cut.starts_with('…') && cut.ends_with('…') && cut.contains("failed"),
            "{cut}"
        );
        assert!(cut.chars().count() <= 42, "{cut}");
        assert_eq!(
            snippet("short text", &["none".to_owned()], 40),
            "short text"
        );
        assert_eq!(snippet("", &["x".to_owned()], 10), "");
    }
}
