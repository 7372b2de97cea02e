// Session housekeeping and stream upkeep: alarms prune the event log and end idle sessions,
// keepalive comments on idle streams, and 2025-06-18 streams without the 2025-11-25 priming event.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { initialize, readSse, rpc } from "./support/mcp.js";

let w;
before(async () => {
  w = await startWorker({
    MCP_CATALOG: "conformance",
    HOUSEKEEPING_SECONDS: "1",
    EVENT_LOG_MAX: "4",
    SESSION_IDLE_SECONDS: "3",
    SSE_KEEPALIVE_SECONDS: "1",
  });
});
after(() => w?.stop());

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** The session's tool events (`/sessions/:id/events`), where its event log is seen. */
const dashboard = (session) => new URL(`/sessions/${session}/events`, w.url);
const streamHeaders = (session, last) => ({
  accept: "text/event-stream",
  "mcp-session-id": session,
  ...(last ? { "last-event-id": last } : {}),
});

test("the housekeeping alarm keeps only the newest EVENT_LOG_MAX events", async () => {
  const { session } = await initialize(w.mcpUrl);
  for (let i = 0; i < 4; i++) await rpc(w.mcpUrl, session, "tools/call", { name: "get_mode_indicator", arguments: {} });
  const before = (await readSse(await fetch(dashboard(session), { headers: streamHeaders(session, "g-0") }), { timeoutMs: 1500 })).filter((e) => e.data);
  assert.equal(before.length, 8, "tool_call + tool_result per call, before pruning");
  await sleep(1800);
  const afterPrune = (await readSse(await fetch(dashboard(session), { headers: streamHeaders(session, "g-0") }), { timeoutMs: 1500 })).filter((e) => e.data);
  assert.deepEqual(afterPrune.map((e) => e.id), before.slice(-4).map((e) => e.id));
});

test("an idle session is deleted by its alarm and then answers 404", async () => {
  const { session } = await initialize(w.mcpUrl);
  assert.equal((await rpc(w.mcpUrl, session, "ping")).status, 200);
  await sleep(5000);
  assert.equal((await rpc(w.mcpUrl, session, "ping")).status, 404);
});

test("idle streams carry keepalive comments", async () => {
  const { session } = await initialize(w.mcpUrl);
  const res = await fetch(w.mcpUrl, { headers: streamHeaders(session) });
  const reader = res.body.getReader();
  let text = "";
  const deadline = Date.now() + 4000;
  while (!text.includes(": keepalive") && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  await reader.cancel();
  assert.match(text, /^: keepalive$/m);
});

test("2025-06-18 sessions stream without the priming event", async () => {
  const { session, version } = await initialize(w.mcpUrl, { version: "2025-06-18" });
  assert.equal(version, "2025-06-18");
  const r = await rpc(w.mcpUrl, session, "tools/call", { name: "test_tool_with_progress", arguments: {}, _meta: { progressToken: 1 } }, { version });
  assert.ok(r.events.length >= 4);
  assert.ok(r.events.every((e) => e.data !== "" && e.id), "no empty priming event; ids on all events");
  assert.deepEqual(r.messages.filter((m) => m.params?.progress !== undefined).map((m) => m.params.progress), [0, 50, 100]);
});
