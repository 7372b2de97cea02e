// Streamable HTTP at /mcp (MCP 2025-11-25 and 2025-06-18), against the built Worker in workerd:
// headers, status codes, sessions, SSE framing, resumability, cancellation and client requests.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { ACCEPT_BOTH, LATEST, initialize, post, readSse, rpc, sseEvents, waitForMessage } from "./support/mcp.js";

let w;
before(async () => {
  w = await startWorker({ MCP_CATALOG: "conformance", MAX_BODY_BYTES: "4096", CLIENT_REQUEST_TIMEOUT_MS: "1500" });
});
after(() => w?.stop());

const ping = (id = 1) => ({ jsonrpc: "2.0", id, method: "ping" });

describe("initialize and sessions", () => {
  test("initialize answers JSON with a fresh 256-bit session id and the negotiated version", async () => {
    const a = await initialize(w.mcpUrl);
    const b = await initialize(w.mcpUrl, { version: "2025-06-18" });
    for (const s of [a.session, b.session]) assert.match(s, /^[0-9a-f]{64}$/);
    assert.notEqual(a.session, b.session);
    assert.equal(a.version, LATEST);
    assert.equal(b.version, "2025-06-18");
    assert.equal(a.result.serverInfo.name, "mcp-edge");
    assert.ok(a.result.serverInfo.version);
  });

  test("an unknown protocol version is answered with the latest supported one", async () => {
    const { version } = await initialize(w.mcpUrl, { version: "1900-01-01" });
    assert.equal(version, LATEST);
  });

  test("initialize is accepted with and without MCP-Protocol-Version", async () => {
    const body = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "t", version: "1" } } };
    assert.equal((await post(w.mcpUrl, body, { version: LATEST })).status, 200);
    assert.equal((await post(w.mcpUrl, body)).status, 200);
  });

  test("a second initialize on a session is refused with 400 / -32600", async () => {
    const { session } = await initialize(w.mcpUrl);
    const res = await post(w.mcpUrl, { jsonrpc: "2.0", id: 9, method: "initialize", params: { protocolVersion: LATEST } }, { session });
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.error.code, -32600);
    assert.equal(body.id, 9);
  });

  test("requests without a session id get 400; unknown or malformed ids get 404", async () => {
    const none = await post(w.mcpUrl, ping());
    assert.equal(none.status, 400);
    assert.match((await none.json()).error.message, /Mcp-Session-Id/);
    const unknown = await post(w.mcpUrl, ping(), { session: "a".repeat(64) });
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error.code, -32001);
    assert.equal((await post(w.mcpUrl, ping(), { session: "not-a-session" })).status, 404);
  });

  test("DELETE ends the session: its id then gets 404 on POST, GET and DELETE", async () => {
    const { session } = await initialize(w.mcpUrl);
    assert.equal((await rpc(w.mcpUrl, session, "ping")).status, 200);
    const del = await fetch(w.mcpUrl, { method: "DELETE", headers: { "mcp-session-id": session } });
    assert.equal(del.status, 204);
    assert.equal((await post(w.mcpUrl, ping(), { session })).status, 404);
    const get = await fetch(w.mcpUrl, { headers: { accept: "text/event-stream", "mcp-session-id": session } });
    assert.equal(get.status, 404);
    await get.body?.cancel();
    assert.equal((await fetch(w.mcpUrl, { method: "DELETE", headers: { "mcp-session-id": session } })).status, 404);
  });

  test("session state survives: the mode chosen in one request is read by the next", async () => {
    const { session } = await initialize(w.mcpUrl);
    await rpc(w.mcpUrl, session, "tools/call", { name: "switch_mode", arguments: { mode: "mobile-mode" } });
    const r = await rpc(w.mcpUrl, session, "tools/call", { name: "get_mode_indicator", arguments: {} });
    assert.equal(r.reply.result.structuredContent.mode, "mobile-mode");
    const other = await initialize(w.mcpUrl);
    const o = await rpc(w.mcpUrl, other.session, "tools/call", { name: "get_mode_indicator", arguments: {} });
    assert.equal(o.reply.result.structuredContent.mode, "interactive-mode");
  });
});

describe("POST rules", () => {
  let session;
  before(async () => ({ session } = await initialize(w.mcpUrl)));

  test("Accept must admit both application/json and text/event-stream (406)", async () => {
    for (const accept of ["application/json", "text/event-stream", "text/html", "application/json, text/event-stream;q=0"]) {
      const res = await post(w.mcpUrl, ping(), { session, headers: { accept } });
      assert.equal(res.status, 406, `accept=${accept}`);
      assert.match((await res.json()).error.message, /Accept/);
    }
    const wildcard = await post(w.mcpUrl, ping(), { session, headers: { accept: "*/*" } });
    assert.equal(wildcard.status, 200);
  });

  test("Content-Type must be application/json (415)", async () => {
    const res = await post(w.mcpUrl, JSON.stringify(ping()), { session, headers: { "content-type": "text/plain" } });
    assert.equal(res.status, 415);
  });

  test("bodies over the cap get 413, with or without Content-Length", async () => {
    const big = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping", params: { pad: "x".repeat(5000) } });
    assert.equal((await post(w.mcpUrl, big, { session })).status, 413);
    const chunks = [new TextEncoder().encode(big.slice(0, 3000)), new TextEncoder().encode(big.slice(3000))];
    const stream = new ReadableStream({ pull(c) { const n = chunks.shift(); n ? c.enqueue(n) : c.close(); } });
    const res = await fetch(w.mcpUrl, {
      method: "POST", body: stream, duplex: "half",
      headers: { "content-type": "application/json", accept: ACCEPT_BOTH, "mcp-session-id": session },
    });
    assert.equal(res.status, 413);
  });

  test("a body that is not JSON is 400 / -32700, with or without a session", async () => {
    for (const s of [session, undefined]) {
      const res = await post(w.mcpUrl, "{not json", { session: s });
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error.code, -32700);
    }
  });

  test("JSON that is not a valid JSON-RPC request is 400 / -32600", async () => {
    for (const body of [{ jsonrpc: "1.0", id: 1, method: "ping" }, { jsonrpc: "2.0", id: null, method: "ping" }, 42, { jsonrpc: "2.0" }]) {
      const res = await post(w.mcpUrl, body, { session });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal((await res.json()).error.code, -32600);
    }
  });

  test("a JSON-RPC batch is refused (removed in 2025-06-18)", async () => {
    const res = await post(w.mcpUrl, [ping(1), ping(2)], { session });
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.error.code, -32600);
    assert.match(body.error.message, /batch/);
  });

  test("notifications and responses get 202 with an empty body", async () => {
    for (const msg of [
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 12345 } },
      { jsonrpc: "2.0", id: "srv-unknown", result: {} },
    ]) {
      const res = await post(w.mcpUrl, msg, { session });
      assert.equal(res.status, 202);
      assert.equal(await res.text(), "");
    }
  });

  test("an unsupported MCP-Protocol-Version is 400; a missing one uses the negotiated version", async () => {
    const bad = await post(w.mcpUrl, ping(), { session, version: "1999-01-01" });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error.message, /MCP-Protocol-Version/);
    const none = await post(w.mcpUrl, ping(), { session });
    assert.deepEqual((await none.json()).result, {});
  });

  test("ping is {}, unknown methods -32601, logging/setLevel validates the level", async () => {
    assert.deepEqual((await rpc(w.mcpUrl, session, "ping")).reply.result, {});
    assert.equal((await rpc(w.mcpUrl, session, "no/such/method")).reply.error.code, -32601);
    assert.deepEqual((await rpc(w.mcpUrl, session, "logging/setLevel", { level: "warning" })).reply.result, {});
    assert.equal((await rpc(w.mcpUrl, session, "logging/setLevel", { level: "loud" })).reply.error.code, -32602);
  });

  test("other HTTP methods get 405 with Allow", async () => {
    const res = await fetch(w.mcpUrl, { method: "PUT", headers: { "mcp-session-id": session } });
    assert.equal(res.status, 405);
    assert.match(res.headers.get("allow"), /POST/);
  });
});

describe("origin, host and CORS", () => {
  test("a foreign Origin is refused with 403; an allowed one gets CORS headers", async () => {
    const evil = await post(w.mcpUrl, ping(), { headers: { origin: "http://evil.example.com" } });
    assert.equal(evil.status, 403);
    const { session } = await initialize(w.mcpUrl);
    const ok = await post(w.mcpUrl, ping(), { session, headers: { origin: "http://localhost:6274" } });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("access-control-allow-origin"), "http://localhost:6274");
    assert.match(ok.headers.get("access-control-expose-headers"), /Mcp-Session-Id/i);
  });

  test("CORS preflight names the MCP headers and exposes Mcp-Session-Id", async () => {
    const res = await fetch(w.mcpUrl, {
      method: "OPTIONS",
      headers: { origin: "http://localhost:6274", "access-control-request-method": "POST" },
    });
    assert.equal(res.status, 204);
    const allow = res.headers.get("access-control-allow-headers").toLowerCase();
    for (const h of ["mcp-session-id", "mcp-protocol-version", "last-event-id", "content-type", "accept"]) assert.ok(allow.includes(h), h);
    assert.match(res.headers.get("access-control-expose-headers"), /Mcp-Session-Id/i);
    assert.equal(res.headers.get("access-control-allow-origin"), "http://localhost:6274");
  });

  test("with ALLOWED_HOSTS set, a foreign Host is refused (DNS rebinding) and localhost accepted", async () => {
    const local = await startWorker({ ALLOWED_HOSTS: "localhost,127.0.0.1,[::1]" });
    try {
      // dispatchFetch delivers the Host of the URL as is, like a DNS-rebound browser would.
      const send = async (host) => {
        const res = await local.mf.dispatchFetch(`http://${host}/mcp`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: ACCEPT_BOTH, origin: `http://${host}` },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
        });
        await res.arrayBuffer();
        return res.status;
      };
      assert.equal(await send("evil.example.com"), 403);
      assert.equal(await send("localhost:8787"), 200);
    } finally {
      await local.stop();
    }
  });
});

describe("SSE streams", () => {
  test("a call that reports progress streams: priming event, ids on every event, result last, then closed", async () => {
    const { session } = await initialize(w.mcpUrl);
    const r = await rpc(w.mcpUrl, session, "tools/call", { name: "test_tool_with_progress", arguments: {}, _meta: { progressToken: "p1" } });
    assert.equal(r.status, 200);
    const [priming, ...rest] = r.events;
    assert.ok(priming.id && priming.retry > 0 && priming.hasData && priming.data === "", "priming event first");
    assert.ok(r.events.every((e) => e.id), "every event has an id");
    const progress = r.messages.filter((m) => m.method === "notifications/progress");
    assert.equal(progress.length, 3);
    assert.ok(progress.every((p) => p.params.progressToken === "p1"));
    const values = progress.map((p) => p.params.progress);
    assert.deepEqual(values, [...values].sort((a, b) => a - b));
    assert.equal(new Set(values).size, values.length, "strictly increasing");
    assert.deepEqual(r.messages.at(-1), r.reply, "the result is the last message");
    assert.equal(rest.at(-1).event, "message");
    assert.equal(r.events.ended, true, "the server closed the stream after the result");
  });

  test("a call without a progress token gets a plain JSON answer", async () => {
    const { session } = await initialize(w.mcpUrl);
    const res = await post(w.mcpUrl, { jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "test_tool_with_progress", arguments: {} } }, { session });
    assert.match(res.headers.get("content-type"), /^application\/json/);
    assert.equal((await res.json()).result.content[0].type, "text");
  });

  test("log messages honour logging/setLevel", async () => {
    const { session } = await initialize(w.mcpUrl);
    const loud = await rpc(w.mcpUrl, session, "tools/call", { name: "test_tool_with_logging", arguments: {} });
    assert.equal(loud.messages.filter((m) => m.method === "notifications/message").length, 3);
    await rpc(w.mcpUrl, session, "logging/setLevel", { level: "error" });
    const quiet = await rpc(w.mcpUrl, session, "tools/call", { name: "test_tool_with_logging", arguments: {} });
    assert.equal(quiet.messages.filter((m) => m.method === "notifications/message").length, 0);
    assert.ok(quiet.reply.result);
  });

  test("the GET stream carries JSON-RPC messages only; the session's tool events are on /sessions/:id/events, where Last-Event-ID replays exactly the missed ones", async () => {
    const { session } = await initialize(w.mcpUrl);
    const headers = { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": LATEST };
    const live = await fetch(w.mcpUrl, { headers });
    assert.equal(live.status, 200);
    assert.match(live.headers.get("content-type"), /^text\/event-stream/);
    const dashboardUrl = new URL(`/sessions/${session}/events`, w.url);
    const dashboard = await fetch(dashboardUrl, { headers: { accept: "text/event-stream" } });
    const reading = readSse(dashboard, { max: 3, timeoutMs: 5000 });
    await rpc(w.mcpUrl, session, "tools/call", { name: "get_mode_indicator", arguments: {} });
    const seen = await reading;
    assert.equal(seen[0].data, "", "priming event");
    assert.deepEqual(seen.slice(1).map((e) => e.event), ["tool_call", "tool_result"]);
    assert.equal(JSON.parse(seen[1].data).tool, "get_mode_indicator");
    assert.ok(seen.every((e) => e.id?.startsWith("g-")));
    const mcp = await readSse(live, { timeoutMs: 1000 });
    assert.deepEqual(mcp.filter((e) => e.data), [], "the MCP client's GET stream got none of them");

    // Two more calls while disconnected, then resume after the last event seen.
    await rpc(w.mcpUrl, session, "tools/call", { name: "switch_mode", arguments: { mode: "mobile-mode" } });
    await rpc(w.mcpUrl, session, "tools/call", { name: "switch_mode", arguments: { mode: "bogus" } });
    const resumed = await fetch(dashboardUrl, { headers: { accept: "text/event-stream", "last-event-id": seen.at(-1).id } });
    const missed = (await readSse(resumed, { max: 5, timeoutMs: 3000 })).filter((e) => e.data);
    assert.deepEqual(missed.map((e) => e.event), ["tool_call", "tool_result", "tool_call", "error"]);
    assert.match(JSON.parse(missed[3].data).error, /mode/);
    const mcpResumed = await fetch(w.mcpUrl, { headers: { ...headers, "last-event-id": seen.at(-1).id } });
    assert.deepEqual((await readSse(mcpResumed, { timeoutMs: 1000 })).filter((e) => e.data), [], "nor does a resumed GET stream replay them");
  });

  test("Last-Event-ID that this server never issued is 400", async () => {
    const { session } = await initialize(w.mcpUrl);
    const res = await fetch(w.mcpUrl, { headers: { accept: "text/event-stream", "mcp-session-id": session, "last-event-id": "nonsense" } });
    assert.equal(res.status, 400);
  });

  test("GET needs Accept: text/event-stream (406)", async () => {
    const { session } = await initialize(w.mcpUrl);
    const res = await fetch(w.mcpUrl, { headers: { accept: "application/json", "mcp-session-id": session } });
    assert.equal(res.status, 406);
  });

  test("a POST stream closed early is resumed with GET + Last-Event-ID and delivers the result", async () => {
    const { session } = await initialize(w.mcpUrl);
    const res = await post(w.mcpUrl, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "test_reconnection", arguments: {} } }, { session });
    const events = await readSse(res, { timeoutMs: 5000 });
    assert.equal(events.length, 1, "only the priming event before the connection ends");
    assert.equal(events.ended, true, "the server ended the connection");
    assert.match(events[0].id, /^r\d+-0$/);
    const resumed = await fetch(w.mcpUrl, { headers: { accept: "text/event-stream", "mcp-session-id": session, "last-event-id": events[0].id } });
    const rest = (await readSse(resumed, { timeoutMs: 5000 })).filter((e) => e.data);
    const reply = JSON.parse(rest.at(-1).data);
    assert.equal(reply.id, 1);
    assert.match(reply.result.content[0].text, /Reconnection test completed/);
  });

  test("concurrent POSTs reusing one JSON-RPC id each get their own result", async () => {
    const { session } = await initialize(w.mcpUrl);
    const names = ["vendor-search", "policy-compliance", "corporate-validation", "mobile-mode"];
    const replies = await Promise.all(
      names.map((name) =>
        post(w.mcpUrl, { jsonrpc: "2.0", id: 42, method: "tools/call", params: { name: "get_instruction_set", arguments: { name } } }, { session }).then((r) => r.json()),
      ),
    );
    replies.forEach((r, i) => {
      assert.equal(r.id, 42);
      assert.equal(r.result.structuredContent.name, names[i]);
    });
  });
});

describe("server-to-client requests and cancellation", () => {
  async function startCall(session, name, args, id) {
    const res = await post(w.mcpUrl, { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }, { session });
    assert.match(res.headers.get("content-type"), /^text\/event-stream/);
    return res;
  }

  test("sampling/createMessage goes out on the call's stream and the client's answer completes the call", async () => {
    const { session } = await initialize(w.mcpUrl, { capabilities: { sampling: {} } });
    const res = await startCall(session, "test_sampling", { prompt: "Hello?" }, 7);
    const it = sseEvents(res);
    const request = await waitForMessage(it, (m) => m.method === "sampling/createMessage");
    assert.ok(request, "sampling request sent on the call's stream");
    assert.equal(request.params.maxTokens, 100);
    assert.equal(request.params.messages[0].content.text, "Hello?");
    const answer = await post(w.mcpUrl, { jsonrpc: "2.0", id: request.id, result: { role: "assistant", model: "m", content: { type: "text", text: "Hi there" } } }, { session });
    assert.equal(answer.status, 202);
    const reply = await waitForMessage(it, (m) => m.id === 7);
    it.close();
    assert.equal(reply.result.content[0].text, "LLM response: Hi there");
  });

  test("calls on one session run in parallel: a call waiting for the client does not hold up the next", async () => {
    const { session } = await initialize(w.mcpUrl, { capabilities: { sampling: {} } });
    const res = await startCall(session, "test_sampling", { prompt: "Slow?" }, "slow");
    const it = sseEvents(res);
    const request = await waitForMessage(it, (m) => m.method === "sampling/createMessage");
    // The first call is now parked until the client answers; a second one completes meanwhile.
    const quick = await rpc(w.mcpUrl, session, "tools/call", { name: "test_simple_text", arguments: {} });
    assert.match(quick.reply.result.content[0].text, /simple text/i);
    await post(w.mcpUrl, { jsonrpc: "2.0", id: request.id, result: { role: "assistant", model: "m", content: { type: "text", text: "Done" } } }, { session });
    const reply = await waitForMessage(it, (m) => m.id === "slow");
    it.close();
    assert.equal(reply.result.content[0].text, "LLM response: Done");
  });

  test("a client that did not declare sampling gets an isError result naming the capability", async () => {
    const { session } = await initialize(w.mcpUrl);
    const r = await rpc(w.mcpUrl, session, "tools/call", { name: "test_sampling", arguments: { prompt: "x" } });
    assert.equal(r.reply.result.isError, true);
    assert.match(r.reply.result.content[0].text, /sampling/);
  });

  test("an unanswered elicitation times out with an isError result", async () => {
    const { session } = await initialize(w.mcpUrl, { capabilities: { elicitation: {} } });
    const r = await rpc(w.mcpUrl, session, "tools/call", { name: "test_elicitation", arguments: { message: "Who?" } });
    const request = r.messages.find((m) => m.method === "elicitation/create");
    assert.equal(request.params.message, "Who?");
    assert.equal(r.reply.result.isError, true);
    assert.match(r.reply.result.content[0].text, /did not answer elicitation\/create within 1500 ms/);
  });

  test("notifications/cancelled stops an in-flight call: 202, and the call ends without a result", async () => {
    const { session } = await initialize(w.mcpUrl, { capabilities: { elicitation: {} } });
    const res = await startCall(session, "test_elicitation", { message: "Wait" }, "cancel-me");
    const reading = readSse(res, { timeoutMs: 5000 });
    await new Promise((r) => setTimeout(r, 200));
    const cancel = await post(w.mcpUrl, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "cancel-me", reason: "user" } }, { session });
    assert.equal(cancel.status, 202);
    const messages = (await reading).filter((e) => e.data).map((e) => JSON.parse(e.data));
    const final = messages.at(-1);
    assert.equal(final.id, "cancel-me");
    assert.equal(final.result, undefined, "no result for a cancelled call");
    assert.equal(final.error.code, -32800);
  });
});
