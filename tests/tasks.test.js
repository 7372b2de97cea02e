// MCP tasks on both eras (issue 19; docs/decisions.md "Tasks on both eras"), on the conformance
// catalog's scripted task fixtures: 2025-11-25 tasks through the official TypeScript SDK's client
// (its experimental tasks API: task-augmented tools/call, tasks/get, tasks/result, tasks/list,
// tasks/cancel), and the 2026-07-28 extension io.modelcontextprotocol/tasks as JSON-RPC over
// HTTP. Tasks are bound to their owner (another caller's id answers like an unknown one) and
// expire by their TTL; they live in Durable Objects, so a fresh Worker instance over the same
// storage still answers them.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { startWorker } from "./support/worker.js";
import { post } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const MODERN = "2026-07-28";
const EXTENSION = "io.modelcontextprotocol/tasks";
const SECRET = "tasks-secret";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let w, state;

before(async () => {
  state = mkdtempSync(join(tmpdir(), "mcp-edge-tasks-"));
  w = await startWorker({ MCP_CATALOG: "conformance", JWT_SECRET: SECRET }, { quiet: true, persist: state });
});
after(async () => {
  await w?.stop();
  rmSync(state, { recursive: true, force: true });
});

const bearer = (sub) => ({ authorization: `Bearer ${hs256({ sub, roles: [], aud: new URL("/mcp", w.url).href, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` });

/** A 2025-11-25 SDK client of its own session. */
async function legacyClient() {
  const client = new Client({ name: "tasks-test", version: "1.0.0" }, { capabilities: { tasks: { requests: {} } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(w.mcpUrl)));
  return client;
}

/** Polls 2026 tasks/get until the task leaves `working` (or `until` says stop). */
async function settle(get, until = (t) => t.status !== "working") {
  for (let i = 0; i < 100; i++) {
    const t = await get();
    if (until(t)) return t;
    await sleep(100);
  }
  throw new Error("the task did not settle");
}

describe("2025-11-25 tasks through the official SDK client", () => {
  let client;
  before(async () => {
    client = await legacyClient();
  });
  after(() => client?.close());

  test("the server declares tasks, and tools/list says which tools may or must run as one", async () => {
    assert.deepEqual(client.getServerCapabilities().tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    assert.equal(support.slow_compute, "optional");
    assert.equal(support.failing_job, "required");
    assert.equal(support.greet, undefined, "a tool that is never a task declares nothing");
  });

  test("a task-augmented call creates a task; tasks/result waits for its result", async () => {
    const seen = [];
    for await (const m of client.experimental.tasks.callToolStream({ name: "slow_compute", arguments: { seconds: 1, label: "sdk" } }, CallToolResultSchema, { task: { ttl: 60_000 } })) seen.push(m);
    assert.equal(seen[0].type, "taskCreated", JSON.stringify(seen));
    const id = seen[0].task.taskId;
    assert.match(id, /^task-[0-9a-f]{32}$/);
    const last = seen.at(-1);
    assert.equal(last.type, "result", JSON.stringify(last));
    assert.equal(last.result.content[0].text, "Computed sdk in 1 s");
    const task = await client.experimental.tasks.getTask(id);
    assert.equal(task.status, "completed");
    assert.equal(task.ttl, 60_000);
    const { tasks } = await client.experimental.tasks.listTasks();
    assert.ok(tasks.some((t) => t.taskId === id), "tasks/list lists the session's task");
  });

  test("a tool error completes the task with isError; cancel stops a working task and refuses an ended one", async () => {
    const { task } = await client.request({ method: "tools/call", params: { name: "failing_job", arguments: {}, task: { ttl: 60_000 } } }, (await import("@modelcontextprotocol/sdk/types.js")).CreateTaskResultSchema);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(result.isError, true);
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, "completed");
    const long = await client.request({ method: "tools/call", params: { name: "slow_compute", arguments: { seconds: 600 }, task: { ttl: 60_000 } } }, (await import("@modelcontextprotocol/sdk/types.js")).CreateTaskResultSchema);
    const cancelled = await client.experimental.tasks.cancelTask(long.task.taskId);
    assert.equal(cancelled.status, "cancelled");
    await assert.rejects(client.experimental.tasks.cancelTask(long.task.taskId), (e) => e.code === -32602);
  });

  test("a tool that runs only as a task is refused without params.task; a call without it runs as before", async () => {
    // The SDK's callTool refuses this locally; the server must refuse it too, for other clients.
    await assert.rejects(client.request({ method: "tools/call", params: { name: "failing_job", arguments: {} } }, CallToolResultSchema), (e) => e.code === -32601);
    const plain = await client.callTool({ name: "slow_compute", arguments: { seconds: 0, label: "plain" } });
    assert.equal(plain.content[0].text, "Computed plain in 0 s");
  });

  test("another session's task id answers like an unknown one, and a task past its TTL is gone", async () => {
    const { CreateTaskResultSchema } = await import("@modelcontextprotocol/sdk/types.js");
    const mine = await client.request({ method: "tools/call", params: { name: "slow_compute", arguments: { seconds: 600 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
    const other = await legacyClient();
    try {
      const stranger = await other.experimental.tasks.getTask(mine.task.taskId).catch((e) => e);
      const unknown = await other.experimental.tasks.getTask("task-00000000000000000000000000000000").catch((e) => e);
      assert.equal(stranger.code, -32602);
      assert.equal(stranger.message.replace(mine.task.taskId, "ID"), unknown.message.replace("task-00000000000000000000000000000000", "ID"));
    } finally {
      await other.close();
    }
    const brief = await client.request({ method: "tools/call", params: { name: "slow_compute", arguments: { seconds: 600 }, task: { ttl: 1 } } }, CreateTaskResultSchema);
    assert.equal(brief.task.ttl, 1);
    await sleep(50);
    await assert.rejects(client.experimental.tasks.getTask(brief.task.taskId), (e) => e.code === -32602);
  });
});

describe("2026-07-28: the io.modelcontextprotocol/tasks extension", () => {
  let n = 1;
  const caps = (declared) => (declared ? { extensions: { [EXTENSION]: {} }, elicitation: {} } : { elicitation: {} });
  async function modern(method, params, { declared = true, headers = {} } = {}) {
    const p = { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": caps(declared) } };
    const name = p.name ?? p.taskId;
    const res = await post(w.mcpUrl, { jsonrpc: "2.0", id: n++, method, params: p }, { headers: { "mcp-protocol-version": MODERN, "mcp-method": method, ...(name ? { "mcp-name": name } : {}), ...headers } });
    return { status: res.status, body: await res.json() };
  }
  const get = (taskId, opts) => modern("tasks/get", { taskId }, opts).then((r) => r.body.result ?? r.body.error);

  test("server/discover advertises the extension, not a tasks capability", async () => {
    const { body } = await modern("server/discover", {});
    assert.deepEqual(body.result.capabilities.extensions, { [EXTENSION]: {} });
    assert.equal(body.result.capabilities.tasks, undefined);
  });

  test("a declaring request gets a CreateTaskResult, then follows the task to its inlined result", async () => {
    const { body } = await modern("tools/call", { name: "slow_compute", arguments: { seconds: 1, label: "m" } });
    const created = body.result;
    assert.equal(created.resultType, "task");
    assert.equal(created.status, "working");
    assert.ok(Number.isInteger(created.ttlMs) && Number.isInteger(created.pollIntervalMs));
    const done = await settle(() => get(created.taskId));
    assert.equal(done.status, "completed");
    assert.equal(done.resultType, "complete");
    assert.equal(done.result.content[0].text, "Computed m in 1 s");
  });

  test("without the extension: a call runs synchronously, a required-task tool and tasks/* are -32021", async () => {
    const { body } = await modern("tools/call", { name: "slow_compute", arguments: { seconds: 0, label: "sync" } }, { declared: false });
    assert.equal(body.result.resultType, "complete");
    assert.equal(body.result.content[0].text, "Computed sync in 0 s");
    const required = await modern("tools/call", { name: "failing_job", arguments: {} }, { declared: false });
    assert.equal(required.body.error.code, -32021);
    assert.deepEqual(required.body.error.data, { requiredCapabilities: { extensions: { [EXTENSION]: {} } } });
    const gated = await modern("tasks/get", { taskId: "task-00000000000000000000000000000000" }, { declared: false });
    assert.equal(gated.body.error.code, -32021);
  });

  test("questions: input_required until every key is answered, tasks/update acknowledges, cancel is idempotent", async () => {
    const { body } = await modern("tools/call", { name: "multi_input", arguments: {} });
    const id = body.result.taskId;
    const asked = await get(id);
    assert.equal(asked.status, "input_required");
    assert.deepEqual(Object.keys(asked.inputRequests).sort(), ["confirm", "name"]);
    const ack = await modern("tasks/update", { taskId: id, inputResponses: { name: { action: "accept", content: { name: "Ann" } } } });
    assert.deepEqual(ack.body.result, { resultType: "complete" });
    assert.deepEqual(Object.keys((await get(id)).inputRequests), ["confirm"]);
    await modern("tasks/update", { taskId: id, inputResponses: { confirm: { action: "accept", content: { confirm: true } } } });
    const done = await settle(() => get(id));
    assert.equal(done.result.content[0].text, "Both answers in: name Ann");
    assert.deepEqual((await modern("tasks/cancel", { taskId: id })).body.result, { resultType: "complete" });
    assert.equal((await get(id)).status, "completed", "cancelling an ended task changes nothing");
  });

  test("Mcp-Name must mirror taskId", async () => {
    const { body } = await modern("tools/call", { name: "slow_compute", arguments: { seconds: 600 } });
    const wrong = await modern("tasks/get", { taskId: body.result.taskId }, { headers: { "mcp-name": "task-ffffffffffffffffffffffffffffffff" } });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error.code, -32020);
  });

  test("a signed-in caller's task is unknown to another caller, and survives a new Worker instance over the same storage", async () => {
    const { body } = await modern("tools/call", { name: "slow_compute", arguments: { seconds: 600 } }, { headers: bearer("user-a") });
    const id = body.result.taskId;
    const own = await get(id, { headers: bearer("user-a") });
    assert.equal(own.status, "working");
    const stranger = await get(id, { headers: bearer("user-b") });
    const anonymous = await get(id);
    const unknown = await get("task-00000000000000000000000000000000", { headers: bearer("user-b") });
    for (const e of [stranger, anonymous]) {
      assert.equal(e.code, -32602);
      assert.equal(e.message.replace(id, "ID"), unknown.message.replace("task-00000000000000000000000000000000", "ID"));
    }
    await w.stop();
    w = await startWorker({ MCP_CATALOG: "conformance", JWT_SECRET: SECRET }, { quiet: true, persist: state });
    assert.equal((await get(id, { headers: bearer("user-a") })).status, "working", "the task outlived the instance");
    await modern("tasks/cancel", { taskId: id }, { headers: bearer("user-a") });
    assert.equal((await get(id, { headers: bearer("user-a") })).status, "cancelled");
  });
});
