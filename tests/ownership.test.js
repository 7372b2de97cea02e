// Records have owners (issue 15): templates, chains, collection records and EPIC-TIDE works, paths,
// tides and patterns belong to the signed-in user (or the anonymous MCP session) that made them.
// Through the official SDK client against the built Worker, with users signed in by tokens: another
// user cannot read, list, overwrite or delete a private record; shared records reach holders of the
// role only; public ones are read by all and written by their owner only; shipped ones are read by
// everyone and changed only by the admin role; anonymous sessions are kept apart, and an anonymous
// 2026-07-28 call owns nothing. The rule is docs/security.md "Records have owners".
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startWorker } from "./support/worker.js";
import { post } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "ownership-secret";
// Named sample users (docs/domain-data.md): Marcus and Sarah have no roles, Alice has hr-read.
const MARCUS = "00000000-0000-4000-8000-000000000006";
const SARAH = "00000000-0000-4000-8000-000000000007";
const ALICE = "00000000-0000-4000-8000-000000000010";
const EVE = "00000000-0000-4000-8000-000000000001";

let w, db;
const clients = [];
let marcus, sarah, alice, admin;
before(async () => {
  w = await startWorker({ JWT_SECRET: SECRET, RATE_LIMITS: "*=off" }, { quiet: true });
  db = await w.mf.getD1Database("DB");
  marcus = await connect(MARCUS, []);
  sarah = await connect(SARAH, []);
  alice = await connect(ALICE, ["hr-read"]);
  admin = await connect(EVE, ["admin"]);
});
after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await w?.stop();
});

/** An SDK client signed in as `sub` with `roles`, or anonymous without a `sub`. */
async function connect(sub, roles = []) {
  const aud = new URL("/mcp", w.url).href;
  const headers = sub ? { authorization: `Bearer ${hs256({ sub, roles, aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` } : {};
  const client = new Client({ name: "ownership-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(w.mcpUrl), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

const call = (who, name, args) => who.callTool({ name, arguments: args });
const textOf = (r) => r.content.map((c) => c.text ?? "").join("\n");
async function ok(who, name, args) {
  const r = await call(who, name, args);
  assert.notEqual(r.isError, true, `${name}: ${textOf(r)}`);
  return r;
}
async function fails(who, name, args) {
  const r = await call(who, name, args);
  assert.equal(r.isError, true, `${name} should fail: ${textOf(r)}`);
  return r;
}

let unique = 0;
const fresh = (label) => `own-${label}-${++unique}`;
const template = (name, content = `Hello {who} from ${name}.`) => ({
  name, title: `Ownership ${name}`, category: "custom", content, variables_schema: { who: { type: "string", required: true } },
});
const createTemplate = (who, name, creation_options = {}, content) =>
  call(who, "create_template", { template_definition: template(name, content), creation_options });
const render = (who, name) => call(who, "process_template", { template_name: name, variables: { who: "R" } });
const step = (id, name, type, extra = {}) => ({ id, name, type, input_variables: [], output_variables: [], ...extra });
const echoChain = (name, marker = name) => ({ name, title: `Ownership ${name}`, category: "custom", steps: [step(1, "echo", "data_transformation", { input_template: `${marker}:{who}`, output_variables: ["echo"] })] });
const createChain = (who, chain_definition, creation_options = {}) => call(who, "create_chain", { chain_definition, creation_options });
const run = (who, chain_name, variables = { who: "R" }) => call(who, "execute_chain", { chain_name, variables });
/** A chain of one database_operation step on collection `notes`, the record given by variable `rec`. */
const recordChain = (name, action, operation = {}) => ({
  name, title: `Ownership ${name}`, category: "custom",
  steps: [step(1, "record-op", "database_operation", { operation: { collection: "notes", action, ...operation }, input_template: "{rec}", output_variables: ["record"] })],
});
const record = async (id) => db.prepare("SELECT data, owner, visibility, shared_roles FROM collection_records WHERE collection = 'notes' AND id = ?1").bind(id).first();

describe("private records", () => {
  test("another user cannot read, list, overwrite or retire a private template", async () => {
    const name = fresh("tpl");
    await ok(marcus, "create_template", { template_definition: template(name) });
    assert.match(textOf(await ok(marcus, "process_template", { template_name: name, variables: { who: "M" } })), new RegExp(`Hello M from ${name}`));

    const read = await fails(sarah, "process_template", { template_name: name, variables: { who: "S" } });
    assert.match(textOf(read), new RegExp(`Template '${name}' not found\\. Available templates: `));
    assert.ok(!textOf(read).includes(`${name} (custom)`), "the listing leaves it out");
    assert.ok(textOf(read).includes("client-welcome-email (email-templates)"), "shipped templates are listed");

    for (const creation_options of [{}, { overwrite_existing: true }, { overwrite_existing: true, set_active: false }]) {
      const r = await fails(sarah, "create_template", { template_definition: template(name, "Taken over {who}."), creation_options });
      assert.equal(textOf(r), `Template '${name}' belongs to another owner, so it was not created or overwritten (names are unique across owners, and only a record's owner may replace it). Choose another name for your template (template_definition.name).`);
    }
    assert.match(textOf(await ok(marcus, "process_template", { template_name: name, variables: { who: "M" } })), new RegExp(`Hello M from ${name}`), "unchanged and still active");
    const row = await db.prepare("SELECT owner, visibility, revision, is_active FROM template_definitions WHERE name = ?1").bind(name).first();
    assert.deepEqual(row, { owner: `user:${MARCUS}`, visibility: "private", revision: 1, is_active: 1 });
  });

  test("the owner's own name clash still says to overwrite, and overwriting keeps owner and visibility", async () => {
    const name = fresh("tpl");
    await ok(marcus, "create_template", { template_definition: template(name), creation_options: { visibility: "public" } });
    const again = await fails(marcus, "create_template", { template_definition: template(name) });
    assert.equal(textOf(again), `Template '${name}' already exists. Use creation_options.overwrite_existing: true to replace it.`);
    const replaced = await ok(marcus, "create_template", { template_definition: template(name, "Replaced {who}."), creation_options: { overwrite_existing: true } });
    assert.match(textOf(replaced), /updated successfully[\s\S]*- Visibility: public/);
    assert.match(textOf(await ok(sarah, "process_template", { template_name: name, variables: { who: "S" } })), /Replaced S\./);
  });

  test("another user cannot run, list or overwrite a private chain", async () => {
    const name = fresh("chain");
    const created = await ok(marcus, "create_chain", { chain_definition: echoChain(name) });
    assert.match(textOf(created), /- Visibility: private/);
    assert.match(textOf(await ok(marcus, "execute_chain", { chain_name: name, variables: { who: "M" } })), new RegExp(`${name}:M`));

    const r = await fails(sarah, "execute_chain", { chain_name: name, variables: { who: "S" } });
    assert.match(textOf(r), new RegExp(`Chain '${name}' not found\\. Available chains: `));
    assert.ok(!textOf(r).includes(`${name} (custom)`));
    assert.ok(textOf(r).includes("corporate-booking-workflow (booking-management)"));
    for (const creation_options of [{}, { overwrite_existing: true }]) {
      const refused = await fails(sarah, "create_chain", { chain_definition: echoChain(name, "hijacked"), creation_options });
      assert.equal(textOf(refused), `Chain '${name}' belongs to another owner, so it was not created or overwritten (names are unique across owners, and only a record's owner may replace it). Choose another name for your chain (chain_definition.name).`);
    }
    assert.match(textOf(await ok(marcus, "execute_chain", { chain_name: name, variables: { who: "M" } })), new RegExp(`${name}:M`), "the definition is Marcus's still");
  });

  test("a chain may not name a template its author cannot read", async () => {
    const tpl = fresh("tpl");
    await ok(marcus, "create_template", { template_definition: template(tpl) });
    const chain = { name: fresh("chain"), title: "Uses a template", category: "custom", steps: [step(1, "mail", "template_processing", { template_id: tpl, input_template: "x", output_variables: ["mail"] })] };
    const r = await fails(sarah, "create_chain", { chain_definition: chain });
    assert.match(textOf(r), new RegExp(`active templates not found: ${tpl}`));
  });

  test("another user cannot get, update, delete or take the id of a private collection record", async () => {
    const id = fresh("rec");
    const create = fresh("rec-create");
    await ok(marcus, "create_chain", { chain_definition: recordChain(create, "create") });
    await ok(marcus, "execute_chain", { chain_name: create, variables: { rec: JSON.stringify({ id, text: "Marcus's note" }) } });
    assert.deepEqual(await record(id), { data: JSON.stringify({ text: "Marcus's note" }), owner: `user:${MARCUS}`, visibility: "private", shared_roles: "[]" });

    for (const action of ["get", "update", "delete"]) {
      const chain = fresh(`rec-${action}`);
      await ok(sarah, "create_chain", { chain_definition: recordChain(chain, action) });
      const r = await fails(sarah, "execute_chain", { chain_name: chain, variables: { rec: JSON.stringify({ id, text: "Sarah was here" }) } });
      assert.match(textOf(r), new RegExp(`record "${id}" not found in collection "notes"`), `${action}: ${textOf(r)}`);
    }
    const steal = fresh("rec-create");
    await ok(sarah, "create_chain", { chain_definition: recordChain(steal, "create") });
    const taken = await fails(sarah, "execute_chain", { chain_name: steal, variables: { rec: JSON.stringify({ id, text: "Sarah's" }) } });
    assert.match(textOf(taken), new RegExp(`record id "${id}" in collection "notes" is taken by a record of another owner; give the record another id, or leave "id" out to get a generated one`));
    assert.equal((await record(id)).data, JSON.stringify({ text: "Marcus's note" }), "nothing was changed");

    const mine = fresh("rec-get");
    await ok(marcus, "create_chain", { chain_definition: recordChain(mine, "get") });
    assert.match(textOf(await ok(marcus, "execute_chain", { chain_name: mine, variables: { rec: JSON.stringify({ id }) } })), /Marcus's note/);
  });

  test("another user cannot read, list, replace or run the tides of a private EPIC-TIDE path, nor use its works", async () => {
    const workWhat = `Private work ${++unique}`;
    const work = (await ok(marcus, "epic-tide-save-work", { what: workWhat, how: ["a"], metrics: ["b"] })).structuredContent.name;
    const what = `Private path ${++unique}`;
    const path = (await ok(marcus, "epic-tide-create-path", { what, works: [work], metrics: ["m"], domain: "secret-domain" })).structuredContent.name;
    const tide = (await ok(marcus, "epic-tide-start-tide", { path_name: path })).structuredContent.tide_id;
    await ok(marcus, "epic-tide-update-execution", { tide_id: tide, work_name: work, status: "complete" });
    await ok(marcus, "epic-tide-complete-tide", { tide_id: tide, outcome: "success" });
    assert.equal((await ok(marcus, "epic-tide-query-patterns", { domain: "secret-domain" })).structuredContent.patterns.length, 1);

    const code = (r) => r.structuredContent?.error?.code;
    const history = await fails(sarah, "epic-tide-get-history", { path_name: path });
    assert.equal(code(history), "PATH_NOT_FOUND");
    assert.ok(!history.structuredContent.error.known_paths.includes(path), "not listed");
    assert.equal(code(await fails(sarah, "epic-tide-start-tide", { path_name: path })), "PATH_NOT_FOUND");
    for (const tool of ["epic-tide-update-execution", "epic-tide-complete-tide"]) {
      const args = tool.endsWith("update-execution") ? { tide_id: tide, work_name: work, status: "failed" } : { tide_id: tide, outcome: "failed" };
      assert.equal(code(await fails(sarah, tool, args)), "TIDE_NOT_FOUND", tool);
    }
    assert.deepEqual((await ok(sarah, "epic-tide-query-patterns", { domain: "secret-domain" })).structuredContent.patterns, []);
    const seq = await fails(sarah, "epic-tide-create-path", { what: `Sarah path ${++unique}`, works: [work], metrics: ["m"] });
    assert.equal(code(seq), "INVALID_SEQUENCE");
    const own = (await ok(sarah, "epic-tide-save-work", { what: `Sarah work ${++unique}`, how: ["a"], metrics: ["b"] })).structuredContent.name;
    for (const update of [false, true]) {
      const r = await fails(sarah, "epic-tide-create-path", { what, works: [own], metrics: ["x"], update });
      assert.equal(code(r), "NOT_OWNER");
      assert.equal(r.structuredContent.error.message, `PATH '${path}' belongs to another owner, and only its owner may change it. Path names are unique across owners: reword what to create a path of your own.`);
      assert.equal(r.structuredContent.error.path_id, undefined, "nothing of the other owner's path is shown");
    }
    const w2 = await fails(sarah, "epic-tide-save-work", { what: workWhat, how: ["x"], metrics: ["y"], update: true });
    assert.equal(code(w2), "NOT_OWNER");
    assert.equal((await ok(marcus, "epic-tide-get-history", { path_name: path })).structuredContent.tides.length, 1);
  });
});

describe("shared records", () => {
  test("a template shared with a role is read by its holders only, and written by its owner only", async () => {
    const name = fresh("tpl");
    await ok(marcus, "create_template", { template_definition: template(name), creation_options: { visibility: "shared", shared_roles: ["hr-read"] } });
    assert.match(textOf(await ok(alice, "process_template", { template_name: name, variables: { who: "A" } })), /Hello A/);
    assert.equal((await render(sarah, name)).isError, true, "Sarah lacks hr-read");
    const r = await fails(alice, "create_template", { template_definition: template(name, "Alice's {who}."), creation_options: { overwrite_existing: true } });
    assert.match(textOf(r), /belongs to another owner/);
    const bad = await fails(marcus, "create_template", { template_definition: template(fresh("tpl")), creation_options: { visibility: "shared" } });
    assert.match(textOf(bad), /creation_options\.visibility "shared" needs creation_options\.shared_roles/);
  });

  // A run of someone else's chain acts as the author–runner pair (docs/chains.md "Whose rights a
  // step has"), so the records it creates belong to that pair, not to the runner: otherwise the
  // author's steps could copy the runner's private records into ones the author reads.
  test("a chain shared with a role runs for its holders only; the records a run of another's chain creates belong to the author-runner pair", async () => {
    const name = fresh("chain");
    await ok(marcus, "create_chain", { chain_definition: recordChain(name, "create", { visibility: "shared", shared_roles: ["hr-read"] }), creation_options: { visibility: "shared", shared_roles: ["hr-read"] } });
    const id = fresh("rec");
    await ok(alice, "execute_chain", { chain_name: name, variables: { rec: JSON.stringify({ id, text: "by Alice" }) } });
    assert.deepEqual(await record(id), { data: JSON.stringify({ text: "by Alice" }), owner: `user:chain-delegate:${JSON.stringify([MARCUS, ALICE])}`, visibility: "shared", shared_roles: '["hr-read"]' });
    assert.match(textOf(await fails(sarah, "execute_chain", { chain_name: name, variables: { rec: "{}" } })), /not found/);

    // The shared record: Marcus (no hr-read) cannot read it with his own chain; an hr-read holder's
    // own chain can, and cannot update it (it is not theirs).
    const get = fresh("rec-get");
    await ok(marcus, "create_chain", { chain_definition: recordChain(get, "get"), creation_options: { visibility: "public" } });
    assert.match(textOf(await fails(marcus, "execute_chain", { chain_name: get, variables: { rec: JSON.stringify({ id }) } })), /not found in collection/);
    const helen = await connect("00000000-0000-4000-8000-000000000009", ["hr-read"]);
    const helensGet = fresh("rec-get");
    await ok(helen, "create_chain", { chain_definition: recordChain(helensGet, "get") });
    assert.match(textOf(await ok(helen, "execute_chain", { chain_name: helensGet, variables: { rec: JSON.stringify({ id }) } })), /by Alice/);
    assert.match(textOf(await fails(helen, "execute_chain", { chain_name: get, variables: { rec: JSON.stringify({ id }) } })), /not found in collection/, "through Marcus's chain Helen acts with the roles both hold: none");
    const upd = fresh("rec-update");
    await ok(helen, "create_chain", { chain_definition: recordChain(upd, "update") });
    const refused = await fails(helen, "execute_chain", { chain_name: upd, variables: { rec: JSON.stringify({ id, text: "by Helen" }) } });
    assert.match(textOf(refused), new RegExp(`record "${id}" in collection "notes" belongs to another owner: you may read it but not update it`));
    assert.equal((await record(id)).data, JSON.stringify({ text: "by Alice" }));
  });

  test("an EPIC-TIDE path shared with a role: its holders read its history, only the owner runs it", async () => {
    const work = (await ok(marcus, "epic-tide-save-work", { what: `Shared work ${++unique}`, how: ["a"], metrics: ["b"], visibility: "shared", shared_roles: ["hr-read"] })).structuredContent.name;
    const path = (await ok(marcus, "epic-tide-create-path", { what: `Shared path ${++unique}`, works: [work], metrics: ["m"], visibility: "shared", shared_roles: ["hr-read"] })).structuredContent.name;
    const tide = (await ok(marcus, "epic-tide-start-tide", { path_name: path })).structuredContent.tide_id;
    assert.equal((await ok(alice, "epic-tide-get-history", { path_name: path })).structuredContent.tides.length, 1);
    assert.equal((await fails(sarah, "epic-tide-get-history", { path_name: path })).structuredContent.error.code, "PATH_NOT_FOUND");
    const start = await fails(alice, "epic-tide-start-tide", { path_name: path });
    assert.equal(start.structuredContent.error.code, "NOT_OWNER");
    assert.match(start.structuredContent.error.message, /create a path of your own/);
    const upd = await fails(alice, "epic-tide-update-execution", { tide_id: tide, work_name: work, status: "complete" });
    assert.equal(upd.structuredContent.error.code, "NOT_OWNER");
    // Alice may build her own path from the work shared with her.
    await ok(alice, "epic-tide-create-path", { what: `Alice path ${++unique}`, works: [work], metrics: ["m"] });
  });
});

describe("public records", () => {
  test("a public template and chain are read and run by everyone, and changed by their owner only", async () => {
    const tpl = fresh("tpl");
    await ok(marcus, "create_template", { template_definition: template(tpl), creation_options: { visibility: "public" } });
    assert.match(textOf(await ok(sarah, "process_template", { template_name: tpl, variables: { who: "S" } })), /Hello S/);
    const anon = await connect();
    assert.match(textOf(await ok(anon, "process_template", { template_name: tpl, variables: { who: "N" } })), /Hello N/);
    assert.match(textOf(await fails(sarah, "create_template", { template_definition: template(tpl, "Mine now {who}."), creation_options: { overwrite_existing: true } })), /belongs to another owner/);

    const chain = fresh("chain");
    await ok(marcus, "create_chain", { chain_definition: echoChain(chain), creation_options: { visibility: "public" } });
    assert.match(textOf(await ok(sarah, "execute_chain", { chain_name: chain, variables: { who: "S" } })), new RegExp(`${chain}:S`));
    assert.match(textOf(await fails(sarah, "create_chain", { chain_definition: echoChain(chain, "x"), creation_options: { overwrite_existing: true } })), /belongs to another owner/);
    // The owner makes it private again: Sarah loses it.
    await ok(marcus, "create_chain", { chain_definition: echoChain(chain), creation_options: { overwrite_existing: true, visibility: "private" } });
    assert.equal((await run(sarah, chain, { who: "S" })).isError, true);
  });

  test("a public collection record is read by everyone and changed or deleted by its owner only", async () => {
    const id = fresh("rec");
    const create = fresh("rec-create");
    await ok(marcus, "create_chain", { chain_definition: recordChain(create, "create", { visibility: "public" }) });
    await ok(marcus, "execute_chain", { chain_name: create, variables: { rec: JSON.stringify({ id, text: "public note" }) } });
    const get = fresh("rec-get");
    await ok(sarah, "create_chain", { chain_definition: recordChain(get, "get") });
    assert.match(textOf(await ok(sarah, "execute_chain", { chain_name: get, variables: { rec: JSON.stringify({ id }) } })), /public note/);
    const del = fresh("rec-delete");
    await ok(sarah, "create_chain", { chain_definition: recordChain(del, "delete") });
    assert.match(textOf(await fails(sarah, "execute_chain", { chain_name: del, variables: { rec: JSON.stringify({ id }) } })), /belongs to another owner: you may read it but not delete it/);
    assert.ok(await record(id), "still there");
    const mine = fresh("rec-delete");
    await ok(marcus, "create_chain", { chain_definition: recordChain(mine, "delete") });
    await ok(marcus, "execute_chain", { chain_name: mine, variables: { rec: JSON.stringify({ id }) } });
    assert.equal(await record(id), null);
  });

  test("rolling back a delete gives the record back its owner and visibility", async () => {
    const id = fresh("rec");
    const create = fresh("rec-create");
    await ok(marcus, "create_chain", { chain_definition: recordChain(create, "create", { visibility: "public" }) });
    await ok(marcus, "execute_chain", { chain_name: create, variables: { rec: JSON.stringify({ id, text: "kept" }) } });
    const name = fresh("rec-delete-fail");
    await ok(marcus, "create_chain", { chain_definition: { name, title: "Delete, then fail", category: "custom", steps: [
      step(1, "remove", "database_operation", { operation: { collection: "notes", action: "delete" }, input_template: "{rec}", output_variables: ["removed"] }),
      step(2, "missing", "database_operation", { operation: { collection: "notes", action: "get" }, input_template: '{{"id": "no-such-note"}}', output_variables: ["none"], depends_on: [1] }),
    ] } });
    const r = await fails(marcus, "execute_chain", { chain_name: name, variables: { rec: JSON.stringify({ id }) } });
    assert.match(textOf(r), /- step 1: rolled_back/);
    assert.deepEqual(await record(id), { data: JSON.stringify({ text: "kept" }), owner: `user:${MARCUS}`, visibility: "public", shared_roles: "[]" });
  });

  test("a public EPIC-TIDE path is read by everyone; its tides are its owner's", async () => {
    const work = (await ok(marcus, "epic-tide-save-work", { what: `Public work ${++unique}`, how: ["a"], metrics: ["b"], visibility: "public" })).structuredContent.name;
    const path = (await ok(marcus, "epic-tide-create-path", { what: `Public path ${++unique}`, works: [work], metrics: ["m"], visibility: "public" })).structuredContent.name;
    assert.deepEqual((await ok(sarah, "epic-tide-get-history", { path_name: path })).structuredContent.works, [work]);
    assert.equal((await fails(sarah, "epic-tide-start-tide", { path_name: path })).structuredContent.error.code, "NOT_OWNER");
    assert.equal((await fails(sarah, "epic-tide-save-work", { what: `Public work ${unique - 1}`, how: ["z"], metrics: ["z"], update: true })).structuredContent.error.code, "NOT_OWNER");
  });
});

describe("shipped records", () => {
  test("are read by everyone and changed only by the admin role, staying the server's", async () => {
    for (const who of [sarah, await connect()]) {
      assert.match(textOf(await ok(who, "process_template", { template_name: "corporate-approval-request", variables: { traveler_name: "D", destination: "B", travel_dates: "x", total_cost: 1, business_justification: "j" } })), /Approval needed: D to B/);
    }
    const t = await fails(sarah, "create_template", { template_definition: template("three-tier-proposal"), creation_options: { overwrite_existing: true } });
    assert.equal(textOf(t), "Template 'three-tier-proposal' is shipped with the server and only a caller with the 'admin' role may change it, so it was not created or overwritten. Choose another name for your template (template_definition.name).");
    const c = await fails(sarah, "create_chain", { chain_definition: echoChain("corporate-booking-workflow"), creation_options: { overwrite_existing: true } });
    assert.match(textOf(c), /Chain 'corporate-booking-workflow' is shipped with the server and only a caller with the 'admin' role may change it/);

    await ok(admin, "create_template", { template_definition: template("three-tier-proposal", "Admin's proposal for {who}."), creation_options: { overwrite_existing: true } });
    assert.deepEqual(await db.prepare("SELECT owner, visibility FROM template_definitions WHERE name = 'three-tier-proposal'").first(), { owner: null, visibility: "public" });
    assert.match(textOf(await ok(sarah, "process_template", { template_name: "three-tier-proposal", variables: { who: "S" } })), /Admin's proposal for S\./);
  });

  test("EPIC-TIDE works and paths from before owners existed are shipped: read by all, changed by an admin only", async () => {
    // What migration 0025 made of a work saved before records had owners.
    const name = fresh("legacy-work");
    await db.prepare("INSERT INTO epic_works (id, name, what, how, metrics, created_ms, updated_ms, owner, visibility) VALUES (?1, ?2, ?3, '[\"a\"]', '[\"b\"]', 0, 0, NULL, 'public')").bind(`work-${"0".repeat(32)}`, name, name).run();
    await ok(sarah, "epic-tide-create-path", { what: `Uses legacy ${++unique}`, works: [name], metrics: ["m"] });
    for (const update of [false, true]) {
      const r = await fails(sarah, "epic-tide-save-work", { what: name, how: ["x"], metrics: ["y"], update });
      assert.equal(r.structuredContent.error.code, "NOT_OWNER");
      assert.equal(r.structuredContent.error.message, `WORK '${name}' is shipped with the server, and only a caller with the 'admin' role may change it. Work names are unique across owners: reword what to save a work of your own.`);
    }
    const updated = await ok(admin, "epic-tide-save-work", { what: name, how: ["x"], metrics: ["y"], update: true });
    assert.equal(updated.structuredContent.state, "updated");
    assert.deepEqual(await db.prepare("SELECT owner, visibility, how FROM epic_works WHERE name = ?1").bind(name).first(), { owner: null, visibility: "public", how: '["x"]' });
  });
});

describe("anonymous callers", () => {
  test("anonymous sessions are isolated from each other", async () => {
    const [one, two] = [await connect(), await connect()];
    const tpl = fresh("tpl");
    await ok(one, "create_template", { template_definition: template(tpl) });
    assert.match(textOf(await render(one, tpl)), /Hello R/);
    assert.equal((await render(two, tpl)).isError, true);
    assert.equal((await render(marcus, tpl)).isError, true, "nor seen by signed-in users");
    assert.match(textOf(await fails(two, "create_template", { template_definition: template(tpl), creation_options: { overwrite_existing: true } })), /belongs to another owner/);
    const row = await db.prepare("SELECT owner FROM template_definitions WHERE name = ?1").bind(tpl).first();
    assert.match(row.owner, /^session:[0-9a-f]{64}$/);

    const work = (await ok(one, "epic-tide-save-work", { what: `Anonymous work ${++unique}`, how: ["a"], metrics: ["b"] })).structuredContent.name;
    const p = await fails(two, "epic-tide-create-path", { what: `Anonymous path ${++unique}`, works: [work], metrics: ["m"] });
    assert.equal(p.structuredContent.error.code, "INVALID_SEQUENCE");
  });

  test("an anonymous 2026-07-28 call reads public records but owns and writes nothing", async () => {
    const MODERN = "2026-07-28";
    const meta = { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} };
    const modern = async (name, args) => {
      const res = await post(w.mcpUrl, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args, _meta: meta } }, { headers: { "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name } });
      return (await res.json()).result;
    };
    const created = await modern("create_template", { template_definition: template(fresh("tpl")) });
    assert.equal(created.isError, true);
    assert.match(textOf(created), /Cannot save a template: stored records belong to their owner, and an anonymous 2026-07-28 call has none \(no token, no session\)\. Send a bearer token, or call from a 2025 MCP session/);
    const work = await modern("epic-tide-save-work", { what: `Stateless work ${++unique}`, how: ["a"], metrics: ["b"] });
    assert.match(textOf(work), /Cannot save a work/);
    assert.match(textOf(await modern("process_template", { template_name: "client-welcome-email", variables: {}, processing_options: { validate_variables: false } })), /Welcome aboard/);
  });
});
