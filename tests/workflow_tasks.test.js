// FlowMind's execute_workflow as an MCP task (issue 19; docs/decisions.md "Tasks on both eras"),
// against the production catalog: a call as a task starts the workflow's chain run in the
// background and the task id is the execution id (the workflow's session_id), and the ended task's
// result is FlowMind's own answer, the one the synchronous call gives. 2025-11-25 through the
// official TypeScript SDK's client (its experimental tasks API); 2026-07-28 (the
// io.modelcontextprotocol/tasks extension) as JSON-RPC over HTTP, where tasks/update answers the
// paused steps' questions. A client that did not declare tasks keeps the synchronous answer.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { CallToolResultSchema, CreateMessageRequestSchema, CreateTaskResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startWorker } from "./support/worker.js";
import { post } from "./support/mcp.js";
import { settle, tasksClient } from "./support/tasks.js";
import { hs256 } from "../scripts/token.js";

const MODERN = "2026-07-28";
const EXTENSION = "io.modelcontextprotocol/tasks";
const SECRET = "workflow-tasks-secret";
const review = { workflow_uri: "workflow://code-review", initial_variables: { technology: "Rust", code_reference: "PR 7 (src/main.rs)" } };
/** What each of code-review's three steps is answered with. */
const OUTPUTS = [{ change_summary: "adds a cache" }, { review_comments: ["nit: naming"] }, { review_summary: "fine", merge_recommendation: "merge" }];
let w;

const bearer = (sub) => ({ authorization: `Bearer ${hs256({ sub, roles: [], aud: new URL("/mcp", w.url).href, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` });

/** A 2025-11-25 SDK client of its own session, signed in as `sub`, that declares tasks (unless `tasks` is false). */
const legacyClient = (sub, { tasks = true, capabilities } = {}) => tasksClient(w.mcpUrl, bearer(sub), { name: "workflow-tasks-test", tasks, capabilities });


/** A workflow answer without what differs between any two calls (timings and what is drawn from them). */
function comparable(structured) {
  const { _performance, _insights, ...rest } = structured;
  return rest;
}

before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET, RATE_LIMITS: "*=off" }, { quiet: true });
});
after(() => w?.stop());

describe("2025-11-25: execute_workflow as a task, through the official SDK client", () => {
  let client;
  before(async () => {
    client = await legacyClient("wf-user-a");
  });
  after(() => client?.close());

  test("the task is the workflow's run; continued with session_id, its result is the synchronous call's answer", async () => {
    const { task } = await client.request({ method: "tools/call", params: { name: "execute_workflow", arguments: review, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
    assert.match(task.taskId, /^exec-[0-9a-f]{32}$/);
    const id = task.taskId;
    for (const outputs of OUTPUTS) {
      const paused = await settle(() => client.experimental.tasks.getTask(id));
      assert.equal(paused.status, "input_required");
      await assert.rejects(client.experimental.tasks.getTaskResult(id, CallToolResultSchema), (e) => /waits for input[\s\S]*execute_workflow/.test(e.message));
      const step = await client.callTool({ name: "execute_workflow", arguments: { workflow_uri: review.workflow_uri, session_id: id, step_outputs: outputs } });
      assert.equal(step.isError, undefined, JSON.stringify(step));
    }
    const result = await client.experimental.tasks.getTaskResult(id, CallToolResultSchema);
    assert.equal((await client.experimental.tasks.getTask(id)).status, "completed");
    const s = result.structuredContent;
    assert.equal(s.success, true, JSON.stringify(s));
    assert.equal(s.result.status, "completed");
    assert.equal(s.result.session_id, id);
    assert.deepEqual(s.result.outputs, Object.assign({}, ...OUTPUTS));
    assert.deepEqual(s.result.approvals, [], "the start call's own fields are kept with the run");
    assert.equal(typeof s._insights, "object", "the answer is FlowMind's, insights included");
    assert.equal(result.content[0].text, "workflow://code-review: completed (3 steps)");
    const sync = await client.callTool({ name: "execute_workflow", arguments: { workflow_uri: review.workflow_uri, session_id: id } });
    const { approvals, ...started } = comparable(s).result;
    assert.deepEqual({ ...comparable(s), result: started }, comparable(sync.structuredContent));
    const status = await client.callTool({ name: "get_chain_status", arguments: { execution_id: id } });
    assert.equal(status.structuredContent.mode, "async", "the task ran as a background execution");
    assert.equal(status.structuredContent.chain, "wf-code-review");
  });

  /** A client that samples, answering each step's keys from OUTPUTS, and the questions it was asked. */
  async function sampling() {
    const sampler = await legacyClient("wf-user-a", { capabilities: { sampling: {} } });
    const all = Object.assign({}, ...OUTPUTS);
    const asked = [];
    sampler.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      const keys = req.params.systemPrompt.match(/Its keys: (.*)\.$/)[1].split(", ");
      asked.push({ keys, task: req.params._meta?.["io.modelcontextprotocol/related-task"]?.taskId });
      return { role: "assistant", content: { type: "text", text: JSON.stringify(Object.fromEntries(keys.map((k) => [k, all[k]]))) }, model: "test-model" };
    });
    return { sampler, all, asked };
  }

  test("one tasks/result asks each paused step by sampling on its stream, in turn, and answers the workflow's result", async () => {
    const { sampler, all, asked } = await sampling();
    try {
      const { task } = await sampler.request({ method: "tools/call", params: { name: "execute_workflow", arguments: review, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      assert.equal((await settle(() => sampler.experimental.tasks.getTask(task.taskId))).status, "input_required");
      const result = await sampler.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      assert.deepEqual(asked.map((a) => a.keys), OUTPUTS.map(Object.keys), "each step asked once, in order");
      assert.ok(asked.every((a) => a.task === task.taskId));
      assert.equal(result.structuredContent.result.status, "completed", JSON.stringify(result.structuredContent));
      assert.deepEqual(result.structuredContent.result.outputs, all);
      assert.equal(result.content[0].text, "workflow://code-review: completed (3 steps)");
    } finally {
      await sampler.close();
    }
  });

  test("a task keeps the capabilities its session declared: an autonomous run of a sampling client starts, and tasks/result samples it to its result", async () => {
    const { sampler, all, asked } = await sampling();
    try {
      const started = await sampler.request({ method: "tools/call", params: { name: "execute_workflow", arguments: { ...review, execution_mode: "autonomous" }, task: { ttl: 60_000 } } }, CreateTaskResultSchema).catch((e) => e);
      assert.ok(started.task, `not started as a task: ${started.message}`);
      const result = await sampler.experimental.tasks.getTaskResult(started.task.taskId, CallToolResultSchema);
      assert.deepEqual(asked.map((a) => a.keys), OUTPUTS.map(Object.keys), "each step sampled once, in order");
      assert.equal(result.structuredContent.result.status, "completed", JSON.stringify(result.structuredContent));
      assert.deepEqual(result.structuredContent.result.outputs, all);
    } finally {
      await sampler.close();
    }
  });

  test("an approval the call asked for is asked of the user by elicitation, never of the model; the steps by sampling", async () => {
    const client = await legacyClient("wf-user-a", { capabilities: { sampling: {}, elicitation: {} } });
    const all = Object.assign({}, ...OUTPUTS);
    const asked = [];
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      const keys = req.params.systemPrompt.match(/Its keys: (.*)\.$/)[1].split(", ");
      asked.push(`sample ${keys}`);
      return { role: "assistant", content: { type: "text", text: JSON.stringify(Object.fromEntries(keys.map((k) => [k, all[k]]))) }, model: "test-model" };
    });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const keys = req.params.requestedSchema.required;
      asked.push(`elicit ${keys}`);
      return { action: "accept", content: Object.fromEntries(keys.map((k) => [k, "approved"])) };
    });
    try {
      const confirmed = { ...review, confidence_level: 0.7, confidence_override: { require_confirmation_below: 0.9 } };
      const { task } = await client.request({ method: "tools/call", params: { name: "execute_workflow", arguments: confirmed, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      assert.equal((await settle(() => client.experimental.tasks.getTask(task.taskId))).status, "input_required");
      const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      assert.deepEqual(asked, [
        "elicit approval_1", "sample change_summary", "elicit approval_2", "sample review_comments", "elicit approval_3", "sample review_summary,merge_recommendation",
      ]);
      assert.equal(result.structuredContent.result.status, "completed", JSON.stringify(result.structuredContent));
    } finally {
      await client.close();
    }
  });

  test("tasks/cancel cancels the run; a refused start answers its refusal, not a task", async () => {
    const { task } = await client.request({ method: "tools/call", params: { name: "execute_workflow", arguments: review, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
    await settle(() => client.experimental.tasks.getTask(task.taskId));
    assert.equal((await client.experimental.tasks.cancelTask(task.taskId)).status, "cancelled");
    const refused = await client.request({ method: "tools/call", params: { name: "execute_workflow", arguments: { workflow_uri: "workflow://no-such-thing" }, task: { ttl: 60_000 } } }, CallToolResultSchema);
    assert.equal(refused.task, undefined);
    assert.equal(refused.structuredContent.error.code, "WORKFLOW_NOT_FOUND");
  });

  test("a client that did not declare tasks gets the synchronous answer even with params.task", async () => {
    const plain = await legacyClient("wf-user-a", { tasks: false });
    try {
      const r = await plain.request({ method: "tools/call", params: { name: "execute_workflow", arguments: review, task: { ttl: 60_000 } } }, CallToolResultSchema);
      assert.equal(r.task, undefined);
      assert.equal(r.structuredContent.result.status, "awaiting_input", "the call ran to its first pause, as always");
      await plain.callTool({ name: "cancel_chain", arguments: { execution_id: r.structuredContent.result.session_id } });
    } finally {
      await plain.close();
    }
  });
});

describe("2026-07-28: execute_workflow as a task of the io.modelcontextprotocol/tasks extension", () => {
  let n = 1;
  /** A 2026 request as `sub` (the extension declared unless `declared` is false); the final JSON-RPC message. */
  async function modern(method, params, { sub = "wf-user-a", declared = true } = {}) {
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

  test("tasks/update answers each paused step's question; the completed task inlines FlowMind's answer", async () => {
    const created = (await modern("tools/call", { name: "execute_workflow", arguments: review })).result;
    assert.equal(created.resultType, "task", JSON.stringify(created));
    assert.match(created.taskId, /^exec-[0-9a-f]{32}$/);
    for (const outputs of OUTPUTS) {
      const asked = await settle(() => get(created.taskId));
      assert.equal(asked.status, "input_required", JSON.stringify(asked));
      const [key, ...more] = Object.keys(asked.inputRequests);
      assert.deepEqual(more, []);
      assert.equal(asked.inputRequests[key].method, "sampling/createMessage");
      const keys = asked.inputRequests[key].params.systemPrompt.match(/Its keys: (.*)\.$/)[1].split(", ");
      assert.deepEqual(keys, Object.keys(outputs));
      const answer = { role: "assistant", content: { type: "text", text: JSON.stringify(outputs) }, model: "m" };
      assert.deepEqual((await modern("tasks/update", { taskId: created.taskId, inputResponses: { [key]: answer } })).result, { resultType: "complete" });
    }
    const done = await settle(() => get(created.taskId), (t) => t.status !== "working" && t.status !== "input_required");
    assert.equal(done.status, "completed");
    const s = done.result.structuredContent;
    assert.equal(s.success, true, JSON.stringify(s));
    assert.equal(s.result.session_id, created.taskId);
    assert.deepEqual(s.result.outputs, Object.assign({}, ...OUTPUTS));
    assert.equal(done.result.content[0].text, "workflow://code-review: completed (3 steps)");
    const sync = (await modern("tools/call", { name: "execute_workflow", arguments: { workflow_uri: review.workflow_uri, session_id: created.taskId } })).result;
    const { approvals, ...started } = comparable(s).result;
    assert.deepEqual(approvals, []);
    assert.deepEqual({ ...comparable(s), result: started }, comparable(sync.structuredContent));
  });

  test("another caller's run answers like an unknown task; without the extension the call is synchronous", async () => {
    const created = (await modern("tools/call", { name: "execute_workflow", arguments: review })).result;
    const stranger = await get(created.taskId, { sub: "wf-user-b" });
    assert.equal(stranger.code, -32602);
    assert.deepEqual((await modern("tasks/cancel", { taskId: created.taskId })).result, { resultType: "complete" });
    assert.equal((await get(created.taskId)).status, "cancelled");
    const plain = (await modern("tools/call", { name: "execute_workflow", arguments: review }, { declared: false })).result;
    assert.equal(plain.resultType, "complete");
    assert.equal(plain.structuredContent.result.status, "awaiting_input");
    await modern("tools/call", { name: "cancel_chain", arguments: { execution_id: plain.structuredContent.result.session_id } }, { declared: false });
  });
});
