#!/usr/bin/env python3
"""Claude Code as a real MCP client of Core MCP, over stdio and over HTTP, offline: it must
negotiate MCP 2026-07-28 (its `server/discover` probe answered, no `initialize`), see every
tool and call one. `claude mcp add` / `claude mcp get` need no model; the call is made by
`claude -p` against model.py (a stand-in for the Anthropic Messages API, reached through
ANTHROPIC_BASE_URL) that answers the prompt with one `tool_use` of git_status.

Prints what it saw and exits non-zero when a check fails.

Usage: claude_2026.py CLAUDE COREMCP PLUGINS OUT
  CLAUDE   the claude binary          COREMCP  the coremcp binary
  PLUGINS  a plugins folder with git  OUT      a scratch folder (logs, homes)
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLAUDE, COREMCP, PLUGINS, OUT = (Path(a).resolve() for a in sys.argv[1:5])
LIMIT = 120
VERSION = "2026-07-28"
failures = []


def check(what, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wire(path):
    rows = []
    for line in path.read_text().splitlines() if path.exists() else []:
        _, way, text = line.split(" ", 2)
        try:
            rows.append((way, json.loads(text)))
        except ValueError:
            pass
    return rows


def claude(args, env, home, timeout=LIMIT):
    run_env = {**env, "HOME": str(home), "ANTHROPIC_API_KEY": "sk-ant-offline",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    return subprocess.run([str(CLAUDE), *args], env=run_env, cwd=OUT / "work", capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def ask(config, env, home):
    """One `claude -p` turn that should call git_status through MCP server "core"."""
    return claude(["-p", "Now show the git status.", "--output-format", "stream-json", "--verbose",
                   "--mcp-config", str(config), "--strict-mcp-config",
                   "--allowedTools", "mcp__core__git_status", "ToolSearch",
                   "--model", "claude-opus-4-5"], env, home)


def tool_result(stdout):
    """The text of every tool_result Claude Code got back (its ToolSearch lookup's too)."""
    texts = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        for block in (event.get("message") or {}).get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                texts.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(texts) or None


def expected_tools():
    """The tools `coremcp tools` says a session of these plugins and groups sees."""
    out = subprocess.run([str(COREMCP), "tools", "--plugins", str(PLUGINS), "--groups", "git", "--json"],
                         capture_output=True, text=True, timeout=60, check=True)
    return sorted(t["name"] for t in json.loads(out.stdout) if t["available"])


def stdio(env):
    print("-- stdio")
    home = OUT / "home-stdio"
    home.mkdir(parents=True, exist_ok=True)
    log = OUT / "stdio.wire"
    server = {"command": str(HERE / "wire.py"),
              "args": ["--groups", "git", "--plugins", str(PLUGINS), "--root", str(OUT / "work")],
              "env": {"COREMCP": str(COREMCP), "WIRE_LOG": str(log), "COREMCP_DATA": str(OUT / "data-stdio")}}
    added = claude(["mcp", "add-json", "core", json.dumps({"type": "stdio", **server})], env, home)
    check("claude mcp add-json (stdio)", added.returncode == 0, added.stderr[-500:])
    got = claude(["mcp", "get", "core"], env, home)
    check("claude mcp get shows it connected (stdio)", "connected" in got.stdout.lower(), got.stdout[-500:])
    config = OUT / "stdio-mcp.json"
    config.write_text(json.dumps({"mcpServers": {"core": server}}))
    log.unlink(missing_ok=True)
    turn = ask(config, env, home)
    check("claude -p ran (stdio)", turn.returncode == 0, turn.stderr[-800:])
    rows = wire(log)
    requests = [m for way, m in rows if way == "C>S" and "method" in m and "id" in m]
    first = requests[0] if requests else {}
    meta = (first.get("params") or {}).get("_meta") or {}
    check("the first request is server/discover at 2026-07-28",
          first.get("method") == "server/discover"
          and meta.get("io.modelcontextprotocol/protocolVersion") == VERSION, json.dumps(first)[:300])
    check("no initialize was sent", not any(m.get("method") == "initialize" for m in requests),
          [m.get("method") for m in requests])
    answers = {json.dumps(m.get("id")): m for way, m in rows if way == "S>C" and "id" in m and "method" not in m}
    listed = [answers.get(json.dumps(m["id"])) for m in requests if m["method"] == "tools/list"]
    tools = [t["name"] for a in listed if a for t in a["result"].get("tools", [])]
    check("every tool listed", sorted(tools) == expected_tools(), tools)
    calls = [m for m in requests if m["method"] == "tools/call"]
    call = calls[0] if calls else {}
    answer = answers.get(json.dumps(call.get("id"))) or {}
    check("git_status called with the 2026 envelope",
          (call.get("params") or {}).get("name") == "git_status"
          and "io.modelcontextprotocol/protocolVersion" in ((call.get("params") or {}).get("_meta") or {}),
          json.dumps(call)[:300])
    result = answer.get("result") or {}
    check("its answer is a 2026 result", result.get("resultType") == "complete" and not result.get("isError"),
          json.dumps(answer)[:300])
    check("the model got the tool's result", (tool_result(turn.stdout) or "").find("branch") >= 0,
          (tool_result(turn.stdout) or turn.stdout[-500:])[:300])


def http(env):
    print("-- HTTP")
    home = OUT / "home-http"
    home.mkdir(parents=True, exist_ok=True)
    stderr = open(OUT / "serve.err", "w")
    serve_env = {**env, "COREMCP_DATA": str(OUT / "data-http"), "COREMCP_LOG": "coremcp=debug"}
    server = subprocess.Popen([str(COREMCP), "serve", "--listen", "127.0.0.1:0", "--groups", "git",
                               "--plugins", str(PLUGINS), "--root", str(OUT / "work")],
                              env=serve_env, stderr=stderr, stdin=subprocess.DEVNULL)
    try:
        url = None
        end = time.time() + 30
        while url is None and time.time() < end:
            found = re.search(r"listening on (http://\S+/mcp)", (OUT / "serve.err").read_text())
            url = found.group(1) if found else None
            time.sleep(0.05)
        check("coremcp serve started", url is not None)
        if url is None:
            return
        added = claude(["mcp", "add", "--transport", "http", "core", url], env, home)
        check("claude mcp add --transport http", added.returncode == 0, added.stderr[-500:])
        got = claude(["mcp", "get", "core"], env, home)
        check("claude mcp get shows it connected (HTTP)", "connected" in got.stdout.lower(), got.stdout[-500:])
        config = OUT / "http-mcp.json"
        config.write_text(json.dumps({"mcpServers": {"core": {"type": "http", "url": url}}}))
        turn = ask(config, env, home)
        check("claude -p ran (HTTP)", turn.returncode == 0, turn.stderr[-800:])
        log = (OUT / "serve.err").read_text()
        check("Claude Code spoke 2026-07-28 (sessionless)", "first 2026-07-28 request" in log
              and "session created" not in log, log[-1500:])
        check("git_status was called over HTTP", "call git_status" in log, log[-1500:])
        check("the model got the tool's result (HTTP)", (tool_result(turn.stdout) or "").find("branch") >= 0,
              (tool_result(turn.stdout) or turn.stdout[-500:])[:300])
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


def main():
    (OUT / "work").mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(OUT / "work")], check=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREMCP_")}
    model = subprocess.Popen([sys.executable, str(HERE / "model.py"), str(port)],
                             env={**env, "MODEL_LOG": str(OUT / "model.log")})
    env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{port}"
    try:
        version = subprocess.run([str(CLAUDE), "--version"], capture_output=True, text=True, timeout=60)
        print(f"Claude Code {version.stdout.strip()}")
        stdio(env)
        http(env)
    finally:
        model.kill()
    if failures:
        print(f"{len(failures)} check(s) failed; logs in {OUT}", file=sys.stderr)
        sys.exit(1)


main()
