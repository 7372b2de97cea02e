// The tool reference (docs/tools-reference.md): every production tool has a row, every row's example
// call works, and the README's "Tools at a glance" names every tool.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root, startWorker } from "./support/worker.js";
import { LATEST, initialize, post, rpc } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

let w;
const DOCS_SECRET = "docs-test-secret";
before(async () => (w = await startWorker({ JWT_SECRET: DOCS_SECRET })));
after(() => w?.stop());

/** A row of the domain tools' table: tool | who may call it | "Name Surname (roles)" | `{args}`. */
const DOMAIN_ROW = /^\| `([a-z0-9_]+)` \| [^|]+ \| ([A-Z][a-z]+ [A-Z][a-z]+) \((no roles|[a-z, -]+)\) \| `(\{.*\})` \|$/;

/** The page whose tables hold every tool's example call. */
const TOOLS_DOC = readFileSync(join(root, "docs", "tools-reference.md"), "utf8");

const rows = TOOLS_DOC
  .split("\n")
  .filter((line) => !DOMAIN_ROW.test(line))
  .map((line) => line.match(/^\| `([a-z0-9_-]+)` \| .+ \| `(\{.*\})` \|$/))
  .filter(Boolean)
  .map(([, name, args]) => ({ name, args: JSON.parse(args.replaceAll("\\|", "|")) }));

/** Tools of the tool reference's "Travel tools" section, with who may call them (`anyone` or a role): they
 * call third-party APIs, so they are documented (`| \`tool\` | who | what it does |`) but not run
 * here; tests/travel.test.js runs them. */
const travelRows = (TOOLS_DOC.split(/^## Travel tools$/m)[1] ?? "")
  .split(/^##/m)[0]
  .split("\n")
  .map((line) => line.match(/^\| `([a-z0-9_]+)` \| (anyone|`[a-z-]+`) \| [^`|][^|]* \|$/))
  .filter(Boolean)
  .map(([, name, who]) => ({ name, role: who === "anyone" ? null : who.slice(1, -1) }));
const travelTools = travelRows.map((r) => r.name);

/** Rows of the domain tools' table: tool, the user it is called as (with roles), arguments. */
const domainRows = TOOLS_DOC
  .split("\n")
  .map((line) => line.match(DOMAIN_ROW))
  .filter(Boolean)
  .map(([, name, user, roles, args]) => ({ name, user, roles: roles === "no roles" ? [] : roles.split(", "), args }));

/** Calls `name` with `args` (text with $EMPLOYEE(…) and similar placeholders) as the named user
 * with exactly `roles`; returns the JSON-RPC reply and the tools that user sees. */
async function callAs(user, roles, name, args) {
  const db = await w.mf.getD1Database("DB");
  const idOf = async (fullName) => {
    const [first, last] = fullName.split(" ");
    const row = await db.prepare("SELECT id FROM hr_employees WHERE first_name = ?1 AND last_name = ?2").bind(first, last).first();
    assert.ok(row, fullName);
    return row.id;
  };
  const aud = new URL("/mcp", w.url).href;
  const token = hs256({ sub: await idOf(user), roles, aud, exp: Math.floor(Date.now() / 1000) + 600 }, DOCS_SECRET);
  const headers = { authorization: `Bearer ${token}` };
  const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "docs", version: "1" } } }, { headers });
  const session = init.headers.get("mcp-session-id");
  let filled = args;
  for (const [, who] of args.matchAll(/\$EMPLOYEE\(([^)]+)\)/g)) filled = filled.replace(`$EMPLOYEE(${who})`, await idOf(who));
  // Other records by their name or title, so the examples hold whatever the id format is.
  // $CONFIRMATION(tool) is the latest confirmation of that tool (an earlier example asked for it).
  const lookups = {
    CUSTOMER: ["sales_customers", "name"],
    ARTICLE: ["support_knowledge_articles", "title"],
    INVOICE: ["finance_invoices", "vendor_reference"],
    CONFIRMATION: ["(SELECT confirmation_id AS id, tool FROM audit_log ORDER BY audit_log.id DESC)", "tool"],
  };
  for (const [all, kind, key] of filled.matchAll(/\$(CUSTOMER|ARTICLE|INVOICE|CONFIRMATION)\(([^)]+)\)/g)) {
    const [table, column] = lookups[kind];
    const row = await db.prepare(`SELECT id FROM ${table} WHERE ${column} = ?1`).bind(key).first();
    assert.ok(row, all);
    filled = filled.replace(all, row.id);
  }
  const reply = await (await post(w.mcpUrl, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: JSON.parse(filled) } }, { session, headers, version: LATEST })).json();
  const tools = await (await post(w.mcpUrl, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { session, headers, version: LATEST })).json();
  return { reply, tools: tools.result.tools.map((t) => t.name) };
}

test("every domain tool's example works for the user and roles it names", async () => {
  assert.ok(domainRows.length >= 4, `${domainRows.length} domain rows`);
  const listed = new Set();
  for (const { name, user, roles, args } of domainRows) {
    const { reply: r, tools } = await callAs(user, roles, name, args);
    // Reads succeed; writes wait for the user's confirmation.
    assert.ok(["success", "pending_confirmation"].includes(r.result?.structuredContent?.status), `${name} as ${user}: ${JSON.stringify(r)}`);
    for (const t of tools) listed.add(t);
  }
  const documented = new Set([...rows.map((r) => r.name), ...domainRows.map((r) => r.name), ...travelTools]);
  assert.deepEqual([...listed].filter((t) => !documented.has(t)), [], "every tool these users see is documented");
});

test("docs/domain.md: every call answers as the page says for the role it names", async () => {
  const calls = readFileSync(join(root, "docs", "domain.md"), "utf8")
    .split("\n")
    .map((line) => line.match(/^\| ([A-Z][a-z]+ [A-Z][a-z]+) \((no roles|[a-z, -]+)\) \| `([a-z_]+)` \| `(\{.*\})` \| ([a-zA-Z_ ]+) \|$/))
    .filter(Boolean);
  assert.ok(calls.length >= 20, `${calls.length} calls`);
  for (const [, user, roles, name, args, answer] of calls) {
    const { reply } = await callAs(user, roles === "no roles" ? [] : roles.split(", "), name, args);
    const got = reply.error
      ? (reply.error.code === -32602 && /unknown tool/.test(reply.error.message) ? "unknown tool" : JSON.stringify(reply.error))
      : reply.result.structuredContent?.status === "error"
        ? reply.result.structuredContent.code
        : reply.result.structuredContent?.status;
    assert.equal(got, answer, `${name} as ${user} (${roles}): ${JSON.stringify(reply)}`);
  }
});

test("every listed tool is documented in the tool reference", async () => {
  const { session } = await initialize(w.mcpUrl);
  const listed = (await rpc(w.mcpUrl, session, "tools/list")).reply.result.tools.map((t) => t.name);
  assert.ok(travelTools.length >= 2, `${travelTools.length} travel tools`);
  const open = travelRows.filter((r) => !r.role).map((r) => r.name);
  assert.deepEqual([...rows.map((r) => r.name), ...open].sort(), listed.sort(), "anonymous callers see the tools open to anyone");
});

test("a travel tool that names a role is listed for a user with that role only", async () => {
  const gated = travelRows.filter((r) => r.role);
  assert.ok(gated.some((r) => r.name === "list_events"), JSON.stringify(travelRows));
  for (const { name, role } of gated) {
    const { reply, tools } = await callAs("Marcus Johnson", [role], name, "{}");
    assert.ok(tools.includes(name), `${name} for ${role}`);
    assert.equal(reply.result?.isError, true, "reached the tool (which refuses the empty arguments)");
    assert.match(reply.result.content[0].text, /Invalid arguments/);
    const without = await callAs("Marcus Johnson", [], name, "{}");
    assert.ok(!without.tools.includes(name), `${name} without ${role}`);
    assert.match(without.reply.error?.message ?? "", /unknown tool/);
  }
});

test("the README's tools at a glance name every documented tool", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const glance = readme.split(/^## Tools at a glance$/m)[1]?.split(/^## /m)[0] ?? "";
  const documented = new Set([...rows, ...domainRows, ...travelRows].map((r) => r.name));
  assert.ok(documented.size >= 50, `${documented.size} documented tools`);
  // EPIC-TIDE's tools share a prefix, which the table writes once: `-create-path` after the first.
  const missing = [...documented].filter((n) => !glance.includes(`\`${n}\``) && !glance.includes(`\`${n.replace(/^epic-tide/, "")}\``));
  assert.deepEqual(missing, []);
});

test("every example call of the tool reference succeeds", async () => {
  const { session } = await initialize(w.mcpUrl);
  let executionId = "$EXECUTION_ID";
  let tideId = "$TIDE_ID";
  for (const { name, args } of rows) {
    // Examples may name the execution (or EPIC-TIDE tide) an earlier example started.
    const filled = JSON.parse(JSON.stringify(args).replaceAll("$EXECUTION_ID", executionId).replaceAll("$TIDE_ID", tideId));
    const r = (await rpc(w.mcpUrl, session, "tools/call", { name, arguments: filled })).reply;
    executionId = r.result?.content?.[0]?.text?.match(/exec-[0-9a-f]{32}/)?.[0] ?? executionId;
    tideId = r.result?.structuredContent?.tide_id ?? tideId;
    assert.ok(r.result, `${name}: ${JSON.stringify(r)}`);
    assert.notEqual(r.result.isError, true, `${name}: ${JSON.stringify(r.result)}`);
  }
});
