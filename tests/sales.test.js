// The Sales tools through MCP with minted tokens against the sample company
// (docs/domain-data.md): who sees them, customers with contact data masked unless the caller owns
// the account or has sales-write/executive, deals paged by keyset exactly once with literal
// filters, and the pipeline per quarter from the sales_pipeline view.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { namedUsers, refusesForeignCursors } from "./support/domain.js";

const SECRET = "sales-test-secret";
const SALES = ["get_customer", "get_pipeline", "list_deals"];
const HIDDEN = "*** (Hidden)";
let w, db, as, idOf;
const carol = () => as("Carol Johnson", ["sales-read", "sales-write", "manager"]);
const ryan = () => as("Ryan Lee", ["sales-read"]);
const eve = () => as("Eve Thompson", ["executive"]);

before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
  db = await w.mf.getD1Database("DB");
  ({ as, idOf } = namedUsers(w, SECRET));
});
after(() => w?.stop());

/** A customer id by exact name, from D1. */
const customerNamed = async (name) => (await db.prepare("SELECT id FROM sales_customers WHERE name = ?1").bind(name).first()).id;

describe("who sees the sales tools", () => {
  test("tools/list follows the token's roles", async () => {
    const salesIn = async (s) => (await s.tools()).filter((t) => SALES.includes(t)).sort();
    assert.deepEqual(await salesIn(await as("Marcus Johnson")), []);
    assert.deepEqual(await salesIn(await as("Victor Reyes", ["manager"])), [], "a manager without sales-read has none");
    assert.deepEqual(await salesIn(await ryan()), SALES);
    assert.deepEqual(await salesIn(await carol()), SALES);
    assert.deepEqual(await salesIn(await eve()), SALES);
  });

  test("a caller without the roles gets INSUFFICIENT_PERMISSIONS (the seed's union), though the tool is not in their list", async () => {
    const r = await (await as("Dan Williams", ["support-read", "support-write"])).call("get_customer", { customer_id: "x" });
    assert.equal(r.structuredContent?.code, "INSUFFICIENT_PERMISSIONS", JSON.stringify(r));
    assert.equal(r.isError, true);
  });
});

describe("get_customer", () => {
  test("the seed's fields, with names containing %, _ and quotes read back as stored", async () => {
    for (const name of ["100% Solar Cooperative", "Data_Driven Labs", "O'Malley's Pubs"]) {
      const c = (await (await eve()).data("get_customer", { customer_id: await customerNamed(name) })).data;
      assert.equal(c.name, name);
      assert.equal(c._id, await customerNamed(name));
      assert.equal(typeof c.address, "object");
      assert.equal(typeof c.annual_revenue, "number");
      assert.match(c.account_owner ?? "", /@|^$/);
    }
  });

  test("unknown or injected ids are CUSTOMER_NOT_FOUND", async () => {
    for (const customer_id of ["CUST-9999", "' OR 1=1 --", "%", "_"]) {
      const r = await (await ryan()).failure("get_customer", { customer_id });
      assert.equal(r.code, "CUSTOMER_NOT_FOUND", customer_id);
      assert.match(r.suggestedAction, /list_deals/);
    }
  });

  test("email and phone: the account owner, sales-write and executive see them; other sales-read callers do not", async () => {
    const ryanId = await idOf("Ryan Lee");
    const own = (await db.prepare("SELECT id FROM sales_customers WHERE account_owner_id = ?1 LIMIT 1").bind(ryanId).first()).id;
    const other = (await db.prepare("SELECT id FROM sales_customers WHERE account_owner_id <> ?1 AND phone IS NOT NULL LIMIT 1").bind(ryanId).first()).id;
    const mine = (await (await ryan()).data("get_customer", { customer_id: own })).data;
    assert.match(mine.email, /@/);
    assert.equal(mine.account_owner_id, ryanId);
    const theirs = (await (await ryan()).data("get_customer", { customer_id: other })).data;
    assert.equal(theirs.email, HIDDEN);
    assert.equal(theirs.phone, HIDDEN);
    assert.notEqual(theirs.name, HIDDEN, "business data is shown");
    for (const s of [await carol(), await eve()]) {
      const c = (await s.data("get_customer", { customer_id: other })).data;
      assert.match(c.email, /@/);
      assert.notEqual(c.phone, HIDDEN);
    }
  });
});

describe("list_deals", () => {
  test("pages return every deal exactly once, by expected close date", async () => {
    // Eve sees every deal; Ryan, an account executive, only his own (tests/domain_questions.test.js).
    const { rows, sizes } = await (await eve()).all("list_deals", { limit: 50 });
    const total = (await db.prepare("SELECT COUNT(*) AS n FROM sales_deals").first()).n;
    assert.equal(rows.length, total);
    assert.equal(new Set(rows.map((d) => d._id)).size, total);
    assert.ok(sizes.slice(0, -1).every((n) => n === 50));
    assert.ok(rows.every((d, i) => i === 0 || d.expected_close_date >= rows[i - 1].expected_close_date));
    assert.equal(typeof rows[0].value, "number");
    assert.equal(typeof rows[0].deal_name, "string");
  });

  test("stage, owner (email any case, or id) and min_value filter; owner text is data", async () => {
    const s = await carol();
    const ryanId = await idOf("Ryan Lee");
    const expected = (await db.prepare("SELECT COUNT(*) AS n FROM sales_deals WHERE owner_id = ?1").bind(ryanId).first()).n;
    const email = (await db.prepare("SELECT email FROM hr_employees WHERE id = ?1").bind(ryanId).first()).email;
    const byEmail = await s.all("list_deals", { owner: email.toUpperCase() });
    const byId = await s.all("list_deals", { owner: ryanId });
    assert.equal(byEmail.rows.length, expected);
    assert.deepEqual(byEmail.rows, byId.rows);
    assert.ok(byEmail.rows.every((d) => d.owner === email));
    for (const owner of ["%", "_%", "' OR 1=1 --", "%@tamshai.com"]) {
      assert.deepEqual((await s.data("list_deals", { owner })).data, [], `${owner} is not a pattern`);
    }
    const big = await s.all("list_deals", { stage: "NEGOTIATION", min_value: 100000 });
    const n = (await db.prepare("SELECT COUNT(*) AS n FROM sales_deals WHERE stage = 'NEGOTIATION' AND value_cents >= 10000000").first()).n;
    assert.equal(big.rows.length, n);
    assert.ok(big.rows.every((d) => d.stage === "NEGOTIATION" && d.value >= 100000));
  });

  test("deals closing this month: the closing date range filters, sorted by close date", async () => {
    const s = await carol();
    const month = await s.all("list_deals", { closing_from: "2026-11-01", closing_to: "2026-11-30" });
    const n = (await db.prepare("SELECT COUNT(*) AS n FROM sales_deals WHERE expected_close_date BETWEEN '2026-11-01' AND '2026-11-30'").first()).n;
    assert.ok(n > 0, "the sample data has deals closing in November 2026");
    assert.equal(month.rows.length, n);
    assert.ok(month.rows.every((d) => d.expected_close_date >= "2026-11-01" && d.expected_close_date <= "2026-11-30"));
    const bad = await s.call("list_deals", { closing_to: "November" });
    assert.match(bad.content[0].text, /Invalid arguments for tool list_deals.*closing_to/);
  });

  test("tampered, foreign and other-filter cursors are refused", async () => {
    await refusesForeignCursors("list_deals", await ryan(), await carol(), {}, { stage: "PROPOSAL" });
  });
});

describe("get_pipeline", () => {
  test("a quarter's stages and totals match the sales_pipeline view", async () => {
    const p = (await (await carol()).data("get_pipeline", { quarter: "2026-Q4" })).data;
    assert.equal(p.quarter, "2026-Q4");
    assert.equal(p.stages.length, 7);
    const { results } = await db.prepare("SELECT * FROM sales_pipeline WHERE quarter = '2026-Q4'").all();
    assert.equal(p.total_deals, results.reduce((a, r) => a + r.deal_count, 0));
    for (const r of results) {
      const st = p.stages.find((x) => x.stage === r.stage);
      assert.equal(st.deal_count, r.deal_count, r.stage);
      assert.equal(st.value, r.value_cents / 100, r.stage);
      assert.equal(st.weighted_value, r.weighted_value_cents / 100, r.stage);
    }
  });

  test("the current quarter by default; a malformed quarter is INVALID_INPUT", async () => {
    const now = new Date();
    const current = `${now.getUTCFullYear()}-Q${Math.floor(now.getUTCMonth() / 3) + 1}`;
    assert.equal((await (await eve()).data("get_pipeline", {})).data.quarter, current);
    for (const quarter of ["2026-Q5", "Q4", "'; DROP TABLE x; --", "2026-%", "2026-Q_"]) {
      const r = await (await eve()).failure("get_pipeline", { quarter });
      assert.equal(r.code, "INVALID_INPUT", quarter);
    }
    const empty = (await (await eve()).data("get_pipeline", { quarter: "2031-Q1" })).data;
    assert.equal(empty.total_deals, 0);
  });
});
