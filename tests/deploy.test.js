// `npm run deploy`: the dry run bundles offline, and the real script runs end to end against a local
// stand-in of the Cloudflare API (support/cloudflare.js; wrangler is pointed at it, nothing reaches
// Cloudflare): a first deploy creates the D1 database and KV namespace, applies every migration
// (schema and shipped definitions, no sample company) and uploads the Worker with every binding; a
// later deploy creates nothing, applies the new migration before the new code is live and keeps
// the bindings. The OAuth companion (oauth/) is deployed after the Worker it binds, with the key
// pair the two share made once; `--no-oauth` deploys the Worker alone. `npm run sample-data --
// --remote` then loads and removes the sample company once.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { root } from "./support/worker.js";
import { startCloudflare } from "./support/cloudflare.js";

test("deploy --dry-run bundles the Worker and its wasm without publishing", () => {
  const out = mkdtempSync(join(tmpdir(), "mcp-edge-deploy-"));
  try {
    const run = spawnSync("bash", ["scripts/deploy.sh", "--dry-run", "--outdir", out], { cwd: root, encoding: "utf8", env: { ...process.env, CI: "true" } });
    const log = run.stdout + run.stderr;
    assert.equal(run.status, 0, log);
    assert.match(log, /--dry-run: exiting now/);
    for (const binding of ["env.SESSION (Session)", "env.CONFIRMATIONS (Confirmation)", "env.RATE_LIMITER (RateLimiter)", "env.LISTENERS (Listeners)", "env.DB (mcp-edge)", "env.CACHE"]) assert.ok(log.includes(binding), binding);
    const files = readdirSync(out);
    assert.ok(files.includes("index.js"), files.join(","));
    const wasm = files.find((f) => f.endsWith(".wasm"));
    assert.ok(wasm && statSync(join(out, wasm)).size > 100_000, "the wasm module is in the bundle");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

describe("npm run deploy against a stand-in of the Cloudflare API", () => {
  let cf;
  before(async () => (cf = await startCloudflare()));
  after(() => cf?.stop());

  const migrations = readdirSync(join(root, "migrations")).filter((f) => f.endsWith(".sql")).sort();
  // Asynchronous: the stand-in answers from this process, so it must not be blocked while wrangler runs.
  const run = (cmd, args) => new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...cf.env } });
    let log = "";
    child.stdout.on("data", (d) => (log += d));
    child.stderr.on("data", (d) => (log += d));
    child.on("close", (status) => resolve({ status, log }));
  });
  const deploy = () => run("bash", ["scripts/deploy.sh"]);
  const sampleData = (...args) => run(process.execPath, ["scripts/sample-data.js", "--remote", ...args]);
  const db = () => cf.d1.get("mcp-edge").db;
  const count = (table) => db().prepare(`SELECT COUNT(*) n FROM ${table}`).get().n;
  /** Index of the first request since `from` matching method and path. */
  const at = (from, method, path) => cf.requests.findIndex((r, i) => i >= from && r.method === method && path.test(r.path));
  const binding = (name) => cf.scripts.get("mcp-edge").metadata.bindings.find((b) => b.name === name);

  test("a first deploy creates the database and namespace, migrates, then uploads with every binding", async () => {
    const r = await deploy();
    assert.equal(r.status, 0, r.log);
    assert.deepEqual(cf.unknown, [], "every call wrangler made is one the stand-in knows");
    assert.deepEqual([...cf.d1.keys()], ["mcp-edge"]);
    assert.deepEqual([...cf.kv.keys()].sort(), ["mcp-edge-cache", "mcp-edge-oauth-oauth-kv"]);
    // Every migration, in order, and nothing else: schema and shipped definitions, no sample company.
    assert.deepEqual(db().prepare("SELECT name FROM d1_migrations ORDER BY id").all().map((m) => m.name), migrations);
    assert.ok(count("instruction_sets") > 0 && count("execution_chains") > 0, "shipped definitions");
    for (const table of ["hr_employees", "hr_departments", "finance_invoices", "sales_customers", "support_tickets"]) assert.equal(count(table), 0, table);
    // Migrated before the upload.
    const create = at(0, "POST", /^\/d1\/database$/);
    const lastMigration = cf.requests.findLastIndex((q) => /INSERT INTO "?d1_migrations"?/.test(q.sql ?? ""));
    const upload = at(0, "PUT", /^\/workers\/scripts\/mcp-edge$/);
    assert.ok(create >= 0 && create < lastMigration && lastMigration < upload, `create ${create} < migrations ${lastMigration} < upload ${upload}`);
    const script = cf.scripts.get("mcp-edge");
    for (const [name, className] of [["SESSION", "Session"], ["CONFIRMATIONS", "Confirmation"], ["RATE_LIMITER", "RateLimiter"], ["LISTENERS", "Listeners"]]) {
      assert.deepEqual(binding(name), { name, type: "durable_object_namespace", class_name: className });
    }
    assert.deepEqual(binding("DB"), { name: "DB", type: "d1", id: cf.d1.get("mcp-edge").uuid });
    assert.deepEqual(binding("CACHE"), { name: "CACHE", type: "kv_namespace", namespace_id: cf.kv.get("mcp-edge-cache") });
    assert.equal(binding("ANONYMOUS_ACCESS").text, "false", "the top-level (production) vars");
    assert.equal(script.metadata.migrations.new_tag, "v4");
    assert.deepEqual(script.metadata.migrations.steps.flatMap((s) => s.new_sqlite_classes), ["Session", "Confirmation", "RateLimiter", "Listeners"]);
    assert.deepEqual(script.metadata.observability, { enabled: true });
    const wasm = Object.entries(script.modules).find(([name]) => name.endsWith(".wasm"));
    assert.ok(wasm && wasm[1] > 100_000, `the wasm module is uploaded: ${Object.keys(script.modules)}`);
  });

  test("the first deploy puts the OAuth server in front, with the secrets the two share", async () => {
    const oauth = cf.scripts.get("mcp-edge-oauth");
    assert.ok(oauth, "the companion Worker is deployed");
    const oauthBinding = (name) => oauth.metadata.bindings.find((b) => b.name === name);
    assert.deepEqual(oauthBinding("MCP"), { name: "MCP", type: "service", service: "mcp-edge" });
    assert.deepEqual(oauthBinding("OAUTH_KV"), { name: "OAUTH_KV", type: "kv_namespace", namespace_id: cf.kv.get("mcp-edge-oauth-oauth-kv") });
    assert.equal(oauthBinding("DEV_LOGIN").text, "false", "no development login in production");
    // Client ID metadata documents need the flag that keeps their fetches on the public Internet.
    assert.ok(oauth.metadata.compatibility_flags?.includes("global_fetch_strictly_public"), JSON.stringify(oauth.metadata.compatibility_flags));
    // approveUrl leads to the companion's approval page, where the user signs in.
    assert.deepEqual(binding("APPROVE_URL"), { name: "APPROVE_URL", type: "plain_text", text: "/confirm" });
    // The key pair: the companion's private key and the Worker's public key are one pair.
    const priv = JSON.parse(oauthBinding("INTERNAL_JWT_KEY").text);
    const [pub] = JSON.parse(binding("JWKS").text).keys;
    assert.equal(binding("JWKS").type, "secret_text");
    assert.equal(oauthBinding("INTERNAL_JWT_KEY").type, "secret_text");
    assert.deepEqual([pub.kid, pub.x, pub.y, pub.alg], [priv.kid, priv.x, priv.y, "ES256"]);
    assert.ok(priv.d && !pub.d, "only the companion holds the private part");
    for (const name of ["CURSOR_SECRET", "REQUEST_STATE_SECRET"]) {
      assert.equal(binding(name).type, "secret_text", name);
      assert.match(binding(name).text, /^[0-9a-f]{64}$/, name);
    }
    // The Rust Worker is deployed before the companion whose service binding names it.
    const rust = cf.requests.findIndex((q) => q.method === "PUT" && q.path === "/workers/scripts/mcp-edge");
    const companion = cf.requests.findIndex((q) => q.method === "PUT" && q.path === "/workers/scripts/mcp-edge-oauth");
    assert.ok(rust >= 0 && companion > rust, `mcp-edge (${rust}) before mcp-edge-oauth (${companion})`);
  });

  test("a later deploy creates nothing, applies the new migration before the new code, keeps the bindings", async () => {
    // The database as an earlier release left it: every migration but the newest.
    const entry = cf.d1.get("mcp-edge");
    entry.db = new DatabaseSync(":memory:");
    entry.db.exec("PRAGMA foreign_keys = ON; CREATE TABLE d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TEXT DEFAULT CURRENT_TIMESTAMP)");
    for (const file of migrations.slice(0, -1)) {
      entry.db.exec(readFileSync(join(root, "migrations", file), "utf8"));
      entry.db.prepare("INSERT INTO d1_migrations (name) VALUES (?)").run(file);
    }
    const [dbId, kvId, from] = [binding("DB").id, binding("CACHE").namespace_id, cf.requests.length];
    const kid = JSON.parse(binding("JWKS").text).keys[0].kid;
    const r = await deploy();
    assert.equal(r.status, 0, r.log);
    assert.deepEqual(cf.unknown, []);
    assert.equal(at(from, "POST", /^\/d1\/database$/), -1, "no database created");
    assert.equal(at(from, "POST", /^\/storage\/kv\/namespaces$/), -1, "no namespace created");
    const newest = migrations.at(-1);
    const migrated = cf.requests.findIndex((q, i) => i >= from && q.sql?.includes(`'${newest}'`));
    const live = at(from, "POST", /^\/workers\/scripts\/mcp-edge\/deployments$/);
    assert.ok(migrated >= 0 && live > migrated, `${newest} applied (${migrated}) before the new version went live (${live})`);
    assert.equal(db().prepare("SELECT COUNT(*) n FROM d1_migrations").get().n, migrations.length);
    assert.equal(cf.scripts.get("mcp-edge").uploads, 2);
    assert.equal(binding("DB").id, dbId);
    assert.equal(binding("CACHE").namespace_id, kvId);
    assert.equal(cf.scripts.get("mcp-edge-oauth").uploads, 2);
    assert.match(r.log, /secrets to create: none/, "the secrets of the first deploy are kept");
    assert.equal(JSON.parse(binding("JWKS").text).keys[0].kid, kid, "the key pair is the first deploy's");
  });

  test("npm run deploy -- --no-oauth deploys the Worker alone", async () => {
    const from = cf.requests.length;
    const r = await run("bash", ["scripts/deploy.sh", "--no-oauth"]);
    assert.equal(r.status, 0, r.log);
    assert.deepEqual(cf.unknown, []);
    assert.equal(at(from, "PUT", /^\/workers\/scripts\/mcp-edge-oauth$/), -1);
    assert.equal(at(from, "POST", /^\/workers\/scripts\/mcp-edge-oauth\/versions$/), -1, "the companion is not touched");
    assert.ok(at(from, "POST", /^\/workers\/scripts\/mcp-edge\/deployments$/) >= 0, "the Worker is deployed");
    assert.equal(binding("APPROVE_URL"), undefined, "no companion, no approval page of its own: approveUrl is the session page");
  });

  test("npm run sample-data -- --remote loads the sample company once and --remove takes exactly it out", async () => {
    const before = count("instruction_sets");
    let r = await sampleData();
    assert.equal(r.status, 0, r.log);
    assert.match(r.log, /loading the sample company/);
    assert.equal(count("hr_employees"), 531);
    r = await sampleData();
    assert.equal(r.status, 0, r.log);
    assert.match(r.log, /already has the sample company; nothing to do/);
    assert.equal(count("hr_employees"), 531, "never loaded twice");
    r = await sampleData("--remove");
    assert.equal(r.status, 0, r.log);
    for (const table of ["hr_grade_levels", "hr_employees", "finance_vendors", "sales_customers", "support_tickets", "support_knowledge_articles"]) assert.equal(count(table), 0, table);
    assert.equal(count("instruction_sets"), before, "shipped definitions stay");
    r = await sampleData("--remove");
    assert.equal(r.status, 0, r.log);
    assert.match(r.log, /no sample company; nothing to remove/);
    assert.equal((await sampleData("--local", "--remote")).status, 2, "one of --local and --remote");
    assert.deepEqual(cf.unknown, []);
  });
});
