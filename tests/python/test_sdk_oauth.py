"""The official MCP Python SDK's OAuth client against `coremcp serve --oauth-issuer` and the
real npm oidc-provider (tests/oidc/provider.mjs, installed by scripts/lib/oidc.sh).

The SDK's `ClientCredentialsOAuthProvider` is given only the server's URL, its client id and
secret, and the issuer it trusts. Everything else it finds itself, as a real client does: the
`401`'s `WWW-Authenticate: Bearer resource_metadata="…"`, our protected-resource metadata
(RFC 9728), the provider's discovery document, and a token for our resource (RFC 8707). It then
lists and calls tools with that token.

Needs COREMCP_TEST_OIDC (the provider script) beside COREMCP_BIN and COREMCP_TEST_LIBS; skipped
without it unless COREMCP_TEST_ALL is set (scripts/test sets both).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

pytestmark = pytest.mark.anyio

OIDC = os.environ.get("COREMCP_TEST_OIDC", "")
LISTENING = re.compile(r"listening on (http://\S+/mcp)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Memory:
    """Token storage in memory (the SDK's TokenStorage protocol)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.fixture
def oidc_issuer() -> Iterator[str]:
    if not OIDC:
        if os.environ.get("COREMCP_TEST_ALL"):
            pytest.fail("COREMCP_TEST_OIDC is not set: scripts/test provides it", pytrace=False)
        pytest.skip("COREMCP_TEST_OIDC is not set (the OpenID provider scripts/lib/oidc.sh installs)")
    port = _free_port()
    issuer = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        ["node", OIDC, str(port), issuer, "k1"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", "the OpenID provider did not start"
        yield issuer
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture
def oauth_server(coremcp_bin: Path, plugins_dir: Path, tmp_path: Path, oidc_issuer: str) -> Iterator[str]:
    stderr_path = tmp_path / "serve.stderr"
    port = _free_port()
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [
                str(coremcp_bin), "serve", "--plugins", str(plugins_dir),
                "--listen", f"127.0.0.1:{port}", "--oauth-issuer", oidc_issuer, "--oauth-scopes", "notes",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "COREMCP_DATA": str(tmp_path / "data")},
        )
    try:
        deadline = time.monotonic() + 20
        while not (found := LISTENING.search(stderr_path.read_text(errors="replace"))):
            assert process.poll() is None, stderr_path.read_text(errors="replace")
            assert time.monotonic() < deadline, "coremcp serve never said where it listens"
            time.sleep(0.02)
        yield found.group(1)
    finally:
        process.kill()
        process.wait(timeout=10)


async def test_the_sdk_signs_in_through_our_metadata_and_calls_a_tool(oauth_server: str, oidc_issuer: str) -> None:
    storage = _Memory()
    auth = ClientCredentialsOAuthProvider(
        server_url=oauth_server,
        storage=storage,
        client_id="sdk",
        client_secret="sdk-secret-0123456789",
        token_endpoint_auth_method="client_secret_post",
        issuer=oidc_issuer,
    )
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(auth=auth, timeout=20) as http:
            async with streamable_http_client(oauth_server, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = await session.list_tools()
                    assert "fixture_echo" in {tool.name for tool in tools.tools}
                    echoed = await session.call_tool("fixture_echo", {"text": "signed in"})
                    assert not echoed.is_error, echoed
    # The SDK got its token from the provider, for our resource.
    assert storage.tokens is not None and storage.tokens.access_token.count(".") == 2


async def test_without_credentials_the_sdk_is_turned_away(oauth_server: str) -> None:
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(timeout=20) as http:
            reply = await http.post(oauth_server, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert reply.status_code == 401
            challenge = reply.headers["www-authenticate"]
            assert challenge.startswith('Bearer resource_metadata="'), challenge
            metadata = (await http.get(challenge.split('"')[1])).json()
            assert metadata["resource"] == oauth_server
            assert metadata["scopes_supported"] == ["notes"]
