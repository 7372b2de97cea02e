// The 2026-07-28 (stateless) lane of /mcp beside the 2025 session lane: era detection, every header
// and version rule, server/discover, tools/list cache hints and order, resultType, no session ids,
// GET/DELETE 405; write confirmations through input_required with a sealed, single-use requestState
// (tampering, replay, expiry, another caller, other arguments); a retried write runs once; a 2025
// client and a 2026 client on the same server at the same time; paused chain steps asked of the
// client's model through input_required; anonymous callers' state bound to their address; each
// chain or workflow run in a Durable Object of its own, addressed by execution id by its caller only,
// at most 5 open workflow runs per user over their run objects; run events on the session named in
// _meta; closing a run call's stream cancels the run.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { tripVars } from "./support/samples.js";
import { ACCEPT_BOTH, LATEST, initialize, post, rpc, sseEvents } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";
import { createServer } from "node:http";

const MODERN = "2026-07-28";
const SECRET = "stateless-secret";
const HR_WRITE = ["hr-read", "hr-write"];
let w, db, aud;
const ids = {};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET, REQUEST_STATE_TTL_SECONDS: "3" }, { quiet: true });
  db = await w.mf.getD1Database("DB");
  aud = new URL("/mcp", w.url).href;
  for (const [key, first, last] of [["alice", "Alice", "Chen"], ["helen", "Helen", "Brooks"], ["sarah", "Sarah", "Kim"], ["nina", "Nina", "Patel"]]) {
    ids[key] = (await db.prepare("SELECT id FROM hr_employees WHERE first_name = ?1 AND last_name = ?2").bind(first, last).first()).id;
  }
});
after(() => w?.stop());

const token = (who, roles) => hs256({ sub: ids[who], roles, aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET);
const auth = (who, roles) => ({ authorization: `Bearer ${token(who, roles)}` });
const salaryOf = async (who) => (await db.prepare("SELECT salary_cents FROM hr_employees WHERE id = ?1").bind(ids[who]).first()).salary_cents;
const meta = (capabilities = {}, extra = {}) => ({ "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": capabilities, ...extra });

let n = 1;
/**
 * Sends a modern request with conformant headers unless `headers` overrides them (undefined drops
 * one). Returns { res, body } with the JSON-RPC message (the final one of an SSE reply).
 */
async function modern(method, params = {}, { headers = {}, capabilities, metaExtra } = {}) {
  const id = n++;
  const p = { ...params, _meta: params._meta ?? meta(capabilities, metaExtra) };
  const name = p.name ?? p.uri;
  const h = { "mcp-protocol-version": MODERN, "mcp-method": method, ...(name !== undefined ? { "mcp-name": name } : {}), ...headers };
  const res = await post(w.mcpUrl, { jsonrpc: "2.0", id, method, params: p }, { headers: h });
  const type = res.headers.get("content-type") ?? "";
  let body;
  if (type.startsWith("text/event-stream")) {
    const text = await res.text();
    const messages = text.split("\n\n").map((b) => b.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")).filter(Boolean).map((d) => JSON.parse(d));
    body = messages.find((m) => m.id === id);
    body.notifications = messages.filter((m) => m.method);
  } else {
    body = await res.json();
  }
  return { res, body };
}

describe("era detection", () => {
  test("initialize opens a 2025 session; a request with 2026 _meta is served without one", async () => {
    const { session } = await initialize(w.mcpUrl);
    assert.match(session, /^[0-9a-f]{64}$/);
    const { res, body } = await modern("tools/list");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("mcp-session-id"), null, "no session id is minted");
    assert.ok(body.result.tools.length > 0);
    assert.equal(body.result.resultType, "complete");
  });

  test("a request carrying Mcp-Session-Id and a 2025 version belongs to its 2025 session; with the 2026 version the header is ignored", async () => {
    const { res, body } = await modern("tools/list", {}, { headers: { "mcp-session-id": "f".repeat(64), "mcp-protocol-version": LATEST } });
    assert.equal(res.status, 404, "an unknown session, as in the 2025 lane");
    assert.equal(body.error.code, -32001);
    const modernHeader = await modern("tools/list", {}, { headers: { "mcp-session-id": "f".repeat(64) } });
    assert.equal(modernHeader.res.status, 200, "2026-07-28 has no sessions: the id is ignored");
    assert.equal(modernHeader.res.headers.get("mcp-session-id"), null, "and never echoed");
  });

  test("initialize with 2026 _meta is a modern request, and 2026 has no initialize", async () => {
    const { res, body } = await modern("initialize", { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "t", version: "1" } });
    assert.equal(res.status, 404);
    assert.equal(body.error.code, -32601);
    assert.equal(res.headers.get("mcp-session-id"), null);
  });

  test("without a session, a 2025 request still needs initialize; a modern version header makes it modern", async () => {
    const legacy = await post(w.mcpUrl, { jsonrpc: "2.0", id: 1, method: "tools/list" }, { version: LATEST });
    assert.equal(legacy.status, 400);
    assert.match((await legacy.json()).error.message, /Mcp-Session-Id/);
    const bare = await post(w.mcpUrl, { jsonrpc: "2.0", id: 1, method: "tools/list" }, { headers: { "mcp-protocol-version": MODERN, "mcp-method": "tools/list" } });
    assert.equal(bare.status, 400);
    assert.equal((await bare.json()).error.code, -32602, "modern, and missing its _meta");
  });

  test("GET and DELETE of a 2026 client are 405; a 2025 session's GET and DELETE still work", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(w.mcpUrl, { method, headers: { accept: "text/event-stream", "mcp-protocol-version": MODERN } });
      assert.equal(res.status, 405, method);
      assert.match(res.headers.get("allow"), /POST/);
    }
    const { session } = await initialize(w.mcpUrl);
    const del = await fetch(w.mcpUrl, { method: "DELETE", headers: { "mcp-session-id": session, "mcp-protocol-version": LATEST } });
    assert.equal(del.status, 204);
  });
});

describe("headers and versions", () => {
  test("Mcp-Method must be present and equal the body's method", async () => {
    for (const headers of [{ "mcp-method": undefined }, { "mcp-method": "tools/call" }, { "mcp-method": "Tools/List" }]) {
      const { res, body } = await modern("tools/list", {}, { headers });
      assert.equal(res.status, 400, JSON.stringify(headers));
      assert.equal(body.error.code, -32020);
      assert.equal(body.id, n - 1, "the error carries the request id");
    }
    const { res } = await modern("tools/list", {}, { headers: { "mcp-method": "  tools/list  " } });
    assert.equal(res.status, 200, "whitespace around a header value is not part of it");
  });

  test("Mcp-Name must be present for tools/call and equal params.name, base64 sentinel decoded", async () => {
    const call = (headers) => modern("tools/call", { name: "list_instruction_sets", arguments: {} }, { headers });
    for (const headers of [{ "mcp-name": undefined }, { "mcp-name": "get_instruction_set" }, { "mcp-name": "=?base64?!!!?=" }]) {
      const { res, body } = await call(headers);
      assert.equal(res.status, 400, JSON.stringify(headers));
      assert.equal(body.error.code, -32020);
    }
    const encoded = `=?base64?${Buffer.from("list_instruction_sets").toString("base64")}?=`;
    const { res, body } = await call({ "mcp-name": encoded });
    assert.equal(res.status, 200);
    assert.equal(body.result.resultType, "complete");
    assert.equal(body.result.isError, undefined, JSON.stringify(body.result));
  });

  test("MCP-Protocol-Version must be present and equal _meta's version", async () => {
    for (const headers of [{ "mcp-protocol-version": undefined }, { "mcp-protocol-version": "2025-11-25" }]) {
      const { res, body } = await modern("server/discover", { _meta: meta() }, { headers });
      assert.equal(res.status, 400, JSON.stringify(headers));
      assert.equal(body.error.code, -32020);
    }
  });

  test("an unsupported version is 400 -32022 listing the supported versions and echoing the requested one", async () => {
    const { res, body } = await modern("server/discover", { _meta: { ...meta(), "io.modelcontextprotocol/protocolVersion": "1900-01-01" } }, { headers: { "mcp-protocol-version": "1900-01-01" } });
    assert.equal(res.status, 400);
    assert.equal(body.error.code, -32022);
    assert.deepEqual(body.error.data.supported, ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]);
    assert.equal(body.error.data.requested, "1900-01-01");
  });

  test("_meta needs its version and the client capabilities; clientInfo is optional", async () => {
    for (const m of [{ "io.modelcontextprotocol/clientCapabilities": {} }, { "io.modelcontextprotocol/protocolVersion": MODERN }]) {
      const { res, body } = await modern("server/discover", { _meta: m });
      assert.equal(res.status, 400);
      assert.equal(body.error.code, -32602);
    }
    const { res } = await modern("server/discover", { _meta: meta() });
    assert.equal(res.status, 200);
  });

  test("unknown and removed methods are 404 -32601", async () => {
    for (const method of ["ping", "logging/setLevel", "resources/subscribe", "nope/nothing", "prompts/list"]) {
      const { res, body } = await modern(method);
      assert.equal(res.status, 404, method);
      assert.equal(body.error.code, -32601);
    }
  });

  test("a client may not POST a response; notifications are accepted with 202", async () => {
    const resp = await post(w.mcpUrl, { jsonrpc: "2.0", id: 5, result: {} }, { headers: { "mcp-protocol-version": MODERN } });
    assert.equal(resp.status, 400);
    assert.equal((await resp.json()).error.code, -32600);
    const note = await post(w.mcpUrl, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } }, { headers: { "mcp-protocol-version": MODERN, "mcp-method": "notifications/cancelled" } });
    assert.equal(note.status, 202);
  });
});

describe("stateless methods", () => {
  test("server/discover names the versions, capabilities and server", async () => {
    const { body } = await modern("server/discover");
    const r = body.result;
    assert.equal(r.resultType, "complete");
    assert.ok(r.supportedVersions.includes(MODERN) && r.supportedVersions.includes(LATEST));
    assert.deepEqual(r.capabilities.tools, {});
    assert.equal(r.capabilities.prompts, undefined, "the production catalog serves no prompts");
    assert.equal(r._meta["io.modelcontextprotocol/serverInfo"].name, "mcp-edge");
    assert.ok(Number.isInteger(r.ttlMs) && ["public", "private"].includes(r.cacheScope));
  });

  test("tools/list: deterministic name order, cache hints, the caller's tools only", async () => {
    const a = (await modern("tools/list")).body.result;
    const b = (await modern("tools/list")).body.result;
    const names = a.tools.map((t) => t.name);
    assert.deepEqual(names, b.tools.map((t) => t.name));
    assert.deepEqual(names, [...names].sort());
    assert.ok(Number.isInteger(a.ttlMs) && a.ttlMs >= 0);
    assert.equal(a.cacheScope, "private");
    assert.ok(!names.includes("update_salary"), "anonymous callers see no HR writes");
    const alice = (await modern("tools/list", {}, { headers: auth("alice", HR_WRITE) })).body.result.tools.map((t) => t.name);
    assert.ok(alice.includes("update_salary"));
  });

  test("tools/call runs a stateless tool; an anonymous caller is offered and runs the tools that keep state too (issue 19 item 4, tests/anonymous.test.js)", async () => {
    const { body } = await modern("tools/call", { name: "get_instruction_set", arguments: { name: "vendor-search" } });
    assert.equal(body.result.resultType, "complete");
    assert.equal(body.result.isError, undefined, JSON.stringify(body.result));
    const mode = (await modern("tools/call", { name: "get_mode_indicator", arguments: {} })).body;
    assert.equal(mode.result.isError, undefined, JSON.stringify(mode));
    const listed = (await modern("tools/list")).body.result.tools.map((t) => t.name);
    assert.ok(listed.includes("execute_chain") && listed.includes("switch_mode"), "the tools that keep runs or a mode are listed");
    assert.ok(listed.includes("create_chain") && listed.includes("get_instruction_set"));
    const unknown = (await modern("tools/call", { name: "no_such_tool", arguments: {} })).body;
    assert.equal(unknown.error.code, -32602);
  });

});

describe("chain runs of 2026 callers", () => {
  const as = (who, name, args) => modern("tools/call", { name, arguments: args }, { headers: auth(who, HR_WRITE) }).then((r) => r.body);
  const text = (r) => r.result.content.map((c) => c.text).join("\n");
  const step = (id, name, extra = {}) => ({ id, name, type: "data_transformation", input_variables: [], output_variables: [], ...extra });

  test("a run is addressed by its execution id from later requests of the same caller only; a paused step resumes", async () => {
    const created = await as("alice", "create_chain", { chain_definition: {
      name: "stateless-approval", title: "Approval", category: "custom",
      steps: [
        step(1, "prepare", { input_template: "{name|upper}", output_variables: ["shout"] }),
        step(2, "decide", { type: "instruction_set", instruction_set: "client-communication", input_template: "Approve {shout}?", output_variables: ["status"] }),
        step(3, "finish", { input_template: "{shout}:{status}", output_variables: ["result"] }),
      ],
      input_schema: { type: "object", properties: { name: { type: "string", required: true } } },
    }, creation_options: { overwrite_existing: true } });
    assert.equal(created.result.isError, undefined, JSON.stringify(created));
    const listed = (await modern("tools/list", {}, { headers: auth("alice", HR_WRITE) })).body.result.tools.map((t) => t.name);
    assert.ok(listed.includes("execute_chain") && listed.includes("resume_chain"));
    const run = await as("alice", "execute_chain", { chain_name: "stateless-approval", variables: { name: "Ada" } });
    assert.equal(run.result.resultType, "complete");
    assert.match(text(run), /paused/);
    const id = text(run).match(/exec-[0-9a-f]{32}/)[0];
    const status = await as("alice", "get_chain_status", { execution_id: id });
    assert.equal(status.result.structuredContent.status, "awaiting_input", JSON.stringify(status));
    const foreign = await as("helen", "get_chain_status", { execution_id: id });
    assert.equal(foreign.result.isError, true, "another caller cannot see the run");
    const done = await as("alice", "resume_chain", { execution_id: id, outputs: { status: "approved" } });
    assert.match(text(done), /completed successfully[\s\S]*ADA:approved/);
    assert.equal(done.result.resultType, "complete");
  });

  const runObject = async (id) => (await db.prepare("SELECT r.session, r.user FROM chain_executions e JOIN run_objects r ON r.session = e.owner WHERE e.id = ?1").bind(id).first());
  const start = async (who, name) => {
    const run = await as(who, "execute_chain", { chain_name: "stateless-approval", variables: { name } });
    assert.match(text(run), /awaiting_input/, JSON.stringify(run));
    return text(run).match(/exec-[0-9a-f]{32}/)[0];
  };

  test("each run lives in a Durable Object of its own: cancelling one run of a caller leaves their other run paused", async () => {
    const [a, b] = [await start("alice", "Ann"), await start("alice", "Bea")];
    const [oa, ob] = [await runObject(a), await runObject(b)];
    assert.ok(oa && ob, "both runs are recorded in run objects");
    assert.notEqual(oa.session, ob.session, "two runs, two objects");
    assert.match(oa.session, /^[0-9a-f]{64}$/);
    assert.equal(oa.user, ids.alice, "the object belongs to the caller");
    const cancelled = await as("alice", "cancel_chain", { execution_id: a, reason: "not needed" });
    assert.equal(cancelled.result.isError, undefined, JSON.stringify(cancelled));
    assert.equal((await as("alice", "get_chain_status", { execution_id: a })).result.structuredContent.status, "cancelled");
    assert.equal((await as("alice", "get_chain_status", { execution_id: b })).result.structuredContent.status, "awaiting_input", "the other run is untouched");
    const done = await as("alice", "resume_chain", { execution_id: b, outputs: { status: "ok" } });
    assert.match(text(done), /BEA:ok/);
    const again = await as("alice", "resume_chain", { execution_id: a, outputs: { status: "ok" } });
    assert.equal(again.result.isError, true, "a cancelled run stays cancelled");
  });

  test("a workflow run is a run object too: continued with its session_id by its caller only", async () => {
    const review = { workflow_uri: "workflow://code-review", initial_variables: { technology: "Rust", code_reference: "PR 7" } };
    const started = await as("alice", "execute_workflow", review);
    assert.equal(started.result.structuredContent.success, true, JSON.stringify(started));
    const id = started.result.structuredContent.result.session_id;
    assert.equal((await runObject(id)).user, ids.alice);
    const foreign = await as("helen", "execute_workflow", { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { change_summary: "x" } });
    assert.equal(foreign.result.isError, true);
    assert.match(text(foreign), /not found in this session/);
    const shown = await as("alice", "execute_workflow", { workflow_uri: review.workflow_uri, session_id: id });
    assert.equal(shown.result.structuredContent.result.status, "awaiting_input", JSON.stringify(shown));
    const cancelled = await as("alice", "cancel_chain", { execution_id: id });
    assert.equal(cancelled.result.isError, undefined, JSON.stringify(cancelled));
  });

  test("a signed-in caller has at most 5 workflow runs open over all their run objects: the sixth is refused with guidance, a cancelled one makes room", async () => {
    const review = { workflow_uri: "workflow://code-review", initial_variables: { technology: "Go", code_reference: "PR 9" } };
    const workflow = async (who, args = review) => (await as(who, "execute_workflow", args)).result.structuredContent;
    const open = [];
    for (let i = 0; i < 5; i++) {
      const s = await workflow("sarah");
      assert.equal(s.result?.status, "awaiting_input", JSON.stringify(s));
      open.push(s.result.session_id);
    }
    const objects = await Promise.all(open.map(runObject));
    assert.equal(new Set(objects.map((o) => o.session)).size, 5, "five runs, five run objects: the limit is the user's, not an object's");
    assert.ok(objects.every((o) => o.user === ids.sarah));

    const refused = await workflow("sarah");
    assert.equal(refused.success, false);
    assert.equal(refused.error.code, "TOO_MANY_OPEN_WORKFLOWS");
    assert.match(refused.error.message, new RegExp(`You have 5 workflows open \\(at most 5 per caller[^)]*\\): ${open.join(", ")}\\.$`));
    assert.match(refused.error.fix.instruction, /Paused runs count until they end/);
    assert.deepEqual(refused.next_actions.map((a) => [a.tool, a.parameters.execution_id]), [["cancel_chain", open[0]], ["get_chain_status", open[0]]], "the oldest run, reachable from any 2026 request of the caller");
    assert.equal(await db.prepare("SELECT COUNT(*) AS n FROM chain_executions WHERE id NOT IN (SELECT value FROM json_each(?1)) AND owner IN (SELECT session FROM run_objects WHERE user = ?2)").bind(JSON.stringify(open), ids.sarah).first("n"), 0, "the refused call started nothing");
    const other = await workflow("nina");
    assert.equal(other.result?.status, "awaiting_input", "another user has slots of their own");

    const cancelled = await as("sarah", refused.next_actions[0].tool, refused.next_actions[0].parameters);
    assert.equal(cancelled.result.isError, undefined, JSON.stringify(cancelled));
    const sixth = await workflow("sarah");
    assert.equal(sixth.result?.status, "awaiting_input", JSON.stringify(sixth));
    assert.equal((await workflow("sarah")).error?.code, "TOO_MANY_OPEN_WORKFLOWS", "the new run holds the freed slot");
    for (const [who, id] of [...open.slice(1), sixth.result.session_id].map((id) => ["sarah", id]).concat([["nina", other.result.session_id]])) {
      assert.equal((await as(who, "cancel_chain", { execution_id: id })).result.isError, undefined);
    }
  });

  test("another caller's read, resume and cancel of a run get the answer of an unknown execution, and change nothing", async () => {
    const id = await start("alice", "Cal");
    const unknown = "exec-" + "0".repeat(32);
    for (const [tool, args] of [["get_chain_status", {}], ["resume_chain", { outputs: { status: "x" } }], ["cancel_chain", {}]]) {
      const foreign = await as("helen", tool, { execution_id: id, ...args });
      const none = await as("helen", tool, { execution_id: unknown, ...args });
      assert.equal(foreign.result.isError, true, tool);
      assert.equal(text(foreign), text(none).replaceAll(unknown, id), `${tool}: no difference between another caller's run and none`);
    }
    assert.equal((await as("alice", "get_chain_status", { execution_id: id })).result.structuredContent.status, "awaiting_input");
    const done = await as("alice", "resume_chain", { execution_id: id, outputs: { status: "fine" } });
    assert.match(text(done), /CAL:fine/);
  });
});

describe("paused chain steps through input_required", () => {
  const as = (who, name, args, extra = {}) => modern("tools/call", { name, arguments: args, ...extra }, { headers: auth(who, HR_WRITE), capabilities: { sampling: {} } }).then((r) => r.body);
  const text = (r) => r.result.content.map((c) => c.text).join("\n");
  const step = (id, name, extra = {}) => ({ id, name, type: "data_transformation", input_variables: [], output_variables: [], ...extra });
  const answer = (obj) => ({ role: "assistant", model: "test", content: { type: "text", text: JSON.stringify(obj) } });
  before(async () => {
    const created = await as("sarah", "create_chain", { chain_definition: {
      name: "stateless-sampling", title: "Sampling", category: "custom",
      steps: [
        step(1, "prepare", { input_template: "{name|upper}", output_variables: ["shout"] }),
        step(2, "decide", { type: "instruction_set", instruction_set: "client-communication", input_template: "Approve {shout}?", output_variables: ["status"] }),
        step(3, "finish", { input_template: "{shout}:{status}", output_variables: ["result"] }),
      ],
      input_schema: { type: "object", properties: { name: { type: "string", required: true } } },
    }, creation_options: { overwrite_existing: true } });
    assert.equal(created.result.isError, undefined, JSON.stringify(created));
  });

  test("with sampling declared, a step that needs a model is asked of the client's model; the retry continues the run", async () => {
    const args = { chain_name: "stateless-sampling", variables: { name: "Ada" } };
    const first = await as("sarah", "execute_chain", args);
    assert.equal(first.result.resultType, "input_required", JSON.stringify(first));
    const [key, ask] = Object.entries(first.result.inputRequests)[0];
    assert.equal(ask.method, "sampling/createMessage");
    assert.match(ask.params.messages[0].content.text, /Approve ADA\?/);
    assert.match(ask.params.systemPrompt, /status/);
    const done = await as("sarah", "execute_chain", args, { inputResponses: { [key]: answer({ status: "approved" }) }, requestState: first.result.requestState });
    assert.equal(done.result.resultType, "complete", JSON.stringify(done));
    assert.match(text(done), /completed successfully[\s\S]*ADA:approved/);
    const id = text(done).match(/exec-[0-9a-f]{32}/)[0];
    const status = await as("sarah", "get_chain_status", { execution_id: id });
    assert.equal(status.result.structuredContent.status, "completed");
    const replay = await as("sarah", "execute_chain", args, { inputResponses: { [key]: answer({ status: "rejected" }) }, requestState: first.result.requestState });
    assert.equal(replay.error.code, -32602, "a state works once");
    assert.match(replay.error.message, /already used/);
  });

  test("a changed, foreign or mismatched state, or an answer without the outputs, is refused and the run stays paused", async () => {
    const args = { chain_name: "stateless-sampling", variables: { name: "Bo" } };
    const first = await as("sarah", "execute_chain", args);
    const state = first.result.requestState;
    const [key] = Object.keys(first.result.inputRequests);
    const good = { [key]: answer({ status: "ok" }) };
    const [body, tag] = state.split(".");
    const tampered = await as("sarah", "execute_chain", args, { inputResponses: good, requestState: `${body}x.${tag}` });
    assert.match(tampered.error.message, /integrity check failed/);
    const foreign = await modern("tools/call", { name: "execute_chain", arguments: args, inputResponses: good, requestState: state }, { headers: auth("helen", HR_WRITE), capabilities: { sampling: {} } });
    assert.match(foreign.body.error.message, /another caller/);
    const other = await as("sarah", "execute_chain", { ...args, variables: { name: "Cy" } }, { inputResponses: good, requestState: state });
    assert.match(other.error.message, /another request/);
    const lacking = await as("sarah", "execute_chain", args, { inputResponses: { [key]: answer({ verdict: "ok" }) }, requestState: state });
    assert.match(lacking.error.message, /lacks the output "status"/);
    const done = await as("sarah", "execute_chain", args, { inputResponses: good, requestState: state });
    assert.match(text(done), /BO:ok/, "the refusals above did not spend the state");
  });

  test("without sampling declared the run pauses in awaiting_input for resume_chain, as before", async () => {
    const r = await modern("tools/call", { name: "execute_chain", arguments: { chain_name: "stateless-sampling", variables: { name: "Di" } } }, { headers: auth("sarah", HR_WRITE) });
    assert.equal(r.body.result.resultType, "complete");
    assert.match(text(r.body), /awaiting_input/);
  });
});

describe("write confirmation through input_required", () => {
  const ELICIT = { elicitation: {} };
  const args = (salary) => ({ employee_id: ids.sarah, new_salary: salary, reason: "stateless test" });
  const ask = (who, salary, extra = {}) => modern("tools/call", { name: "update_salary", arguments: args(salary), ...extra }, { headers: auth(who, HR_WRITE), capabilities: ELICIT });
  const approve = (first) => Object.fromEntries(Object.keys(first.inputRequests).map((k) => [k, { action: "accept", content: { approve: true } }]));

  test("the first round asks, changes nothing; the answered retry writes once; the state cannot be replayed", async () => {
    const before = await salaryOf("sarah");
    const first = (await ask("alice", 130000)).body.result;
    assert.equal(first.resultType, "input_required");
    const [key] = Object.keys(first.inputRequests);
    assert.equal(first.inputRequests[key].method, "elicitation/create");
    assert.match(first.inputRequests[key].params.message, /Sarah Kim/);
    assert.equal(typeof first.requestState, "string");
    assert.equal(await salaryOf("sarah"), before, "nothing changes before the answer");
    const second = (await ask("alice", 130000, { inputResponses: approve(first), requestState: first.requestState })).body.result;
    assert.equal(second.resultType, "complete");
    assert.equal(second.structuredContent.status, "success", JSON.stringify(second));
    assert.equal(await salaryOf("sarah"), 13000000);
    const retried = (await ask("alice", 130000, { inputResponses: approve(first), requestState: first.requestState })).body.result;
    assert.equal(retried._meta["mcp-edge/idempotentReplay"], true, "the retry gets the first run's result");
    assert.equal(retried.structuredContent.status, "success");
    await db.prepare("DELETE FROM idempotent_calls").run();
    const replay = (await ask("alice", 130000, { inputResponses: approve(first), requestState: first.requestState })).body;
    assert.equal(replay.error.code, -32602);
    assert.match(replay.error.message, /already used/);
    const executed = (await db.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE tool = 'update_salary' AND event = 'executed' AND user_id = ?1").bind(ids.alice).first()).n;
    assert.equal(executed, 1, "one execution in all");
  });

  test("a changed state, another caller, other arguments or a late answer are rejected", async () => {
    const before = await salaryOf("sarah");
    const first = (await ask("alice", 140000)).body.result;
    const responses = approve(first);
    const [body, tag] = first.requestState.split(".");
    const flipped = `${body}.${tag.slice(0, -2)}${tag.endsWith("AA") ? "AB" : "AA"}`;
    const tampered = (await ask("alice", 140000, { inputResponses: responses, requestState: flipped })).body;
    assert.equal(tampered.error.code, -32602);
    assert.match(tampered.error.message, /integrity/);
    const other = (await ask("helen", 140000, { inputResponses: responses, requestState: first.requestState })).body;
    assert.match(other.error.message, /another caller/);
    const otherArgs = (await ask("alice", 999999, { inputResponses: responses, requestState: first.requestState })).body;
    assert.match(otherArgs.error.message, /another request/);
    const late = (await ask("alice", 150000)).body.result;
    await sleep(3200);
    const expired = (await ask("alice", 150000, { inputResponses: approve(late), requestState: late.requestState })).body;
    assert.match(expired.error.message, /expired/);
    assert.equal(await salaryOf("sarah"), before, "none of them wrote");
  });

  test("a declined form writes nothing; answers under keys nobody asked are ignored", async () => {
    const before = await salaryOf("sarah");
    const unasked = (await ask("alice", 160000, { inputResponses: { unrelated: { action: "accept", content: { approve: true } } } })).body.result;
    assert.equal(unasked.resultType, "input_required", "the form's question is still open");
    const declined = (await ask("alice", 160000, {
      inputResponses: Object.fromEntries(Object.keys(unasked.inputRequests).map((k) => [k, { action: "decline" }])),
      requestState: unasked.requestState,
    })).body.result;
    assert.equal(declined.resultType, "complete");
    assert.equal(declined.structuredContent.data.approved, false, JSON.stringify(declined));
    assert.equal(await salaryOf("sarah"), before);
  });

  test("without the elicitation capability a write answers pending_confirmation, as in 2025", async () => {
    const r = (await modern("tools/call", { name: "update_salary", arguments: args(170000) }, { headers: auth("alice", HR_WRITE) })).body.result;
    assert.equal(r.resultType, "complete");
    assert.equal(r.structuredContent.status, "pending_confirmation");
  });

  test("malformed inputResponses and requestState are invalid params", async () => {
    for (const extra of [{ inputResponses: 12345 }, { inputResponses: null }, { inputResponses: { x: 1 } }, { requestState: 7 }, { requestState: "garbage" }]) {
      const { body } = await ask("alice", 180000, extra);
      assert.equal(body.error?.code, -32602, JSON.stringify(extra));
    }
  });
});

describe("idempotent writes", () => {
  test("a retried write (same idempotency key) runs once; a new key runs again; a pending confirmation is not replayed", async () => {
    const approveFirst = { elicitation: {} };
    const call = (key, extra = {}) => modern("tools/call", { name: "update_salary", arguments: { employee_id: ids.nina, new_salary: 99000 }, ...extra }, { headers: auth("alice", HR_WRITE), capabilities: approveFirst, metaExtra: { "mcp-edge/idempotencyKey": key } });
    const asked = (await call("k-1")).body.result;
    const answered = { inputResponses: Object.fromEntries(Object.keys(asked.inputRequests).map((k) => [k, { action: "accept", content: { approve: true } }])), requestState: asked.requestState };
    const [a, b] = [(await call("k-1", answered)).body.result, (await call("k-1", answered)).body.result];
    assert.equal(a.structuredContent.status, "success", JSON.stringify(a));
    assert.deepEqual(b.structuredContent, a.structuredContent, "the retry returns the first result");
    assert.equal(b._meta["mcp-edge/idempotentReplay"], true);
    const plain = (key) => modern("tools/call", { name: "update_salary", arguments: { employee_id: ids.nina, new_salary: 98000 } }, { headers: auth("alice", HR_WRITE), metaExtra: { "mcp-edge/idempotencyKey": key } });
    const [c, d] = [(await plain("k-2")).body.result, (await plain("k-2")).body.result];
    assert.equal(c.structuredContent.status, "pending_confirmation");
    assert.equal(d._meta?.["mcp-edge/idempotentReplay"], undefined, "nothing happened yet: the retry asks again");
    assert.notEqual(d.structuredContent.confirmationId, c.structuredContent.confirmationId);
  });

  test("a process_template call writes only with include_metadata, and only then is deduplicated", async () => {
    const render = (key, options) => modern("tools/call", { name: "process_template", arguments: { template_name: "trip-confirmation-comprehensive", variables: tripVars, processing_options: options } }, { metaExtra: { "mcp-edge/idempotencyKey": key } });
    const keys = async () => (await db.prepare("SELECT COUNT(*) AS n FROM idempotent_calls").first()).n;
    const before = await keys();
    const [a, b] = [(await render("t-1", { use_cache: false })).body.result, (await render("t-1", { use_cache: false })).body.result];
    assert.equal(a.isError, undefined, JSON.stringify(a));
    assert.equal(b._meta?.["mcp-edge/idempotentReplay"], undefined, "a render changes nothing: its retry renders again");
    assert.equal(await keys(), before, "no idempotency key is claimed for a call that cannot write");
    const [c, d] = [(await render("t-2", { include_metadata: true })).body.result, (await render("t-2", { include_metadata: true })).body.result];
    assert.equal(c.isError, undefined, JSON.stringify(c));
    assert.equal(d._meta["mcp-edge/idempotentReplay"], true, "recording the processing is a write: the retry gets the first result");
  });

  test("read-only tools are not deduplicated", async () => {
    const r = (await modern("tools/call", { name: "get_instruction_set", arguments: { name: "vendor-search" } })).body.result;
    assert.equal(r._meta?.["mcp-edge/idempotentReplay"], undefined);
  });
});

describe("events of stateless calls", () => {
  const watch = (id, headers = {}) => fetch(new URL(`/sessions/${id}/events`, w.url), { headers: { accept: "text/event-stream", ...headers } });
  const EVENTS = "mcp-edge/eventsSession";

  test("a call naming a session in _meta shows its tool events on that session's stream", async () => {
    // A session of a signed-in user: an anonymous one takes no relayed events (security_session.test.js).
    const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "t", version: "1" } } }, { headers: auth("alice", HR_WRITE) });
    const session = init.headers.get("mcp-session-id");
    const res = await watch(session, auth("alice", HR_WRITE));
    assert.equal(res.status, 200);
    const it = sseEvents(res, { timeoutMs: 5000 });
    const { body } = await modern("tools/call", { name: "get_instruction_set", arguments: { name: "vendor-search" } }, { headers: auth("alice", HR_WRITE), metaExtra: { [EVENTS]: session } });
    assert.equal(body.result.resultType, "complete");
    const seen = [];
    while (seen.length < 2) {
      const ev = await it.next();
      if (!ev) break;
      if (ev.event === "tool_call" || ev.event === "tool_result") seen.push({ event: ev.event, data: JSON.parse(ev.data) });
    }
    it.close();
    assert.deepEqual(seen.map((e) => e.event), ["tool_call", "tool_result"]);
    assert.equal(seen[0].data.tool, "get_instruction_set");
  });

  test("another user's session, an unknown session or a malformed id are refused before the tool runs", async () => {
    const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "t", version: "1" } } }, { headers: auth("alice", HR_WRITE) });
    const alices = init.headers.get("mcp-session-id");
    const call = (id, headers) => modern("tools/call", { name: "get_instruction_set", arguments: { name: "vendor-search" } }, { headers, metaExtra: { [EVENTS]: id } });
    const foreign = (await call(alices, auth("helen", HR_WRITE))).body;
    assert.equal(foreign.error.code, -32602);
    assert.match(foreign.error.message, /another user/);
    const own = (await call(alices, auth("alice", HR_WRITE))).body;
    assert.equal(own.result.resultType, "complete");
    const unknown = (await call("a".repeat(64))).body;
    assert.match(unknown.error.message, /not found/i);
    assert.equal((await call("nope")).body.error.code, -32602);
  });
});

describe("events of 2026 chain runs", () => {
  const watch = (id, headers = {}) => fetch(new URL(`/sessions/${id}/events`, w.url), { headers: { accept: "text/event-stream", ...headers } });
  const EVENTS = "mcp-edge/eventsSession";
  const as = (who, name, args, metaExtra) => modern("tools/call", { name, arguments: args }, { headers: auth(who, HR_WRITE), metaExtra }).then((r) => r.body);
  const text = (r) => r.result.content.map((c) => c.text).join("\n");
  const step = (id, name, extra = {}) => ({ id, name, type: "data_transformation", input_variables: [], output_variables: [], ...extra });
  let alices;
  before(async () => {
    const created = await as("alice", "create_chain", { chain_definition: {
      name: "stateless-events", title: "Events", category: "custom",
      steps: [
        step(1, "shout", { input_template: "{name|upper}", output_variables: ["shout"] }),
        step(2, "greet", { input_template: "hello {shout}", output_variables: ["greeting"], depends_on: [1] }),
      ],
      input_schema: { type: "object", properties: { name: { type: "string", required: true } } },
    }, creation_options: { overwrite_existing: true } });
    assert.equal(created.result.isError, undefined, JSON.stringify(created));
    const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "t", version: "1" } } }, { headers: auth("alice", HR_WRITE) });
    alices = init.headers.get("mcp-session-id");
  });

  /** The step events (tool_call, tool_result, error) of execution `id` on `it`, until `n` arrived. */
  const stepEvents = async (it, n) => {
    const seen = [];
    while (seen.length < n) {
      const ev = await it.next();
      if (!ev) break;
      if (!["tool_call", "tool_result", "error"].includes(ev.event)) continue;
      const data = JSON.parse(ev.data);
      if (data.execution_id) seen.push({ event: ev.event, step: data.step, tool: data.tool, execution: data.execution_id });
    }
    return seen;
  };

  test("the steps of a run in its own object reach the events session named in _meta, in a synchronous and a background run", async () => {
    const res = await watch(alices, auth("alice", HR_WRITE));
    assert.equal(res.status, 200);
    const it = sseEvents(res, { timeoutMs: 10000 });
    const run = await as("alice", "execute_chain", { chain_name: "stateless-events", variables: { name: "Eve" } }, { [EVENTS]: alices });
    assert.match(text(run), /completed successfully/, JSON.stringify(run));
    const id = text(run).match(/exec-[0-9a-f]{32}/)[0];
    const owner = (await db.prepare("SELECT owner FROM chain_executions WHERE id = ?1").bind(id).first()).owner;
    assert.notEqual(owner, alices, "the run ran in its own object, not in the watched session");
    const sync = await stepEvents(it, 4);
    assert.deepEqual(sync.map((e) => `${e.event}:${e.step}`), ["tool_call:1", "tool_result:1", "tool_call:2", "tool_result:2"]);
    assert.ok(sync.every((e) => e.execution === id && e.tool.startsWith("stateless-events/")));
    const bg = await as("alice", "execute_chain", { chain_name: "stateless-events", variables: { name: "Bo" }, execution_options: { async_execution: true } }, { [EVENTS]: alices });
    const bgId = text(bg).match(/exec-[0-9a-f]{32}/)[0];
    const later = await stepEvents(it, 4);
    it.close();
    assert.deepEqual(later.map((e) => `${e.event}:${e.step}`), ["tool_call:1", "tool_result:1", "tool_call:2", "tool_result:2"]);
    assert.ok(later.every((e) => e.execution === bgId), "the background run's steps, driven by its object's alarm and jobs");
  });

  test("the caller's own object (the assistant's mode) shows a call's events only when the call names a session", async () => {
    const res = await watch(alices, auth("alice", HR_WRITE));
    const it = sseEvents(res, { timeoutMs: 3000 });
    const quiet = await as("alice", "get_mode_indicator", {});
    assert.equal(quiet.result.resultType, "complete", JSON.stringify(quiet));
    const named = await as("alice", "get_mode_indicator", {}, { [EVENTS]: alices });
    assert.equal(named.result.resultType, "complete");
    const seen = [];
    for (let ev = await it.next(); ev; ev = await it.next()) {
      if (ev.event === "tool_call") seen.push(JSON.parse(ev.data).tool);
    }
    it.close();
    assert.deepEqual(seen, ["get_mode_indicator"], "one call named the session, one did not");
  });

  test("a run naming another user's session for its events is refused before it starts", async () => {
    const before = (await db.prepare("SELECT COUNT(*) AS n FROM chain_executions").first()).n;
    const refused = await as("helen", "execute_chain", { chain_name: "stateless-events", variables: { name: "Hal" } }, { [EVENTS]: alices });
    assert.equal(refused.error?.code, -32602, JSON.stringify(refused));
    assert.match(refused.error.message, /another user/);
    assert.equal((await db.prepare("SELECT COUNT(*) AS n FROM chain_executions").first()).n, before, "nothing ran");
  });
});

describe("both eras at once", () => {
  test("a 2025 session and 2026 requests interleave on the same server", async () => {
    const { session } = await initialize(w.mcpUrl);
    const work = [];
    for (let i = 0; i < 4; i++) {
      work.push(rpc(w.mcpUrl, session, "tools/call", { name: "get_instruction_set", arguments: { name: "vendor-search" } }));
      work.push(modern("tools/call", { name: "get_instruction_set", arguments: { name: "vendor-search" } }));
    }
    const out = await Promise.all(work);
    for (let i = 0; i < out.length; i += 2) {
      assert.equal(out[i].status, 200);
      assert.equal(out[i].reply.result.resultType, undefined, "2025 results are unchanged");
      assert.equal(out[i].reply.result.isError, undefined);
      assert.equal(out[i + 1].body.result.resultType, "complete");
      assert.equal(out[i + 1].res.headers.get("mcp-session-id"), null);
    }
    const listed = await rpc(w.mcpUrl, session, "tools/list", {});
    assert.equal(listed.reply.result.ttlMs, undefined, "the 2025 lane answers as before");
  });
});

describe("notifications on the response stream (conformance fixtures)", () => {
  let fx;
  before(async () => {
    fx = await startWorker({ MCP_CATALOG: "conformance", JWT_SECRET: SECRET }, { quiet: true });
  });
  after(() => fx?.stop());

  const call = async (name, m) => {
    const res = await post(fx.mcpUrl, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: {}, _meta: m } }, { headers: { "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name } });
    const type = res.headers.get("content-type");
    if (!type.startsWith("text/event-stream")) return { type, messages: [await res.json()] };
    const text = await res.text();
    const messages = text.split("\n\n").map((b) => b.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")).filter(Boolean).map((d) => JSON.parse(d));
    return { type, messages };
  };

  test("an anonymous caller's requestState is bound to their address: a caller elsewhere cannot redeem it", async () => {
    const sampling = async (ip, extra = {}) => {
      const res = await post(fx.mcpUrl, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "test_sampling", arguments: { prompt: "hi" }, ...extra, _meta: meta({ sampling: {} }) } }, { headers: { "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "test_sampling", "cf-connecting-ip": ip } });
      return res.json();
    };
    const first = await sampling("203.0.113.7");
    assert.equal(first.result.resultType, "input_required", JSON.stringify(first));
    const [key] = Object.keys(first.result.inputRequests);
    const retry = { inputResponses: { [key]: { role: "assistant", model: "m", content: { type: "text", text: "hello" } } }, requestState: first.result.requestState };
    const elsewhere = await sampling("198.51.100.9", retry);
    assert.equal(elsewhere.error.code, -32602);
    assert.match(elsewhere.error.message, /another caller/);
    const own = await sampling("203.0.113.7", retry);
    assert.equal(own.result.resultType, "complete", JSON.stringify(own));
  });

  test("log messages only when _meta asks for a level, and only at or above it", async () => {
    const quiet = await call("test_tool_with_logging", meta());
    assert.match(quiet.type, /application\/json/);
    assert.equal(quiet.messages[0].result.resultType, "complete");
    const info = await call("test_tool_with_logging", meta({}, { "io.modelcontextprotocol/logLevel": "info" }));
    assert.match(info.type, /text\/event-stream/);
    const logs = info.messages.filter((m) => m.method === "notifications/message");
    assert.equal(logs.length, 3);
    assert.equal(info.messages.at(-1).result.resultType, "complete", "the result ends the stream");
    const error = await call("test_tool_with_logging", meta({}, { "io.modelcontextprotocol/logLevel": "error" }));
    assert.equal(error.messages.filter((m) => m.method === "notifications/message").length, 0);
  });

  test("progress with a progressToken, strictly increasing, before the result; no server requests on the stream", async () => {
    const r = await call("test_tool_with_progress", { ...meta(), progressToken: "p1" });
    const progress = r.messages.filter((m) => m.method === "notifications/progress").map((m) => m.params.progress);
    assert.deepEqual(progress, [0, 50, 100]);
    assert.ok(r.messages.every((m) => !m.method || m.method.startsWith("notifications/")));
    assert.equal(r.messages.at(-1).result.resultType, "complete");
  });

  test("a question needing an undeclared capability is 400 -32021 naming it", async () => {
    const res = await post(fx.mcpUrl, { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "test_sampling", arguments: { prompt: "hi" }, _meta: meta() } }, { headers: { "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "test_sampling" } });
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.error.code, -32021);
    assert.deepEqual(body.error.data.requiredCapabilities, { sampling: {} });
  });
});

test("the CORS preflight lets browsers send the 2026 headers", async () => {
  const res = await fetch(w.mcpUrl, { method: "OPTIONS", headers: { origin: "http://localhost:6274", "access-control-request-method": "POST" } });
  assert.equal(res.status, 204);
  const allow = res.headers.get("access-control-allow-headers").toLowerCase();
  for (const h of ["mcp-method", "mcp-name", "mcp-protocol-version"]) assert.ok(allow.includes(h), h);
});

test("a modern POST needs both reply types in Accept, like every POST", async () => {
  const res = await fetch(w.mcpUrl, { method: "POST", headers: { "content-type": "application/json", accept: "application/json", "mcp-protocol-version": MODERN, "mcp-method": "server/discover" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: meta() } }) });
  assert.equal(res.status, 406);
  assert.ok(ACCEPT_BOTH.includes("text/event-stream"));
});

describe("cancelling by closing the response stream", () => {
  // A Duffel stand-in that holds each request until the test releases it, so the call is still
  // running when the client goes away; the Worker's log line of each call tells how it ended.
  let api, cw;
  const held = [];
  const logs = [];
  before(async () => {
    api = createServer((req, res) => {
      req.resume();
      req.on("end", () => held.push(res));
    });
    await new Promise((r) => api.listen(0, "127.0.0.1", r));
    cw = await startWorker({ DUFFEL_BASE_URL: `http://127.0.0.1:${api.address().port}`, DUFFEL_API_TOKEN: "duffel_test_token", JWT_SECRET: SECRET }, { logs });
  });
  after(async () => {
    await cw?.stop();
    api?.closeAllConnections();
    api?.close();
  });
  const offers = JSON.stringify({ data: { id: "orq_1", offers: [] } });
  const release = () => { for (const res of held.splice(0)) res.writeHead(200, { "content-type": "application/json" }).end(offers); };
  const outcomes = () => logs.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).filter((l) => l.era === MODERN && /search-flights/.test(l.tool)).map((l) => l.outcome);
  const until = async (what, ok) => {
    for (let i = 0; i < 100 && !ok(); i++) await sleep(50);
    assert.ok(ok(), `${what}: ${logs.slice(-5).join(" | ")}`);
  };
  const search = (date, signal) => fetch(cw.mcpUrl, {
    method: "POST", signal,
    headers: { "content-type": "application/json", accept: ACCEPT_BOTH, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "search_flights" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search_flights", arguments: { origin: "SFO", destination: "CDG", departure_date: date }, _meta: meta({}, { "mcp-edge/cache": "bypass" }) } }),
  });

  test("a direct tool's call whose client stays completes, logged as such (direct tools answer JSON: nothing long-running; docs/decisions.md)", async () => {
    const before = outcomes().length;
    const pending = search("2031-05-11");
    await until("the call reached the upstream API", () => held.length === 1);
    release();
    const body = await (await pending).json();
    assert.equal(body.result.resultType, "complete", JSON.stringify(body));
    await until("the Worker logged the call", () => outcomes().length > before);
    assert.notEqual(outcomes().at(-1), "cancelled");
  });

  // A chain whose middle step waits on the held upstream: a record is written before it and
  // another after it, so a cancelled run shows its rollback and the step that never ran.
  const cdb = () => cw.mf.getD1Database("DB");
  const record = async (id) => (await (await cdb()).prepare("SELECT data FROM collection_records WHERE collection = 'stream-runs' AND id = ?1").bind(id).first());
  const step = (id, name, type, extra = {}) => ({ id, name, type, input_variables: [], output_variables: [], ...extra });
  const runCall = (args, signal) => fetch(cw.mcpUrl, {
    method: "POST", signal,
    headers: { "content-type": "application/json", accept: ACCEPT_BOTH, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "execute_chain", ...cauth() },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "execute_chain", arguments: args, _meta: meta({}, { progressToken: "run-1" }) } }),
  });
  const statusOf = async (id) => {
    const res = await post(cw.mcpUrl, { jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "get_chain_status", arguments: { execution_id: id }, _meta: meta() } },
      { headers: { "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "get_chain_status", ...cauth() } });
    return (await res.json()).result.structuredContent;
  };
  // Tokens name the Worker they are for.
  const cauth = () => ({ authorization: `Bearer ${hs256({ sub: ids.alice, roles: HR_WRITE, aud: cw.mcpUrl, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` });
  const stopping = () => logs.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).filter((l) => l.run_stopping);

  test("closing the stream of a chain run cancels it at the next step boundary with rollback; the same run with its client there completes", async () => {
    const created = await post(cw.mcpUrl, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "create_chain", _meta: meta(), arguments: { chain_definition: {
      name: "held-flight", title: "Held flight", category: "custom",
      steps: [
        step(1, "first", "database_operation", { operation: { collection: "stream-runs", action: "create" }, input_template: '{{"id": {tag|json}, "at": "start"}}', output_variables: ["first"] }),
        step(2, "search", "external_api", { tool: "search_flights", input_template: '{{"origin": "SFO", "destination": "CDG", "departure_date": {date|json}}}', output_variables: ["offers"], depends_on: [1] }),
        step(3, "last", "database_operation", { operation: { collection: "stream-runs", action: "create" }, input_template: '{{"id": "{tag}-last", "at": "end"}}', output_variables: ["last"], depends_on: [2] }),
      ],
      input_schema: { type: "object", properties: { tag: { type: "string", required: true }, date: { type: "string", required: true } } },
    }, creation_options: { overwrite_existing: true } } } }, { headers: { "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "create_chain", ...cauth() } });
    const made = await created.json();
    assert.ok(made.result && !made.result.isError, JSON.stringify(made));

    // The client goes away while step 2 waits on the upstream.
    const ac = new AbortController();
    const res = await runCall({ chain_name: "held-flight", variables: { tag: "gone", date: "2031-06-01" } }, ac.signal);
    assert.match(res.headers.get("content-type"), /^text\/event-stream/, "the stream opened before the run ended");
    await until("the run reached the upstream API", () => held.length === 1);
    assert.ok(await record("gone"), "step 1 wrote its record");
    ac.abort();
    await until("the run's object saw the client go", () => stopping().length === 1);
    const [{ run_stopping: id, reason }] = stopping();
    assert.equal(reason, "client closed the stream");
    release();
    let status;
    for (let i = 0; i < 100; i++) {
      status = await statusOf(id);
      if (status.status !== "running") break;
      await sleep(100);
    }
    assert.equal(status.status, "cancelled", JSON.stringify(status));
    assert.match(JSON.stringify(status), /client closed the stream/);
    assert.equal(status.steps.find((s) => s.name === "last").state, "not_run", JSON.stringify(status.steps));
    assert.equal(await record("gone"), null, "step 1 was rolled back");
    assert.equal(await record("gone-last"), null, "step 3 never ran");

    // The same run with its client there: it completes, and the reply is the stream's last event.
    const kept = await runCall({ chain_name: "held-flight", variables: { tag: "kept", date: "2031-06-02" } });
    await until("the second run reached the upstream API", () => held.length === 1);
    release();
    const events = (await kept.text()).split("\n\n").map((b) => b.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")).filter(Boolean).map((d) => JSON.parse(d));
    const reply = events.at(-1);
    assert.equal(reply.id, 7);
    assert.equal(reply.result.resultType, "complete", JSON.stringify(reply));
    assert.match(reply.result.content[0].text, /completed successfully/);
    assert.ok(events.slice(0, -1).some((m) => m.method === "notifications/progress" && m.params.progressToken === "run-1"), "progress before the reply");
    assert.ok(await record("kept") && await record("kept-last"), "every step ran");
    assert.equal(stopping().length, 1, "nothing was stopped this time");
  });
});

describe("subscriptions/listen", () => {
  // A deployment with FlowMind's levels on (1 and 3 successful calls) and short tools/list pages,
  // and a conformance-catalog one (its diagnostic hooks announce list changes) whose log lines are
  // kept and whose streams the server ends after 4 s.
  let lw, fw;
  const flogs = [];
  before(async () => {
    lw = await startWorker({ JWT_SECRET: SECRET, FLOWMIND_LEVELS: "1,3", TOOLS_PAGE_SIZE: "4", RATE_LIMITS: "*=off" }, { quiet: true });
    fw = await startWorker({ MCP_CATALOG: "conformance", SSE_MAX_STREAM_SECONDS: "4", SSE_KEEPALIVE_SECONDS: "1" }, { logs: flogs });
  });
  after(async () => {
    await lw?.stop();
    await fw?.stop();
  });

  const user = (sub) => ({ authorization: `Bearer ${hs256({ sub, roles: [], aud: new URL("/mcp", lw.url).href, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` });
  const headersFor = (method, name) => ({ "content-type": "application/json", accept: ACCEPT_BOTH, "mcp-protocol-version": MODERN, "mcp-method": method, ...(name ? { "mcp-name": name } : {}) });

  /** A 2026 request to `worker`; the JSON-RPC reply (the final message of an SSE reply). */
  async function ask(worker, method, params = {}, headers = {}) {
    const id = n++;
    const res = await fetch(worker.mcpUrl, { method: "POST", headers: { ...headersFor(method, params.name), ...headers }, body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: meta() } }) });
    const text = await res.text();
    if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) return { status: res.status, ...JSON.parse(text) };
    const messages = text.split("\n\n").map((b) => b.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")).filter(Boolean).map((d) => JSON.parse(d));
    return { status: res.status, ...messages.find((m) => m.id === id) };
  }

  /**
   * Opens a listen stream on `worker` and reads it in the background: `frames` are its JSON-RPC
   * messages in order, `keepalives` its comment lines; `until(pred)` waits for a frame; `close()`
   * is the client going away.
   */
  async function listen(worker, notifications, headers = {}, id = `sub-${n++}`) {
    const ctrl = new AbortController();
    const res = await fetch(worker.mcpUrl, {
      method: "POST", signal: ctrl.signal, headers: { ...headersFor("subscriptions/listen"), ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "subscriptions/listen", params: { notifications, _meta: meta() } }),
    });
    const s = { id, res, frames: [], keepalives: 0, ended: false, close: () => ctrl.abort() };
    (async () => {
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
            if (data) s.frames.push(JSON.parse(data));
            else if (block.startsWith(":")) s.keepalives += 1;
          }
        }
        s.ended = true;
      } catch {
        // the client closed it
      }
    })();
    s.until = async (what, pred, ms = 5000) => {
      for (const end = Date.now() + ms; Date.now() < end && !s.frames.some(pred); ) await sleep(25);
      const found = s.frames.find(pred);
      assert.ok(found, `${what}: ${JSON.stringify(s.frames)}`);
      return found;
    };
    await s.until("the acknowledgement", () => true);
    return s;
  }
  const SUB = "io.modelcontextprotocol/subscriptionId";
  const changes = (s, method) => s.frames.filter((f) => f.method === method);

  test("the acknowledgement comes first, with the subscription id and only what the server honours", async () => {
    const d = (await ask(lw, "server/discover")).result;
    assert.deepEqual(d.capabilities.tools, { listChanged: true }, "levels on: tool lists change");
    assert.deepEqual(d.capabilities.resources, {}, "no resource subscriptions: the vocabulary never changes");
    assert.equal(d.capabilities.prompts, undefined);
    const s = await listen(lw, { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ["epic-tide://vocabulary"], someFutureKind: true }, user("00000000-0000-4000-8000-00000000b003"), 42);
    assert.equal(s.res.status, 200);
    assert.match(s.res.headers.get("content-type"), /^text\/event-stream/);
    assert.equal(s.res.headers.get("x-accel-buffering"), "no");
    assert.equal(s.res.headers.get("mcp-session-id"), null);
    const [ack] = s.frames;
    assert.equal(ack.method, "notifications/subscriptions/acknowledged");
    assert.equal(ack.params._meta[SUB], 42, "the subscription id is the request's JSON-RPC id");
    assert.deepEqual(ack.params.notifications, { toolsListChanged: true }, "prompts, resources and unknown kinds are not honoured, so not acknowledged");
    s.close();
    const off = await listen(w, { toolsListChanged: true });
    assert.deepEqual(off.frames[0].params.notifications, {}, "with levels off tool lists never change: nothing is acknowledged");
    assert.deepEqual((await modern("server/discover")).body.result.capabilities.tools, {});
    off.close();
  });

  test("a FlowMind level reached on either lane reaches the user's open streams that asked for it, and no one else's", async () => {
    const ann = user("00000000-0000-4000-8000-00000000b001");
    const bob = user("00000000-0000-4000-8000-00000000b002");
    const tools = await listen(lw, { toolsListChanged: true }, ann, "ann-tools");
    const narrow = await listen(lw, { promptsListChanged: true }, ann, "ann-narrow");
    const other = await listen(lw, { toolsListChanged: true }, bob, "bob-tools");
    const anonymous = await listen(lw, { toolsListChanged: true });
    assert.deepEqual(anonymous.frames[0].params.notifications, {}, "an anonymous caller's list never changes, so it is not acknowledged");
    const help = { name: "get_help", arguments: { help_type: "best_practices" } };
    assert.equal((await ask(lw, "tools/call", help, ann)).result.isError, undefined);
    const changed = await tools.until("list_changed after the first level", (f) => f.method === "notifications/tools/list_changed");
    assert.deepEqual(changed.params._meta, { [SUB]: "ann-tools" });
    // A 2025 session of the same user: two more successes reach the next level.
    const init = await post(lw.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "t", version: "1" } } }, { headers: ann });
    const session = init.headers.get("mcp-session-id");
    await post(lw.mcpUrl, { jsonrpc: "2.0", method: "notifications/initialized" }, { session, version: LATEST, headers: ann });
    for (const id of [1, 2]) {
      const r = await post(lw.mcpUrl, { jsonrpc: "2.0", id, method: "tools/call", params: help }, { session, version: LATEST, headers: ann });
      assert.match(await r.text(), /"result"/);
    }
    await tools.until("a second list_changed after the level reached in a 2025 session", () => changes(tools, "notifications/tools/list_changed").length === 2);
    await sleep(300);
    assert.equal(changes(tools, "notifications/tools/list_changed").length, 2, "one per level, not one per call");
    for (const s of [narrow, other, anonymous]) assert.deepEqual(s.frames.map((f) => f.method), ["notifications/subscriptions/acknowledged"], `${s.id} got nothing`);
    for (const s of [tools, narrow, other, anonymous]) s.close();
  });

  test("the conformance hooks: a stream gets only the kinds it asked for, each tagged with its id", async () => {
    const prompts = await listen(fw, { promptsListChanged: true }, {}, "p");
    const both = await listen(fw, { promptsListChanged: true, toolsListChanged: true }, {}, "b");
    const t = await ask(fw, "tools/call", { name: "test_trigger_tool_change", arguments: {} });
    assert.equal(t.result.resultType, "complete");
    assert.equal(t.result.structuredContent.delivered, 1, "only the stream that asked for tools");
    await both.until("tools change", (f) => f.method === "notifications/tools/list_changed");
    await ask(fw, "tools/call", { name: "test_trigger_prompt_change", arguments: {} });
    await prompts.until("prompts change", (f) => f.method === "notifications/prompts/list_changed");
    await both.until("prompts change", (f) => f.method === "notifications/prompts/list_changed");
    assert.deepEqual(prompts.frames.map((f) => f.method), ["notifications/subscriptions/acknowledged", "notifications/prompts/list_changed"]);
    for (const f of prompts.frames) assert.equal(f.params._meta[SUB], "p");
    for (const f of both.frames) assert.equal(f.params._meta[SUB], "b");
    const d = (await ask(fw, "server/discover")).result;
    assert.deepEqual([d.capabilities.tools, d.capabilities.prompts], [{ listChanged: true }, { listChanged: true }]);
    prompts.close();
    both.close();
  });

  /** Waits for the listen object's log line saying the client of subscription `id` left. */
  const untilLogged = async (id) => {
    const closed = () => flogs.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).find((l) => l.listen === "closed by the client" && l.subscription === id);
    for (let i = 0; i < 100 && !closed(); i++) await sleep(50);
    assert.ok(closed(), `the object noticed the client of ${id} leave: ${flogs.slice(-5).join(" | ")}`);
  };

  test("a stream the client closes is dropped: later changes reach no one", async () => {
    const s = await listen(fw, { toolsListChanged: true }, {}, "gone");
    s.close();
    await untilLogged("gone");
    const t = await ask(fw, "tools/call", { name: "test_trigger_tool_change", arguments: {} });
    assert.equal(t.result.structuredContent.delivered, 0);
  });

  test("a caller holds at most 16 open streams: one more ends the oldest with its completion result", async () => {
    const open = [];
    for (let i = 0; i < 16; i++) open.push(await listen(fw, { toolsListChanged: true }, {}, `cap-${i}`));
    open.push(await listen(fw, { toolsListChanged: true }, {}, "cap-16"));
    const oldest = open.shift();
    await oldest.until("the oldest stream's completion result", (f) => f.id === "cap-0");
    for (let i = 0; i < 40 && !oldest.ended; i++) await sleep(50);
    assert.ok(oldest.ended, "and the server closed it");
    assert.deepEqual(oldest.frames.at(-1).result, { resultType: "complete", _meta: { [SUB]: "cap-0" } });
    const t = await ask(fw, "tools/call", { name: "test_trigger_tool_change", arguments: {} });
    assert.equal(t.result.structuredContent.delivered, 16, "the 16 newest get changes");
    await open.at(-1).until("the newest stream's change", (f) => f.method === "notifications/tools/list_changed");
    for (const s of open) s.close();
  });

  test("keep-alive comments while idle; at the lifetime cap the server ends it with the completion result", async () => {
    const s = await listen(fw, { toolsListChanged: true }, {}, 7);
    for (let i = 0; i < 120 && !s.ended; i++) await sleep(50);
    assert.ok(s.ended, "the server closed the stream");
    assert.ok(s.keepalives >= 1, "a keep-alive comment while nothing happened");
    const last = s.frames.at(-1);
    assert.deepEqual(last, { jsonrpc: "2.0", id: 7, result: { resultType: "complete", _meta: { [SUB]: 7 } } });
  });

  test("a missing or mistyped filter is -32602 naming the field, answered without a stream", async () => {
    for (const [params, field] of [[{}, /params\.notifications/], [{ notifications: true }, /params\.notifications must be an object/], [{ notifications: { toolsListChanged: "yes" } }, /toolsListChanged must be true or false/], [{ notifications: { resourceSubscriptions: "epic-tide://vocabulary" } }, /resourceSubscriptions must be an array/]]) {
      const r = await ask(lw, "subscriptions/listen", params);
      assert.equal(r.error?.code, -32602, JSON.stringify(r));
      assert.match(r.error.message, field);
    }
  });

  test("anonymous tools/list pages are full until the last, filtered before paging, and cursors are stable", async () => {
    const pages = [];
    let cursor;
    do {
      const r = (await ask(lw, "tools/list", cursor ? { cursor } : {})).result;
      pages.push({ cursor, names: r.tools.map((t) => t.name), next: r.nextCursor });
      cursor = r.nextCursor;
    } while (cursor);
    assert.ok(pages.length > 2);
    for (const p of pages.slice(0, -1)) assert.equal(p.names.length, 4, `a full page: ${p.names}`);
    assert.ok(pages.at(-1).names.length >= 1 && pages.at(-1).names.length <= 4);
    const names = pages.flatMap((p) => p.names);
    assert.deepEqual(names, [...names].sort(), "in name order across pages");
    assert.equal(new Set(names).size, names.length, "no tool twice");
    for (const hidden of ["compose_workflow", "list_available_contexts"]) assert.ok(!names.includes(hidden), hidden);
    assert.ok(names.includes("field_request") && names.includes("create_chain") && names.includes("execute_chain"));
    const again = (await ask(lw, "tools/list", { cursor: pages[1].cursor })).result;
    assert.deepEqual(again.tools.map((t) => t.name), pages[1].names, "the same cursor gives the same page");
  });
});
