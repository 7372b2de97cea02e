// How chain executions run over time, against the built Worker with real D1 and Durable Objects:
// pausing for input and resuming, background runs driven by the session object, cancellation,
// step events, a model provider for instruction steps, the lease watchdog that resumes an
// interrupted background run after a restart and closes a synchronous run whose call went away,
// and a signed-in user's background runs that go on after their MCP session ended.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root, startWorker } from "./support/worker.js";
import { initialize, post, rpc, sseEvents } from "./support/mcp.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { hs256 } from "../scripts/token.js";

const textOf = (r) => r.content.map((c) => c.text).join("\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const step = (id, name, extra = {}) => ({ id, name, type: "data_transformation", input_variables: [], output_variables: [], ...extra });

/** A chain: shout the name, ask a model whether to approve, combine. */
const approvalChain = (name, decideExtra = {}) => ({
  name, title: "Approval run", category: "custom",
  steps: [
    step(1, "prepare", { input_template: "{name|upper}", output_variables: ["shout"] }),
    step(2, "decide", { type: "instruction_set", instruction_set: "client-communication", input_template: "Approve {shout}?", output_variables: ["status", "note"], ...decideExtra }),
    step(3, "finish", { input_template: "{shout}:{status}", output_variables: ["result"] }),
  ],
  input_schema: { type: "object", properties: { name: { type: "string", required: true } } },
});

/** The tools of one session. */
function client(w, session) {
  const call = async (name, args) => (await rpc(w.mcpUrl, session, "tools/call", { name, arguments: args })).reply.result;
  return {
    call,
    // Public: other sessions of this file run these chains too, and chains have owners.
    create: (def) => call("create_chain", { chain_definition: def, creation_options: { overwrite_existing: true, visibility: "public" } }),
    execute: (chain_name, variables, execution_options = {}) => call("execute_chain", { chain_name, variables, execution_options }),
    status: async (execution_id) => {
      const r = await call("get_chain_status", { execution_id });
      assert.equal(r.isError, undefined, textOf(r));
      return r.structuredContent;
    },
    /** Polls get_chain_status until `pred` holds (or fails after `ms`). */
    async until(execution_id, pred, ms = 15_000) {
      const end = Date.now() + ms;
      for (;;) {
        const s = await this.status(execution_id);
        if (pred(s)) return s;
        if (Date.now() > end) assert.fail(`execution ${execution_id} stayed ${JSON.stringify(s)}`);
        await sleep(100);
      }
    },
  };
}

const idIn = (r) => textOf(r).match(/exec-[0-9a-f]{32}/)[0];

describe("one Worker, no model provider", () => {
  let w, c, session;
  before(async () => {
    w = await startWorker({}, { quiet: true });
    ({ session } = await initialize(w.mcpUrl));
    c = client(w, session);
    for (const def of [approvalChain("approval-run"), {
      name: "quick-run", title: "Quick run", category: "custom",
      steps: [step(1, "one", { input_template: "{n * 2}", output_variables: ["doubled"] }), step(2, "two", { input_template: "{doubled + 1}", output_variables: ["plus_one"] })],
    }]) {
      const r = await c.create(def);
      assert.equal(r.isError, undefined, textOf(r));
    }
  });
  after(() => w?.stop());

  test("a synchronous run pauses at a step without a model and resume_chain continues it", async () => {
    const r = await c.execute("approval-run", { name: "Ada" });
    assert.equal(r.isError, undefined, textOf(r));
    assert.match(textOf(r), /^Chain execution paused: a step needs input\.[\s\S]*Steps Completed: 1\/3[\s\S]*\*\*Step 'decide' waits for:\*\* status, note[\s\S]*Approve ADA\?[\s\S]*resume_chain\(/);
    const id = idIn(r);
    const paused = await c.status(id);
    assert.equal(paused.status, "awaiting_input");
    assert.equal(paused.mode, "sync");
    assert.deepEqual(paused.steps.map((s) => s.state), ["done", "awaiting_input", "pending"]);
    assert.deepEqual(paused.steps[1].awaiting.output_variables, ["status", "note"]);
    assert.equal(paused.steps[1].awaiting.input, "Approve ADA?");
    assert.match(paused.steps[1].awaiting.instructions, /\S/);

    const missing = await c.call("resume_chain", { execution_id: id, outputs: { status: "approved" } });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /^Outputs rejected: outputs\.note is missing/);
    const extra = await c.call("resume_chain", { execution_id: id, outputs: { status: "approved", note: "ok", colour: "red" } });
    assert.match(textOf(extra), /outputs\.colour is not awaited \(awaited: status, note\)/);
    assert.equal((await c.status(id)).status, "awaiting_input", "rejected outputs change nothing");

    const done = await c.call("resume_chain", { execution_id: id, outputs: { status: "approved", note: "fine" } });
    assert.equal(done.isError, undefined, textOf(done));
    assert.match(textOf(done), /^Chain execution completed successfully\.[\s\S]*Steps Completed: 3\/3[\s\S]*- result: ADA:approved/);
    const final = await c.status(id);
    assert.equal(final.status, "completed");
    assert.equal(final.steps[1].reason, "outputs supplied by the client");
    assert.ok(final.finished_at);
    const again = await c.call("resume_chain", { execution_id: id, outputs: { status: "x", note: "y" } });
    assert.match(textOf(again), /is completed, not awaiting_input/);
  });

  test("a background run answers at once, sends step events on the session's event stream, and completes", async () => {
    const stream = await fetch(new URL(`/sessions/${session}/events`, w.url), { headers: { accept: "text/event-stream" } });
    assert.equal(stream.status, 200);
    const events = sseEvents(stream, { timeoutMs: 10_000 });
    const r = await c.execute("quick-run", { n: 20 }, { async_execution: true });
    assert.match(textOf(r), /^Chain execution started asynchronously\.[\s\S]*Total Steps: 2/);
    const id = idIn(r);
    const seen = [];
    const steps = [];
    while (steps.filter((e) => e.event === "tool_result").length < 2) {
      const ev = await events.next();
      assert.ok(ev, `stream ended after ${JSON.stringify(steps)}`);
      if (ev.event !== "tool_call" && ev.event !== "tool_result") continue;
      const data = JSON.parse(ev.data);
      if (data.execution_id === id) steps.push({ event: ev.event, ...data });
    }
    events.close();
    assert.deepEqual(steps.map((e) => [e.event, e.tool]), [
      ["tool_call", "quick-run/one"], ["tool_result", "quick-run/one"], ["tool_call", "quick-run/two"], ["tool_result", "quick-run/two"],
    ]);
    assert.deepEqual(steps[3].result, { plus_one: 41 });
    const s = await c.until(id, (s) => s.status === "completed");
    assert.equal(s.mode, "async");
    assert.deepEqual(s.steps.map((x) => x.outputs), [{ doubled: 40 }, { plus_one: 41 }]);
  });

  test("a background run pauses for input and resumes in the background", async () => {
    const id = idIn(await c.execute("approval-run", { name: "Bo" }, { async_execution: true }));
    const paused = await c.until(id, (s) => s.status === "awaiting_input");
    assert.equal(paused.steps[1].awaiting.input, "Approve BO?");
    const r = await c.call("resume_chain", { execution_id: id, outputs: { status: "declined", note: "budget" } });
    assert.match(textOf(r), /^Chain execution resumed in the background\./);
    const done = await c.until(id, (s) => s.status === "completed");
    assert.deepEqual(done.steps[2].outputs, { result: "BO:declined" });
  });

  test("cancel_chain closes a paused execution; ended and foreign executions are refused", async () => {
    const id = idIn(await c.execute("approval-run", { name: "Cy" }));
    const cancelled = await c.call("cancel_chain", { execution_id: id, reason: "plans changed" });
    assert.equal(cancelled.isError, undefined, textOf(cancelled));
    const s = cancelled.structuredContent;
    assert.equal(s.status, "cancelled");
    assert.equal(s.error, "cancelled: plans changed");
    assert.deepEqual(s.steps.map((x) => x.state), ["done", "not_run", "not_run"]);
    assert.equal(s.steps[1].awaiting, undefined);
    const twice = await c.call("cancel_chain", { execution_id: id });
    assert.match(textOf(twice), /has already ended \(cancelled\); there is nothing to cancel/);
    const resumed = await c.call("resume_chain", { execution_id: id, outputs: { status: "a", note: "b" } });
    assert.match(textOf(resumed), /is cancelled, not awaiting_input/);

    const other = client(w, (await initialize(w.mcpUrl)).session);
    for (const tool of ["get_chain_status", "cancel_chain"]) {
      const r = await other.call(tool, { execution_id: id });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /not found in this session/);
    }
    const bad = await c.call("cancel_chain", { execution_id: "exec-123" });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /execution_id/);
  });

  test("the worked example of docs/chains.md: a record written, a pause resumed, a cancel rolled back", async () => {
    const doc = readFileSync(join(root, "docs", "chains.md"), "utf8");
    const example = JSON.parse(doc.slice(doc.indexOf("## A worked example")).match(/```json\n([\s\S]*?)\n```/)[1]);
    const created = await c.call("create_chain", { ...example, creation_options: { overwrite_existing: true } });
    assert.equal(created.isError, undefined, textOf(created));
    const db = await w.mf.getD1Database("DB");
    const record = (id) => db.prepare("SELECT data FROM collection_records WHERE collection = 'leads' AND id = ?1").bind(id).first();

    const paused = await c.execute("lead-reply", { name: "Ana", message: "Lisbon in May?" });
    assert.match(textOf(paused), /^Chain execution paused: a step needs input\.[\s\S]*Reply to Ana, who wrote: Lisbon in May\?/);
    const id = idIn(paused);
    const leadId = (await c.status(id)).steps[0].outputs.lead.id;
    assert.match(leadId, /^rec-[0-9a-f]{32}$/);
    assert.deepEqual(JSON.parse((await record(leadId)).data), { name: "Ana", message: "Lisbon in May?", status: "new" });
    const done = await c.call("resume_chain", { execution_id: id, outputs: { reply: "Hi Ana, May is lovely." } });
    assert.match(textOf(done), /^Chain execution completed successfully\.[\s\S]*Steps Completed: 3\/3/);
    assert.deepEqual(JSON.parse((await record(leadId)).data), { name: "Ana", message: "Lisbon in May?", status: "answered", reply: "Hi Ana, May is lovely." });
    const journal = await db.prepare("SELECT COUNT(*) AS n FROM record_changes WHERE execution_id = ?1").bind(id).first();
    assert.equal(journal.n, 0, "an execution that ended keeps no journal");

    const second = idIn(await c.execute("lead-reply", { name: "Ben", message: "Oslo?" }));
    const secondLead = (await c.status(second)).steps[0].outputs.lead.id;
    assert.ok(await record(secondLead));
    const cancelled = (await c.call("cancel_chain", { execution_id: second })).structuredContent;
    assert.equal(cancelled.status, "cancelled");
    assert.deepEqual(cancelled.rollbacks, [{ id: 1, outcome: "rolled_back", error: null }]);
    assert.equal(await record(secondLead), null, "the paused run's record was rolled back");
  });

  test("every seeded chain runs in the background, its instruction steps paused and resumed", async () => {
    const runs = {
      "corporate-booking-workflow": { company_name: "Acme", traveler_name: "Dana Lee", cost_center: "CC-7", trip_requirements: { city: "Berlin" }, budget_approval: 3000 },
      "mobile-lead-processing": { raw_lead_message: "The Johnsons want Santorini for their 10th anniversary, $9,000 for 2, late September.", source_channel: "whatsapp" },
      "client-followup-sequence": { client_id: "CL-1", days_since_proposal: 5, last_interaction_type: "email_opened" },
    };
    const value = (k) => (k === "validation_status" ? "approved" : k === "approval_required" ? false : `${k} value`);
    for (const [chain, variables] of Object.entries(runs)) {
      const started = await c.execute(chain, variables, { async_execution: true });
      assert.match(textOf(started), /started asynchronously/, chain);
      const id = idIn(started);
      let resumes = 0;
      for (;;) {
        const s = await c.until(id, (s) => s.status !== "running");
        if (s.status !== "awaiting_input") {
          assert.equal(s.status, "completed", `${chain}: ${JSON.stringify(s)}`);
          break;
        }
        const awaited = s.steps.filter((x) => x.state === "awaiting_input").flatMap((x) => x.awaiting.output_variables);
        const r = await c.call("resume_chain", { execution_id: id, outputs: Object.fromEntries(awaited.map((k) => [k, value(k)])) });
        assert.match(textOf(r), /resumed in the background/, chain);
        resumes++;
      }
      assert.ok(resumes >= 2, `${chain}: ${resumes} pauses`);
    }
  });

  test("ending an anonymous session cancels its open executions", async () => {
    const { session: s2 } = await initialize(w.mcpUrl);
    const c2 = client(w, s2);
    const id = idIn(await c2.execute("approval-run", { name: "Di" }));
    const del = await fetch(w.mcpUrl, { method: "DELETE", headers: { "mcp-session-id": s2, "mcp-protocol-version": "2025-11-25" } });
    assert.equal(del.status, 204);
    const row = await (await w.mf.getD1Database("DB")).prepare("SELECT status, json_extract(report, '$.error') AS error FROM chain_executions WHERE id = ?1").bind(id).first();
    assert.deepEqual(row, { status: "cancelled", error: "the session ended" });
  });
});

/**
 * A stand-in for an OpenAI-compatible model provider: answers, fails or hangs as told; in mode
 * "held" it answers only when `p.release()` is called.
 */
function modelProvider() {
  const p = { requests: [], held: [], mode: "answer", answer: { status: "approved", note: "by the model" } };
  p.release = () => p.held.splice(0).forEach((reply) => reply());
  p.server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      p.requests.push({ auth: req.headers.authorization, body: JSON.parse(body) });
      const mode = typeof p.mode === "function" ? p.mode(p.requests.length) : p.mode;
      if (mode === "hang") return;
      if (mode === "unavailable") {
        res.writeHead(503).end("busy");
        return;
      }
      const reply = () => res.writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ choices: [{ message: { role: "assistant", content: JSON.stringify(p.answer) } }] }));
      if (mode === "slow") setTimeout(reply, 1500);
      else if (mode === "held") p.held.push(reply);
      else reply();
    });
  });
  return new Promise((resolve) => p.server.listen(0, "127.0.0.1", () => {
    p.url = `http://127.0.0.1:${p.server.address().port}/v1/chat/completions`;
    resolve(p);
  }));
}

describe("with a model provider and a short job lease", () => {
  let provider, dir, w, session, c;
  const vars = () => ({ MODEL_PROVIDER_URL: provider.url, MODEL_PROVIDER_KEY: "test-key", MODEL_PROVIDER_MODEL: "small", JOB_LEASE_SECONDS: "1" });
  before(async () => {
    provider = await modelProvider();
    dir = mkdtempSync(join(tmpdir(), "mcp-edge-runs-"));
    w = await startWorker(vars(), { quiet: true, persist: dir });
    ({ session } = await initialize(w.mcpUrl));
    c = client(w, session);
    const r = await c.create(approvalChain("model-run", { retry_config: { max_retries: 2, backoff_ms: 100, retry_on_errors: ["model_unavailable"] } }));
    assert.equal(r.isError, undefined, textOf(r));
  });
  after(async () => {
    await w?.stop();
    provider?.server.closeAllConnections();
    provider?.server.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("instruction steps ask the provider; its outages are retried", async () => {
    provider.requests.length = 0;
    provider.mode = (n) => (n === 1 ? "unavailable" : "answer");
    const r = await c.execute("model-run", { name: "Eve" });
    assert.equal(r.isError, undefined, textOf(r));
    assert.match(textOf(r), /- result: EVE:approved/);
    assert.equal(provider.requests.length, 2, "one 503, then the answer");
    const { auth, body } = provider.requests[1];
    assert.equal(auth, "Bearer test-key");
    assert.equal(body.model, "small");
    assert.equal(body.messages[0].role, "system");
    assert.match(body.messages[0].content, /Answer with one JSON object and nothing else\. Its keys: status, note\./);
    assert.deepEqual(body.messages[1], { role: "user", content: "Approve EVE?" });
    const s = await c.status(idIn(r));
    assert.equal(s.steps[1].attempts, 2);
  });

  test("cancel_chain stops a background run after the step under way", async () => {
    provider.requests.length = 0;
    provider.mode = "slow";
    const id = idIn(await c.execute("model-run", { name: "Fay" }, { async_execution: true }));
    while (provider.requests.length === 0) await sleep(50);
    const r = await c.call("cancel_chain", { execution_id: id, reason: "no longer needed" });
    assert.equal(r.isError, undefined, textOf(r));
    const s = r.structuredContent;
    assert.equal(s.status, "cancelled", JSON.stringify(s));
    assert.deepEqual(s.steps.map((x) => x.state), ["done", "done", "not_run"]);
    assert.equal(s.error, "cancelled: no longer needed");
  });

  test("a synchronous run whose call is cancelled is closed by the watchdog", async () => {
    provider.requests.length = 0;
    provider.mode = "hang";
    const db = await w.mf.getD1Database("DB");
    const call = post(w.mcpUrl, { jsonrpc: "2.0", id: "sync-1", method: "tools/call", params: { name: "execute_chain", arguments: { chain_name: "model-run", variables: { name: "Gus" } } } }, { session });
    while (provider.requests.length === 0) await sleep(50);
    const { id } = await db.prepare("SELECT id FROM chain_executions WHERE owner = ?1 AND status = 'running'").bind(session).first();
    const cancel = await post(w.mcpUrl, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "sync-1" } }, { session });
    assert.equal(cancel.status, 202);
    await call.catch(() => {});
    const s = await c.until(id, (s) => s.status !== "running", 20_000);
    assert.equal(s.status, "failed");
    assert.match(s.error, /^interrupted: the call running it ended first/);
    assert.deepEqual(s.steps.map((x) => x.state), ["done", "not_run", "not_run"]);
  });

  test("a background run interrupted by a restart continues from its checkpoint", async () => {
    provider.requests.length = 0;
    provider.mode = "hang";
    const id = idIn(await c.execute("model-run", { name: "Hal" }, { async_execution: true }));
    while (provider.requests.length === 0) await sleep(50);
    assert.equal((await c.status(id)).steps[0].state, "done", "the first batch is checkpointed");
    await w.stop();
    provider.server.closeAllConnections();
    provider.mode = "answer";
    w = await startWorker(vars(), { quiet: true, persist: dir });
    c = client(w, session);
    const s = await c.until(id, (s) => s.status === "completed", 30_000);
    assert.equal(s.runs, 2, "resumed once");
    assert.equal(s.steps[0].attempts, 1, "the checkpointed step did not run again");
    assert.deepEqual(s.steps[2].outputs, { result: "HAL:approved" });
  });
});

describe("a background run outlives its MCP session (official SDK client)", () => {
  const SECRET = "chain-runs-secret";
  let provider, w;
  before(async () => {
    provider = await modelProvider();
    w = await startWorker({ JWT_SECRET: SECRET, ANONYMOUS_ACCESS: "true", MODEL_PROVIDER_URL: provider.url, MODEL_PROVIDER_KEY: "test-key", MODEL_PROVIDER_MODEL: "small" }, { quiet: true });
  });
  after(async () => {
    await w?.stop();
    provider?.server.closeAllConnections();
    provider?.server.close();
  });

  /** An SDK client in a session of its own, signed in as `sub` (anonymous without). */
  async function connect(sub) {
    const headers = sub ? { authorization: `Bearer ${hs256({ sub, roles: [], aud: w.mcpUrl, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` } : {};
    const transport = new StreamableHTTPClientTransport(new URL(w.mcpUrl), { requestInit: { headers } });
    const sdk = new Client({ name: "chain-runs-test", version: "1.0.0" });
    await sdk.connect(transport);
    const call = (name, args) => sdk.callTool({ name, arguments: args });
    return {
      sdk, transport, headers, call,
      start: async (chain_name, variables) => idIn(await call("execute_chain", { chain_name, variables, execution_options: { async_execution: true } })),
      status: async (execution_id) => {
        const r = await call("get_chain_status", { execution_id });
        assert.equal(r.isError, undefined, textOf(r));
        return r.structuredContent;
      },
    };
  }

  /** Polls `c`'s get_chain_status until the execution is no longer running. */
  async function settled(c, id) {
    for (let i = 0; i < 150; i++) {
      const s = await c.status(id);
      if (s.status !== "running") return s;
      await sleep(100);
    }
    assert.fail(`execution ${id} stayed running`);
  }

  const row = async (id) => (await w.mf.getD1Database("DB"))
    .prepare("SELECT status, stop_request, json_extract(report, '$.error') AS error FROM chain_executions WHERE id = ?1").bind(id).first();

  test("ending a signed-in user's session lets their background run finish; another session reads its result and cancels a second run while it runs", async () => {
    const old = await connect("rina");
    assert.equal((await old.call("create_chain", { chain_definition: approvalChain("outlives-session"), creation_options: { overwrite_existing: true, visibility: "public" } })).isError, undefined);
    provider.requests.length = 0;
    provider.mode = "held";
    const finishing = await old.start("outlives-session", { name: "Ivo" });
    const stopping = await old.start("outlives-session", { name: "Jo" });
    while (provider.requests.length < 2) await sleep(50);
    const { sessionId: session, protocolVersion: version } = old.transport;
    await old.transport.terminateSession();
    await old.sdk.close();
    const gone = await post(w.mcpUrl, { jsonrpc: "2.0", id: 9, method: "tools/list" }, { session, version, headers: old.headers });
    assert.equal(gone.status, 404, "the ended session answers no request");

    const later = await connect("rina");
    for (const id of [finishing, stopping]) {
      const s = await later.status(id);
      assert.equal(s.status, "running", JSON.stringify(s));
      assert.equal(s.note, undefined, "still under way, not left for resume_chain");
    }
    const cancelling = later.call("cancel_chain", { execution_id: stopping, reason: "changed plans" });
    while (!(await row(stopping)).stop_request) await sleep(50);
    provider.mode = "answer";
    provider.release();
    const cancelled = await cancelling;
    assert.equal(cancelled.isError, undefined, textOf(cancelled));
    assert.equal(cancelled.structuredContent.status, "cancelled", JSON.stringify(cancelled.structuredContent));
    assert.equal(cancelled.structuredContent.error, "cancelled: changed plans");
    assert.deepEqual(cancelled.structuredContent.steps.map((x) => x.state), ["done", "done", "not_run"], "the step under way finished; the next did not start");

    const done = await settled(later, finishing);
    assert.equal(done.status, "completed", JSON.stringify(done));
    assert.deepEqual(done.steps.map((x) => x.outputs), [{ shout: "IVO" }, { status: "approved", note: "by the model" }, { result: "IVO:approved" }]);
    const listed = (await later.call("list_chain_executions", { chain_name: "outlives-session" })).structuredContent.executions;
    assert.deepEqual(Object.fromEntries(listed.map((e) => [e.execution_id, [e.status, e.this_session]])), { [finishing]: ["completed", false], [stopping]: ["cancelled", false] });
    await later.sdk.close();
  });

  test("ending an anonymous caller's session still cancels its background run", async () => {
    const anon = await connect();
    assert.equal((await anon.call("create_chain", { chain_definition: approvalChain("anonymous-run"), creation_options: { overwrite_existing: true } })).isError, undefined);
    provider.requests.length = 0;
    provider.mode = "held";
    const id = await anon.start("anonymous-run", { name: "Kai" });
    while (provider.requests.length < 1) await sleep(50);
    await anon.transport.terminateSession();
    await anon.sdk.close();
    assert.deepEqual(await row(id), { status: "cancelled", stop_request: null, error: "the session ended" });
    provider.mode = "answer";
    provider.release();
  });
});

describe("2026-07-28 run objects that end idle (SESSION_IDLE_SECONDS)", () => {
  const SECRET = "run-objects-secret";
  const MODERN = "2026-07-28";
  const TASKS = "io.modelcontextprotocol/tasks";
  let w, db;
  before(async () => {
    w = await startWorker({ JWT_SECRET: SECRET, SESSION_IDLE_SECONDS: "3", HOUSEKEEPING_SECONDS: "1" }, { quiet: true });
    db = await w.mf.getD1Database("DB");
    const created = await modern("tools/call", { name: "create_chain", arguments: { chain_definition: approvalChain("idle-run"), creation_options: { overwrite_existing: true, visibility: "public" } } });
    assert.equal(created.result.isError, undefined, JSON.stringify(created));
  });
  after(() => w?.stop());

  let n = 1;
  /** A 2026-07-28 request as `sub` (anonymous when null), declaring `capabilities`; the final JSON-RPC message. */
  async function modern(method, params, { sub = "rio", capabilities = {} } = {}) {
    const id = n++;
    const p = { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": capabilities } };
    const auth = sub ? { authorization: `Bearer ${hs256({ sub, roles: [], aud: w.mcpUrl, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` } : {};
    const res = await post(w.mcpUrl, { jsonrpc: "2.0", id, method, params: p }, { headers: { "mcp-protocol-version": MODERN, "mcp-method": method, "mcp-name": p.name ?? p.taskId, ...auth } });
    if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      const blocks = (await res.text()).split("\n\n").map((b) => b.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n"));
      return blocks.filter(Boolean).map((d) => JSON.parse(d)).find((m) => m.id === id);
    }
    return res.json();
  }
  const tool = async (name, args, opts) => (await modern("tools/call", { name, arguments: args }, opts)).result;
  const paused = async (name, opts) => {
    const r = await tool("execute_chain", { chain_name: "idle-run", variables: { name } }, opts);
    assert.match(textOf(r), /awaiting_input/, JSON.stringify(r));
    return idIn(r);
  };
  const record = (id) => db.prepare("SELECT status, owner, json_extract(report, '$.error') AS error FROM chain_executions WHERE id = ?1").bind(id).first();
  const runObjectOf = async (id) => (await db.prepare("SELECT r.session FROM chain_executions e JOIN run_objects r ON r.session = e.owner WHERE e.id = ?1").bind(id).first())?.session;
  /** Polls D1 (which reaches no object, so the objects stay idle) until `pred(record)` holds for every id. */
  async function untilRecords(ids, pred) {
    const end = Date.now() + 60_000;
    for (;;) {
      const rows = await Promise.all(ids.map(record));
      if (rows.every(pred)) return rows;
      if (Date.now() > end) assert.fail(`records stayed ${JSON.stringify(rows)}`);
      await sleep(250);
    }
  }

  test("a signed-in caller's paused runs outlive their idle run objects: their execution ids still read, resume (in the run's own object), answer as tasks and cancel them", async () => {
    const [resumed, cancelled] = [await paused("Ada"), await paused("Bo")];
    const task = await tool("execute_chain", { chain_name: "idle-run", variables: { name: "Cy" } }, { capabilities: { extensions: { [TASKS]: {} } } });
    assert.equal(task.resultType, "task", JSON.stringify(task));
    const ids = [resumed, cancelled, task.taskId];
    await untilRecords([task.taskId], (r) => r.status === "awaiting_input");
    const objects = await Promise.all(ids.map(runObjectOf));
    assert.ok(objects.every(Boolean) && new Set(objects).size === 3, "three runs, three run objects");

    // Nothing reaches the objects now: each ends idle and hands its paused run over.
    const ended = await untilRecords(ids, (r) => r.owner.startsWith("ended:"));
    assert.deepEqual(ended.map((r) => [r.status, r.owner]), objects.map((o) => ["awaiting_input", `ended:${o}`]));

    const status = await tool("get_chain_status", { execution_id: resumed });
    assert.equal(status.structuredContent?.status, "awaiting_input", JSON.stringify(status));
    const stranger = await tool("get_chain_status", { execution_id: resumed }, { sub: "someone-else" });
    assert.equal(stranger.isError, true, "another caller still cannot see it");

    const done = await tool("resume_chain", { execution_id: resumed, outputs: { status: "approved", note: "late" } });
    assert.match(textOf(done), /completed successfully[\s\S]*ADA:approved/, JSON.stringify(done));
    assert.equal((await record(resumed)).owner, objects[0], "the run went on in its own object, not in the caller's mode object");

    const asked = await modern("tasks/get", { taskId: task.taskId }, { capabilities: { extensions: { [TASKS]: {} } } });
    assert.equal(asked.result?.status, "input_required", JSON.stringify(asked));
    const answer = { role: "assistant", content: { type: "text", text: '{"status":"approved","note":"as a task"}' }, model: "m" };
    const ack = await modern("tasks/update", { taskId: task.taskId, inputResponses: { "step-2": answer } }, { capabilities: { extensions: { [TASKS]: {} } } });
    assert.deepEqual(ack.result, { resultType: "complete" }, JSON.stringify(ack));
    assert.deepEqual(await untilRecords([task.taskId], (r) => r.status !== "running" && r.status !== "awaiting_input").then((r) => r.map((x) => [x.status, x.owner])), [["completed", objects[2]]]);

    const stop = await tool("cancel_chain", { execution_id: cancelled, reason: "not needed" });
    assert.equal(stop.structuredContent?.status, "cancelled", JSON.stringify(stop));
  });

  test("a handed-over run's run object is not pruned as unused: its id still finds it a day later", async () => {
    const id = await paused("Di");
    const object = await runObjectOf(id);
    await untilRecords([id], (r) => r.owner === `ended:${object}`);
    await db.prepare("UPDATE run_objects SET created_ms = created_ms - 2 * 86400000 WHERE session = ?1").bind(object).run();
    await paused("Ed"); // a new run object prunes the unused ones
    assert.ok(await db.prepare("SELECT 1 FROM run_objects WHERE session = ?1").bind(object).first(), "the object of a handed-over run is kept");
    const stop = await tool("cancel_chain", { execution_id: id });
    assert.equal(stop.structuredContent?.status, "cancelled", JSON.stringify(stop));
  });

  test("an anonymous caller's paused run is cancelled when its run object ends idle", async () => {
    const id = await paused("Fay", { sub: null });
    const [row] = await untilRecords([id], (r) => r.status !== "awaiting_input");
    assert.deepEqual([row.status, row.error], ["cancelled", "the session ended"]);
  });
});
