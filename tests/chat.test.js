// POST /sessions/:id/chat: the session's object runs a chat turn against a model provider (here a
// local OpenAI-compatible server that streams scripted answers chunk by chunk and records every
// request), executes the tool calls it writes to read-only tools, holds the others until the user
// approves them, feeds the results back and loops; the reply is an SSE stream of text, tool_call,
// tool_result, approval_required, error and done events. Also POST /sessions (a chat-only
// session), GET /sessions/:id/chat (the stored conversation), owner rules and refusals.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { startWorker } from "./support/worker.js";
import { initialize, readSse, sseEvents } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "chat-secret";

/**
 * The stand-in provider. `script` is a queue of answers, one per request: `{ chunks: [text…] }`
 * streams each text as one `delta.content` (every SSE line is also written in two halves, so lines
 * arrive split), optionally waiting for `hold` (a promise) after the first chunk, then `tail` (raw SSE
 * text) if given; `{ completion }` answers one non-streamed completion (a provider that ignores
 * `stream: true`); `{ status, body }` answers an error. `requests` records { auth, body } of each request.
 */
function modelProvider() {
  const p = { requests: [], script: [] };
  p.server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", async () => {
      p.requests.push({ auth: req.headers.authorization, body: JSON.parse(body) });
      const next = p.script.shift() ?? { status: 500, body: "script exhausted" };
      if (next.status) return res.writeHead(next.status, { "content-type": "application/json" }).end(next.body);
      if (next.completion) return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ choices: [{ message: { role: "assistant", content: next.completion } }] }));
      res.writeHead(200, { "content-type": "text/event-stream" });
      const write = async (line) => {
        const half = Math.floor(line.length / 2);
        res.write(line.slice(0, half));
        await new Promise((r) => setImmediate(r));
        res.write(line.slice(half));
      };
      await write(`data: ${JSON.stringify({ choices: [{ delta: { role: "assistant" } }] })}\n\n`);
      for (const [i, content] of next.chunks.entries()) {
        await write(`data: ${JSON.stringify({ choices: [{ delta: { content } }] })}\n\n`);
        if (i === 0 && next.hold) await next.hold;
      }
      if (next.tail) await write(next.tail);
      await write("data: [DONE]\n\n");
      res.end();
    });
  });
  return new Promise((resolve) => p.server.listen(0, "127.0.0.1", () => {
    p.url = `http://127.0.0.1:${p.server.address().port}/v1/chat/completions`;
    resolve(p);
  }));
}

let provider, w, bare, aud;
before(async () => {
  provider = await modelProvider();
  const vars = { JWT_SECRET: SECRET, CHAT_MAX_STEPS: "3", CHAT_MAX_MESSAGE_CHARS: "200" };
  w = await startWorker({ ...vars, MODEL_PROVIDER_URL: provider.url, MODEL_PROVIDER_KEY: "test-key", MODEL_PROVIDER_MODEL: "chat-small" }, { quiet: true });
  bare = await startWorker(vars, { quiet: true });
  aud = new URL("/mcp", w.url).href;
});
after(async () => {
  await w?.stop();
  await bare?.stop();
  provider?.server.closeAllConnections();
  provider?.server.close();
});

const token = (sub) => ({ authorization: `Bearer ${hs256({ sub, roles: [], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` });
const newSession = async (worker = w, headers = {}) => {
  const r = await fetch(new URL("/sessions", worker.url), { method: "POST", headers });
  assert.equal(r.status, 201, await r.clone().text());
  return (await r.json()).session_id;
};
const chat = (id, message, { worker = w, headers = {} } = {}) =>
  fetch(new URL(`/sessions/${id}/chat`, worker.url), { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream", ...headers }, body: JSON.stringify({ message }) });
/** Runs a turn to its end; returns its events as { event, data }. */
async function turn(id, message, opts) {
  const res = await chat(id, message, opts);
  assert.equal(res.status, 200, await res.clone().text());
  assert.match(res.headers.get("content-type"), /^text\/event-stream/);
  const events = await readSse(res);
  assert.ok(events.ended, "the server ends the stream after done");
  return events.filter((e) => e.event).map((e) => ({ event: e.event, data: JSON.parse(e.data) }));
}
const texts = (events) => events.filter((e) => e.event === "text").map((e) => e.data.text).join("");
const history = async (id, headers = {}) => (await fetch(new URL(`/sessions/${id}/chat`, w.url), { headers })).json();
const lastMessage = (req) => req.body.messages.at(-1);

describe("a chat turn", () => {
  test("a plain answer streams out as text events as it arrives, then done", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    let release;
    provider.script.push({ chunks: ["Hello", " there", "!"], hold: new Promise((r) => (release = r)) });
    const res = await chat(id, "Hi");
    assert.equal(res.status, 200);
    const it = sseEvents(res);
    const first = await it.next();
    assert.deepEqual([first.event, JSON.parse(first.data)], ["text", { text: "Hello" }], "the first text arrives while the provider still holds the rest");
    release();
    const rest = [];
    for (let ev = await it.next(); ev; ev = await it.next()) rest.push({ event: ev.event, data: JSON.parse(ev.data) });
    assert.deepEqual(rest, [{ event: "text", data: { text: " there" } }, { event: "text", data: { text: "!" } }, { event: "done", data: { reason: "answered", steps: 1 } }]);

    assert.equal(provider.requests.length, 1);
    const { auth, body } = provider.requests[0];
    assert.equal(auth, "Bearer test-key");
    assert.equal(body.model, "chat-small");
    assert.equal(body.stream, true);
    assert.deepEqual(body.messages.map((m) => m.role), ["system", "user"]);
    assert.match(body.messages[0].content, /<tool_call name="TOOL_NAME" args=\{"argument":"value"\}><\/tool_call>/);
    assert.match(body.messages[0].content, /## switch_mode\n.+\nInput schema: \{.*"mode"/);
    assert.doesNotMatch(body.messages[0].content, /## get_employee/, "an anonymous session is taught only the tools anonymous callers may use");
    assert.deepEqual(body.messages[1], { role: "user", content: "Hi" });
  });

  test("a tool call tag split across chunks runs once, its text is not shown, and its result goes back", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    provider.script.push(
      { chunks: ["Let me look.<tool", "_call name=\"get_instr", "uction_set\" args={\"na", "me\":\"vendor-search\"}></tool_", "call>"] },
      { chunks: ["Done: here is how vendor search works."] },
    );
    const events = await turn(id, "How does vendor search work?");
    assert.deepEqual(events.map((e) => e.event), ["text", "tool_call", "tool_result", "text", "done"]);
    assert.equal(texts(events), "Let me look.Done: here is how vendor search works.");
    assert.deepEqual(events[1].data, { id: "1.1", tool: "get_instruction_set", arguments: { name: "vendor-search" }, name: "get_instruction_set", args: { name: "vendor-search" } });
    assert.equal(events[2].data.is_error, false);
    assert.equal(events[2].data.result.structuredContent.name, "vendor-search");
    assert.deepEqual(events.at(-1).data, { reason: "answered", steps: 2 });

    assert.equal(provider.requests.length, 2);
    const second = provider.requests[1].body.messages;
    assert.deepEqual(second.slice(1).map((m) => m.role), ["user", "assistant", "user"]);
    assert.equal(second[2].content, 'Let me look.<tool_call name="get_instruction_set" args={"name":"vendor-search"}></tool_call>');
    assert.match(second[3].content, /^<tool_result name="get_instruction_set" status="ok">\{.*"name":"vendor-search".*\}<\/tool_result>$/);

    // The call went through the executor: the session's dashboard log has it.
    const dash = sseEvents(await fetch(new URL(`/sessions/${id}/events`, w.url), { headers: { accept: "text/event-stream", "last-event-id": "g-0" } }), { timeoutMs: 3000 });
    const logged = [await dash.next(), await dash.next(), await dash.next()].filter((e) => e?.event);
    dash.close();
    assert.deepEqual(logged.map((e) => [e.event, JSON.parse(e.data).tool]), [["tool_call", "get_instruction_set"], ["tool_result", "get_instruction_set"]]);
  });

  test("two tool calls in one answer both run, and both results go back in the next request", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    provider.script.push(
      { chunks: ['<tool_call name="get_mode_indicator" args={}></tool_call>\n<tool_call name="list_instruction_sets" args={"category":"compl', 'iance"}></tool_call>'] },
      { chunks: ["Two results."] },
    );
    const events = await turn(id, "Mode and compliance sets?");
    const calls = events.filter((e) => e.event === "tool_call").map((e) => [e.data.id, e.data.tool]);
    assert.deepEqual(calls, [["1.1", "get_mode_indicator"], ["1.2", "list_instruction_sets"]]);
    const results = events.filter((e) => e.event === "tool_result");
    assert.deepEqual(results.map((e) => e.data.id).sort(), ["1.1", "1.2"]);
    assert.ok(results.every((e) => e.data.is_error === false));
    assert.equal(texts(events), "\nTwo results.");
    const fed = lastMessage(provider.requests[1]);
    assert.equal(fed.role, "user");
    const [a, b] = fed.content.split("\n");
    assert.match(a, /^<tool_result name="get_mode_indicator" status="ok">/);
    assert.match(b, /^<tool_result name="list_instruction_sets" status="ok">.*corporate-validation.*policy-compliance/);
  });

  test("bad JSON in a call: an error event, a corrective message to the model, and the loop goes on", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    const bad = '<tool_call name="get_instruction_set" args={"name": }></tool_call>';
    provider.script.push(
      { chunks: [bad.slice(0, 30), bad.slice(30)] },
      { chunks: ['<tool_call name="get_instruction_set" args={"name":"vendor-search"}></tool_call>'] },
      { chunks: ["Fixed it."] },
    );
    const events = await turn(id, "Vendor search?");
    assert.deepEqual(events.map((e) => e.event), ["error", "tool_call", "tool_result", "text", "done"]);
    assert.equal(events[0].data.kind, "malformed_tool_call");
    assert.equal(events[0].data.raw, bad);
    assert.match(events[0].data.message, /args is not valid JSON/);
    assert.equal(texts(events), "Fixed it.", "the malformed tag is not shown as text");
    const correction = lastMessage(provider.requests[1]);
    assert.equal(correction.role, "user");
    assert.match(correction.content, /Your tool call could not be read: args is not valid JSON.*You wrote: \\u003ctool_call name="get_instruction_set" args=\{"name": \}\\u003e\\u003c\/tool_call\\u003e/s, "what the model wrote goes back neutralised");
    assert.match(correction.content, /Write it again exactly as <tool_call name="TOOL_NAME"/);
    assert.equal(provider.requests.length, 3);
  });

  test("an unknown tool is a tool error fed back to the model", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    provider.script.push({ chunks: ['<tool_call name="get_employees" args={"employee_id":"x"}></tool_call>'] }, { chunks: ["Sorry."] });
    const events = await turn(id, "Who is x?");
    assert.deepEqual(events.map((e) => e.event), ["tool_call", "error", "tool_result", "text", "done"]);
    assert.equal(events[1].data.kind, "unknown_tool");
    assert.equal(events[2].data.is_error, true);
    assert.match(lastMessage(provider.requests[1]).content, /^<tool_result name="get_employees" status="error">unknown tool "get_employees": it does not exist or this user may not use it/);
  });

  test("a domain tool the user's roles lack is told why (INSUFFICIENT_PERMISSIONS), not unknown", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    provider.script.push({ chunks: ['<tool_call name="get_employee" args={"employee_id":"x"}></tool_call>'] }, { chunks: ["Sorry."] });
    const events = await turn(id, "Who is x?");
    assert.deepEqual(events.map((e) => e.event), ["tool_call", "tool_result", "text", "done"]);
    assert.equal(events[1].data.is_error, true);
    assert.equal(events[1].data.result.structuredContent.code, "INSUFFICIENT_PERMISSIONS");
    assert.match(lastMessage(provider.requests[1]).content, /^<tool_result name="get_employee" status="error">INSUFFICIENT_PERMISSIONS: You must sign in/);
  });

  test("the step limit stops a model that keeps calling tools, and says so", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    for (let i = 0; i < 3; i++) provider.script.push({ chunks: ['<tool_call name="get_mode_indicator" args={}></tool_call>'] });
    const events = await turn(id, "Loop forever");
    assert.equal(provider.requests.length, 3, "CHAT_MAX_STEPS=3 model requests");
    assert.equal(events.filter((e) => e.event === "tool_result").length, 3);
    const [error, done] = events.slice(-2);
    assert.equal(error.event, "error");
    assert.equal(error.data.kind, "step_limit");
    assert.match(error.data.message, /after 3 steps.*CHAT_MAX_STEPS/);
    assert.deepEqual(done, { event: "done", data: { reason: "step_limit", steps: 3 } });
    const roles = (await history(id)).messages.map((m) => m.role);
    assert.deepEqual(roles, ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"], "every step is stored with its results");
  });
});

const decide = (id, body, opts = {}) =>
  fetch(new URL(`/sessions/${id}/chat`, w.url), { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream", ...(opts.headers ?? {}) }, body: JSON.stringify(body) });
async function decided(id, body) {
  const res = await decide(id, body);
  assert.equal(res.status, 200, await res.clone().text());
  return (await readSse(res)).filter((e) => e.event).map((e) => ({ event: e.event, data: JSON.parse(e.data) }));
}
const dashboardTools = async (id) => {
  const dash = sseEvents(await fetch(new URL(`/sessions/${id}/events`, w.url), { headers: { accept: "text/event-stream", "last-event-id": "g-0" } }), { timeoutMs: 1500 });
  const seen = [];
  for (let ev = await dash.next(); ev; ev = await dash.next()) if (ev.event === "tool_call") seen.push(JSON.parse(ev.data).tool);
  dash.close();
  return seen;
};

describe("tools that change data wait for the user", () => {
  test("a call to a tool not annotated read-only is held: the turn ends asking for approval, read-only calls of the step still run", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    provider.script.push(
      { chunks: ['<tool_call name="get_mode_indicator" args={}></tool_call><tool_call name="switch_mode" args={"mode":"mobile-mode"}></tool_call>'] },
      { chunks: ["Switched."] },
    );
    const events = await turn(id, "Mobile please");
    assert.deepEqual(events.map((e) => e.event), ["tool_call", "tool_result", "approval_required", "done"]);
    assert.equal(events[0].data.tool, "get_mode_indicator");
    const ask = events[2].data;
    assert.match(ask.approval, /^[0-9a-f]{32}$/);
    assert.deepEqual(ask.calls, [{ id: "1.2", tool: "switch_mode", arguments: { mode: "mobile-mode" } }]);
    assert.match(ask.message, /approve/);
    assert.deepEqual(events[3].data, { reason: "approval_required", steps: 1 });
    assert.equal(provider.requests.length, 1, "the model is not asked again before the user decides");
    assert.deepEqual(await dashboardTools(id), ["get_mode_indicator"], "switch_mode did not run");
    const stored = (await history(id)).messages;
    assert.match(stored.at(-1).content, /<tool_result name="switch_mode" status="awaiting_user">Not run/);
    assert.ok(!JSON.stringify(provider.requests).includes(ask.approval), "the model never sees the approval id");

    assert.equal((await decide(id, { approve: "0".repeat(32) })).status, 409, "an id that was never issued");
    const approved = await decided(id, { approve: ask.approval });
    assert.deepEqual(approved.map((e) => e.event), ["tool_call", "tool_result", "text", "done"]);
    assert.equal(approved[1].data.result.structuredContent.mode, "mobile-mode");
    assert.match(lastMessage(provider.requests[1]).content, /^<tool_result name="switch_mode" status="ok">/);
    assert.deepEqual(await dashboardTools(id), ["get_mode_indicator", "switch_mode"]);
    const again = await decide(id, { approve: ask.approval });
    assert.equal(again.status, 409, "an approval decides once");
    assert.match((await again.json()).error.message, /no tool call of this session awaits approval/);
  });

  test("denied, the call never runs and the model hears so; a new message drops a pending approval", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    provider.script.push({ chunks: ['<tool_call name="switch_mode" args={"mode":"mobile-mode"}></tool_call>'] }, { chunks: ["Staying put."] });
    const ask = (await turn(id, "Mobile?")).find((e) => e.event === "approval_required").data;
    const denied = await decided(id, { deny: ask.approval });
    assert.deepEqual(denied.map((e) => e.event), ["tool_result", "text", "done"]);
    assert.equal(denied[0].data.is_error, true);
    assert.match(lastMessage(provider.requests[1]).content, /status="error">The user declined this call/);

    provider.script.push({ chunks: ['<tool_call name="switch_mode" args={"mode":"interactive-mode"}></tool_call>'] }, { chunks: ["Fine."] });
    const second = (await turn(id, "Interactive?")).find((e) => e.event === "approval_required").data;
    assert.equal(texts(await turn(id, "Never mind")), "Fine.");
    assert.equal((await decide(id, { approve: second.approval })).status, 409, "the newer message dropped it");
    assert.deepEqual(await dashboardTools(id), [], "no switch_mode ever ran");
  });
});

describe("the conversation", () => {
  test("is stored: the next turn sends the earlier history, and GET returns it", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    provider.script.push(
      { chunks: ['<tool_call name="get_instruction_set" args={"name":"vendor-search"}></tool_call>'] },
      { chunks: ["Mobile it is."] },
      { chunks: ["You asked for mobile mode."] },
    );
    await turn(id, "Mobile please");
    const events = await turn(id, "What did I ask?");
    assert.equal(texts(events), "You asked for mobile mode.");
    const sent = provider.requests[2].body.messages.slice(1);
    assert.deepEqual(sent.map((m) => m.role), ["user", "assistant", "user", "assistant", "user"]);
    assert.equal(sent[0].content, "Mobile please");
    assert.equal(sent[3].content, "Mobile it is.");
    assert.equal(sent[4].content, "What did I ask?");

    const h = await history(id);
    assert.equal(h.session_id, id);
    assert.deepEqual(h.messages.map((m) => [m.role, m.content.slice(0, 13)]), [
      ["user", "Mobile please"],
      ["assistant", '<tool_call na'],
      ["tool", '<tool_result '],
      ["assistant", "Mobile it is."],
      ["user", "What did I as"],
      ["assistant", "You asked for"],
    ]);
  });

  test("a provider failure is an error event with retry guidance, and leaves no half-written turn", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    provider.script.push({ status: 503, body: '{"error":"busy"}' }, { status: 503, body: '{"error":"still busy"}' });
    let events = await turn(id, "Hello?");
    assert.equal(provider.requests.length, 2, "a busy provider is tried twice");
    assert.deepEqual(events.map((e) => e.event), ["error", "done"]);
    assert.equal(events[0].data.kind, "provider");
    assert.match(events[0].data.message, /HTTP 503.*try again in a moment.*Nothing of this turn was saved: send the same message again/);
    assert.deepEqual(events[1].data, { reason: "error", steps: 1 });
    assert.deepEqual((await history(id)).messages, []);

    provider.script.push({ status: 401, body: '{"error":"bad key"}' });
    events = await turn(id, "Hello?");
    assert.match(events[0].data.message, /HTTP 401: \{"error":"bad key"\}.*Check MODEL_PROVIDER_URL, MODEL_PROVIDER_KEY/);

    provider.script.push({ chunks: ['<tool_call name="get_mode_indicator" args={}></tool_call>'] }, { status: 400, body: "context too long" });
    events = await turn(id, "Hello?");
    assert.match(events.at(-2).data.message, /earlier steps of this turn .* are saved: send a message such as "continue"/);
    assert.deepEqual((await history(id)).messages.map((m) => m.role), ["user", "assistant", "tool"], "the completed step stays, with its result");
  });

  test("a provider that ignores stream: true, and one that reports an error mid-stream", async () => {
    const id = await newSession();
    provider.script.push({ completion: '<tool_call name="get_mode_indicator" args={}></tool_call>' }, { completion: "All at once." });
    const events = await turn(id, "Mode?");
    assert.deepEqual(events.map((e) => e.event), ["tool_call", "tool_result", "text", "done"]);
    assert.equal(texts(events), "All at once.");

    provider.script.push({ chunks: ["Half an ans"], tail: `data: ${JSON.stringify({ error: { message: "model overloaded" } })}\n\n` });
    const broken = await turn(id, "Again?");
    assert.deepEqual(broken.map((e) => e.event), ["text", "error", "done"]);
    assert.match(broken[1].data.message, /the model provider reported an error: model overloaded\..*try again in a moment.*Nothing of this turn was saved/);
    assert.deepEqual((await history(id)).messages.map((m) => m.content).at(-1), "All at once.", "the broken turn stored nothing");
  });

  test("one turn at a time: a second message while one runs gets 409", async () => {
    const id = await newSession();
    let release;
    provider.script.push({ chunks: ["Thinking", " done."], hold: new Promise((r) => (release = r)) });
    const res = await chat(id, "First");
    const it = sseEvents(res);
    assert.equal((await it.next()).event, "text");
    const second = await chat(id, "Second");
    assert.equal(second.status, 409);
    assert.match((await second.json()).error.message, /a chat turn of this session is still running/);
    release();
    let ev;
    while ((ev = await it.next()) && ev.event !== "done");
    assert.equal(ev?.event, "done");
    provider.script.push({ chunks: ["Now."] });
    assert.equal(texts(await turn(id, "Second")), "Now.");
  });
});

describe("who may chat, and refusals", () => {
  test("an MCP session's id works for chat too", async () => {
    const { session } = await initialize(w.mcpUrl);
    provider.script.push({ chunks: ["Hi from MCP."] });
    assert.equal(texts(await turn(session, "Hi")), "Hi from MCP.");
  });

  test("a session opened with a token is only for that user; an anonymous one for whoever holds its id", async () => {
    const alice = token("00000000-0000-4000-8000-000000000020");
    const bob = token("00000000-0000-4000-8000-000000000021");
    const id = await newSession(w, alice);
    assert.equal((await chat(id, "Hi", { headers: bob })).status, 403);
    assert.equal((await chat(id, "Hi")).status, 403, "without a token");
    assert.equal((await fetch(new URL(`/sessions/${id}/chat`, w.url), { headers: bob })).status, 403);
    assert.equal((await chat(id, "Hi", { headers: { authorization: "Bearer nope" } })).status, 401);
    provider.requests.length = 0;
    provider.script.push({ chunks: ["Hi Alice."] });
    assert.equal(texts(await turn(id, "Hi", { headers: alice })), "Hi Alice.");
    assert.match(provider.requests[0].body.messages[0].content, /## get_employee/, "a signed-in user is taught the tools their token allows");

    const open = await newSession();
    provider.script.push({ chunks: ["Hi anyone."] });
    assert.equal(texts(await turn(open, "Hi", { headers: bob })), "Hi anyone.");
  });

  test("no model configured: 503 naming what to set", async () => {
    const id = await newSession(bare);
    const res = await chat(id, "Hi", { worker: bare });
    assert.equal(res.status, 503);
    assert.match((await res.json()).error.message, /no model provider is configured for chat; set MODEL_PROVIDER_URL .* MODEL_PROVIDER_KEY .* MODEL_PROVIDER_MODEL, or bind Workers AI as AI/);
  });

  test("bad requests are refused before the model is asked", async () => {
    const id = await newSession();
    provider.requests.length = 0;
    const long = await chat(id, "x".repeat(201));
    assert.equal(long.status, 400);
    assert.match((await long.json()).error.message, /message is 201 characters long; at most 200 are accepted \(CHAT_MAX_MESSAGE_CHARS\)/);
    const empty = await chat(id, "  ");
    assert.equal(empty.status, 400);
    const notString = await fetch(new URL(`/sessions/${id}/chat`, w.url), { method: "POST", headers: { "content-type": "application/json" }, body: '{"message": 5}' });
    assert.equal(notString.status, 400);
    const form = await fetch(new URL(`/sessions/${id}/chat`, w.url), { method: "POST", headers: { "content-type": "text/plain" }, body: "hi" });
    assert.equal(form.status, 415);
    assert.equal((await chat("f".repeat(64), "Hi")).status, 404, "unknown session");
    assert.equal((await chat("nope", "Hi")).status, 404);
    const put = await fetch(new URL(`/sessions/${id}/chat`, w.url), { method: "PUT" });
    assert.equal(put.status, 405);
    const evil = await chat(id, "Hi", { headers: { origin: "http://evil.example" } });
    assert.equal(evil.status, 403);
    assert.equal(provider.requests.length, 0);
  });
});

describe("FlowMind's levels in chat", () => {
  let levelled;
  before(async () => {
    levelled = await startWorker({ JWT_SECRET: SECRET, RATE_LIMITS: "*=off", FLOWMIND_LEVELS: "1,5", MODEL_PROVIDER_URL: provider.url }, { quiet: true });
  });
  after(() => levelled?.stop());

  test("a locked FlowMind tool is refused with what unlocks it; a successful call counts towards the next level", async () => {
    const id = await newSession(levelled);
    provider.script.push(
      { chunks: ['<tool_call name="evaluate_semantic_condition" args={"condition":"user seems frustrated","context":{"user_message":"broken again!!"}}></tool_call>'] },
      { chunks: ['<tool_call name="get_help" args={"help_type":"best_practices"}></tool_call>'] },
      { chunks: ['<tool_call name="evaluate_semantic_condition" args={"condition":"user seems frustrated","context":{"user_message":"broken again!!"}}></tool_call>'] },
      { chunks: ["Done."] },
    );
    provider.requests.length = 0;
    const events = await turn(id, "Is the user frustrated?", { worker: levelled });
    const offered = [...provider.requests[0].body.messages[0].content.matchAll(/^## (\S+)$/gm)].map((m) => m[1]);
    assert.ok(offered.includes("get_help") && offered.includes("switch_mode"), offered.join());
    assert.ok(!offered.includes("evaluate_semantic_condition"), "the system prompt offers only the tools of the caller's level");
    const results = events.filter((e) => e.event === "tool_result").map((e) => e.data);
    assert.deepEqual(results.map((r) => [r.tool, r.is_error]), [["evaluate_semantic_condition", true], ["get_help", false], ["evaluate_semantic_condition", false]]);
    assert.match(results[0].result.content[0].text, /Tool evaluate_semantic_condition is locked: it needs FlowMind level intermediate and you are beginner/);
    assert.equal(results[1].result.structuredContent._unlocks.level, "intermediate");
    assert.equal(results[2].result.structuredContent.teaching.level, "intermediate");
  });
});
