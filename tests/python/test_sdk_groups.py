"""The Git and Code-and-files groups through the official MCP Python SDK client: one read and
one write tool of each group, against a real git repository and a real PostgreSQL.

Needs, besides COREMCP_BIN and COREMCP_TEST_LIBS (see conftest.py), COREMCP_TEST_PG_URL: the
throwaway PostgreSQL that scripts/test starts.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import StdioServerParameters

from conftest import CoreMcpServer, copy_libs, logged_server, structured

pytestmark = pytest.mark.anyio

TEST_TIMEOUT = 30
GROUP_LIBS = ("libcoremcp_git.so", "libcoremcp_files.so", "libcoremcp_docs.so")


def run_git(repo: Path, *args: str, env: dict[str, str]) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True, timeout=30
    ).stdout.strip()


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A root folder holding a git repository with one commit, and the env git runs with."""
    root = tmp_path / "root"
    repo = root / "repo"
    repo.mkdir(parents=True)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = SDK Test\n\temail = sdk@example.invalid\n[init]\n\tdefaultBranch = main\n")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1"}
    run_git(repo, "init", "-q", env=env)
    (repo / "README.md").write_text("# demo\nneedle in the readme\n")
    run_git(repo, "add", "README.md", env=env)
    run_git(repo, "commit", "-q", "-m", "first", env=env)
    return root, env


@pytest.fixture
def groups(tmp_path: Path, coremcp_bin: Path, test_libs_dir: Path, workspace: tuple[Path, dict[str, str]]) -> Iterator[CoreMcpServer]:
    # A role without superuser or server-file powers: sql_query refuses a privileged one.
    pg_url = os.environ.get("COREMCP_TEST_PG_SQL_URL")
    if not pg_url:
        pytest.fail("COREMCP_TEST_PG_SQL_URL is not set; scripts/test starts a throwaway PostgreSQL", pytrace=False)
    plugins = copy_libs(test_libs_dir, tmp_path / "group-plugins", GROUP_LIBS)
    root, env = workspace
    handbook = tmp_path / "handbook"
    handbook.mkdir()
    params = StdioServerParameters(
        command=str(coremcp_bin),
        args=["stdio", "--plugins", str(plugins), "--root", str(root), "--sql", f"default={pg_url}",
              "--docs", str(handbook)],
        env=env,
        cwd=str(root),
    )
    yield from logged_server(params, tmp_path / "coremcp-groups-stderr.log")



async def test_git_read_and_write(groups: CoreMcpServer, workspace: tuple[Path, dict[str, str]]) -> None:
    root, env = workspace
    repo = root / "repo"
    (repo / "notes.txt").write_text("a new file\n")
    with anyio.fail_after(TEST_TIMEOUT):
        async with groups.client() as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"git_status", "git_commit", "files_search", "sql_query"} <= names

            status = structured(await client.call_tool("git_status", {"repo_path": "repo"}))
            assert status["untracked"] == ["notes.txt"]
            assert status["clean"] is False

            structured(await client.call_tool("git_add", {"repo_path": "repo", "paths": ["notes.txt"]}))
            commit = structured(await client.call_tool("git_commit", {"repo_path": "repo", "message": "add notes"}))
            assert commit["sha"] == run_git(repo, "rev-parse", "HEAD", env=env)
            assert commit["summary"] == "add notes"

            escaped = await client.call_tool("git_status", {"repo_path": "../.."})
            assert escaped.is_error
            assert '".." is not allowed' in escaped.content[0].text


async def test_files_read_and_sql_write(groups: CoreMcpServer) -> None:
    table = f"sdk_{uuid.uuid4().hex[:12]}"
    with anyio.fail_after(TEST_TIMEOUT):
        async with groups.client() as client:
            found = structured(await client.call_tool("files_search", {"pattern": "needle", "literal": True}))
            assert "repo/README.md" in str(found), found

            created = structured(await client.call_tool(
                "sql_query", {"sql": f"create table {table} (v int)", "read_only": False}))
            assert created["read_only"] is False
            inserted = structured(await client.call_tool(
                "sql_query", {"sql": f"insert into {table} values ($1), ($2)", "params": [1, "2"], "read_only": False}))
            assert inserted["rows_affected"] == 2
            rows = structured(await client.call_tool("sql_query", {"sql": f"select sum(v) as total from {table}"}))
            assert rows["rows"] == [{"total": 3}]
            assert rows["columns"] == [{"name": "total", "type": "int8"}]

            refused = await client.call_tool("sql_query", {"sql": f"drop table {table}"})
            assert refused.is_error
            assert "25006" in refused.content[0].text


async def test_docs_write_then_read(groups: CoreMcpServer) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with groups.client() as client:
            written = structured(await client.call_tool(
                "docs_write", {"path": "guide/intro.md", "body": "# Welcome\n\nHello.\n",
                               "front_matter": {"owner": "sdk"}, "mode": "create"}))
            assert written["revision"] == 1, written
            read = structured(await client.call_tool("docs_read", {"path": "guide/intro.md"}))
            front = read["front_matter"]
            assert front["title"] == "Welcome" and front["owner"] == "sdk" and front["revision"] == 1, read
            assert "Hello." in read["body"]
            stale = await client.call_tool(
                "docs_write", {"path": "guide/intro.md", "body": "x\n", "expected_revision": 7})
            assert stale.is_error and "conflict" in stale.content[0].text


async def test_big_trees_and_results_page_to_every_item_once(groups: CoreMcpServer, workspace: tuple[Path, dict[str, str]]) -> None:
    """The result contract from a real SDK client: files_list and files_search follow
    next_cursor to every entry and match exactly once, each page fitting the limit, and
    sql_query answers the rows that fit with a hint to page with the query's own OFFSET."""
    root, _ = workspace
    for d in range(8):
        for f in range(60):
            path = root / "tree" / f"dir{d}" / f"file{f:02}.rs"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("fn one() {}\nfn two() {}\n")
    with anyio.fail_after(TEST_TIMEOUT * 2):
        async with groups.client() as client:
            for tool, args, field, expected in (
                ("files_list", {"path": "tree", "depth": 6, "max_entries": 10000}, "entries", 8 + 8 * 60),
                ("files_search", {"path": "tree", "pattern": "fn ", "max_results": 2000}, "matches", 8 * 60 * 2),
            ):
                seen, cursor = [], None
                while True:
                    result = await client.call_tool(tool, {**args, **({"cursor": cursor} if cursor else {})})
                    assert len(result.content[0].text) <= 20_000
                    page = structured(result)
                    seen += [(i["path"], i.get("line")) for i in page[field]]
                    cursor = page.get("next_cursor")
                    if cursor is None:
                        break
                assert len(seen) == expected and len(set(seen)) == expected, (tool, len(seen))
            rows = await client.call_tool("sql_query", {"sql": "select n, repeat('x', 60) as pad from generate_series(1, 3000) n", "max_rows": 5000})
            assert len(rows.content[0].text) <= 20_000
            answer = structured(rows)
            assert answer["truncated"] is True and answer["row_count"] == len(answer["rows"]) < 3000
            assert f"OFFSET {answer['row_count']}" in answer["hint"], answer["hint"]
