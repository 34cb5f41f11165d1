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
    # objcopy writes its output in small pieces, and the page cache keeps a file in pieces of
    # the size it was written in until it is read back from disk: every start of a program
    # mapped from small pieces pays for it (about 0.15 ms of the host's 1.5 ms cold start).
    # Copied once more, the file is written in large pieces, as one read from disk would be.
    cp "$file.stripping.$$" "$file.new.$$"
    rm -f "$file.stripping.$$"
    mv -f "$file.new.$$" "$file"
}
