// Session housekeeping and stream upkeep: alarms prune the event log and end idle sessions,
// keepalive comments on idle streams, and 2025-06-18 streams without the 2025-11-25 priming event.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { initialize, rpc, sseEvents } from "./support/mcp.js";

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

// The alarms run on the Durable Object's own schedule, which a loaded machine delays: the tests wait
// for what an alarm does (polling, with a deadline only for a test that would otherwise never end)
// and never assume how soon it runs.
const DEADLINE_MS = 60_000;

test("the housekeeping alarm keeps only the newest EVENT_LOG_MAX events", async () => {
  const { session } = await initialize(w.mcpUrl);
  // The live stream sees every event as it is published, whenever an alarm prunes the log.
  const live = sseEvents(await fetch(dashboard(session), { headers: streamHeaders(session) }), { timeoutMs: DEADLINE_MS });
  for (let i = 0; i < 4; i++) await rpc(w.mcpUrl, session, "tools/call", { name: "get_mode_indicator", arguments: {} });
  const published = [];
  while (published.length < 8) {
    const ev = await live.next();
    assert.ok(ev, `the live stream ended after ${published.length} events`);
    if (ev.data) published.push(ev.id);
  }
  live.close();
  assert.equal(new Set(published).size, 8, "tool_call + tool_result per call, each with its own id");
  // The oldest event a replay from the start gives moves forward as the alarm prunes; it stops at
  // the fifth of the eight (EVENT_LOG_MAX = 4), and the replay is then exactly the newest four.
  // The first `max` events with data of a replay (a 2025-11-25 stream opens with an empty priming event).
  const replay = async (max) => {
    const it = sseEvents(await fetch(dashboard(session), { headers: streamHeaders(session, "g-0") }), { timeoutMs: DEADLINE_MS });
    const ids = [];
    try {
      while (ids.length < max) {
        const ev = await it.next();
        if (!ev) break;
        if (ev.data) ids.push(ev.id);
      }
    } finally {
      it.close();
    }
    return ids;
  };
  const until = Date.now() + DEADLINE_MS;
  let oldest = (await replay(1))[0];
  while (published.indexOf(oldest) < 4 && Date.now() < until) {
    await sleep(200);
    oldest = (await replay(1))[0];
  }
  assert.equal(oldest, published[4], `the oldest event kept, of ${JSON.stringify(published)}`);
  assert.deepEqual(await replay(4), published.slice(-4));
});

test("an idle session is deleted by its alarm and then answers 404", async () => {
  const { session } = await initialize(w.mcpUrl);
  assert.equal((await rpc(w.mcpUrl, session, "ping")).status, 200);
  // Each ping is a use that restarts the idle time (SESSION_IDLE_SECONDS = 3), so the waits between
  // them grow until an alarm has found the session idle, however late the alarms run.
  let status = 200;
  for (let wait = 5000; status === 200 && wait <= 40_000; wait *= 2) {
    await sleep(wait);
    status = (await rpc(w.mcpUrl, session, "ping")).status;
  }
  assert.equal(status, 404);
});

test("idle streams carry keepalive comments", async () => {
  const { session } = await initialize(w.mcpUrl);
  const res = await fetch(w.mcpUrl, { headers: streamHeaders(session) });
  const reader = res.body.getReader();
  let text = "";
  const deadline = Date.now() + DEADLINE_MS;
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
