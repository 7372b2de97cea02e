// The Finance tools through MCP with minted tokens against the sample company
// (docs/domain-data.md): who sees them, budgets by department name or code, invoices filtered by a
// vendor text that is matched literally (the % and _ fixtures have decoys), keyset pages that
// return every row exactly once, refused cursors, and expense reports readable by their employee.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { namedUsers, refusesForeignCursors } from "./support/domain.js";

const SECRET = "finance-test-secret";
const FINANCE = ["get_budget", "get_expense_report", "list_budgets", "list_invoices"];
let w, db, as, idOf;
const bob = () => as("Bob Martinez", ["finance-read", "finance-write"]);
const eve = () => as("Eve Thompson", ["executive"]);
const marcus = () => as("Marcus Johnson");

before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
  db = await w.mf.getD1Database("DB");
  ({ as, idOf } = namedUsers(w, SECRET));
});
after(() => w?.stop());

const thisYear = new Date().getUTCFullYear();

describe("who sees the finance tools", () => {
  test("tools/list follows the token's roles", async () => {
    const financeIn = async (s) => (await s.tools()).filter((t) => FINANCE.includes(t)).sort();
    assert.deepEqual(await financeIn(await as(null)), []);
    assert.deepEqual(await financeIn(await marcus()), ["get_expense_report"], "self-service only");
    assert.deepEqual(await financeIn(await as("Nina Patel", ["manager"])), ["get_expense_report"]);
    assert.deepEqual(await financeIn(await bob()), FINANCE);
    assert.deepEqual(await financeIn(await eve()), FINANCE);
  });

  test("a caller without the roles gets INSUFFICIENT_PERMISSIONS (the seed's union), though the tool is not in their list", async () => {
    for (const tool of ["get_budget", "list_budgets", "list_invoices"]) {
      const r = await (await marcus()).call(tool, { department: "Engineering" });
      assert.equal(r.structuredContent?.code, "INSUFFICIENT_PERMISSIONS", JSON.stringify(r));
      assert.equal(r.isError, true);
    }
  });
});

describe("budgets", () => {
  test("get_budget by name or code, this fiscal year by default, with spend by quarter", async () => {
    const s = await eve();
    const byName = (await s.data("get_budget", { department: "Engineering" })).data;
    const byCode = (await s.data("get_budget", { department: "eng", year: thisYear })).data;
    assert.deepEqual(byName, byCode);
    assert.equal(byName.department, "Engineering");
    assert.equal(byName.fiscal_year, thisYear);
    const row = await db.prepare("SELECT * FROM finance_budget_summary WHERE department_id = 'ENG' AND fiscal_year = ?1").bind(thisYear).first();
    assert.equal(byName.budget_id, row.id);
    assert.equal(byName.allocated_amount, row.allocated_cents / 100);
    assert.equal(byName.spent_amount, row.spent_cents / 100);
    assert.equal(byName.remaining_amount, row.remaining_cents / 100);
    const q4 = (await db.prepare("SELECT COALESCE(SUM(amount_cents), 0) AS c FROM finance_department_spend WHERE department_id = 'ENG' AND fiscal_year = ?1 AND quarter = 4").bind(thisYear).first()).c;
    assert.equal(byName.spent_by_quarter.find((q) => q.quarter === 4)?.spent_amount ?? 0, q4 / 100);
  });

  test("an unknown year is BUDGET_NOT_FOUND with the years there are; an unknown department lists them", async () => {
    const s = await bob();
    const none = await s.failure("get_budget", { department: "Sales", year: 2099 });
    assert.equal(none.code, "BUDGET_NOT_FOUND");
    assert.match(none.suggestedAction, new RegExp(String(thisYear)));
    for (const department of ["Nowhere", "'; DROP TABLE finance_budgets; --", "%"]) {
      const bad = await s.failure("get_budget", { department });
      assert.equal(bad.code, "INVALID_INPUT");
      assert.match(bad.suggestedAction, /Engineering/);
    }
  });

  test("list_budgets pages through every budget once; filters by year and status", async () => {
    const s = await bob();
    const { rows, sizes } = await s.all("list_budgets", { limit: 7 });
    const total = (await db.prepare("SELECT COUNT(*) AS n FROM finance_budgets").first()).n;
    assert.equal(rows.length, total);
    assert.equal(new Set(rows.map((b) => b.budget_id)).size, total);
    assert.ok(sizes.slice(0, -1).every((n) => n === 7));
    const pending = await s.all("list_budgets", { year: thisYear + 1, status: "pending_approval" });
    const expected = (await db.prepare("SELECT COUNT(*) AS n FROM finance_budgets WHERE fiscal_year = ?1 AND status = 'pending_approval'").bind(thisYear + 1).first()).n;
    assert.equal(pending.rows.length, expected);
    assert.ok(pending.rows.every((b) => b.status === "pending_approval" && b.fiscal_year === thisYear + 1));
    await refusesForeignCursors("list_budgets", s, await eve(), {}, { status: "closed" });
  });
});

describe("list_invoices", () => {
  /** Invoice ids whose vendor name contains `text` literally (any case), straight from D1. */
  async function byVendorText(text) {
    const { results } = await db.prepare("SELECT i.id FROM finance_invoices i JOIN finance_vendors v ON v.id = i.vendor_id WHERE instr(lower(v.name), lower(?1)) > 0").bind(text).all();
    return results.map((r) => r.id).sort();
  }

  test("pages of 50 return every invoice exactly once, newest first", async () => {
    const { rows, sizes } = await (await bob()).all("list_invoices", {});
    const total = (await db.prepare("SELECT COUNT(*) AS n FROM finance_invoices").first()).n;
    assert.equal(rows.length, total);
    assert.equal(new Set(rows.map((i) => i.invoice_id)).size, total, "no invoice twice");
    assert.ok(sizes.slice(0, -1).every((n) => n === 50), JSON.stringify(sizes));
    assert.ok(rows.every((r, i) => i === 0 || r.invoice_date <= rows[i - 1].invoice_date));
    assert.equal(typeof rows[0].amount, "number");
  });

  test("vendor text is matched literally: %, _, quotes and an injection have decoys that must not match", async () => {
    const s = await bob();
    const cases = {
      "100%": "100% Organic Snacks Co.",
      "Under_Score": "Under_Score Analytics",
      "O'Brien": "O'Brien & Sons Plumbing",
      "'); DROP TABLE finance_invoices; --": "Little Bobby Tables'); DROP TABLE finance_invoices; -- Consulting",
      "organic snacks": "100% Organic Snacks Co.",
    };
    for (const [vendor, name] of Object.entries(cases)) {
      const { rows } = await s.all("list_invoices", { vendor });
      assert.ok(rows.length > 0, vendor);
      assert.ok(rows.every((i) => i.vendor_name === name), `${vendor}: ${[...new Set(rows.map((i) => i.vendor_name))]}`);
      assert.deepEqual(rows.map((i) => i.invoice_id).sort(), await byVendorText(vendor), vendor);
    }
    for (const vendor of ["%", "_", "\\", "%%", "_nder"]) {
      const { rows } = await s.all("list_invoices", { vendor });
      assert.deepEqual(rows.map((i) => i.invoice_id).sort(), await byVendorText(vendor), `${vendor} is literal`);
    }
    assert.ok((await db.prepare("SELECT COUNT(*) AS n FROM finance_invoices").first()).n > 400, "nothing dropped");
  });

  test("status and department filters", async () => {
    const s = await eve();
    const overdue = await s.all("list_invoices", { status: "overdue" });
    const n = (await db.prepare("SELECT COUNT(*) AS n FROM finance_invoices WHERE status = 'overdue'").first()).n;
    assert.equal(overdue.rows.length, n);
    assert.ok(overdue.rows.every((i) => i.status === "overdue"));
    const eng = await s.data("list_invoices", { department: "ENG", limit: 10 });
    assert.ok(eng.data.length > 0 && eng.data.every((i) => i.department === "Engineering"));
    assert.equal((await s.failure("list_invoices", { department: "Nowhere" })).code, "INVALID_INPUT");
  });

  test("tampered, foreign and other-filter cursors are refused", async () => {
    await refusesForeignCursors("list_invoices", await bob(), await eve(), { vendor: "o" }, { vendor: "a" });
  });
});

describe("get_expense_report", () => {
  test("an employee reads their own report; line items and total in dollars", async () => {
    const me = await idOf("Marcus Johnson");
    const r = (await (await marcus()).data("get_expense_report", { employee_id: me, month: "2026-10" })).data;
    assert.equal(r.employee_id, me);
    assert.equal(r.employee_name, "Marcus Johnson");
    assert.equal(r.status, "approved");
    const sum = r.items.reduce((a, i) => a + Math.round(i.amount * 100), 0);
    assert.equal(Math.round(r.total_amount * 100), sum);
    assert.ok(r.items.every((i) => typeof i.amount === "number" && !("amount_cents" in i)));
  });

  test("someone else's report is not found for a self-service caller, readable for finance", async () => {
    const me = await idOf("Marcus Johnson");
    for (const s of [await as("Sarah Kim"), await as("Nina Patel", ["manager"])]) {
      const r = await s.failure("get_expense_report", { employee_id: me, month: "2026-10" });
      assert.equal(r.code, "EMPLOYEE_NOT_FOUND");
      assert.equal(JSON.stringify(r).includes("2026-0"), false, "no months of someone else leak");
    }
    for (const s of [await bob(), await eve()]) {
      assert.equal((await s.data("get_expense_report", { employee_id: me, month: "2026-10" })).data.employee_id, me);
    }
  });

  test("a bad month is INVALID_INPUT; a month without a report lists the months there are", async () => {
    const me = await idOf("Marcus Johnson");
    const s = await marcus();
    for (const month of ["2026-13", "October", "2026-1", "2026-10-01", "'; DROP TABLE x; --", "2026-%"]) {
      const r = await s.failure("get_expense_report", { employee_id: me, month });
      assert.equal(r.code, "INVALID_INPUT", month);
      assert.match(r.suggestedAction, /YYYY-MM/, month);
    }
    const none = await s.failure("get_expense_report", { employee_id: me, month: "2020-01" });
    assert.equal(none.code, "INVALID_INPUT");
    assert.match(none.suggestedAction, /2026-10/);
    const injected = await (await bob()).failure("get_expense_report", { employee_id: "' OR 1=1 --", month: "2026-10" });
    assert.equal(injected.code, "EMPLOYEE_NOT_FOUND");
  });
});
