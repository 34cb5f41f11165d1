//! Filtered SQL for both backends, the same for every store-backed group: a [`Query`] collects
//! `WHERE` conditions and numbers their parameters, so a filter that was not given is left out
//! of the statement instead of being written as `$n IS NULL OR …` (which PostgreSQL cannot
//! type without a cast). Caller text is only ever bound, never written into the SQL.

use crate::{BackendKind, Param, Tx};

/// `COLLATE "C"` on PostgreSQL, nothing on SQLite (whose default, BINARY, is already
/// byte-wise): put it after a text sort key so both backends order, and page, the same way
/// whatever collation the PostgreSQL database was created with.
pub fn bytewise(tx: &Tx<'_>) -> &'static str {
    match tx.kind() {
        BackendKind::Postgres => " COLLATE \"C\"",
        BackendKind::Sqlite => "",
    }
}

/// The conditions and parameters of one statement.
#[derive(Debug, Default, Clone)]
pub struct Query {
    conditions: Vec<String>,
    params: Vec<Param>,
}

impl Query {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a parameter; its placeholder (`$n`) to write into the SQL.
    pub fn bind(&mut self, value: impl Into<Param>) -> String {
        self.params.push(value.into());
        format!("${}", self.params.len())
    }

    /// Adds a condition (joined with `AND`).
    pub fn and(&mut self, condition: impl Into<String>) {
        self.conditions.push(condition.into());
    }

    /// `column = value`.
    pub fn eq(&mut self, column: &str, value: impl Into<Param>) {
        let p = self.bind(value);
        self.and(format!("{column} = {p}"));
    }

    /// A case-insensitive substring match of `text`, when one is given, on any of `columns`
    /// (SQL expressions): lowercasing here and `LOWER(column)` in SQL agree on both backends
    /// (PostgreSQL's `LIKE` is case-sensitive, SQLite's is not).
    pub fn contains(&mut self, columns: &[&str], text: Option<&str>) {
        let Some(text) = text else { return };
        let p = self.bind(contains_pattern(&text.to_lowercase()));
        let any: Vec<String> = columns
            .iter()
            .map(|c| format!("LOWER({c}) LIKE CAST({p} AS TEXT) ESCAPE '\\'"))
            .collect();
        self.and(format!("({})", any.join(" OR ")));
    }

    /// `(a, b, …)` placeholders for an `IN` list of `values`.
    pub fn in_list(&mut self, values: &[String]) -> String {
        let marks: Vec<String> = values.iter().map(|v| self.bind(v.as_str())).collect();
        format!("({})", marks.join(", "))
    }

    /// `column = value`, when a value is given.
    pub fn eq_opt(&mut self, column: &str, value: Option<&str>) {
        if let Some(value) = value {
            let p = self.bind(value);
            self.and(format!("{column} = {p}"));
        }
    }

    /// `column` starts with `prefix` (exactly, byte for byte), when one is given. `substr` and
    /// equality mean the same on both backends, unlike `LIKE` (case) or a range (collation).
    pub fn prefix_opt(&mut self, column: &str, prefix: Option<&str>) {
        if let Some(prefix) = prefix.filter(|p| !p.is_empty()) {
            let n = prefix.chars().count();
            let p = self.bind(prefix);
            self.and(format!("substr({column}, 1, {n}) = {p}"));
        }
    }

    /// ` WHERE a AND b …`, or nothing without conditions.
    pub fn where_clause(&self) -> String {
        if self.conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.conditions.join(" AND "))
        }
    }

    /// The parameters, in placeholder order.
    pub fn params(&self) -> &[Param] {
        &self.params
    }
}

/// `text` as a `LIKE` pattern matching it anywhere, with `\` as the escape character (write
/// `LIKE $n ESCAPE '\'`), so `%` and `_` in a search match themselves.
pub fn contains_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_and_placeholders_follow_each_other() {
        let mut q = Query::new();
        assert_eq!(q.where_clause(), "");
        q.eq_opt("host", None);
        q.eq_opt("agent", Some("codex"));
        q.prefix_opt("scope", Some("project:"));
        q.prefix_opt("key", Some(""));
        let p = q.bind(7);
        q.and(format!("version > {p}"));
        assert_eq!(
            q.where_clause(),
            " WHERE agent = $1 AND substr(scope, 1, 8) = $2 AND version > $3"
        );
        assert_eq!(
            q.params(),
            [
                Param::Text("codex".into()),
                Param::Text("project:".into()),
                Param::Int(7)
            ]
        );
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(contains_pattern("a%b_c\\"), "%a\\%b\\_c\\\\%");
    }

    #[test]
    fn substring_matches_fold_case_and_share_one_placeholder() {
        let mut q = Query::new();
        q.eq("key", "x");
        q.contains(&["key", "name"], Some("Co%re"));
        assert_eq!(
            q.where_clause(),
            " WHERE key = $1 AND (LOWER(key) LIKE CAST($2 AS TEXT) ESCAPE '\\' OR \
             LOWER(name) LIKE CAST($2 AS TEXT) ESCAPE '\\')"
        );
        assert_eq!(q.params()[1], Param::Text("%co\\%re%".into()));
        assert_eq!(q.in_list(&["a".into(), "b".into()]), "($3, $4)");
    }
}
