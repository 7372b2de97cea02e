"""The Python MCP SDK (PyPI `mcp`) as an OAuth client, for tests/oauth_python.test.js.

Usage: python oauth_client.py MCP_URL USER ROLES. Connects with the SDK's OAuthClientProvider:
discovery, dynamic client registration, PKCE, the consent page answered as a person would (the
development login's user and roles, then Allow), the token exchange; then lists the tools and
calls get_employee and list_employees. Prints one JSON line: the tool names and both results.
"""

import asyncio
import json
import re
import sys
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:9/callback"


class MemoryStorage:
    """Tokens and the registered client, kept for this run only."""

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


async def main(url: str, user: str, roles: str) -> None:
    redirected: dict[str, str] = {}

    async def consent(authorization_url: str) -> None:
        """What the person does in the browser: the consent page, the login fields, Allow."""
        async with httpx2.AsyncClient() as browser:
            page = await browser.get(authorization_url)
            page.raise_for_status()
            handle = re.search(r'name="handle" value="([^"]+)"', page.text)
            if not handle:
                raise RuntimeError(f"no consent form: {page.text[:300]}")
            form = {"handle": handle.group(1), "decision": "approve", "user": user, "roles": roles}
            cookies = "; ".join(c.split(";")[0] for c in page.headers.get_list("set-cookie"))
            posted = await browser.post(urljoin(authorization_url, "/authorize"), data=form, headers={"cookie": cookies})
            if posted.status_code != 302:
                raise RuntimeError(f"consent: HTTP {posted.status_code}: {posted.text[:300]}")
            back = urlparse(posted.headers["location"])
            redirected.update({k: v[0] for k, v in parse_qs(back.query).items()})

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=redirected["code"], state=redirected.get("state"), iss=redirected.get("iss"))

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="python oauth test",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=MemoryStorage(),
        redirect_handler=consent,
        callback_handler=callback,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            me = await client.call_tool("get_employee", {})
            listed = await client.call_tool("list_employees", {"limit": 2})
    print(json.dumps({"tools": tools, "me": me.structured_content, "listed": listed.structured_content}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
