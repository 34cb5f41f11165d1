#!/usr/bin/env python3
"""Runs Claude Code, Codex CLI and Gemini CLI as MCP clients of `coremcp stdio --groups
dynamic`, offline (their model is model.py), through two turns: "Enable the git group." then
"Now show the git status.". Reports, from the MCP wire, whether each client lists the tools
again after `notifications/tools/list_changed`, and whether the model is offered the new tools
(and calls one) on the next turn.

Then the clients that never list again, Codex CLI and qwen-code, against `--groups search`:
one turn, "Show the git status.", which the model reaches through `tools_search` and
`tools_call`; and Codex, Claude Code and Gemini CLI once more, and GitHub Copilot CLI (offline,
with a local provider) and opencode in search sessions, beside an upstream server that takes
10 s to start (`sleep 10`), to show the built-in tools are offered at once.

Usage: drive.py BIN_DIR COREMCP PLUGINS OUT
  BIN_DIR  the clients' node_modules/.bin     COREMCP  the coremcp binary
  PLUGINS  a plugins folder with git           OUT      a scratch folder (logs, homes)
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN, COREMCP, PLUGINS, OUT = (Path(a).resolve() for a in sys.argv[1:5])
TURNS = ["Enable the git group.", "Now show the git status."]
TURN_LIMIT = 120


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_entry(name, groups="dynamic", slow=False):
    """How a client starts Core MCP: through wire.py, which records the wire to NAME.wire;
    `slow`: beside an upstream server that takes 10 s to start."""
    args = ["--groups", groups, "--plugins", str(PLUGINS), "--root", str(OUT / "work")]
    env = {"COREMCP": str(COREMCP), "WIRE_LOG": str(OUT / f"{name}.wire"),
           "COREMCP_DATA": str(OUT / f"data-{name}")}
    if slow:
        env.update({"COREMCP_MCP_CONFIG": "", "COREMCP_MCP_SERVERS": "slow=sleep 10",
                    "COREMCP_MCP_GRANTS": "stdio=slow"})
    return str(HERE / "wire.py"), args, env


class JsonRpc:
    """A line-delimited JSON-RPC peer on a child's stdin and stdout."""

    def __init__(self, argv, env, log):
        # Its own process group: a client that starts itself again as a child (Gemini CLI
        # does) is ended whole, with the MCP servers it started.
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(log, "w"), text=True, bufsize=1, env=env,
                                  cwd=OUT / "work", start_new_session=True)

    def send(self, message):
        self.p.stdin.write(json.dumps(message) + "\n")
        self.p.stdin.flush()

    def until(self, pred, limit=TURN_LIMIT, on=None):
        end = time.time() + limit
        while time.time() < end:
            line = self.p.stdout.readline()
            if not line:
                break
            message = json.loads(line)
            if on:
                on(message)
            if pred(message):
                return message
        raise RuntimeError("no answer in time")

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait()


def claude(env, name="claude", slow=False):
    command, args, server_env = server_entry(name, slow=slow)
    config = OUT / f"{name}-mcp.json"
    config.write_text(json.dumps({"mcpServers": {"core": {"command": command, "args": args, "env": server_env}}}))
    env = {**env, "HOME": str(OUT / f"home-{name}"), "ANTHROPIC_BASE_URL": env["MODEL_URL"],
           "ANTHROPIC_API_KEY": "sk-ant-offline", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_AUTOUPDATER": "1"}
    peer = JsonRpc([str(BIN / "claude"), "-p", "--input-format", "stream-json", "--output-format",
                    "stream-json", "--verbose", "--mcp-config", str(config), "--strict-mcp-config",
                    "--allowedTools", "mcp__core__groups_enable", "mcp__core__git_status", "ToolSearch",
                    "--model", "claude-opus-4-5"], env, OUT / f"{name}.err")
    for text in TURNS:
        peer.send({"type": "user", "message": {"role": "user", "content": text}})
        peer.until(lambda m: m.get("type") == "result")
    peer.close()


def codex(env, name="codex", groups="dynamic", turns=TURNS, slow=False):
    command, args, server_env = server_entry(name, groups, slow)
    home = OUT / f"home-{name}"
    home.mkdir(parents=True, exist_ok=True)
    toml_env = ", ".join(f'{k} = "{v}"' for k, v in server_env.items())
    (home / "config.toml").write_text(f'''model = "gpt-5.1-codex"
model_provider = "standin"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.standin]
name = "stand-in"
base_url = "{env["MODEL_URL"]}/v1"
wire_api = "responses"
env_key = "STANDIN_KEY"

[mcp_servers.core]
command = "{command}"
args = {json.dumps(args)}
env = {{ {toml_env} }}
''')
    env = {**env, "CODEX_HOME": str(home), "STANDIN_KEY": "offline"}
    peer = JsonRpc([str(BIN / "codex"), "app-server"], env, OUT / f"{name}.err")
    peer.send({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "drive", "version": "0"}}})
    peer.until(lambda m: m.get("id") == 1)
    peer.send({"method": "initialized"})
    peer.send({"id": 2, "method": "thread/start", "params": {"cwd": str(OUT / "work"),
               "approvalPolicy": "never", "sandbox": "danger-full-access"}})
    thread = peer.until(lambda m: m.get("id") == 2)["result"]["thread"]["id"]
    for i, text in enumerate(turns):
        peer.send({"id": 10 + i, "method": "turn/start",
                   "params": {"threadId": thread, "input": [{"type": "text", "text": text}]}})
        peer.until(lambda m: m.get("method") == "turn/completed")
    peer.close()


def gemini(env, name="gemini", slow=False):
    command, args, server_env = server_entry(name, slow=slow)
    settings = OUT / f"home-{name}" / ".gemini"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "settings.json").write_text(json.dumps({
        "mcpServers": {"core": {"command": command, "args": args, "env": server_env, "trust": True}},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}))
    env = {**env, "HOME": str(OUT / f"home-{name}"), "GEMINI_API_KEY": "offline",
           "GOOGLE_GEMINI_BASE_URL": env["MODEL_URL"], "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    peer = JsonRpc([str(BIN / "gemini"), "--acp", "-m", "gemini-2.5-pro", "--yolo"], env,
                   OUT / f"{name}.err")

    def allow(message):
        if message.get("method") == "session/request_permission":
            options = message["params"].get("options", [])
            chosen = next((o["optionId"] for o in options if "allow" in o.get("kind", "")), None)
            peer.send({"jsonrpc": "2.0", "id": message["id"],
                       "result": {"outcome": {"outcome": "selected", "optionId": chosen}}})

    peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    peer.until(lambda m: m.get("id") == 1)
    peer.send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
               "params": {"cwd": str(OUT / "work"), "mcpServers": []}})
    session = peer.until(lambda m: m.get("id") == 2)["result"]["sessionId"]
    for i, text in enumerate(TURNS):
        peer.send({"jsonrpc": "2.0", "id": 10 + i, "method": "session/prompt",
                   "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
        peer.until(lambda m: m.get("id") == 10 + i and "method" not in m, on=allow)
    peer.close()


SEARCH_TURN = ["Show the git status."]


def codex_search(env):
    codex(env, "codex-search", "search", SEARCH_TURN)


def codex_slow(env):
    codex(env, "codex-slow", "search", SEARCH_TURN, slow=True)


def qwen_slow(env):
    qwen_search(env, "qwen-slow", slow=True)


def claude_slow(env):
    claude(env, "claude-slow", slow=True)


def gemini_slow(env):
    gemini(env, "gemini-slow", slow=True)


def qwen_search(env, name="qwen-search", slow=False):
    command, args, server_env = server_entry(name, "search", slow)
    home = OUT / f"home-{name}"
    settings = home / ".qwen"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "settings.json").write_text(json.dumps({
        "mcpServers": {"core": {"command": command, "args": args, "env": server_env, "trust": True}},
        "security": {"auth": {"selectedType": "openai"}},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}))
    env = {**env, "HOME": str(home), "OPENAI_API_KEY": "offline",
           "OPENAI_BASE_URL": env["MODEL_URL"] + "/v1", "OPENAI_MODEL": "qwen3-coder-plus"}
    with open(OUT / f"{name}.err", "w") as err:
        subprocess.run([str(BIN / "qwen"), "-p", SEARCH_TURN[0], "--yolo"], env=env,
                       cwd=OUT / "work", stdout=err, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=TURN_LIMIT)


def copilot_slow(env):
    """GitHub Copilot CLI in its offline mode (a local OpenAI-compatible provider), in a search
    session beside a slow upstream server."""
    command, args, server_env = server_entry("copilot-slow", "search", slow=True)
    home = OUT / "home-copilot"
    (home / ".copilot").mkdir(parents=True, exist_ok=True)
    (home / ".copilot" / "mcp-config.json").write_text(json.dumps({"mcpServers": {"core": {
        "type": "local", "command": command, "args": args, "env": server_env, "tools": ["*"]}}}))
    env = {**env, "HOME": str(home), "COPILOT_HOME": str(home / ".copilot"),
           "COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": env["MODEL_URL"] + "/v1",
           "COPILOT_PROVIDER_API_KEY": "offline", "COPILOT_MODEL": "gpt-4.1",
           "COPILOT_AUTO_UPDATE": "false"}
    with open(OUT / "copilot-slow.err", "w") as err:
        subprocess.run([str(BIN / "copilot"), "-p", SEARCH_TURN[0], "--allow-all-tools"],
                       env=env, cwd=OUT / "work", stdout=err, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=TURN_LIMIT)


def opencode_slow(env):
    """opencode with an OpenAI-compatible provider (the stand-in), in a search session beside a
    slow upstream server."""
    command, args, server_env = server_entry("opencode-slow", "search", slow=True)
    config = OUT / "home-opencode" / ".config"
    (config / "opencode").mkdir(parents=True, exist_ok=True)
    (config / "opencode" / "opencode.json").write_text(json.dumps({
        "provider": {"standin": {"npm": "@ai-sdk/openai-compatible", "name": "stand-in",
                                 "options": {"baseURL": env["MODEL_URL"] + "/v1", "apiKey": "offline"},
                                 "models": {"m": {"name": "m"}}}},
        "model": "standin/m", "autoupdate": False, "share": "disabled",
        "mcp": {"core": {"type": "local", "command": [command, *args], "environment": server_env,
                         "enabled": True}}}))
    env = {**env, "HOME": str(OUT / "home-opencode"), "XDG_CONFIG_HOME": str(config),
           "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    with open(OUT / "opencode-slow.err", "w") as err:
        subprocess.run([str(BIN / "opencode"), "run", "--auto", "-m", "standin/m", SEARCH_TURN[0]],
                       env=env, cwd=OUT / "work", stdout=err, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=TURN_LIMIT)


def wire(name):
    """(time, direction, message) of every line of NAME.wire."""
    rows = []
    path = OUT / f"{name}.wire"
    for line in path.read_text().splitlines() if path.exists() else []:
        at, way, text = line.split(" ", 2)
        try:
            rows.append((float(at), way, json.loads(text)))
        except ValueError:
            pass
    return rows


API = {"claude": "anthropic", "codex": "openai", "gemini": "gemini"}


def search_verdict(name, version):
    """What a session showed on the wire: how long its first listing took, what it offered,
    and whether git_status was reached (through tools_call, or directly)."""
    rows = wire(name)
    asked = next(((at, m.get("id")) for at, way, m in rows
                  if way == "C>S" and m.get("method") == "tools/list"), None)
    listed = next(((at, m) for at, way, m in rows if asked and way == "S>C"
                   and m.get("id") == asked[1] and "tools" in (m.get("result") or {})), None)
    names = [t["name"] for t in listed[1]["result"]["tools"]] if listed else []
    called = [m["params"]["arguments"].get("name") for _, way, m in rows
              if way == "C>S" and m.get("method") == "tools/call"
              and m.get("params", {}).get("name") == "tools_call"]
    searched = any(way == "C>S" and m.get("method") == "tools/call"
                   and m.get("params", {}).get("name") == "tools_search" for _, way, m in rows)
    return {
        "client": name, "version": version,
        "first tools/list offers": names,
        "first tools/list answered in": (
            f"{1000 * (listed[0] - asked[0]):.0f} ms" if listed else "?"),
        "tools_search called": searched,
        "tools_call reached": called,
        "git_status called directly": any(
            way == "C>S" and m.get("method") == "tools/call"
            and m.get("params", {}).get("name") == "git_status" for _, way, m in rows),
    }


def same_turn(name):
    """Whether the model request right after the groups_enable call already offers git tools."""
    path = OUT / "model.log"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    rows = [r for r in rows if r["api"] == API[name]]
    for i, row in enumerate(rows[:-1]):
        if (row["call"] or "").endswith("groups_enable"):
            return "yes" if rows[i + 1]["git_status_offered"] else "no"
    return "?"


def verdict(name, version):
    rows = wire(name)
    changed = next((at for at, way, m in rows
                    if way == "S>C" and m.get("method") == "notifications/tools/list_changed"), None)
    relisted = next((at for at, way, m in rows
                     if changed and at >= changed and way == "C>S" and m.get("method") == "tools/list"), None)
    called = any(way == "C>S" and m.get("method") == "tools/call"
                 and m.get("params", {}).get("name") == "git_status" for _, way, m in rows)
    through = any(way == "C>S" and m.get("method") == "tools/call"
                  and m.get("params", {}).get("name") == "tools_call"
                  and m["params"].get("arguments", {}).get("name") == "git_status"
                  for _, way, m in rows)
    return {
        "client": name, "version": version,
        "list_changed sent": changed is not None,
        "re-listed after it": f"yes, {1000 * (relisted - changed):.0f} ms later" if relisted else "no",
        "new tools offered in the same turn": same_turn(name),
        "next turn calls a new tool": ("yes (git_status)" if called
                                       else "through tools_call (git_status)" if through else "no"),
    }


def version(tool):
    try:
        out = subprocess.run([str(BIN / tool), "--version"], capture_output=True, text=True,
                             timeout=60)
    except OSError as e:
        return f"not run: {e.strerror}"
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else "?"


def main():
    (OUT / "work").mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(OUT / "work")], check=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREMCP_")}
    model_env = {**env, "MODEL_LOG": str(OUT / "model.log")}
    model = subprocess.Popen([sys.executable, str(HERE / "model.py"), str(port)], env=model_env)
    env["MODEL_URL"] = f"http://127.0.0.1:{port}"
    time.sleep(0.5)
    results = []
    try:
        for name, run in [("claude", claude), ("codex", codex), ("gemini", gemini)]:
            try:
                run(env)
            except Exception as e:  # Reported, and the other clients still run.
                print(f"{name}: {e} (see {OUT}/{name}.err)", file=sys.stderr)
            results.append(verdict(name, version(name)))
        for name, tool, run in [("codex-search", "codex", codex_search),
                                ("qwen-search", "qwen", qwen_search),
                                ("codex-slow", "codex", codex_slow),
                                ("claude-slow", "claude", claude_slow),
                                ("gemini-slow", "gemini", gemini_slow),
                                ("qwen-slow", "qwen", qwen_slow),
                                ("copilot-slow", "copilot", copilot_slow),
                                ("opencode-slow", "opencode", opencode_slow)]:
            try:
                run(env)
            except Exception as e:  # Reported, and the other clients still run.
                print(f"{name}: {e} (see {OUT}/{name}.err)", file=sys.stderr)
            results.append(search_verdict(name, version(tool)))
    finally:
        model.kill()
    print(json.dumps(results, indent=1))


main()
