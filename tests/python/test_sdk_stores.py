"""The store-backed groups (Registry, Notepad, Session, Scrolls, Seele) through the official MCP
Python SDK client: read and write tools of each group (for Scrolls a walk from theme to subtask,
for Seele a write, a revision read back, an import and a search), on the
embedded SQLite and on a fresh database of the throwaway PostgreSQL that scripts/test starts
(COREMCP_TEST_PG_URL).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import anyio
import pytest
from mcp import StdioServerParameters

from conftest import CoreMcpServer, copy_libs, logged_server, structured

pytestmark = pytest.mark.anyio

TEST_TIMEOUT = 60
STORE_LIBS = (
    "libcoremcp_registry.so", "libcoremcp_notepad.so", "libcoremcp_session.so", "libcoremcp_scrolls.so",
    "libcoremcp_seele.so",
)


def fresh_pg_database(admin_url: str) -> str:
    """Creates an empty database on the test server (with PostgreSQL's own `createdb`) and
    returns its URL."""
    parts = urlsplit(admin_url)
    name = f"sdk_{uuid.uuid4().hex[:12]}"
    createdb = shutil.which("createdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/createdb"))), None)
    if createdb is None:
        pytest.fail("createdb (PostgreSQL client tools) not found", pytrace=False)
    subprocess.run(
        [createdb, "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432),
         "-U", parts.username or "postgres", name],
        check=True, capture_output=True, timeout=30,
    )
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path, coremcp_bin: Path, test_libs_dir: Path) -> Iterator[CoreMcpServer]:
    if request.param == "postgres":
        admin = os.environ.get("COREMCP_TEST_PG_URL")
        if not admin:
            pytest.fail("COREMCP_TEST_PG_URL is not set; scripts/test starts a throwaway PostgreSQL", pytrace=False)
        store = fresh_pg_database(admin)
    else:
        store = "sqlite:"
    plugins = copy_libs(test_libs_dir, tmp_path / "store-plugins", STORE_LIBS)
    params = StdioServerParameters(
        command=str(coremcp_bin),
        args=["stdio", "--plugins", str(plugins), "--data", str(tmp_path / "data"), "--store", store],
        env=dict(os.environ),
        cwd=str(tmp_path),
    )
    yield from logged_server(params, tmp_path / "coremcp-stores-stderr.log")



async def test_registry_write_then_read(stores: CoreMcpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with stores.client() as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"registry_host_add", "notepad_set", "session_register"} <= names
            host = structured(await client.call_tool(
                "registry_host_add",
                {"name": "relay-1", "address": "127.0.0.2", "core_mcp_url": "http://127.0.0.2:7070/mcp", "roles": ["relay"]}))
            assert host["name"] == "relay-1" and host["version"] == 1, host
            listed = structured(await client.call_tool("registry_host_list", {"has_core_mcp": True}))
            assert [h["name"] for h in listed["items"]] == ["relay-1"], listed
            assert listed["items"][0]["core_mcp_url"] == "http://127.0.0.2:7070/mcp"
            bad = await client.call_tool("registry_host_add", {"name": "Bad_Name", "address": "x"})
            assert bad.is_error and '"name"' in bad.content[0].text


async def test_notepad_set_then_get(stores: CoreMcpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with stores.client() as client:
            first = structured(await client.call_tool(
                "notepad_set", {"scope": "project:CORE", "key": "release/next", "value": "1.4.0", "expected_version": 0}))
            assert first["version"] == 1 and first["created"] is True, first
            note = structured(await client.call_tool("notepad_get", {"scope": "project:CORE", "key": "release/next"}))
            assert note["value"] == "1.4.0" and note["version"] == 1, note
            stale = await client.call_tool(
                "notepad_set", {"scope": "project:CORE", "key": "release/next", "value": "x", "expected_version": 0})
            assert stale.is_error and "(conflict)" in stale.content[0].text and "is at version 1" in stale.content[0].text


async def test_session_register_then_list(stores: CoreMcpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with stores.client() as client:
            registered = structured(await client.call_tool(
                "session_register", {"agent": "sdk-agent", "project": "CORE", "host": "devbox-1"}))
            session_id = registered["session_id"]
            assert registered["heartbeat_interval_s"] > 0, registered
            beat = structured(await client.call_tool("session_heartbeat", {"session_id": session_id, "note": "testing"}))
            assert beat["closed"] is False and beat["heartbeat_count"] == 1, beat
            active = structured(await client.call_tool("session_list_active", {"agent": "sdk-agent"}))
            assert [s["session_id"] for s in active["items"]] == [session_id], active


async def test_scrolls_walk_from_theme_to_subtask(stores: CoreMcpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with stores.client() as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert len([n for n in names if n.startswith("scrolls_")]) == 50, sorted(names)
            call = client.call_tool
            structured(await call("scrolls_theme_create", {"key": "reliability", "title": "Reliability"}))
            structured(await call("scrolls_project_create", {"key": "CORE", "title": "Core MCP", "theme": "reliability"}))
            epic = structured(await call("scrolls_epic_create", {"project": "CORE", "title": "Relays"}))
            story = structured(await call("scrolls_story_create", {"parent": epic["key"], "title": "Fail over"}))
            subtask = structured(await call("scrolls_subtask_create", {"parent": story["key"], "title": "Kill a relay"}))
            assert (epic["key"], story["key"], subtask["key"]) == ("CORE-1", "CORE-2", "CORE-3")
            structured(await call("scrolls_agent_register", {"name": "sdk-agent"}))
            claimed = structured(await call("scrolls_item_claim", {"id": "CORE-3", "agent": "sdk-agent"}))
            assert claimed["status"] == "in_progress" and claimed["assignee"] == "sdk-agent", claimed
            structured(await call("scrolls_comment_add", {"id": "CORE-3", "body": "done by the SDK"}))
            ready = structured(await call("scrolls_ready_list", {}))
            assert [i["key"] for i in ready["items"]] == ["CORE-2"], ready
            progress = structured(await call("scrolls_progress_get", {"id": "CORE"}))
            # The project is not one of its own items: the epic, the story and the subtask.
            assert progress["total"] == 3 and progress["done"] == 0, progress
            wrong = await call("scrolls_subtask_create", {"parent": "CORE-1", "title": "x"})
            assert wrong.is_error and "a subtask cannot sit under an epic" in wrong.content[0].text
            open_below = await call("scrolls_epic_close", {"id": "CORE-1"})
            assert open_below.is_error and "open descendants" in open_below.content[0].text
            closed = structured(await call("scrolls_epic_close", {"id": "CORE-1", "cascade": True}))
            assert closed["closed"] == ["CORE-1", "CORE-2", "CORE-3"], closed


async def test_seele_write_revision_import_search(stores: CoreMcpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with stores.client() as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"seele_search", "seele_read", "seele_write", "seele_import"} <= names, sorted(names)
            call = client.call_tool
            node = structured(await call("seele_write", {
                "path": "core/relays", "title": "Relays", "body": "Relays fail over.",
                "front_matter": {"owner": "ops", "audience": "sre"}, "tags": ["relay"],
            }))
            assert node["version"] == 1 and node["folders_created"] == ["core"], node
            updated = structured(await call("seele_write", {
                "id": node["id"], "body": "Relays fail over in order.", "expected_version": 1,
            }))
            assert updated["version"] == 2 and updated["changed"] is True, updated
            stale = await call("seele_write", {"id": node["id"], "body": "late", "expected_version": 1})
            assert stale.is_error and "is at version 2" in stale.content[0].text
            first = structured(await call("seele_read", {"id": node["id"], "version": 1}))
            assert first["body"] == "Relays fail over." and first["current_version"] == 2, first
            assert list(first["front_matter"]) == ["owner", "audience"], first

            nodes = [{"path": f"guide/page-{i}.md", "body": f"# Page {i}\nquorum {i}"} for i in range(20)]
            imported = structured(await call("seele_import", {"nodes": nodes, "root_path": "handbook"}))
            assert (imported["created"], imported["unchanged"]) == (20, 0), imported
            again = structured(await call("seele_import", {"nodes": nodes, "root_path": "handbook"}))
            assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 20), again

            found = structured(await call("seele_search", {"query": "quorum", "path_prefix": "handbook", "limit": 50}))
            assert len(found["items"]) == 20, found
            assert all("quorum" in item["snippet"] for item in found["items"]), found
            relays = structured(await call("seele_search", {"query": "order", "tags": ["relay"]}))
            assert [i["path"] for i in relays["items"]] == ["core/relays"], relays


def _escaped(n: int) -> str:
    """`n` characters that cost more than `n` in JSON (quotes, backslashes, line breaks)."""
    unit = '"q" back\\slash\n'
    return (unit * (n // len(unit) + 1))[:n]


async def test_a_long_description_reads_back_whole_and_every_answer_fits(stores: CoreMcpServer) -> None:
    """The result contract from a real SDK client: a story with a description at its 20 000-
    character limit is created, listed and read back whole with `offset`, and a cascade over
    many items answers a count and a sample."""
    description = _escaped(20_000)
    with anyio.fail_after(TEST_TIMEOUT * 2):
        async with stores.client() as client:
            await client.call_tool("scrolls_project_create", {"key": "BIG", "title": "Big"})
            epic = structured(await client.call_tool("scrolls_epic_create", {"project": "BIG", "title": "e"}))
            created = await client.call_tool(
                "scrolls_story_create", {"parent": epic["key"], "title": "s", "description": description})
            story = structured(created)
            assert len(created.content[0].text) <= 20_000
            assert json.loads(created.content[0].text) == story
            assert story["description_truncated"] is True and story["description_total_chars"] == 20_000
            read, offset = "", 0
            while True:
                got = structured(await client.call_tool("scrolls_story_get", {"id": story["key"], "offset": offset}))
                read += got["description"]
                if "description_next_offset" not in got:
                    break
                offset = got["description_next_offset"]
            assert read == description
            listed = structured(await client.call_tool("scrolls_story_list", {"epic": epic["key"], "limit": 1}))
            assert listed["items"][0]["description_truncated"] is True
            for i in range(250):
                await client.call_tool("scrolls_task_create", {"parent": epic["key"], "title": f"t{i}"})
            closed = structured(await client.call_tool("scrolls_epic_close", {"id": epic["key"], "cascade": True}))
            assert closed["closed_count"] == 252 and len(closed["closed"]) == 200 and closed["more"] == 52, closed
