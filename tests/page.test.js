// The session page GET /sessions/:id in headless Chromium (Debian's chromium, driven by
// playwright-core) against the built Worker: an MCP client (the official SDK) makes tool calls one
// at a time and the page must show each event as it happens, in order; errors and chain steps
// included; data shown as text, never as HTML; a token session watched with its user's token, and
// refused clearly for another user; a dropped connection resumed with Last-Event-ID, no row twice.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startWorker } from "./support/worker.js";
import { hs256 } from "../scripts/token.js";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const CI = Boolean(process.env.CI) && process.env.CI !== "false";
const missing = !existsSync(CHROMIUM);
// Without a browser the page cannot be tested: skip locally with the reason, fail under CI.
const skip = missing && !CI ? `${CHROMIUM} is missing: install Debian's chromium package (scripts/toolchain.sh does) to run the session page tests` : false;

const SECRET = "page-secret";
const ALICE = "00000000-0000-4000-8000-000000000010";
const MALLORY = "00000000-0000-4000-8000-000000000011";
const WAIT = { timeout: 15_000 };

let w, browser, profile, aud;
before(async () => {
  if (skip) return;
  if (missing) throw new Error(`CI: ${CHROMIUM} is missing; scripts/toolchain.sh installs Debian's chromium package`);
  w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
  aud = new URL("/mcp", w.url).href;
  profile = mkdtempSync(join(tmpdir(), "mcp-edge-chromium-"));
  browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
});
after(async () => {
  await browser?.close();
  await w?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

const token = (sub) => hs256({ sub, roles: [], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET);

/** An MCP session through the official SDK client, anonymous or with a bearer token. */
async function connect(bearer) {
  const client = new Client({ name: "mcp-edge-page-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(w.mcpUrl), bearer ? { requestInit: { headers: { authorization: `Bearer ${bearer}` } } } : {});
  await client.connect(transport);
  return { client, session: transport.sessionId, close: () => client.close() };
}

/** A new tab on the page; CSP violations and uncaught script errors are collected in `problems`. */
async function open(url) {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Trusted Type/i.test(m.text())) problems.push(m.text());
  });
  const res = await page.goto(url);
  return { page, res, problems };
}

const statusOf = (page) => page.$eval("#status", (s) => ({ state: s.dataset.state, text: s.textContent, detail: s.nextElementSibling.textContent }));
const waitState = (page, state) => page.waitForSelector(`#status[data-state="${state}"]`, WAIT);

/** The table's rows as { event, tool, id, execution, text }. */
const rowsOf = (page) =>
  page.$$eval("#events tbody tr", (trs) => trs.map((tr) => ({ event: tr.dataset.event, tool: tr.dataset.tool, id: tr.dataset.eventId, execution: tr.dataset.execution, text: tr.textContent })));

/** Waits until the table has `n` rows, then returns them. */
async function rows(page, n) {
  await page.waitForFunction((n) => document.querySelectorAll("#events tbody tr").length >= n, n, WAIT);
  return rowsOf(page);
}

/** Waits for exactly the rows `expected` ([event, tool] pairs) after the first `before` rows. */
async function newRows(page, before, expected) {
  const all = await rows(page, before + expected.length);
  const added = all.slice(before);
  assert.deepEqual(added.map((r) => [r.event, r.tool]), expected);
  return added;
}

describe("the session page", { skip }, () => {
  test("is served with a strict policy; ids that cannot name a session are 404", async () => {
    const { session, close } = await connect();
    const res = await fetch(new URL(`/sessions/${session}`, w.url));
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/html; charset=utf-8$/);
    const csp = res.headers.get("content-security-policy");
    assert.match(csp, /^default-src 'none';/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/]{43}=';/);
    assert.match(csp, /connect-src 'self';/);
    assert.doesNotMatch(csp, /unsafe/);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assert.equal(res.headers.get("referrer-policy"), "no-referrer");
    assert.equal(res.headers.get("cache-control"), "no-store");
    const html = await res.text();
    assert.ok(!html.includes(session), "the page is the same for every session");

    for (const bad of ["not-a-session", "A".repeat(64), "a".repeat(63)]) {
      const r = await fetch(new URL(`/sessions/${bad}`, w.url));
      assert.equal(r.status, 404, bad);
      assert.equal((await r.json()).error.code, -32001);
    }
    const post = await fetch(new URL(`/sessions/${session}`, w.url), { method: "POST" });
    assert.equal(post.status, 405);
    await close();
  });

  test("shows each tool call, result, error and chain step as it happens, in order", async () => {
    const { client, session, close } = await connect();
    const { page, res, problems } = await open(new URL(`/sessions/${session}`, w.url).href);
    assert.equal(res.status(), 200);
    assert.equal(await page.textContent("#session-id"), session);
    await waitState(page, "live");
    assert.equal((await rowsOf(page)).length, 0);

    // A successful call: its call row, then its result row.
    await client.callTool({ name: "switch_mode", arguments: { mode: "interactive-mode" } });
    const [call, result] = await newRows(page, 0, [["tool_call", "switch_mode"], ["tool_result", "switch_mode"]]);
    assert.match(call.text, /\{"mode":"interactive-mode"\}/);
    assert.match(result.text, /fresh/);
    assert.match(result.text, /\d+ ms/);
    assert.match(result.text, /interactive-mode/, "a summary of the result");

    // A failing call: the error row says why.
    const failed = await client.callTool({ name: "switch_mode", arguments: { mode: "desktop-mode" } });
    assert.equal(failed.isError, true);
    const [, error] = await newRows(page, 2, [["tool_call", "switch_mode"], ["error", "switch_mode"]]);
    assert.ok(error.text.includes(failed.content[0].text), error.text);

    // A chain run: its steps appear between the call and the result of execute_chain.
    const steps = [
      { id: 1, name: "greet", type: "data_transformation", input_template: "Hello {name}", input_variables: [], output_variables: ["greeting"] },
      { id: 2, name: "shout", type: "data_transformation", input_template: "{greeting|upper}", input_variables: ["greeting"], output_variables: ["loud"] },
    ];
    const created = await client.callTool({ name: "create_chain", arguments: { chain_definition: { name: "page-demo", title: "Page demo", category: "custom", steps }, creation_options: { overwrite_existing: true } } });
    assert.equal(created.isError, undefined, created.content?.[0]?.text);
    await newRows(page, 4, [["tool_call", "create_chain"], ["tool_result", "create_chain"]]);
    const ran = await client.callTool({ name: "execute_chain", arguments: { chain_name: "page-demo", variables: { name: "Dana" } } });
    assert.equal(ran.isError, undefined, ran.content?.[0]?.text);
    const chainRows = await newRows(page, 6, [
      ["tool_call", "execute_chain"],
      ["tool_call", "page-demo/greet"],
      ["tool_result", "page-demo/greet"],
      ["tool_call", "page-demo/shout"],
      ["tool_result", "page-demo/shout"],
      ["tool_result", "execute_chain"],
    ]);
    const execution = ran.content[0].text.match(/exec-[0-9a-f]{32}/)[0];
    for (const r of chainRows.slice(1, 5)) {
      assert.equal(r.execution, execution);
      const type = r.event === "tool_call" ? "data_transformation · " : "";
      assert.match(r.text, new RegExp(`chain step [12] · ${type}execution ${execution}`));
    }
    assert.match(chainRows[1].text, /Hello Dana/, "the step's input");
    assert.match(chainRows[4].text, /HELLO DANA/);

    const all = await rowsOf(page);
    assert.equal(new Set(all.map((r) => r.id)).size, all.length, "every row is one event");
    assert.deepEqual(problems, []);
    await page.close();
    await close();
  });

  test("event data is shown as text, never as HTML", async () => {
    const { client, session, close } = await connect();
    const { page, problems } = await open(new URL(`/sessions/${session}`, w.url).href);
    await waitState(page, "live");
    const payload = "<img src=x onerror=window.__pwned=1><b>bold</b>";
    await client.callTool({ name: "get_instruction_set", arguments: { name: payload } });
    const [call, answer] = await newRows(page, 0, [["tool_call", "get_instruction_set"], ["error", "get_instruction_set"]]);
    assert.ok(call.text.includes(JSON.stringify({ name: payload })), call.text);
    assert.ok(answer.text.includes("<img src=x"), answer.text);
    assert.equal(await page.locator("#events img, #events b").count(), 0, "no element was made from the data");
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.deepEqual(problems, []);
    await page.close();
    await close();
  });

  test("a token session: its user's token shows it, another user's token is refused on the page", async () => {
    const alice = token(ALICE);
    const { client, session, close } = await connect(alice);
    const url = new URL(`/sessions/${session}`, w.url).href;

    const { page, problems } = await open(url);
    await waitState(page, "refused");
    assert.match((await statusOf(page)).text, /Refused: this session was opened with a token/, "without a token");
    await page.fill("#token", alice);
    await page.click("#token-form button[type=submit]");
    await waitState(page, "live");
    assert.ok(!page.url().includes(alice), "the token is not in the URL");
    await client.callTool({ name: "get_mode_indicator", arguments: {} });
    await newRows(page, 0, [["tool_call", "get_mode_indicator"], ["tool_result", "get_mode_indicator"]]);
    // The token stays with this tab: a reload watches again without asking.
    await page.reload();
    await waitState(page, "live");
    assert.deepEqual(problems, []);
    await page.close();

    const other = await open(url);
    await other.page.fill("#token", token(MALLORY));
    await other.page.click("#token-form button[type=submit]");
    await waitState(other.page, "refused");
    const status = await statusOf(other.page);
    assert.match(status.text, /Refused: this session belongs to another user/);
    assert.match(status.detail, /only to the user who started it/);
    await client.callTool({ name: "get_mode_indicator", arguments: {} });
    const shown = await other.page.evaluate(() => document.querySelectorAll("#events tbody tr").length);
    assert.equal(shown, 0, "nothing of the session is shown");

    await other.page.fill("#token", "not-a-jwt");
    await other.page.click("#token-form button[type=submit]");
    await other.page.waitForFunction(() => /valid token/.test(document.getElementById("status").textContent), null, WAIT);
    await other.page.close();
    await close();
  });

  test("an unknown session says so", async () => {
    const { page } = await open(new URL(`/sessions/${"ab".repeat(32)}`, w.url).href);
    await waitState(page, "unknown");
    assert.match((await statusOf(page)).text, /Unknown session/);
    await page.close();
  });

  test("after a dropped connection it resumes with Last-Event-ID: missed events appear once", async () => {
    const proxy = await startProxy(w.url);
    const { client, session, close } = await connect();
    const { page, problems } = await open(new URL(`/sessions/${session}`, proxy.url).href);
    await waitState(page, "live");
    await client.callTool({ name: "switch_mode", arguments: { mode: "interactive-mode" } });
    const first = await newRows(page, 0, [["tool_call", "switch_mode"], ["tool_result", "switch_mode"]]);

    proxy.drop();
    await waitState(page, "reconnecting");
    await proxy.held();
    // While the page is cut off, the session goes on.
    await client.callTool({ name: "get_mode_indicator", arguments: {} });
    assert.equal((await rowsOf(page)).length, 2);
    proxy.restore();
    await waitState(page, "live");
    await newRows(page, 2, [["tool_call", "get_mode_indicator"], ["tool_result", "get_mode_indicator"]]);
    assert.equal(proxy.lastEventIds.at(-1), first[1].id, "resumed after the last event shown");

    // And live again afterwards, still one row per event.
    await client.callTool({ name: "get_mode_indicator", arguments: {} });
    const all = await newRows(page, 4, [["tool_call", "get_mode_indicator"], ["tool_result", "get_mode_indicator"]]).then(() => rowsOf(page));
    assert.equal(all.length, 6);
    assert.equal(new Set(all.map((r) => r.id)).size, 6);
    assert.deepEqual(problems, []);
    await page.close();
    await close();
    await proxy.close();
  });
});

/**
 * A pass-through HTTP proxy in front of the Worker that can cut the page's event streams: `drop()`
 * destroys them and holds new ones (`held()` resolves once the page tried again), `restore()` lets
 * the held ones through. `lastEventIds` records the Last-Event-ID of each events request.
 */
async function startProxy(target) {
  const up = new URL(target);
  const streams = new Set();
  let holding = null;
  let onHeld = null;
  const lastEventIds = [];
  const server = createServer((req, res) => {
    const forward = () => {
      const out = request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      out.on("error", () => res.destroy());
      req.pipe(out);
      const pair = { res, out };
      if (req.url.endsWith("/events")) {
        streams.add(pair);
        res.on("close", () => streams.delete(pair));
      }
    };
    if (req.url.endsWith("/events")) {
      lastEventIds.push(req.headers["last-event-id"] ?? null);
      if (holding) {
        holding.push(forward);
        onHeld?.();
        return;
      }
    }
    forward();
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    lastEventIds,
    drop() {
      holding = [];
      for (const { res, out } of streams) {
        out.destroy();
        res.destroy();
      }
    },
    held: () => new Promise((r) => (holding.length ? r() : (onHeld = r))),
    restore() {
      const waiting = holding;
      holding = null;
      waiting.forEach((f) => f());
    },
    close() {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}
