# Throwaway PostgreSQL for tests, sourced by scripts/test.
#
#   pg_start DIR   initdb + start on a free loopback port; exports COREMCP_TEST_PG_URL (the
#                  superuser) and COREMCP_TEST_PG_SQL_URL (coremcp_sql, a role without
#                  superuser or server-file powers that may create tables: what sql_query
#                  accepts without --sql-allow-privileged)
#   pg_stop DIR    stop it (fast) and remove DIR
#
# Uses the server binaries Debian installs under /usr/lib/postgresql/<version>/bin. As root the
# server runs as the `postgres` user (PostgreSQL refuses to run as root).

pg_bin() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    if { [ -z "$dir" ] || [ ! -x "$dir/initdb" ]; } && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        echo "installing the PostgreSQL server from Debian's packages" >&2
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; } >&2 || true
        dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    fi
    if [ -z "$dir" ] || [ ! -x "$dir/initdb" ]; then
        echo "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin" >&2
        echo "(install them with: apt-get install -y postgresql)" >&2
        return 1
    fi
    echo "$dir"
}

pg_as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

pg_start() {
    local dir="$1" bin port
    bin="$(pg_bin)" || return 1
    rm -rf "$dir"
    mkdir -p "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
    pg_as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; return 1; }
    port="$(pg_free_port)"
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 30 -l "$dir/server.log" \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off" start >/dev/null \
        || { cat "$dir/server.log" >&2; return 1; }
    "$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
        -c "CREATE ROLE coremcp_sql LOGIN" -c "GRANT CREATE ON SCHEMA public TO coremcp_sql" >&2 \
        || return 1
    export COREMCP_TEST_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
    export COREMCP_TEST_PG_SQL_URL="postgres://coremcp_sql@127.0.0.1:$port/postgres"
    echo "PostgreSQL ready at 127.0.0.1:$port"
}

pg_stop() {
    local dir="$1" bin
    bin="$(pg_bin)" || return 0
    if [ -f "$dir/data/postmaster.pid" ]; then
        pg_as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}
