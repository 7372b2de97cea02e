// HR writes with human confirmation: delete_employee and update_salary change nothing until the
// user who asked decides with POST /api/confirm/:id (or an elicitation form in the MCP client).
// Exactly once under concurrent approvals, expiry, denial, another user, a vanished target, roles
// re-checked at decision time, the audit log, and new salaries hidden from the event stream.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startWorker } from "./support/worker.js";
import { LATEST, post, sseEvents } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "hr-writes-secret";
// A confirmation id: 32 hex digits, 128 random bits.
const CONFIRMATION_ID = /^[0-9a-f]{32}$/;
let w, db, aud;
const ids = {};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET, CONFIRMATION_TTL_SECONDS: "2" }, { quiet: true });
  db = await w.mf.getD1Database("DB");
  aud = new URL("/mcp", w.url).href;
  for (const [key, first, last] of [["alice", "Alice", "Chen"], ["helen", "Helen", "Brooks"], ["eve", "Eve", "Thompson"], ["sarah", "Sarah", "Kim"], ["frank", "Frank", "Davis"], ["nina", "Nina", "Patel"], ["marcus", "Marcus", "Johnson"]]) {
    ids[key] = (await db.prepare("SELECT id FROM hr_employees WHERE first_name = ?1 AND last_name = ?2").bind(first, last).first()).id;
  }
});
after(() => w?.stop());

const token = (who, roles) => hs256({ sub: ids[who], roles, aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET);
const auth = (who, roles) => ({ authorization: `Bearer ${token(who, roles)}` });
const HR_WRITE = ["hr-read", "hr-write"];

/** An MCP session as `who`; `call` returns the structured answer. */
async function session(who, roles) {
  const headers = auth(who, roles);
  const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "t", version: "1" } } }, { headers });
  const id = init.headers.get("mcp-session-id");
  let n = 1;
  return {
    id,
    headers,
    call: async (name, args) => {
      const r = await (await post(w.mcpUrl, { jsonrpc: "2.0", id: n++, method: "tools/call", params: { name, arguments: args } }, { session: id, headers, version: LATEST })).json();
      return r.result?.structuredContent ?? r;
    },
    tools: async () => (await (await post(w.mcpUrl, { jsonrpc: "2.0", id: n++, method: "tools/list" }, { session: id, headers, version: LATEST })).json()).result.tools.map((t) => t.name),
  };
}

const decide = (id, approved, headers) =>
  fetch(new URL(`/api/confirm/${id}`, w.url), { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ approved }) });
const salaryOf = async (who) => (await db.prepare("SELECT salary_cents FROM hr_employees WHERE id = ?1").bind(ids[who]).first())?.salary_cents;
const audit = async (cid) => (await db.prepare("SELECT event, user_id, outcome FROM audit_log WHERE confirmation_id = ?1 ORDER BY id").bind(cid).all()).results;

describe("asking", () => {
  test("only hr-write and executive see the write tools", async () => {
    const writes = (names) => names.filter((n) => ["delete_employee", "update_salary"].includes(n)).sort();
    assert.deepEqual(writes(await (await session("alice", HR_WRITE)).tools()), ["delete_employee", "update_salary"]);
    assert.deepEqual(writes(await (await session("eve", ["executive"])).tools()), ["delete_employee", "update_salary"]);
    assert.deepEqual(writes(await (await session("nina", ["manager", "hr-read"])).tools()), []);
  });

  test("a write answers pending_confirmation naming the change, and changes nothing", async () => {
    const before = await salaryOf("sarah");
    const r = await (await session("alice", HR_WRITE)).call("update_salary", { employee_id: ids.sarah, new_salary: 120000, reason: "promotion" });
    assert.equal(r.status, "pending_confirmation");
    assert.match(r.confirmationId, CONFIRMATION_ID);
    assert.match(r.message, /Change the salary of Sarah Kim from \$112,000\.00 to \$120,000\.00/);
    assert.equal(r.confirmationData.action, "update_salary");
    assert.equal(r.confirmationData.mcpServer, "hr");
    assert.equal(r.confirmationData.userId, ids.alice);
    assert.equal(typeof r.confirmationData.timestamp, "number");
    assert.equal(await salaryOf("sarah"), before);
    assert.deepEqual((await audit(r.confirmationId)).map((a) => a.event), ["requested"]);
  });

  test("refusals that need no confirmation: reports to reassign, a future date, an unknown id", async () => {
    const alice = await session("alice", HR_WRITE);
    const nina = await alice.call("delete_employee", { employee_id: ids.nina });
    assert.equal(nina.code, "VALIDATION_ERROR");
    assert.match(nina.suggestedAction, /Reassign/);
    const future = await alice.call("update_salary", { employee_id: ids.sarah, new_salary: 1, effective_date: "2999-01-01" });
    assert.equal(future.code, "VALIDATION_ERROR");
    const nobody = await alice.call("delete_employee", { employee_id: "00000000-0000-4000-8000-999999999999" });
    assert.equal(nobody.code, "EMPLOYEE_NOT_FOUND");
    const bad = await alice.call("delete_employee", { employee_id: "E0001" });
    assert.match(bad.content?.[0]?.text ?? JSON.stringify(bad), /format|uuid/i, "employee ids are UUIDs, as the seed's schema says");
  });
});

describe("deciding with POST /api/confirm/:id", () => {
  test("only the asking user decides; once; the change is audited", async () => {
    const alice = await session("alice", HR_WRITE);
    const { confirmationId: cid } = await alice.call("update_salary", { employee_id: ids.sarah, new_salary: 120000 });
    const anonymous = await decide(cid, true, {});
    assert.equal(anonymous.status, 401);
    const helen = await decide(cid, true, auth("helen", HR_WRITE));
    assert.equal(helen.status, 403);
    assert.equal((await helen.json()).code, "USER_MISMATCH");
    assert.equal(await salaryOf("sarah"), 11200000, "unchanged after the refusals");
    const ok = await decide(cid, true, auth("alice", HR_WRITE));
    assert.equal(ok.status, 200);
    const body = await ok.json();
    assert.equal(body.status, "success", JSON.stringify(body));
    assert.match(body.data.message, /The salary of Sarah Kim is now \$120,000\.00/);
    assert.equal(await salaryOf("sarah"), 12000000);
    const again = await decide(cid, true, auth("alice", HR_WRITE));
    assert.equal(again.status, 409);
    assert.match((await again.json()).message, /already handled/);
    const events = await audit(cid);
    assert.deepEqual(events.map((a) => a.event), ["requested", "refused", "approved", "executed"]);
    assert.equal(events[1].user_id, ids.helen);
    assert.equal(events[1].outcome, "USER_MISMATCH");
  });

  test("two simultaneous approvals execute once", async () => {
    const alice = await session("alice", HR_WRITE);
    const { confirmationId: cid } = await alice.call("delete_employee", { employee_id: ids.frank, reason: "left the company" });
    const [a, b] = await Promise.all([decide(cid, true, auth("alice", HR_WRITE)), decide(cid, true, auth("alice", HR_WRITE))]);
    assert.deepEqual([a.status, b.status].sort(), [200, 409]);
    assert.equal(await db.prepare("SELECT id FROM hr_employees WHERE id = ?1").bind(ids.frank).first(), null);
    assert.equal((await audit(cid)).filter((e) => e.event === "executed").length, 1);
  });

  test("denied changes nothing; the target vanished meanwhile is not found; unknown ids are 404", async () => {
    const alice = await session("alice", HR_WRITE);
    const before = await salaryOf("marcus");
    const { confirmationId: denied } = await alice.call("update_salary", { employee_id: ids.marcus, new_salary: 1 });
    const no = await decide(denied, false, auth("alice", HR_WRITE));
    assert.equal(no.status, 200);
    assert.equal((await no.json()).data.approved, false);
    assert.equal(await salaryOf("marcus"), before);
    assert.equal((await decide(denied, true, auth("alice", HR_WRITE))).status, 409);

    const victim = (await db.prepare("SELECT e.id FROM hr_employees e WHERE NOT EXISTS (SELECT 1 FROM hr_employees r WHERE r.manager_id = e.id) AND e.id NOT LIKE '00000000-%' ORDER BY e.id LIMIT 1").first()).id;
    const first = (await alice.call("delete_employee", { employee_id: victim })).confirmationId;
    const second = (await alice.call("delete_employee", { employee_id: victim })).confirmationId;
    assert.equal((await (await decide(first, true, auth("alice", HR_WRITE))).json()).status, "success");
    const late = await (await decide(second, true, auth("alice", HR_WRITE))).json();
    assert.equal(late.code, "EMPLOYEE_NOT_FOUND");
    assert.match(late.message, /no longer exists/);

    assert.equal((await decide("0".repeat(32), true, auth("alice", HR_WRITE))).status, 404);
    assert.equal((await decide("00000000-0000-4000-8000-000000000000", true, auth("alice", HR_WRITE))).status, 404, "the old UUID shape names nothing");
    assert.equal((await decide("not-an-id", true, auth("alice", HR_WRITE))).status, 404);
    const badBody = await fetch(new URL(`/api/confirm/${denied}`, w.url), { method: "POST", headers: { "content-type": "application/json", ...auth("alice", HR_WRITE) }, body: "{\"approved\": \"yes\"}" });
    assert.equal(badBody.status, 400);
    const huge = await fetch(new URL(`/api/confirm/${denied}`, w.url), { method: "POST", headers: { "content-type": "application/json", ...auth("alice", HR_WRITE) }, body: JSON.stringify({ approved: true, pad: "x".repeat(5000) }) });
    assert.equal(huge.status, 413, "a decision body is a few bytes");
  });

  test("a confirmation expires; roles are checked again when deciding", async () => {
    const alice = await session("alice", HR_WRITE);
    const asked = await alice.call("update_salary", { employee_id: ids.marcus, new_salary: 2 });
    assert.equal(asked.status, "pending_confirmation", JSON.stringify(asked));
    const stale = asked.confirmationId;
    await sleep(2500);
    const expired = await decide(stale, true, auth("alice", HR_WRITE));
    assert.equal(expired.status, 410);
    assert.match((await expired.json()).message, /expired/);

    const { confirmationId: cid } = await alice.call("update_salary", { employee_id: ids.marcus, new_salary: 3 });
    const demoted = await (await decide(cid, true, auth("alice", ["hr-read"]))).json();
    assert.equal(demoted.code, "INSUFFICIENT_PERMISSIONS");
    assert.notEqual(await salaryOf("marcus"), 300);
  });
});

describe("the read cache", () => {
  test("reads are cached per caller and roles, and a confirmed write makes them stale at once", async () => {
    const eve = await session("eve", ["executive"]);
    const read = async (s) => {
      const r = await (await post(w.mcpUrl, { jsonrpc: "2.0", id: 77, method: "tools/call", params: { name: "get_employee", arguments: { employee_id: ids.sarah } } }, { session: s.id, headers: s.headers, version: LATEST })).json();
      return { text: r.result.content[0].text, data: r.result.structuredContent.data };
    };
    const first = await read(eve);
    const second = await read(eve);
    assert.doesNotMatch(first.text, /\(cached\)$/);
    assert.match(second.text, /\(cached\)$/);
    assert.deepEqual(second.data, first.data);
    const nina = await session("nina", ["manager"]);
    assert.equal((await read(nina)).data.salary, "*** (Hidden)", "another caller's cached answer is never served");
    assert.equal(typeof (await read(eve)).data.salary, "number");

    const alice = await session("alice", HR_WRITE);
    const pending = await alice.call("update_salary", { employee_id: ids.sarah, new_salary: 141000 });
    assert.equal((await (await decide(pending.confirmationId, true, auth("alice", HR_WRITE))).json()).status, "success");
    const after = await read(eve);
    assert.doesNotMatch(after.text, /\(cached\)$/, "the write invalidated the cache");
    assert.equal(after.data.salary, 141000);
  });
});

describe("inside the MCP client", () => {
  test("a client with elicitation asks the user in a form and applies their answer", async () => {
    for (const [approve, expected] of [[true, 13000000], [false, 13000000]]) {
      const client = new Client({ name: "hr-writes", version: "1" }, { capabilities: { elicitation: {} } });
      const seen = [];
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        seen.push(req.params.message);
        return { action: "accept", content: { approve } };
      });
      const transport = new StreamableHTTPClientTransport(new URL(w.mcpUrl), { requestInit: { headers: auth("alice", HR_WRITE) } });
      await client.connect(transport);
      const r = await client.callTool({ name: "update_salary", arguments: { employee_id: ids.sarah, new_salary: approve ? 130000 : 999999 } });
      assert.equal(seen.length, 1);
      assert.match(seen[0], /Approve this change\?/);
      assert.equal(r.structuredContent.status, "success", JSON.stringify(r.structuredContent));
      assert.equal(await salaryOf("sarah"), expected, `approve=${approve}`);
      await transport.terminateSession();
      await client.close();
    }
  });

  test("the event stream never shows a new salary", async () => {
    const alice = await session("alice", HR_WRITE);
    const stream = await fetch(new URL(`/sessions/${alice.id}/events`, w.url), { headers: { accept: "text/event-stream", ...alice.headers } });
    const events = sseEvents(stream, { timeoutMs: 5000 });
    await alice.call("update_salary", { employee_id: ids.sarah, new_salary: 987654 });
    let call;
    while (!call) {
      const ev = await events.next();
      assert.ok(ev, "tool_call event arrives");
      if (ev.event === "tool_call") call = JSON.parse(ev.data);
    }
    events.close();
    assert.equal(call.tool, "update_salary");
    assert.equal(call.arguments.new_salary, "*** (Hidden)");
    assert.equal(call.arguments.employee_id, ids.sarah);
  });
});
