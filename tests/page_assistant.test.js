// The session page as the seed's assistant (seed 002 §4, issue 22 items 4 and 5), in headless
// Chromium against the built Worker: each of the seed's conversations is typed into the page's chat
// box as its user would, a scripted model stand-in (support/model.js) calls the tools a real model
// would, and the page must stream the answer, show each tool call and result, and show a pending
// write as an approval card whose Approve / Deny buttons call /api/confirm/:id with the user's token
// and close the loop with the model. The page also opens with the session's history.
//
// With PAGE_SCREENSHOTS=1 the page is photographed in each state into docs/img/ (docs/domain.md
// shows them).
import { after, afterEach, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { root, startWorker } from "./support/worker.js";
import { call, scriptedModel } from "./support/model.js";
import { LATEST, post } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const CI = Boolean(process.env.CI) && process.env.CI !== "false";
const missing = !existsSync(CHROMIUM);
const skip = missing && !CI ? `${CHROMIUM} is missing: install Debian's chromium package (scripts/toolchain.sh does) to run the session page tests` : false;
const SHOTS = process.env.PAGE_SCREENSHOTS === "1" ? join(root, "docs", "img") : null;

const SECRET = "page-assistant-secret";
const WAIT = { timeout: 30_000 };
// The page posts from its own origin; production's ALLOWED_ORIGINS="" refuses that (see the todo
// test below), so the test names the origin the Worker is served on.
const ORIGINS = "http://127.0.0.1:*,http://localhost:*";
const TTL_SECONDS = 6;

let model, w, short, browser, profile;
before(async () => {
  if (skip) return;
  if (missing) throw new Error(`CI: ${CHROMIUM} is missing; scripts/toolchain.sh installs Debian's chromium package`);
  model = await scriptedModel();
  const vars = { JWT_SECRET: SECRET, ALLOWED_ORIGINS: ORIGINS, MODEL_PROVIDER_URL: model.url, MODEL_PROVIDER_KEY: "test-key", MODEL_PROVIDER_MODEL: "scripted", RATE_LIMITS: "*=off" };
  w = await startWorker(vars, { quiet: true });
  short = await startWorker({ ...vars, CONFIRMATION_TTL_SECONDS: String(TTL_SECONDS) }, { quiet: true });
  profile = mkdtempSync(join(tmpdir(), "mcp-edge-chromium-"));
  browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 900, height: 900 } });
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  scripts();
});
after(async () => {
  await browser?.close();
  await w?.stop();
  await short?.stop();
  await model?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});
// Each open tab holds an event stream, and Chromium opens at most 6 connections per host: a tab a
// failed test left open must not stall the next tests.
afterEach(async () => {
  for (const p of browser?.pages() ?? []) await p.close();
});

const money = (n) => `$${Number(n).toLocaleString("en-US", { maximumFractionDigits: 0 })}`;
const thisMonth = () => {
  const now = new Date();
  const first = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0));
  return { closing_from: first.toISOString().slice(0, 10), closing_to: last.toISOString().slice(0, 10) };
};

/** What the stand-in model does for each of the seed's questions. */
function scripts() {
  const data = (results, i = 0) => results[i].body.data;
  model.on(/What's my PTO balance/, [call("get_employee"), ({ results }) => `You have ${data(results).pto_balance} days of PTO left.`]);
  model.on(/Who on my team has performance reviews due/, [
    call("get_performance_reviews", { status: "due" }),
    ({ results }) => {
      const names = [...new Set(data(results).map((r) => r.employee_name))];
      return `${names.length} people on your team have reviews due: ${names.join(", ")}.`;
    },
  ]);
  model.on(/Q4 budget vs actual/, [
    call("get_budget_summary", { year: 2026, quarter: 4 }),
    ({ results }) => {
      const s = data(results);
      const over = s.over_budget.length ? `Over budget: ${s.over_budget.join(", ")}.` : "No department is over budget.";
      return `In ${s.period} the company spent ${money(s.totals.spent_amount)} against ${money(s.totals.budget_for_period)} budgeted for the quarter. ${over}`;
    },
  ]);
  model.on(/top 5 deals closing this month/, [
    call("list_deals", { ...thisMonth(), largest_first: true, limit: 5 }),
    ({ results }) => ["Your top deals closing this month:", ...data(results).map((d, i) => `${i + 1}. ${d.deal_name}: ${money(d.value)}`)].join("\n"),
  ]);
  model.on(/Show me all employee salaries/, [
    call("list_employees"),
    ({ results }) => {
      const r = results[0];
      const code = r.body?.code ?? "";
      return r.status === "error"
        ? `I can't show you everyone's salaries: your account does not have permission to view salary data${code ? ` (${code})` : ""}. HR can help with salary questions.`
        : "Here they are.";
    },
  ]);
  model.on(/Show me employee ABC123/, [
    call("get_employee", { employee_id: "ABC123" }),
    ({ results }) => {
      const b = results[0].body;
      return `I couldn't find that employee: ${b.message} ${b.suggestedAction ?? ""}`.trim();
    },
  ]);
  model.on(/List all employees/, [
    call("list_employees"),
    ({ results }) => {
      // A long result reaches the model cut (so not JSON): it reads what came first.
      const b = results[0].body;
      const metadata = typeof b === "string" ? JSON.parse(b.match(/"metadata":(\{[^}]*\})/)?.[1] ?? "{}") : b.metadata;
      return metadata?.truncated
        ? `I found ${metadata.totalCount} employees, showing the first ${metadata.returnedCount}. Please specify a department for more specific results.`
        : "I found them all.";
    },
  ]);
  // A write: find the employee by name, ask for the change, then ask the user to decide on the card.
  const write = (tool, args) => [
    ({ match }) => call("get_employee", { name: match[1] }),
    ({ match, results }) => call(tool, { employee_id: data(results).employee_id, ...args(match) }),
    ({ results }) => {
      const pending = results.find((r) => r.body?.status === "pending_confirmation");
      return pending ? `${pending.body.message.split("\n")[0]} Please approve or deny it on the card.` : `That did not work: ${JSON.stringify(results.at(-1).body)}`;
    },
  ];
  // A tool that changes data outside the domain servers: the chat holds it for the user's approval.
  model.on(/^Switch to mobile mode$/, [call("switch_mode", { mode: "mobile-mode" }), "Switched."]);
  model.on(/^Delete employee (.+?)\.?$/, write("delete_employee", () => ({ reason: "left the company" })));
  model.on(/^Increase (.+?)'s salary to \$([\d,]+)/, write("update_salary", (m) => ({ new_salary: Number(m[2].replace(/,/g, "")), reason: "promotion" })));
  // The page's message after a decision: the model reads the confirmation's state and says so.
  model.on(/^(Approved|Denied|Expired): confirmation ([0-9a-f]{32})\.$/, [
    ({ match }) => call("get_confirmation", { confirmation_id: match[2] }),
    ({ results, messages }) => {
      const c = data(results);
      const asked = messages.flatMap((m) => [...m.content.matchAll(/<tool_result name="(?:delete_employee|update_salary)" status="ok">([\s\S]*?)<\/tool_result>/g)])
        .map((r) => JSON.parse(r[1]))
        .find((b) => b.confirmationId === c.confirmationId);
      const who = asked?.confirmationData?.employeeName ?? "the employee";
      if (c.state === "executed") return c.action === "delete_employee" ? `${who} has been deleted.` : `${who}'s salary is now ${money(asked.confirmationData.newSalary)}.`;
      if (c.state === "denied") return `OK: you denied it, so nothing was changed for ${who}.`;
      if (c.state === "expired") return `The request for ${who} expired before anyone approved it, so nothing was changed. Ask me again if you still want it.`;
      return `The confirmation is ${c.state}: ${c.message}`;
    },
  ]);
}

/** A bearer token of the sample company's employee `name` with `roles`, for `worker`. */
async function tokenOf(worker, name, roles) {
  const db = await worker.mf.getD1Database("DB");
  const [first, last] = name.split(" ");
  const row = await db.prepare("SELECT id FROM hr_employees WHERE first_name = ?1 AND last_name = ?2").bind(first, last).first();
  assert.ok(row, `no employee named ${name}`);
  return hs256({ sub: row.id, roles, aud: new URL("/mcp", worker.url).href, exp: Math.floor(Date.now() / 1000) + 900 }, SECRET);
}

/** A chat session of `name` (POST /sessions with their token), open in a new tab with the token entered. */
async function signIn(name, roles, { worker = w, width } = {}) {
  const token = await tokenOf(worker, name, roles);
  const r = await fetch(new URL("/sessions", worker.url), { method: "POST", headers: { authorization: `Bearer ${token}` } });
  assert.equal(r.status, 201, await r.clone().text());
  const session = (await r.json()).session_id;
  const view = await openPage(worker, session, token, width);
  return { ...view, session, token };
}

/** A new tab on the session page, signed in with `token`; CSP violations and script errors are collected. */
async function openPage(worker, session, token, width) {
  const page = await browser.newPage();
  if (width) await page.setViewportSize({ width, height: 844 });
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Trusted Type/i.test(m.text())) problems.push(m.text());
  });
  await page.goto(new URL(`/sessions/${session}`, worker.url).href);
  if (token) {
    await page.fill("#token", token);
    await page.press("#token", "Enter");
  }
  await page.waitForSelector('#status[data-state="live"]', WAIT);
  return { page, problems };
}

const turns = (page) => page.evaluate(() => Number(document.body.dataset.turns));
/** Waits until `n` turns have ended on the page. */
const turnsDone = (page, n) => page.waitForFunction((n) => Number(document.body.dataset.turns) >= n && document.body.dataset.turn === "idle", n, WAIT);

/** Types `text` into the chat box with the keyboard, sends it with Enter, waits for the turn's end. */
async function ask(page, text) {
  const before = await turns(page);
  await page.focus("#message");
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
  await turnsDone(page, before + 1);
}

/** The conversation as [role, text] pairs (tool lines: their tool and outcome). */
const conversationOf = (page) =>
  page.$$eval("#conversation > li", (lis) =>
    lis.map((li) => (li.classList.contains("card") ? ["card", li.dataset.kind, li.dataset.state, li.textContent] : [li.dataset.role, li.dataset.tool ?? "", li.dataset.outcome ?? "", li.querySelector(".text").textContent])),
  );
const said = async (page) => (await conversationOf(page)).filter((e) => e[0] === "assistant").map((e) => e[3]);
const lastSaid = async (page) => (await said(page)).at(-1);
const tools = async (page) => (await conversationOf(page)).filter((e) => e[0] === "tool").map((e) => [e[1], e[2]]);

async function shoot(page, name) {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** The last approval card of `kind`, once it is there. */
async function cardOf(page, kind) {
  await page.waitForSelector(`#conversation .card[data-kind="${kind}"][data-state="pending"]`, WAIT);
  return page.locator(`#conversation .card[data-kind="${kind}"]`).last();
}

/**
 * A write asked in the chat: the chat holds the call until the user approves running it (a card of
 * kind "chat"); approved, the tool answers pending_confirmation, shown as the confirmation card.
 */
async function askForWrite(page, text) {
  await ask(page, text);
  return cardOf(page, "confirmation");
}

async function db(worker = w) {
  return worker.mf.getD1Database("DB");
}

describe("the session page as the assistant (seed 002 §4)", { skip }, () => {
  test("Marcus asks for his PTO balance; the answer streams in after the tool call; a new tab opens with the history", async () => {
    const { page, session, token, problems } = await signIn("Marcus Johnson", []);
    assert.equal((await conversationOf(page)).length, 0);
    await ask(page, "What's my PTO balance?");
    assert.deepEqual(await tools(page), [["get_employee", "ok"]]);
    assert.equal(await lastSaid(page), "You have 15 days of PTO left.");
    const rows = await page.$$eval("#events tbody tr", (trs) => trs.map((tr) => [tr.dataset.event, tr.dataset.tool]));
    assert.deepEqual(rows, [["tool_call", "get_employee"], ["tool_result", "get_employee"]], "the activity table shows the call as before");
    await shoot(page, "01-marcus-pto");

    // Opened later, the page shows what happened before it: the conversation and the events.
    const again = await openPage(w, session, token);
    await again.page.waitForFunction(() => document.querySelectorAll("#conversation > li").length >= 3 && document.querySelectorAll("#events tbody tr").length >= 2, null, WAIT);
    const history = await conversationOf(again.page);
    assert.deepEqual(history.map((e) => e[0]), ["user", "tool", "tool", "assistant"], JSON.stringify(history));
    assert.equal(history[0][3], "What's my PTO balance?");
    assert.equal(history[3][3], "You have 15 days of PTO left.");
    assert.equal(await again.page.isHidden("#empty"), true, "not 'No events yet'");
    assert.deepEqual([...problems, ...again.problems], []);
    await again.page.close();
    await page.close();
  });

  test("Nina asks who on her team has reviews due: only her reporting chain", async () => {
    const { page, problems } = await signIn("Nina Patel", ["manager"]);
    await ask(page, "Who on my team has performance reviews due?");
    assert.deepEqual(await tools(page), [["get_performance_reviews", "ok"]]);
    const answer = await lastSaid(page);
    const chain = (await (await db()).prepare(
      "WITH RECURSIVE team(id) AS (SELECT id FROM hr_employees WHERE manager_id = (SELECT id FROM hr_employees WHERE first_name = 'Nina' AND last_name = 'Patel') UNION SELECT e.id FROM hr_employees e JOIN team t ON e.manager_id = t.id) SELECT first_name || ' ' || last_name AS name FROM hr_employees WHERE id IN (SELECT id FROM team)",
    ).all()).results.map((r) => r.name);
    const named = answer.replace(/^\d+ people on your team have reviews due: /, "").replace(/\.$/, "").split(", ");
    assert.ok(named.length > 1 && named.every((n) => n === "Nina Patel" || chain.includes(n)), `${answer} / ${chain}`);
    assert.deepEqual(problems, []);
    await shoot(page, "02-nina-reviews");
    await page.close();
  });

  test("Eve asks for the Q4 budget against actual spend: one company-wide call", async () => {
    const { page, problems } = await signIn("Eve Thompson", ["executive"]);
    await ask(page, "What's our Q4 budget vs actual spend?");
    assert.deepEqual(await tools(page), [["get_budget_summary", "ok"]]);
    assert.match(await lastSaid(page), /^In 2026-Q4 the company spent \$[\d,]+ against \$[\d,]+ budgeted for the quarter\. (Over budget: .+|No department is over budget)\.$/);
    assert.deepEqual(problems, []);
    await shoot(page, "03-eve-budget");
    await page.close();
  });

  test("Carol asks for her top 5 deals closing this month: largest first", async () => {
    const { page, problems } = await signIn("Carol Johnson", ["sales-read", "sales-write", "manager"]);
    await ask(page, "Show me top 5 deals closing this month");
    assert.deepEqual(await tools(page), [["list_deals", "ok"]]);
    const lines = (await lastSaid(page)).split("\n");
    assert.equal(lines[0], "Your top deals closing this month:");
    const values = lines.slice(1).map((l) => Number(l.split(": $").at(-1).replace(/,/g, "")));
    assert.ok(values.length > 0 && values.length <= 5, lines.join("\n"));
    assert.deepEqual(values, [...values].sort((a, b) => b - a), "largest first");
    assert.deepEqual(problems, []);
    await shoot(page, "04-carol-deals");
    await page.close();
  });

  test("Frank asks for everyone's salaries and is told why not", async () => {
    const { page, problems } = await signIn("Frank Davis", []);
    await ask(page, "Show me all employee salaries");
    assert.deepEqual(await tools(page), [["list_employees", "error"]]);
    assert.match(await lastSaid(page), /^I can't show you everyone's salaries: your account does not have permission to view salary data/);
    assert.deepEqual(problems, []);
    await shoot(page, "05-frank-refused");
    await page.close();
  });

  test("an employee that does not exist: the seed's error is explained", async () => {
    const { page, problems } = await signIn("Alice Chen", ["hr-read", "hr-write"]);
    await ask(page, "Show me employee ABC123");
    assert.deepEqual(await tools(page), [["get_employee", "error"]]);
    assert.match(await lastSaid(page), /^I couldn't find that employee: .+/);
    const fed = model.requests.at(-1).messages.at(-1).content;
    assert.match(fed, /"code":"EMPLOYEE_NOT_FOUND"/, "the model got the seed's error");
    assert.deepEqual(problems, []);
    await shoot(page, "06-not-found");
    await page.close();
  });

  test("a list that is cut: the model hears the truncation warning and asks to narrow it", async () => {
    const { page, problems } = await signIn("Alice Chen", ["hr-read", "hr-write"]);
    await ask(page, "List all employees");
    assert.equal(await lastSaid(page), "I found 50+ employees, showing the first 50. Please specify a department for more specific results.");
    const fed = model.requests.at(-1).messages.at(-1).content;
    assert.match(fed, /^<tool_result name="list_employees" status="ok">\{"status":"success","metadata":\{[^}]*"truncated":true/, "the metadata comes before the data");
    assert.deepEqual(problems, []);
    await shoot(page, "07-truncation");
    await page.close();
  });

  test("Alice deletes Frank Davis: she approves on the card, the page calls /api/confirm, the assistant confirms", async () => {
    const { page, problems } = await signIn("Alice Chen", ["hr-read", "hr-write"]);
    await ask(page, "Delete employee Frank Davis");
    const card = await cardOf(page, "confirmation");
    const text = await card.textContent();
    assert.match(text, /Delete employee Frank Davis \(frank\.davis@tamshai\.com\)\? This permanently deletes/);
    assert.match(text, /employee name\s*Frank Davis/);
    assert.match(text, /[0-5]:[0-5]\d left to decide/);
    assert.match(await lastSaid(page), /^Delete employee Frank Davis \(frank\.davis@tamshai\.com\)\? .* Please approve or deny it on the card\.$/);
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.kind), "confirmation", "the card takes the focus");
    await shoot(page, "09-delete-card");

    const confirmed = page.waitForResponse((r) => r.url().includes("/api/confirm/") && r.request().method() === "POST");
    const before = await turns(page);
    // Keyboard only: Tab from the focused card to Approve, then Enter.
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Approve");
    await page.keyboard.press("Enter");
    const res = await confirmed;
    assert.equal(res.status(), 200);
    assert.equal(res.request().headers().authorization?.startsWith("Bearer "), true, "with the user's token");
    await turnsDone(page, before + 1);
    assert.equal(await card.getAttribute("data-state"), "executed");
    assert.match(await card.textContent(), /Approved and done\./);
    const conv = await conversationOf(page);
    assert.match(conv.filter((e) => e[0] === "user").at(-1)[3], /^Approved: confirmation [0-9a-f]{32}\.$/);
    assert.equal(await lastSaid(page), "Frank Davis has been deleted.");
    assert.deepEqual((await tools(page)).slice(-1), [["get_confirmation", "ok"]]);
    const frank = await (await db()).prepare("SELECT COUNT(*) AS n FROM hr_employees WHERE email = 'frank.davis@tamshai.com'").first("n");
    assert.equal(frank, 0, "deleted");
    assert.deepEqual(problems, []);
    await shoot(page, "10-delete-done");
    await page.close();
  });

  test("Alice raises Sarah Kim to $120,000 on a phone-wide page, approved on the card", async () => {
    const { page, problems } = await signIn("Alice Chen", ["hr-read", "hr-write"], { width: 390 });
    const card = await askForWrite(page, "Increase Sarah Kim's salary to $120,000");
    assert.match(await card.textContent(), /Change the salary of Sarah Kim from \$.+ to \$.+ \(effective on confirmation\)\?/);
    const fits = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    assert.ok(fits, "nothing is wider than a 390 px screen");
    await shoot(page, "11-salary-phone");
    const before = await turns(page);
    await card.getByRole("button", { name: "Approve" }).click();
    await turnsDone(page, before + 1);
    assert.equal(await card.getAttribute("data-state"), "executed");
    assert.equal(await lastSaid(page), "Sarah Kim's salary is now $120,000.");
    const cents = await (await db()).prepare("SELECT salary_cents FROM hr_employees WHERE first_name = 'Sarah' AND last_name = 'Kim'").first("salary_cents");
    assert.equal(cents, 12_000_000);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("denied on the card: nothing changes, and the assistant says so", async () => {
    const { page, problems } = await signIn("Alice Chen", ["hr-read", "hr-write"]);
    const card = await askForWrite(page, "Delete employee Marcus Johnson");
    const before = await turns(page);
    await card.getByRole("button", { name: "Deny" }).click();
    await turnsDone(page, before + 1);
    assert.equal(await card.getAttribute("data-state"), "denied");
    assert.match(await card.textContent(), /Denied: nothing was changed/);
    assert.equal(await lastSaid(page), "OK: you denied it, so nothing was changed for Marcus Johnson.");
    const marcus = await (await db()).prepare("SELECT COUNT(*) AS n FROM hr_employees WHERE first_name = 'Marcus' AND last_name = 'Johnson'").first("n");
    assert.equal(marcus, 1);
    assert.deepEqual(problems, []);
    await shoot(page, "12-denied");
    await page.close();
  });

  test("left undecided, the card expires: its buttons go off and the assistant hears it", async () => {
    const { page, problems } = await signIn("Alice Chen", ["hr-read", "hr-write"], { worker: short });
    const card = await askForWrite(page, "Increase Sarah Kim's salary to $130,000");
    const before = await turns(page);
    await page.waitForFunction(() => document.querySelector('#conversation .card[data-kind="confirmation"]')?.dataset.state === "expired", null, { timeout: (TTL_SECONDS + 10) * 1000 });
    assert.equal(await card.getByRole("button", { name: "Approve" }).isDisabled(), true);
    assert.match(await card.textContent(), /Expired: nobody decided in time, so nothing was changed/);
    await turnsDone(page, before + 1);
    assert.equal(await lastSaid(page), "The request for Sarah Kim expired before anyone approved it, so nothing was changed. Ask me again if you still want it.");
    const cents = await (await db(short)).prepare("SELECT salary_cents FROM hr_employees WHERE first_name = 'Sarah' AND last_name = 'Kim'").first("salary_cents");
    assert.notEqual(cents, 13_000_000);
    assert.deepEqual(problems, []);
    await shoot(page, "13-expired");
    await page.close();
  });

  test("a write asked by an MCP client: its approveUrl opens this page at the card, which decides it", async () => {
    const token = await tokenOf(w, "Alice Chen", ["hr-read", "hr-write"]);
    const headers = { authorization: `Bearer ${token}` };
    const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "page-test", version: "1" } } }, { headers });
    const session = init.headers.get("mcp-session-id");
    const marcus = await (await db()).prepare("SELECT id FROM hr_employees WHERE first_name = 'Marcus' AND last_name = 'Johnson'").first("id");
    const called = await (await post(w.mcpUrl, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "update_salary", arguments: { employee_id: marcus, new_salary: 99000 } } }, { session, headers, version: LATEST })).json();
    const pending = called.result.structuredContent;
    assert.equal(pending.status, "pending_confirmation");
    assert.equal(pending.approveUrl, `/sessions/${session}#confirm=${pending.confirmationId}`);

    const page = await browser.newPage();
    await page.goto(new URL(pending.approveUrl, w.url).href);
    await page.fill("#token", token);
    await page.press("#token", "Enter");
    const card = page.locator(`#conversation .card[data-id="${pending.confirmationId}"]`);
    await card.waitFor(WAIT);
    assert.match(await card.textContent(), /Change the salary of Marcus Johnson/);
    await page.waitForFunction((id) => document.activeElement?.dataset.id === id, pending.confirmationId, WAIT);
    await card.getByRole("button", { name: "Approve" }).click();
    await page.waitForFunction((id) => document.querySelector(`.card[data-id="${id}"]`)?.dataset.state === "executed", pending.confirmationId, WAIT);
    assert.equal(await (await db()).prepare("SELECT salary_cents FROM hr_employees WHERE id = ?1").bind(marcus).first("salary_cents"), 9_900_000);
    assert.equal(await turns(page), 0, "no chat turn: the change was not asked in this page's chat");
  });
});

// What the page needed from the server (issue 22; fixed in core folders): each test states the
// behaviour that was missing.
describe("what the assistant page needs from the server", { skip }, () => {
  test("with production's ALLOWED_ORIGINS (empty), the page may still post to its own origin", async () => {
    const prod = await startWorker({ JWT_SECRET: SECRET, ALLOWED_ORIGINS: "", MODEL_PROVIDER_URL: model.url }, { quiet: true });
    try {
      const own = new URL(prod.url).origin;
      const created = await fetch(new URL("/sessions", prod.url), { method: "POST", headers: { origin: own } });
      assert.equal(created.status, 201, await created.clone().text());
    } finally {
      await prod.stop();
    }
  });

  test("a domain write asked in the chat needs one approval (the confirmation card), not two", async () => {
    const { page } = await signIn("Alice Chen", ["hr-read", "hr-write"]);
    try {
      await ask(page, "Delete employee Marcus Johnson");
      assert.equal(await page.locator('#conversation .card[data-kind="chat"]').count(), 0, "no card to approve running the tool");
      assert.equal(await page.locator('#conversation .card[data-kind="confirmation"]').count(), 1);
    } finally {
      await page.close();
    }
  });

  test("the salary change's card shows the amounts to the user who asked for it", async () => {
    const { page } = await signIn("Alice Chen", ["hr-read", "hr-write"], { worker: short });
    const card = await askForWrite(page, "Increase Sarah Kim's salary to $125,000");
    assert.match(await card.textContent(), /to \$125,000\.00/);
  });

  test("reopened while the chat holds a call for approval, the page shows its card again", async () => {
    const { page, session, token } = await signIn("Alice Chen", ["hr-read", "hr-write"], { worker: short });
    await ask(page, "Switch to mobile mode");
    await cardOf(page, "chat");
    const again = await openPage(short, session, token);
    await again.page.waitForSelector('#conversation .card[data-kind="chat"][data-state="pending"]', { timeout: 5000 });
  });

  test("Frank's call to a tool his roles lack answers INSUFFICIENT_PERMISSIONS, which the model can explain", async () => {
    const { page } = await signIn("Frank Davis", [], { worker: short });
    try {
      await ask(page, "Show me all employee salaries");
      const fed = model.requests.at(-1).messages.at(-1).content;
      assert.match(fed, /"code":\s*"INSUFFICIENT_PERMISSIONS"/);
    } finally {
      await page.close();
    }
  });
});
