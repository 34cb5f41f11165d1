"""Fixtures for driving the real `coremcp` binary with the official MCP Python SDK.

Required environment (exported by the test script):

* COREMCP_BIN        absolute path of the built `coremcp` binary;
* COREMCP_TEST_LIBS  absolute path of a folder holding the built plugin
                     libraries (at least libcoremcp_publishing.so and
                     libcoremcp_fixture.so; test_sdk_groups.py also needs
                     libcoremcp_git.so and libcoremcp_files.so).

* COREMCP_TEST_MODE  (optional) the protocol era the whole suite speaks:
                     `auto` (the SDK's default: probe `server/discover`, so
                     2026-07-28 against coremcp), `2026-07-28` (pinned, no
                     probe), `legacy` (the `initialize` handshake at the SDK's
                     newest 2025 revision, 2025-11-25) or `2025-06-18` (the
                     handshake offering 2025-06-18). The test script runs the
                     suite once per mode.

Each test gets its own temporary plugins folder holding copies of just those
two libraries, plus an executable copy of fake_publish_cli.py that the
`publishing` plugin runs via COREMCP_PUBLISH_CMD.

All traffic goes through the SDK's own stdio transport (`mcp.client.stdio.
stdio_client`) and session classes (`mcp.Client` / `mcp.ClientSession`). The
transport's streams are wrapped only to *record* the JSON-RPC messages; the
record, together with the server's stderr, is printed at teardown, and pytest
shows it for failing tests only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage

HERE = Path(__file__).resolve().parent
FAKE_PUBLISH_CLI = HERE / "fake_publish_cli.py"
PLUGIN_LIBS = ("libcoremcp_publishing.so", "libcoremcp_fixture.so")

MODE = os.environ.get("COREMCP_TEST_MODE", "auto")
# The version each mode must end up speaking with coremcp.
_EXPECTED = {"auto": "2026-07-28", "2026-07-28": "2026-07-28", "legacy": "2025-11-25", "2025-06-18": "2025-06-18"}
if MODE not in _EXPECTED:
    raise RuntimeError(f"COREMCP_TEST_MODE={MODE!r}: expected one of {', '.join(_EXPECTED)}")
EXPECTED_VERSION = _EXPECTED[MODE]
# Whether the suite speaks the stateless revision (no initialize, no session).
MODERN = EXPECTED_VERSION == "2026-07-28"
# The SDK's `mode=`: 2025-06-18 is reached through the legacy handshake (see _offer_version).
SDK_MODE = "legacy" if MODE == "2025-06-18" else MODE


def _offer_version(item: SessionMessage) -> SessionMessage:
    """Under COREMCP_TEST_MODE=2025-06-18, the `initialize` the SDK sends offers 2025-06-18
    (the SDK always offers its newest 2025 revision; coremcp must answer the one offered)."""
    message = item.message
    if MODE == "2025-06-18" and getattr(message, "method", None) == "initialize" and message.params:
        message.params["protocolVersion"] = "2025-06-18"
    return item


# Per-message cap when printing the wire log, so a multi-megabyte result
# cannot drown the failure report.
_WIRE_DUMP_MAX_CHARS = 2000


@pytest.fixture
def anyio_backend() -> str:
    """The SDK is asyncio-first; run every `@pytest.mark.anyio` test on asyncio."""
    return "asyncio"


def _required_path(var: str) -> Path:
    value = os.environ.get(var)
    if not value:
        pytest.fail(f"{var} is not set; the test script must export it (see conftest.py)", pytrace=False)
    path = Path(value)
    if not path.is_absolute() or not path.exists():
        pytest.fail(f"{var}={value!r} must be an absolute path that exists", pytrace=False)
    return path


@pytest.fixture(scope="session")
def coremcp_bin() -> Path:
    path = _required_path("COREMCP_BIN")
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(f"COREMCP_BIN={path} is not an executable file", pytrace=False)
    return path


@pytest.fixture(scope="session")
def test_libs_dir() -> Path:
    path = _required_path("COREMCP_TEST_LIBS")
    missing = [name for name in PLUGIN_LIBS if not (path / name).is_file()]
    if missing:
        pytest.fail(f"COREMCP_TEST_LIBS={path} lacks {', '.join(missing)}", pytrace=False)
    return path


def index_plugins(folder: Path) -> Path:
    """Records the libraries copied into `folder` as installed (`coremcp plugins index`): the
    host loads no library nobody installed."""
    done = subprocess.run(
        [os.environ["COREMCP_BIN"], "plugins", "--plugins", str(folder), "index"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"coremcp plugins index {folder}: {done.stderr}", pytrace=False)
    return folder


def install_plugin(folder: Path, library: Path) -> None:
    """Installs `library` into `folder` as an operator does (`coremcp plugins install`)."""
    done = subprocess.run(
        [os.environ["COREMCP_BIN"], "plugins", "--plugins", str(folder), "install", str(library)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"coremcp plugins install {library}: {done.stderr}", pytrace=False)


@pytest.fixture
def plugins_dir(tmp_path: Path, test_libs_dir: Path) -> Path:
    """A fresh plugins folder holding copies of exactly the two plugins under test, installed."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    for name in PLUGIN_LIBS:
        shutil.copy2(test_libs_dir / name, folder / name)
    return index_plugins(folder)


@pytest.fixture
def fake_publish_cmd(tmp_path: Path) -> Path:
    """An executable copy of fake_publish_cli.py (run through its shebang).

    COREMCP_PUBLISH_CMD is split on whitespace with no shell and no quoting,
    so the program path itself must not contain whitespace.
    """
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "fake_publish_cli.py"
    shutil.copy2(FAKE_PUBLISH_CLI, script)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    if any(ch.isspace() for ch in str(script)):
        pytest.fail(
            f"temporary path {script!s} contains whitespace, which COREMCP_PUBLISH_CMD cannot express; "
            "run pytest with a --basetemp (or TMPDIR) free of spaces",
            pytrace=False,
        )
    return script


@dataclass
class WireLog:
    """Every JSON-RPC message that crossed the stdio pipes, in order.

    Entries are (direction, message) with direction "->" (client to server) or
    "<-" (server to client); a message is the JSON object as sent, or the repr
    of a line the transport failed to parse.
    """

    entries: list[tuple[str, Any]] = field(default_factory=list)

    def record(self, direction: str, item: SessionMessage | Exception) -> None:
        if isinstance(item, SessionMessage):
            self.entries.append((direction, item.message.model_dump(by_alias=True, mode="json", exclude_unset=True)))
        else:
            self.entries.append((direction, repr(item)))

    def mark(self, note: str) -> None:
        self.entries.append(("--", note))

    def requests(self, method: str) -> list[dict[str, Any]]:
        """Client requests with the given method."""
        return [
            msg
            for direction, msg in self.entries
            if direction == "->" and isinstance(msg, dict) and msg.get("method") == method and "id" in msg
        ]

    def response_to(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The server's response (result or error) to a recorded request, if any arrived."""
        for direction, msg in self.entries:
            if (
                direction == "<-"
                and isinstance(msg, dict)
                and "method" not in msg
                and msg.get("id") == request["id"]
                and ("result" in msg or "error" in msg)
            ):
                return msg
        return None

    def dump(self) -> str:
        lines = []
        for direction, msg in self.entries:
            text = msg if isinstance(msg, str) else json.dumps(msg)
            if len(text) > _WIRE_DUMP_MAX_CHARS:
                text = f"{text[:_WIRE_DUMP_MAX_CHARS]}... [{len(text)} chars]"
            lines.append(f"{direction} {text}")
        return "\n".join(lines)


class _RecordingReadStream:
    """Pass-through wrapper over the transport's read stream that logs each item."""

    def __init__(self, inner: Any, wire: WireLog) -> None:
        self._inner = inner
        self._wire = wire

    async def receive(self) -> SessionMessage | Exception:
        item = await self._inner.receive()
        self._wire.record("<-", item)
        return item

    def __aiter__(self) -> _RecordingReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _RecordingReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _RecordingWriteStream:
    """Pass-through wrapper over the transport's write stream that logs each message."""

    def __init__(self, inner: Any, wire: WireLog) -> None:
        self._inner = inner
        self._wire = wire

    async def send(self, item: SessionMessage, /) -> None:
        item = _offer_version(item) if isinstance(item, SessionMessage) else item
        self._wire.record("->", item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _RecordingWriteStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@dataclass
class CoreMcpServer:
    """How to launch `coremcp stdio` for one test, and what it said."""

    params: StdioServerParameters
    wire: WireLog
    errlog: TextIO

    def _params(self, env: dict[str, str] | None) -> StdioServerParameters:
        if not env:
            return self.params
        return self.params.model_copy(update={"env": {**(self.params.env or {}), **env}})

    @asynccontextmanager
    async def transport(self, env: dict[str, str] | None = None) -> AsyncIterator[tuple[Any, Any]]:
        """The SDK's stdio transport to a fresh server process, with recorded streams.

        `env` overrides individual environment variables for this process.
        """
        self.wire.mark("spawn coremcp")
        async with stdio_client(self._params(env), errlog=self.errlog) as (read_stream, write_stream):
            yield _RecordingReadStream(read_stream, self.wire), _RecordingWriteStream(write_stream, self.wire)

    def client(self, env: dict[str, str] | None = None, **kwargs: Any) -> Client:
        """A high-level `mcp.Client` (an async context manager), in the suite's mode
        (COREMCP_TEST_MODE) unless `mode=` says otherwise."""
        kwargs.setdefault("mode", SDK_MODE)
        return Client(self.transport(env), **kwargs)

    @asynccontextmanager
    async def legacy_session(self) -> AsyncIterator[ClientSession]:
        """A low-level `ClientSession` that went straight to `initialize` (no probe)."""
        async with self.transport() as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                await session.initialize()
                yield session


def copy_libs(test_libs_dir: Path, folder: Path, names: tuple[str, ...]) -> Path:
    """A new plugins `folder` holding copies of the libraries `names` from COREMCP_TEST_LIBS."""
    folder.mkdir()
    for name in names:
        if not (test_libs_dir / name).is_file():
            pytest.fail(f"COREMCP_TEST_LIBS lacks {name}", pytrace=False)
        shutil.copy2(test_libs_dir / name, folder / name)
    return index_plugins(folder)


def logged_server(params: StdioServerParameters, stderr_path: Path) -> Iterator[CoreMcpServer]:
    """A fixture body: the server for `params`, its stderr in `stderr_path`; at teardown the end
    of that log and the wire log are printed (pytest shows them for failing tests only)."""
    with stderr_path.open("w", encoding="utf-8") as errlog:
        server = CoreMcpServer(params=params, wire=WireLog(), errlog=errlog)
        yield server
    stderr = stderr_path.read_text(encoding="utf-8", errors="replace")
    print(f"---- coremcp stderr ({stderr_path}) ----\n{stderr[-20000:]}")
    print(f"---- JSON-RPC wire log ----\n{server.wire.dump()}")


def structured(result: Any) -> dict[str, Any]:
    """The structured content of a successful `CallToolResult`."""
    assert not result.is_error, result.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@pytest.fixture
def coremcp(tmp_path: Path, coremcp_bin: Path, plugins_dir: Path, fake_publish_cmd: Path) -> Iterator[CoreMcpServer]:
    """Launch parameters for `coremcp stdio --plugins <plugins_dir>`."""
    params = StdioServerParameters(
        command=str(coremcp_bin),
        args=["stdio", "--plugins", str(plugins_dir)],
        # The whole caller environment (PATH for the fake CLI's shebang, etc.)
        # plus the publishing command; stdio_client merges this over its own
        # minimal default environment.
        env={**os.environ, "COREMCP_PUBLISH_CMD": str(fake_publish_cmd)},
    )
    yield from logged_server(params, tmp_path / "coremcp-stderr.log")
