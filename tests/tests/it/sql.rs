//! `sql_query` against a real, throwaway PostgreSQL that `scripts/test` starts: types,
//! parameters, read-only enforcement, timeouts, the row cap, PostgreSQL's own errors, and the
//! refusal of roles that can act outside the database. Ordinary tests log in as the
//! unprivileged role `coremcp_sql` (`COREMCP_TEST_PG_SQL_URL`); the superuser
//! (`COREMCP_TEST_PG_URL`) sets up the privileged cases.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use coremcp_tests::{is_error, plugins, text, Server, TempDir};
use serde_json::{json, Value};

fn env_url(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: these tests need a PostgreSQL server; scripts/test starts a \
             throwaway one (see scripts/lib/postgres.sh)"
        )
    })
}

/// The unprivileged role sql_query accepts.
fn pg_url() -> String {
    env_url("COREMCP_TEST_PG_SQL_URL")
}

/// The superuser.
fn superuser_url() -> String {
    env_url("COREMCP_TEST_PG_URL")
}

fn server(extra: &[&str]) -> (TempDir, Server) {
    let dir = plugins(&["files"]);
    let url = pg_url();
    let default = format!("default={url}");
    let other = format!("other={url}");
    let mut args = vec!["--sql", default.as_str(), "--sql", other.as_str()];
    args.extend_from_slice(extra);
    let mut server = Server::start(dir.path(), &args, &[]);
    server.initialize();
    (dir, server)
}

/// A table name no other test uses.
fn table(label: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "t_{label}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn write(server: &mut Server, sql: &str) -> Value {
    let result = server.call("sql_query", json!({"sql": sql, "read_only": false}));
    assert!(!is_error(&result), "{sql}: {result}");
    result["structuredContent"].clone()
}

#[test]
fn values_come_back_as_json_with_column_types() {
    let Some(_) = coremcp_tests::postgres() else {
        return;
    };
    let (_dir, mut server) = server(&[]);
    let sql = r#"select 1::int4 as i, 9000000000::int8 as big, 'x'::text as t, true as yes,
        1.5::float8 as f, 12.340::numeric as n, -0.0005::numeric as small,
        '2024-02-29'::date as day, '2024-02-29 12:34:56.5+00'::timestamptz as at,
        '{"a": [1, 2]}'::jsonb as doc, null::text as nothing, array[1, null, 3]::int4[] as list,
        'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid as id, '\xdead'::bytea as raw, 1 as i"#;
    let result = server.call("sql_query", json!({"sql": sql}));
    assert!(!is_error(&result), "{result}");
    let out = &result["structuredContent"];
    assert_eq!(
        out["rows"][0],
        json!({
            "i": 1, "big": 9_000_000_000i64, "t": "x", "yes": true, "f": 1.5, "n": "12.340",
            "small": "-0.0005", "day": "2024-02-29", "at": "2024-02-29T12:34:56.5Z",
            "doc": {"a": [1, 2]}, "nothing": null, "list": [1, null, 3],
            "id": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "raw": "\\xdead", "i_2": 1
        })
    );
    let types: Vec<&str> = out["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["type"].as_str().expect("type"))
        .collect();
    assert_eq!(
        types,
        [
            "int4",
            "int8",
            "text",
            "bool",
            "float8",
            "numeric",
            "numeric",
            "date",
            "timestamptz",
            "jsonb",
            "text",
            "_int4",
            "uuid",
            "bytea",
            "int4"
        ]
    );
    assert_eq!(out["read_only"], true);
    assert_eq!(out["database"], "default");
    assert_eq!(out["row_count"], 1);
}

#[test]
fn parameters_take_the_type_postgres_infers() {
    let Some(_) = coremcp_tests::postgres() else {
        return;
    };
    let (_dir, mut server) = server(&[]);
    let t = table("params");
    write(
        &mut server,
        &format!("create table {t} (id int primary key, name text, score numeric)"),
    );
    let result = server.call(
        "sql_query",
        json!({"sql": format!("insert into {t} values ($1, $2, $3), ($4, $5, $6)"),
               "params": [1, "one", 1.25, "2", null, "3.5"], "read_only": false}),
    );
    assert_eq!(result["structuredContent"]["rows_affected"], 2, "{result}");
    let result = server.call(
        "sql_query",
        json!({"sql": format!("select id, name, score from {t} where id >= $1 order by id"),
               "params": ["1"], "database": "other"}),
    );
    assert_eq!(
        result["structuredContent"]["rows"],
        json!([{"id": 1, "name": "one", "score": "1.25"}, {"id": 2, "name": null, "score": "3.5"}])
    );
    let result = server.call(
        "sql_query",
        json!({"sql": "select $1::int + 1 as n", "params": ["x"]}),
    );
    assert!(is_error(&result));
    assert!(text(&result).contains("22P02"), "{result}");
}

#[test]
fn writes_need_read_only_false() {
    let Some(_) = coremcp_tests::postgres() else {
        return;
    };
    let (_dir, mut server) = server(&[]);
    let t = table("ro");
    write(&mut server, &format!("create table {t} (v int)"));
    let result = server.call(
        "sql_query",
        json!({"sql": format!("insert into {t} values (1)")}),
    );
    assert!(is_error(&result));
    assert!(text(&result).contains("25006"), "{result}");
    assert!(
        text(&result).contains("pass read_only: false to write"),
        "{result}"
    );
    let out = write(
        &mut server,
        &format!("insert into {t} values (1), (2) returning v"),
    );
    assert_eq!(out["rows"], json!([{"v": 1}, {"v": 2}]));
    let out = server.call(
        "sql_query",
        json!({"sql": format!("select count(*) as n from {t}")}),
    );
    assert_eq!(out["structuredContent"]["rows"][0]["n"], 2);
}

#[test]
fn rows_are_capped() {
    let Some(_) = coremcp_tests::postgres() else {
        return;
    };
    let (_dir, mut server) = server(&[]);
    let result = server.call(
        "sql_query",
        json!({"sql": "select g from generate_series(1, 100000) g", "max_rows": 10}),
    );
    let out = &result["structuredContent"];
    assert_eq!(out["row_count"], 10);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["rows"][9]["g"], 10);
    let result = server.call(
        "sql_query",
        json!({"sql": "select g from generate_series(1, 1000) g"}),
    );
    assert_eq!(
        result["structuredContent"]["row_count"], 200,
        "the default cap"
    );
    let result = server.call("sql_query", json!({"sql": "select 1", "max_rows": 5001}));
    assert!(text(&result).contains("argument \"max_rows\""), "{result}");
}

#[test]
fn a_slow_statement_times_out_on_the_server() {
    let Some(_) = coremcp_tests::postgres() else {
        return;
    };
    let (_dir, mut server) = server(&[]);
    let started = Instant::now();
    let result = server.call(
        "sql_query",
        json!({"sql": "select pg_sleep(10)", "timeout_s": 1}),
    );
    assert!(is_error(&result));
    assert!(text(&result).contains("57014"), "{result}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn the_call_deadline_cancels_the_statement() {
    let Some(_) = coremcp_tests::postgres() else {
        return;
    };
    let (_dir, mut server) = server(&["--call-timeout", "1"]);
    let marker = table("sleep");
    let sql = format!("select pg_sleep(20) as {marker}");
    let result = server.call("sql_query", json!({"sql": sql}));
    assert!(text(&result).contains("did not finish within"), "{result}");
    let count_sql = format!(
        "select count(*) as n from pg_stat_activity where query like '%{marker}%' and pid <> pg_backend_pid()"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = server.call("sql_query", json!({"sql": count_sql}));
        if out["structuredContent"]["rows"][0]["n"] == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the statement still runs on the server: {out}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn postgres_errors_carry_sqlstate_and_position() {
    let Some(_) = coremcp_tests::postgres() else {
        return;
    };
    let (_dir, mut server) = server(&[]);
    let result = server.call("sql_query", json!({"sql": "selec 1"}));
    assert!(is_error(&result));
    assert!(
        text(&result).contains("42601") && text(&result).contains("(at character 1)"),
        "{result}"
    );
    let result = server.call(
        "sql_query",
        json!({"sql": "select * from no_such_table_here"}),
    );
    assert!(
        text(&result).contains("42P01") && text(&result).contains("no_such_table_here"),
        "{result}"
    );
}

#[test]
fn connections_are_named_and_never_shown() {
    let Some(_) = coremcp_tests::postgres() else {
        return;
    };
    let (_dir, mut server) = server(&[]);
    let result = server.call("sql_query", json!({"sql": "select 1", "database": "prod"}));
    assert!(is_error(&result));
    assert!(
        text(&result).contains("no connection named \"prod\" (configured: default, other)"),
        "{result}"
    );
    assert!(!text(&result).contains("postgres://"));
    let result = server.call("sql_query", json!({"sql": "select 1", "password": "x"}));
    assert!(
        text(&result).contains("unknown argument \"password\""),
        "{result}"
    );

    let dir = plugins(&["files"]);
    let mut bare = Server::start(dir.path(), &[], &[("COREMCP_SQL", "")]);
    bare.initialize();
    let result = bare.call("sql_query", json!({"sql": "select 1"}));
    assert!(
        text(&result).contains("no PostgreSQL connection is configured"),
        "{result}"
    );

    let mut broken = Server::start(
        dir.path(),
        &["--sql", "default=postgres://nobody@127.0.0.1:1/none"],
        &[],
    );
    broken.initialize();
    let result = broken.call("sql_query", json!({"sql": "select 1"}));
    assert!(
        text(&result).contains("cannot connect to \"default\""),
        "{result}"
    );
}

/// Runs statements as the superuser (test setup only).
fn as_superuser(database: &str, statements: &str) {
    let url = superuser_url();
    let url = match database {
        "postgres" => url,
        other => format!(
            "{}/{other}",
            url.rsplit_once('/').expect("a URL with a database").0
        ),
    };
    let mut client =
        postgres::Client::connect(&url, postgres::NoTls).expect("connect as superuser");
    client.batch_execute(statements).expect("setup statements");
}

/// A role (created once) that logs in with `membership` granted, and its URL for `database`.
fn role_url(role: &str, membership: &str, database: &str) -> String {
    as_superuser(
        "postgres",
        &format!(
            "DO $$ BEGIN CREATE ROLE {role} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;\
             {membership}"
        ),
    );
    let url = superuser_url();
    let (scheme, rest) = url.split_once("://").expect("scheme");
    let (_, host) = rest.split_once('@').expect("user@host");
    let host = host.rsplit_once('/').expect("database").0;
    format!("{scheme}://{role}@{host}/{database}")
}

fn refusal(url: &str, allow: &[&str]) -> String {
    let dir = plugins(&["files"]);
    let conn = format!("default={url}");
    let mut args = vec!["--sql", conn.as_str()];
    for name in allow {
        args.extend(["--sql-allow-privileged", name]);
    }
    let mut server = Server::start(dir.path(), &args, &[]);
    server.initialize();
    let result = server.call("sql_query", json!({"sql": "select 1 as one"}));
    if is_error(&result) {
        text(&result).to_owned()
    } else {
        assert_eq!(result["structuredContent"]["rows"][0]["one"], 1, "{result}");
        String::new()
    }
}

#[test]
fn roles_that_can_act_outside_the_database_are_refused_unless_allowed() {
    let Some(_) = coremcp_tests::postgres() else {
        return;
    };
    let marker = std::env::temp_dir().join(format!("coremcp-sql-marker-{}", std::process::id()));
    let program = format!("copy (select 1) to program 'touch {}'", marker.display());

    // The superuser: refused, whatever the statement, before it runs.
    let dir = plugins(&["files"]);
    let conn = format!("default={}", superuser_url());
    let mut server = Server::start(dir.path(), &["--sql", &conn], &[]);
    server.initialize();
    let result = server.call("sql_query", json!({"sql": program}));
    assert!(is_error(&result), "{result}");
    let said = text(&result);
    assert!(
        said.contains("connection \"default\" logs in as role \"postgres\", which is a superuser")
            && said.contains("COPY … TO PROGRAM")
            && said.contains("--sql-allow-privileged default (COREMCP_SQL_ALLOW_PRIVILEGED)"),
        "{said}"
    );
    assert!(!marker.exists(), "the program never ran");
    assert!(!said.contains("postgres://"), "{said}");

    // Members of the server-power roles are refused too, each power named.
    let url = role_url(
        "coremcp_sql_program",
        "GRANT pg_execute_server_program TO coremcp_sql_program;",
        "postgres",
    );
    assert!(
        refusal(&url, &[]).contains(
            "which is a member of pg_execute_server_program: it can run programs on the database server"
        )
    );
    let url = role_url(
        "coremcp_sql_files",
        "GRANT pg_write_server_files, pg_read_server_files TO coremcp_sql_files;",
        "postgres",
    );
    let said = refusal(&url, &[]);
    assert!(
        said.contains("pg_write_server_files") && said.contains("pg_read_server_files"),
        "{said}"
    );
    // A member of a superuser role could SET ROLE to it.
    let url = role_url(
        "coremcp_sql_inherits",
        "DO $$ BEGIN CREATE ROLE coremcp_sql_admins SUPERUSER NOLOGIN; \
         EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
         GRANT coremcp_sql_admins TO coremcp_sql_inherits;",
        "postgres",
    );
    assert!(refusal(&url, &[]).contains("is a superuser (or a member of one)"));

    // A database with dblink: its functions commit through connections of their own.
    // (It may exist from an earlier run on the same server.)
    let _ = postgres::Client::connect(&superuser_url(), postgres::NoTls)
        .expect("connect")
        .batch_execute("CREATE DATABASE coremcp_links");
    as_superuser("coremcp_links", "CREATE EXTENSION IF NOT EXISTS dblink");
    let plain = role_url("coremcp_sql", "", "coremcp_links");
    let said = refusal(&plain, &[]);
    assert!(
        said.contains("can use the dblink extension installed in this database"),
        "{said}"
    );

    // Allowed by name: it runs, and says nothing more.
    assert_eq!(refusal(&superuser_url(), &["default"]), "");
    // A name that is no connection is a usage error at start.
    let (code, _, err) = coremcp_tests::run(
        &["tools", "--sql", &conn, "--sql-allow-privileged", "prod"],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--sql-allow-privileged prod: no such --sql connection (configured: default)"),
        "{err}"
    );
}

#[test]
fn read_only_holds_for_an_unprivileged_role() {
    let Some(_) = coremcp_tests::postgres() else {
        return;
    };
    let (_dir, mut server) = server(&[]);
    let marker = std::env::temp_dir().join(format!("coremcp-sql-ro-{}", std::process::id()));
    for (sql, code) in [
        (
            format!("copy (select 1) to program 'touch {}'", marker.display()),
            "42501",
        ),
        (
            format!("copy (select 1) to '{}'", marker.display()),
            "42501",
        ),
        ("select lo_import('/etc/hostname')".to_owned(), "42501"),
        ("create table t_never (v int)".to_owned(), "25006"),
    ] {
        let result = server.call("sql_query", json!({"sql": sql}));
        assert!(is_error(&result), "{sql}: {result}");
        assert!(text(&result).contains(code), "{sql}: {result}");
    }
    assert!(!marker.exists());
    // PostgreSQL lets a read-only transaction create a large object; a read-only call is
    // rolled back, so it is not kept.
    let made = server.call(
        "sql_query",
        json!({"sql": "select lo_from_bytea(0, 'x'::bytea) as oid"}),
    );
    let oid = made["structuredContent"]["rows"][0]["oid"].clone();
    assert!(oid.is_u64(), "{made}");
    let kept = server.call(
        "sql_query",
        json!({"sql": "select count(*) as n from pg_largeobject_metadata where oid = $1::oid",
               "params": [oid]}),
    );
    assert_eq!(kept["structuredContent"]["rows"][0]["n"], 0, "{kept}");
}
