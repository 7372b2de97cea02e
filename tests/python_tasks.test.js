// 2026-07-28 tasks (the io.modelcontextprotocol/tasks extension, issue 19 item 1) through the
// official Python MCP SDK's client (PyPI `mcp`, run by tests/support/python_tasks.py). The SDK
// has no tasks client, so the script only declares the extension through the SDK's
// `Client(extensions=[...])` hook (which advertises it and lets a `resultType: "task"` result
// through) and sends `tasks/get` and `tasks/cancel` through the SDK session's generic
// `send_request`: execute_chain on a chain the caller stored answers with a task, the task is
// followed to its result, another caller's task id answers like an unknown one, and a paused task
// is cancelled. Skipped without the SDK (tests/support/python.js says when).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { missing, pythonScript } from "./support/python.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "python-tasks-secret";

describe("2026-07-28 tasks through the Python SDK's client", { skip: missing ?? false }, () => {
  let w, r;
  before(async () => {
    w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
    const aud = new URL("/mcp", w.url).href;
    const token = (sub) => hs256({ sub, roles: [], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET);
    r = await pythonScript("python_tasks.py", [w.mcpUrl, token("py-user-a"), token("py-user-b")]);
  });
  after(() => w?.stop());

  test("execute_chain on a chain the caller stored answers a declaring client with a task; tasks/get follows it to its result", () => {
    assert.equal(r.version, "2026-07-28");
    assert.deepEqual(r.stored, [true, true], "create_chain stored both chains");
    assert.equal(r.created.type, "CreateTaskResult", "the SDK handed back the claimed shape");
    assert.equal(r.created.resultType, "task");
    assert.match(r.created.taskId, /^exec-[0-9a-f]{32}$/);
    assert.ok(Number.isInteger(r.created.ttlMs) && Number.isInteger(r.created.pollIntervalMs), JSON.stringify(r.created));
    assert.equal(r.done.taskId, r.created.taskId);
    assert.equal(r.done.status, "completed");
    assert.match(r.done.result.content[0].text, /^Chain execution completed successfully\.[\s\S]*plus_one: 9/);
    assert.equal(r.final_accepted, true, "the inlined result is a CallToolResult that passes the SDK's outputSchema check");
  });

  test("a client that does not declare the extension gets the result synchronously", () => {
    assert.equal(r.undeclared.type, "CallToolResult");
    assert.match(r.undeclared.text, /^Chain execution completed successfully\.[\s\S]*plus_one: 3/);
  });

  test("another caller's task id answers tasks/get and tasks/cancel like an unknown one, and changes nothing", () => {
    const same = (a, idA, b, idB) => assert.equal(a.message.replace(idA, "ID"), b.message.replace(idB, "ID"));
    const { get, get_unknown, cancel, cancel_unknown } = r.stranger;
    for (const e of [get, get_unknown, cancel, cancel_unknown]) assert.equal(e.error?.code, -32602, JSON.stringify(e));
    same(get.error, r.ids.done, get_unknown.error, r.ids.unknown);
    same(cancel.error, r.ids.paused, cancel_unknown.error, r.ids.unknown);
    assert.equal(r.after_stranger.status, "input_required", "the stranger's cancel changed nothing");
  });

  test("tasks/cancel cancels a paused task, and again is still fine", () => {
    assert.equal(r.paused.status, "input_required");
    assert.deepEqual(Object.keys(r.paused.inputRequests), ["step-2"]);
    assert.deepEqual(r.cancel, { resultType: "complete" });
    assert.equal(r.cancelled.status, "cancelled");
    assert.deepEqual(r.cancel_again, { resultType: "complete" });
  });

  test("the SDK printed no warning", () => {
    assert.equal(r.stderr, "");
  });
});
