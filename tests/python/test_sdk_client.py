"""Drive the real `coremcp` binary over stdio with the official MCP Python SDK client.

Run (from the workspace root, after building the binary and the plugins):

    COREMCP_BIN=$PWD/target/debug/coremcp COREMCP_TEST_LIBS=$PWD/target/debug \
        target/pyenv/bin/python -m pytest tests/python -q

Every test spawns its own server process(es) and is bounded by `anyio.fail_after`.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError
from conftest import EXPECTED_VERSION, MODERN, SDK_MODE
from mcp.client.session import DISCOVER_TIMEOUT_SECONDS

if TYPE_CHECKING:
    from conftest import CoreMcpServer

pytestmark = pytest.mark.anyio

# Upper bound for one test, including server start-up and shutdown.
TEST_TIMEOUT = 30

# Protocol revisions the SDK can reach through the `initialize` handshake and
# that coremcp is expected to accept.
ACCEPTED_VERSIONS = {"2025-06-18", "2025-11-25"}

# Tools the two plugins under test must offer (the fixture plugin may offer more).
EXPECTED_TOOLS = {
    "publishing",
    "fixture_echo",
    "fixture_panic",
    "fixture_sleep",
    "fixture_big",
    "fixture_stdout",
    "fixture_log",
}

# JSON-RPC error codes.
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

# The host caps tool text output at this many characters, then appends a short marker.
TEXT_CAP = 20_000
TRUNCATION_MARKER_ALLOWANCE = 500


def texts(result: types.CallToolResult) -> list[str]:
    """The text of every text content block, in order."""
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def describe(result: types.CallToolResult) -> str:
    """A compact rendering of a tool result for assertion messages."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    text = json.dumps(dumped)
    return text if len(text) <= 2000 else f"{text[:2000]}... [{len(text)} chars]"


async def call_ok(client: Client, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, f"{name} failed: {describe(result)}"
    return result


# Arguments for the "is the session still healthy?" follow-up call.
ECHO_ARGS = {"text": "still alive", "n": 1}


def assert_echoed(result: types.CallToolResult) -> None:
    assert not result.is_error, f"fixture_echo failed: {describe(result)}"
    assert result.structured_content == ECHO_ARGS, describe(result)


# --------------------------------------------------------------------------- 1


async def test_connect_in_the_suite_mode(coremcp: CoreMcpServer) -> None:
    """The SDK's default mode probes `server/discover`, which coremcp answers, so the
    connection speaks 2026-07-28 without `initialize`; pinned to a 2025 revision, the client
    goes through `initialize` and gets the revision it offered."""
    with anyio.fail_after(TEST_TIMEOUT):
        started = time.monotonic()
        async with coremcp.client() as client:
            connect_seconds = time.monotonic() - started

            assert client.protocol_version == EXPECTED_VERSION
            if MODERN:
                assert client.session.initialize_result is None, "no handshake in 2026"
            else:
                assert client.session.initialize_result is not None, "expected the legacy initialize handshake"
            # Pinned to 2026 the client does not discover, so it knows nothing of the server.
            if SDK_MODE != "2026-07-28":
                assert client.server_info is not None and client.server_info.name == "coremcp"
                assert client.server_capabilities.tools is not None, "server did not declare the tools capability"
                assert isinstance(client.instructions, str) and client.instructions.strip()

    assert connect_seconds < DISCOVER_TIMEOUT_SECONDS / 2, f"connect took {connect_seconds:.1f}s"
    probes = coremcp.wire.requests("server/discover")
    if SDK_MODE != "auto":
        assert not probes, "a pinned client does not probe"
        assert bool(coremcp.wire.requests("initialize")) != MODERN
        return
    assert probes, "the SDK was expected to probe server/discover first"
    reply = coremcp.wire.response_to(probes[0])
    assert reply is not None and "result" in reply, f"server/discover was not answered: {reply}"
    result = reply["result"]
    assert result["resultType"] == "complete", result
    assert result["supportedVersions"] == ["2026-07-28"], result
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "coremcp", result
    assert {"ttlMs", "cacheScope", "instructions", "capabilities"} <= result.keys(), result
    assert not coremcp.wire.requests("initialize"), "no initialize after a modern discover"


async def test_initialize_legacy_session(coremcp: CoreMcpServer) -> None:
    """The low-level ClientSession, going straight to `initialize`."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.legacy_session() as session:
            init = session.initialize_result
            assert init is not None
            assert init.protocol_version in ACCEPTED_VERSIONS
            assert init.server_info.name == "coremcp"
            assert init.capabilities.tools is not None, "server did not declare the tools capability"
            assert isinstance(init.instructions, str) and init.instructions.strip()
            # The session is usable after the handshake.
            listed = await session.list_tools()
            assert "fixture_echo" in {tool.name for tool in listed.tools}


# --------------------------------------------------------------------------- 2


async def test_list_tools_single_page(coremcp: CoreMcpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client() as client:
            listed = await client.list_tools()

    names = [tool.name for tool in listed.tools]
    assert listed.next_cursor is None, "all tools should fit on one page"
    assert len(names) == len(set(names)), f"duplicate tool names: {names}"
    missing = EXPECTED_TOOLS - set(names)
    assert not missing, f"missing tools {sorted(missing)}; listed {names}"
    for tool in listed.tools:
        assert tool.input_schema.get("type") == "object", f"{tool.name}: {tool.input_schema}"


# --------------------------------------------------------------------------- 3


async def test_call_fixture_echo(coremcp: CoreMcpServer) -> None:
    args = {"text": "hello", "n": 3}
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client() as client:
            result = await call_ok(client, "fixture_echo", args)

    assert result.structured_content == args
    blocks = texts(result)
    assert len(blocks) == 1, describe(result)
    assert json.loads(blocks[0]) == args


# --------------------------------------------------------------------------- 4


async def test_panicking_tool_is_contained(coremcp: CoreMcpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client() as client:
            panicked = await client.call_tool("fixture_panic", {})
            # Same session, same server process: the host must have survived.
            echoed = await client.call_tool("fixture_echo", ECHO_ARGS)

    assert panicked.is_error, describe(panicked)
    assert "panic" in " ".join(texts(panicked)).lower(), describe(panicked)
    assert_echoed(echoed)


# --------------------------------------------------------------------------- 5


async def test_big_output_is_truncated(coremcp: CoreMcpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client() as client:
            result = await client.call_tool("fixture_big", {"bytes": 3_000_000})

    text = "".join(texts(result))
    assert text, describe(result)
    assert len(text) <= TEXT_CAP, f"text is {len(text)} characters, the marker counts in the limit"
    assert "truncated" in text.lower(), f"no truncation marker; tail: {text[-300:]!r}"


async def test_a_json_answer_over_the_limit_is_a_valid_result_never_a_broken_document(coremcp: CoreMcpServer) -> None:
    """A built-in tool's object answer over the limit yields its largest parts in the plugin
    SDK, saying so, and arrives whole and structured; any other JSON answer over the limit is
    withheld whole by the host's guard and named, so the SDK always gets a result it can parse
    rather than JSON cut in the middle."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client() as client:
            fitted = await client.call_tool("fixture_big", {"bytes": 30_000, "json": True})
            result = await client.call_tool("fixture_big", {"bytes": 30_000, "array": True})
    assert not fitted.is_error, describe(fitted)
    assert fitted.structured_content is not None, describe(fitted)
    assert fitted.structured_content["text_truncated"] is True, describe(fitted)
    assert fitted.structured_content["text_total_chars"] == 30_000, describe(fitted)
    assert len("".join(texts(fitted))) <= TEXT_CAP
    assert result.is_error, describe(result)
    assert result.structured_content is None, describe(result)
    text = "".join(texts(result))
    assert text.startswith("fixture_big ran, but its answer (30004 characters)"), text
    assert len(text) <= TEXT_CAP


# --------------------------------------------------------------------------- 6


async def test_publishing_passes_args_verbatim(coremcp: CoreMcpServer) -> None:
    # "a b" must arrive as one argument: no shell, no re-splitting.
    args = ["release", "--dry-run", "a b"]
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client() as client:
            result = await call_ok(client, "publishing", {"args": args})

    assert isinstance(result.structured_content, dict), describe(result)
    assert result.structured_content["argv"] == args


async def test_publishing_fixed_leading_args(coremcp: CoreMcpServer) -> None:
    """COREMCP_PUBLISH_CMD is split on whitespace: program + fixed leading args."""
    cmd = f"{coremcp.params.env['COREMCP_PUBLISH_CMD']} --profile ci"
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client(env={"COREMCP_PUBLISH_CMD": cmd}) as client:
            result = await call_ok(client, "publishing", {"args": ["release"]})

    assert isinstance(result.structured_content, dict), describe(result)
    assert result.structured_content["argv"] == ["--profile", "ci", "release"]


# --------------------------------------------------------------------------- 7


async def test_publishing_failures_are_tool_errors(coremcp: CoreMcpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client() as client:
            failed = await client.call_tool("publishing", {"args": ["fail"]})
            not_json = await client.call_tool("publishing", {"args": ["text"]})

    # Non-zero exit: the CLI's stderr is reported back.
    assert failed.is_error, describe(failed)
    assert "boom on stderr" in " ".join(texts(failed)), describe(failed)

    # Exit 0 but stdout is not JSON: still an error, quoting the output.
    assert not_json.is_error, describe(not_json)
    assert "not json at all" in " ".join(texts(not_json)), describe(not_json)


# --------------------------------------------------------------------------- 8


async def test_unknown_tool(coremcp: CoreMcpServer) -> None:
    """coremcp answers an unknown tool with JSON-RPC error -32602; a tool-level
    error result (isError) would also be spec-compliant, so accept either."""
    error: MCPError | None = None
    result: types.CallToolResult | None = None
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client() as client:
            try:
                result = await client.call_tool("no_such_tool", {})
            except MCPError as exc:
                error = exc
            # An error answer must not poison the session.
            echoed = await client.call_tool("fixture_echo", ECHO_ARGS)

    if error is not None:
        assert error.code == INVALID_PARAMS, f"code {error.code}: {error.message}"
        assert "unknown tool" in error.message.lower(), error.message
    else:
        assert result is not None and result.is_error, describe(result)
    assert_echoed(echoed)


# --------------------------------------------------------------------------- 2026-07-28


@pytest.mark.skipif(not MODERN, reason="subscriptions/listen is 2026-07-28")
async def test_a_subscription_hears_that_a_group_was_enabled(coremcp: CoreMcpServer) -> None:
    """On stdio a 2026 connection keeps its dynamic groups (one connection, one process):
    enabling a group is announced on the open `subscriptions/listen`, tagged with its id."""
    from mcp.client.subscriptions import ToolsListChanged

    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client(env={"COREMCP_GROUPS": "dynamic"}) as client:
            before = {tool.name for tool in (await client.list_tools()).tools}
            assert "groups_enable" in before and "fixture_echo" not in before, before
            async with client.listen(tools_list_changed=True) as sub:
                assert sub.honored is not None and sub.honored.tools_list_changed, sub.honored
                enabled = await client.call_tool("groups_enable", {"groups": ["fixture"]})
                assert not enabled.is_error, describe(enabled)
                event = await sub.__anext__()
                assert isinstance(event, ToolsListChanged), event
            after = {tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools}
            assert "fixture_echo" in after, after
    notes = [
        msg
        for direction, msg in coremcp.wire.entries
        if direction == "<-" and isinstance(msg, dict) and msg.get("method") == "notifications/tools/list_changed"
    ]
    listen = coremcp.wire.requests("subscriptions/listen")[0]
    assert notes and all(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen["id"] for n in notes
    ), notes


@pytest.mark.skipif(not MODERN, reason="per-request log levels are 2026-07-28")
async def test_log_messages_come_only_to_a_request_that_asks(coremcp: CoreMcpServer) -> None:
    """No session-wide level in 2026: a call gets log messages only when its own `_meta` names
    a level, and only those at or above it."""
    messages: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        messages.append(params)

    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.client(logging_callback=on_log) as client:
            quiet = await client.call_tool("fixture_log", {})
            assert not quiet.is_error, describe(quiet)
            assert messages == [], messages
        async with coremcp.client(logging_callback=on_log, log_level="warning") as client:
            loud = await client.call_tool("fixture_log", {})
            assert not loud.is_error, describe(loud)
    levels = {m.level for m in messages}
    assert levels and levels <= {"warning", "error"}, messages


@pytest.mark.skipif(not MODERN, reason="the envelope is 2026-07-28")
async def test_a_request_without_its_envelope_is_refused(coremcp: CoreMcpServer) -> None:
    """A 2026 connection checks every request's own `_meta`: one sent without it is refused
    -32602, naming the missing keys, and the connection goes on."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with coremcp.transport() as (read_stream, write_stream):
            import mcp_types
            from mcp.shared.message import SessionMessage

            envelope = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            lines = [
                {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": envelope}},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {**envelope, "io.modelcontextprotocol/protocolVersion": "2030-01-01"}}},
                {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}},
                {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"_meta": envelope}},
                {"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": envelope}},
            ]
            for line in lines:
                await write_stream.send(SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(line, by_name=False)))
            answers: dict[Any, Any] = {}
            while len(answers) < len(lines):
                item = await read_stream.receive()
                message = item.message.model_dump(by_alias=True, mode="json", exclude_none=True)
                if "id" in message:
                    answers[message["id"]] = message
    assert answers[1]["result"]["resultType"] == "complete"
    assert answers[2]["error"]["code"] == INVALID_PARAMS, answers[2]
    assert "io.modelcontextprotocol/protocolVersion" in answers[2]["error"]["message"]
    assert answers[3]["error"]["code"] == -32022, answers[3]
    assert answers[3]["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2030-01-01"}
    assert answers[4]["error"]["code"] == -32022, answers[4]
    assert answers[5]["error"]["code"] == METHOD_NOT_FOUND, answers[5]
    result = answers[6]["result"]
    assert result["resultType"] == "complete" and result["ttlMs"] == 0 and result["cacheScope"] == "private"
