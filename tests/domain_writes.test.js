// The Finance, Sales and Support writes through their confirmation, and the role × tool matrix of
// all 21 domain tools: every role alone against every tool, visible and callable exactly when the
// tool allows that role; otherwise hidden from tools/list, and a direct call answers the seed's
// INSUFFICIENT_PERMISSIONS.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { namedUsers } from "./support/domain.js";

const SECRET = "domain-writes-secret";
let w, db, as;

before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
  db = await w.mf.getD1Database("DB");
  ({ as } = namedUsers(w, SECRET));
});
after(() => w?.stop());

/** Approves a pending answer as `session`'s user; returns the decision's JSON. */
async function approve(session, pending, approved = true) {
  assert.equal(pending.status, "pending_confirmation", JSON.stringify(pending));
  const r = await fetch(new URL(`/api/confirm/${pending.confirmationId}`, w.url), {
    method: "POST",
    headers: { "content-type": "application/json", authorization: session.authorization },
    body: JSON.stringify({ approved }),
  });
  return r.json();
}

/** A named user's session that also remembers its Authorization header (for /api/confirm). */
async function signedIn(name, roles) {
  const s = await as(name, roles);
  const { hs256 } = await import("../scripts/token.js");
  const row = await db.prepare("SELECT id FROM hr_employees WHERE first_name = ?1 AND last_name = ?2").bind(...name.split(" ")).first();
  s.authorization = `Bearer ${hs256({ sub: row.id, roles, aud: new URL("/mcp", w.url).href, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}`;
  const ask = async (tool, args) => (await s.call(tool, args)).structuredContent;
  return { ...s, ask };
}

describe("finance writes", () => {
  test("delete_invoice removes an unpaid invoice once confirmed; paid invoices are kept", async () => {
    const bob = await signedIn("Bob Martinez", ["finance-read", "finance-write"]);
    const open = await db.prepare("SELECT id FROM finance_invoices WHERE status = 'pending' ORDER BY id LIMIT 1").first();
    const pending = await bob.ask("delete_invoice", { invoice_id: open.id, reason: "duplicate" });
    assert.match(pending.message, /^Delete invoice .+ for \$[\d,]+\.\d\d \(pending, due \d{4}-\d\d-\d\d/);
    assert.ok(await db.prepare("SELECT id FROM finance_invoices WHERE id = ?1").bind(open.id).first(), "still there before the decision");
    assert.equal((await approve(bob, pending)).status, "success");
    assert.equal(await db.prepare("SELECT id FROM finance_invoices WHERE id = ?1").bind(open.id).first(), null);
    const paid = await db.prepare("SELECT id FROM finance_invoices WHERE status = 'paid' LIMIT 1").first();
    assert.equal((await bob.ask("delete_invoice", { invoice_id: paid.id })).code, "VALIDATION_ERROR");
    assert.equal((await bob.ask("delete_invoice", { invoice_id: open.id })).code, "INVOICE_NOT_FOUND");
  });

  test("approve_budget approves the department's pending budget at the amount, by the approver", async () => {
    const bob = await signedIn("Bob Martinez", ["finance-read", "finance-write"]);
    const pending = await bob.ask("approve_budget", { department: "Engineering", amount: 4200000, notes: "trimmed" });
    assert.match(pending.message, /^Approve the Engineering budget for fiscal year \d{4} at \$4,200,000\.00 \(requested \$[\d,]+\.\d\d\)\?$/);
    const done = await approve(bob, pending);
    assert.equal(done.status, "success", JSON.stringify(done));
    const b = await db.prepare("SELECT b.status, b.allocated_cents, b.approved_by, b.notes FROM finance_budgets b WHERE b.id = ?1").bind(pending.confirmationData.budgetId).first();
    const bobId = (await db.prepare("SELECT id FROM hr_employees WHERE first_name = 'Bob' AND last_name = 'Martinez'").first()).id;
    assert.deepEqual(b, { status: "approved", allocated_cents: 420000000, approved_by: bobId, notes: "trimmed" });
    assert.equal((await bob.ask("approve_budget", { department: "Engineering", amount: 1 })).code, "BUDGET_NOT_FOUND", "nothing is pending any more");
    const year = pending.confirmationData.fiscalYear;
    assert.equal((await bob.ask("approve_budget", { department: "eng", amount: 1, fiscal_year: year })).code, "VALIDATION_ERROR", "already approved");
  });
});

describe("sales and support writes", () => {
  test("delete_customer names what goes with the customer and removes it all", async () => {
    const carol = await signedIn("Carol Johnson", ["sales-read", "sales-write", "manager"]);
    const c = await db.prepare("SELECT c.id FROM sales_customers c WHERE EXISTS (SELECT 1 FROM support_tickets t WHERE t.customer_id = c.id) AND EXISTS (SELECT 1 FROM sales_deals d WHERE d.customer_id = c.id) ORDER BY c.id DESC LIMIT 1").first();
    const pending = await carol.ask("delete_customer", { customer_id: c.id });
    assert.match(pending.message, /This also deletes their \d+ contacts, [1-9]\d* deals and [1-9]\d* support tickets/);
    assert.equal((await approve(carol, pending)).status, "success");
    for (const table of ["sales_customers WHERE id", "sales_deals WHERE customer_id", "support_tickets WHERE customer_id"]) {
      assert.equal((await db.prepare(`SELECT COUNT(*) AS n FROM ${table} = ?1`).bind(c.id).first()).n, 0, table);
    }
    assert.equal((await carol.ask("delete_customer", { customer_id: c.id })).code, "CUSTOMER_NOT_FOUND");
  });

  test("close_deal closes an open deal as won at its final value; closed deals stay closed", async () => {
    const carol = await signedIn("Carol Johnson", ["sales-read", "sales-write", "manager"]);
    const d = await db.prepare("SELECT id FROM sales_deals WHERE stage = 'NEGOTIATION' ORDER BY id LIMIT 1").first();
    assert.equal((await carol.ask("close_deal", { deal_id: d.id, outcome: "lost", actual_value: 5 })).code, "VALIDATION_ERROR");
    const pending = await carol.ask("close_deal", { deal_id: d.id, outcome: "won", actual_value: 250000 });
    assert.match(pending.message, /as won at \$250,000\.00\?$/);
    assert.equal((await approve(carol, pending)).status, "success");
    assert.deepEqual(await db.prepare("SELECT stage, probability, value_cents FROM sales_deals WHERE id = ?1").bind(d.id).first(), { stage: "CLOSED_WON", probability: 100, value_cents: 25000000 });
    assert.equal((await carol.ask("close_deal", { deal_id: d.id, outcome: "lost" })).code, "VALIDATION_ERROR");
  });

  test("close_ticket closes with the resolution; a short resolution is refused by the schema", async () => {
    const dan = await signedIn("Dan Williams", ["support-read", "support-write"]);
    const t = await db.prepare("SELECT id FROM support_tickets WHERE status = 'open' ORDER BY ticket_no LIMIT 1").first();
    const short = await dan.call("close_ticket", { ticket_id: t.id, resolution: "done" });
    assert.match(short.content[0].text, /Invalid arguments for tool close_ticket.*resolution/);
    const pending = await dan.ask("close_ticket", { ticket_id: t.id, resolution: "Replaced the faulty sensor; confirmed fixed.", resolution_type: "solved" });
    const denied = await approve(dan, pending, false);
    assert.equal(denied.data.approved, false);
    assert.equal((await db.prepare("SELECT status FROM support_tickets WHERE id = ?1").bind(t.id).first()).status, "open");
    const again = await dan.ask("close_ticket", { ticket_id: t.id, resolution: "Replaced the faulty sensor; confirmed fixed." });
    assert.equal((await approve(dan, again)).status, "success");
    const row = await db.prepare("SELECT status, resolution, resolution_type FROM support_tickets WHERE id = ?1").bind(t.id).first();
    assert.deepEqual(row, { status: "closed", resolution: "Replaced the faulty sensor; confirmed fixed.", resolution_type: "solved" });
    const hits = await db.prepare("SELECT COUNT(*) AS n FROM support_tickets_fts WHERE support_tickets_fts MATCH '\"sensor\"'").first();
    assert.ok(hits.n >= 1, "the resolution is searchable");
  });
});

/** Which roles may use each domain tool ("*": anyone signed in). */
const MATRIX = {
  get_employee: ["*"], list_employees: ["hr-read", "executive", "manager"], get_org_chart: ["hr-read", "executive", "manager"],
  get_performance_reviews: ["hr-write", "executive", "manager"], delete_employee: ["hr-write", "executive"], update_salary: ["hr-write", "executive"],
  get_budget: ["finance-read", "executive"], list_budgets: ["finance-read", "executive"], list_invoices: ["finance-read", "executive"],
  get_expense_report: ["*"], delete_invoice: ["finance-write", "executive"], approve_budget: ["finance-write", "executive"],
  get_customer: ["sales-read", "executive"], list_deals: ["sales-read", "executive"], get_pipeline: ["sales-read", "executive"],
  delete_customer: ["sales-write", "executive"], close_deal: ["sales-write", "executive"],
  search_tickets: ["support-read", "executive"], get_knowledge_article: ["support-read", "executive"], search_knowledge_base: ["support-read", "executive"],
  close_ticket: ["support-write", "executive"],
};
const ROLES = ["hr-read", "hr-write", "finance-read", "finance-write", "sales-read", "sales-write", "support-read", "support-write", "executive", "manager"];

test("role × tool: each role alone sees and can call exactly the tools that allow it", async () => {
  assert.equal(Object.keys(MATRIX).length, 21);
  const anonymous = await as(null);
  const anonTools = await anonymous.tools();
  assert.deepEqual(anonTools.filter((t) => t in MATRIX), [], "anonymous callers see no domain tool");
  for (const role of [...ROLES, null]) {
    const s = await as("Marcus Johnson", role ? [role] : []);
    const visible = new Set((await s.tools()).filter((t) => t in MATRIX));
    for (const [tool, roles] of Object.entries(MATRIX)) {
      const allowed = roles.includes("*") || (role !== null && roles.includes(role));
      assert.equal(visible.has(tool), allowed, `${role ?? "no role"} → ${tool} listed`);
      const r = await s.call(tool, {});
      if (allowed) assert.equal(r.error, undefined, `${role ?? "no role"} → ${tool} callable`);
      else {
        assert.equal(r.error, undefined, `${role ?? "no role"} → ${tool} is told why, not "unknown tool"`);
        assert.equal(r.structuredContent?.code, "INSUFFICIENT_PERMISSIONS", `${role ?? "no role"} → ${tool}`);
      }
    }
  }
});
