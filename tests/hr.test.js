// The HR tools through MCP with minted tokens against the sample company (docs/domain-data.md):
// who sees which tools, row-level access in the SQL (self, reporting chain, everyone), PII masking
// by role, and signed keyset cursors that page through every row exactly once.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { LATEST, post, sseEvents } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "hr-test-secret";
let w, db, aud;
/** Named users by name → { id, roles }. */
const people = {
  eve: ["Eve", "Thompson", ["executive"]],
  victor: ["Victor", "Reyes", ["manager"]],
  nina: ["Nina", "Patel", ["manager"]],
  marcus: ["Marcus", "Johnson", []],
  sarah: ["Sarah", "Kim", []],
  frank: ["Frank", "Davis", []],
  alice: ["Alice", "Chen", ["hr-read", "hr-write"]],
  raj: ["Raj", "Mehta", ["finance-read", "finance-write", "manager"]],
};
const ids = {};

before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET, ANONYMOUS_ACCESS: "true" }, { quiet: true });
  db = await w.mf.getD1Database("DB");
  aud = new URL("/mcp", w.url).href;
  for (const [key, [first, last]] of Object.entries(people)) {
    ids[key] = (await db.prepare("SELECT id FROM hr_employees WHERE first_name = ?1 AND last_name = ?2").bind(first, last).first()).id;
  }
});
after(() => w?.stop());

const sessions = {};
/** A session signed in as a named user (or anonymous with `null`). */
async function as(who) {
  if (sessions[who]) return sessions[who];
  const headers = who ? { authorization: `Bearer ${hs256({ sub: ids[who], roles: people[who][2], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` } : {};
  const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "hr-test", version: "1" } } }, { headers });
  assert.equal(init.status, 200, await init.clone().text());
  const session = init.headers.get("mcp-session-id");
  let n = 1;
  const rpc = async (method, params) => {
    const r = await post(w.mcpUrl, { jsonrpc: "2.0", id: n++, method, params }, { session, headers, version: LATEST });
    return r.json();
  };
  const s = {
    rpc,
    tools: async () => (await rpc("tools/list", {})).result.tools.map((t) => t.name),
    call: async (name, args = {}) => {
      const r = await rpc("tools/call", { name, arguments: args });
      return r.error ? r : r.result;
    },
    data: async (name, args) => {
      const r = await s.call(name, args);
      assert.equal(r.structuredContent?.status, "success", JSON.stringify(r));
      return r.structuredContent;
    },
  };
  sessions[who] = s;
  return s;
}

const HR = ["get_employee", "get_org_chart", "get_performance_reviews", "list_employees"];
/** Everyone below `id` in the reporting tree. */
async function chainOf(id) {
  const { results } = await db.prepare("WITH RECURSIVE c(id) AS (SELECT id FROM hr_employees WHERE manager_id = ?1 UNION ALL SELECT e.id FROM hr_employees e JOIN c ON e.manager_id = c.id) SELECT id FROM c").bind(id).all();
  return new Set(results.map((r) => r.id));
}

describe("who sees which HR tools", () => {
  test("tools/list follows the token's roles", async () => {
    const hrIn = async (who) => (await (await as(who)).tools()).filter((t) => HR.includes(t)).sort();
    assert.deepEqual(await hrIn(null), []);
    assert.deepEqual(await hrIn("marcus"), ["get_employee"]);
    assert.deepEqual(await hrIn("raj"), HR, "manager");
    assert.deepEqual(await hrIn("nina"), HR);
    assert.deepEqual(await hrIn("alice"), HR);
    assert.deepEqual(await hrIn("eve"), HR);
  });

  test("a tool the caller's roles do not allow answers INSUFFICIENT_PERMISSIONS (the seed's union)", async () => {
    const r = await (await as("marcus")).call("list_employees", {});
    assert.equal(r.structuredContent?.code, "INSUFFICIENT_PERMISSIONS", JSON.stringify(r));
    assert.equal(r.isError, true);
    const anon = await (await as(null)).call("get_employee", { employee_id: ids.marcus });
    assert.equal(anon.structuredContent?.code, "INSUFFICIENT_PERMISSIONS", JSON.stringify(anon));
  });
});

describe("get_employee", () => {
  test("self-service: Marcus reads his own record, salary shown, SSN masked", async () => {
    const r = await (await as("marcus")).call("get_employee", { employee_id: ids.marcus });
    assert.match(r.content[0].text, /^Employee Marcus Johnson \(/);
    const e = r.structuredContent.data;
    assert.equal(e.pto_balance, 15);
    assert.equal(typeof e.salary, "number");
    assert.equal(e.ssn, "*** (Hidden)");
    assert.match(e.phone, /\d/);
  });

  test("changing the id to a colleague's is refused as not found", async () => {
    const r = (await (await as("marcus")).call("get_employee", { employee_id: ids.sarah })).structuredContent;
    assert.equal(r.status, "error");
    assert.equal(r.code, "EMPLOYEE_NOT_FOUND");
    assert.match(r.suggestedAction, /list_employees/);
    assert.equal(JSON.stringify(r).includes("Sarah"), false, "nothing about the colleague leaks");
  });

  test("a manager sees their reporting chain with PII masked, nobody above", async () => {
    const nina = await as("nina");
    const sarah = (await nina.data("get_employee", { employee_id: ids.sarah })).data;
    assert.equal(sarah.first_name, "Sarah");
    for (const f of ["salary", "ssn", "phone", "personal_email"]) assert.equal(sarah[f], "*** (Hidden)", f);
    assert.equal((await nina.call("get_employee", { employee_id: ids.eve })).structuredContent.code, "EMPLOYEE_NOT_FOUND");
    const victor = await as("victor");
    assert.equal((await victor.data("get_employee", { employee_id: ids.marcus })).data.first_name, "Marcus", "three levels down");
  });

  test("masked fields stay masked on the session's event stream", async () => {
    const headers = { authorization: `Bearer ${hs256({ sub: ids.nina, roles: ["manager"], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` };
    const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "hr-events", version: "1" } } }, { headers });
    const session = init.headers.get("mcp-session-id");
    const stream = await fetch(new URL(`/sessions/${session}/events`, w.url), { headers: { accept: "text/event-stream", ...headers } });
    const events = sseEvents(stream, { timeoutMs: 5000 });
    await post(w.mcpUrl, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_employee", arguments: { employee_id: ids.sarah } } }, { session, headers, version: LATEST });
    let result;
    while (!result) {
      const ev = await events.next();
      assert.ok(ev, "tool_result event arrives");
      if (ev.event === "tool_result") result = ev.data;
    }
    events.close();
    const { salary_cents, ssn } = await db.prepare("SELECT salary_cents, ssn FROM hr_employees WHERE id = ?1").bind(ids.sarah).first();
    assert.match(result, /\*\*\* \(Hidden\)/);
    assert.equal(result.includes(ssn), false, "no SSN in the event");
    assert.equal(result.includes(String(salary_cents / 100)), false, "no salary in the event");
  });

  test("hr-write and executive see everyone unmasked; finance-read sees salaries of rows it may read", async () => {
    for (const who of ["alice", "eve"]) {
      const s = (await (await as(who)).data("get_employee", { employee_id: ids.sarah })).data;
      assert.equal(s.salary, 112000, who);
      assert.match(s.ssn, /^\d{3}-\d{2}-\d{4}$/, who);
    }
    const raj = await as("raj");
    assert.equal((await raj.call("get_employee", { employee_id: ids.sarah })).structuredContent.code, "EMPLOYEE_NOT_FOUND");
  });

  test("SQL metacharacters are data", async () => {
    const r = (await (await as("eve")).call("get_employee", { employee_id: "' OR 1=1; DROP TABLE hr_employees; --" })).structuredContent;
    assert.equal(r.code, "EMPLOYEE_NOT_FOUND");
    assert.ok((await db.prepare("SELECT COUNT(*) AS n FROM hr_employees").first()).n > 500);
  });
});

describe("list_employees", () => {
  /** Follows cursors to the end; returns every employee id and the pages' sizes. */
  async function everything(who, args) {
    const s = await as(who);
    const seen = [];
    const sizes = [];
    let cursor;
    for (;;) {
      const r = await s.data("list_employees", { ...args, ...(cursor ? { cursor } : {}) });
      seen.push(...r.data.map((e) => e.employee_id));
      sizes.push(r.metadata.returnedCount);
      assert.equal(r.metadata.returnedCount, r.data.length);
      assert.equal(r.metadata.truncated, r.metadata.hasMore);
      if (!r.metadata.hasMore) return { seen, sizes };
      assert.match(r.metadata.hint, /nextCursor/);
      cursor = r.metadata.nextCursor;
    }
  }

  test("pages of up to 50 cover every visible active employee exactly once", async () => {
    const { seen, sizes } = await everything("alice", {});
    const active = (await db.prepare("SELECT COUNT(*) AS n FROM hr_employees WHERE status <> 'terminated'").first()).n;
    assert.equal(seen.length, active);
    assert.equal(new Set(seen).size, active, "no employee twice");
    assert.ok(sizes.slice(0, -1).every((n) => n === 50), JSON.stringify(sizes));
  });

  test("a manager lists only their reporting chain (and themself)", async () => {
    const { seen } = await everything("victor", { limit: 17 });
    const chain = await chainOf(ids.victor);
    const { results } = await db.prepare("SELECT id FROM hr_employees WHERE status <> 'terminated'").all();
    const active = new Set(results.map((r) => r.id));
    const expected = [...chain, ids.victor].filter((id) => active.has(id));
    assert.deepEqual([...seen].sort(), expected.sort());
  });

  test("department by name or code; an unknown one lists the departments", async () => {
    const alice = await as("alice");
    const byName = await alice.data("list_employees", { department: "Engineering", limit: 5 });
    const byCode = await alice.data("list_employees", { department: "eng", limit: 5 });
    assert.deepEqual(byName.data, byCode.data);
    assert.ok(byName.data.every((e) => e.department === "Engineering"));
    const bad = (await alice.call("list_employees", { department: "'; DROP TABLE hr_employees; --" })).structuredContent;
    assert.equal(bad.code, "INVALID_INPUT");
    assert.match(bad.suggestedAction, /Engineering/);
  });

  test("tampered, foreign and other-filter cursors are refused", async () => {
    const alice = await as("alice");
    const first = await alice.data("list_employees", { limit: 2 });
    const cursor = first.metadata.nextCursor;
    const flip = cursor.slice(0, 5) + (cursor[5] === "A" ? "B" : "A") + cursor.slice(6);
    const cases = [
      [alice, { cursor: flip }, /altered/],
      [await as("eve"), { cursor }, /another caller/],
      [alice, { cursor, department: "Sales" }, /other filters/],
      [alice, { cursor: "not-a-cursor" }, /malformed/],
    ];
    for (const [s, args, why] of cases) {
      const r = (await s.call("list_employees", args)).structuredContent;
      assert.equal(r.code, "INVALID_INPUT", JSON.stringify(args));
      assert.match(r.message, why);
    }
    const second = await alice.data("list_employees", { limit: 2, cursor });
    assert.notDeepEqual(second.data, first.data, "the genuine cursor works");
  });
});

describe("org chart and reviews", () => {
  test("a manager's chart starts at themself; other roots outside their chain are not found", async () => {
    const nina = await as("nina");
    const chart = await nina.data("get_org_chart", {});
    assert.equal(chart.data.employee_id, ids.nina);
    const reports = (await db.prepare("SELECT COUNT(*) AS n FROM hr_employees WHERE manager_id = ?1 AND status <> 'terminated'").bind(ids.nina).first()).n;
    assert.equal(chart.data.reports.length, reports);
    assert.equal((await nina.call("get_org_chart", { root_employee_id: ids.eve })).structuredContent.code, "EMPLOYEE_NOT_FOUND");
    const eve = await (await as("eve")).data("get_org_chart", { depth: 1 });
    assert.equal(eve.data.name, "Eve Thompson");
    assert.ok(eve.data.reports.every((r) => r.reports.length === 0), "depth 1 stops below the direct reports");
  });

  test("Nina's team reviews that are due, and nobody else's", async () => {
    const nina = await as("nina");
    const due = await nina.data("get_performance_reviews", { status: "due" });
    const chain = await chainOf(ids.nina);
    assert.ok(due.data.length >= 10, `${due.data.length} due`);
    assert.ok(due.data.every((r) => chain.has(r.employee_id) || r.employee_id === ids.nina));
    assert.ok(due.data.every((r) => ["scheduled", "in_progress"].includes(r.status)));
    assert.ok(Array.isArray(due.data[0].goals));
    assert.equal((await nina.call("get_performance_reviews", { employee_id: ids.eve })).structuredContent.code, "EMPLOYEE_NOT_FOUND");
    const nobody = (await (await as("eve")).call("get_performance_reviews", { employee_id: "00000000-0000-4000-8000-999999999999" })).structuredContent;
    assert.equal(nobody.code, "EMPLOYEE_NOT_FOUND", "an id that does not exist is not an empty list, even for executives");
  });
});
