# The OpenID provider the OAuth tests run against: npm's oidc-provider, pinned by
# tests/oidc/package-lock.json, installed beside tests/oidc/provider.mjs under the target dir
# (again only when the lock changes). Sourced by scripts/test.
#
#   oidc_install TARGET   installs it into TARGET/oidc; sets OIDC_PROVIDER to the script the
#                         tests start (node provider.mjs PORT ISSUER KID)
#
# Needs node and npm on PATH.

oidc_install() {
    local root dir
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    dir="$1/oidc"
    if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
        echo "node and npm are not on PATH: they run the OpenID provider of the OAuth tests" >&2
        return 1
    fi
    if ! cmp -s "$root/tests/oidc/package-lock.json" "$dir/.installed-lock" 2>/dev/null; then
        rm -rf "$dir"
        mkdir -p "$dir"
        cp "$root/tests/oidc/package.json" "$root/tests/oidc/package-lock.json" "$dir/"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || return 1
        cp "$root/tests/oidc/package-lock.json" "$dir/.installed-lock"
    fi
    # The script is copied each time (it resolves oidc-provider from the folder it is in).
    cp "$root/tests/oidc/provider.mjs" "$dir/"
    OIDC_PROVIDER="$dir/provider.mjs"
}
