//! Counts kept on write: a [`Tally`] is a small table holding, for each combination of some
//! text columns of a source table, how many rows have it and the sums of some number columns,
//! kept by triggers on every insert, update and delete of the source. A rollup over a large
//! group of rows then reads a few tally rows instead of scanning the group.
//!
//! Invariants:
//! - After every statement, for each combination of the `by` columns (NULL kept as `''`), the
//!   tally row's `n` is the number of source rows with it that satisfy `when`, and each sum
//!   column is the sum of theirs (NULL adding 0). Rows whose `n` falls to 0 are removed.
//! - The triggers are the only writers, so no write path of the source (a plugin's own
//!   statements, a foreign key's `SET NULL`, a cascade) can leave a tally behind.
//! - Sums are kept by adding and subtracting floating-point values, so a sum may differ from
//!   a fresh one in its last bits; readers round.

use crate::BackendKind;

/// A tally of one table, kept by triggers.
#[derive(Debug, Clone, Copy)]
pub struct Tally {
    /// The source table.
    pub table: &'static str,
    /// The tally table the migration creates.
    pub into: &'static str,
    /// Text columns of the source counted by (its primary key, in this order).
    pub by: &'static [&'static str],
    /// Number columns of the source summed, each under its own name.
    pub sum: &'static [&'static str],
    /// A condition for a source row to be counted, naming its columns `{row}.column`.
    pub when: &'static str,
}

impl Tally {
    /// `old` or `new` row's key values, `''` for NULL.
    fn key_of(&self, row: &str) -> Vec<String> {
        self.by
            .iter()
            .map(|c| format!("COALESCE({row}.{c}, '')"))
            .collect()
    }

    /// `when` about the `old` or `new` row (or the table's).
    fn when_of(&self, row: &str) -> String {
        self.when.replace("{row}", row)
    }

    /// The statement that counts `row` (`old` or `new`) in, with `sign` 1 or -1.
    fn add(&self, row: &str, sign: i64) -> String {
        let (into, key) = (self.into, self.by.join(", "));
        let sums: Vec<String> = self
            .sum
            .iter()
            .map(|c| format!("{sign} * COALESCE({row}.{c}, 0)"))
            .collect();
        let mut columns = vec!["n".to_owned()];
        columns.extend(self.sum.iter().map(|c| (*c).to_owned()));
        let updates: Vec<String> = columns
            .iter()
            .map(|c| format!("{c} = {into}.{c} + excluded.{c}"))
            .collect();
        format!(
            "INSERT INTO {into} ({key}, {}) VALUES ({}, {sign}{}) \
             ON CONFLICT ({key}) DO UPDATE SET {}",
            columns.join(", "),
            self.key_of(row).join(", "),
            sums.iter().map(|s| format!(", {s}")).collect::<String>(),
            updates.join(", ")
        )
    }

    /// The statement that removes the tally row of `old` once it counts nothing.
    fn prune(&self) -> String {
        let matches: Vec<String> = self
            .by
            .iter()
            .zip(self.key_of("old"))
            .map(|(c, v)| format!("{c} = {v}"))
            .collect();
        format!(
            "DELETE FROM {} WHERE {} AND n = 0",
            self.into,
            matches.join(" AND ")
        )
    }

    /// The statements that create the tally table, count the rows already there and install
    /// the triggers, for `kind`. Run them in a migration after the source table exists
    /// (`Migration::tallies`).
    pub fn ddl(&self, kind: BackendKind) -> String {
        let (table, into) = (self.table, self.into);
        let key = self.by.join(", ");
        let mut columns: Vec<String> = self
            .by
            .iter()
            .map(|c| format!("{c} TEXT NOT NULL"))
            .collect();
        columns.push("n BIGINT NOT NULL".to_owned());
        columns.extend(
            self.sum
                .iter()
                .map(|c| format!("{c} DOUBLE PRECISION NOT NULL")),
        );
        let sums: Vec<String> = self
            .sum
            .iter()
            .map(|c| format!(", COALESCE(SUM({c}), 0)"))
            .collect();
        let grouped: Vec<String> = self
            .by
            .iter()
            .map(|c| format!("COALESCE({c}, '')"))
            .collect();
        let names: Vec<String> = self.sum.iter().map(|c| format!(", {c}")).collect();
        let create = format!(
            "CREATE TABLE {into} ({}, PRIMARY KEY ({key}));
             INSERT INTO {into} ({key}, n{}) SELECT {}, COUNT(*){} FROM {table} WHERE {} \
             GROUP BY {};",
            columns.join(", "),
            names.concat(),
            grouped.join(", "),
            sums.concat(),
            self.when_of(table),
            grouped.join(", ")
        );
        let watched: Vec<&str> = self.by.iter().chain(self.sum).copied().collect();
        let watched = watched.join(", ");
        let (out, back, prune) = (self.add("old", -1), self.add("new", 1), self.prune());
        let (when_old, when_new) = (self.when_of("old"), self.when_of("new"));
        match kind {
            BackendKind::Sqlite => format!(
                "{create}
                 CREATE TRIGGER {into}_insert AFTER INSERT ON {table} WHEN {when_new} BEGIN
                     {back};
                 END;
                 CREATE TRIGGER {into}_delete AFTER DELETE ON {table} WHEN {when_old} BEGIN
                     {out};
                     {prune};
                 END;
                 CREATE TRIGGER {into}_update_old AFTER UPDATE OF {watched} ON {table}
                 WHEN {when_old} BEGIN
                     {out};
                     {prune};
                 END;
                 CREATE TRIGGER {into}_update_new AFTER UPDATE OF {watched} ON {table}
                 WHEN {when_new} BEGIN
                     {back};
                 END;"
            ),
            BackendKind::Postgres => format!(
                "{create}
                 CREATE FUNCTION {into}_keep() RETURNS trigger LANGUAGE plpgsql AS $tally$
                 BEGIN
                     IF TG_OP IN ('UPDATE', 'DELETE') AND ({when_old}) THEN
                         {out};
                         {prune};
                     END IF;
                     IF TG_OP IN ('INSERT', 'UPDATE') AND ({when_new}) THEN
                         {back};
                     END IF;
                     RETURN NULL;
                 END
                 $tally$;
                 CREATE TRIGGER {into}_keep AFTER INSERT OR DELETE OR UPDATE OF {watched}
                     ON {table} FOR EACH ROW EXECUTE FUNCTION {into}_keep();"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Tally = Tally {
        table: "t",
        into: "t_tally",
        by: &["project_id", "status"],
        sum: &["estimate"],
        when: "{row}.project_id IS NOT NULL",
    };

    #[test]
    fn a_row_counts_in_and_out_by_its_key() {
        assert_eq!(
            T.add("new", 1),
            "INSERT INTO t_tally (project_id, status, n, estimate) VALUES \
             (COALESCE(new.project_id, ''), COALESCE(new.status, ''), 1, 1 * \
             COALESCE(new.estimate, 0)) ON CONFLICT (project_id, status) DO UPDATE SET \
             n = t_tally.n + excluded.n, estimate = t_tally.estimate + excluded.estimate"
        );
        assert_eq!(T.when_of("old"), "old.project_id IS NOT NULL");
    }
}
