// FlowMind's progressive authorization (issue 6, seed 001 "Progressive Authorization") through the
// official MCP SDK client against the built Worker: a caller starts as a beginner with
// field_request and get_help, successful FlowMind calls unlock more tools (tools/list,
// notifications/tools/list_changed, _unlocks once), a locked tool is refused with what it needs,
// a signed-in user's level persists across sessions, and other toolsets are unaffected.
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startWorker } from "./support/worker.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "levels-secret";
const catalog = new Map(JSON.parse(readFileSync(new URL("../data/flowmind/contexts.json", import.meta.url), "utf8")).map((c) => [c.uri, c.complexity]));
const FLOWMIND = ["compose_workflow", "evaluate_semantic_condition", "execute_workflow", "field_request", "get_help", "list_available_contexts"];
let w;
const open = [];

/** A connected client that counts the tools/list_changed notifications it receives. */
async function connect(headers = {}, worker = w) {
  const c = new Client({ name: "levels-test", version: "1.0.0" });
  c.listChanged = 0;
  c.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    c.listChanged += 1;
  });
  await c.connect(new StreamableHTTPClientTransport(new URL(worker.mcpUrl), { requestInit: { headers } }));
  open.push(c);
  return c;
}

function tokenFor(sub, worker = w) {
  const aud = new URL("/mcp", worker.url).href;
  return { authorization: `Bearer ${hs256({ sub, roles: [], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` };
}

async function names(c) {
  return (await c.listTools()).tools.map((t) => t.name);
}
const flowmindTools = async (c) => (await names(c)).filter((n) => FLOWMIND.includes(n));

const help = { help_type: "best_practices" };
const condition = { condition: "user seems frustrated", context: { user_message: "This is RIDICULOUS, the export is broken again!!" } };

/** Calls a tool that must succeed; returns its structured answer. */
async function ok(c, name, args) {
  const r = await c.callTool({ name, arguments: args });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  assert.equal(r.structuredContent.success, true, JSON.stringify(r.structuredContent));
  assert.deepEqual(JSON.parse(r.content.at(-1).text), r.structuredContent, "the text block carries the same JSON");
  return r.structuredContent;
}

before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET, RATE_LIMITS: "*=off", FLOWMIND_LEVELS: "2,4" }, { quiet: true });
});
after(async () => {
  for (const c of open) await c.close().catch(() => {});
  await w?.stop();
});

describe("progressive authorization", () => {
  test("a new anonymous caller is a beginner: field_request and get_help; other toolsets unaffected", async () => {
    const c = await connect();
    assert.deepEqual(c.getServerCapabilities().tools, { listChanged: true });
    const all = await names(c);
    assert.deepEqual(all.filter((n) => FLOWMIND.includes(n)), ["field_request", "get_help"]);
    for (const other of ["switch_mode", "create_template", "search_flights", "epic-tide-save-work"]) assert.ok(all.includes(other), other);
    const r = await c.callTool({ name: "switch_mode", arguments: { mode: "mobile-mode" } });
    assert.notEqual(r.isError, true);
    assert.equal(r.structuredContent._unlocks, undefined);
  });

  test("a locked tool is refused with the level it needs and how to get there; refusals do not count", async () => {
    const c = await connect();
    let suggestion;
    for (const [name, needed, left] of [["evaluate_semantic_condition", "intermediate", 2], ["list_available_contexts", "advanced", 4]]) {
      const r = await c.callTool({ name, arguments: name === "evaluate_semantic_condition" ? condition : {} });
      assert.equal(r.isError, true, name);
      assert.match(r.content[0].text, new RegExp(`Tool ${name} is locked: it needs FlowMind level ${needed} and you are beginner \\(0 successful`));
      assert.match(r.content[0].text, new RegExp(`after ${left} more successful FlowMind calls; until then use field_request, get_help`));
      const s = r.structuredContent;
      assert.equal(s.success, false);
      assert.equal(s.error.code, "TOOL_LOCKED");
      assert.equal(s.teaching.level, "beginner");
      assert.deepEqual(s.next_actions.map((a) => a.tool), ["field_request", "get_help"]);
      assert.ok(s._insights.notes.length > 0, "the refusal carries the seed's _insights");
      suggestion = s.next_actions[0].parameters;
    }
    const refused = await c.callTool({ name: "field_request", arguments: { query: "short" } });
    assert.equal(refused.structuredContent.success, false, "a field_request refused for its arguments");
    assert.equal(refused.structuredContent.teaching.level, "beginner");
    assert.equal(refused.structuredContent._unlocks, undefined);
    const first = await ok(c, "get_help", help);
    assert.equal(first.teaching.level, "beginner");
    assert.match(first.teaching.progress, /1 more successful call unlocks intermediate/, "only the successful call counted");
    const suggested = await ok(c, "field_request", suggestion);
    assert.equal(suggested._unlocks.level, "intermediate", "the refusal's suggested call works and counts");
  });

  test("successful calls unlock intermediate then advanced: tools/list, list_changed and _unlocks once each", async () => {
    const c = await connect();
    const first = await ok(c, "get_help", help);
    assert.equal(first._unlocks, undefined);
    assert.equal(c.listChanged, 0);

    const second = await ok(c, "get_help", help);
    assert.equal(second.teaching.level, "intermediate");
    assert.equal(second._unlocks.level, "intermediate");
    assert.equal(second._unlocks.previous_level, "beginner");
    assert.deepEqual(second._unlocks.new_tools, ["evaluate_semantic_condition", "execute_workflow"]);
    assert.deepEqual(second._unlocks.next_level, { level: "advanced", at_successful_calls: 4 });
    assert.match(second.teaching.unlock, /now intermediate/);
    assert.equal(c.listChanged, 1, "notifications/tools/list_changed arrived before the result");
    assert.deepEqual(await flowmindTools(c), ["evaluate_semantic_condition", "execute_workflow", "field_request", "get_help"]);

    const third = await ok(c, "evaluate_semantic_condition", condition);
    assert.equal(third._unlocks, undefined, "_unlocks only on the call that crossed the threshold");
    assert.equal(third.teaching.level, "intermediate");
    assert.equal(c.listChanged, 1);

    const fourth = await ok(c, "get_help", help);
    assert.equal(fourth._unlocks.level, "advanced");
    assert.deepEqual(fourth._unlocks.new_tools, ["compose_workflow", "list_available_contexts"]);
    assert.equal(fourth._unlocks.next_level, undefined);
    assert.equal(c.listChanged, 2);
    assert.deepEqual(await flowmindTools(c), ["compose_workflow", "evaluate_semantic_condition", "execute_workflow", "field_request", "get_help", "list_available_contexts"]);
    const listed = await ok(c, "list_available_contexts", {});
    assert.equal(listed.teaching.level, "advanced");
    assert.equal(listed._unlocks, undefined);
    assert.equal(c.listChanged, 2);
  });

  test("a signed-in user's level follows them into new sessions; a new anonymous session starts fresh", async () => {
    const user = tokenFor("00000000-0000-4000-8000-00000000a001");
    const a = await connect(user);
    assert.deepEqual(await flowmindTools(a), ["field_request", "get_help"]);
    await ok(a, "get_help", help);
    await ok(a, "get_help", help);
    await a.close();

    const b = await connect(user);
    assert.deepEqual(await flowmindTools(b), ["evaluate_semantic_condition", "execute_workflow", "field_request", "get_help"], "intermediate in a new session");
    const s = await ok(b, "evaluate_semantic_condition", condition);
    assert.equal(s.teaching.level, "intermediate");

    const other = await connect(tokenFor("00000000-0000-4000-8000-00000000a002"));
    assert.deepEqual(await flowmindTools(other), ["field_request", "get_help"], "another user starts as a beginner");
    const anon = await connect();
    assert.deepEqual(await flowmindTools(anon), ["field_request", "get_help"]);
  });
});

describe("max_complexity (seed 001: each level's limits)", () => {
  const incident = {
    query: "The checkout API is returning 500 errors in production and customers cannot pay",
    extracted_variables: { domain: "technical", technology: "nodejs", system_component: "checkout", urgency: "critical" },
    confidence_level: 0.8,
  };
  const ranks = { simple: 0, moderate: 1, complex: 2, expert: 3 };
  const incidentRun = { workflow_uri: "workflow://incident-response", initial_variables: { system_component: "checkout", error_description: "500 errors on payment" } };
  const reviewRun = { workflow_uri: "workflow://code-review", initial_variables: { technology: "Rust", code_reference: "PR 42" } };

  /** field_request's matches and what it held back, checked against the level's max_complexity. */
  async function offered(c, max) {
    const s = await ok(c, "field_request", { ...incident, context_preferences: { max_results: 10 } });
    assert.equal(s.guidance.max_complexity, max);
    assert.ok(s.matches.length > 0 || s.status === "no_matches", JSON.stringify(s));
    for (const m of s.matches) {
      if (catalog.has(m.uri)) assert.equal(m.complexity, catalog.get(m.uri), m.uri);
      assert.ok(ranks[m.complexity] <= ranks[max], `${m.uri} (${m.complexity}) offered to a caller limited to ${max}`);
    }
    assert.ok(s._insights.notes.some((n) => n.includes(`up to ${max} complexity`)), JSON.stringify(s._insights));
    return s;
  }

  test("matching offers a caller only contexts its level may run and names the others; running refuses above it (anonymous caller of a session)", async () => {
    const c = await connect();
    let s = await offered(c, "simple");
    assert.notEqual(s.matches[0]?.uri, "workflow://incident-response");
    const held = s.guidance.above_your_level.find((x) => x.uri === "workflow://incident-response");
    assert.ok(held, JSON.stringify(s.guidance.above_your_level));
    assert.equal(held.complexity, "complex");
    assert.equal(held.needed_level, "advanced");
    assert.match(held.message, /FlowMind beginners go up to simple \(max_complexity\); it opens at level advanced/);

    // field_request counted once; one more successful call makes an intermediate (FLOWMIND_LEVELS 2,4).
    assert.equal((await ok(c, "get_help", help))._unlocks.level, "intermediate");
    const r = await c.callTool({ name: "execute_workflow", arguments: incidentRun });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    const refused = r.structuredContent;
    assert.equal(refused.success, false);
    assert.equal(refused.error.code, "COMPLEXITY_ABOVE_LEVEL");
    assert.match(refused.error.message, /^workflow:\/\/incident-response is complex and FlowMind level intermediate runs contexts up to moderate \(max_complexity\); it opens at level advanced\.$/);
    assert.ok(refused._insights, "refusals carry _insights too");
    const explained = await ok(c, "get_help", { help_type: "error", context: { error_message: refused.error.message } });
    assert.equal(explained.result.code, "COMPLEXITY_ABOVE_LEVEL");
  });

  test("a signed-in user's level decides in every session: intermediate runs moderate workflows, advanced complex ones", async () => {
    const user = tokenFor("00000000-0000-4000-8000-00000000a004");
    const a = await connect(user);
    await ok(a, "get_help", help);
    await ok(a, "get_help", help);
    const b = await connect(user);
    await offered(b, "moderate");
    let r = (await b.callTool({ name: "execute_workflow", arguments: incidentRun })).structuredContent;
    assert.equal(r.error?.code, "COMPLEXITY_ABOVE_LEVEL", JSON.stringify(r));
    assert.match(r.error.message, /level intermediate runs contexts up to moderate/);
    r = await ok(b, "execute_workflow", reviewRun);
    assert.equal(r.result.status, "awaiting_input", "a moderate workflow runs at intermediate");
    await b.callTool({ name: "cancel_chain", arguments: { execution_id: r.result.session_id } });
    // offered() and the run above counted (2 + 2): advanced now.
    const c = await connect(user);
    const s = await offered(c, "expert");
    assert.deepEqual(s.guidance.above_your_level, []);
    assert.equal(s.matches[0].uri, "workflow://incident-response");
    r = await ok(c, "execute_workflow", incidentRun);
    assert.equal(r.result.status, "awaiting_input");
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: r.result.session_id } });
  });
});

describe("default thresholds", () => {
  let d;
  before(async () => {
    d = await startWorker({ RATE_LIMITS: "*=off", FLOWMIND_LEVELS: "" }, { quiet: true });
  });
  after(() => d?.stop());

  test("intermediate after 10 successful calls, advanced after 50", async () => {
    const c = await connect({}, d);
    const unlockedAt = {};
    for (let i = 1; i <= 50; i++) {
      const s = await ok(c, "get_help", help);
      if (s._unlocks) unlockedAt[s._unlocks.level] = i;
    }
    assert.deepEqual(unlockedAt, { intermediate: 10, advanced: 50 });
    assert.equal(c.listChanged, 2);
    assert.deepEqual(await flowmindTools(c), ["compose_workflow", "evaluate_semantic_condition", "execute_workflow", "field_request", "get_help", "list_available_contexts"]);
  });
});

describe("the 2026-07-28 lane", () => {
  const MODERN = "2026-07-28";
  let id = 1;
  /** A stateless request (no session): the 2026 envelope, headers mirrored from the body. */
  async function modern(method, params, headers = {}) {
    const body = { jsonrpc: "2.0", id: id++, method, params: { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } };
    const h = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": method, ...(params.name ? { "mcp-name": params.name } : {}), ...headers };
    const res = await fetch(w.mcpUrl, { method: "POST", headers: h, body: JSON.stringify(body) });
    const text = await res.text();
    const json = res.headers.get("content-type")?.startsWith("text/event-stream")
      ? text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6))).find((m) => m.id === body.id)
      : JSON.parse(text);
    assert.equal(res.headers.get("mcp-session-id"), null, "no session on this lane");
    return json;
  }
  const listed = async (headers) => (await modern("tools/list", {}, headers)).result.tools.map((t) => t.name).filter((n) => FLOWMIND.includes(n));
  const call = async (name, args, headers) => (await modern("tools/call", { name, arguments: args }, headers)).result;

  test("a signed-in user's level holds on both lanes, and calls on either count", async () => {
    const user = tokenFor("00000000-0000-4000-8000-00000000a003");
    assert.deepEqual(await listed(user), ["field_request", "get_help"], "a new user is a beginner");
    const locked = await call("evaluate_semantic_condition", condition, user);
    assert.equal(locked.isError, true);
    assert.equal(locked.structuredContent.error.code, "TOOL_LOCKED");
    assert.equal(locked.resultType, "complete");
    assert.equal((await call("get_help", help, user)).isError, undefined);
    assert.equal((await call("get_help", help, user)).isError, undefined);
    assert.deepEqual(await listed(user), ["evaluate_semantic_condition", "execute_workflow", "field_request", "get_help"], "two successes on the 2026 lane make an intermediate");
    assert.equal((await call("evaluate_semantic_condition", condition, user)).isError, undefined);
    const c = await connect(user);
    assert.deepEqual(await flowmindTools(c), ["evaluate_semantic_condition", "execute_workflow", "field_request", "get_help"], "the 2025 lane sees the same level");
    await ok(c, "get_help", help);
    assert.deepEqual(await listed(user), ["compose_workflow", "evaluate_semantic_condition", "execute_workflow", "field_request", "get_help", "list_available_contexts"], "and a 2025 success counts on the 2026 lane");
  });

  test("anonymous callers stay beginners: nothing identifies them between requests", async () => {
    for (let i = 0; i < 3; i++) assert.equal((await call("get_help", help)).isError, undefined);
    assert.deepEqual(await listed(), ["field_request", "get_help"]);
    assert.equal((await call("evaluate_semantic_condition", condition)).structuredContent.error.code, "TOOL_LOCKED");
  });
});
