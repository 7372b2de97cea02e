// GET /sessions/:id/events: a dashboard watches an MCP session's tool events (the Mcp-Session-Id
// is the :id), live and replayable with Last-Event-ID, beside the MCP client's own streams; only
// the session's user may watch a session opened with a token.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { LATEST, initialize, post, readSse, sseEvents } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "events-secret";
let w, aud;
before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
  aud = new URL("/mcp", w.url).href;
});
after(() => w?.stop());

const watch = (id, headers = {}) => fetch(new URL(`/sessions/${id}/events`, w.url), { headers: { accept: "text/event-stream", ...headers } });
const call = (session, name, args, headers = {}) =>
  post(w.mcpUrl, { jsonrpc: "2.0", id: Math.floor(Math.random() * 1e9), method: "tools/call", params: { name, arguments: args } }, { session, headers, version: LATEST }).then((r) => r.json());

/** Reads events until `n` tool events arrived; returns them with their ids. */
async function toolEvents(it, n) {
  const out = [];
  while (out.length < n) {
    const ev = await it.next();
    assert.ok(ev, `stream ended after ${JSON.stringify(out)}`);
    if (["tool_call", "tool_result", "error"].includes(ev.event)) out.push({ id: ev.id, event: ev.event, data: JSON.parse(ev.data) });
  }
  return out;
}

test("a dashboard sees the session's tool calls as they happen; the MCP client's own stream does not carry them", async () => {
  const { session } = await initialize(w.mcpUrl);
  const dash = await watch(session);
  assert.equal(dash.status, 200);
  assert.match(dash.headers.get("content-type"), /^text\/event-stream/);
  const mine = await fetch(w.mcpUrl, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": LATEST } });
  assert.equal(mine.status, 200);
  const seen = sseEvents(dash, { timeoutMs: 5000 });
  const client = sseEvents(mine, { timeoutMs: 5000 });
  await call(session, "switch_mode", { mode: "interactive-mode" });
  const events = await toolEvents(seen, 2);
  assert.deepEqual(events.map((e) => [e.event, e.data.tool]), [["tool_call", "switch_mode"], ["tool_result", "switch_mode"]]);
  assert.deepEqual(events[0].data.arguments, { mode: "interactive-mode" });
  assert.equal(events[1].data.cached, false);
  seen.close();
  client.close();
  // The MCP client's own stream carries JSON-RPC messages only (issue 19 item 3): replayed from
  // its start, it has none of the tool events the dashboard got.
  const replay = await fetch(w.mcpUrl, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": LATEST, "last-event-id": "g-0" } });
  assert.deepEqual((await readSse(replay, { timeoutMs: 1000 })).filter((e) => e.data), [], "no tool event on the MCP stream");

  // Resume after the tool_call: the tool_result is replayed, then new events follow live.
  const again = await watch(session, { "last-event-id": events[0].id });
  const resumed = sseEvents(again, { timeoutMs: 5000 });
  const replayed = await toolEvents(resumed, 1);
  assert.equal(replayed[0].event, "tool_result");
  assert.equal(replayed[0].id, events[1].id);
  await call(session, "get_mode_indicator", {});
  assert.deepEqual((await toolEvents(resumed, 2)).map((e) => e.data.tool), ["get_mode_indicator", "get_mode_indicator"]);
  resumed.close();
});

// Seed 003's event fields (issue 21 item 11): `name`/`args` and a "Tool execution error: …"
// message beside the fields existing readers use.
test("tool events carry the seed's fields: tool_call name and args, tool_result result, error 'Tool execution error: …'", async () => {
  const { session } = await initialize(w.mcpUrl);
  const dash = sseEvents(await watch(session), { timeoutMs: 5000 });
  await call(session, "switch_mode", { mode: "interactive-mode" });
  const [started, finished] = await toolEvents(dash, 2);
  assert.equal(started.data.name, "switch_mode");
  assert.deepEqual(started.data.args, { mode: "interactive-mode" });
  assert.equal(typeof finished.data.result, "object");
  await call(session, "get_instruction_set", { name: "no-such-set" });
  const [, failed] = await toolEvents(dash, 2);
  assert.equal(failed.event, "error");
  assert.match(failed.data.message, /^Tool execution error: /);
  assert.equal(failed.data.tool, "get_instruction_set", "the existing fields stay");
  dash.close();
});

test("tools/call takes the seed's tool id with a server name (flights-mcp::search-flights)", async () => {
  const { session } = await initialize(w.mcpUrl);
  const r = await call(session, "flights-mcp::search-flights", { origin: "SFO", destination: "CDG", departure_date: "2025-05-10" });
  assert.ok(r.result, JSON.stringify(r));
  assert.match(r.result.content[0].text, /DUFFEL_API_TOKEN/, "the tool ran (and names the secret this deployment lacks)");
});

test("event data is JSON, so no argument can forge an SSE frame", async () => {
  const { session } = await initialize(w.mcpUrl);
  const dash = sseEvents(await watch(session), { timeoutMs: 5000 });
  await call(session, "get_instruction_set", { name: "x\n\nevent: forged\ndata: {}\n\n" });
  const events = await toolEvents(dash, 2);
  assert.equal(events[0].data.arguments.name, "x\n\nevent: forged\ndata: {}\n\n");
  assert.ok(events.every((e) => e.event !== "forged"));
  dash.close();
});

test("who may watch: the session's user for a token session; unknown ids are 404", async () => {
  const token = (sub) => ({ authorization: `Bearer ${hs256({ sub, roles: [], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` });
  const alice = token("00000000-0000-4000-8000-000000000010");
  const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "t", version: "1" } } }, { headers: alice });
  const session = init.headers.get("mcp-session-id");
  assert.equal((await watch(session, alice)).status, 200);
  assert.equal((await watch(session, token("00000000-0000-4000-8000-000000000011"))).status, 403);
  assert.equal((await watch(session)).status, 403, "without a token");
  assert.equal((await watch(session, { authorization: "Bearer nope" })).status, 401);
  assert.equal((await watch("a".repeat(64))).status, 404);
  assert.equal((await watch("not-a-session")).status, 404);
  const bad = await watch(session, { ...alice, "last-event-id": "r1-1" });
  assert.equal(bad.status, 400, "an id of another stream");
});

test("a replay from any Last-Event-ID gives exactly the later events, where a page of 100 ends inside a batch written together too", async () => {
  const { session } = await initialize(w.mcpUrl);
  // Calls whose chain steps publish their events together: the log keeps them in few rows, many
  // events each, so replay pages (100 events) end inside rows.
  const steps = Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `step${i + 1}`, type: "data_transformation", input_template: `{${i} + 1}`, input_variables: [], output_variables: [`v${i + 1}`] }));
  const created = await call(session, "create_chain", { chain_definition: { name: "many-steps", title: "Many steps", category: "custom", steps }, creation_options: { overwrite_existing: true } });
  assert.equal(created.result.isError, undefined, JSON.stringify(created));
  for (let i = 0; i < 5; i++) {
    const ran = await call(session, "execute_chain", { chain_name: "many-steps", variables: {} });
    assert.match(ran.result.content[0].text, /completed successfully/, JSON.stringify(ran).slice(0, 500));
  }
  const replay = async (last) => (await readSse(await watch(session, { "last-event-id": last }), { timeoutMs: 2000 })).filter((e) => e.event).map((e) => e.id);
  // The live stream is not replayed: wait until the log holds the events (they are written behind the answer).
  let all = [];
  for (let i = 0; i < 50 && all.length < 180; i++) all = await replay("g-0");
  assert.ok(all.length >= 180, `${all.length} events`);
  const seqs = all.map((id) => Number(id.split("-").at(-1)));
  assert.deepEqual(seqs, [...new Set(seqs)].sort((a, b) => a - b), "each once, in order");
  for (const cut of [0, 37, 98, 99, 100, 150, all.length - 2]) {
    assert.deepEqual(await replay(all[cut]), all.slice(cut + 1), `after ${all[cut]}`);
  }
});
