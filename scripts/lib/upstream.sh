# The real upstream MCP servers the upstream tests and the upstream bench run, pinned; each is
# installed into its own folder under the target dir, and again only when its pin changes.
# Sourced by scripts/test and scripts/bench.
#
#   upstream_install_everything TARGET   npm @modelcontextprotocol/server-everything into
#                                        TARGET/upstream/everything; sets UPSTREAM_EVERYTHING
#                                        to its mcp-server-everything
#   upstream_install_time TARGET         PyPI mcp-server-time into a venv at
#                                        TARGET/upstream/timeenv; sets UPSTREAM_TIME to its
#                                        mcp-server-time
#
# Needs npm (everything) and python3 (time) on PATH.

UPSTREAM_EVERYTHING_VERSION="2026.8.31"
UPSTREAM_TIME_VERSION="2026.10.19"

upstream_install_everything() {
    local dir="$1/upstream/everything"
    if ! cmp -s <(echo "$UPSTREAM_EVERYTHING_VERSION") "$dir/.installed" 2>/dev/null; then
        if ! command -v npm >/dev/null 2>&1; then
            echo "npm is not on PATH: it installs @modelcontextprotocol/server-everything" >&2
            return 1
        fi
        rm -rf "$dir"
        mkdir -p "$dir"
        (cd "$dir" && echo '{"private": true}' >package.json &&
            npm install --no-audit --no-fund --loglevel=error \
                "@modelcontextprotocol/server-everything@$UPSTREAM_EVERYTHING_VERSION") || return 1
        echo "$UPSTREAM_EVERYTHING_VERSION" >"$dir/.installed"
    fi
    UPSTREAM_EVERYTHING="$dir/node_modules/.bin/mcp-server-everything"
}

upstream_install_time() {
    local dir="$1/upstream/timeenv"
    if ! cmp -s <(echo "$UPSTREAM_TIME_VERSION") "$dir/.installed" 2>/dev/null; then
        rm -rf "$dir"
        python3 -m venv "$dir" || return 1
        "$dir/bin/pip" install --quiet --disable-pip-version-check --no-input \
            "mcp-server-time==$UPSTREAM_TIME_VERSION" || return 1
        echo "$UPSTREAM_TIME_VERSION" >"$dir/.installed"
    fi
    UPSTREAM_TIME="$dir/bin/mcp-server-time"
}
