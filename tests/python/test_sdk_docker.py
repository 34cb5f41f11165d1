"""The Docker group through the official MCP Python SDK client: one call of every tool
(list, inspect, logs, action, compose) against the real, throwaway dockerd that scripts/test
starts (COREMCP_TEST_DOCKER_HOST, with the busybox image COREMCP_TEST_DOCKER_IMAGE).

When scripts/test could not start a daemon it exports COREMCP_TEST_DOCKER_UNAVAILABLE, and this
suite is skipped with that reason in one line.
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

TEST_TIMEOUT = 60
GROUP_LIBS = ("libcoremcp_docker.so",)


@pytest.fixture
def docker_host() -> str:
    why = os.environ.get("COREMCP_TEST_DOCKER_UNAVAILABLE")
    if why:
        pytest.skip(f"no Docker daemon: {why}")
    host = os.environ.get("COREMCP_TEST_DOCKER_HOST")
    if not host:
        pytest.fail("COREMCP_TEST_DOCKER_HOST is not set; scripts/test starts a throwaway dockerd", pytrace=False)
    return host


def docker(host: str, *args: str) -> str:
    return subprocess.run(
        ["docker", *args], env={**os.environ, "DOCKER_HOST": host}, check=True,
        capture_output=True, text=True, timeout=60,
    ).stdout.strip()


@pytest.fixture
def container(docker_host: str) -> Iterator[str]:
    """A running busybox container that logs one line to each stream."""
    name = f"sdk-{uuid.uuid4().hex[:10]}"
    image = os.environ.get("COREMCP_TEST_DOCKER_IMAGE", "coremcp-test/busybox:latest")
    docker(docker_host, "run", "-d", "--network", "none", "--name", name, image, "sh", "-c",
           "trap 'exit 0' TERM; echo hello out; echo hello err >&2; sleep 1000 & wait")
    yield name
    subprocess.run(["docker", "rm", "-f", name], env={**os.environ, "DOCKER_HOST": docker_host},
                   capture_output=True, timeout=60)


@pytest.fixture
def server(tmp_path: Path, coremcp_bin: Path, test_libs_dir: Path, docker_host: str) -> Iterator[CoreMcpServer]:
    plugins = copy_libs(test_libs_dir, tmp_path / "docker-plugins", GROUP_LIBS)
    root = tmp_path / "root"
    project = root / "app"
    project.mkdir(parents=True)
    image = os.environ.get("COREMCP_TEST_DOCKER_IMAGE", "coremcp-test/busybox:latest")
    (project / "docker-compose.yml").write_text(
        f'version: "2.4"\nservices:\n  web:\n    image: {image}\n    network_mode: none\n'
        '    command: ["sh", "-c", "sleep 1"]\n')
    params = StdioServerParameters(
        command=str(coremcp_bin),
        args=["stdio", "--plugins", str(plugins), "--root", str(root)],
        env={**os.environ, "DOCKER_HOST": docker_host, "COREMCP_COMPOSE": "docker-compose"},
        cwd=str(root),
    )
    yield from logged_server(params, tmp_path / "coremcp-docker-stderr.log")



async def test_every_docker_tool_once(server: CoreMcpServer, container: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with server.client() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"docker_container_list", "docker_container_inspect", "docker_container_logs",
                    "docker_container_action", "docker_compose"} <= set(tools)
            assert tools["docker_container_list"].annotations.read_only_hint is True
            assert tools["docker_container_action"].annotations.destructive_hint is True

            listed = structured(await client.call_tool("docker_container_list", {"name": container}))
            assert [c["name"] for c in listed["containers"]] == [container]

            inspected = structured(await client.call_tool("docker_container_inspect", {"container": container}))
            assert inspected["container"]["state"]["running"] is True

            with anyio.fail_after(30):
                while True:
                    logs = structured(await client.call_tool("docker_container_logs", {"container": container}))
                    if "hello out" in logs["logs"] and "[stderr] hello err" in logs["logs"]:
                        break
                    await anyio.sleep(0.05)

            stopped = structured(await client.call_tool(
                "docker_container_action", {"container": container, "action": "stop", "timeout_s": 2}))
            assert stopped["state"] == "exited"

            config = structured(await client.call_tool("docker_compose", {"action": "config", "project_dir": "app"}))
            assert "web" in config["config"]["services"]

            missing = await client.call_tool("docker_container_inspect", {"container": "sdk-no-such"})
            assert missing.is_error
            assert 'no container "sdk-no-such"' in missing.content[0].text
