// Observability of a deployment (issue 20 item 6): `wrangler tail` and the dashboard's logs show one
// structured JSON line per tool call, with the user, the tool, the outcome and the duration, and
// never an argument value. The 2025 session lane's line is tested in domain_questions.test.js; here
// the 2026-07-28 lane's, a refused call's, the line of a confirmed write, which runs later in its
// confirmation's object when the user approves it, and a chat turn's tool calls (a scripted model).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { post, readSse } from "./support/mcp.js";
import { call, scriptedModel } from "./support/model.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "logs-test-secret";
const MODERN = "2026-07-28";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const logs = [];
let w, aud, model;
const ids = {};
before(async () => {
  model = await scriptedModel();
  w = await startWorker({ JWT_SECRET: SECRET, MODEL_PROVIDER_URL: model.url, MODEL_PROVIDER_KEY: "test-key", MODEL_PROVIDER_MODEL: "scripted" }, { logs });
  aud = new URL("/mcp", w.url).href;
  const db = await w.mf.getD1Database("DB");
  for (const [key, first, last] of [["alice", "Alice", "Chen"], ["frank", "Frank", "Davis"], ["nina", "Nina", "Patel"]]) {
    ids[key] = (await db.prepare("SELECT id FROM hr_employees WHERE first_name = ?1 AND last_name = ?2").bind(first, last).first()).id;
  }
});
after(async () => {
  await w?.stop();
  await model?.close();
});

const auth = (who, roles) => ({ authorization: `Bearer ${hs256({ sub: ids[who], roles, aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` });

/** One 2026-07-28 tools/call (no session); its result. */
async function modernCall(name, args, headers) {
  const res = await post(
    w.mcpUrl,
    { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } },
    { headers: { "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name, ...headers } },
  );
  const text = await res.text();
  const data = (res.headers.get("content-type") ?? "").startsWith("text/event-stream")
    ? text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6))).find((m) => m.id === 1)
    : JSON.parse(text);
  assert.ok(data?.result, `${name}: ${text}`);
  return data.result;
}

/** The JSON log lines about `tool` written since `from` lines, once `count` of them are there. */
async function linesAbout(tool, from, count = 1) {
  const about = () => logs.slice(from).filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).filter((l) => l.tool === tool);
  // Log lines reach the test through workerd's stdout, a little after the response.
  for (let i = 0; i < 200 && about().length < count; i++) await sleep(50);
  return about();
}

describe("one structured log line per call", () => {
  test("2026-07-28: user, tool, outcome and ms, never the arguments", async () => {
    const from = logs.length;
    const r = await modernCall("get_employee", { name: "Frank Davis" }, auth("alice", ["hr-read"]));
    assert.equal(r.structuredContent.status, "success", JSON.stringify(r));
    const mine = await linesAbout("hr::get-employee", from);
    assert.equal(mine.length, 1, JSON.stringify(mine));
    const [line] = mine;
    assert.equal(line.user, ids.alice);
    assert.equal(line.outcome, "ok");
    assert.equal(line.era, MODERN);
    assert.equal(typeof line.ms, "number");
    assert.ok(!logs.slice(from).join("\n").includes("Frank Davis"), "no argument value is logged");
  });

  test("2026-07-28: a call the caller's roles refuse is logged too, with its outcome", async () => {
    const from = logs.length;
    const r = await modernCall("list_employees", { department: "Engineering" }, auth("nina", []));
    assert.equal(r.structuredContent.code, "INSUFFICIENT_PERMISSIONS", JSON.stringify(r));
    const mine = await linesAbout("hr::list-employees", from);
    assert.equal(mine.length, 1, JSON.stringify(logs.slice(from)));
    assert.equal(mine[0].user, ids.nina);
    assert.notEqual(mine[0].outcome, "ok");
    assert.equal(typeof mine[0].ms, "number");
  });

  test("a confirmed write logs the asking call and, when approved, the write itself", async () => {
    const from = logs.length;
    const salary = 123457;
    const asked = await modernCall("update_salary", { employee_id: ids.frank, new_salary: salary, reason: "log test" }, auth("alice", ["hr-read", "hr-write"]));
    assert.equal(asked.structuredContent.status, "pending_confirmation", JSON.stringify(asked));
    const id = asked.structuredContent.confirmationId;
    const decided = await fetch(new URL(`/api/confirm/${id}`, w.url), { method: "POST", headers: { "content-type": "application/json", ...auth("alice", ["hr-read", "hr-write"]) }, body: JSON.stringify({ approved: true }) });
    assert.equal(decided.status, 200, await decided.clone().text());
    assert.equal((await decided.json()).status, "success");
    const mine = await linesAbout("hr::update-salary", from, 2);
    assert.equal(mine.length, 2, JSON.stringify(logs.slice(from)));
    for (const line of mine) {
      assert.equal(line.user, ids.alice);
      assert.equal(line.outcome, "ok");
      assert.equal(typeof line.ms, "number");
    }
    assert.equal(mine[1].confirmation, id, "the write's line names its confirmation");
    const written = logs.slice(from).join("\n");
    assert.ok(!written.includes(String(salary)) && !written.includes("log test"), "no argument value is logged");
  });
});

describe("chat", () => {
  test("each tool call of a chat turn has its line too, marked via chat", async () => {
    model.on(/Frank's phone/, [call("get_employee", { name: "Frank Davis" }), "Here it is."]);
    const headers = auth("alice", ["hr-read"]);
    const created = await fetch(new URL("/sessions", w.url), { method: "POST", headers });
    assert.equal(created.status, 201, await created.clone().text());
    const { session_id: id } = await created.json();
    const from = logs.length;
    const res = await fetch(new URL(`/sessions/${id}/chat`, w.url), { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream", ...headers }, body: JSON.stringify({ message: "What is Frank's phone number?" }) });
    assert.equal(res.status, 200, await res.clone().text());
    const events = (await readSse(res)).filter((e) => e.event);
    assert.ok(events.some((e) => e.event === "tool_result"), JSON.stringify(events));
    const mine = await linesAbout("hr::get-employee", from);
    assert.equal(mine.length, 1, JSON.stringify(logs.slice(from)));
    assert.deepEqual([mine[0].user, mine[0].outcome, mine[0].via, typeof mine[0].ms], [ids.alice, "ok", "chat", "number"]);
    assert.ok(!logs.slice(from).join("\n").includes("Frank Davis"), "no argument value is logged");
  });
});
