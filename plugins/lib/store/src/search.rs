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
//!   copies, copied), and the last word of a query, from [`MIN_PREFIX_CHARS`] characters, also
//!   matches as a prefix (`hand` finds "handbook"), so a query typed halfway finds what it is
//!   heading for. The forms are
//!   computed here, the same for both backends, and matched as whole indexed words: the
//!   backends' own stemmers (FTS5 `porter`, PostgreSQL `english`) differ from each other and
//!   drop different stop words, so neither is used.
//! - A search has two tiers ([`Tier`], [`tiered`]): the rows holding every word exactly as
//!   typed first, by the backend's rank on those words (as before forms were matched); then
//!   the rows that match only through a form or a prefix, all with the same rank, so the
//!   caller's unique key orders them the same on both backends (bm25 and ts_rank weigh a set
//!   of alternatives differently). The second tier is read only when the first does not fill
//!   the page.
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
/// The shortest last word that also matches as a prefix.
pub const MIN_PREFIX_CHARS: usize = 3;

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

/// The roots `word` may be an inflection of, itself first (each a prefix of most of its
/// [`forms`], so a snippet finds a form by them).
pub fn roots(word: &str) -> Vec<String> {
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

/// How many characters of a row's text its rank reads on PostgreSQL (see [`Index::rank_ddl`]):
/// the title, the tags and the start of a body, where the words that say what a text is about
/// are; the whole text decides whether it matches.
pub const RANK_HEAD: usize = 4_000;

/// Makes the searches of the transaction `tx` find their rows through the full-text index on
/// PostgreSQL, whatever share of the rows match: the planner, which does not count the cost of
/// reading a large text vector, would otherwise scan the table and read every row's. Call it
/// in a read transaction that only searches (it lasts until the transaction ends); nothing on
/// SQLite.
pub fn prefer_index(tx: &mut crate::Tx<'_>) -> Result<(), crate::StoreError> {
    if tx.kind() == BackendKind::Postgres {
        tx.execute("SET LOCAL enable_seqscan = off", &[])?;
    }
    Ok(())
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
            BackendKind::Postgres => format!(
                "ALTER TABLE {table} ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS \
                 (to_tsvector('simple', regexp_replace({}, '[^[:alnum:]]+', ' ', 'g'))) \
                 STORED;
                 CREATE INDEX {fts} ON {table} USING GIN (search_tsv);",
                self.text()
            ),
        }
    }

    /// The index's columns as one text on PostgreSQL (NULL read as empty).
    fn text(&self) -> String {
        let text: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("coalesce({c}, '')"))
            .collect();
        text.join(" || ' ' || ")
    }

    /// The statement that adds the index's rank column, for `kind`: on PostgreSQL `rank_tsv`,
    /// the text vector of the first [`RANK_HEAD`] characters of the columns, which a search
    /// ranks by (reading a row's whole vector, as `ts_rank` over `search_tsv` did, costs a
    /// search over large texts a detoast of every match); nothing on SQLite, whose FTS5 ranks
    /// from its own index. Run it in a migration after [`Index::ddl`] (`Migration::ranks`).
    pub fn rank_ddl(&self, kind: BackendKind) -> String {
        match kind {
            BackendKind::Sqlite => String::new(),
            BackendKind::Postgres => format!(
                "ALTER TABLE {} ADD COLUMN rank_tsv tsvector GENERATED ALWAYS AS \
                 (to_tsvector('simple', regexp_replace(left({}, {RANK_HEAD}), \
                 '[^[:alnum:]]+', ' ', 'g'))) STORED",
                self.table,
                self.text()
            ),
        }
    }

    /// Adds "the row matches every one of `words`" in `tier` to `q` (see [`words`] and
    /// [`Tier`]); `None` when there are no words, which matches nothing, and for the forms tier
    /// of a query that has no form or prefix beyond its words.
    pub fn matching(
        &self,
        kind: BackendKind,
        q: &mut Query,
        words: &[String],
        tier: Tier,
    ) -> Option<Match> {
        if words.is_empty() {
            return None;
        }
        let (table, fts) = (self.table, self.fts());
        // What each word may be: its forms as whole words, and for the last word a prefix.
        let alternatives = |word: &str, last: bool| -> Vec<(String, bool)> {
            let mut terms: Vec<(String, bool)> =
                forms(word).into_iter().map(|f| (f, false)).collect();
            // A prefix of one or two characters would match most of the index. A prefix
            // covers every form that starts with the word: those are left out of the query.
            if last && word.chars().count() >= MIN_PREFIX_CHARS {
                terms.retain(|(form, _)| !form.starts_with(word));
                terms.push((word.to_owned(), true));
            }
            terms
        };
        let groups: Vec<Vec<(String, bool)>> = words
            .iter()
            .enumerate()
            .map(|(i, w)| alternatives(w, i + 1 == words.len()))
            .collect();
        let nothing_more = groups
            .iter()
            .zip(words)
            .all(|(terms, word)| terms.len() == 1 && terms[0] == (word.clone(), false));
        if tier == Tier::Forms && nothing_more {
            return None;
        }
        Some(match kind {
            BackendKind::Sqlite => {
                // A quoted string is one FTS5 term, whatever it holds; quotes double inside.
                let quote = |w: &str| format!("\"{}\"", w.replace('"', "\"\""));
                let exact: Vec<String> = words.iter().map(|w| quote(w)).collect();
                let join = format!(" JOIN {fts} ON {fts}.rowid = {table}.rowid");
                match tier {
                    Tier::Exact => {
                        let p = q.bind(exact.join(" "));
                        let condition = format!("{fts} MATCH {p}");
                        q.and(condition.clone());
                        Match {
                            join,
                            condition,
                            rank: format!("-bm25({fts})"),
                        }
                    }
                    Tier::Forms => {
                        let p = q.bind(expression(&groups, &quote, "*", " OR ", " AND "));
                        let e = q.bind(exact.join(" "));
                        let condition = format!(
                            "{fts} MATCH {p} AND {table}.rowid NOT IN \
                             (SELECT rowid FROM {fts} WHERE {fts} MATCH {e})"
                        );
                        q.and(condition.clone());
                        Match {
                            join,
                            condition,
                            rank: "CAST(0.0 AS DOUBLE PRECISION)".to_owned(),
                        }
                    }
                }
            }
            BackendKind::Postgres => {
                // Words are letters and digits only: nothing in them is tsquery syntax.
                let e = q.bind(words.join(" & "));
                let exact = format!("to_tsquery('simple', CAST({e} AS TEXT))");
                match tier {
                    Tier::Exact => {
                        let condition = format!("{table}.search_tsv @@ {exact}");
                        q.and(condition.clone());
                        Match {
                            join: String::new(),
                            condition,
                            rank: format!("ts_rank({table}.rank_tsv, {exact})"),
                        }
                    }
                    Tier::Forms => {
                        let p = q.bind(expression(&groups, &|t| t.to_owned(), ":*", " | ", " & "));
                        // The rows of the exact tier are left out through the index, not by
                        // reading each candidate's vector.
                        let condition = format!(
                            "{table}.search_tsv @@ to_tsquery('simple', CAST({p} AS TEXT)) \
                             AND {table}.ctid NOT IN (SELECT ctid FROM {table} \
                             WHERE search_tsv @@ {exact})"
                        );
                        q.and(condition.clone());
                        Match {
                            join: String::new(),
                            condition,
                            rank: "CAST(0.0 AS DOUBLE PRECISION)".to_owned(),
                        }
                    }
                }
            }
        })
    }
}

/// A query of `groups` (each word's alternatives, a prefix marked) in a backend's syntax:
/// each term written by `term`, a prefix followed by `prefix`, the alternatives joined by
/// `or` in parentheses and the groups by `and`.
fn expression(
    groups: &[Vec<(String, bool)>],
    term: &dyn Fn(&str) -> String,
    prefix: &str,
    or: &str,
    and: &str,
) -> String {
    let groups: Vec<String> = groups
        .iter()
        .map(|terms| {
            let terms: Vec<String> = terms
                .iter()
                .map(|(t, is_prefix)| {
                    format!("{}{}", term(t), if *is_prefix { prefix } else { "" })
                })
                .collect();
            format!("({})", terms.join(or))
        })
        .collect();
    groups.join(and)
}

/// The two tiers of a search: the rows holding every word as typed, ranked by the backend;
/// then the rows that match only through a form or a prefix, all of one rank (a caller orders
/// them by its unique key, the same on both backends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Exact,
    Forms,
}

/// The rows of a tiered search from position `from`, at most `want` of them: `run(tier,
/// limit, offset)` runs one tier's query. The exact tier is read first, and the forms tier
/// only when the exact one does not reach `from + want` (so a word typed as the text has it
/// costs one query, as before forms were matched).
pub fn tiered<T, E>(
    from: usize,
    want: usize,
    mut run: impl FnMut(Tier, usize, usize) -> Result<Vec<T>, E>,
) -> Result<Vec<T>, E> {
    let exact = run(Tier::Exact, from + want, 0)?;
    let found = exact.len();
    let mut out: Vec<T> = exact.into_iter().skip(from).collect();
    if found >= from + want {
        return Ok(out);
    }
    let skip = from.saturating_sub(found);
    let need = want - out.len();
    out.extend(run(Tier::Forms, need, skip)?);
    Ok(out)
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
    // One lower-case copy, searched with the standard substring search for each word.
    let folded: String = lower.iter().collect();
    let first = words
        .iter()
        .filter_map(|w| folded.find(w.as_str()))
        .min()
        .map_or(0, |at| folded[..at].chars().count());
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
            let m = index
                .matching(kind, &mut q, &words, Tier::Forms)
                .expect("words");
            assert!(
                !m.condition.contains("near") && !m.rank.contains('"'),
                "{m:?}"
            );
            assert_eq!(q.params().len(), 2, "{kind:?}: the forms and the words");
        }
        let mut q = Query::new();
        assert!(index
            .matching(BackendKind::Sqlite, &mut q, &[], Tier::Exact)
            .is_none());
        // "ab" has no forms and is too short for a prefix: no second tier.
        let short = vec!["ab".to_owned()];
        assert!(index
            .matching(BackendKind::Sqlite, &mut q, &short, Tier::Forms)
            .is_none());
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
    fn the_tiers_page_as_one_list() {
        // Exact rows e0..e4, then form rows f0..f9: every position reads the same row.
        let exact: Vec<String> = (0..5).map(|i| format!("e{i}")).collect();
        let formed: Vec<String> = (0..10).map(|i| format!("f{i}")).collect();
        let whole: Vec<String> = exact.iter().chain(&formed).cloned().collect();
        for from in 0..16 {
            for want in 1..6 {
                let mut asked = Vec::new();
                let got: Vec<String> = tiered(from, want, |tier, limit, offset| {
                    asked.push(tier);
                    let rows = match tier {
                        Tier::Exact => &exact,
                        Tier::Forms => &formed,
                    };
                    Ok::<_, ()>(rows.iter().skip(offset).take(limit).cloned().collect())
                })
                .expect("rows");
                let expected: Vec<String> = whole.iter().skip(from).take(want).cloned().collect();
                assert_eq!(got, expected, "from {from} want {want}");
                if from + want <= exact.len() {
                    assert_eq!(asked, [Tier::Exact], "the forms tier is not read");
                }
            }
        }
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
