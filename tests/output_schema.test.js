// A client's view is the spec's (issue 19 item 5): every tool that declares an outputSchema is
// called with its working example of docs/tools-reference.md through the official SDKs of both
// languages and both eras, and its structuredContent validates against that schema:
// - the TypeScript SDK's Client in a 2025 session (callTool validates automatically; it knows the
//   schemas of the last tools/list it made, so the list is one page here);
// - 2026-07-28 requests (the TypeScript SDK speaks 2025 only) validated with that SDK's own
//   validator (AjvJsonSchemaValidator) against the listed schema;
// - the Python SDK (PyPI `mcp`) in a 2025 session and in 2026-07-28, which validates every result
//   of a listed tool and would raise (tests/support/python_client.py, scenario `calls`).
// Travel tools call third-party APIs (tests/travel.test.js runs them against stand-ins) and the
// examples that decide an earlier confirmation ($CONFIRMATION) depend on another row's write; both
// are left out, by name, below.
import { afterEach, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { root, startWorker } from "./support/worker.js";
import { post } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";
import { missing, pythonClient } from "./support/python.js";

const SECRET = "output-schema-secret";
const MODERN = "2026-07-28";
const DOC = readFileSync(join(root, "docs", "tools-reference.md"), "utf8");
const DOMAIN_ROW = /^\| `([a-z0-9_]+)` \| [^|]+ \| ([A-Z][a-z]+ [A-Z][a-z]+) \((no roles|[a-z, -]+)\) \| `(\{.*\})` \|$/;
const GENERAL_ROW = /^\| `([a-z0-9_-]+)` \| .+ \| `(\{.*\})` \|$/;

/** Examples of tools open to anyone, run in document order (later rows name earlier runs). */
const general = DOC.split("\n")
  .filter((l) => !DOMAIN_ROW.test(l))
  .map((l) => l.match(GENERAL_ROW))
  .filter(Boolean)
  .map(([, name, args]) => ({ name, args: args.replaceAll("\\|", "|") }));
/** Examples of domain tools, each with the user and roles it is called as. */
const domain = DOC.split("\n")
  .map((l) => l.match(DOMAIN_ROW))
  .filter(Boolean)
  .map(([, name, user, roles, args]) => ({ name, user, roles: roles === "no roles" ? [] : roles.split(", "), args }))
  .filter((r) => !r.args.includes("$CONFIRMATION("));

let w, db, aud;
/** A fresh Worker for each client and era: some examples save records by a name that is unique across owners. */
beforeEach(async () => {
  w = await startWorker({ JWT_SECRET: SECRET, FLOWMIND_LEVELS: "off", TOOLS_PAGE_SIZE: "500", REQUEST_LIMIT: "off", RATE_LIMITS: "*=off" }, { quiet: true });
  db = await w.mf.getD1Database("DB");
  aud = new URL("/mcp", w.url).href;
});
afterEach(() => w?.stop());

/** The id of the sample company's employee named `who` ("First Last"). */
async function employeeId(who) {
  const [first, last] = who.split(" ");
  const row = await db.prepare("SELECT id FROM hr_employees WHERE first_name = ?1 AND last_name = ?2").bind(first, last).first();
  assert.ok(row, who);
  return row.id;
}

async function idOf(table, column, key) {
  const row = await db.prepare(`SELECT id FROM ${table} WHERE ${column} = ?1`).bind(key).first();
  assert.ok(row, `${table}.${column} = ${key}`);
  return row.id;
}

/** The example's arguments with its $EMPLOYEE(…)-like placeholders filled from the sample data. */
async function fill(args) {
  const lookups = {
    EMPLOYEE: employeeId,
    CUSTOMER: (k) => idOf("sales_customers", "name", k),
    ARTICLE: (k) => idOf("support_knowledge_articles", "title", k),
    INVOICE: (k) => idOf("finance_invoices", "vendor_reference", k),
  };
  let out = args;
  for (const [all, kind, key] of args.matchAll(/\$(EMPLOYEE|CUSTOMER|ARTICLE|INVOICE)\(([^)]+)\)/g)) out = out.replace(all, await lookups[kind](key));
  return out;
}

/** A token for `user` (a name of the sample company) with exactly `roles`. */
async function tokenFor(user, roles) {
  return hs256({ sub: await employeeId(user), roles, aud, exp: Math.floor(Date.now() / 1000) + 900 }, SECRET);
}

/** The groups of calls, each made as one caller: the open tools as a user without roles, then each domain example as its user. */
async function groups() {
  const out = [{ token: await tokenFor("Marcus Johnson", []), calls: general.map((r) => ({ name: r.name, args: r.args })) }];
  for (const r of domain) out.push({ token: await tokenFor(r.user, r.roles), calls: [{ name: r.name, args: await fill(r.args) }] });
  return out;
}

/** Fills $EXECUTION_ID and $TIDE_ID from what earlier calls of the group returned. */
function chained() {
  const ids = { $EXECUTION_ID: "$EXECUTION_ID", $TIDE_ID: "$TIDE_ID" };
  return {
    args: (text) => JSON.parse(Object.entries(ids).reduce((t, [k, v]) => t.replaceAll(k, v), text)),
    saw(result) {
      ids.$EXECUTION_ID = result?.content?.[0]?.text?.match(/exec-[0-9a-f]{32}/)?.[0] ?? ids.$EXECUTION_ID;
      ids.$TIDE_ID = result?.structuredContent?.tide_id ?? ids.$TIDE_ID;
    },
  };
}

/** What every tool with an outputSchema declares, by name (a 2025 listing of `token`'s caller). */
async function schemasOf(client) {
  const listed = await client.listTools();
  assert.equal(listed.nextCursor, undefined, "one page, so the SDK holds every schema");
  return new Map(listed.tools.filter((t) => t.outputSchema).map((t) => [t.name, t.outputSchema]));
}

describe("structured results validate against outputSchema in the TypeScript SDK", () => {
  test("2025-11-25 session: Client.callTool validates each example's result", async () => {
    const covered = new Set();
    for (const g of await groups()) {
      const client = new Client({ name: "output-schema", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(new URL(w.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${g.token}` } } }));
      const schemas = await schemasOf(client);
      const ids = chained();
      for (const c of g.calls) {
        const r = await client.callTool({ name: c.name, arguments: ids.args(c.args) });
        ids.saw(r);
        assert.notEqual(r.isError, true, `${c.name}: ${JSON.stringify(r).slice(0, 400)}`);
        if (schemas.has(c.name)) {
          assert.ok(r.structuredContent, `${c.name} declares an outputSchema and returned no structuredContent`);
          covered.add(c.name);
        }
      }
      await client.close();
    }
    assert.ok(covered.size >= 30, `${covered.size} tools with an outputSchema called`);
  });

  test("2026-07-28: every example's structuredContent passes the SDK's validator for the listed schema", async () => {
    const validator = new AjvJsonSchemaValidator();
    let n = 0;
    const modern = async (token, method, params) => {
      const p = { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } };
      const headers = { authorization: `Bearer ${token}`, "mcp-protocol-version": MODERN, "mcp-method": method, ...(p.name ? { "mcp-name": p.name } : {}) };
      const res = await post(w.mcpUrl, { jsonrpc: "2.0", id: ++n, method, params: p }, { headers });
      if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) return res.json();
      const messages = (await res.text()).split("\n\n").map((b) => b.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")).filter(Boolean).map((d) => JSON.parse(d));
      return messages.find((m) => m.id === n);
    };
    let checked = 0;
    for (const g of await groups()) {
      const listed = (await modern(g.token, "tools/list", {})).result;
      assert.equal(listed.nextCursor, undefined);
      const schemas = new Map(listed.tools.filter((t) => t.outputSchema).map((t) => [t.name, t.outputSchema]));
      const ids = chained();
      for (const c of g.calls) {
        const reply = await modern(g.token, "tools/call", { name: c.name, arguments: ids.args(c.args) });
        assert.ok(reply.result, `${c.name}: ${JSON.stringify(reply).slice(0, 400)}`);
        ids.saw(reply.result);
        assert.notEqual(reply.result.isError, true, `${c.name}: ${JSON.stringify(reply.result).slice(0, 400)}`);
        if (!schemas.has(c.name)) continue;
        const valid = validator.getValidator(schemas.get(c.name))(reply.result.structuredContent);
        assert.ok(valid.valid, `${c.name}: ${valid.errorMessage}`);
        checked++;
      }
    }
    assert.ok(checked >= 30, `${checked} results checked`);
  });
});

describe("structured results validate against outputSchema in the Python SDK", { skip: missing ?? false }, () => {
  for (const mode of ["legacy", MODERN]) {
    test(`${mode}: the SDK accepts every example's result, with no warning`, async () => {
      let accepted = 0;
      for (const g of await groups()) {
        const r = await pythonClient("calls", w.mcpUrl, mode, { token: g.token, args: g.calls });
        for (const c of r.calls) {
          assert.ok(c.ok, `${c.name}: ${c.error}`);
          assert.notEqual(c.is_error, true, `${c.name}: ${JSON.stringify(c.structured)}`);
          accepted++;
        }
        assert.equal(r.stderr, "", `no warning (a result failing its schema would be an error, an unlisted tool a warning)`);
      }
      assert.equal(accepted, general.length + domain.length);
    });
  }
});
