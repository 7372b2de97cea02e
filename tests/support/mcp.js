// A small raw-HTTP MCP client for transport tests: exact headers, status codes and SSE frames.

export const ACCEPT_BOTH = "application/json, text/event-stream";
export const LATEST = "2025-11-25";

/** POSTs a JSON-RPC message (object or raw string) with sensible default headers. */
export async function post(url, body, { session, headers = {}, version } = {}) {
  const h = { "content-type": "application/json", accept: ACCEPT_BOTH, ...headers };
  if (session) h["mcp-session-id"] = session;
  if (version) h["mcp-protocol-version"] = version;
  for (const [k, v] of Object.entries(h)) if (v === undefined) delete h[k];
  return fetch(url, { method: "POST", headers: h, body: typeof body === "string" ? body : JSON.stringify(body) });
}

/** Starts a session and sends notifications/initialized; returns { session, result }. */
export async function initialize(url, { version = LATEST, capabilities = {} } = {}) {
  const res = await post(url, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: version, capabilities, clientInfo: { name: "mcp-edge-tests", version: "1.0.0" } },
  });
  if (res.status !== 200) throw new Error(`initialize: HTTP ${res.status} ${await res.text()}`);
  const session = res.headers.get("mcp-session-id");
  const result = (await res.json()).result;
  const ack = await post(url, { jsonrpc: "2.0", method: "notifications/initialized" }, { session, version: result.protocolVersion });
  if (ack.status !== 202) throw new Error(`initialized: HTTP ${ack.status}`);
  return { session, result, version: result.protocolVersion };
}

let nextId = 1;

/** Sends a request in a session and returns the parsed reply (JSON or the final SSE message). */
export async function rpc(url, session, method, params, { version = LATEST } = {}) {
  const id = nextId++;
  const res = await post(url, { jsonrpc: "2.0", id, method, ...(params ? { params } : {}) }, { session, version });
  const type = res.headers.get("content-type") ?? "";
  if (type.startsWith("text/event-stream")) {
    const events = await readSse(res);
    const messages = events.filter((e) => e.data).map((e) => JSON.parse(e.data));
    return { status: res.status, messages, reply: messages.find((m) => m.id === id), events };
  }
  return { status: res.status, reply: await res.json(), messages: [] };
}

/** Parses one SSE block into { id, event, data, retry, hasData, comment }. */
function parseBlock(block) {
  const ev = { data: "", comment: false };
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) ev.comment = true;
    else if (line.startsWith("id: ")) ev.id = line.slice(4);
    else if (line.startsWith("event: ")) ev.event = line.slice(7);
    else if (line.startsWith("retry: ")) ev.retry = Number(line.slice(7));
    else if (line.startsWith("data: ")) data.push(line.slice(6));
    else if (line === "data:") data.push("");
  }
  ev.data = data.join("\n");
  ev.hasData = data.length > 0;
  return ev;
}

/**
 * Reads SSE events one at a time: `await next()` gives the next event (comments skipped), or null when
 * the stream ends or `timeoutMs` passes; `close()` cancels the body.
 */
export function sseEvents(res, { timeoutMs = 10_000 } = {}) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const deadline = Date.now() + timeoutMs;
  let buf = "";
  return {
    /** True once the server closed the stream (as opposed to a timeout). */
    ended: false,
    async next() {
      for (;;) {
        const idx = buf.indexOf("\n\n");
        if (idx >= 0) {
          const ev = parseBlock(buf.slice(0, idx));
          buf = buf.slice(idx + 2);
          if (ev.comment && !ev.id && !ev.hasData) continue;
          return ev;
        }
        const left = deadline - Date.now();
        if (left <= 0) return null;
        const chunk = await Promise.race([reader.read(), new Promise((r) => setTimeout(() => r({ timeout: true }), left))]);
        if (chunk.done) this.ended = true;
        if (chunk.timeout || chunk.done) return null;
        buf += decoder.decode(chunk.value, { stream: true });
      }
    },
    close: () => reader.cancel().catch(() => {}),
  };
}

/**
 * Collects SSE events until the stream ends, `max` events arrive, or `timeoutMs` passes. The array's
 * `ended` property tells whether the server closed the stream.
 */
export async function readSse(res, { max = Infinity, timeoutMs = 10_000 } = {}) {
  const it = sseEvents(res, { timeoutMs });
  const events = [];
  try {
    while (events.length < max) {
      const ev = await it.next();
      if (!ev) break;
      events.push(ev);
    }
  } finally {
    it.close();
  }
  events.ended = it.ended;
  return events;
}

/** Reads events until one carries a JSON-RPC message matching `pred`; returns that message. */
export async function waitForMessage(it, pred) {
  for (;;) {
    const ev = await it.next();
    if (!ev) return null;
    if (!ev.data) continue;
    const msg = JSON.parse(ev.data);
    if (pred(msg)) return msg;
  }
}
