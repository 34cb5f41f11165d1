//! `sql_query`: SQL against PostgreSQL through named connections from the host's configuration
//! (`--sql NAME=URL` / `COREMCP_SQL`), so credentials never pass through tool arguments.
//!
//! Invariants:
//! - Every statement runs in a transaction that is `READ ONLY` unless the caller passes
//!   `read_only: false`, with `statement_timeout` set inside it; a client cancel or the call's
//!   deadline cancels the statement on the server. A read-only transaction is rolled back,
//!   never committed, so what PostgreSQL lets one do anyway (create a large object) is not
//!   kept.
//! - At most `max_rows` rows are fetched from the server (a portal), never the whole result.
//! - Parameters are sent in text format, so PostgreSQL parses them for whatever type the
//!   statement infers; values come back as JSON (numeric as exact strings).
//! - Errors carry PostgreSQL's message, SQLSTATE and position; connection URLs are never shown.
//! - Nothing runs on a connection whose role can act outside the database — a superuser (or a
//!   member of one), a member of `pg_execute_server_program`, `pg_write_server_files` or
//!   `pg_read_server_files`, or a database with `dblink` or `postgres_fdw`, which open
//!   connections outside the transaction — unless that connection is allowed by name
//!   (`--sql-allow-privileged`): `READ ONLY` cannot stop `COPY … TO PROGRAM`, server files or
//!   another connection's commit. Checked on every connection, before the statement.

use std::error::Error as StdError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use coremcp_plugin_sdk::args::{ArgError, ArgType};
use coremcp_plugin_sdk::{self as sdk, codes, typed, Args, Ctx, Hints, Tool, ToolError};
use coremcp_store::pg_wire::{
    date, describe_db_error, error_chain, fixed, hex, time_of_day, timestamp, uuid, TextParam,
};
use postgres::error::SqlState;
use postgres::types::{FromSql, Kind, ToSql, Type};
use postgres::{Client, NoTls};
use serde_json::{json, Map, Value};

/// The host configuration key: a JSON object of connection name → URL.
const CONNECTIONS_KEY: &str = "sql.connections";
/// The host configuration key: a JSON array of the connections allowed a privileged role.
const ALLOWED_KEY: &str = "sql.allow_privileged";
const DEFAULT_MAX_ROWS: usize = 200;
const DEFAULT_TIMEOUT_S: u64 = 30;
/// How long connecting may take, at most.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub const TOOL: Tool = Tool::typed("sql_query", &typed(sql_query)).hints(Hints::DESTRUCTIVE);

/// Run one SQL statement on PostgreSQL, read-only by default; rows as JSON with column types.
/// Connections are configured locally.
#[derive(Debug, Args)]
pub struct Query {
    /// one statement; $1..$n params
    sql: String,
    /// values for $1..$n
    params: Vec<SqlValue>,
    /// configured connection (default default)
    database: Option<String>,
    /// default true
    #[arg(default = true)]
    read_only: bool,
    /// default 200
    #[arg(min = 1, max = 5000, default = DEFAULT_MAX_ROWS)]
    max_rows: usize,
    /// cancel after, s
    #[arg(min = 1, max = 600, default = DEFAULT_TIMEOUT_S)]
    timeout_s: u64,
}

/// One `$n` value: a string, number, boolean or `null` (SQL NULL).
#[derive(Debug, Clone)]
pub struct SqlValue(Value);

impl ArgType for SqlValue {
    fn schema() -> Value {
        json!({"type": ["string", "number", "boolean", "null"]})
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        match value {
            Value::Array(_) | Value::Object(_) => Err(ArgError::new(
                at,
                format!("expected a string, number, boolean or null, got {value}"),
            )),
            scalar => Ok(Self(scalar)),
        }
    }
}

fn sql_query(ctx: &Ctx<'_>, args: Query) -> Result<Value, ToolError> {
    let sql = args.sql.as_str();
    let name = args.database.as_deref().unwrap_or("default");
    let (read_only, max_rows) = (args.read_only, args.max_rows);
    let asked = Duration::from_secs(args.timeout_s);
    let timeout = asked.min(ctx.remaining()).max(Duration::from_millis(1));
    let params: Vec<TextParam> = args.params.iter().map(|p| text_param(&p.0)).collect();
    let url = connection_url(name)?;
    let started = Instant::now();
    let mut client = connect(name, &url, timeout.min(CONNECT_TIMEOUT))?;
    if !allowed_privileged(name) {
        check_role(&mut client, name)?;
    }
    let token = client.cancel_token();
    let outcome = with_cancel(token, ctx.raw().cancelled, || {
        run(&mut client, sql, &params, read_only, max_rows, timeout)
    });
    let mut result = outcome.map_err(|e| sql_error(e, timeout, read_only))?;
    fit_rows(&mut result);
    if let Value::Object(map) = &mut result {
        map.insert("database".into(), json!(name));
        map.insert("read_only".into(), json!(read_only));
        map.insert(
            "elapsed_ms".into(),
            json!(started.elapsed().as_millis() as u64),
        );
    }
    Ok(result)
}

/// The URL of a named connection, from the host's configuration.
fn connection_url(name: &str) -> Result<String, ToolError> {
    let configured: Map<String, Value> = sdk::config(CONNECTIONS_KEY)
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    match configured.get(name).and_then(Value::as_str) {
        Some(url) => Ok(url.to_owned()),
        None if configured.is_empty() => Err(ToolError::new(
            codes::NOT_CONFIGURED,
            "no PostgreSQL connection is configured: start Core MCP with --sql NAME=URL or set \
             COREMCP_SQL (credentials stay in that configuration, never in arguments)",
        )),
        None => {
            let names: Vec<&str> = configured.keys().map(String::as_str).collect();
            Err(ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!(
                    "argument \"database\": no connection named \"{name}\" (configured: {})",
                    names.join(", ")
                ),
            ))
        }
    }
}

fn connect(name: &str, url: &str, timeout: Duration) -> Result<Client, ToolError> {
    let mut config: postgres::Config = url.parse().map_err(|e| {
        ToolError::new(
            codes::NOT_CONFIGURED,
            format!("connection \"{name}\" is not a valid PostgreSQL URL: {e}"),
        )
    })?;
    config.connect_timeout(timeout);
    config.application_name("coremcp sql_query");
    config.connect(NoTls).map_err(|e| {
        // The error may quote the host but never the URL (which may hold a password).
        ToolError::new(
            codes::FAILED,
            format!("cannot connect to \"{name}\": {}", error_chain(&e)),
        )
    })
}

/// Whether connection `name` may log in as a privileged role (`--sql-allow-privileged`).
fn allowed_privileged(name: &str) -> bool {
    sdk::config(ALLOWED_KEY)
        .and_then(|text| serde_json::from_str::<Vec<String>>(&text).ok())
        .is_some_and(|names| names.iter().any(|n| n == name))
}

/// What the role of a connection can do beyond its own database and transaction, from one
/// round trip: `(role, superuser, [powers…], [extensions…])`.
const ROLE_CHECK: &str = "SELECT current_user, \
    EXISTS (SELECT 1 FROM pg_catalog.pg_roles s \
            WHERE s.rolsuper AND pg_catalog.pg_has_role(current_user, s.oid, 'MEMBER')), \
    pg_catalog.pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER'), \
    pg_catalog.pg_has_role(current_user, 'pg_write_server_files', 'MEMBER'), \
    pg_catalog.pg_has_role(current_user, 'pg_read_server_files', 'MEMBER'), \
    coalesce((SELECT string_agg(extname::text, ',' ORDER BY extname) FROM pg_catalog.pg_extension \
              WHERE extname IN ('dblink', 'postgres_fdw')), '')";

/// Refuses a connection whose role can act outside the database or outside the transaction.
fn check_role(client: &mut Client, name: &str) -> Result<(), ToolError> {
    let failed = |why: String| {
        ToolError::new(
            codes::FAILED,
            format!("cannot check the role of connection \"{name}\": {why}"),
        )
    };
    let messages = client
        .simple_query(ROLE_CHECK)
        .map_err(|e| failed(error_chain(&e)))?;
    let row = messages
        .iter()
        .find_map(|m| match m {
            postgres::SimpleQueryMessage::Row(row) => Some(row),
            _ => None,
        })
        .ok_or_else(|| failed("no answer".to_owned()))?;
    let field = |i: usize| row.get(i).unwrap_or_default();
    let role = field(0);
    let mut reasons: Vec<String> = Vec::new();
    if field(1) == "t" {
        reasons.push(
            "is a superuser (or a member of one): it can run programs on the database server \
             (COPY … TO PROGRAM), write and read its files, and keep large objects"
                .to_owned(),
        );
    } else {
        let powers = [
            (
                2,
                "pg_execute_server_program",
                "run programs on the database server",
            ),
            (
                3,
                "pg_write_server_files",
                "write files on the database server",
            ),
            (
                4,
                "pg_read_server_files",
                "read files on the database server",
            ),
        ];
        for (i, power, what) in powers {
            if field(i) == "t" {
                reasons.push(format!("is a member of {power}: it can {what}"));
            }
        }
    }
    for extension in field(5).split(',').filter(|e| !e.is_empty()) {
        reasons.push(format!(
            "can use the {extension} extension installed in this database, which opens \
             connections of its own, outside the transaction"
        ));
    }
    if reasons.is_empty() {
        return Ok(());
    }
    Err(ToolError::new(
        codes::NOT_CONFIGURED,
        format!(
            "connection \"{name}\" logs in as role \"{role}\", which {}; even a read-only \
             transaction could then change things, so sql_query does not use it. Give the \
             connection a role without these powers, or allow it with --sql-allow-privileged \
             {name} (COREMCP_SQL_ALLOW_PRIVILEGED)",
            reasons.join("; and ")
        ),
    ))
}

/// Runs `f` while a watcher cancels the server-side statement if `cancelled` is set.
fn with_cancel<T>(
    token: postgres::CancelToken,
    cancelled: &AtomicBool,
    f: impl FnOnce() -> T,
) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if cancelled.load(Ordering::Relaxed) {
                    let _ = token.cancel_query(NoTls);
                    return;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
        });
        let out = f();
        done.store(true, Ordering::Relaxed);
        out
    })
}

fn run(
    client: &mut Client,
    sql: &str,
    params: &[TextParam],
    read_only: bool,
    max_rows: usize,
    timeout: Duration,
) -> Result<Value, postgres::Error> {
    let mut tx = if read_only {
        client.build_transaction().read_only(true).start()?
    } else {
        client.transaction()?
    };
    tx.batch_execute(&format!(
        "SET LOCAL statement_timeout = {}",
        timeout.as_millis().max(1)
    ))?;
    let statement = tx.prepare(sql)?;
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
    let columns: Vec<Value> = statement
        .columns()
        .iter()
        .map(|c| json!({"name": c.name(), "type": c.type_().name()}))
        .collect();
    let result = if statement.columns().is_empty() {
        let affected = tx.execute(&statement, &refs)?;
        json!({"columns": [], "rows": [], "row_count": 0, "rows_affected": affected, "truncated": false})
    } else {
        let portal = tx.bind(&statement, &refs)?;
        let fetched = tx.query_portal(&portal, (max_rows + 1) as i32)?;
        let truncated = fetched.len() > max_rows;
        let keys = unique_keys(statement.columns().iter().map(|c| c.name()));
        let rows: Vec<Value> = fetched
            .iter()
            .take(max_rows)
            .map(|row| {
                let mut object = Map::new();
                for (i, key) in keys.iter().enumerate() {
                    let cell: Cell = row.try_get(i).unwrap_or(Cell(Value::Null));
                    object.insert(key.clone(), cell.0);
                }
                Value::Object(object)
            })
            .collect();
        json!({"columns": columns, "rows": rows, "row_count": rows.len(), "truncated": truncated})
    };
    if read_only {
        tx.rollback()?;
    } else {
        tx.commit()?;
    }
    Ok(result)
}

/// The longest a text cell is shown, whatever the number of columns.
const MAX_CELL_CHARS: usize = 4_000;

/// Fits a result to the answer: a text cell longer than its share of the budget is cut (and
/// listed in `cells_truncated` with its row, column and `total_chars`), then whole rows are
/// left out from the end (`truncated`, with `rows_omitted` and a `hint` on paging with the
/// query's own `LIMIT`/`OFFSET`). `row_count` counts the rows shown.
fn fit_rows(result: &mut Value) {
    use coremcp_plugin_sdk::budget::{chars, result_budget};
    let columns = result["columns"].as_array().map_or(0, Vec::len).max(1);
    let cell_chars = (result_budget() / 2 / columns).clamp(200, MAX_CELL_CHARS);
    let mut cut_cells = Vec::new();
    for (i, row) in result["rows"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(object) = row.as_object_mut() else {
            continue;
        };
        for (key, cell) in object.iter_mut() {
            // A large JSON or array value is shown as its text, cut like any other.
            if (cell.is_array() || cell.is_object()) && chars(cell) > cell_chars {
                *cell = Value::String(cell.to_string());
            }
            let Some(text) = cell.as_str() else { continue };
            // Marks go to cells_truncated, never beside the cell: they could collide with a
            // column's name.
            if let Some((end, _)) = text.char_indices().nth(cell_chars) {
                let total = text.chars().count();
                *cell = Value::String(text[..end].to_owned());
                cut_cells.push(json!({"row": i, "column": key, "total_chars": total}));
            }
        }
    }
    let fetched = result["rows"].as_array().map_or(0, Vec::len);
    let mut size = chars(result) + 400;
    let mut kept = fetched;
    if let Some(rows) = result["rows"].as_array_mut() {
        while size > result_budget() && kept > 1 {
            kept -= 1;
            size -= chars(&rows[kept]) + 1;
        }
        rows.truncate(kept);
    }
    cut_cells.retain(|c| c["row"].as_u64().is_some_and(|r| (r as usize) < kept));
    // Cut cells are listed up to what fits; their count is always given.
    let cells = cut_cells.len();
    if cells > 0 {
        let listed: Vec<Value> = cut_cells.into_iter().take(50).collect();
        result["cells_truncated"] = Value::Array(listed);
        result["cells_truncated_count"] = json!(cells);
    }
    result["row_count"] = json!(kept);
    if kept < fetched {
        result["truncated"] = json!(true);
        result["rows_omitted"] = json!(fetched - kept);
        result["hint"] = json!(format!(
            "{kept} rows fit the answer: add ORDER BY and LIMIT {kept} OFFSET {kept} to the \
             query for the next ones (substr() reads a long value in pieces)"
        ));
    } else if cells > 0 {
        result["hint"] = json!(
            "long values are cut: select substr(column, start, length) to read one in pieces"
        );
    }
}

/// Column names as object keys; a repeated name gets `_2`, `_3`, ….
fn unique_keys<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for name in names {
        let mut key = name.to_owned();
        let mut n = 2;
        while keys.contains(&key) {
            key = format!("{name}_{n}");
            n += 1;
        }
        keys.push(key);
    }
    keys
}

fn sql_error(err: postgres::Error, timeout: Duration, read_only: bool) -> ToolError {
    let Some(db) = err.as_db_error() else {
        return ToolError::new(codes::FAILED, format!("PostgreSQL: {}", error_chain(&err)));
    };
    let code = db.code();
    let tool_code = if *code == SqlState::QUERY_CANCELED {
        codes::TIMEOUT
    } else if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
        codes::INVALID_ARGUMENTS
    } else {
        codes::FAILED
    };
    let mut message = format!("{} {}", db.severity(), describe_db_error(db));
    if *code == SqlState::QUERY_CANCELED {
        message.push_str(&format!(
            " (the statement ran past {} s, or the call was cancelled)",
            timeout.as_secs_f64()
        ));
    }
    if *code == SqlState::READ_ONLY_SQL_TRANSACTION && read_only {
        message.push_str(" (the transaction is read-only; pass read_only: false to write)");
    }
    ToolError::new(tool_code, message)
}

/// A JSON scalar as a text parameter (PostgreSQL parses it as the type it infers for `$n`).
fn text_param(value: &Value) -> TextParam {
    TextParam(match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    })
}

/// One result value as JSON, decoded from PostgreSQL's binary format by type.
struct Cell(Value);

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        decode(ty, raw).map(Cell)
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Cell(Value::Null))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

type DecodeResult = Result<Value, Box<dyn StdError + Sync + Send>>;

fn decode(ty: &Type, raw: &[u8]) -> DecodeResult {
    Ok(match *ty {
        Type::BOOL => json!(bool::from_sql(ty, raw)?),
        Type::INT2 => json!(i16::from_sql(ty, raw)?),
        Type::INT4 => json!(i32::from_sql(ty, raw)?),
        Type::INT8 => json!(i64::from_sql(ty, raw)?),
        Type::OID => json!(u32::from_sql(ty, raw)?),
        Type::FLOAT4 => float(f64::from(f32::from_sql(ty, raw)?)),
        Type::FLOAT8 => float(f64::from_sql(ty, raw)?),
        Type::CHAR => json!((i8::from_sql(ty, raw)? as u8 as char).to_string()),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            json!(String::from_sql(ty, raw)?)
        }
        Type::JSON | Type::JSONB => Value::from_sql(ty, raw)?,
        Type::BYTEA => json!(format!("\\x{}", hex(raw))),
        Type::UUID => json!(uuid(raw)?),
        Type::NUMERIC => json!(numeric(raw)?),
        Type::DATE => json!(date(i32::from_be_bytes(fixed(raw)?))),
        Type::TIMESTAMP => json!(timestamp(i64::from_be_bytes(fixed(raw)?), false)),
        Type::TIMESTAMPTZ => json!(timestamp(i64::from_be_bytes(fixed(raw)?), true)),
        Type::TIME => json!(time_of_day(i64::from_be_bytes(fixed(raw)?))),
        _ => match ty.kind() {
            Kind::Array(element) => array(element, raw)?,
            Kind::Enum(_) => json!(String::from_utf8_lossy(raw)),
            _ => json!(format!("<{} value: cast it to text to see it>", ty.name())),
        },
    })
}

fn float(value: f64) -> Value {
    if value.is_finite() {
        json!(value)
    } else {
        json!(value.to_string())
    }
}

/// Arrays of any decodable element type, flattened to nested JSON arrays (one dimension).
fn array(element: &Type, raw: &[u8]) -> DecodeResult {
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8], Box<dyn StdError + Sync + Send>> {
        let slice = raw.get(at..at + n).ok_or("truncated array")?;
        at += n;
        Ok(slice)
    };
    let dims = i32::from_be_bytes(fixed(take(4)?)?);
    let _has_nulls = take(4)?;
    let _oid = take(4)?;
    if dims == 0 {
        return Ok(json!([]));
    }
    let mut count = 1i64;
    for _ in 0..dims {
        count *= i64::from(i32::from_be_bytes(fixed(take(4)?)?));
        let _lower = take(4)?;
    }
    let mut items = Vec::new();
    for _ in 0..count {
        let len = i32::from_be_bytes(fixed(take(4)?)?);
        if len < 0 {
            items.push(Value::Null);
        } else {
            items.push(decode(element, take(len as usize)?)?);
        }
    }
    Ok(Value::Array(items))
}

/// NUMERIC's binary form (base-10000 digits) as an exact decimal string.
fn numeric(raw: &[u8]) -> Result<String, Box<dyn StdError + Sync + Send>> {
    let word = |i: usize| -> Result<u16, Box<dyn StdError + Sync + Send>> {
        Ok(u16::from_be_bytes(fixed(
            raw.get(i * 2..i * 2 + 2).ok_or("short numeric")?,
        )?))
    };
    let ndigits = word(0)? as usize;
    let weight = word(1)? as i16 as i32;
    let sign = word(2)?;
    let dscale = word(3)? as usize;
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        _ => {}
    }
    let digits: Vec<u16> = (0..ndigits)
        .map(|i| word(4 + i))
        .collect::<Result<_, _>>()?;
    let mut int_part = String::new();
    for i in 0..=weight.max(-1) {
        let d = digits.get(i as usize).copied().unwrap_or(0);
        if int_part.is_empty() {
            if d != 0 || i == weight {
                int_part = d.to_string();
            }
        } else {
            int_part.push_str(&format!("{d:04}"));
        }
    }
    if int_part.is_empty() {
        int_part.push('0');
    }
    let mut frac = String::new();
    let mut i = weight + 1;
    while frac.len() < dscale {
        let d = if i < 0 {
            0
        } else {
            digits.get(i as usize).copied().unwrap_or(0)
        };
        frac.push_str(&format!("{d:04}"));
        i += 1;
    }
    frac.truncate(dscale);
    let mut text = if sign == 0x4000 {
        format!("-{int_part}")
    } else {
        int_part
    };
    if dscale > 0 {
        text.push('.');
        text.push_str(&frac);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric_bytes(ndigits: u16, weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        for w in [ndigits, weight as u16, sign, dscale].iter().chain(digits) {
            out.extend_from_slice(&w.to_be_bytes());
        }
        out
    }

    #[test]
    fn numerics() {
        let check = |bytes: Vec<u8>, expected: &str| {
            assert_eq!(numeric(&bytes).expect("decodes"), expected);
        };
        check(numeric_bytes(0, 0, 0, 0, &[]), "0");
        check(numeric_bytes(1, 0, 0, 0, &[42]), "42");
        check(numeric_bytes(2, 1, 0, 0, &[1, 2345]), "12345");
        check(numeric_bytes(2, 0, 0x4000, 2, &[3, 1400]), "-3.14");
        check(numeric_bytes(1, -1, 0, 4, &[5]), "0.0005");
        check(numeric_bytes(1, 1, 0, 0, &[7]), "70000");
        check(numeric_bytes(0, 0, 0xC000, 0, &[]), "NaN");
    }

    #[test]
    fn a_result_fits_by_its_cells_then_its_rows() {
        let row = |i: usize| json!({"id": i, "body": "b".repeat(300)});
        let mut many = json!({"columns": [{"name": "id"}, {"name": "body"}],
            "rows": (0..5000).map(row).collect::<Vec<_>>(), "row_count": 5000, "truncated": true});
        fit_rows(&mut many);
        let size = coremcp_plugin_sdk::budget::chars(&many);
        assert!(
            size <= coremcp_plugin_sdk::budget::result_budget(),
            "{size}"
        );
        let kept = many["row_count"].as_u64().expect("count") as usize;
        assert!(kept > 40 && kept < 100, "{kept}");
        assert_eq!(many["rows_omitted"], 5000 - kept);
        assert!(many["hint"]
            .as_str()
            .expect("hint")
            .contains(&format!("OFFSET {kept}")));
        let mut one = json!({"columns": [{"name": "v"}],
            "rows": [{"v": "é".repeat(100_000)}], "row_count": 1, "truncated": false});
        fit_rows(&mut one);
        assert!(
            coremcp_plugin_sdk::budget::chars(&one) <= coremcp_plugin_sdk::budget::result_budget()
        );
        assert_eq!(
            one["rows"][0]["v"].as_str().map(|v| v.chars().count()),
            Some(MAX_CELL_CHARS)
        );
        assert_eq!(
            one["cells_truncated"],
            json!([{"row": 0, "column": "v", "total_chars": 100_000}])
        );
        assert_eq!(
            one["truncated"], false,
            "every row is there, one value is cut"
        );
        // A column named like a mark is never confused with one.
        let mut named = json!({"columns": [{"name": "v"}, {"name": "v_truncated"}],
            "rows": [{"v": "x".repeat(20_000), "v_truncated": "kept"}], "row_count": 1});
        fit_rows(&mut named);
        assert_eq!(named["rows"][0]["v_truncated"], "kept");
    }

    #[test]
    fn keys_are_unique() {
        assert_eq!(
            unique_keys(["id", "name", "id", "id"].into_iter()),
            ["id", "name", "id_2", "id_3"]
        );
    }
}
