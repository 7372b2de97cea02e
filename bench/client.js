// What `npm run bench` and `npm run load` share: an MCP client over undici pools (much less client
// CPU per call than fetch, which matters when the load generator shares 2 cores with workerd), a
// fixed-concurrency, fixed-duration load loop, percentiles, a local OpenAI-compatible model
// stand-in for instruction steps, and deterministic synthetic FlowMind contexts.
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Pool } from "undici";
import { root } from "../tests/support/worker.js";

export const VERSION = "2025-11-25";
/** The stateless revision: no session, each request carries its version and capabilities. */
export const MODERN = "2026-07-28";

/** The value at percentile `p` of ascending `sorted`. */
export const pct = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN);

/** Summary of latencies (ms) and a duration (ms): calls, requests/s, p50, p99. */
export function summary(latencies, errors, ms) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { calls: latencies.length + errors, errors, rps: (latencies.length / ms) * 1000, p50: pct(sorted, 50), p99: pct(sorted, 99) };
}

/** Only loopback servers are ever load targets. */
function loopback(url) {
  const host = new URL(url).hostname;
  if (!/^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(host)) throw new Error(`refusing to send load to ${host}: loopback addresses only`);
}

/** The JSON-RPC message of a reply: the body itself, or the last `data:` message of an SSE stream. */
function message(type, text) {
  if (!type.startsWith("text/event-stream")) return JSON.parse(text);
  const data = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
  return data.findLast((m) => m.result !== undefined || m.error !== undefined) ?? null;
}

/**
 * One MCP server at `mcpUrl`: `connect(headers)` opens a session (initialize + initialized) and
 * returns `{ call(name, args) → { ok, result, error }, rpc, session, close() }`; `attach(id,
 * headers)` returns the same for an existing session; `requests()` counts the POSTs sent so far.
 * With `reuse: false` every request goes on a connection of its own (see bench/load.js).
 */
export function server(mcpUrl, { connections = 64, reuse = true } = {}) {
  loopback(mcpUrl);
  const url = new URL(mcpUrl);
  const pool = new Pool(url.origin, { connections, pipelining: 1, keepAliveTimeout: 4_000 });
  let nextId = 1;
  let sent = 0;
  async function send(body, headers) {
    sent++;
    const res = await pool.request({
      path: url.pathname, method: "POST", body: JSON.stringify(body), reset: !reuse,
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, text };
  }
  async function connect(extra = {}) {
    const init = await send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "mcp-edge-bench", version: "1" } } }, extra);
    if (init.status !== 200) throw new Error(`initialize: HTTP ${init.status} ${init.text.slice(0, 300)}`);
    const s = attach(init.headers["mcp-session-id"], extra);
    const ack = await send({ jsonrpc: "2.0", method: "notifications/initialized" }, s.headers);
    if (ack.status !== 202) throw new Error(`notifications/initialized: HTTP ${ack.status}`);
    return s;
  }
  /** An existing session (say, after a server restart), by its id. */
  function attach(session, extra = {}) {
    const headers = Object.fromEntries(Object.entries({ ...extra, "mcp-session-id": session, "mcp-protocol-version": VERSION }).filter(([, v]) => v !== undefined));
    return {
      session,
      headers,
      /** A JSON-RPC request in this session: `{ ok, status, reply }`. */
      async rpc(method, params) {
        // A connection the server dropped is an answer like any other failure: no retry, since
        // the call may have taken effect.
        const r = await send({ jsonrpc: "2.0", id: nextId++, method, params }, headers).catch((e) => ({ status: 0, headers: {}, text: String(e) }));
        const reply = r.status === 200 ? message(String(r.headers["content-type"] ?? ""), r.text) : null;
        return { ok: r.status === 200 && !!reply?.result, status: r.status, reply, text: r.text };
      },
      /**
       * tools/call: `ok` is false on an HTTP error, a JSON-RPC error, an `isError` result or a
       * structured `status: "error"`.
       */
      async call(name, args) {
        const r = await this.rpc("tools/call", { name, arguments: args });
        const result = r.reply?.result;
        const ok = r.ok && !result.isError && result.structuredContent?.status !== "error";
        return { ok, result, error: ok ? null : (r.reply?.error?.message ?? result?.content?.[0]?.text ?? `HTTP ${r.status} ${r.text.slice(0, 200)}`) };
      },
      /** Ends the session (DELETE), so the server may free it. */
      async close() {
        await pool.request({ path: url.pathname, method: "DELETE", headers, reset: !reuse }).then((r) => r.body.dump()).catch(() => {});
      },
    };
  }
  /** A POST outside any session; resolves to the HTTP status. */
  const raw = async (body) => (await send(body, {})).status;
  return { connect, attach, raw, requests: () => sent, close: () => pool.close() };
}

/**
 * One 2026-07-28 (stateless) MCP server at `mcpUrl`, with the shape of `server()` so `load()` drives
 * either: `connect()` opens nothing (there are no sessions) and returns `{ call, rpc, close }`, each
 * request carrying `_meta` (version and client capabilities) and the `mcp-protocol-version`,
 * `mcp-method` and `mcp-name` headers the revision requires, and `headers` (say, a bearer token).
 */
export function stateless(mcpUrl, { connections = 64, headers: extra = {} } = {}) {
  loopback(mcpUrl);
  const url = new URL(mcpUrl);
  const pool = new Pool(url.origin, { connections, pipelining: 1, keepAliveTimeout: 4_000 });
  let nextId = 1;
  const client = {
    async rpc(method, params = {}) {
      const body = { jsonrpc: "2.0", id: nextId++, method, params: { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } };
      const headers = { ...extra, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": method, ...(params.name !== undefined ? { "mcp-name": params.name } : {}) };
      const r = await pool.request({ path: url.pathname, method: "POST", body: JSON.stringify(body), headers })
        .then(async (res) => ({ status: res.statusCode, headers: res.headers, text: await res.body.text() }))
        .catch((e) => ({ status: 0, headers: {}, text: String(e) }));
      const reply = r.status === 200 ? message(String(r.headers["content-type"] ?? ""), r.text) : null;
      return { ok: r.status === 200 && !!reply?.result, status: r.status, reply, text: r.text };
    },
    /** tools/call, judged as `server()`'s `call` judges it. */
    async call(name, args) {
      const r = await this.rpc("tools/call", { name, arguments: args });
      const result = r.reply?.result;
      const ok = r.ok && !result.isError && result.structuredContent?.status !== "error";
      return { ok, result, error: ok ? null : (r.reply?.error?.message ?? result?.content?.[0]?.text ?? `HTTP ${r.status} ${r.text.slice(0, 200)}`) };
    },
    close: async () => {},
  };
  return { connect: async () => client, close: () => pool.close() };
}

/**
 * A bare HTTP endpoint (the ceilings), with the shape of `server()`: each "call" is one GET of
 * `url` (no body: the ceilings answer without reading one), ok when answered 200.
 */
export function plain(url, { connections = 64 } = {}) {
  loopback(url);
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections, pipelining: 1, keepAliveTimeout: 4_000 });
  const client = {
    async call() {
      const r = await pool.request({ path: u.pathname, method: "GET" })
        .then(async (res) => ({ status: res.statusCode, text: await res.body.text() }))
        .catch((e) => ({ status: 0, text: String(e) }));
      return { ok: r.status === 200, error: r.status === 200 ? null : `HTTP ${r.status} ${r.text.slice(0, 200)}` };
    },
    close: async () => {},
  };
  return { connect: async () => client, close: () => pool.close() };
}

/**
 * `clients` virtual clients, each with its own session, call `call(client, i)` back to back for
 * `seconds`; returns the summary. Sessions are opened before the clock starts.
 */
export async function load(srv, { clients, seconds, headers = {}, call }) {
  const latencies = [];
  let errors = 0;
  let firstError = null;
  // A session the server would not open (a dropped connection, an HTTP error) is one error, and
  // that virtual client sits out: the run goes on and says so, rather than ending with no table.
  const opened = await Promise.all(Array.from({ length: clients }, () => srv.connect(headers).catch((e) => {
    errors++;
    firstError ??= `opening a session: ${e}`;
    return null;
  })));
  const sessions = opened.filter(Boolean);
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(sessions.map(async (s, c) => {
    for (let i = 0; performance.now() < end; i++) {
      const start = performance.now();
      const r = await call(s, i, c).catch((e) => ({ ok: false, error: String(e) }));
      if (r.ok) latencies.push(performance.now() - start);
      else {
        errors++;
        firstError ??= r.error;
      }
    }
  }));
  const elapsed = performance.now() - t0;
  await Promise.all(sessions.map((s) => s.close()));
  return { ...summary(latencies, errors, elapsed), firstError };
}

/**
 * An OpenAI-compatible chat-completions stand-in on 127.0.0.1 for instruction_set steps: it answers
 * with a JSON object holding the keys the system prompt asks for, after `delayMs` (changeable
 * while it runs). `requests` counts the calls per user prompt; `received()` all of them.
 */
export async function modelStandIn() {
  const requests = new Map();
  const value = (k) => (k === "validation_status" || k === "status" ? "approved" : k === "approval_required" ? false : `${k} value`);
  const m = {
    delayMs: 0,
    requests,
    received: () => [...requests.values()].reduce((a, b) => a + b, 0),
  };
  const srv = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      let keys = [];
      let prompt = "";
      try {
        const messages = JSON.parse(body).messages ?? [];
        keys = (messages[0]?.content.match(/Its keys: ([^.]+)\./)?.[1] ?? "").split(",").map((k) => k.trim()).filter(Boolean);
        prompt = messages.at(-1)?.content ?? "";
      } catch {
        // An unreadable request gets an empty answer; the step then reports what is missing.
      }
      requests.set(prompt, (requests.get(prompt) ?? 0) + 1);
      const reply = () => res.writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ choices: [{ message: { role: "assistant", content: JSON.stringify(Object.fromEntries(keys.map((k) => [k, value(k)]))) } }] }));
      if (m.delayMs) setTimeout(reply, m.delayMs);
      else reply();
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  m.url = `http://127.0.0.1:${srv.address().port}/v1/chat/completions`;
  m.close = () => {
    srv.closeAllConnections();
    srv.close();
  };
  return m;
}

/**
 * `n` synthetic rows of the FlowMind `contexts` table (migrations/0016): names, tags, examples and
 * descriptions drawn from the shipped catalog's own words by a fixed linear congruential
 * generator, so every run loads the same catalog with realistic term statistics.
 */
export function syntheticContexts(n) {
  const shipped = JSON.parse(readFileSync(join(root, "data", "flowmind", "contexts.json"), "utf8"));
  const vocab = shipped.flatMap((c) => `${c.name} ${c.description} ${c.example_requests.join(" ")}`.toLowerCase().split(/[^a-z0-9]+/)).filter((w) => w.length > 2);
  const domains = ["technical", "creative", "business", "regulatory", "personal", "emergency"];
  const complexities = ["simple", "moderate", "complex", "expert"];
  let seed = 42;
  const rnd = (k) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % k);
  const words = (k) => Array.from({ length: k }, () => vocab[rnd(vocab.length)]).join(" ");
  return Array.from({ length: n }, (_, i) => ({
    uri: `workflow://bench-${i}`,
    type: "workflow",
    name: words(3).slice(0, 100),
    description: words(35),
    domain: domains[i % domains.length],
    tags: JSON.stringify(Array.from({ length: 5 }, () => words(1))),
    complexity: complexities[i % complexities.length],
    example_requests: JSON.stringify(Array.from({ length: 3 }, () => words(10))),
    confidence_required: 0.6,
    required_variables: JSON.stringify(["system_component"]),
    optional_variables: JSON.stringify(["technology"]),
    execution_preview: JSON.stringify({ type: "sequential_workflow", estimated_steps: "3" }),
  }));
}
