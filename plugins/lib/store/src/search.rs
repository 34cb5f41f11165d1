//! Ranked full-text search, the one part of the SQL that the two backends write differently:
//! SQLite indexes with FTS5 (an external-content table kept by triggers), PostgreSQL with a
//! generated `tsvector` column and a GIN index. An [`Index`] knows both: its migration DDL, the
//! condition that a row matches a query, and the rank to order by (higher is better).
//!
//! Invariants:
//! - A query is searched as words, never as syntax: it is split into runs of letters and digits
//!   here (lowercased, at most [`MAX_WORDS`] of at most [`MAX_WORD_CHARS`] characters), every
//!   word is required, and the words reach SQL only as bound parameters, quoted for FTS5
//!   (`"word"`) or joined with `&` and `|` for `to_tsquery`. So `"`, `*`, `-`, `NEAR`,
//!   `needle-word` or SQL text in a query is never a syntax error or an injection.
//! - A word matches its English word forms ([`forms`]: relay, relays, relayed, relaying; copy,
//!   copies, copied), and the last word of a query also matches as a prefix (`hand` finds
//!   "handbook"), so a query typed halfway finds what it is heading for. The forms are
//!   computed here, the same for both backends, and matched as whole indexed words: the
//!   backends' own stemmers (FTS5 `porter`, PostgreSQL `english`) differ from each other and
//!   drop different stop words, so neither is used.
//! - Rows holding every word exactly as typed rank first, by the backend's rank on those words
//!   (as before forms were matched); rows that match only through a form or a prefix follow,
//!   all with the same rank, so the caller's unique key orders them the same on both backends
//!   (bm25 and ts_rank weigh a set of alternatives differently).
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

/// The word forms a query word matches: the word, and the English inflections of each root it
/// may have (a plural's singular, a past or a gerund's base), as whole words. Words that are
/// not plain ASCII letters, and short ones, match only themselves.
pub fn forms(word: &str) -> Vec<String> {
    let mut out = vec![word.to_owned()];
    if word.len() < 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return out;
    }
    let mut push = |w: String| {
        if w.len() >= 2 && !out.contains(&w) {
            out.push(w);
        }
    };
    for root in roots(word) {
        push(root.clone());
        push(format!("{root}s"));
        push(format!("{root}es"));
        push(format!("{root}ed"));
        push(format!("{root}ing"));
        if let Some(base) = root.strip_suffix('e') {
            push(format!("{root}d"));
            push(format!("{base}ing"));
        }
        let bytes = root.as_bytes();
        let last = bytes[bytes.len() - 1];
        let before = bytes.get(bytes.len().wrapping_sub(2)).copied();
        if last == b'y' && before.is_some_and(|b| !is_vowel(b)) {
            let base = &root[..root.len() - 1];
            push(format!("{base}ies"));
            push(format!("{base}ied"));
        }
        // A short word ending consonant-vowel-consonant doubles it: run, running; stop, stopped.
        if bytes.len() >= 3
            && !is_vowel(last)
            && !matches!(last, b'w' | b'x' | b'y')
            && is_vowel(bytes[bytes.len() - 2])
            && !is_vowel(bytes[bytes.len() - 3])
        {
            let last = char::from(last);
            push(format!("{root}{last}ing"));
            push(format!("{root}{last}ed"));
        }
    }
    out
}

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u')
}

/// The roots `word` may be an inflection of, itself first.
fn roots(word: &str) -> Vec<String> {
    let mut out = vec![word.to_owned()];
    let n = word.len();
    let strip = |suffix: &str| word.strip_suffix(suffix).map(str::to_owned);
    if n > 4 {
        for suffix in ["ies", "ied"] {
            if let Some(base) = strip(suffix) {
                out.push(format!("{base}y"));
            }
        }
    }
    if let Some(base) = strip("es") {
        if ["s", "x", "z", "ch", "sh"]
            .iter()
            .any(|e| base.ends_with(e))
        {
            out.push(base);
        }
    }
    if let Some(base) = strip("s") {
        if !["s", "u", "i"].iter().any(|e| base.ends_with(e)) && base.len() >= 2 {
            out.push(base);
        }
    }
    for suffix in ["ing", "ed"] {
        let Some(base) = strip(suffix).filter(|b| b.len() >= 2 && n > suffix.len() + 2) else {
            continue;
        };
        let bytes = base.as_bytes();
        if bytes.len() >= 2 && bytes[bytes.len() - 1] == bytes[bytes.len() - 2] {
            out.push(base[..base.len() - 1].to_owned());
        }
        out.push(format!("{base}e"));
        out.push(base);
    }
    out.dedup();
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

    /// Adds "the row matches every one of `words`" to `q` (see [`words`]: each word through
    /// its [`forms`], the last also as a prefix); `None` when there are no words, which
    /// matches nothing. The rank puts rows holding every word as typed first.
    pub fn matching(&self, kind: BackendKind, q: &mut Query, words: &[String]) -> Option<Match> {
        if words.is_empty() {
            return None;
        }
        let (table, fts) = (self.table, self.fts());
        // What each word may be: its forms as whole words, and for the last word a prefix.
        let alternatives = |word: &str, last: bool| -> Vec<(String, bool)> {
            let mut terms: Vec<(String, bool)> =
                forms(word).into_iter().map(|f| (f, false)).collect();
            if last {
                terms.push((word.to_owned(), true));
            }
            terms
        };
        let groups: Vec<Vec<(String, bool)>> = words
            .iter()
            .enumerate()
            .map(|(i, w)| alternatives(w, i + 1 == words.len()))
            .collect();
        /// Above any rank a backend gives, so that exact rows come first.
        const EXACT: &str = "1000000.0";
        Some(match kind {
            BackendKind::Sqlite => {
                // A quoted string is one FTS5 term, whatever it holds; quotes double inside.
                let quote = |w: &str| format!("\"{}\"", w.replace('"', "\"\""));
                let expression: Vec<String> = groups
                    .iter()
                    .map(|terms| {
                        let terms: Vec<String> = terms
                            .iter()
                            .map(|(t, prefix)| {
                                format!("{}{}", quote(t), if *prefix { "*" } else { "" })
                            })
                            .collect();
                        format!("({})", terms.join(" OR "))
                    })
                    .collect();
                let p = q.bind(expression.join(" AND "));
                let condition = format!("{fts} MATCH {p}");
                q.and(condition.clone());
                // The rows holding the words as typed, ranked on those words alone (as both
                // backends ranked before forms were matched), in one pass of the index.
                let exact: Vec<String> = words.iter().map(|w| quote(w)).collect();
                let e = q.bind(exact.join(" "));
                let x = format!("{fts}_exact");
                Match {
                    join: format!(
                        " JOIN {fts} ON {fts}.rowid = {table}.rowid LEFT JOIN (SELECT rowid AS \
                         hit, bm25({fts}) AS score FROM {fts} WHERE {fts} MATCH {e}) {x} \
                         ON {x}.hit = {table}.rowid"
                    ),
                    condition,
                    rank: format!(
                        "(CASE WHEN {x}.hit IS NULL THEN 0.0 ELSE {EXACT} - {x}.score END)"
                    ),
                }
            }
            BackendKind::Postgres => {
                // Words are letters and digits only: nothing in them is tsquery syntax.
                let expression: Vec<String> = groups
                    .iter()
                    .map(|terms| {
                        let terms: Vec<String> = terms
                            .iter()
                            .map(|(t, prefix)| format!("{t}{}", if *prefix { ":*" } else { "" }))
                            .collect();
                        format!("({})", terms.join(" | "))
                    })
                    .collect();
                let p = q.bind(expression.join(" & "));
                let query = format!("to_tsquery('simple', CAST({p} AS TEXT))");
                let condition = format!("{table}.search_tsv @@ {query}");
                q.and(condition.clone());
                let e = q.bind(words.join(" & "));
                let exact = format!("to_tsquery('simple', CAST({e} AS TEXT))");
                Match {
                    join: String::new(),
                    condition,
                    rank: format!(
                        "(CASE WHEN {table}.search_tsv @@ {exact} THEN {EXACT} + \
                         ts_rank({table}.search_tsv, {exact}) ELSE 0.0 END)"
                    ),
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
            assert_eq!(
                q.params().len(),
                2,
                "{kind:?}: the match and the exact rank"
            );
        }
        let mut q = Query::new();
        assert!(index.matching(BackendKind::Sqlite, &mut q, &[]).is_none());
        assert!(q.where_clause().is_empty());
    }

    #[test]
    fn a_word_matches_its_forms() {
        let has = |word: &str, all: &[&str]| {
            let forms = forms(word);
            for form in all {
                assert!(
                    forms.iter().any(|f| f == form),
                    "{word} → {form}: {forms:?}"
                );
            }
        };
        for word in ["relay", "relays", "relaying", "relayed"] {
            has(word, &["relay", "relays", "relaying", "relayed"]);
        }
        for word in ["copy", "copies", "copied"] {
            has(word, &["copy", "copies", "copied", "copying"]);
        }
        for word in ["run", "running", "runs"] {
            has(word, &["run", "runs", "running"]);
        }
        for word in ["make", "making", "makes"] {
            has(word, &["make", "makes", "making"]);
        }
        has("box", &["boxes"]);
        has("boxes", &["box"]);
        has("stop", &["stopped", "stopping"]);
        // Short, non-ASCII and digit words match only themselves.
        assert_eq!(forms("ab"), ["ab"]);
        assert_eq!(forms("über"), ["über"]);
        assert_eq!(forms("v2"), ["v2"]);
        // Not every s is a plural.
        assert!(!forms("status").contains(&"statu".to_owned()));
        assert!(!forms("class").contains(&"clas".to_owned()));
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
