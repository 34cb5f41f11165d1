# The system SQLite the store plugins link, sourced by every script that runs cargo.
#
#   sqlite_dev_install   installs Debian's libsqlite3-dev when SQLite's development files are
#                        missing (as root), or fails saying how to install them.
#
# The six store plugins link the system's libsqlite3 rather than each carrying its own copy, so
# a process with every group loaded maps SQLite's code once (ARCHITECTURE.md, plugins/lib/store).

sqlite_dev_install() {
    if command -v pkg-config >/dev/null && pkg-config --exists sqlite3; then return 0; fi
    local dir
    for dir in /usr/include /usr/local/include; do
        [ -e "$dir/sqlite3.h" ] && return 0
    done
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
        echo "SQLite's development files are missing (install them with: apt-get install -y libsqlite3-dev)" >&2
        return 1
    fi
    echo "installing libsqlite3-dev from Debian's packages" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libsqlite3-dev; } >&2
}
