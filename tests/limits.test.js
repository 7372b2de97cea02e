// Per-caller, per-tool rate limits (RATE_LIMITS) against the built Worker: token buckets in the
// RateLimiter Durable Object, keyed by user (shared by all of a user's sessions) or, for anonymous
// callers, by session; refusals are tool errors with retry guidance, an `error` event and a
// `rate_limited` log line; limits survive a restart; a bad setting stops the server.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startWorker } from "./support/worker.js";
import { LATEST, initialize, post, sseEvents } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "limits-secret";
const LIMITS = "*=50/1h, get_mode_indicator=3/1h, switch_mode=2/1h, list_instruction_sets=off";
const REFUSED = /^Rate limit reached for tool get_mode_indicator: 3 calls per 3600 s per caller\. Try again in (\d+) s\.$/;
let w, aud;
const logs = [];
before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET, RATE_LIMITS: LIMITS }, { logs });
  aud = new URL("/mcp", w.url).href;
});
after(() => w?.stop());

/** Bearer headers of user `sub` for the Worker at `mcpUrl` (its URL is the token's audience). */
const headersOf = (sub, mcpUrl = aud) => (sub ? { authorization: `Bearer ${hs256({ sub, roles: [], aud: mcpUrl, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` } : {});

/** A session as user `sub` (anonymous without); `call` returns the CallToolResult. */
async function session(sub, mcpUrl = w.mcpUrl) {
  const headers = headersOf(sub, mcpUrl);
  const init = await post(mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "limits", version: "1" } } }, { headers });
  assert.equal(init.status, 200, await init.clone().text());
  const id = init.headers.get("mcp-session-id");
  let n = 1;
  return {
    id,
    call: async (name, args = {}) => {
      const r = await (await post(mcpUrl, { jsonrpc: "2.0", id: n++, method: "tools/call", params: { name, arguments: args } }, { session: id, headers, version: LATEST })).json();
      assert.ok(r.result, JSON.stringify(r));
      return r.result;
    },
  };
}

const ok = (r) => assert.equal(r.isError, undefined, JSON.stringify(r));
/** Asserts a refusal of get_mode_indicator and returns its retry-after seconds. */
function refused(r) {
  assert.equal(r.isError, true, JSON.stringify(r));
  const m = r.content[0].text.match(REFUSED);
  assert.ok(m, r.content[0].text);
  const secs = Number(m[1]);
  assert.ok(secs >= 1 && secs <= 1200, `retry after ${secs} s: the next of 3 tokens an hour is at most 20 minutes away`);
  return secs;
}

test("the call after the limit is refused with retry guidance, an error event and a rate_limited log line; other tools still work", async () => {
  const alice = await session("00000000-0000-4000-8000-0000000000a1");
  const dash = sseEvents(await fetch(new URL(`/sessions/${alice.id}/events`, w.url), { headers: { accept: "text/event-stream", ...headersOf("00000000-0000-4000-8000-0000000000a1") } }), { timeoutMs: 5000 });
  for (let i = 0; i < 3; i++) ok(await alice.call("get_mode_indicator"));
  const before = logs.length;
  refused(await alice.call("get_mode_indicator"));
  ok(await alice.call("get_instruction_set", { name: "vendor-search" }));

  const events = [];
  while (events.length < 9) {
    const ev = await dash.next();
    assert.ok(ev, `stream ended after ${JSON.stringify(events)}`);
    if (ev.event) events.push({ event: ev.event, data: JSON.parse(ev.data) });
  }
  dash.close();
  assert.deepEqual(events.slice(6, 8).map((e) => [e.event, e.data.tool]), [["tool_call", "get_mode_indicator"], ["error", "get_mode_indicator"]]);
  assert.match(events[7].data.error, REFUSED);

  // workerd's stdout reaches the test on its own pipe, possibly after the replies.
  const toolLines = () => logs.slice(before).filter((l) => l.includes('"outcome"')).map((l) => JSON.parse(l.slice(l.indexOf("{"))));
  for (let i = 0; i < 250 && toolLines().length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  const lines = toolLines();
  assert.deepEqual(lines.map((l) => [l.tool, l.outcome]), [["instructions::get-mode-indicator", "rate_limited"], ["instructions::get-instruction-set", "ok"]]);
});

test("a user's buckets are shared by all their sessions; another user has their own", async () => {
  const bob = "00000000-0000-4000-8000-0000000000b2";
  const first = await session(bob);
  for (let i = 0; i < 3; i++) ok(await first.call("get_mode_indicator"));
  const second = await session(bob);
  refused(await second.call("get_mode_indicator"));
  const carol = await session("00000000-0000-4000-8000-0000000000c3");
  ok(await carol.call("get_mode_indicator"));
});

test("anonymous callers are limited per session", async () => {
  const one = await session(null);
  for (let i = 0; i < 3; i++) ok(await one.call("get_mode_indicator"));
  refused(await one.call("get_mode_indicator"));
  const two = await session(null);
  ok(await two.call("get_mode_indicator"));
});

test("malformed calls cost no token; an unlimited tool is never refused", async () => {
  const s = await session(null);
  for (let i = 0; i < 3; i++) {
    const bad = await s.call("switch_mode", { mode: "desktop-mode" });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /^Invalid arguments for tool switch_mode/);
  }
  ok(await s.call("switch_mode", { mode: "mobile-mode" }));
  ok(await s.call("switch_mode", { mode: "interactive-mode" }));
  assert.match((await s.call("switch_mode", { mode: "mobile-mode" })).content[0].text, /^Rate limit reached for tool switch_mode: 2 calls per 3600 s/);
  for (let i = 0; i < 60; i++) ok(await s.call("list_instruction_sets", { category: "compliance" }));
});

test("buckets are kept in the object's storage: a restarted server still refuses", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mcp-edge-limits-"));
  try {
    const user = "00000000-0000-4000-8000-0000000000d4";
    const first = await startWorker({ JWT_SECRET: SECRET, RATE_LIMITS: LIMITS }, { quiet: true, persist: dir });
    const s = await session(user, first.mcpUrl);
    for (let i = 0; i < 3; i++) ok(await s.call("get_mode_indicator"));
    await first.stop();
    const second = await startWorker({ JWT_SECRET: SECRET, RATE_LIMITS: LIMITS }, { quiet: true, persist: dir });
    try {
      refused(await (await session(user, second.mcpUrl)).call("get_mode_indicator"));
    } finally {
      await second.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("an invalid RATE_LIMITS stops the server with an error naming the entry", async () => {
  for (const [value, expected] of [
    ["*=10/1m, get_mode_indicator=lots", /RATE_LIMITS entry "get_mode_indicator=lots": there is no \/ between the count and the period; expected <tool>=<count>\/<period>/],
    ["get_mode_indicatr=5/1m", /RATE_LIMITS names tools this deployment does not have: get_mode_indicatr/],
  ]) {
    const bad = await startWorker({ RATE_LIMITS: value }, { quiet: true });
    try {
      const r = await post(bad.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "limits", version: "1" } } });
      assert.equal(r.status, 500);
      const body = await r.json();
      assert.match(body.error.message, /^Server misconfigured: /);
      assert.match(body.error.message, expected);
    } finally {
      await bad.stop();
    }
  }
});

test("the default limit (120 calls a minute) leaves room for ordinary use", async () => {
  const plain = await startWorker({}, { quiet: true });
  try {
    const { session: id } = await initialize(plain.mcpUrl);
    for (let i = 1; i <= 120; i++) {
      const r = await (await post(plain.mcpUrl, { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "get_mode_indicator", arguments: {} } }, { session: id, version: LATEST })).json();
      assert.equal(r.result.isError, undefined, `call ${i} of 120: ${JSON.stringify(r)}`);
    }
  } finally {
    await plain.stop();
  }
});
