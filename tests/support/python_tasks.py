"""2026-07-28 tasks through the Python MCP SDK's (PyPI `mcp`) own client, for tests/python_tasks.test.js.

Usage: python python_tasks.py MCP_URL TOKEN TOKEN_OF_ANOTHER_CALLER

The SDK ships no client for the tasks extension (`io.modelcontextprotocol/tasks`), but its
`Client(extensions=[...])` hook lets a client declare one: the extension is advertised in every
request's client capabilities, and its claim admits a `tools/call` result of `resultType` "task",
which `ClientSession.call_tool(..., allow_claimed=True)` hands back as it came. `tasks/get` and
`tasks/cancel` then go through the session's generic `send_request`. The declaration below is
just that: the models of the shapes the SDK must let through, not a tasks client of our own
(its resolver refuses; this script follows each task itself, through the SDK's session).

As the signed-in caller of TOKEN, in one 2026-07-28 client: stores two chains with `create_chain`
(one that completes, one that pauses at a model step the server cannot answer), runs the first
as a task and polls `tasks/get` until it ends, runs the second, waits until it pauses and cancels
it with `tasks/cancel` (twice); a client that does not declare the extension gets the first
chain's result synchronously. As TOKEN_OF_ANOTHER_CALLER: asks `tasks/get` and `tasks/cancel`
of the first caller's task and of an id nobody has. Prints one JSON line of what it saw; the
SDK's own warnings go to stderr through `logging`, which the test reads.
"""

import asyncio
import json
import logging
import sys
from typing import Any, ClassVar, Literal

import anyio
import httpx2
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, Request, RequestParams, Result

logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

EXTENSION = "io.modelcontextprotocol/tasks"
UNKNOWN = "exec-00000000000000000000000000000000"


# --- The client's declaration of the tasks extension (SDK hook), nothing more. ---
class CreateTaskResult(Result):
    """A `tools/call` answered with a task (the extension's `resultType` "task")."""

    result_type: Literal["task"]
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class TaskParams(RequestParams):
    task_id: str


class TaskRequest(Request[TaskParams, str]):
    """`tasks/get` or `tasks/cancel`; SEP-2663 names the task in the `Mcp-Name` header."""

    name_param: ClassVar[str | None] = "taskId"


class TaskAnswer(Result, extra="allow"):
    """What `tasks/get` and `tasks/cancel` answer, kept whole for the test to read."""


async def _follow_yourself(_result: CreateTaskResult, _ctx: ClaimContext) -> CallToolResult:
    raise RuntimeError("this test follows its tasks itself: call with allow_claimed=True")


class TasksDeclaration(ClientExtension):
    identifier = EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=_follow_yourself)]


# --- The test's own steps, through the SDK's client session. ---
def step(i: int, name: str, template: str, outputs: list[str], **extra: Any) -> dict[str, Any]:
    return {"id": i, "name": name, "type": "data_transformation", "input_variables": [], "output_variables": outputs, "input_template": template, **extra}


CHAINS = [
    {
        "name": "py-task-quick", "title": "Quick task", "category": "custom",
        "steps": [step(1, "one", "{n * 2}", ["doubled"]), step(2, "two", "{doubled + 1}", ["plus_one"])],
        "input_schema": {"type": "object", "properties": {"n": {"type": "number", "required": True}}},
    },
    {
        # Step 2 asks a model; the server has none and a background run asks no client, so it pauses.
        "name": "py-task-approval", "title": "Approval task", "category": "custom",
        "steps": [
            step(1, "prepare", "{name|upper}", ["shout"]),
            step(2, "decide", "Approve {shout}?", ["status"], type="instruction_set", instruction_set="client-communication"),
            step(3, "finish", "{shout}:{status}", ["result"]),
        ],
        "input_schema": {"type": "object", "properties": {"name": {"type": "string", "required": True}}},
    },
]


def connect(url: str, token: str, declared: bool = True) -> tuple[httpx2.AsyncClient, Client]:
    """A 2026-07-28 client signed in with `token` that declares the tasks extension (unless `declared` is false)."""
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60)
    extensions = [TasksDeclaration()] if declared else None
    return http, Client(streamable_http_client(url, http_client=http), mode="2026-07-28", extensions=extensions)


async def task_request(client: Client, method: str, task_id: str) -> dict[str, Any]:
    """`method` for `task_id` through the SDK session: its result, or its JSON-RPC error."""
    try:
        r = await client.session.send_request(TaskRequest(method=method, params=TaskParams(task_id=task_id)), TaskAnswer)
    except MCPError as e:
        return {"error": {"code": e.code, "message": e.message}}
    return r.model_dump(mode="json", by_alias=True, exclude_none=True)


async def settle(client: Client, task_id: str, until: Any) -> dict[str, Any]:
    """Polls `tasks/get` until `until` accepts the task (15 s at most)."""
    with anyio.fail_after(15):
        while True:
            t = await task_request(client, "tasks/get", task_id)
            if until(t):
                return t
            await anyio.sleep(0.1)


async def main(url: str, token: str, other_token: str) -> None:
    out: dict[str, Any] = {}
    http, client = connect(url, token)
    async with http, client:
        out["version"] = client.protocol_version
        await client.list_tools()
        for chain in CHAINS:
            r = await client.call_tool("create_chain", {"chain_definition": chain, "creation_options": {"overwrite_existing": True}})
            out.setdefault("stored", []).append(not r.is_error)

        async def start(chain: str, variables: dict[str, Any]) -> Any:
            return await client.session.call_tool("execute_chain", {"chain_name": chain, "variables": variables}, allow_claimed=True)

        created = await start("py-task-quick", {"n": 4})
        out["created"] = {"type": type(created).__name__, **created.model_dump(mode="json", by_alias=True, exclude_none=True)}
        out["done"] = await settle(client, created.task_id, lambda t: t.get("status") != "working")
        # The inlined result is the tool's result: the SDK's model of one, and its outputSchema check.
        try:
            final = CallToolResult.model_validate(out["done"].get("result"), by_name=False)
            await client.session.validate_tool_result("execute_chain", final)
            out["final_accepted"] = True
        except Exception as e:  # noqa: BLE001 - the test reports what the SDK refused
            out["final_accepted"] = f"{type(e).__name__}: {e}"

        paused = await start("py-task-approval", {"name": "Ada"})
        out["paused"] = await settle(client, paused.task_id, lambda t: t.get("status") != "working")

        http_b, other = connect(url, other_token)
        async with http_b, other:
            out["stranger"] = {
                "get": await task_request(other, "tasks/get", created.task_id),
                "get_unknown": await task_request(other, "tasks/get", UNKNOWN),
                "cancel": await task_request(other, "tasks/cancel", paused.task_id),
                "cancel_unknown": await task_request(other, "tasks/cancel", UNKNOWN),
            }
        out["after_stranger"] = await task_request(client, "tasks/get", paused.task_id)
        out["cancel"] = await task_request(client, "tasks/cancel", paused.task_id)
        out["cancelled"] = await task_request(client, "tasks/get", paused.task_id)
        out["cancel_again"] = await task_request(client, "tasks/cancel", paused.task_id)
        plain_http, plain = connect(url, token, declared=False)
        async with plain_http, plain:
            r = await plain.call_tool("execute_chain", {"chain_name": "py-task-quick", "variables": {"n": 1}})
            out["undeclared"] = {"type": type(r).__name__, "text": r.content[0].text if r.content else None}
        out["ids"] = {"done": created.task_id, "paused": paused.task_id, "unknown": UNKNOWN}
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
