"""The Python MCP SDK (PyPI `mcp`) as a plain client, for tests/python_sdk.test.js.

Usage: python python_client.py SCENARIO MCP_URL MODE [TOKEN] [ARGUMENTS_JSON]

MODE is the SDK's `Client(mode=...)`: `legacy` (a 2025-11-25 session), `2026-07-28`, or `auto`
(the SDK's default: `server/discover`, which picks 2026-07-28 here). TOKEN, when not `-`, is sent
as a bearer token. Every scenario prints one JSON line on stdout; the SDK's own warnings (an SSE
event it does not know, a result failing its tool's outputSchema) go to stderr through `logging`,
which the test reads.

Scenarios:
- `surface`: with a 2025 session, waits until the SDK's GET stream is open (so anything the
  server puts on it reaches the SDK); lists every tool page by page; calls `TOOL` (default
  `test_tool_with_progress`) with a progress callback and then `get_mode_indicator`, whose tool
  events the session logs; ends with one more round trip so the GET stream's frames are read.
- `calls`: calls each `{"name", "args"}` of ARGUMENTS_JSON (a list; `args` the arguments as JSON
  text, where `$EXECUTION_ID` and `$TIDE_ID` become the ids earlier calls returned) and reports
  for each whether the SDK accepted its result (`ok`, `is_error`) or raised (`error`): the SDK
  validates `structuredContent` against the tool's listed `outputSchema`.
- `list_changed`: calls ARGUMENTS_JSON's calls (`{"name", "args"}`) in order and counts the
  `notifications/tools/list_changed` that reached the client: on the call's stream (2025) or on
  a `subscriptions/listen` stream (2026-07-28).
"""

import asyncio
import json
import logging
import re
import sys
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


class Http:
    """An HTTP client that notices when the SDK's GET stream (2025 sessions) is open."""

    def __init__(self, token: str | None) -> None:
        self.get_stream_open = anyio.Event()
        headers = {"authorization": f"Bearer {token}"} if token else {}

        async def on_response(response: httpx2.Response) -> None:
            if response.request.method == "GET" and response.status_code == 200:
                self.get_stream_open.set()

        self.client = httpx2.AsyncClient(headers=headers, timeout=60, event_hooks={"response": [on_response]})


async def all_tools(client: Client) -> tuple[list[str], list[dict[str, Any]]]:
    """Every tool name, page by page (no client cache), and each page's cursor and names."""
    names: list[str] = []
    pages: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        pages.append({"cursor": cursor, "names": [t.name for t in page.tools], "next": page.next_cursor})
        names.extend(t.name for t in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return names, pages


async def surface(client: Client, http: Http, mode: str, extra: Any) -> dict[str, Any]:
    if mode == "legacy":
        with anyio.fail_after(10):
            await http.get_stream_open.wait()
    names, pages = await all_tools(client)
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    tool = (extra or {}).get("tool", "test_tool_with_progress")
    done = await client.call_tool(tool, {}, progress_callback=on_progress)
    mode_result = await client.call_tool("get_mode_indicator", {})
    # One more round trip: frames the server sent on the GET stream before it are read by now.
    again_names, again_pages = await all_tools(client)
    # The same cursor gives the same page.
    second = await client.list_tools(cursor=pages[1]["cursor"], cache_mode="bypass") if len(pages) > 1 else None
    return {
        "version": client.protocol_version,
        "tools": names,
        "pages": len(pages),
        "stable": again_pages == pages
        and (second is None or [t.name for t in second.tools] == pages[1]["names"]),
        "progress": progress,
        "result": done.model_dump(mode="json", by_alias=True, exclude_none=True),
        "mode": mode_result.structured_content,
    }


async def calls(client: Client, _http: Http, _mode: str, extra: Any) -> dict[str, Any]:
    await all_tools(client)
    ids = {"$EXECUTION_ID": "$EXECUTION_ID", "$TIDE_ID": "$TIDE_ID"}
    out = []
    for call in extra:
        text = call["args"]
        for placeholder, value in ids.items():
            text = text.replace(placeholder, value)
        try:
            r = await client.call_tool(call["name"], json.loads(text))
        except Exception as e:  # noqa: BLE001 - the test reports what the SDK raised
            out.append({"name": call["name"], "ok": False, "error": f"{type(e).__name__}: {e}"})
            continue
        first = r.content[0].text if r.content and getattr(r.content[0], "text", None) else ""
        if m := re.search(r"exec-[0-9a-f]{32}", first):
            ids["$EXECUTION_ID"] = m.group(0)
        if isinstance(r.structured_content, dict) and isinstance(r.structured_content.get("tide_id"), str):
            ids["$TIDE_ID"] = r.structured_content["tide_id"]
        out.append({"name": call["name"], "ok": True, "is_error": r.is_error, "structured": r.structured_content})
    return {"version": client.protocol_version, "calls": out}


async def list_changed(client: Client, _http: Http, mode: str, extra: Any) -> dict[str, Any]:
    await all_tools(client)
    results = []
    if mode == "legacy":
        for call in extra:
            r = await client.call_tool(call["name"], json.loads(call["args"]))
            results.append(r.is_error)
        return {"version": client.protocol_version, "changes": seen_changes, "errors": results}
    changes = 0
    async with client.listen(tools_list_changed=True) as sub:
        honoured = bool(sub.honored.tools_list_changed) if sub.honored else False
        for call in extra:
            r = await client.call_tool(call["name"], json.loads(call["args"]))
            results.append(r.is_error)
        # The change is announced before the call that caused it answers; wait for it.
        with anyio.move_on_after(10):
            async for _event in sub:
                changes += 1
                break
    return {"version": client.protocol_version, "changes": changes, "honoured": honoured, "errors": results}


seen_changes = 0


async def on_message(message: Any) -> None:
    """Counts `notifications/tools/list_changed` reaching a 2025 session's client."""
    global seen_changes
    if type(message).__name__ == "ToolListChangedNotification" or getattr(message, "method", None) == "notifications/tools/list_changed":
        seen_changes += 1


SCENARIOS = {"surface": surface, "calls": calls, "list_changed": list_changed}


async def main(scenario: str, url: str, mode: str, token: str = "-", arguments: str = "null") -> None:
    http = Http(None if token == "-" else token)
    async with http.client:
        async with Client(streamable_http_client(url, http_client=http.client), mode=mode, message_handler=on_message) as client:
            out = await SCENARIOS[scenario](client, http, mode, json.loads(arguments))
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
