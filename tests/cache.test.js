// The executor's result cache in KV against the built Worker: a repeated call is a hit (flagged in
// the result's _meta and the tool_result event), argument order does not matter, a call can bypass
// it, callers never see each other's results, and a confirmed domain write invalidates.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { LATEST, post, sseEvents } from "./support/mcp.js";
import { namedUsers } from "./support/domain.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "cache-secret";
const META = "mcp-edge/cache";
let w, users;
before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
  users = namedUsers(w, SECRET);
});
after(() => w?.stop());

/** A session of `name` with `roles` (anonymous without a name) whose calls may carry `_meta`. */
async function session(name, roles = []) {
  const s = await users.as(name, roles);
  return {
    ...s,
    call: async (tool, args, meta) => {
      const r = await s.rpc("tools/call", { name: tool, arguments: args, ...(meta ? { _meta: meta } : {}) });
      assert.ok(r.result, JSON.stringify(r));
      return r.result;
    },
  };
}

const how = (r) => r._meta?.[META];

test("a repeated call is a hit, flagged in the result and in the tool_result event; argument order does not matter", async () => {
  const anon = await session(null);
  const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "cache", version: "1" } } });
  const id = init.headers.get("mcp-session-id");
  const dash = sseEvents(await fetch(new URL(`/sessions/${id}/events`, w.url), { headers: { accept: "text/event-stream" } }), { timeoutMs: 5000 });
  const call = async (args, n) => (await (await post(w.mcpUrl, { jsonrpc: "2.0", id: n, method: "tools/call", params: { name: "list_instruction_sets", arguments: args } }, { session: id, version: LATEST })).json()).result;

  const first = await call({ category: "compliance" }, 1);
  assert.equal(how(first), "miss");
  const second = await call({ category: "compliance" }, 2);
  assert.equal(how(second), "hit");
  assert.deepEqual(second.structuredContent, first.structuredContent);
  assert.deepEqual(second.content, first.content, "a result without a summary line is served unchanged");
  const results = [];
  while (results.length < 2) {
    const ev = await dash.next();
    assert.ok(ev, "stream ended");
    if (ev.event === "tool_result") results.push(JSON.parse(ev.data));
  }
  dash.close();
  assert.deepEqual(results.map((r) => r.cached), [false, true]);
  assert.equal(results[1].result._meta[META], "hit");

  // Another session of another (anonymous) caller shares the result of a tool that does not depend on the caller.
  assert.equal(how(await anon.call("list_instruction_sets", { category: "compliance" })), "hit");

  const alice = await session("Alice Chen", ["hr-read"]);
  assert.equal(how(await alice.call("list_employees", { department: "Engineering", limit: 3 })), "miss");
  const swapped = await alice.call("list_employees", { limit: 3, department: "Engineering" });
  assert.equal(how(swapped), "hit", "the same arguments in another order are the same call");
  assert.match(swapped.content[0].text, /\(cached\)$/, "the summary line tells the model");
});

test("_meta bypass runs the tool and refreshes the cache; an unknown directive is invalid params", async () => {
  const s = await session(null);
  const args = { name: "vendor-search" };
  await s.call("get_instruction_set", args);
  assert.equal(how(await s.call("get_instruction_set", args)), "hit");
  const forced = await s.call("get_instruction_set", args, { [META]: "bypass" });
  assert.equal(how(forced), "bypass");
  assert.equal(how(await s.call("get_instruction_set", args)), "hit");
  const bad = await s.rpc("tools/call", { name: "get_instruction_set", arguments: args, _meta: { [META]: "skip" } });
  assert.equal(bad.error?.code, -32602, JSON.stringify(bad));
  assert.match(bad.error.message, /_meta\["mcp-edge\/cache"\] is "skip"; the only value is "bypass"/);
});

test("a caller never gets another user's or another role set's cached result", async () => {
  const sarah = { employee_id: await users.idOf("Sarah Kim") };
  const eve = await session("Eve Thompson", ["executive"]);
  const seen = await eve.call("get_employee", sarah);
  assert.equal(typeof seen.structuredContent.data.salary, "number");
  assert.equal(how(await eve.call("get_employee", sarah)), "hit");

  const nina = await session("Nina Patel", ["manager"]);
  const hers = await nina.call("get_employee", sarah);
  assert.equal(how(hers), "miss");
  assert.equal(hers.structuredContent.data.salary, "*** (Hidden)");

  const eveMore = await session("Eve Thompson", ["hr-read", "executive"]);
  assert.equal(how(await eveMore.call("get_employee", sarah)), "miss", "other roles, other key");
  const eveSorted = await session("Eve Thompson", ["executive", "hr-read"]);
  assert.equal(how(await eveSorted.call("get_employee", sarah)), "hit", "the roles' order does not matter");
});

test("refusals are not cached, and a confirmed domain write invalidates every cached read", async () => {
  const eve = await session("Eve Thompson", ["executive"]);
  const missing = { employee_id: "00000000-0000-4000-8000-00000000dead" };
  assert.equal((await eve.call("get_employee", missing)).structuredContent.status, "error");
  assert.equal(how(await eve.call("get_employee", missing)), "miss", "a domain error is not kept");

  const marcus = { employee_id: await users.idOf("Marcus Johnson") };
  await eve.call("get_employee", marcus);
  assert.equal(how(await eve.call("get_employee", marcus)), "hit");
  const asked = await eve.call("update_salary", { ...marcus, new_salary: 99000, reason: "cache test" });
  assert.equal(asked.structuredContent.status, "pending_confirmation", JSON.stringify(asked));
  assert.equal(how(asked), undefined, "write tools are never cached");
  const token = hs256({ sub: await users.idOf("Eve Thompson"), roles: ["executive"], aud: w.mcpUrl, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET);
  const decided = await fetch(new URL(`/api/confirm/${asked.structuredContent.confirmationId}`, w.url), {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ approved: true }),
  });
  assert.equal((await decided.json()).status, "success");
  const after = await eve.call("get_employee", marcus);
  assert.equal(how(after), "miss", "the write bumped the data generation");
  assert.equal(after.structuredContent.data.salary, 99000);
});

test("KV holds results as JSON strings under digests only", async () => {
  const kv = await w.mf.getKVNamespace("CACHE");
  const keys = (await kv.list({ prefix: "result:" })).keys;
  assert.ok(keys.length >= 5);
  for (const k of keys) assert.match(k.name, /^result:[0-9a-f]{64}$/);
  const stored = JSON.parse(await kv.get(keys[0].name));
  assert.ok(stored.result.content.length > 0, JSON.stringify(stored));
});
