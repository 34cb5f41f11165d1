"""Drive a real `coremcp serve` with the official MCP Python SDK over Streamable HTTP.

Run (from the workspace root, after building the binary and the plugins):

    COREMCP_BIN=$PWD/target/debug/coremcp COREMCP_TEST_LIBS=$PWD/target/debug \
        target/pyenv/bin/python -m pytest tests/python/test_sdk_http.py -q

Each test starts its own server on a free loopback port (`--listen 127.0.0.1:0`; the port is
read from the server's start line) and talks to it only through the SDK's
`streamable_http_client` and `mcp.Client`; the JSON-RPC traffic is recorded as in conftest.py
and printed, with the server's stderr, for a failing test. Every test is bounded by
`anyio.fail_after`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from conftest import (
    EXPECTED_VERSION, MODERN, SDK_MODE, WireLog, _RecordingReadStream, _RecordingWriteStream, index_plugins,
    install_plugin,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio

TEST_TIMEOUT = 30
START_TIMEOUT = 20
ACCEPTED_VERSIONS = {"2025-06-18", "2025-11-25"}
FIXTURE_TOOLS = {
    "fixture_echo",
    "fixture_panic",
    "fixture_sleep",
    "fixture_big",
    "fixture_stdout",
    "fixture_log",
    "fixture_config",
}
METHOD_NOT_FOUND = -32601
LISTENING = re.compile(r"listening on (https?://\S+/mcp)")


@dataclass
class HttpServer:
    """A running `coremcp serve` and the record of what crossed the wire."""

    url: str
    process: subprocess.Popen[bytes]
    stderr_path: Path
    wire: WireLog

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def status(self) -> dict[str, Any]:
        """GET /api/status."""
        with urllib.request.urlopen(self.url.removesuffix("/mcp") + "/api/status", timeout=10) as reply:
            return json.loads(reply.read())

    async def wait_stderr(self, needle: str) -> None:
        while needle not in self.stderr():
            await anyio.sleep(0.02)

    @asynccontextmanager
    async def transport(self) -> AsyncIterator[tuple[Any, Any]]:
        """The SDK's streamable HTTP transport to this server, with recorded streams."""
        self.wire.mark(f"connect {self.url}")
        async with streamable_http_client(self.url) as (read_stream, write_stream):
            yield _RecordingReadStream(read_stream, self.wire), _RecordingWriteStream(write_stream, self.wire)

    def client(self, **kwargs: Any) -> Client:
        """`mcp.Client` in the suite's mode (COREMCP_TEST_MODE) unless `mode=` says otherwise."""
        kwargs.setdefault("mode", SDK_MODE)
        return Client(self.transport(), **kwargs)


def _start(binary: Path, plugins: Path, groups: str, stderr_path: Path, extra: tuple[str, ...] = ()) -> HttpServer:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREMCP_")}
    env["COREMCP_DATA"] = str(stderr_path.parent / "data")
    with stderr_path.open("wb") as errlog:
        process = subprocess.Popen(
            [str(binary), "serve", "--plugins", str(plugins), "--groups", groups, "--listen", "127.0.0.1:0", *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            env=env,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        text = stderr_path.read_text(encoding="utf-8", errors="replace")
        found = LISTENING.search(text)
        if found:
            return HttpServer(url=found.group(1), process=process, stderr_path=stderr_path, wire=WireLog())
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"coremcp serve did not start (exit {process.poll()}):\n{text}", pytrace=False)
        time.sleep(0.02)


def _stop(server: HttpServer) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            code = server.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
            code = None
        print(f"---- coremcp serve exited with {code} after SIGTERM")
    print(f"---- coremcp stderr ({server.stderr_path}) ----\n{server.stderr()[-20000:]}")
    print(f"---- JSON-RPC wire log ----\n{server.wire.dump()}")


def _plugins(tmp_path: Path, libs: Path, files: dict[str, str]) -> Path:
    """A plugins folder with `files` (name in the folder -> built library name) copied in."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    for name, built in files.items():
        source = libs / built
        if not source.is_file():
            pytest.fail(f"{source} is missing: build the workspace first", pytrace=False)
        shutil.copy2(source, folder / name)
    return index_plugins(folder)


@pytest.fixture
def http_server(tmp_path: Path, coremcp_bin: Path, test_libs_dir: Path) -> Iterator[HttpServer]:
    """`coremcp serve` with the fixture plugin."""
    plugins = _plugins(tmp_path, test_libs_dir, {"libcoremcp_fixture.so": "libcoremcp_fixture.so"})
    server = _start(coremcp_bin, plugins, "fixture", tmp_path / "serve-stderr.log")
    try:
        yield server
    finally:
        _stop(server)


async def test_sdk_client_connects_lists_calls_and_leaves(http_server: HttpServer) -> None:
    """Connect in the suite's era, list, call, leave: a 2025 client opens a session (and DELETE
    ends it); a 2026 client has none — no `initialize`, no `Mcp-Session-Id`."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with http_server.client() as client:
            assert client.protocol_version == EXPECTED_VERSION
            # Pinned to 2026 the client does not discover, so it knows nothing of the server.
            if SDK_MODE != "2026-07-28":
                assert client.server_info is not None and client.server_info.name == "coremcp"
                assert client.server_capabilities.tools is not None

            listed = await client.list_tools()
            names = {tool.name for tool in listed.tools}
            assert listed.next_cursor is None, "every tool on the first page"
            assert FIXTURE_TOOLS <= names, f"missing {sorted(FIXTURE_TOOLS - names)}"
            for tool in listed.tools:
                assert tool.input_schema.get("type") == "object", tool

            args = {"text": "over streamable http", "n": 2}
            result = await client.call_tool("fixture_echo", args)
            assert not result.is_error, result
            assert result.structured_content == args
            texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
            assert [json.loads(t) for t in texts] == [args]

            assert http_server.status()["sessions"] == (0 if MODERN else 1)

    if MODERN:
        assert not http_server.wire.requests("initialize"), "a 2026 client needs no initialize"
        if SDK_MODE == "auto":
            assert http_server.wire.requests("server/discover"), "auto mode probes server/discover"
        assert "session created" not in http_server.stderr()
        return
    # The SDK's sessionless probe was answered at once with -32601, and it fell back.
    probes = http_server.wire.requests("server/discover")
    if probes:
        reply = http_server.wire.response_to(probes[0])
        assert reply is not None and reply["error"]["code"] == METHOD_NOT_FOUND, reply
    assert http_server.wire.requests("initialize"), "the client did not initialize"
    # Leaving the client sent DELETE, which ended the session.
    assert http_server.status()["sessions"] == 0
    assert "session ended" in http_server.stderr()


# `logging/setLevel` is the handshake era's way to ask for log messages (deprecated from
# 2026-07-28 on, which coremcp does not speak yet).
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_log_messages_arrive_on_the_call_stream(http_server: HttpServer) -> None:
    messages: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        messages.append(params)

    with anyio.fail_after(TEST_TIMEOUT):
        async with http_server.client(mode="legacy", logging_callback=on_log) as client:
            await client.set_logging_level("debug")
            result = await client.call_tool("fixture_log", {})
            assert not result.is_error, result
            assert result.structured_content == {"logged": 4}
            # The notifications came on the call's own stream, before its answer.
            data = [m.data for m in messages]
            assert "fixture log at Error" in data, data
            assert all(m.logger == "fixture" for m in messages), messages


async def test_the_get_stream_carries_list_changed(tmp_path: Path, coremcp_bin: Path, test_libs_dir: Path) -> None:
    plugins = _plugins(tmp_path, test_libs_dir, {"libcoremcp_swap.so": "libcoremcp_fixture_swap_v1.so"})
    server = _start(coremcp_bin, plugins, "swap", tmp_path / "serve-stderr.log")
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    try:
        with anyio.fail_after(TEST_TIMEOUT):
            async with server.client(mode="legacy", message_handler=on_message) as client:
                before = {tool.name for tool in (await client.list_tools()).tools}
                assert before == {"swap_hello", "swap_wait"}, before
                # The SDK opens its GET stream after `notifications/initialized`.
                await server.wait_stderr("server-to-client stream open")
                # Swap the plugin the way an operator does (plugins install), and reload.
                install_plugin(plugins, test_libs_dir / "libcoremcp_fixture_swap_v2.so")
                server.process.send_signal(signal.SIGHUP)
                await changed.wait()
                after = {tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools}
                assert after == {"swap_hello", "swap_wait", "swap_added"}, after
    finally:
        _stop(server)
    assert server.process.returncode == 0, "SIGTERM stops the server cleanly"


def _metrics(server: HttpServer) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """GET /metrics, parsed by the Prometheus client's own parser (which refuses malformed
    exposition text): each sample by name and sorted labels."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(server.url.removesuffix("/mcp") + "/metrics", timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = reply.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        assert family.name.startswith("coremcp_"), family.name
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


async def test_metrics_count_calls_by_outcome(http_server: HttpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with http_server.client() as client:
            for _ in range(3):
                assert not (await client.call_tool("fixture_echo", {"text": "x"})).is_error
            panicked = await client.call_tool("fixture_panic", {})
            assert panicked.is_error
            samples = _metrics(http_server)

    def calls(tool: str, outcome: str) -> float:
        return samples.get(("coremcp_calls_total", (("group", "fixture"), ("outcome", outcome), ("tool", tool))), 0)

    assert calls("fixture_echo", "ok") == 3, samples
    assert calls("fixture_panic", "tool_error") == 1, samples
    assert samples[("coremcp_sessions_open", ())] == (0 if MODERN else 1)
    assert samples[("coremcp_calls_in_flight", ())] == 0
    count = samples[("coremcp_call_duration_seconds_count", (("group", "fixture"),))]
    assert count == 4, samples
    load = samples[("coremcp_plugin_load_seconds", (("group", "fixture"),))]
    assert 0 < load < 30, load
    errors = http_server.status()["recent_errors"]
    assert errors and errors[-1]["tool"] == "fixture_panic", errors


def _openssl(folder: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)


def _test_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A CA of the test's own and a server certificate it signed for 127.0.0.1: (ca, cert, key)."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")
    _openssl(folder, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=sdk-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign")
    _openssl(folder, "req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=coremcp")
    (folder / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    _openssl(folder, "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "server.ext")
    return folder / "ca.pem", folder / "server.pem", folder / "server.key"


async def test_the_sdk_client_speaks_to_coremcp_over_https(tmp_path: Path, coremcp_bin: Path, test_libs_dir: Path) -> None:
    import ssl

    import httpx2

    ca, cert, key = _test_ca(tmp_path)
    plugins = _plugins(tmp_path, test_libs_dir, {"libcoremcp_fixture.so": "libcoremcp_fixture.so"})
    server = _start(coremcp_bin, plugins, "fixture", tmp_path / "serve-stderr.log",
                    ("--tls-cert", str(cert), "--tls-key", str(key)))
    try:
        assert server.url.startswith("https://127.0.0.1:"), server.url
        trusting = ssl.create_default_context(cafile=str(ca))
        with anyio.fail_after(TEST_TIMEOUT):
            async with httpx2.AsyncClient(verify=trusting) as http:
                async with Client(streamable_http_client(server.url, http_client=http)) as client:
                    result = await client.call_tool("fixture_echo", {"text": "over https"})
                    assert not result.is_error, result
                    assert result.structured_content == {"text": "over https"}
            # A client that trusts only the system's roots refuses the test CA's certificate.
            async with httpx2.AsyncClient() as http:
                with pytest.raises(Exception) as refused:
                    await http.get(server.url.removesuffix("/mcp") + "/healthz")
                assert "certificate" in str(refused.value).lower(), refused.value
    finally:
        _stop(server)


# --------------------------------------------------------------------------- 2026-07-28


@pytest.mark.skipif(not MODERN, reason="subscriptions/listen is 2026-07-28")
async def test_a_subscription_hears_of_a_reload(tmp_path: Path, coremcp_bin: Path, test_libs_dir: Path) -> None:
    """`subscriptions/listen` replaces the GET stream: a plugin swapped and reloaded (SIGHUP)
    is announced on the open subscription."""
    from mcp.client.subscriptions import ToolsListChanged

    plugins = _plugins(tmp_path, test_libs_dir, {"libcoremcp_swap.so": "libcoremcp_fixture_swap_v1.so"})
    server = _start(coremcp_bin, plugins, "swap", tmp_path / "serve-stderr.log")
    try:
        with anyio.fail_after(TEST_TIMEOUT):
            async with server.client() as client:
                before = {tool.name for tool in (await client.list_tools()).tools}
                assert before == {"swap_hello", "swap_wait"}, before
                async with client.listen(tools_list_changed=True) as sub:
                    assert sub.honored is not None and sub.honored.tools_list_changed, sub.honored
                    install_plugin(plugins, test_libs_dir / "libcoremcp_fixture_swap_v2.so")
                    server.process.send_signal(signal.SIGHUP)
                    event = await sub.__anext__()
                    assert isinstance(event, ToolsListChanged), event
                after = {tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools}
                assert after == {"swap_hello", "swap_wait", "swap_added"}, after
    finally:
        _stop(server)
    assert server.process.returncode == 0, "SIGTERM stops the server cleanly"


@pytest.mark.skipif(not MODERN, reason="sessionless requests are 2026-07-28")
async def test_two_clients_with_the_same_ids_never_meet(http_server: HttpServer) -> None:
    """Both clients number their requests alike and share a principal (and so the one
    sessionless session): each still gets its own answers, interleaved calls and all."""

    async def run(client: Client, tag: str, got: list[str]) -> None:
        for n in range(15):
            result = await client.call_tool("fixture_echo", {"text": f"{tag}-{n}"})
            assert not result.is_error, result
            got.append(result.structured_content["text"])

    with anyio.fail_after(TEST_TIMEOUT):
        async with http_server.client() as one, http_server.client() as two:
            got_one: list[str] = []
            got_two: list[str] = []
            async with anyio.create_task_group() as group:
                group.start_soon(run, one, "one", got_one)
                group.start_soon(run, two, "two", got_two)
    assert got_one == [f"one-{n}" for n in range(15)]
    assert got_two == [f"two-{n}" for n in range(15)]
