// The session page: reads /sessions/<id>/events and adds one table row per tool event as it
// arrives. It uses fetch() with a streaming reader and a small SSE parser instead of EventSource,
// because EventSource cannot send the Authorization header a token-owned session needs. Event data
// is only ever written as textContent, never parsed as HTML (the page's CSP also forbids it).
"use strict";
(() => {
  const TOKEN_KEY = "mcp-edge:session-page:token";
  const MAX_RETRY_MS = 30000;
  const SUMMARY_CHARS = 200;

  const id = decodeURIComponent(location.pathname.split("/")[2] || "");
  const byId = (name) => document.getElementById(name);
  const statusEl = byId("status");
  const detailEl = byId("status-detail");
  const rows = document.querySelector("#events tbody");
  const emptyEl = byId("empty");
  const tokenInput = byId("token");

  /** Ids of the events already shown, so a replay after a reconnect never adds a row twice. */
  const shown = new Set();
  let lastEventId = null;
  let retryMs = 1000;
  let failures = 0;
  let controller = null;
  let timer = null;

  byId("session-id").textContent = id;

  function setStatus(state, text, detail = "") {
    statusEl.dataset.state = state;
    statusEl.textContent = text;
    detailEl.textContent = detail;
  }

  /** The token sent as `Authorization`: this tab's sessionStorage when it works, else memory. */
  let token = "";
  try {
    token = sessionStorage.getItem(TOKEN_KEY) || "";
  } catch {
    // Storage is off (private mode, policy): the token lives in memory only.
  }

  function storeToken(value) {
    token = value;
    try {
      if (value) sessionStorage.setItem(TOKEN_KEY, value);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      // As above: memory only.
    }
  }

  /**
   * An SSE parser (the WHATWG event stream format): feed it decoded text in any chunks; it calls
   * `onEvent({id, event, data})` per complete event with data, `onRetry(ms)` for a retry field.
   * The last event id is taken only when an event is complete, so a frame cut by a dropped
   * connection is neither shown nor resumed from.
   */
  function sseParser({ onEvent, onId, onRetry }) {
    let buf = "";
    let data = [];
    let event = "";
    let idField = null;
    const line = (text) => {
      if (text === "") {
        if (idField !== null) onId(idField);
        if (data.length > 0 && data.join("\n") !== "") {
          onEvent({ id: idField, event: event || "message", data: data.join("\n") });
        }
        data = [];
        event = "";
        idField = null;
        return;
      }
      if (text.startsWith(":")) return;
      const colon = text.indexOf(":");
      const field = colon < 0 ? text : text.slice(0, colon);
      let value = colon < 0 ? "" : text.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") data.push(value);
      else if (field === "event") event = value;
      else if (field === "id" && !value.includes("\0")) idField = value;
      else if (field === "retry" && /^\d+$/.test(value)) onRetry(Number(value));
    };
    return (chunk) => {
      buf += chunk;
      for (;;) {
        const end = buf.search(/\r\n|\r|\n/);
        // A trailing \r may be the first half of \r\n: wait for the next chunk.
        if (end < 0 || (buf[end] === "\r" && end === buf.length - 1)) return;
        const text = buf.slice(0, end);
        buf = buf.slice(end + (buf.startsWith("\r\n", end) ? 2 : 1));
        line(text);
      }
    };
  }

  function cell(tr, className, text) {
    const td = document.createElement("td");
    td.className = className;
    if (text !== undefined) td.textContent = text;
    tr.appendChild(td);
    return td;
  }

  function span(parent, className, text) {
    const el = document.createElement("span");
    el.className = className;
    el.textContent = text;
    parent.appendChild(el);
    return el;
  }

  function clip(text) {
    return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS)}…` : text;
  }

  /** One line about a result: a tool's first text content, or a chain step's outputs as JSON. */
  function summary(result) {
    if (result && Array.isArray(result.content)) {
      const text = result.content.find((c) => c && c.type === "text" && typeof c.text === "string");
      if (text) return clip(text.text.trim());
    }
    return clip(JSON.stringify(result) ?? "");
  }

  function duration(data) {
    return typeof data.duration_ms === "number" ? `${Math.round(data.duration_ms)} ms` : "";
  }

  function render(ev) {
    let data;
    try {
      data = JSON.parse(ev.data);
    } catch {
      data = { raw: ev.data };
    }
    if (data === null || typeof data !== "object") data = { raw: ev.data };
    const tr = document.createElement("tr");
    tr.className = ev.event;
    tr.dataset.event = ev.event;
    tr.dataset.tool = typeof data.tool === "string" ? data.tool : "";
    if (ev.id) tr.dataset.eventId = ev.id;

    const now = new Date();
    const time = document.createElement("time");
    time.dateTime = now.toISOString();
    time.textContent = now.toLocaleTimeString([], { hour12: false });
    cell(tr, "time").appendChild(time);
    cell(tr, "event", ev.event === "tool_call" ? "call" : ev.event === "tool_result" ? "result" : ev.event);
    cell(tr, "tool", tr.dataset.tool);
    const details = cell(tr, "details");

    if (data.execution_id) {
      tr.dataset.execution = String(data.execution_id);
      const parts = [`chain step ${data.step ?? "?"}`];
      if (data.type) parts.push(String(data.type));
      parts.push(`execution ${data.execution_id}`);
      span(details, "step", parts.join(" · "));
    }
    if (ev.event === "tool_call") {
      if ("arguments" in data) span(details, "args", JSON.stringify(data.arguments));
      else if (typeof data.input === "string") span(details, "args", data.input);
    } else if (ev.event === "tool_result") {
      span(details, `flag ${data.cached ? "cached" : "fresh"}`, data.cached ? "cached" : "fresh");
      span(details, "flag duration", duration(data));
      if (data.result && data.result.isError) span(details, "flag", "isError");
      span(details, "summary", summary(data.result));
      const more = document.createElement("details");
      const label = document.createElement("summary");
      label.textContent = "full result";
      const pre = document.createElement("pre");
      pre.textContent = JSON.stringify(data.result, null, 2);
      more.append(label, pre);
      details.appendChild(more);
    } else if (ev.event === "error") {
      if (duration(data)) span(details, "flag duration", duration(data));
      span(details, "message", String(data.error ?? ""));
    } else {
      span(details, "args", "raw" in data ? data.raw : JSON.stringify(data));
    }
    rows.appendChild(tr);
    emptyEl.hidden = true;
  }

  async function errorMessage(res) {
    try {
      const body = await res.json();
      return String((body && body.error && body.error.message) || "");
    } catch {
      return "";
    }
  }

  function retryLater(reason) {
    failures += 1;
    const delay = Math.min(retryMs * 2 ** Math.min(failures - 1, 5), MAX_RETRY_MS);
    setStatus("reconnecting", "Reconnecting…", `${reason}; next try in ${Math.round(delay / 1000)} s`);
    timer = setTimeout(connect, delay);
  }

  async function connect() {
    clearTimeout(timer);
    if (controller) controller.abort();
    const mine = new AbortController();
    controller = mine;
    const headers = { accept: "text/event-stream" };
    if (token) headers.authorization = `Bearer ${token}`;
    if (lastEventId) headers["last-event-id"] = lastEventId;
    if (failures === 0) setStatus("connecting", "Connecting…");

    let res;
    try {
      res = await fetch(`/sessions/${encodeURIComponent(id)}/events`, { headers, signal: mine.signal, cache: "no-store" });
    } catch (e) {
      if (!mine.signal.aborted) retryLater("the connection failed");
      return;
    }
    if (!res.ok) {
      const message = await errorMessage(res);
      if (mine !== controller) return;
      if (res.status === 401) {
        setStatus("refused", "Refused: a valid token is needed", [message, "Enter a token for this server above."].filter(Boolean).join(" "));
        tokenInput.focus();
      } else if (res.status === 403) {
        if (token) {
          setStatus("refused", "Refused: this session belongs to another user", [message, "Watch it with a token of the user who started it."].filter(Boolean).join(". "));
        } else {
          setStatus("refused", "Refused: this session was opened with a token", "Enter a token of the user who started it above.");
        }
        tokenInput.focus();
      } else if (res.status === 404) {
        setStatus("unknown", "Unknown session", "No session has this id: it has ended, expired, or never existed.");
      } else if (res.status === 400 && lastEventId) {
        // The server no longer knows where we were: start over live (rows already shown stay).
        lastEventId = null;
        retryLater(message || "the resume position was refused");
      } else if (res.status >= 500) {
        retryLater(`the server answered ${res.status}`);
      } else {
        setStatus("failed", `Failed: HTTP ${res.status}`, message);
      }
      return;
    }
    failures = 0;
    setStatus("live", "Live", "new events appear as they happen");
    const parse = sseParser({
      onId: (value) => {
        lastEventId = value || null;
      },
      onRetry: (ms) => {
        retryMs = Math.max(ms, 100);
      },
      onEvent: (ev) => {
        if (ev.id && shown.has(ev.id)) return;
        if (ev.id) shown.add(ev.id);
        render(ev);
      },
    });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parse(decoder.decode(value, { stream: true }));
      }
    } catch {
      // A dropped connection: resumed below.
    }
    if (!mine.signal.aborted) retryLater("the stream ended");
  }

  byId("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    storeToken(tokenInput.value.trim());
    tokenInput.value = "";
    failures = 0;
    connect();
  });
  byId("forget").addEventListener("click", () => {
    storeToken("");
    tokenInput.value = "";
    failures = 0;
    connect();
  });

  connect();
})();
