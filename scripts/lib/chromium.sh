# Headless Chromium for the status page tests, sourced by tests/browser/run.
#
#   chromium_install   installs Debian's chromium package when it is missing (as root); sets
#                      CHROMIUM to the browser's path, or fails saying how to install it.

chromium_install() {
    CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
    [ -n "$CHROMIUM" ] && return 0
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
        echo "chromium is missing (install it with: apt-get install -y chromium)" >&2
        return 1
    fi
    echo "installing chromium from Debian's packages" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >&2
    CHROMIUM="$(command -v chromium)"
}
