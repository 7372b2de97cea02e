// Seed 002 §4's questions, each answered in one or two calls (issue 22 item 2), the seed's
// truncation warning (§5.3), the sales row rule, and closing a confirmation's loop (item 3):
// get_confirmation tells the asking user whether their change was approved, denied or expired,
// and pending_confirmation carries the page to approve it in a browser.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { namedUsers } from "./support/domain.js";
import { post } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "questions-test-secret";
let w, db, as, idOf;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET, CONFIRMATION_TTL_SECONDS: "2" }, { quiet: true });
  db = await w.mf.getD1Database("DB");
  ({ as, idOf } = namedUsers(w, SECRET));
});
after(() => w?.stop());

const all = async (sql, ...args) => (await db.prepare(sql).bind(...args).all()).results;
const alice = () => as("Alice Chen", ["hr-read", "hr-write"]);
const eve = () => as("Eve Thompson", ["executive"]);

describe("HR: me, and employees by name", () => {
  test("Marcus asks for his PTO balance without knowing his id", async () => {
    const me = (await (await as("Marcus Johnson")).data("get_employee", {})).data;
    assert.equal(me.employee_id, await idOf("Marcus Johnson"));
    assert.equal(me.pto_balance, 15);
    assert.equal(typeof me.salary, "number", "his own salary is his to see");
  });

  test("an exact name (any case) is the employee; a partial one too when only one matches", async () => {
    const s = await alice();
    for (const name of ["Frank Davis", "frank davis", "  FRANK DAVIS "]) {
      const r = (await s.data("get_employee", { name })).data;
      assert.equal(r.employee_id, await idOf("Frank Davis"), name);
      assert.equal(r.email, "frank.davis@tamshai.com");
    }
    const partial = await all("SELECT id FROM hr_employees WHERE (first_name || ' ' || last_name) LIKE '%rank Davi%'");
    assert.equal(partial.length, 1, "one name contains 'rank Davi'");
    assert.equal((await s.data("get_employee", { name: "rank Davi" })).data.employee_id, partial[0].id);
  });

  test("an ambiguous name answers with candidates to choose from", async () => {
    const s = await alice();
    const kims = await all("SELECT id FROM hr_employees WHERE (first_name || ' ' || last_name) LIKE '%Kim%' ORDER BY last_name, first_name, id");
    assert.ok(kims.length > 1, "several names contain Kim");
    const r = await s.failure("get_employee", { name: "Kim" });
    assert.equal(r.code, "INVALID_INPUT");
    assert.match(r.message, /matches several employees/);
    assert.match(r.suggestedAction, /employee_id/);
    assert.equal(r.candidates.length, Math.min(kims.length, 10));
    assert.ok(r.candidates.every((c) => kims.some((k) => k.id === c.employee_id) && c.name && c.department));
  });

  test("names only find the employees the caller may see; unknown names and both arguments are refused", async () => {
    const nina = await as("Nina Patel", ["manager"]);
    assert.equal((await nina.data("get_employee", { name: "Sarah Kim" })).data.employee_id, await idOf("Sarah Kim"));
    assert.equal((await nina.failure("get_employee", { name: "Eve Thompson" })).code, "EMPLOYEE_NOT_FOUND", "outside her chain");
    assert.equal((await (await as("Frank Davis")).failure("get_employee", { name: "Sarah Kim" })).code, "EMPLOYEE_NOT_FOUND");
    for (const name of ["Nobody Here", "%", "_", "' OR 1=1 --"]) {
      assert.equal((await (await alice()).failure("get_employee", { name })).code, "EMPLOYEE_NOT_FOUND", name);
    }
    const both = await (await alice()).call("get_employee", { name: "Frank Davis", employee_id: await idOf("Frank Davis") });
    assert.equal(both.isError, true, JSON.stringify(both));
  });

  test("Alice deletes Frank Davis by name in two calls", async () => {
    const s = await alice();
    const frank = (await s.data("get_employee", { name: "Frank Davis" })).data;
    const r = await s.call("delete_employee", { employee_id: frank.employee_id });
    assert.equal(r.structuredContent.status, "pending_confirmation");
    assert.match(r.structuredContent.message, /Frank Davis \(frank\.davis@tamshai\.com\)/);
  });

  test("list_employees filters by part of a name, literally", async () => {
    const s = await alice();
    const expected = await all("SELECT id FROM hr_employees WHERE active = 1 AND (first_name || ' ' || last_name) LIKE '%son%' ORDER BY last_name, first_name, id");
    const { rows } = await s.all("list_employees", { name: "son" });
    assert.deepEqual(rows.map((e) => e.employee_id), expected.map((e) => e.id));
    assert.deepEqual((await s.data("list_employees", { name: "%" })).data, [], "% is a character, not a wildcard");
  });
});

describe("truncation (seed §5.3)", () => {
  test("a page that is not everything carries truncated, totalCount and the warning; the last page does not", async () => {
    const r = await (await alice()).data("list_employees", {});
    assert.equal(r.data.length, 50);
    assert.equal(r.metadata.truncated, true);
    assert.equal(r.metadata.hasMore, true);
    assert.equal(r.metadata.totalCount, "50+");
    assert.equal(r.metadata.warning, "TRUNCATION WARNING: Only 50 of 50+ records returned. Results are incomplete. Ask user to refine query by specifying: department or part of a name.");
    assert.match(r.metadata.hint, /nextCursor/);
    const small = await (await alice()).data("list_employees", { name: "Van der Berg" });
    assert.equal(small.metadata.truncated, false);
    assert.equal(small.metadata.totalCount, String(small.data.length));
    assert.equal(small.metadata.warning, undefined);
  });
});

describe("Sales: top deals, and who sees which deals", () => {
  test("Carol's top 5 deals closing this month: largest first, within the month", async () => {
    const r = await (await as("Carol Johnson", ["sales-read", "sales-write", "manager"])).data("list_deals", { closing_from: "2026-11-01", closing_to: "2026-11-30", largest_first: true, limit: 5 });
    const top = await all("SELECT id FROM sales_deals WHERE expected_close_date BETWEEN '2026-11-01' AND '2026-11-30' ORDER BY value_cents DESC, id LIMIT 5");
    assert.deepEqual(r.data.map((d) => d._id), top.map((d) => d.id));
    assert.ok(r.data.every((d, i) => i === 0 || d.value <= r.data[i - 1].value));
  });

  test("pages by value return every deal exactly once", async () => {
    const { rows } = await (await eve()).all("list_deals", { largest_first: true, stage: "PROPOSAL", limit: 7 });
    const expected = await all("SELECT id FROM sales_deals WHERE stage = 'PROPOSAL' ORDER BY value_cents DESC, id");
    assert.deepEqual(rows.map((d) => d._id), expected.map((d) => d.id));
  });

  test("an account executive sees their own deals and their accounts'; a sales manager their team's; the pipeline follows", async () => {
    const ryanId = await idOf("Ryan Lee");
    const own = await all("SELECT d.id FROM sales_deals d JOIN sales_customers c ON c.id = d.customer_id WHERE d.owner_id = ?1 OR c.account_owner_id = ?1 ORDER BY d.expected_close_date, d.id", ryanId);
    const total = (await db.prepare("SELECT COUNT(*) AS n FROM sales_deals").first()).n;
    assert.ok(own.length > 0 && own.length < total);
    const ryan = await as("Ryan Lee", ["sales-read"]);
    const { rows } = await ryan.all("list_deals", {});
    assert.deepEqual(rows.map((d) => d._id), own.map((d) => d.id));
    const q = (await ryan.data("get_pipeline", { quarter: "2026-Q4" })).data;
    const [mine] = await all("SELECT COUNT(*) AS n FROM sales_deals d JOIN sales_customers c ON c.id = d.customer_id WHERE d.close_quarter = '2026-Q4' AND (d.owner_id = ?1 OR c.account_owner_id = ?1)", ryanId);
    assert.equal(q.total_deals, mine.n);
    const carolId = await idOf("Carol Johnson");
    const team = await all(
      `WITH RECURSIVE chain(id) AS (SELECT ?1 UNION ALL SELECT e.id FROM hr_employees e JOIN chain c ON e.manager_id = c.id)
       SELECT d.id FROM sales_deals d JOIN sales_customers c ON c.id = d.customer_id
       WHERE d.owner_id IN (SELECT id FROM chain) OR c.account_owner_id IN (SELECT id FROM chain)`, carolId);
    const managed = await (await as("Carol Johnson", ["sales-read", "manager"])).all("list_deals", {});
    assert.equal(managed.rows.length, team.length, "a manager without sales-write: her org's deals");
  });
});

describe("Support and Finance", () => {
  test("open tickets without a search word: every open ticket, most urgent first", async () => {
    const { rows } = await (await as("Dan Williams", ["support-read", "support-write"])).all("search_tickets", { status: "open" });
    const expected = await all(
      "SELECT id FROM support_tickets WHERE status = 'open' ORDER BY CASE priority WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END, ticket_no");
    assert.ok(expected.length > 0);
    assert.deepEqual(rows.map((t) => t.ticket_id), expected.map((t) => t.id));
    assert.ok(rows.every((t) => t.status === "open" && t._score === null));
  });

  test("Eve's Q4 budget vs actual, company-wide, in one call", async () => {
    const r = (await (await eve()).data("get_budget_summary", { year: 2026, quarter: 4 })).data;
    const budgets = await all("SELECT department_id, allocated_cents FROM finance_budgets WHERE fiscal_year = 2026");
    assert.equal(r.departments.length, budgets.length);
    assert.equal(r.period, "2026-Q4");
    const [spend] = await all("SELECT SUM(amount_cents) AS cents FROM finance_department_spend WHERE fiscal_year = 2026 AND quarter = 4");
    assert.equal(Math.round(r.totals.spent_amount * 100), spend.cents);
    assert.equal(Math.round(r.totals.allocated_amount * 100), budgets.reduce((a, b) => a + b.allocated_cents, 0));
    for (const d of r.departments) {
      const [s] = await all("SELECT COALESCE(SUM(amount_cents), 0) AS cents FROM finance_department_spend WHERE department_id = ?1 AND fiscal_year = 2026 AND quarter = 4", d.department_code);
      assert.equal(Math.round(d.spent_amount * 100), s.cents, d.department);
      assert.equal(d.over_budget, d.spent_amount > d.budget_for_period, d.department);
    }
    assert.deepEqual(r.over_budget, r.departments.filter((d) => d.over_budget).map((d) => d.department));
    const year = (await (await eve()).data("get_budget_summary", { year: 2026 })).data;
    assert.equal(year.period, "FY2026");
    assert.equal(year.totals.budget_for_period, year.totals.allocated_amount);
    assert.equal((await (await eve()).failure("get_budget_summary", { year: 2040 })).code, "BUDGET_NOT_FOUND");
  });
});

describe("closing the loop on a confirmation", () => {
  const decide = async (id, approved, who, roles) => {
    const aud = new URL("/mcp", w.url).href;
    const token = hs256({ sub: await idOf(who), roles, aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET);
    return post(new URL(`/api/confirm/${id}`, w.url).href, { approved }, { headers: { authorization: `Bearer ${token}` } });
  };

  test("pending carries approveUrl; the asking user reads pending, then executed; nobody else reads it", async () => {
    const s = await alice();
    const p = (await s.call("update_salary", { employee_id: await idOf("Sarah Kim"), new_salary: 121000 })).structuredContent;
    assert.equal(p.status, "pending_confirmation");
    // The session page of the session that asked, which shows the change as an approval card.
    assert.match(p.approveUrl, new RegExp(`^/sessions/[0-9a-f]{64}#confirm=${p.confirmationId}$`));
    const page = await fetch(new URL(p.approveUrl, w.url));
    assert.equal(page.status, 200, "the link leads to a page that exists");
    assert.match(page.headers.get("content-type"), /^text\/html/);
    // When it stops waiting, so a client can show the time left.
    const expires = Date.parse(p.confirmationData.expiresAt);
    assert.ok(Math.abs(expires - (p.confirmationData.timestamp + 2000)) < 5, `${p.confirmationData.expiresAt} is CONFIRMATION_TTL_SECONDS after the request`);
    const pending = (await s.data("get_confirmation", { confirmation_id: p.confirmationId })).data;
    assert.equal(pending.state, "pending");
    assert.equal(pending.action, "update_salary");
    assert.equal(pending.approveUrl, p.approveUrl);
    assert.ok(Math.abs(Date.parse(pending.expiresAt) - expires) < 1500, `${pending.expiresAt} vs ${p.confirmationData.expiresAt}`);
    assert.match(pending.message, /s left/);
    for (const other of [await as("Helen Brooks", ["hr-read", "hr-write"]), await as("Sarah Kim")]) {
      assert.equal((await other.failure("get_confirmation", { confirmation_id: p.confirmationId })).code, "OPERATION_FAILED");
    }
    assert.equal((await decide(p.confirmationId, true, "Alice Chen", ["hr-read", "hr-write"])).status, 200);
    const done = (await s.data("get_confirmation", { confirmation_id: p.confirmationId })).data;
    assert.equal(done.state, "executed");
    assert.equal(done.approveUrl, null);
    assert.ok(done.decidedAt);
  });

  test("denied and expired are told apart; unknown ids are not found", async () => {
    const s = await alice();
    const sarah = await idOf("Sarah Kim");
    const denied = (await s.call("update_salary", { employee_id: sarah, new_salary: 1 })).structuredContent.confirmationId;
    assert.equal((await decide(denied, false, "Alice Chen", ["hr-read", "hr-write"])).status, 200);
    assert.equal((await s.data("get_confirmation", { confirmation_id: denied })).data.state, "denied");
    const late = (await s.call("update_salary", { employee_id: sarah, new_salary: 2 })).structuredContent.confirmationId;
    await sleep(2200);
    assert.equal((await s.data("get_confirmation", { confirmation_id: late })).data.state, "expired");
    for (const confirmation_id of ["0".repeat(32), "not-an-id"]) {
      assert.equal((await s.failure("get_confirmation", { confirmation_id })).code, "OPERATION_FAILED");
    }
  });
});

describe("a domain tool the caller may not use, or calls wrongly", () => {
  test("a direct call of a tool his roles lack answers the seed's INSUFFICIENT_PERMISSIONS, though tools/list still hides it", async () => {
    const frank = await as("Frank Davis");
    assert.ok(!(await frank.tools()).includes("list_employees"), "hidden from his tools/list");
    const r = await frank.call("list_employees", {});
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(r.structuredContent.status, "error");
    assert.equal(r.structuredContent.code, "INSUFFICIENT_PERMISSIONS");
    assert.match(r.structuredContent.message, /list_employees/);
    assert.ok(r.structuredContent.suggestedAction);
    const unknown = await frank.call("no_such_tool", {});
    assert.match(unknown.error.message, /unknown tool "no_such_tool"/, "a tool that does not exist stays unknown");
  });

  test("arguments its input schema refuses answer the seed's INVALID_INPUT", async () => {
    const r = await (await alice()).call("list_employees", { limit: "many" });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(r.structuredContent.code, "INVALID_INPUT");
    assert.match(r.structuredContent.suggestedAction, /inputSchema/);
  });
});

describe("the Worker's log", () => {
  const logs = [];
  let lw;
  before(async () => {
    lw = await startWorker({ JWT_SECRET: SECRET }, { logs });
  });
  after(() => lw?.stop());

  test("one structured line per call: user, tool, outcome and ms, never the arguments", async () => {
    const { as: asUser, idOf: idIn } = namedUsers(lw, SECRET);
    const s = await asUser("Alice Chen", ["hr-read"]);
    const lines = () => logs.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).filter((l) => l.tool === "hr::get-employee");
    const before = lines().length;
    await s.data("get_employee", { name: "Frank Davis" });
    for (let i = 0; i < 100 && lines().length === before; i++) await sleep(50);
    const mine = lines().slice(before);
    assert.equal(mine.length, 1, JSON.stringify(mine));
    const [line] = mine;
    assert.equal(line.user, await idIn("Alice Chen"));
    assert.equal(line.outcome, "ok");
    assert.equal(typeof line.ms, "number");
    const all = logs.join("\n");
    assert.ok(!all.includes("Frank Davis"), "no argument value is logged");
  });
});
