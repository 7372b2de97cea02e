// The domain sample data (issue 4): the committed sample-data/ files are what the generator writes,
// the data applied to D1 in workerd keeps the invariants the HR, Finance, Sales and Support tools
// rely on (docs/domain-data.md), production migrations carry none of it, and its removal file
// deletes exactly its rows (issue 20 item 2).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadSampleData, root, splitSql, startWorker } from "./support/worker.js";
import { DOMAIN_SQL, REMOVE_SQL } from "../scripts/sample-data.js";

let w;
let db;
before(async () => {
  w = await startWorker({}, { quiet: true });
  db = await w.mf.getD1Database("DB");
});
after(() => w?.stop());

const all = async (sql, ...params) => (await db.prepare(sql).bind(...params).all()).results;
const one = async (sql, ...params) => (await all(sql, ...params))[0];
const values = async (sql, ...params) => (await all(sql, ...params)).map((r) => Object.values(r)[0]);

// Employee, budget, invoice and expense-report ids are lowercase version-4 UUIDs (seed §9).
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
// The named users' fixed ids (docs/domain-data.md): 00000000-0000-4000-8000-000000000001 to ...015.
const named = (n) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const [EVE, CAROL, VICTOR, GRACE, NINA, MARCUS, SARAH, FRANK, HELEN, ALICE, RAJ, BOB, OLIVIA, DAN, RYAN] =
  Array.from({ length: 15 }, (_, i) => named(i + 1));

test("regenerating the sample data reproduces the committed files byte for byte", () => {
  const dir = mkdtempSync(join(tmpdir(), "domain-data-"));
  try {
    execFileSync(process.execPath, [join(root, "scripts", "domain-data.js"), "--out-dir", dir], { stdio: "pipe" });
    for (const [name, committed] of [["domain.sql", DOMAIN_SQL], ["remove-domain.sql", REMOVE_SQL]]) {
      assert.ok(readFileSync(join(dir, name)).equals(readFileSync(committed)), `${name}: run \`npm run domain-data\` and commit the result`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("no statement of the sample data or its removal reaches D1's 100 KB limit", () => {
  for (const file of [DOMAIN_SQL, REMOVE_SQL]) {
    const text = readFileSync(file, "utf8");
    for (const stmt of text.split(";\n")) assert.ok(Buffer.byteLength(stmt) < 100_000, stmt.slice(0, 80));
  }
});

describe("production (migrations alone)", () => {
  let prod;
  let pdb;
  before(async () => {
    prod = await startWorker({}, { quiet: true, sample: false });
    pdb = await prod.mf.getD1Database("DB");
  });
  after(() => prod?.stop());

  const DOMAIN_TABLES = ["hr_grade_levels", "hr_departments", "hr_employees", "hr_performance_reviews", "finance_vendors", "finance_invoices",
    "finance_expense_reports", "finance_budgets", "sales_customers", "sales_contacts", "sales_deals", "support_tickets", "support_knowledge_articles"];
  /** Rows of every table but FTS5's internal ones (their segments keep deletion markers). */
  const snapshot = async () => {
    const tables = (await pdb.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_fts_%' AND name NOT LIKE '_cf_%' ORDER BY name").all()).results.map((r) => r.name);
    const out = {};
    for (const t of tables) out[t] = JSON.stringify((await pdb.prepare(`SELECT * FROM "${t}" ORDER BY 1`).all()).results);
    return out;
  };

  test("no migration inserts into the domain tables, and a fresh database has no sample company", async () => {
    for (const file of readdirSync(join(root, "migrations"))) {
      const text = readFileSync(join(root, "migrations", file), "utf8");
      for (const t of DOMAIN_TABLES) assert.doesNotMatch(text, new RegExp(`INSERT\\s+(OR\\s+\\w+\\s+)?INTO\\s+${t}\\b`, "i"), `${file} inserts into ${t}`);
    }
    for (const t of DOMAIN_TABLES) assert.equal((await pdb.prepare(`SELECT COUNT(*) n FROM ${t}`).first("n")), 0, t);
    // The shipped definitions are there: instruction sets, templates, chains.
    assert.ok((await pdb.prepare("SELECT COUNT(*) n FROM instruction_sets").first("n")) > 0);
  });

  test("remove-domain.sql deletes exactly the sample rows; a row of the deployment's own stays", async () => {
    const before = await snapshot();
    const generation = await pdb.prepare("SELECT generation FROM domain_generation").first("generation");
    await loadSampleData(pdb);
    assert.equal(await pdb.prepare("SELECT COUNT(*) n FROM hr_employees").first("n"), 531);
    await loadSampleData(pdb);
    assert.equal(await pdb.prepare("SELECT COUNT(*) n FROM hr_employees").first("n"), 531, "loaded once, never duplicated");
    // A vendor of the deployment's own, and one of its invoices to a sample department: the invoice
    // refers to a sample row, so the removal must refuse as a whole rather than delete half.
    await pdb.prepare("INSERT INTO finance_vendors (id, name, category, email) VALUES ('VEND-OWN', 'Own Vendor', 'services', 'own@vendor.example')").run();
    await pdb.prepare(`INSERT INTO finance_invoices (id, vendor_id, vendor_reference, amount_cents, description, department_id, status, invoice_date, due_date, submitted_at)
      VALUES ('11111111-1111-4111-8111-111111111111', 'VEND-OWN', 'R-1', 1000, 'own', 'ENG', 'pending', '2026-11-01', '2026-12-01', '2026-11-01T09:00:00Z')`).run();
    const removal = splitSql(readFileSync(REMOVE_SQL, "utf8")).map((stmt) => pdb.prepare(stmt));
    await assert.rejects(pdb.batch(removal), /FOREIGN KEY/);
    assert.equal(await pdb.prepare("SELECT COUNT(*) n FROM hr_employees").first("n"), 531, "a refused removal deletes nothing");
    await pdb.prepare("DELETE FROM finance_invoices WHERE id = '11111111-1111-4111-8111-111111111111'").run();
    await pdb.batch(removal);
    const afterRemoval = await snapshot();
    assert.equal(JSON.parse(afterRemoval.finance_vendors).map((v) => v.id).join(), "VEND-OWN");
    assert.ok(await pdb.prepare("SELECT generation FROM domain_generation").first("generation") > generation, "cached reads are invalidated");
    for (const t of Object.keys(before)) {
      if (t === "finance_vendors" || t === "domain_generation") continue;
      assert.equal(afterRemoval[t], before[t], t);
    }
    assert.deepEqual((await pdb.prepare("SELECT rowid FROM support_tickets_fts WHERE support_tickets_fts MATCH 'quarantine'").all()).results, []);
  });
});

describe("HR", () => {
  test("a company of at least 500 in about ten departments, each with a head", async () => {
    assert.ok((await one("SELECT COUNT(*) n FROM hr_employees")).n >= 500);
    const depts = await all("SELECT id, head_employee_id FROM hr_departments");
    assert.ok(depts.length >= 9 && depts.length <= 12, `${depts.length} departments`);
    for (const d of depts) assert.ok(d.head_employee_id, `${d.id} has a head`);
    assert.deepEqual(await values("SELECT DISTINCT status FROM hr_employees ORDER BY 1"), ["active", "on_leave", "terminated"]);
  });

  test("every employee id is a lowercase v4 UUID, and the schema refuses any other shape", async () => {
    const ids = await values("SELECT id FROM hr_employees");
    for (const id of ids) assert.match(id, UUID_V4);
    assert.equal(new Set(ids).size, ids.length);
    const row = (id) => db.prepare(`INSERT INTO hr_employees (id, first_name, last_name, email, ssn, salary_cents, job_title,
      department_id, manager_id, grade, location, hire_date) VALUES (?1, 'Test', 'Person', ?2, '900-00-0000', 5000000, 'Tester',
      'ENG', ?3, 'L1', 'Remote (US)', '2026-11-01')`).bind(id, `test.${id.slice(-6)}@tamshai.com`, NINA).run();
    for (const bad of ["E0016", "00000000-0000-4000-8000-00000000001", "00000000-0000-4000-8000-0000000000016", "00000000-0000-1000-8000-000000000016",
      "00000000-0000-4000-c000-000000000016", "00000000-0000-4000-8000-00000000001G", "00000000-0000-4000-8000-00000000001F", "00000000-0000-4000-8000--00000000001"]) {
      await assert.rejects(row(bad), /CHECK constraint failed/, bad);
    }
    await row("00000000-0000-4000-bfff-00000000abcd");
    await db.prepare("DELETE FROM hr_employees WHERE id = '00000000-0000-4000-bfff-00000000abcd'").run();
  });

  test("one root (the CEO), every other manager exists, and the manager tree has no cycle", async () => {
    assert.deepEqual(await values("SELECT id FROM hr_employees WHERE manager_id IS NULL"), [EVE]);
    assert.equal((await one("SELECT COUNT(*) n FROM hr_employees e LEFT JOIN hr_employees m ON m.id = e.manager_id WHERE e.manager_id IS NOT NULL AND m.id IS NULL")).n, 0);
    // Walking down from the CEO reaches everyone exactly once: a cycle would be unreachable.
    const tree = await one(`WITH RECURSIVE org (id, depth) AS (
        SELECT id, 0 FROM hr_employees WHERE manager_id IS NULL
        UNION ALL SELECT e.id, org.depth + 1 FROM hr_employees e JOIN org ON e.manager_id = org.id WHERE org.depth < 50)
      SELECT COUNT(*) n, COUNT(DISTINCT id) distinct_ids, MAX(depth) depth FROM org`);
    const total = (await one("SELECT COUNT(*) n FROM hr_employees")).n;
    assert.equal(tree.n, total);
    assert.equal(tree.distinct_ids, total);
    assert.ok(tree.depth >= 4, `CEO -> VP -> director -> manager -> staff, got depth ${tree.depth}`);
  });

  test("active employees report to active managers and earn within their grade's band", async () => {
    assert.equal((await one("SELECT COUNT(*) n FROM hr_employees e JOIN hr_employees m ON m.id = e.manager_id WHERE e.status <> 'terminated' AND m.status = 'terminated'")).n, 0);
    assert.equal((await one("SELECT COUNT(*) n FROM hr_employees e JOIN hr_grade_levels g USING (grade) WHERE e.salary_cents NOT BETWEEN g.salary_min_cents AND g.salary_max_cents")).n, 0);
  });

  test("the named users exist with the relationships docs/domain-data.md describes", async () => {
    const people = Object.fromEntries((await all(`SELECT id, first_name || ' ' || last_name name, job_title, department_id, manager_id,
      employment_type, pto_balance, active FROM hr_employees WHERE id GLOB '00000000-0000-4000-8000-*'`)).map((p) => [p.id, p]));
    assert.equal(Object.keys(people).length, 15, "only the named users have the fixed ids");
    const expect = [
      [EVE, "Eve Thompson", "EXEC", null], [CAROL, "Carol Johnson", "SALES", EVE], [VICTOR, "Victor Reyes", "ENG", EVE],
      [GRACE, "Grace Liu", "ENG", VICTOR], [NINA, "Nina Patel", "ENG", GRACE], [MARCUS, "Marcus Johnson", "ENG", NINA],
      [SARAH, "Sarah Kim", "ENG", NINA], [FRANK, "Frank Davis", "ENG", NINA], [HELEN, "Helen Brooks", "HR", EVE],
      [ALICE, "Alice Chen", "HR", HELEN], [RAJ, "Raj Mehta", "FIN", EVE], [BOB, "Bob Martinez", "FIN", RAJ],
      [OLIVIA, "Olivia Grant", "SUP", EVE], [DAN, "Dan Williams", "SUP", OLIVIA], [RYAN, "Ryan Lee", "SALES", CAROL],
    ];
    for (const [id, name, dept, manager] of expect) {
      assert.deepEqual([people[id]?.name, people[id]?.department_id, people[id]?.manager_id, people[id]?.active], [name, dept, manager, 1], id);
    }
    assert.equal(RYAN, "00000000-0000-4000-8000-000000000015");
    assert.equal(people[MARCUS].pto_balance, 15, "Marcus's PTO balance (seed §4)");
    assert.equal(people[FRANK].employment_type, "intern");
    assert.equal((await one("SELECT email FROM hr_employees WHERE id = ?1", FRANK)).email, "frank.davis@tamshai.com");
    assert.equal((await one("SELECT salary_cents FROM hr_employees WHERE id = ?1", SARAH)).salary_cents, 11_200_000, "Sarah, before the $120,000 raise");
    // Nina's team includes Marcus, Sarah and Frank; Marcus and Sarah have 2026-H2 reviews due.
    const team = await values("SELECT id FROM hr_employees WHERE manager_id = ?1", NINA);
    for (const id of [MARCUS, SARAH, FRANK]) assert.ok(team.includes(id), id);
    assert.ok(team.length >= 5);
    assert.deepEqual(await values("SELECT employee_id FROM hr_performance_reviews WHERE reviewer_id = ?1 AND status <> 'completed' AND employee_id IN (?2, ?3) ORDER BY 1", NINA, MARCUS, SARAH), [MARCUS, SARAH]);
    assert.equal((await one("SELECT status FROM finance_expense_reports WHERE employee_id = ?1 AND month = '2026-10'", MARCUS)).status, "approved");
    // Frank owns nothing outside HR, so delete_employee on him (the seed's example) can succeed.
    assert.equal((await one(`SELECT (SELECT COUNT(*) FROM hr_employees WHERE manager_id = ?1)
      + (SELECT COUNT(*) FROM finance_expense_reports WHERE employee_id = ?1) + (SELECT COUNT(*) FROM sales_deals WHERE owner_id = ?1)
      + (SELECT COUNT(*) FROM support_tickets WHERE assigned_to = ?1) n`, FRANK)).n, 0);
    // Victor (VP of Engineering) has a reporting chain three levels deep below him.
    const chain = await one(`WITH RECURSIVE down (id, depth) AS (
        SELECT id, 0 FROM hr_employees WHERE id = ?1
        UNION ALL SELECT e.id, down.depth + 1 FROM hr_employees e JOIN down ON e.manager_id = down.id)
      SELECT MAX(depth) depth, COUNT(*) - 1 reports FROM down`, VICTOR);
    assert.equal(chain.depth, 3);
    assert.ok(chain.reports >= 150);
  });

  test("most employees have one to three reviews; only completed ones are rated", async () => {
    const counts = await values("SELECT COUNT(r.id) FROM hr_employees e LEFT JOIN hr_performance_reviews r ON r.employee_id = e.id GROUP BY e.id");
    assert.ok(counts.every((n) => n <= 3));
    assert.ok(counts.filter((n) => n >= 1).length / counts.length > 0.8);
    assert.deepEqual(await values("SELECT DISTINCT status FROM hr_performance_reviews ORDER BY 1"), ["completed", "in_progress", "scheduled"]);
  });
});

describe("Finance", () => {
  test("budget, invoice and expense-report ids are lowercase v4 UUIDs; people in them are employee ids", async () => {
    const ids = await values("SELECT id FROM finance_budgets UNION ALL SELECT id FROM finance_invoices UNION ALL SELECT id FROM finance_expense_reports");
    assert.ok(ids.length >= 1000);
    for (const id of ids) assert.match(id, UUID_V4);
    const employeeIds = new Set(await values("SELECT id FROM hr_employees"));
    assert.equal(new Set([...ids, ...employeeIds]).size, ids.length + employeeIds.size, "no id is used twice");
    // D1 allows few terms in a compound SELECT: one query per table.
    const people = [
      ...await all("SELECT submitted_by a, approved_by b FROM finance_invoices"),
      ...await all("SELECT employee_id a, approved_by b FROM finance_expense_reports"),
      ...await all("SELECT submitted_by a, approved_by b FROM finance_budgets"),
    ].flatMap((r) => [r.a, r.b]).filter(Boolean);
    assert.ok(people.length >= 2000);
    for (const id of people) assert.ok(employeeIds.has(id), id);
    // Raj (CFO) approves invoices over $25,000 and every budget but Finance's, which Eve approves.
    assert.equal((await one("SELECT COUNT(*) n FROM finance_invoices WHERE amount_cents > 2500000 AND approved_by <> ?1", RAJ)).n, 0);
    assert.deepEqual(await all("SELECT department_id = 'FIN' fin, approved_by FROM finance_budgets WHERE approved_by IS NOT NULL GROUP BY 1, 2 ORDER BY 1"),
      [{ fin: 0, approved_by: RAJ }, { fin: 1, approved_by: EVE }]);
  });

  test("invoices in every status the seed names, expense reports whose totals add up", async () => {
    assert.ok((await one("SELECT COUNT(*) n FROM finance_invoices")).n >= 300);
    assert.deepEqual(await values("SELECT DISTINCT status FROM finance_invoices ORDER BY 1"), ["approved", "overdue", "paid", "pending", "rejected"]);
    assert.equal((await one("SELECT COUNT(*) n FROM finance_invoices WHERE status = 'overdue' AND due_date >= '2026-11-20'")).n, 0);
    assert.deepEqual(await values("SELECT DISTINCT status FROM finance_expense_reports ORDER BY 1"), ["approved", "draft", "reimbursed", "rejected", "submitted"]);
    assert.equal((await one(`SELECT COUNT(*) n FROM finance_expense_reports r
      WHERE total_cents <> (SELECT SUM(json_extract(value, '$.amount_cents')) FROM json_each(r.items))`)).n, 0);
  });

  test("three fiscal years per department, exactly one pending approval each; spend is derived", async () => {
    const rows = await all("SELECT department_id, group_concat(fiscal_year || ':' || status) s FROM (SELECT * FROM finance_budgets ORDER BY fiscal_year) GROUP BY department_id");
    assert.equal(rows.length, (await one("SELECT COUNT(*) n FROM hr_departments")).n);
    for (const r of rows) assert.equal(r.s, "2025:closed,2026:active,2027:pending_approval", r.department_id);
    const eng = await one("SELECT * FROM finance_budget_summary WHERE department = 'engineering' AND fiscal_year = 2026");
    const paid = await one("SELECT SUM(amount_cents) s FROM finance_invoices WHERE department_id = 'ENG' AND status = 'paid' AND paid_at LIKE '2026%'");
    const reimbursed = await one("SELECT SUM(total_cents) s FROM finance_expense_reports WHERE department_id = 'ENG' AND status = 'reimbursed' AND month LIKE '2026%'");
    assert.equal(eng.spent_cents, paid.s + reimbursed.s);
    assert.equal(eng.remaining_cents, eng.allocated_cents - eng.spent_cents);
    const q4 = await one("SELECT SUM(amount_cents) s FROM finance_department_spend WHERE fiscal_year = 2026 AND quarter = 4");
    assert.ok(q4.s > 0, "Eve's Q4 budget vs actual has data");
  });
});

describe("Sales", () => {
  test("customers, contacts and deals keep readable ids; their owners are employee UUIDs", async () => {
    assert.equal((await one("SELECT COUNT(*) n FROM sales_customers WHERE id NOT GLOB 'CUST-[0-9][0-9][0-9][0-9]'")).n, 0);
    assert.equal((await one("SELECT COUNT(*) n FROM sales_deals WHERE id NOT GLOB 'DEAL-[0-9][0-9][0-9][0-9][0-9]'")).n, 0);
    const owners = await values("SELECT account_owner_id FROM sales_customers UNION SELECT owner_id FROM sales_deals");
    assert.ok(owners.length > 5);
    for (const id of owners) assert.match(id, UUID_V4);
    assert.equal((await one("SELECT COUNT(*) n FROM sales_customers c JOIN hr_employees e ON e.id = c.account_owner_id WHERE e.department_id = 'SALES'")).n,
      (await one("SELECT COUNT(*) n FROM sales_customers")).n, "every account owner is a Sales employee");
  });

  test("customers with contacts, deals in every stage across quarters, owned by employees", async () => {
    assert.ok((await one("SELECT COUNT(*) n FROM sales_customers")).n >= 150);
    assert.equal((await one("SELECT COUNT(*) n FROM sales_customers c WHERE NOT EXISTS (SELECT 1 FROM sales_contacts k WHERE k.customer_id = c.id AND k.is_primary = 1)")).n, 0);
    assert.ok((await one("SELECT COUNT(*) n FROM sales_deals")).n >= 400);
    assert.deepEqual(await values("SELECT DISTINCT stage FROM sales_deals ORDER BY 1"),
      ["CLOSED_LOST", "CLOSED_WON", "DISCOVERY", "NEGOTIATION", "PROPOSAL", "PROSPECTING", "QUALIFICATION"]);
    assert.ok((await values("SELECT DISTINCT quarter FROM sales_pipeline")).length >= 8);
    assert.equal((await one("SELECT COUNT(*) n FROM sales_deals d JOIN hr_employees e ON e.id = d.owner_id WHERE e.department_id <> 'SALES'")).n, 0);
    assert.ok((await one("SELECT COUNT(*) n FROM sales_deals WHERE owner_id = ?1", RYAN)).n > 0, "Ryan owns deals");
    // Carol's "top 5 deals closing this month".
    assert.ok((await one("SELECT COUNT(*) n FROM sales_deals WHERE expected_close_date LIKE '2026-11-%' AND stage NOT LIKE 'CLOSED%'")).n >= 5);
  });
});

describe("Support", () => {
  test("tickets and articles keep readable ids; assignees and authors are employee UUIDs", async () => {
    assert.equal((await one("SELECT COUNT(*) n FROM support_tickets WHERE id NOT GLOB 'TKT-[0-9][0-9][0-9][0-9][0-9][0-9]'")).n, 0);
    const people = await values("SELECT assigned_to FROM support_tickets WHERE assigned_to IS NOT NULL UNION SELECT author_id FROM support_knowledge_articles WHERE author_id IS NOT NULL");
    for (const id of people) assert.match(id, UUID_V4);
    assert.deepEqual(await values("SELECT DISTINCT assigned_to FROM support_tickets WHERE ticket_no <= 4"), [DAN], "Dan has the fixture tickets");
  });

  test("tickets in every status and priority, knowledge articles", async () => {
    assert.ok((await one("SELECT COUNT(*) n FROM support_tickets")).n >= 600);
    assert.deepEqual(await values("SELECT DISTINCT status FROM support_tickets ORDER BY 1"), ["closed", "in_progress", "open", "pending", "resolved"]);
    assert.deepEqual(await values("SELECT DISTINCT priority FROM support_tickets ORDER BY 1"), ["critical", "high", "low", "medium"]);
    assert.ok((await one("SELECT COUNT(*) n FROM support_knowledge_articles")).n >= 60);
    assert.deepEqual(await values("SELECT DISTINCT status FROM support_knowledge_articles ORDER BY 1"), ["archived", "draft", "published"]);
  });

  test("FTS5 finds a ticket by a word of its description (stemmed) and an article by a tag", async () => {
    const rows = await all(`SELECT t.id FROM support_tickets_fts JOIN support_tickets t ON t.ticket_no = support_tickets_fts.rowid
      WHERE support_tickets_fts MATCH ?1 ORDER BY rank`, "quarantine");
    assert.deepEqual(rows.map((r) => r.id), ["TKT-000004"]);
    const kb = await values(`SELECT a.id FROM support_knowledge_articles_fts f JOIN support_knowledge_articles a ON a.article_no = f.rowid
      WHERE support_knowledge_articles_fts MATCH ?1`, "tags:vat");
    assert.ok(kb.length >= 1);
  });

  test("the FTS index follows updates and deletes of tickets", async () => {
    const match = (word) => values("SELECT rowid FROM support_tickets_fts WHERE support_tickets_fts MATCH ?1", word);
    await db.prepare("UPDATE support_tickets SET description = description || ' Zanzibar' WHERE id = 'TKT-000010'").run();
    assert.deepEqual(await match("zanzibar"), [10]);
    await db.prepare("UPDATE support_tickets SET description = replace(description, ' Zanzibar', '') WHERE id = 'TKT-000010'").run();
    assert.deepEqual(await match("zanzibar"), []);
    await db.prepare("INSERT INTO sales_customers (id, name, company, email, industry, tier, country) VALUES ('CUST-TEST', 'Test', 'Test Inc.', 'a@test.example', 'Technology', 'free', 'US')").run();
    await db.prepare("INSERT INTO support_tickets (ticket_no, id, subject, description, status, priority, category, customer_id) VALUES (99999, 'TKT-099999', 'Kumquat outage', 'x', 'open', 'low', 'bug', 'CUST-TEST')").run();
    assert.deepEqual(await match("kumquat"), [99999]);
    await db.prepare("DELETE FROM sales_customers WHERE id = 'CUST-TEST'").run();
    assert.deepEqual(await match("kumquat"), [], "deleting the customer cascades to the ticket and its index entry");
    assert.deepEqual(await all("INSERT INTO support_tickets_fts (support_tickets_fts) VALUES ('integrity-check')"), []);
  });
});

describe("search strings with SQL metacharacters", () => {
  // LIKE with the input bound and its % and _ escaped matches them literally.
  const like = (table, column, text) => values(
    `SELECT ${column} FROM ${table} WHERE ${column} LIKE '%' || ?1 || '%' ESCAPE '\\' ORDER BY 1`,
    text.replace(/[\\%_]/g, (c) => `\\${c}`));

  test("% and _ are matched literally, not as wildcards", async () => {
    assert.deepEqual(await like("finance_vendors", "name", "100%"), ["100% Organic Snacks Co."]);
    // Unescaped, the same pattern also matches the decoy vendor.
    assert.deepEqual(await values("SELECT name FROM finance_vendors WHERE name LIKE '%' || ?1 || '%' ORDER BY 1", "100%"), ["100% Organic Snacks Co.", "1000 Lakes Catering"]);
    assert.deepEqual(await like("finance_vendors", "name", "Under_Score"), ["Under_Score Analytics"]);
    assert.deepEqual(await like("sales_customers", "name", "Data_Driven"), ["Data_Driven Labs"]);
    assert.deepEqual(await like("support_tickets", "id", "%"), []);
    assert.deepEqual(await values("SELECT id FROM support_tickets WHERE subject LIKE '%' || ?1 || '%' ESCAPE '\\'", "100\\% off"), ["TKT-000001"]);
  });

  test("quotes and an injection attempt are plain text", async () => {
    assert.deepEqual(await like("sales_customers", "name", "O'Malley"), ["O'Malley's Pubs"]);
    assert.deepEqual(await values("SELECT id FROM support_tickets WHERE instr(subject, ?1) > 0", "'; DROP TABLE support_tickets; --"), ["TKT-000003"]);
    assert.equal((await like("finance_vendors", "name", "'); DROP TABLE")).length, 1);
    assert.ok((await one("SELECT COUNT(*) n FROM finance_invoices")).n >= 300, "nothing was dropped");
    // FTS5 query syntax is not SQL: a quoted phrase is searched as words.
    assert.deepEqual(await values("SELECT rowid FROM support_tickets_fts WHERE support_tickets_fts MATCH ?1", '"DROP TABLE support_tickets"'), [3]);
  });
});
