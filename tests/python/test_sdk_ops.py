"""The Ops group through the official MCP Python SDK client: one call of every tool
(shell_run, bootstrap, repo_setup, stale_containers_find, session_record, core_status) on a
`coremcp stdio` with the Ops, Registry and Session groups, a temporary HOME, a real bare git
repository as the Registry source and a Claude Code-shaped transcript.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import StdioServerParameters

from conftest import CoreMcpServer, copy_libs, logged_server, structured

pytestmark = pytest.mark.anyio

TEST_TIMEOUT = 60
GROUP_LIBS = ("libcoremcp_ops.so", "libcoremcp_registry.so", "libcoremcp_session.so")
SESSION = "7c3f0a52-9a41-4b8e-b7a3-2e5d1c0f9b64"


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


def transcript(cwd: str, turns: int) -> str:
    """Lines of the shape Claude Code writes: a prompt, a tool call, its result, a reply."""
    lines = []
    for i in range(turns):
        def event(kind: str, second: int, message: object) -> str:
            return json.dumps({"type": kind, "sessionId": SESSION, "cwd": cwd, "uuid": f"{kind}-{i}-{second}",
                               "timestamp": f"2026-12-01T10:{i:02}:{second:02}.000Z", "message": message})
        lines.append(event("user", 0, {"role": "user", "content": f"step {i}"}))
        lines.append(event("assistant", 1, {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": "ls"}}]}))
        lines.append(event("user", 2, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "README.md"}]}))
        lines.append(event("assistant", 3, {"role": "assistant", "content": [{"type": "text", "text": "done"}]}))
    return "\n".join(lines) + "\n"


@pytest.fixture
def server(tmp_path: Path, coremcp_bin: Path, test_libs_dir: Path) -> Iterator[CoreMcpServer]:
    plugins = copy_libs(test_libs_dir, tmp_path / "ops-plugins", GROUP_LIBS)
    root, home, data = (tmp_path / name for name in ("root", "home", "data"))
    # A local source is cloned only from inside the roots.
    origin = root / "origin"
    for folder in (root, home, data, origin / "work"):
        folder.mkdir(parents=True)
    (origin / "work" / "README.md").write_text("hello\n")
    git(origin / "work", "init", "-q", "-b", "main")
    git(origin / "work", "add", ".")
    git(origin / "work", "commit", "-q", "-m", "first")
    git(origin, "clone", "-q", "--bare", "work", "demo.git")
    (root / "session.jsonl").write_text(transcript(str(root), 3))
    params = StdioServerParameters(
        command=str(coremcp_bin),
        args=["stdio", "--plugins", str(plugins), "--root", str(root), "--data", str(data),
              "--advertise", "http://devbox.example:7070/mcp"],
        env={**os.environ, "HOME": str(home)},
        cwd=str(root),
    )
    yield from logged_server(params, tmp_path / "coremcp-ops-stderr.log")


async def test_every_ops_tool_once(server: CoreMcpServer, tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with server.client() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            ops = {"shell_run", "bootstrap", "repo_setup", "stale_containers_find", "session_record", "core_status"}
            assert ops <= set(tools)
            assert tools["shell_run"].annotations.destructive_hint is True
            assert tools["core_status"].annotations.read_only_hint is True

            ran = structured(await client.call_tool("shell_run", {"script": "echo hi; exit 4", "shell": "bash"}))
            assert (ran["stdout"], ran["exit_code"]) == ("hi\n", 4)

            boot = structured(await client.call_tool(
                "bootstrap", {"client": "codex", "register_host": True, "dry_run": True}))
            assert boot["client"]["action"] == "would_write"
            assert not (tmp_path / "home" / ".codex" / "config.toml").exists()
            boot = structured(await client.call_tool("bootstrap", {"register_host": True}))
            assert boot["host"]["action"] == "added"
            assert boot["host"]["core_mcp_url"] == "http://devbox.example:7070/mcp"

            structured(await client.call_tool("registry_project_add", {"key": "CORE", "name": "Core"}))
            structured(await client.call_tool("registry_source_add", {
                "project": "CORE", "name": "demo", "kind": "git",
                "url": str(tmp_path / "root" / "origin" / "demo.git")}))
            setup = structured(await client.call_tool("repo_setup", {"source": "CORE/demo"}))
            assert (setup["action"], setup["registry"]["recorded"]) == ("cloned", True)
            assert (tmp_path / "root" / "demo" / "README.md").is_file()

            dead = f"unix://{tmp_path}/dead.sock"
            structured(await client.call_tool("registry_host_add", {
                "name": "gone", "address": "127.0.0.1", "docker_endpoint": dead}))
            stale = structured(await client.call_tool("stale_containers_find", {"hosts": ["gone"]}))
            assert stale["total"] == 0
            assert stale["hosts"][0]["ok"] is False and dead in stale["hosts"][0]["error"]

            recorded = structured(await client.call_tool(
                "session_record", {"transcript_path": "session.jsonl", "title": "sdk run"}))
            assert (recorded["recorded"], recorded["session_id"]) == (True, SESSION)
            assert recorded["stats"]["turns"] == 3 and recorded["stats"]["tool_calls"] == 3
            again = structured(await client.call_tool("session_record", {"transcript_path": "session.jsonl"}))
            assert again["recorded"] is False and again["recording_id"] == recorded["recording_id"]
            listed = structured(await client.call_tool("session_list_recorded", {"query": "sdk run"}))
            assert [r["recording_id"] for r in listed["items"]] == [recorded["recording_id"]]

            status = structured(await client.call_tool("core_status", {"include": ["groups"]}))
            assert {"ops", "registry", "session"} <= {g["id"] for g in status["groups"]}
            assert status["mode"] == "proxy"

            refused = await client.call_tool("session_record", {"transcript_path": "/etc/hostname"})
            assert refused.is_error and "transcript_path" in refused.content[0].text
