#!/usr/bin/env python3
"""Runs `coremcp stdio ARGS…` between an MCP client and the server, writing every line that
crosses (with its direction and time) to $WIRE_LOG."""
import os, subprocess, sys, threading, time

log = open(os.environ["WIRE_LOG"], "a", buffering=1)
child = subprocess.Popen([os.environ["COREMCP"], "stdio", *sys.argv[1:]],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
lock = threading.Lock()

def note(way, line):
    with lock:
        log.write(f"{time.time():.3f} {way} {line.decode(errors='replace').rstrip()}\n")

def down():
    for line in child.stdout:
        note("S>C", line)
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()

threading.Thread(target=down, daemon=True).start()
for line in sys.stdin.buffer:
    note("C>S", line)
    child.stdin.write(line)
    child.stdin.flush()
child.stdin.close()
child.wait(timeout=10)
