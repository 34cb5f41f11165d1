# Throwaway Docker daemon for tests, sourced by scripts/test (and scripts/bench).
#
#   docker_start DIR   installs docker.io, docker-compose and busybox-static from Debian's
#                      packages when missing (as root), starts dockerd on DIR/docker.sock with its
#                      own data and exec roots (vfs, no bridge, no iptables: it leaves nothing
#                      behind), and imports the test image from the static busybox. Exports
#                      COREMCP_TEST_DOCKER_HOST (unix://DIR/docker.sock) and
#                      COREMCP_TEST_DOCKER_IMAGE; when the daemon cannot start, exports
#                      COREMCP_TEST_DOCKER_UNAVAILABLE with the reason instead (the Docker tests
#                      then say so in one line and the rest still run).
#   docker_stop DIR    removes every container, stops the daemon and removes DIR
#
# Busybox `sh` as PID 1 ignores SIGTERM: test containers trap it.

DOCKER_TEST_IMAGE="coremcp-test/busybox:latest"

docker_install() {
    local missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v docker-compose >/dev/null || missing+=(docker-compose)
    [ -x /bin/busybox ] && file_is_static /bin/busybox || missing+=(busybox-static)
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
        echo "missing ${missing[*]} (install them with: apt-get install -y ${missing[*]})" >&2
        return 1
    fi
    echo "installing ${missing[*]} from Debian's packages" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >&2
}

# Whether $1 runs without a dynamic loader (what a busybox copied into an image needs).
file_is_static() {
    # (Not a pipe into `grep -q`: under pipefail the early exit fails the pipeline.)
    case "$(LC_ALL=C ldd "$1" 2>&1)" in *"not a dynamic executable"*) return 0 ;; esac
    return 1
}

docker_unavailable() {
    echo "Docker tests will be skipped: $*" >&2
    export COREMCP_TEST_DOCKER_UNAVAILABLE="$*"
    unset COREMCP_TEST_DOCKER_HOST COREMCP_TEST_DOCKER_IMAGE
}

docker_start() {
    local dir="$1" sock="$1/docker.sock" i
    if ! docker_install; then
        docker_unavailable "docker.io, docker-compose or busybox-static is missing"
        return 0
    fi
    mkdir -p "$dir/data" "$dir/exec"
    dockerd --host "unix://$sock" --data-root "$dir/data" --exec-root "$dir/exec" \
        --pidfile "$dir/docker.pid" --storage-driver vfs --bridge none --iptables=false \
        --ip-masq=false >"$dir/dockerd.log" 2>&1 &
    for i in $(seq 1 300); do
        if curl -fsS --max-time 2 --unix-socket "$sock" http://docker/_ping >/dev/null 2>&1; then
            break
        fi
        if [ "$i" -eq 300 ]; then
            tail -n 5 "$dir/dockerd.log" >&2 || true
            docker_unavailable "dockerd did not answer on $sock within 30 s (see the lines above)"
            return 0
        fi
        sleep 0.1
    done
    local image="$dir/image"
    mkdir -p "$image/bin"
    cp /bin/busybox "$image/bin/busybox"
    for applet in sh echo sleep cat seq true false ls; do ln -sf busybox "$image/bin/$applet"; done
    if ! tar -C "$image" -c . | DOCKER_HOST="unix://$sock" docker import - "$DOCKER_TEST_IMAGE" >/dev/null; then
        docker_unavailable "the test image could not be imported"
        return 0
    fi
    export COREMCP_TEST_DOCKER_HOST="unix://$sock"
    export COREMCP_TEST_DOCKER_IMAGE="$DOCKER_TEST_IMAGE"
    unset COREMCP_TEST_DOCKER_UNAVAILABLE
    echo "dockerd ready on $COREMCP_TEST_DOCKER_HOST with $DOCKER_TEST_IMAGE" >&2
}

docker_stop() {
    local dir="$1" pid i
    [ -n "$dir" ] && [ -d "$dir" ] || return 0
    if [ -S "$dir/docker.sock" ]; then
        local ids
        ids="$(DOCKER_HOST="unix://$dir/docker.sock" docker ps -aq 2>/dev/null || true)"
        # shellcheck disable=SC2086
        [ -z "$ids" ] || DOCKER_HOST="unix://$dir/docker.sock" docker rm -f $ids >/dev/null 2>&1 || true
    fi
    pid="$(cat "$dir/docker.pid" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
        for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    # A container on the host's network leaves the daemon's bind mount of that namespace
    # (exec/netns/default) behind; unmount whatever is still mounted under DIR, deepest first.
    local mounts
    mounts="$(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r)"
    for i in $mounts; do umount -l "$i" 2>/dev/null || true; done
    rm -rf "$dir" || echo "docker_stop: could not remove all of $dir" >&2
}
