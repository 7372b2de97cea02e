// Chain runs as MCP tasks (issue 19 item 1; docs/decisions.md "Tasks on both eras"), against the
// production catalog: execute_chain called as a task starts the execution in the background, and
// the task id IS the execution id, so tasks/* and the chain tools (get_chain_status, resume_chain,
// cancel_chain) act on one record. 2025-11-25 through the official TypeScript SDK's client (its
// experimental tasks API); 2026-07-28 (the io.modelcontextprotocol/tasks extension) as JSON-RPC
// over HTTP, where each run lives in a run object of its own. Tasks are bound to their owner.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { CallToolResultSchema, CreateMessageRequestSchema, CreateTaskResultSchema, ElicitRequestSchema, TaskStatusNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startWorker } from "./support/worker.js";
import { post } from "./support/mcp.js";
import { settle, tasksClient } from "./support/tasks.js";
import { hs256 } from "../scripts/token.js";

const MODERN = "2026-07-28";
const EXTENSION = "io.modelcontextprotocol/tasks";
const SECRET = "chain-tasks-secret";
const UNKNOWN = "exec-00000000000000000000000000000000";
const textOf = (r) => r.content.map((c) => c.text).join("\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const step = (id, name, extra = {}) => ({ id, name, type: "data_transformation", input_variables: [], output_variables: [], ...extra });
let w;

const CHAINS = [
  {
    name: "task-quick", title: "Quick task", category: "custom",
    steps: [step(1, "one", { input_template: "{n * 2}", output_variables: ["doubled"] }), step(2, "two", { input_template: "{doubled + 1}", output_variables: ["plus_one"] })],
    input_schema: { type: "object", properties: { n: { type: "number", required: true } } },
  },
  {
    // Step 2 asks a model; the server has none and a background run asks no client, so it pauses.
    name: "task-approval", title: "Approval task", category: "custom",
    steps: [
      step(1, "prepare", { input_template: "{name|upper}", output_variables: ["shout"] }),
      step(2, "decide", { type: "instruction_set", instruction_set: "client-communication", input_template: "Approve {shout}?", output_variables: ["status"] }),
      step(3, "finish", { input_template: "{shout}:{status}", output_variables: ["result"] }),
    ],
    input_schema: { type: "object", properties: { name: { type: "string", required: true } } },
  },
];

const bearer = (sub) => ({ authorization: `Bearer ${hs256({ sub, roles: [], aud: new URL("/mcp", w.url).href, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` });

/** A 2025-11-25 SDK client of its own session, signed in as `sub`, that declares tasks (unless `tasks` is false). */
const legacyClient = (sub, { tasks = true, capabilities } = {}) => tasksClient(w.mcpUrl, bearer(sub), { name: "chain-tasks-test", tasks, capabilities });


before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
  const client = await legacyClient("chain-author");
  try {
    for (const def of CHAINS) {
      const r = await client.callTool({ name: "create_chain", arguments: { chain_definition: def, creation_options: { overwrite_existing: true, visibility: "public" } } });
      assert.equal(r.isError, undefined, textOf(r));
    }
  } finally {
    await client.close();
  }
});
after(() => w?.stop());

describe("2025-11-25: execute_chain as a task, through the official SDK client", () => {
  let client;
  before(async () => {
    client = await legacyClient("user-a");
  });
  after(() => client?.close());
  const taskCall = (chain_name, variables) => client.request({ method: "tools/call", params: { name: "execute_chain", arguments: { chain_name, variables }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);

  test("the production server declares tasks (no tasks/list), and tools/list says execute_chain and resume_chain may run as one", async () => {
    assert.deepEqual(client.getServerCapabilities().tasks, { cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    assert.equal(support.execute_chain, "optional");
    assert.equal(support.resume_chain, "optional");
    assert.equal(support.execute_workflow, "optional", "FlowMind's workflows run as tasks too (tests/workflow_tasks.test.js)");
    assert.equal(support.get_chain_status, undefined, "a tool that is never a task declares nothing");
  });

  test("the task is the execution: its id is the execution id, and tasks/result is the synchronous call's answer", async () => {
    const seen = [];
    for await (const m of client.experimental.tasks.callToolStream({ name: "execute_chain", arguments: { chain_name: "task-quick", variables: { n: 20 } } }, CallToolResultSchema, { task: { ttl: 60_000 } })) seen.push(m);
    assert.equal(seen[0].type, "taskCreated", JSON.stringify(seen));
    const id = seen[0].task.taskId;
    assert.match(id, /^exec-[0-9a-f]{32}$/);
    const last = seen.at(-1);
    assert.equal(last.type, "result", JSON.stringify(last));
    assert.match(textOf(last.result), /^Chain execution completed successfully\.[\s\S]*Steps Completed: 2\/2[\s\S]*plus_one: 41[\s\S]*Execution ID:\*\* exec-/);
    assert.ok(textOf(last.result).includes(id));
    assert.equal((await client.experimental.tasks.getTask(id)).status, "completed");
    const status = await client.callTool({ name: "get_chain_status", arguments: { execution_id: id } });
    assert.equal(status.structuredContent.status, "completed");
    assert.equal(status.structuredContent.mode, "async", "the task ran as a background execution");
  });

  test("a paused execution is input_required; resume_chain on the same id continues the task to its result", async () => {
    const { task } = await taskCall("task-approval", { name: "Ada" });
    const paused = await settle(() => client.experimental.tasks.getTask(task.taskId));
    assert.equal(paused.status, "input_required");
    await assert.rejects(client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), (e) => /waits for input[\s\S]*resume_chain/.test(e.message));
    const resumed = await client.callTool({ name: "resume_chain", arguments: { execution_id: task.taskId, outputs: { status: "approved" } } });
    assert.equal(resumed.isError, undefined, textOf(resumed));
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.match(textOf(result), /completed successfully[\s\S]*ADA:approved/);
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, "completed");
  });

  test("resume_chain as a task continues a synchronous execution in the background, under the same id", async () => {
    const paused = await client.callTool({ name: "execute_chain", arguments: { chain_name: "task-approval", variables: { name: "Dee" } } });
    const id = textOf(paused).match(/exec-[0-9a-f]{32}/)[0];
    const before = await client.callTool({ name: "get_chain_status", arguments: { execution_id: id } });
    assert.equal(before.structuredContent.mode, "sync");
    const { task } = await client.request({ method: "tools/call", params: { name: "resume_chain", arguments: { execution_id: id, outputs: { status: "ok" } }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
    assert.equal(task.taskId, id);
    const result = await client.experimental.tasks.getTaskResult(id, CallToolResultSchema);
    assert.match(textOf(result), /completed successfully[\s\S]*DEE:ok/);
    const after = await client.callTool({ name: "get_chain_status", arguments: { execution_id: id } });
    assert.equal(after.structuredContent.mode, "async");
  });

  test("tasks/cancel cancels the execution as cancel_chain does, and refuses an ended task", async () => {
    const { task } = await taskCall("task-approval", { name: "Bo" });
    await settle(() => client.experimental.tasks.getTask(task.taskId));
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, "cancelled");
    const status = await client.callTool({ name: "get_chain_status", arguments: { execution_id: task.taskId } });
    assert.equal(status.structuredContent.status, "cancelled");
    await assert.rejects(client.experimental.tasks.cancelTask(task.taskId), (e) => e.code === -32602);
    await assert.rejects(client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), (e) => /cancelled/.test(e.message));
  });

  test("the session tells its client each status change of a chain task (notifications/tasks/status on its stream)", async () => {
    const heard = await legacyClient("user-a");
    const seen = [];
    heard.setNotificationHandler(TaskStatusNotificationSchema, (n) => seen.push(n.params));
    try {
      const { task } = await heard.request({ method: "tools/call", params: { name: "execute_chain", arguments: { chain_name: "task-approval", variables: { name: "Flo" } }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      const statuses = () => seen.filter((p) => p.taskId === task.taskId).map((p) => p.status);
      await settle(async () => statuses(), (s) => s.includes("input_required"));
      const resumed = await heard.callTool({ name: "resume_chain", arguments: { execution_id: task.taskId, outputs: { status: "ok" } } });
      assert.equal(resumed.isError, undefined, textOf(resumed));
      await settle(async () => statuses(), (s) => s.includes("completed"));
      const told = statuses();
      assert.equal(told[0], "input_required", JSON.stringify(told));
      assert.equal(told.at(-1), "completed", JSON.stringify(told));
      assert.ok(told.every((s, i) => i === 0 || s !== told[i - 1]), `each change is told once: ${JSON.stringify(told)}`);
      const last = seen.filter((p) => p.taskId === task.taskId).at(-1);
      assert.equal(last.lastUpdatedAt, (await heard.experimental.tasks.getTask(task.taskId)).lastUpdatedAt, "the notification carries the Task tasks/get answers");
      assert.ok(Number.isInteger(last.ttl) && Number.isInteger(last.pollInterval));
      assert.equal(seen.filter((p) => p.taskId !== task.taskId).length, 0, "only this session's tasks");
    } finally {
      await heard.close();
    }
  });

  test("an async start answers its execution id as structured content, which the task reads (not the text)", async () => {
    const started = await client.callTool({ name: "execute_chain", arguments: { chain_name: "task-quick", variables: { n: 3 }, execution_options: { async_execution: true } } });
    assert.match(textOf(started), /^Chain execution started asynchronously\./);
    assert.match(started.structuredContent.execution_id, /^exec-[0-9a-f]{32}$/);
    assert.ok(textOf(started).includes(started.structuredContent.execution_id));
    assert.equal(started.structuredContent.status, "running");
    assert.equal(started.structuredContent.total_steps, 2);
  });

  test("a call that starts no run answers its error result; a call without params.task runs synchronously", async () => {
    const refused = await client.request({ method: "tools/call", params: { name: "execute_chain", arguments: { chain_name: "task-quick", variables: {} }, task: { ttl: 60_000 } } }, CallToolResultSchema);
    assert.equal(refused.isError, true);
    assert.match(textOf(refused), /Variable validation failed/);
    const plain = await client.callTool({ name: "execute_chain", arguments: { chain_name: "task-quick", variables: { n: 1 } } });
    assert.match(textOf(plain), /^Chain execution completed successfully\.[\s\S]*plus_one: 3/);
  });

  test("a client that did not declare tasks gets the synchronous answer even with params.task", async () => {
    const plain = await legacyClient("user-a", { tasks: false });
    try {
      const r = await plain.request({ method: "tools/call", params: { name: "execute_chain", arguments: { chain_name: "task-quick", variables: { n: 2 } }, task: { ttl: 60_000 } } }, CallToolResultSchema);
      assert.match(textOf(r), /^Chain execution completed successfully\.[\s\S]*plus_one: 5/);
      assert.equal(r.task, undefined);
    } finally {
      await plain.close();
    }
  });

  test("another user's execution answers like an unknown task", async () => {
    const { task } = await taskCall("task-approval", { name: "Cy" });
    const other = await legacyClient("user-b");
    try {
      const stranger = await other.experimental.tasks.getTask(task.taskId).catch((e) => e);
      const unknown = await other.experimental.tasks.getTask(UNKNOWN).catch((e) => e);
      assert.equal(stranger.code, -32602);
      assert.equal(stranger.message.replace(task.taskId, "ID"), unknown.message.replace(UNKNOWN, "ID"));
      await assert.rejects(other.experimental.tasks.cancelTask(task.taskId), (e) => e.code === -32602);
    } finally {
      await other.close();
    }
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, "input_required", "the stranger changed nothing");
  });
});

describe("2025-11-25: tasks/result asks a paused task's question on its stream (multi-round composition)", () => {
  const RELATED = "io.modelcontextprotocol/related-task";
  /** A client of `sub` declaring `capabilities`, the requests it was sent, and a task-call helper. */
  async function asked(sub, capabilities) {
    const client = await legacyClient(sub, { capabilities });
    const start = async (chain_name, variables) =>
      (await client.request({ method: "tools/call", params: { name: "execute_chain", arguments: { chain_name, variables }, task: { ttl: 60_000 } } }, CreateTaskResultSchema)).task.taskId;
    const paused = async (id) => assert.equal((await settle(() => client.experimental.tasks.getTask(id))).status, "input_required");
    return { client, start, paused };
  }

  test("a step waiting for outputs is asked by elicitation/create through tasks/result when the client elicits but does not sample; a declined form leaves it waiting, an accepted one completes it", async () => {
    const { client, start, paused } = await asked("user-a", { elicitation: {} });
    const seen = [];
    let reply = { action: "decline" };
    client.setRequestHandler(ElicitRequestSchema, async (req) => (seen.push(req.params), reply));
    try {
      const id = await start("task-approval", { name: "Ada" });
      await paused(id);
      await assert.rejects(client.experimental.tasks.getTaskResult(id, CallToolResultSchema), (e) => e.code === -32600 && /did not accept[\s\S]*decline[\s\S]*still waits/.test(e.message));
      assert.equal((await client.experimental.tasks.getTask(id)).status, "input_required", "declining is not cancelling");
      reply = { action: "accept", content: { status: "signed" } };
      const result = await client.experimental.tasks.getTaskResult(id, CallToolResultSchema);
      assert.match(textOf(result), /completed successfully[\s\S]*ADA:signed/);
      assert.equal(result._meta?.[RELATED]?.taskId, id);
      assert.equal((await client.experimental.tasks.getTask(id)).status, "completed");
      assert.equal(seen.length, 2, "asked once per tasks/result while it waited");
      const q = seen[1];
      assert.equal(q._meta?.[RELATED]?.taskId, id, "the question is tagged with its task");
      assert.deepEqual(q.requestedSchema.required, ["status"]);
      assert.equal(q.requestedSchema.properties.status.type, "string");
      assert.match(q.message, /Approve ADA\?$/);
    } finally {
      await client.close();
    }
  });

  test("a model step is asked by sampling/createMessage through tasks/result, and its JSON answer resumes the run", async () => {
    const { client, start, paused } = await asked("user-a", { sampling: {} });
    const seen = [];
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      seen.push(req.params);
      return { role: "assistant", content: { type: "text", text: '{"status": "sampled"}' }, model: "test-model" };
    });
    try {
      const id = await start("task-approval", { name: "Bea" });
      await paused(id);
      const result = await client.experimental.tasks.getTaskResult(id, CallToolResultSchema);
      assert.match(textOf(result), /completed successfully[\s\S]*BEA:sampled/);
      assert.equal(seen.length, 1);
      assert.equal(seen[0]._meta?.[RELATED]?.taskId, id);
      assert.match(seen[0].systemPrompt, /Its keys: status\.$/);
      assert.equal(seen[0].messages[0].content.text, "Approve BEA?");
      const status = await client.callTool({ name: "get_chain_status", arguments: { execution_id: id } });
      assert.equal(status.structuredContent.status, "completed");
    } finally {
      await client.close();
    }
  });

  test("a client that declared neither sampling nor elicitation gets the actionable error, and the task still waits", async () => {
    const { client, start, paused } = await asked("user-a", {});
    try {
      const id = await start("task-approval", { name: "Cal" });
      await paused(id);
      await assert.rejects(client.experimental.tasks.getTaskResult(id, CallToolResultSchema), (e) => e.code === -32600 && /waits for input: declare the client capability sampling or elicitation[\s\S]*resume_chain/.test(e.message));
      assert.equal((await client.experimental.tasks.getTask(id)).status, "input_required");
      await client.experimental.tasks.cancelTask(id);
    } finally {
      await client.close();
    }
  });

  test("another caller's task id answers tasks/result like an unknown one, and nobody is asked", async () => {
    const owner = await asked("user-a", { elicitation: {} });
    const stranger = await asked("user-b", { elicitation: {} });
    let asks = 0;
    stranger.client.setRequestHandler(ElicitRequestSchema, async () => (asks++, { action: "accept", content: { status: "stolen" } }));
    try {
      const id = await owner.start("task-approval", { name: "Dot" });
      await owner.paused(id);
      const theirs = await stranger.client.experimental.tasks.getTaskResult(id, CallToolResultSchema).catch((e) => e);
      const unknown = await stranger.client.experimental.tasks.getTaskResult(UNKNOWN, CallToolResultSchema).catch((e) => e);
      assert.equal(theirs.code, -32602);
      assert.equal(theirs.message.replace(id, "ID"), unknown.message.replace(UNKNOWN, "ID"));
      assert.equal(asks, 0);
      assert.equal((await owner.client.experimental.tasks.getTask(id)).status, "input_required", "the stranger changed nothing");
      await owner.client.experimental.tasks.cancelTask(id);
    } finally {
      await owner.client.close();
      await stranger.client.close();
    }
  });

  // Two tasks/result calls on one paused task at once (two requests of the session, or a retry
  // while the first still waits): the question goes to the client once, the other call waits for
  // the same outcome, and the run resumes once.
  /** A paused task-approval run of a client that elicits, each question answered with `reply()` once both calls are at the server. */
  async function racing(sub, reply) {
    const { client, start, paused } = await asked(sub, { elicitation: {} });
    const seen = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => (seen.push(req.params), await sleep(1500), reply()));
    const id = await start("task-approval", { name: sub });
    await paused(id);
    const both = () => Promise.allSettled([
      client.experimental.tasks.getTaskResult(id, CallToolResultSchema),
      sleep(200).then(() => client.experimental.tasks.getTaskResult(id, CallToolResultSchema)),
    ]);
    return { client, id, seen, both };
  }

  test("two tasks/result calls at once: the question is asked once, both get the one result, and the run resumed once", async () => {
    const { client, id, seen, both } = await racing("ann", () => ({ action: "accept", content: { status: "signed" } }));
    try {
      const [first, second] = await both();
      assert.equal(seen.length, 1, `asked ${seen.length} times`);
      assert.equal(first.status, "fulfilled", String(first.reason));
      assert.equal(second.status, "fulfilled", String(second.reason));
      assert.match(textOf(first.value), /completed successfully[\s\S]*ANN:signed/);
      assert.equal(textOf(second.value), textOf(first.value), "the waiting call gets the same outcome");
      const status = await client.callTool({ name: "get_chain_status", arguments: { execution_id: id } });
      assert.equal(status.structuredContent.status, "completed");
    } finally {
      await client.close();
    }
  });

  test("two tasks/result calls at once on a declined question: asked once, both say it still waits, and a later tasks/result asks again", async () => {
    let answer = { action: "decline" };
    const { client, id, seen, both } = await racing("bob", () => answer);
    try {
      for (const r of await both()) {
        assert.equal(r.status, "rejected");
        assert.match(r.reason.message, /still waits[\s\S]*call tasks\/result again/);
      }
      assert.equal(seen.length, 1, `asked ${seen.length} times`);
      assert.equal((await client.experimental.tasks.getTask(id)).status, "input_required", "declining is not cancelling");
      answer = { action: "accept", content: { status: "later" } };
      assert.match(textOf(await client.experimental.tasks.getTaskResult(id, CallToolResultSchema)), /BOB:later/);
      assert.equal(seen.length, 2, "the later call asked again");
    } finally {
      await client.close();
    }
  });
});

describe("2026-07-28: execute_chain as a task of the io.modelcontextprotocol/tasks extension", () => {
  let n = 1;
  /** A 2026 request as `sub` (the extension declared unless `declared` is false); the final JSON-RPC message. */
  async function modern(method, params, { sub = "user-a", declared = true } = {}) {
    const caps = declared ? { extensions: { [EXTENSION]: {} } } : {};
    const id = n++;
    const p = { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": caps } };
    const name = p.name ?? p.taskId;
    const res = await post(w.mcpUrl, { jsonrpc: "2.0", id, method, params: p }, { headers: { "mcp-protocol-version": MODERN, "mcp-method": method, "mcp-name": name, ...(sub ? bearer(sub) : {}) } });
    if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      const blocks = (await res.text()).split("\n\n").map((b) => b.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n"));
      return blocks.filter(Boolean).map((d) => JSON.parse(d)).find((m) => m.id === id);
    }
    return res.json();
  }
  const get = (taskId, opts) => modern("tasks/get", { taskId }, opts).then((b) => b.result ?? b.error);
  const start = async (chain_name, variables) => (await modern("tools/call", { name: "execute_chain", arguments: { chain_name, variables } })).result;

  test("the production server/discover advertises the extension", async () => {
    const { result } = await modern("server/discover", {});
    assert.deepEqual(result.capabilities.extensions, { [EXTENSION]: {} });
    assert.equal(result.capabilities.tasks, undefined);
  });

  test("a declaring request gets a CreateTaskResult named by the execution id; tasks/get inlines the result", async () => {
    const created = await start("task-quick", { n: 4 });
    assert.equal(created.resultType, "task", JSON.stringify(created));
    assert.match(created.taskId, /^exec-[0-9a-f]{32}$/);
    assert.ok(Number.isInteger(created.ttlMs) && Number.isInteger(created.pollIntervalMs));
    for (const inlined of ["result", "error", "inputRequests"]) assert.equal(created[inlined], undefined);
    const done = await settle(() => get(created.taskId));
    assert.equal(done.status, "completed");
    assert.equal(done.resultType, "complete");
    assert.match(textOf(done.result), /^Chain execution completed successfully\.[\s\S]*plus_one: 9/);
    const status = await modern("tools/call", { name: "get_chain_status", arguments: { execution_id: created.taskId } });
    assert.equal(status.result.structuredContent.mode, "async");
  });

  test("a paused execution asks its step's question; tasks/update answers it and the run completes", async () => {
    const created = await start("task-approval", { name: "Ada" });
    const asked = await settle(() => get(created.taskId));
    assert.equal(asked.status, "input_required");
    assert.deepEqual(Object.keys(asked.inputRequests), ["step-2"]);
    assert.equal(asked.inputRequests["step-2"].method, "sampling/createMessage");
    const bad = await modern("tasks/update", { taskId: created.taskId, inputResponses: { "step-2": { role: "assistant", content: { type: "text", text: "no JSON here" }, model: "m" } } });
    assert.equal(bad.error.code, -32602);
    const answer = { role: "assistant", content: { type: "text", text: '{"status":"approved"}' }, model: "m" };
    const ack = await modern("tasks/update", { taskId: created.taskId, inputResponses: { "step-2": answer } });
    assert.deepEqual(ack.result, { resultType: "complete" });
    const done = await settle(() => get(created.taskId), (t) => t.status !== "working" && t.status !== "input_required");
    assert.equal(done.status, "completed");
    assert.match(textOf(done.result), /ADA:approved/);
  });

  test("resume_chain as a task: a CreateTaskResult under the execution's id; the run goes on in the background", async () => {
    const paused = await modern("tools/call", { name: "execute_chain", arguments: { chain_name: "task-approval", variables: { name: "Eve" } } }, { declared: false });
    const id = textOf(paused.result).match(/exec-[0-9a-f]{32}/)[0];
    const created = (await modern("tools/call", { name: "resume_chain", arguments: { execution_id: id, outputs: { status: "ok" } } })).result;
    assert.equal(created.resultType, "task", JSON.stringify(created));
    assert.equal(created.taskId, id);
    const done = await settle(() => get(id));
    assert.equal(done.status, "completed");
    assert.match(textOf(done.result), /EVE:ok/);
    const stranger = (await modern("tools/call", { name: "resume_chain", arguments: { execution_id: id, outputs: {} } }, { sub: "user-b" })).result;
    assert.equal(stranger.isError, true, "another caller's execution starts no task");
    assert.equal(stranger.resultType, "complete");
  });

  test("tasks/cancel cancels the execution and is idempotent; cancel_chain sees the same record", async () => {
    const created = await start("task-approval", { name: "Bo" });
    await settle(() => get(created.taskId));
    assert.deepEqual((await modern("tasks/cancel", { taskId: created.taskId })).result, { resultType: "complete" });
    assert.equal((await get(created.taskId)).status, "cancelled");
    assert.deepEqual((await modern("tasks/cancel", { taskId: created.taskId })).result, { resultType: "complete" });
    const status = await modern("tools/call", { name: "get_chain_status", arguments: { execution_id: created.taskId } });
    assert.equal(status.result.structuredContent.status, "cancelled");
  });

  test("an anonymous caller's chain task is bound to its sealed id: it follows its own task, a signed-in caller cannot", async () => {
    const created = (await modern("tools/call", { name: "execute_chain", arguments: { chain_name: "task-quick", variables: { n: 7 } } }, { sub: null })).result;
    assert.equal(created.resultType, "task", JSON.stringify(created));
    const done = await settle(() => get(created.taskId, { sub: null }));
    assert.match(textOf(done.result), /plus_one: 15/);
    const stranger = await get(created.taskId, { sub: "user-a" });
    assert.equal(stranger.code, -32602);
  });

  test("another caller's execution answers like an unknown task; without the extension tasks/get is -32021 and the call is synchronous", async () => {
    const created = await start("task-approval", { name: "Cy" });
    const stranger = await get(created.taskId, { sub: "user-b" });
    const unknown = await get(UNKNOWN, { sub: "user-b" });
    assert.equal(stranger.code, -32602);
    assert.equal(stranger.message.replace(created.taskId, "ID"), unknown.message.replace(UNKNOWN, "ID"));
    const gated = await modern("tasks/get", { taskId: created.taskId }, { declared: false });
    assert.equal(gated.error.code, -32021);
    const plain = await modern("tools/call", { name: "execute_chain", arguments: { chain_name: "task-quick", variables: { n: 1 } } }, { declared: false });
    assert.equal(plain.result.resultType, "complete");
    assert.match(textOf(plain.result), /^Chain execution completed successfully\.[\s\S]*plus_one: 3/);
  });
});
