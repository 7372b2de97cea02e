// Anonymous callers where anonymous access is on (development, issue 19 item 4): a 2026-07-28
// caller without a token gets the tools a 2025 session's anonymous caller gets, and they run. The
// runs and the travel assistant's mode of such a caller belong to a sealed id derived from their
// address (docs/security.md, "Anonymous callers of 2026-07-28"): the same address finds them
// again, another address does not, and the address itself is not what D1 keeps.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { LATEST, initialize, post } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const MODERN = "2026-07-28";
const SECRET = "anonymous-test-secret";

/** A 2026-07-28 request from `address` without a token; the JSON-RPC reply (the last message of an SSE one). */
async function modern(w, method, params = {}, address = "192.0.2.10", headers = {}) {
  const p = { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } };
  const h = { "mcp-protocol-version": MODERN, "mcp-method": method, "cf-connecting-ip": address, ...(p.name ? { "mcp-name": p.name } : {}), ...headers };
  const res = await post(w.mcpUrl, { jsonrpc: "2.0", id: 1, method, params: p }, { headers: h });
  if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) return { status: res.status, ...(await res.json()) };
  const messages = (await res.text()).split("\n\n").map((b) => b.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")).filter(Boolean).map((d) => JSON.parse(d));
  return { status: res.status, ...messages.find((m) => m.id === 1) };
}

/** Every tool name of a 2026-07-28 anonymous caller, page by page. */
async function modernTools(w) {
  const names = [];
  let cursor;
  do {
    const r = (await modern(w, "tools/list", cursor ? { cursor } : {})).result;
    names.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
  } while (cursor);
  return names.sort();
}

/** Every tool name of an anonymous 2025 session, page by page. */
async function legacyTools(w) {
  const { session } = await initialize(w.mcpUrl);
  const names = [];
  let cursor;
  do {
    const res = await post(w.mcpUrl, { jsonrpc: "2.0", id: 2, method: "tools/list", params: cursor ? { cursor } : {} }, { session, version: LATEST });
    const r = (await res.json()).result;
    names.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
  } while (cursor);
  return names.sort();
}

const STATEFUL = ["execute_chain", "get_chain_status", "resume_chain", "cancel_chain", "initialize_travel_assistant", "switch_mode", "get_mode_indicator"];

for (const levels of ["default", "off"]) {
  describe(`anonymous tools/list is the same in both eras (FlowMind levels ${levels})`, () => {
    let w;
    before(async () => (w = await startWorker({ JWT_SECRET: SECRET, ...(levels === "off" ? { FLOWMIND_LEVELS: "off" } : {}) }, { quiet: true })));
    after(() => w?.stop());

    test("the same tools, the ones that keep runs or a mode included", async () => {
      const [legacy, current] = [await legacyTools(w), await modernTools(w)];
      assert.deepEqual(current, legacy);
      for (const name of STATEFUL) assert.ok(current.includes(name), name);
    });
  });
}

describe("anonymous 2026-07-28 callers run the tools that keep state", () => {
  let w, db;
  before(async () => {
    w = await startWorker({ JWT_SECRET: SECRET, FLOWMIND_LEVELS: "off" }, { quiet: true });
    db = await w.mf.getD1Database("DB");
  });
  after(() => w?.stop());
  const call = (name, args, address) => modern(w, "tools/call", { name, arguments: args }, address);

  test("the mode is kept for the caller's address across requests; another address has its own", async () => {
    const switched = await call("switch_mode", { mode: "mobile-mode" }, "192.0.2.10");
    assert.equal(switched.result.isError, undefined, JSON.stringify(switched));
    assert.equal((await call("get_mode_indicator", {}, "192.0.2.10")).result.structuredContent.mode, "mobile-mode");
    assert.notEqual((await call("get_mode_indicator", {}, "192.0.2.11")).result.structuredContent.mode, "mobile-mode", "another caller's mode is theirs");
  });

  test("a chain run is found again by its execution id from the same address only; D1 keeps the sealed id, not the address", async () => {
    // A seed chain (an anonymous 2026-07-28 caller stores no records of its own): its model steps
    // pause, as this client declares no sampling.
    const variables = { company_name: "Acme", traveler_name: "Dana Lee", cost_center: "CC-7", trip_requirements: { city: "Berlin" }, budget_approval: 3000 };
    const started = await call("execute_chain", { chain_name: "corporate-booking-workflow", variables }, "192.0.2.20");
    assert.equal(started.result.isError, undefined, JSON.stringify(started));
    const text = started.result.content.map((c) => c.text).join("\n");
    assert.match(text, /paused/);
    const id = text.match(/exec-[0-9a-f]{32}/)[0];
    const status = await call("get_chain_status", { execution_id: id }, "192.0.2.20");
    assert.equal(status.result.structuredContent.status, "awaiting_input", JSON.stringify(status));
    // The run's object is reached through the sealed owner only: its name (64 hex digits, which a
    // 2025 request could send as Mcp-Session-Id) is never shown to the caller.
    assert.doesNotMatch(JSON.stringify([started, status]), /[0-9a-f]{64}/);
    const foreign = await call("get_chain_status", { execution_id: id }, "192.0.2.21");
    assert.equal(foreign.result.isError, true, "another address cannot see the run");
    assert.match(foreign.result.content[0].text, /not found/);
    const refused = await call("cancel_chain", { execution_id: id }, "192.0.2.21");
    assert.equal(refused.result.isError, true, "nor cancel it");
    const cancelled = await call("cancel_chain", { execution_id: id }, "192.0.2.20");
    assert.equal(cancelled.result.isError, undefined, JSON.stringify(cancelled));
    assert.equal((await call("get_chain_status", { execution_id: id }, "192.0.2.20")).result.structuredContent.status, "cancelled");
    const owners = (await db.prepare("SELECT user FROM run_objects").all()).results.map((r) => r.user);
    assert.ok(owners.length > 0 && owners.every((u) => /^anonymous:[0-9a-f]{64}$/.test(u)), JSON.stringify(owners));
    assert.ok(!JSON.stringify(owners).includes("192.0.2"), "the address is not kept");
  });

  test("execute_workflow runs for an anonymous caller and continues by its session_id from the same address only", async () => {
    const review = { workflow_uri: "workflow://code-review", initial_variables: { technology: "Rust", code_reference: "PR 1" } };
    const started = await call("execute_workflow", review, "192.0.2.30");
    assert.equal(started.result.structuredContent.success, true, JSON.stringify(started));
    const id = started.result.structuredContent.result.session_id;
    const shown = await call("execute_workflow", { workflow_uri: review.workflow_uri, session_id: id }, "192.0.2.30");
    assert.equal(shown.result.structuredContent.result.status, "awaiting_input", JSON.stringify(shown));
    const foreign = await call("execute_workflow", { workflow_uri: review.workflow_uri, session_id: id }, "192.0.2.31");
    assert.equal(foreign.result.isError, true, JSON.stringify(foreign));
  });

  test("a token whose sub claims the anonymous prefix is refused: no signed-in user is an anonymous caller", async () => {
    const aud = new URL("/mcp", w.url).href;
    const forged = hs256({ sub: `anonymous:${"0".repeat(64)}`, roles: [], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET);
    const r = await modern(w, "tools/list", {}, "192.0.2.40", { authorization: `Bearer ${forged}` });
    assert.equal(r.status, 401);
    assert.match(r.error.message, /anonymous/);
  });
});
