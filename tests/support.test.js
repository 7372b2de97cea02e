// The Support tools through MCP with minted tokens against the sample company
// (docs/domain-data.md): who sees them, FTS5 search where the user's words are literal text (never
// query syntax or SQL), bm25-ranked keyset pages that return every hit exactly once, refused
// cursors, and the reporter's email masked for support-read only callers.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { namedUsers, refusesForeignCursors } from "./support/domain.js";

const SECRET = "support-test-secret";
const SUPPORT = ["get_knowledge_article", "search_knowledge_base", "search_tickets"];
const HIDDEN = "*** (Hidden)";
let w, db, as, idOf;
const dan = () => as("Dan Williams", ["support-read", "support-write"]);
const eve = () => as("Eve Thompson", ["executive"]);

before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
  db = await w.mf.getD1Database("DB");
  ({ as, idOf } = namedUsers(w, SECRET));
});
after(() => w?.stop());

/** The id of the one ticket whose description contains `text` (found in D1, not hard-coded). */
async function ticketWith(text) {
  const { results } = await db.prepare("SELECT id FROM support_tickets WHERE instr(subject || ' ' || description, ?1) > 0").bind(text).all();
  assert.equal(results.length, 1, `one fixture ticket contains ${text}`);
  return results[0].id;
}

/** Ticket ids an FTS5 query matches, straight from D1. */
async function ftsTickets(match) {
  const { results } = await db.prepare("SELECT t.id FROM support_tickets_fts f JOIN support_tickets t ON t.ticket_no = f.rowid WHERE support_tickets_fts MATCH ?1").bind(match).all();
  return results.map((r) => r.id).sort();
}

describe("who sees the support tools", () => {
  test("tools/list follows the token's roles", async () => {
    const supportIn = async (s) => (await s.tools()).filter((t) => SUPPORT.includes(t)).sort();
    assert.deepEqual(await supportIn(await as("Marcus Johnson")), []);
    assert.deepEqual(await supportIn(await as("Carol Johnson", ["sales-read", "sales-write", "manager"])), []);
    assert.deepEqual(await supportIn(await as("Dan Williams", ["support-read"])), SUPPORT);
    assert.deepEqual(await supportIn(await dan()), SUPPORT);
    assert.deepEqual(await supportIn(await eve()), SUPPORT);
  });

  test("a caller without the roles gets INSUFFICIENT_PERMISSIONS (the seed's union), though the tool is not in their list", async () => {
    for (const [s, tool, args] of [
      [await as("Marcus Johnson"), "search_tickets", { query: "export" }],
      [await as("Olivia Grant", ["manager"]), "get_knowledge_article", { article_id: "x" }],
      [await as("Ryan Lee", ["sales-read"]), "search_knowledge_base", { query: "password" }],
    ]) {
      const r = await s.call(tool, args);
      assert.equal(r.structuredContent?.code, "INSUFFICIENT_PERMISSIONS", JSON.stringify(r));
      assert.equal(r.isError, true);
    }
  });
});

describe("search_tickets", () => {
  test("finds the quarantined attachment ticket, best match first", async () => {
    const id = await ticketWith("quarantined");
    const r = await (await dan()).data("search_tickets", { query: "attachments quarantined" });
    assert.equal(r.data[0].ticket_id, id);
    assert.match(r.data[0].subject, /quarantined/);
    assert.ok(r.data.every((t, i) => i === 0 || t._score <= r.data[i - 1]._score), "sorted by relevance");
    assert.ok(Array.isArray(r.data[0].tags));
    assert.equal(typeof r.data[0].customer_name, "string");
  });

  test("SQL and FTS5 metacharacters in the query are plain words", async () => {
    const s = await dan();
    const cases = [
      ["100%", await ticketWith("100%")],
      ["SAVE_100", await ticketWith("SAVE_100")],
      ["O'Brien & Sons", await ticketWith("O'Brien & Sons")],
      ["'; DROP TABLE support_tickets; --", await ticketWith("'; DROP TABLE support_tickets; --")],
    ];
    for (const [query, id] of cases) {
      const r = await s.data("search_tickets", { query });
      assert.ok(r.data.some((t) => t.ticket_id === id), `${query} finds ${id}`);
      assert.equal(r.data[0].ticket_id, id, `${query}: the fixture ranks first`);
    }
    // Syntax that FTS5 would parse (or choke on) unquoted: each is searched as words, no error.
    for (const query of ['"unbalanced', "export*", "NEAR(export fails)", "export AND NOT fails", "export OR", "subject:export", "^export", "(export"]) {
      const r = await s.call("search_tickets", { query });
      assert.equal(r.structuredContent?.status, "success", `${query}: ${JSON.stringify(r)}`);
    }
    const and = await s.data("search_tickets", { query: "AND" });
    assert.ok(and.data.length > 0, "AND is a word, and it occurs in tickets");
    assert.equal((await db.prepare("SELECT COUNT(*) AS n FROM support_tickets").first()).n, 660, "nothing dropped");
  });

  test("a query of punctuation only is refused with a suggestion", async () => {
    for (const query of ["%", "_", "'; --", '"', "*"]) {
      const r = await (await dan()).failure("search_tickets", { query });
      assert.equal(r.code, "INVALID_INPUT", query);
    }
  });

  test("pages of a common word return every hit exactly once, in rank order", async () => {
    const expected = await ftsTickets('"customer"');
    assert.ok(expected.length > 100, `${expected.length} hits`);
    const { rows, sizes } = await (await dan()).all("search_tickets", { query: "customer", limit: 37 });
    const seen = rows.map((t) => t.ticket_id);
    assert.equal(new Set(seen).size, seen.length, "no ticket twice");
    assert.deepEqual([...seen].sort(), expected);
    assert.ok(sizes.slice(0, -1).every((n) => n === 37), JSON.stringify(sizes));
    assert.ok(rows.every((t, i) => i === 0 || t._score <= rows[i - 1]._score), "rank order holds across pages");
  });

  test("status, priority and customer filters apply inside the search; their text is data", async () => {
    const s = await dan();
    const open = await s.all("search_tickets", { query: "customer", status: "open", limit: 50 });
    assert.ok(open.rows.length > 0 && open.rows.every((t) => t.status === "open"));
    const high = await s.data("search_tickets", { query: "customer", priority: "high" });
    assert.ok(high.data.every((t) => t.priority === "high"));
    const one = (await s.data("search_tickets", { query: "customer", limit: 1 })).data[0];
    const theirs = await s.all("search_tickets", { query: "customer", customer_id: one.customer_id });
    assert.ok(theirs.rows.length >= 1 && theirs.rows.every((t) => t.customer_id === one.customer_id));
    const injected = await s.data("search_tickets", { query: "customer", customer_id: "' OR 1=1 --" });
    assert.deepEqual(injected.data, []);
    const pct = await s.data("search_tickets", { query: "customer", customer_id: "%" });
    assert.deepEqual(pct.data, [], "% is not a wildcard in an exact filter");
  });

  test("the reporter's email: masked for support-read only, shown to the assignee, agents and executives", async () => {
    const fixture = await ticketWith("quarantined");
    const reader = await as("Dan Williams", ["support-read"]);
    const { rows } = await reader.all("search_tickets", { query: "customer" });
    const danId = await idOf("Dan Williams");
    const others = rows.filter((t) => t.assigned_to !== danId);
    assert.ok(others.length > 0 && others.every((t) => t.customer_email === HIDDEN), "not his tickets: hidden");
    const mine = (await reader.data("search_tickets", { query: "quarantined" })).data.find((t) => t.ticket_id === fixture);
    assert.equal(mine.assigned_to, danId);
    assert.match(mine.customer_email, /@/, "his own assigned ticket");
    for (const s of [await as("Olivia Grant", ["support-read", "support-write", "manager"]), await eve()]) {
      const r = await s.data("search_tickets", { query: "customer", limit: 20 });
      assert.ok(r.data.every((t) => /@/.test(t.customer_email)), JSON.stringify(r.data.map((t) => t.customer_email)));
    }
  });

  test("tampered, foreign and other-query cursors are refused", async () => {
    await refusesForeignCursors("search_tickets", await dan(), await eve(), { query: "customer" }, { query: "export" });
  });
});

describe("knowledge base", () => {
  test("get_knowledge_article returns the full article; unknown ids are ARTICLE_NOT_FOUND", async () => {
    const row = await db.prepare("SELECT id, title FROM support_knowledge_articles WHERE instr(title, 'literal %') > 0").first();
    const s = await dan();
    const a = (await s.data("get_knowledge_article", { article_id: row.id })).data;
    assert.equal(a.article_id, row.id);
    assert.equal(a.title, row.title);
    assert.ok(a.content.length > 50);
    assert.ok(Array.isArray(a.tags));
    for (const article_id of ["KB-99999", "' OR 1=1 --", "%"]) {
      const r = await s.failure("get_knowledge_article", { article_id });
      assert.equal(r.code, "ARTICLE_NOT_FOUND");
      assert.match(r.suggestedAction, /search_knowledge_base/);
    }
  });

  test("search finds the article about literal % and _, and treats the characters as text", async () => {
    const target = (await db.prepare("SELECT id FROM support_knowledge_articles WHERE instr(title, 'literal %') > 0").first()).id;
    const s = await eve();
    const r = await s.data("search_knowledge_base", { query: "literal % _ characters" });
    assert.equal(r.data[0].article_id, target);
    assert.equal(r.data[0].content, undefined, "search answers summaries");
    assert.equal((await s.failure("search_knowledge_base", { query: "% _" })).code, "INVALID_INPUT");
  });

  test("category filter; an unknown category lists the real ones", async () => {
    const s = await dan();
    const billing = await s.all("search_knowledge_base", { query: "account", category: "billing" });
    assert.ok(billing.rows.every((a) => a.category === "billing"));
    const bad = await s.failure("search_knowledge_base", { query: "account", category: "'; DROP TABLE x; --" });
    assert.equal(bad.code, "INVALID_INPUT");
    assert.match(bad.suggestedAction, /billing/);
  });

  test("pages cover every matching article once; cursors are bound", async () => {
    const { results } = await db.prepare("SELECT a.id FROM support_knowledge_articles_fts f JOIN support_knowledge_articles a ON a.article_no = f.rowid WHERE support_knowledge_articles_fts MATCH '\"the\"'").all();
    const { rows } = await (await dan()).all("search_knowledge_base", { query: "the", limit: 8 });
    const seen = rows.map((a) => a.article_id);
    assert.equal(new Set(seen).size, seen.length);
    assert.deepEqual(seen.sort(), results.map((r) => r.id).sort());
    await refusesForeignCursors("search_knowledge_base", await dan(), await eve(), { query: "the" }, { query: "the", category: "billing" });
  });
});
