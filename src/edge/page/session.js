// The session page, the seed's assistant: a conversation (its history from GET
// /sessions/<id>/chat, then turns sent to POST /sessions/<id>/chat with their answers streamed),
// approval cards for changes that wait for the user, and the session's tool activity from
// /sessions/<id>/events (from its first event: Last-Event-ID g-0), one table row per event. It uses
// fetch() with a streaming reader and a small SSE parser instead of EventSource, because
// EventSource cannot send the Authorization header a token-owned session needs. Data is only ever
// written as textContent, never parsed as HTML (the page's CSP also forbids it).
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
  // "g-0" asks for the session's events from its first one, so the page opens with its history.
  let lastEventId = "g-0";
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
      // During a turn of this page, the turn's own answer shows the card, in its place.
      if (!busy) confirmationCard(data.result, false);
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
    if (!historyLoaded) loadHistory();
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
    historyLoaded = false;
    lastEventId = lastEventId || "g-0";
    connect();
  });
  byId("forget").addEventListener("click", () => {
    storeToken("");
    tokenInput.value = "";
    failures = 0;
    connect();
  });

  // ---- The assistant: conversation, turns and approval cards ----

  const conversation = byId("conversation");
  const chatForm = byId("chat-form");
  const messageInput = byId("message");
  const sendButton = byId("send");
  const chatNote = byId("chat-note");
  const DECIDED_KEY = "mcp-edge:session-page:decided";
  const DEFAULT_LIFETIME_MS = 300000;

  let historyLoaded = false;
  let historyShown = false;
  /** Where new conversation entries go: the list, or a fragment while history is being built. */
  let target = conversation;
  let busy = false;
  /** Messages to send once the running turn ends (a decision made while the model was answering). */
  const queued = [];
  /** Approval cards by confirmation id (or chat approval id), so one change never gets two cards. */
  const cards = new Map();

  function authHeaders(extra = {}) {
    return token ? { ...extra, authorization: `Bearer ${token}` } : extra;
  }

  function scrollToEnd(el) {
    if (typeof el.scrollIntoView === "function") el.scrollIntoView({ block: "nearest" });
  }

  /** A conversation entry: `role` is user, assistant, tool or error. Returns its text element. */
  function entry(role, label, text = "") {
    const li = document.createElement("li");
    li.className = `msg ${role}`;
    li.dataset.role = role;
    span(li, "who", label);
    const body = document.createElement("div");
    body.className = "text";
    body.textContent = text;
    li.appendChild(body);
    target.appendChild(li);
    if (target === conversation) scrollToEnd(li);
    return body;
  }

  /** A tool call in the conversation; its result fills it in later (`toolLines` by call id). */
  const toolLines = new Map();
  function toolLine(callId, tool, args) {
    const body = entry("tool", `Tool · ${tool}`);
    const li = body.parentElement;
    li.dataset.tool = tool;
    if (callId) li.dataset.callId = callId;
    li.dataset.outcome = "running";
    span(body, "args", args === undefined ? "" : JSON.stringify(args));
    const result = span(body, "summary", "");
    result.hidden = true;
    if (callId) toolLines.set(callId, { li, result });
    return { li, result };
  }

  function toolDone(data) {
    const line = toolLines.get(data.id) || toolLine(data.id, String(data.tool || "?"));
    // A domain tool's refusal is an answer (`status: "error"`), not a failed call: shown as one.
    const failed = data.is_error || data.result?.structuredContent?.status === "error";
    line.li.dataset.outcome = failed ? "error" : "ok";
    line.result.hidden = false;
    line.result.textContent = `${failed ? "✗" : "✓"} ${summary(data.result)}`;
  }

  /** Which of this tab's confirmations were decided here, so a reload shows them decided. */
  function decidedHere() {
    try {
      return JSON.parse(sessionStorage.getItem(DECIDED_KEY) || "{}") || {};
    } catch {
      return {};
    }
  }
  function rememberDecision(cardId, state, text) {
    try {
      const all = decidedHere();
      all[cardId] = { state, text };
      sessionStorage.setItem(DECIDED_KEY, JSON.stringify(all));
    } catch {
      // Storage is off: the card is only decided in this view.
    }
  }

  function words(key) {
    return key.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/_/g, " ").toLowerCase();
  }

  function secondsLeft(card) {
    return Math.ceil((Number(card.dataset.expires) - Date.now()) / 1000);
  }

  function showTimeLeft(card) {
    if (card.dataset.state !== "pending" || !card.dataset.expires) return;
    const left = secondsLeft(card);
    const el = card.querySelector(".time-left");
    if (left <= 0) {
      settle(card, "expired", "Expired: nobody decided in time, so nothing was changed.");
      if (card.dataset.chat === "1" && card.dataset.kind === "confirmation") tellModel(`Expired: confirmation ${card.dataset.id}.`);
      return;
    }
    el.textContent = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")} left to decide`;
  }

  /** Ends a card's decision: buttons off, the outcome written, focus kept on the card. */
  function settle(card, state, text) {
    card.dataset.state = state;
    for (const b of card.querySelectorAll("button")) b.disabled = true;
    card.querySelector(".time-left").textContent = "";
    const out = card.querySelector(".outcome");
    out.textContent = text;
    out.hidden = false;
    rememberDecision(card.dataset.id, state, text);
  }

  /** An approval card: what will change, details, Approve / Deny and the time left. */
  function card({ id, kind, title, change, details, expires, decide }) {
    const li = document.createElement("li");
    li.className = "card";
    li.tabIndex = -1;
    li.dataset.id = id;
    li.dataset.kind = kind;
    li.dataset.state = "pending";
    li.setAttribute("role", "group");
    const h = document.createElement("h3");
    h.textContent = title;
    h.id = `card-${id}`;
    li.setAttribute("aria-labelledby", h.id);
    const p = document.createElement("p");
    p.className = "change";
    p.textContent = change;
    li.append(h, p);
    if (details.length > 0) {
      const dl = document.createElement("dl");
      for (const [k, v] of details) {
        const dt = document.createElement("dt");
        dt.textContent = k;
        const dd = document.createElement("dd");
        dd.textContent = v;
        dl.append(dt, dd);
      }
      li.appendChild(dl);
    }
    const actions = document.createElement("div");
    actions.className = "actions";
    const approve = document.createElement("button");
    approve.type = "button";
    approve.className = "approve";
    approve.textContent = "Approve";
    const deny = document.createElement("button");
    deny.type = "button";
    deny.className = "deny";
    deny.textContent = "Deny";
    const left = span(actions, "time-left", "");
    actions.prepend(approve, deny);
    li.appendChild(actions);
    left.setAttribute("aria-live", "off");
    const out = document.createElement("p");
    out.className = "outcome";
    out.setAttribute("role", "status");
    out.hidden = true;
    li.appendChild(out);
    if (expires) li.dataset.expires = String(expires);
    const press = (approved) => async () => {
      if (li.dataset.state !== "pending") return;
      li.dataset.state = "deciding";
      for (const b of li.querySelectorAll("button")) b.disabled = true;
      await decide(li, approved);
    };
    approve.addEventListener("click", press(true));
    deny.addEventListener("click", press(false));
    conversation.appendChild(li);
    cards.set(id, li);
    const earlier = decidedHere()[id];
    if (earlier) settle(li, earlier.state, earlier.text);
    else {
      showTimeLeft(li);
      scrollToEnd(li);
      // A card still to decide takes the focus, so the keyboard is one Tab from Approve.
      if (li.dataset.state === "pending") li.focus({ preventScroll: true });
    }
    return li;
  }

  function formatValue(v) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  /**
   * The card of a domain write waiting for the user (`pending_confirmation`): deciding calls
   * POST /api/confirm/<id> with this tab's token, then tells the model (when the change came from
   * this chat) so it can check the outcome and confirm it to the user.
   */
  function confirmationCard(result, fromChat) {
    const answer = result && result.structuredContent;
    if (!answer || answer.status !== "pending_confirmation" || typeof answer.confirmationId !== "string") return;
    const id = answer.confirmationId;
    const existing = cards.get(id);
    if (existing) {
      if (fromChat) existing.dataset.chat = "1";
      return;
    }
    const data = answer.confirmationData && typeof answer.confirmationData === "object" ? answer.confirmationData : {};
    const skip = new Set(["action", "mcpServer", "userId", "timestamp", "expiresAt"]);
    const details = Object.entries(data)
      .filter(([k]) => !skip.has(k))
      .map(([k, v]) => [words(k), formatValue(v)]);
    const expires = Date.parse(data.expiresAt) || (typeof data.timestamp === "number" ? data.timestamp + DEFAULT_LIFETIME_MS : 0);
    const c = card({
      id,
      kind: "confirmation",
      title: `Approve this change? (${String(data.action || "change").replace(/_/g, " ")})`,
      change: String(answer.message || ""),
      details,
      expires,
      decide: decideConfirmation,
    });
    if (fromChat) c.dataset.chat = "1";
  }

  async function decideConfirmation(c, approved) {
    const id = c.dataset.id;
    let res;
    let body = null;
    try {
      res = await fetch(`/api/confirm/${encodeURIComponent(id)}`, {
        method: "POST",
        headers: authHeaders({ "content-type": "application/json" }),
        body: JSON.stringify({ approved }),
        cache: "no-store",
      });
      body = await res.json().catch(() => null);
    } catch {
      c.dataset.state = "pending";
      for (const b of c.querySelectorAll("button")) b.disabled = false;
      c.querySelector(".outcome").hidden = false;
      c.querySelector(".outcome").textContent = "The decision could not be sent (network); try again.";
      return;
    }
    const said = body && (body.data?.message || body.message);
    let state;
    let text;
    if (res.ok && body?.status === "success") {
      state = approved ? "executed" : "denied";
      text = approved ? `Approved and done. ${said || ""}`.trim() : "Denied: nothing was changed.";
    } else if (res.status === 410) {
      state = "expired";
      text = "Expired: nobody decided in time, so nothing was changed.";
    } else if (res.status === 401) {
      c.dataset.state = "pending";
      for (const b of c.querySelectorAll("button")) b.disabled = false;
      c.querySelector(".outcome").hidden = false;
      c.querySelector(".outcome").textContent = "Deciding needs your token: enter it above, then decide again.";
      tokenInput.focus();
      return;
    } else {
      state = "failed";
      text = `Not done: ${said || `HTTP ${res.status}`}${body?.suggestedAction ? ` ${body.suggestedAction}` : ""}`;
    }
    settle(c, state, text);
    if (c.dataset.chat === "1") {
      const verb = state === "executed" ? "Approved" : state === "denied" ? "Denied" : state === "expired" ? "Expired" : "Approved";
      tellModel(`${verb}: confirmation ${id}.`);
    }
  }

  /** The card of tool calls the chat holds until the user approves them (`approval_required`). */
  function heldCard(data) {
    const calls = Array.isArray(data.calls) ? data.calls : [];
    card({
      id: String(data.approval),
      kind: "chat",
      title: "Run these tools? They change data",
      change: calls.map((c) => `${c.tool} ${JSON.stringify(c.arguments)}`).join("\n"),
      details: [],
      expires: 0,
      decide: async (c, approved) => {
        settle(c, approved ? "approved" : "denied", approved ? "Approved: running them now." : "Denied: they were not run.");
        await turn({ [approved ? "approve" : "deny"]: data.approval }, null);
      },
    });
  }

  /** Sends a message to the model now, or after the running turn. */
  function tellModel(text) {
    if (busy) queued.push(text);
    else turn({ message: text }, text);
  }

  function setBusy(on) {
    busy = on;
    sendButton.disabled = on;
    document.body.dataset.turn = on ? "running" : "idle";
  }

  /** One chat turn: POSTs `body`, shows `shownText` as the user's message, streams the answer. */
  async function turn(body, shownText) {
    setBusy(true);
    chatNote.textContent = "The assistant is answering…";
    if (shownText !== null) entry("user", "You", shownText);
    let current = null;
    let reason = "error";
    try {
      const res = await fetch(`/sessions/${encodeURIComponent(id)}/chat`, {
        method: "POST",
        headers: authHeaders({ "content-type": "application/json", accept: "text/event-stream" }),
        body: JSON.stringify(body),
        cache: "no-store",
      });
      if (!res.ok) {
        const message = await errorMessage(res);
        entry("error", "Not sent", `${message || `HTTP ${res.status}`}`);
      } else {
        const parse = sseParser({
          onId: () => {},
          onRetry: () => {},
          onEvent: (ev) => {
            let data;
            try {
              data = JSON.parse(ev.data);
            } catch {
              return;
            }
            if (ev.event === "text") {
              current = current || entry("assistant", "Assistant");
              current.textContent += String(data.text ?? "");
            } else if (ev.event === "tool_call") {
              current = null;
              toolLine(data.id, String(data.tool ?? "?"), data.arguments);
            } else if (ev.event === "tool_result") {
              current = null;
              toolDone(data);
              confirmationCard(data.result, true);
            } else if (ev.event === "approval_required") {
              current = null;
              heldCard(data);
            } else if (ev.event === "error") {
              if (data.kind === "unknown_tool" && toolLines.has(data.id)) return;
              current = null;
              entry("error", "Problem", String(data.message ?? ""));
            } else if (ev.event === "done") {
              reason = String(data.reason ?? "");
            }
          },
        });
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          parse(decoder.decode(value, { stream: true }));
        }
      }
    } catch {
      entry("error", "Problem", "The connection to the server broke off; send the message again.");
    }
    chatNote.textContent = reason === "approval_required" ? "Waiting for your decision on the card above." : "";
    document.body.dataset.turns = String(Number(document.body.dataset.turns) + 1);
    document.body.dataset.lastReason = reason;
    setBusy(false);
    if (queued.length > 0) tellModel(queued.shift());
  }

  const CALL_TAG = /<tool_call name="([^"]*)" args=([\s\S]*?)><\/tool_call>/g;
  const RESULT_TAG = /<tool_result(?: name="([^"]*)")? status="([^"]*)">([\s\S]*?)<\/tool_result>/g;
  const unescapeTags = (t) => t.replace(/\\u003c/g, "<").replace(/\\u003e/g, ">");

  /** Shows a stored conversation: messages, the tools the assistant called and their results. */
  function showHistory(messages) {
    for (const m of messages) {
      const content = String(m.content ?? "");
      if (m.role === "user") entry("user", "You", content);
      else if (m.role === "assistant") {
        let at = 0;
        for (const call of content.matchAll(CALL_TAG)) {
          const before = content.slice(at, call.index).trim();
          if (before) entry("assistant", "Assistant", before);
          let args;
          try {
            args = JSON.parse(call[2]);
          } catch {
            args = call[2];
          }
          toolLine(null, call[1], args);
          at = call.index + call[0].length;
        }
        const rest = content.slice(at).trim();
        if (rest) entry("assistant", "Assistant", rest);
      } else {
        for (const r of content.matchAll(RESULT_TAG)) {
          const body = entry("tool", `Result · ${r[1] || "?"}`, clip(`${r[2] === "error" ? "✗" : "✓"} ${unescapeTags(r[3])}`));
          body.parentElement.dataset.outcome = r[2] === "error" ? "error" : "ok";
        }
      }
    }
  }

  async function loadHistory() {
    historyLoaded = true;
    let res;
    try {
      res = await fetch(`/sessions/${encodeURIComponent(id)}/chat`, { headers: authHeaders(), cache: "no-store" });
    } catch {
      historyLoaded = false;
      return;
    }
    if (!res.ok) return;
    const body = await res.json().catch(() => null);
    if (historyShown || !body || !Array.isArray(body.messages)) return;
    historyShown = true;
    // Earlier than anything shown since the page opened (cards of replayed events): goes first.
    target = document.createDocumentFragment();
    try {
      showHistory(body.messages);
      conversation.prepend(target);
    } finally {
      target = conversation;
    }
    // Calls the chat still holds for the user's approval, when the server says which.
    if (body.pending && typeof body.pending.approval === "string" && !cards.has(body.pending.approval)) heldCard(body.pending);
  }

  chatForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = messageInput.value.trim();
    if (!text || busy) return;
    messageInput.value = "";
    turn({ message: text }, text);
  });
  messageInput.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      chatForm.requestSubmit();
    }
  });
  setInterval(() => {
    for (const c of cards.values()) showTimeLeft(c);
  }, 1000);

  // A link from a pending_confirmation answer (`approveUrl`): /sessions/<id>#confirm=<confirmation>.
  // The session's replayed events show its card with what will change; a confirmation asked
  // elsewhere (not in these events) still gets a card that can decide it.
  const linked = /^#confirm=([0-9a-f]{32})$/.exec(location.hash);
  if (linked) {
    const wanted = linked[1];
    const bare = () => {
      if (cards.has(wanted)) return cards.get(wanted).focus();
      if (statusEl.dataset.state !== "live") return setTimeout(bare, 1000);
      card({
        id: wanted,
        kind: "confirmation",
        title: "Approve this change?",
        change: `Confirmation ${wanted}: the change your assistant asked for in another conversation. Approve it only if you asked for it.`,
        details: [],
        expires: 0,
        decide: decideConfirmation,
      });
    };
    setTimeout(bare, 2000);
  }

  connect();
})();
