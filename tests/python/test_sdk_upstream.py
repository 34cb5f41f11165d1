"""Upstream MCP servers through `coremcp stdio`, with the official MCP Python SDK as the agent.

Run (from the workspace root, after building the binary and the plugins):

    COREMCP_BIN=$PWD/target/debug/coremcp COREMCP_TEST_LIBS=$PWD/target/debug \
        target/pyenv/bin/python -m pytest tests/python/test_sdk_upstream.py -q

Each test starts its own `coremcp stdio` whose one upstream server, "m", is the misbehaving
fixture (tests/fixtures/upstream/misbehave.py) in its `calls` mode, configured in a JSON file
(`COREMCP_MCP_CONFIG`) whose `env` block names a CALL_LOG file: the fixture appends the tool
name of every tools/call it receives to it, which proves whether a call reached the server.
The agent is the SDK in the suite's mode (COREMCP_TEST_MODE): the low-level `ClientSession`
after `initialize` for the 2025 revisions, the high-level `Client` for 2026-07-28, where the
question comes back as an `input_required` result that the client answers by calling again (the
SDK runs that loop); a test that passes an `elicitation_callback` declares the elicitation
capability, one that does not, does not. What is checked is the
approval contract: grants are default-deny, the first call to a newly connected server asks
the human (`elicitation/create`), an accept holds for the rest of the connection, a decline or
cancel refuses the call and every later call to that server in the session, and a client that
cannot be asked is told how to pre-approve. Every test is bounded by `anyio.fail_after`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, ClientSession, MCPError, StdioServerParameters

from conftest import (
    MODERN, SDK_MODE, CoreMcpServer, WireLog, _RecordingReadStream, _RecordingWriteStream, index_plugins,
)
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio

# Upper bound for one test: start-up, up to 30 s waiting for the upstream tools, the calls.
TEST_TIMEOUT = 60
# How long to wait for the upstream server's tools to be published.
PUBLISH_TIMEOUT = 30

MISBEHAVE = Path(__file__).resolve().parent.parent / "fixtures" / "upstream" / "misbehave.py"
# An upstream server on the SDK's own server API, run so that it speaks only 2026-07-28.
MODERN_SERVER = MISBEHAVE.parent / "modern_server.py"
SERVER_ID = "m"
ECHO = f"mcp__{SERVER_ID}__echo"
DECLINED = (
    f'The human declined to use the MCP server "{SERVER_ID}", so "{ECHO}" was not called. '
    "Do not retry it; carry on with the tools you have."
)
DISMISSED = (
    f'The question whether "{ECHO}" may use the MCP server "{SERVER_ID}" was dismissed without an '
    "answer, so nothing was called. Ask the user to approve it, or carry on with the tools you have."
)
APPROVAL_OFF_LINE = "MCP approval is OFF (COREMCP_MCP_REQUIRE_APPROVAL=false) — calls run unattended."
EMPTY_SCHEMA = {"type": "object", "properties": {}}


def texts(result: types.CallToolResult) -> list[str]:
    """The text of every text content block, in order."""
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def describe(result: types.CallToolResult) -> str:
    """A compact rendering of a tool result for assertion messages."""
    text = json.dumps(result.model_dump(by_alias=True, mode="json", exclude_none=True))
    return text if len(text) <= 2000 else f"{text[:2000]}... [{len(text)} chars]"


@dataclass
class Upstream:
    """`coremcp stdio` with the fixture as upstream server "m", and what it recorded."""

    server: CoreMcpServer
    call_log: Path
    stderr_path: Path

    def calls_received(self) -> list[str]:
        """The tool names the fixture received tools/call for, in order (none: no file)."""
        if not self.call_log.exists():
            return []
        return self.call_log.read_text(encoding="utf-8").splitlines()

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def server_requests(self, method: str) -> list[dict[str, Any]]:
        """Requests with the given method that coremcp sent the client."""
        return [
            msg
            for direction, msg in self.server.wire.entries
            if direction == "<-" and isinstance(msg, dict) and msg.get("method") == method and "id" in msg
        ]

    @asynccontextmanager
    async def served(self) -> AsyncIterator[str]:
        """The same coremcp as `coremcp serve` on a free loopback port (its grants given to
        every principal, since an HTTP caller is not `stdio`); its MCP URL."""
        params = self.server.params
        env = dict(params.env or {})
        env["COREMCP_MCP_GRANTS"] = env.get("COREMCP_MCP_GRANTS", "").replace("stdio=", "*=")
        args = ["serve", *params.args[1:], "--listen", "127.0.0.1:0"]
        log = self.stderr_path.with_name("serve-stderr.log")
        with log.open("w", encoding="utf-8") as errlog:
            process = subprocess.Popen([params.command, *args], env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=errlog)
        try:
            url = None
            with anyio.fail_after(20):
                while url is None:
                    found = re.search(r"listening on (http://\S+/mcp)", log.read_text(errors="replace"))
                    url = found.group(1) if found else None
                    assert process.poll() is None, log.read_text(errors="replace")
                    await anyio.sleep(0.02)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=15)
            print(f"---- coremcp serve stderr ----\n{log.read_text(errors='replace')[-10000:]}")

    @asynccontextmanager
    async def transport(self, over: str) -> AsyncIterator[tuple[Any, Any]]:
        """The SDK's own transport to a fresh coremcp (`stdio` or `http`), recorded."""
        if over == "stdio":
            async with self.server.transport() as streams:
                yield streams
            return
        async with self.served() as url, streamable_http_client(url) as (read_stream, write_stream):
            wire = self.server.wire
            yield _RecordingReadStream(read_stream, wire), _RecordingWriteStream(write_stream, wire)

    @asynccontextmanager
    async def session(self, over: str = "stdio", **kwargs: Any) -> AsyncIterator[Any]:
        """A connected agent over a fresh coremcp (`over` stdio or HTTP): an initialized
        `ClientSession` (2025), or a `Client` (2026, which answers `input_required`)."""
        if MODERN:
            async with Client(self.transport(over), mode=SDK_MODE, **kwargs) as client:
                yield client
            return
        async with self.transport(over) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream, **kwargs) as session:
                await session.initialize()
                yield session


@pytest.fixture
def upstream(tmp_path: Path, coremcp_bin: Path, test_libs_dir: Path) -> Iterator[Any]:
    """A factory: `upstream(**env)` gives an `Upstream` whose coremcp has `env` on top of a
    clean environment (no COREMCP_* of the caller's), the fixture plugin, its own data folder,
    and `COREMCP_MCP_CONFIG` naming the one server "m"."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy2(test_libs_dir / "libcoremcp_fixture.so", plugins / "libcoremcp_fixture.so")
    index_plugins(plugins)
    call_log = tmp_path / "calls.log"
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "servers": [
                    {
                        "id": SERVER_ID,
                        "command": sys.executable,
                        "args": [str(MISBEHAVE), "calls"],
                        "env": {"CALL_LOG": str(call_log)},
                        "requestTimeoutMs": 10000,
                    },
                    {
                        "id": "n",
                        "command": sys.executable,
                        "args": [str(MODERN_SERVER), "modern-only"],
                        "env": {"CALL_LOG": str(call_log)},
                        "requestTimeoutMs": 10000,
                    },
                ]
            }
        ),
        encoding="utf-8",
    )
    stderr_path = tmp_path / "coremcp-stderr.log"
    made: list[Upstream] = []

    with stderr_path.open("w", encoding="utf-8") as errlog:

        def make(**env: str) -> Upstream:
            base = {k: v for k, v in os.environ.items() if not k.startswith("COREMCP_")}
            base.update(
                {
                    "COREMCP_DATA": str(tmp_path / "data"),
                    "COREMCP_MCP_CONFIG": str(config),
                    "COREMCP_MCP_SERVERS": "",
                }
            )
            base.update(env)
            params = StdioServerParameters(
                command=str(coremcp_bin), args=["stdio", "--plugins", str(plugins)], env=base
            )
            made.append(
                Upstream(
                    server=CoreMcpServer(params=params, wire=WireLog(), errlog=errlog),
                    call_log=call_log,
                    stderr_path=stderr_path,
                )
            )
            return made[-1]

        yield make
    # Captured by pytest and shown only when the test failed.
    print(f"---- coremcp stderr ({stderr_path}) ----\n{stderr_path.read_text(errors='replace')[-20000:]}")
    for up in made:
        print(f"---- JSON-RPC wire log ----\n{up.server.wire.dump()}")
    if call_log.exists():
        print(f"---- calls the fixture received ----\n{call_log.read_text()}")


async def wait_for_tool(session: ClientSession, name: str) -> set[str]:
    """Lists tools until `name` is among them (at most PUBLISH_TIMEOUT s); the names listed."""
    names: set[str] = set()
    with anyio.move_on_after(PUBLISH_TIMEOUT):
        while True:
            names = {tool.name for tool in (await session.list_tools()).tools}
            if name in names:
                return names
            await anyio.sleep(0.2)
    pytest.fail(f"{name} was not listed within {PUBLISH_TIMEOUT} s; last listing: {sorted(names)}")


def names_server(message: str) -> bool:
    """Whether an elicitation message names server "m": the id as a word of its own (quoted,
    in parentheses, followed by punctuation), or the full tool name."""
    return f"mcp__{SERVER_ID}__" in message or re.search(
        rf"(^|[\s\"“'`(]){SERVER_ID}($|[\s\"”'`),.:;])", message
    ) is not None


class Human:
    """An elicitation callback answering every request with `action`, recording what it saw."""

    def __init__(self, action: str) -> None:
        self.action = action
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.model_dump(by_alias=True, mode="json", exclude_none=True))
        content: dict[str, Any] | None = {} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)


@pytest.mark.parametrize("over", ["stdio", "http"])
async def test_an_accepted_approval_holds_for_later_calls(upstream: Any, over: str) -> None:
    up = upstream(COREMCP_MCP_GRANTS=f"stdio={SERVER_ID}")
    human = Human("accept")
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session(over, elicitation_callback=human) as session:
            await wait_for_tool(session, ECHO)
            first = await session.call_tool(ECHO, {"message": "hi"})
            assert not first.is_error, describe(first)
            assert texts(first) == ["hi"], describe(first)
            assert len(human.asked) == 1, human.asked
            asked = human.asked[0]
            message = asked.get("message", "")
            assert names_server(message), f"the question does not name server {SERVER_ID!r}: {message!r}"
            assert "echo" in message, f"the question does not name the tool: {message!r}"
            assert asked.get("requestedSchema") == EMPTY_SCHEMA, asked

            second = await session.call_tool(ECHO, {"message": "again"})
            assert not second.is_error, describe(second)
            assert texts(second) == ["again"], describe(second)
            assert len(human.asked) == 1, f"asked again after an accept: {human.asked}"
    assert up.calls_received() == ["echo", "echo"]


@pytest.mark.parametrize("over", ["stdio", "http"])
async def test_a_declined_approval_refuses_the_call_and_later_ones(upstream: Any, over: str) -> None:
    up = upstream(COREMCP_MCP_GRANTS=f"stdio={SERVER_ID}")
    human = Human("decline")
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session(over, elicitation_callback=human) as session:
            await wait_for_tool(session, ECHO)
            first = await session.call_tool(ECHO, {"message": "hi"})
            assert first.is_error, describe(first)
            assert texts(first) == [DECLINED], describe(first)
            assert len(human.asked) == 1, human.asked

            second = await session.call_tool(ECHO, {"message": "hi"})
            assert second.is_error, describe(second)
            assert texts(second) == [DECLINED], describe(second)
            assert len(human.asked) == 1, f"asked again after a decline: {human.asked}"
    assert up.calls_received() == [], "a refused call reached the server"


async def test_a_dismissed_question_says_so_and_the_next_call_asks_again(upstream: Any) -> None:
    up = upstream(COREMCP_MCP_GRANTS=f"stdio={SERVER_ID}")
    human = Human("cancel")
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session(elicitation_callback=human) as session:
            await wait_for_tool(session, ECHO)
            for asked in (1, 2):
                result = await session.call_tool(ECHO, {"message": "hi"})
                assert result.is_error, describe(result)
                assert texts(result) == [DISMISSED], describe(result)
                assert len(human.asked) == asked, human.asked
    assert up.calls_received() == [], "a dismissed call reached the server"


async def test_a_client_without_elicitation_is_told_how_to_pre_approve(upstream: Any) -> None:
    up = upstream(COREMCP_MCP_GRANTS=f"stdio={SERVER_ID}")
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session() as session:
            await wait_for_tool(session, ECHO)
            if MODERN:
                # 2026: the request did not declare the capability the question needs (-32021).
                with pytest.raises(MCPError) as refused:
                    await session.call_tool(ECHO, {"message": "hi"})
                assert refused.value.code == -32021, refused.value
                assert refused.value.error.data == {"requiredCapabilities": {"elicitation": {}}}
                text = refused.value.error.message
            else:
                result = await session.call_tool(ECHO, {"message": "hi"})
                assert result.is_error, describe(result)
                text = "\n".join(texts(result))
            assert f"COREMCP_MCP_PREAPPROVED={SERVER_ID}" in text, describe(result)
            assert "COREMCP_MCP_REQUIRE_APPROVAL=false" in text, describe(result)
    assert not up.server_requests("elicitation/create"), "asked a client that cannot answer"
    assert up.calls_received() == [], "a call nobody approved reached the server"


@pytest.mark.parametrize(
    "approval",
    [{"COREMCP_MCP_PREAPPROVED": SERVER_ID}, {"COREMCP_MCP_REQUIRE_APPROVAL": "false"}],
    ids=["preapproved", "approval-off"],
)
async def test_a_preapproved_server_needs_no_elicitation(upstream: Any, approval: dict) -> None:
    up = upstream(COREMCP_MCP_GRANTS=f"stdio={SERVER_ID}", **approval)
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session() as session:
            await wait_for_tool(session, ECHO)
            result = await session.call_tool(ECHO, {"message": "hi"})
            assert not result.is_error, describe(result)
            assert texts(result) == ["hi"], describe(result)
    assert up.calls_received() == ["echo"]
    # Only turning approval off says so at start.
    assert (APPROVAL_OFF_LINE in up.stderr()) == ("COREMCP_MCP_REQUIRE_APPROVAL" in approval)


async def test_an_ungranted_server_is_neither_listed_nor_callable(upstream: Any) -> None:
    up = upstream()
    human = Human("accept")
    outcome: Any = None
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session(elicitation_callback=human) as session:
            # Until the server is connected the tool may be merely unknown; once it is, the
            # refusal names the grants. Only then does the listing below prove anything.
            with anyio.move_on_after(PUBLISH_TIMEOUT):
                while True:
                    try:
                        outcome = await session.call_tool(ECHO, {"message": "hi"})
                    except MCPError as exc:
                        outcome = exc
                    if isinstance(outcome, types.CallToolResult) and "COREMCP_MCP_GRANTS" in "".join(
                        texts(outcome)
                    ):
                        break
                    await anyio.sleep(0.2)
            assert isinstance(outcome, types.CallToolResult), f"no tool result, last: {outcome!r}"
            assert outcome.is_error, describe(outcome)
            assert "COREMCP_MCP_GRANTS" in "".join(texts(outcome)), describe(outcome)

            names = {tool.name for tool in (await session.list_tools()).tools}
            assert not [n for n in names if n.startswith("mcp__")], sorted(names)
            assert "fixture_echo" in names, sorted(names)
    assert human.asked == [], "an ungranted call asked the human"
    assert up.calls_received() == []


@pytest.mark.skipif(not MODERN, reason="requestState is the 2026-07-28 way to ask")
@pytest.mark.parametrize("over", ["stdio", "http"])
async def test_a_tampered_or_misused_request_state_is_refused(upstream: Any, over: str) -> None:
    """The state of an `input_required` answer is the client's to hold, not to change: an
    altered one, one presented for other arguments or another tool, or garbage is refused
    -32602 `invalid_request_state` and nothing is called; the untouched one approves."""
    up = upstream(COREMCP_MCP_GRANTS=f"stdio={SERVER_ID}")
    human = Human("accept")
    accept = {"approval": {"action": "accept", "content": {}}}
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session(over, elicitation_callback=human) as client:
            await wait_for_tool(client, ECHO)
            session = client.session
            asked = await session.call_tool(ECHO, {"message": "hi"}, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult), asked
            question = asked.input_requests["approval"]
            assert question.method == "elicitation/create", question
            assert names_server(question.params.message), question
            state = asked.request_state
            assert state, asked
            tampered = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
            for arguments, sent_state in (
                ({"message": "hi"}, tampered),
                ({"message": "other"}, state),
                ({"message": "hi"}, "v1.garbage.garbage"),
            ):
                with pytest.raises(MCPError) as refused:
                    await session.call_tool(
                        ECHO, arguments, input_responses=accept, request_state=sent_state, allow_input_required=True
                    )
                assert refused.value.code == -32602, refused.value
                assert "invalid_request_state" in refused.value.error.message, refused.value
            assert up.calls_received() == [], "a call with a refused state reached the server"
            # A retry without the answer is asked again (a new state), not refused.
            again = await session.call_tool(ECHO, {"message": "hi"}, request_state=state, allow_input_required=True)
            assert isinstance(again, types.InputRequiredResult), again
            done = await session.call_tool(
                ECHO, {"message": "hi"}, input_responses=accept, request_state=state, allow_input_required=True
            )
            assert isinstance(done, types.CallToolResult) and not done.is_error, done
            assert texts(done) == ["hi"], describe(done)
    assert up.calls_received() == ["echo"]


async def test_a_2026_server_is_spoken_to_in_2026_and_its_questions_reach_a_2026_client(upstream: Any) -> None:
    """Core MCP probes `server/discover` first, so the SDK server "n" (2026-only) is spoken to in
    2026 whatever the agent speaks. Its own question (an `input_required` result) reaches the
    agent either way — relayed as ours to a 2026 agent, asked as `elicitation/create` of a
    2025 one — and the answer goes back to it."""
    # The fixture really is 2026-only: the handshake is refused.
    with anyio.fail_after(TEST_TIMEOUT):
        direct = StdioServerParameters(command=sys.executable, args=[str(MODERN_SERVER), "modern-only"])
        with pytest.raises(BaseException):
            async with Client(direct, mode="legacy"):
                pass
    up = upstream(COREMCP_MCP_GRANTS="stdio=n")
    human = Human("accept")
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session(elicitation_callback=human) as session:
            await wait_for_tool(session, "mcp__n__confirm")
            era = await session.call_tool("mcp__n__era", {})
            assert not era.is_error, describe(era)
            assert texts(era) == ["2026-07-28"], describe(era)
            assert len(human.asked) == 1, "our own approval question comes first"
            confirmed = await session.call_tool("mcp__n__confirm", {})
            # 2026: relayed as an input_required of ours; 2025: asked as elicitation/create.
            assert not confirmed.is_error, describe(confirmed)
            assert texts(confirmed) == ["confirmed: accept"], describe(confirmed)
            assert [a.get("message") for a in human.asked[1:]] == ["Go ahead?"], human.asked
    assert up.calls_received() == ["era", "confirm", "confirm"], "never an initialize"
    stdout_lines = [
        msg for direction, msg in up.server.wire.entries if direction == "<-" and isinstance(msg, dict)
    ]
    for msg in stdout_lines:
        result = msg.get("result") or {}
        if not MODERN:
            assert "resultType" not in result and "ttlMs" not in result, msg


async def test_upstream_prompts_resources_and_completion_are_republished(upstream: Any) -> None:
    """Server "n"'s prompt, resource and template are listed under names that say it is theirs
    (`mcp__n__greet`, `coremcp+n:<its URI>`), and getting, reading and completing pass through
    to it — after the same approval a tool call needs (completion never asks)."""
    up = upstream(COREMCP_MCP_GRANTS="stdio=n")
    human = Human("accept")
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session(elicitation_callback=human) as session:
            await wait_for_tool(session, "mcp__n__echo")
            assert [p.name for p in (await session.list_prompts()).prompts] == ["mcp__n__greet"]
            assert [str(r.uri) for r in (await session.list_resources()).resources] == ["coremcp+n:fixture://hello"]
            templates = (await session.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["coremcp+n:fixture://items/{n}"]
            ref = types.PromptReference(type="ref/prompt", name="mcp__n__greet")
            before = await session.complete(ref, {"name": "name", "value": "A"})
            assert before.completion.values == [], "no suggestions before the server is approved"
            assert human.asked == []
            prompt = await session.get_prompt("mcp__n__greet", {"name": "Ada"})
            assert len(human.asked) == 1, human.asked
            assert "Hello, Ada!" in json.dumps(prompt.model_dump(by_alias=True, mode="json")), prompt
            hello = await session.read_resource("coremcp+n:fixture://hello")
            if MODERN:
                read = next(m for d, m in up.server.wire.entries if d == "<-" and isinstance(m, dict)
                            and "contents" in (m.get("result") or {}))
                assert read["result"]["resultType"] == "complete" and read["result"]["ttlMs"] == 0, read
            assert [str(c.uri) for c in hello.contents] == ["coremcp+n:fixture://hello"]
            assert hello.contents[0].text == "hello from the fixture"
            item = await session.read_resource("coremcp+n:fixture://items/7")
            assert item.contents[0].text == "item 7"
            after = await session.complete(ref, {"name": "name", "value": "A"})
            assert after.completion.values == ["Ada", "Alan"]
            with pytest.raises(MCPError):
                await session.read_resource("coremcp+zz:fixture://hello")
            assert len(human.asked) == 1, "one approval for the connection"
    assert up.calls_received() == ["greet", "hello", "item"]


async def test_resources_need_a_grant_of_the_whole_server(upstream: Any) -> None:
    """A grant of one tool does not let a caller see or read the server's resources."""
    up = upstream(COREMCP_MCP_GRANTS="stdio=mcp__n__echo", COREMCP_MCP_PREAPPROVED="n")
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session() as session:
            await wait_for_tool(session, "mcp__n__echo")
            assert (await session.list_resources()).resources == []
            assert (await session.list_prompts()).prompts == []
            with pytest.raises(MCPError) as refused:
                await session.read_resource("coremcp+n:fixture://hello")
            assert "grant of the whole server" in refused.value.error.message
    assert up.calls_received() == []


async def test_a_2026_servers_question_to_a_client_that_cannot_be_asked_says_so(upstream: Any) -> None:
    up = upstream(COREMCP_MCP_GRANTS="stdio=n", COREMCP_MCP_PREAPPROVED="n")
    with anyio.fail_after(TEST_TIMEOUT):
        async with up.session() as session:
            await wait_for_tool(session, "mcp__n__confirm")
            if MODERN:
                with pytest.raises(MCPError) as refused:
                    await session.call_tool("mcp__n__confirm", {})
                # Its question needs what the request did not declare: -32021, never the question.
                assert refused.value.code == -32021, refused.value
                assert refused.value.error.data == {"requiredCapabilities": {"elicitation": {}}}
            else:
                result = await session.call_tool("mcp__n__confirm", {})
                assert result.is_error, describe(result)
                assert "cannot be asked" in texts(result)[0], describe(result)


async def test_a_2026_http_server_gets_the_headers_its_tool_schema_asks_for(tmp_path: Path, coremcp_bin: Path, test_libs_dir: Path) -> None:
    """Over Streamable HTTP a 2026 call mirrors the arguments a tool's schema annotates with
    `x-mcp-header` in `Mcp-Param-*` headers; the SDK server refuses a call without them."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    fixture_log = tmp_path / "fixture.log"
    fixture = subprocess.Popen([sys.executable, str(MODERN_SERVER), "http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=fixture_log.open("w"),
                               env={**os.environ, "CALL_LOG": str(tmp_path / "calls.log")})
    try:
        with anyio.fail_after(20):
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    assert fixture.poll() is None, fixture_log.read_text()
                    await anyio.sleep(0.05)
        plugins = tmp_path / "plugins"
        plugins.mkdir()
        shutil.copy2(test_libs_dir / "libcoremcp_fixture.so", plugins / "libcoremcp_fixture.so")
        index_plugins(plugins)
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"servers": [{"id": "h", "type": "http", "url": f"http://127.0.0.1:{port}/mcp"}]}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("COREMCP_")}
        env.update({"COREMCP_DATA": str(tmp_path / "data"), "COREMCP_MCP_CONFIG": str(config),
                    "COREMCP_MCP_SERVERS": "", "COREMCP_MCP_GRANTS": "stdio=h", "COREMCP_MCP_PREAPPROVED": "h"})
        params = StdioServerParameters(command=str(coremcp_bin), args=["stdio", "--plugins", str(plugins)], env=env)
        with (tmp_path / "coremcp.log").open("w") as errlog:
            server = CoreMcpServer(params=params, wire=WireLog(), errlog=errlog)
            with anyio.fail_after(TEST_TIMEOUT):
                async with Client(server.transport(), mode=SDK_MODE) as client:
                    await wait_for_tool(client, "mcp__h__regional")
                    result = await client.call_tool("mcp__h__regional", {"region": "eu-west"})
                    assert not result.is_error, describe(result)
                    assert texts(result) == ["region eu-west"], describe(result)
    finally:
        fixture.terminate()
        fixture.wait(timeout=10)
