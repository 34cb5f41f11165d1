//! Values in and out: `Param` (bound to `$n`) and `Row` (one result row, backend-neutral).
//!
//! Invariants:
//! - A row's values are decoded when the query runs; a `Row` holds no connection.
//! - Booleans: PostgreSQL `boolean` arrives as `Param::Bool`, SQLite stores 0/1 and it arrives as
//!   `Param::Int`; `get_bool` accepts both (and only 0/1), so one schema (`BOOLEAN` columns, which
//!   SQLite stores as INTEGER 0/1) serves both backends.
//! - `get_f64` also accepts an integer (widening); every other mismatch, and NULL in a non-`opt`
//!   getter, is a `StoreError::Usage` naming the column, what was asked and what was found.

use std::sync::Arc;

use crate::StoreError;

/// A value bound to a `$n` placeholder, or one cell of a result row.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    /// `boolean` on PostgreSQL, INTEGER 0/1 on SQLite.
    Bool(bool),
}

impl Param {
    fn kind(&self) -> &'static str {
        match self {
            Self::Null => "NULL",
            Self::Int(_) => "integer",
            Self::Real(_) => "real",
            Self::Text(_) => "text",
            Self::Bool(_) => "boolean",
        }
    }
}

impl From<i64> for Param {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}
impl From<i32> for Param {
    fn from(v: i32) -> Self {
        Self::Int(i64::from(v))
    }
}
impl From<f64> for Param {
    fn from(v: f64) -> Self {
        Self::Real(v)
    }
}
impl From<bool> for Param {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}
impl From<&str> for Param {
    fn from(v: &str) -> Self {
        Self::Text(v.to_owned())
    }
}
impl From<String> for Param {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}
impl<T: Into<Param>> From<Option<T>> for Param {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

/// A column position (`0`, `1`, …) or name (`"id"`).
pub trait ColumnIndex {
    /// The position in `columns`, or a `Usage` error.
    fn position(&self, columns: &[String]) -> Result<usize, StoreError>;
}

impl ColumnIndex for usize {
    fn position(&self, columns: &[String]) -> Result<usize, StoreError> {
        if *self < columns.len() {
            Ok(*self)
        } else {
            Err(StoreError::Usage(format!(
                "column {self} does not exist: the row has {} columns",
                columns.len()
            )))
        }
    }
}

impl ColumnIndex for &str {
    fn position(&self, columns: &[String]) -> Result<usize, StoreError> {
        columns.iter().position(|c| c == self).ok_or_else(|| {
            StoreError::Usage(format!(
                "no column named \"{self}\" (columns: {})",
                columns.join(", ")
            ))
        })
    }
}

/// One result row: column names and decoded values.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Param>,
}

macro_rules! getters {
    ($get:ident, $get_opt:ident, $ty:ty, $want:literal, $conv:expr) => {
        #[doc = concat!("The column as ", $want, "; NULL or another type is an error.")]
        pub fn $get(&self, index: impl ColumnIndex) -> Result<$ty, StoreError> {
            let at = index.position(&self.columns)?;
            match self.$get_opt(at)? {
                Some(v) => Ok(v),
                None => Err(StoreError::Usage(format!(
                    "{}: expected {}, found NULL (use {})",
                    self.describe(at),
                    $want,
                    stringify!($get_opt)
                ))),
            }
        }

        #[doc = concat!("The column as ", $want, ", or `None` for NULL; another type is an error.")]
        pub fn $get_opt(&self, index: impl ColumnIndex) -> Result<Option<$ty>, StoreError> {
            let at = index.position(&self.columns)?;
            let value = &self.values[at];
            if *value == Param::Null {
                return Ok(None);
            }
            let conv: fn(&Param) -> Option<$ty> = $conv;
            conv(value).map(Some).ok_or_else(|| {
                StoreError::Usage(format!(
                    "{}: expected {}, found {}",
                    self.describe(at),
                    $want,
                    value.kind()
                ))
            })
        }
    };
}

impl Row {
    pub(crate) fn new(columns: Arc<[String]>, values: Vec<Param>) -> Self {
        Self { columns, values }
    }

    /// Column names, in order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The number of columns.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The raw value of a column.
    pub fn get(&self, index: impl ColumnIndex) -> Result<&Param, StoreError> {
        let at = index.position(&self.columns)?;
        Ok(&self.values[at])
    }

    fn describe(&self, at: usize) -> String {
        format!("column {at} (\"{}\")", self.columns[at])
    }

    getters!(get_i64, get_opt_i64, i64, "integer", |v| match v {
        Param::Int(i) => Some(*i),
        _ => None,
    });
    getters!(get_f64, get_opt_f64, f64, "real", |v| match v {
        Param::Real(f) => Some(*f),
        Param::Int(i) => Some(*i as f64),
        _ => None,
    });
    getters!(get_text, get_opt_text, String, "text", |v| match v {
        Param::Text(s) => Some(s.clone()),
        _ => None,
    });
    getters!(get_bool, get_opt_bool, bool, "boolean", |v| match v {
        Param::Bool(b) => Some(*b),
        Param::Int(0) => Some(false),
        Param::Int(1) => Some(true),
        _ => None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        Row::new(
            Arc::from(vec!["id".to_owned(), "n".to_owned(), "flag".to_owned()]),
            vec![Param::Text("a".into()), Param::Null, Param::Int(1)],
        )
    }

    #[test]
    fn by_index_and_by_name() {
        let row = row();
        assert_eq!(row.get_text(0).expect("text"), "a");
        assert_eq!(row.get_text("id").expect("text"), "a");
        assert_eq!(row.get_opt_i64("n").expect("null"), None);
        assert!(row.get_bool("flag").expect("0/1 is a boolean"));
        assert_eq!(row.len(), 3);
    }

    #[test]
    fn mismatches_are_clear() {
        let row = row();
        let err = row.get_i64("id").expect_err("text is not an integer");
        assert_eq!(
            err.to_string(),
            "column 0 (\"id\"): expected integer, found text"
        );
        let err = row.get_i64(1).expect_err("NULL");
        assert!(err.to_string().contains("found NULL"), "{err}");
        let err = row.get_text("missing").expect_err("no such column");
        assert!(err.to_string().contains("id, n, flag"), "{err}");
        let err = row.get_text(7).expect_err("out of range");
        assert!(err.to_string().contains("3 columns"), "{err}");
    }

    #[test]
    fn options_convert() {
        assert_eq!(Param::from(None::<i64>), Param::Null);
        assert_eq!(Param::from(Some("x")), Param::Text("x".into()));
        assert_eq!(Param::from(true), Param::Bool(true));
    }
}
