// external_api and database_operation chain steps against the built Worker with real D1: tool calls
// through the executor, records in named collections, journaled rollback (including a record that
// changed under the chain), and definitions create_chain refuses.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { initialize, post, rpc, sseEvents, waitForMessage } from "./support/mcp.js";

let w;
let session;
before(async () => {
  w = await startWorker({}, { quiet: true });
  ({ session } = await initialize(w.mcpUrl));
});
after(() => w?.stop());

const call = async (name, args, s = session) => (await rpc(w.mcpUrl, s, "tools/call", { name, arguments: args })).reply.result;
// Public: a second session of this file runs one of them, and chains have owners.
const create = (chain_definition) => call("create_chain", { chain_definition, creation_options: { visibility: "public" } });
const execute = (chain_name, variables = {}) => call("execute_chain", { chain_name, variables });
const textOf = (r) => r.content[0].text;
const chain = (name, steps) => ({ name, title: "A chain steps test", category: "custom", steps });
const step = (id, name, type, extra = {}) => ({ id, name, type, input_variables: [], output_variables: [], ...extra });
const db = () => w.mf.getD1Database("DB");
const record = async (collection, id) => {
  const row = await (await db()).prepare("SELECT data FROM collection_records WHERE collection = ?1 AND id = ?2").bind(collection, id).first();
  return row && JSON.parse(row.data);
};
/** Stores a record as this file's session's own (records have owners: `session:<id>` when anonymous). */
const put = async (collection, id, data) =>
  (await db()).prepare("INSERT INTO collection_records (collection, id, data, owner) VALUES (?1, ?2, ?3, ?4)").bind(collection, id, JSON.stringify(data), `session:${session}`).run();
const executionId = (r) => textOf(r).match(/\*\*Execution ID:\*\* (exec-[0-9a-f]{32})/)[1];
const journalRows = async (id) =>
  (await (await db()).prepare("SELECT COUNT(*) AS n FROM record_changes WHERE execution_id = ?1").bind(id).first()).n;
const status = async (id, s = session) => (await call("get_chain_status", { execution_id: id }, s)).structuredContent;

// In input templates `{{` and `}}` are literal braces, so a JSON object is written {{ … }}.
const approval = '{{"template_name": "corporate-approval-request", "variables": {{"traveler_name": {name|json}, "destination": "Berlin", "travel_dates": "2025-10-06", "total_cost": 900, "business_justification": "Workshop"}}}}';

test("records are created, updated and read, and external_api calls a tool of this server", async () => {
  const r = await create(chain("lead-intake", [
    step(1, "save_lead", "database_operation", { operation: { collection: "leads", action: "create" }, input_template: '{{"id": {lead_id|json}, "name": {name|json}, "status": "new"}}', output_variables: ["lead"] }),
    step(2, "qualify", "database_operation", { operation: { collection: "leads", action: "update" }, input_template: '{{"id": {lead.id|json}, "status": "qualified", "score": 80}}', output_variables: ["qualified"] }),
    step(3, "approval_text", "external_api", { tool: "process_template", input_template: approval, output_variables: ["approval"] }),
    step(4, "read_back", "database_operation", { operation: { collection: "leads", action: "get" }, input_template: '{{"id": {qualified.id|json}}}', output_variables: ["stored"] }),
    step(5, "note", "database_operation", { operation: { collection: "lead-notes", action: "create" }, input_template: '{{"lead": {lead.id|json}, "text": "welcome sent"}}', output_variables: ["note"], depends_on: [3] }),
    step(6, "by_id", "external_api", { tool: "instructions::get-instruction-set", input_template: '{{"name": "mobile-mode"}}', output_variables: ["set"] }),
  ]));
  assert.equal(r.isError, undefined, textOf(r));
  const out = await execute("lead-intake", { lead_id: "lead-1", name: "Dana Lee" });
  assert.equal(out.isError, undefined, textOf(out));
  assert.match(textOf(out), /- Steps Completed: 6\/6/);
  assert.deepEqual(await record("leads", "lead-1"), { name: "Dana Lee", status: "qualified", score: 80 });

  const id = executionId(out);
  const steps = Object.fromEntries((await status(id)).steps.map((s) => [s.name, s.outputs]));
  assert.deepEqual(steps.save_lead.lead, { id: "lead-1", name: "Dana Lee", status: "new" });
  assert.deepEqual(steps.qualify.qualified, { id: "lead-1", name: "Dana Lee", status: "qualified", score: 80 });
  assert.deepEqual(steps.read_back.stored, steps.qualify.qualified);
  // process_template answers with structuredContent now (issue 21 item 3), and a tool's
  // structuredContent is the step's output: the rendered text is its `text`.
  assert.match(steps.approval_text.approval.text, /^Subject: Approval needed: Dana Lee to Berlin/);
  assert.equal(steps.by_id.set.name, "mobile-mode", "structuredContent is the output");
  const note = steps.note.note;
  assert.match(note.id, /^rec-[0-9a-f]{32}$/, "a create without id gets a generated one");
  assert.deepEqual(await record("lead-notes", note.id), { lead: "lead-1", text: "welcome sent" });
  assert.equal(await journalRows(id), 0, "the journal is cleared when the run ends");

  // The same lead again: create refuses an existing id, and nothing else changes.
  const again = await execute("lead-intake", { lead_id: "lead-1", name: "Someone Else" });
  assert.equal(again.isError, true);
  assert.match(textOf(again), /- Failed Step: save_lead[\s\S]*record "lead-1" already exists in collection "leads"; use action update/);
  assert.deepEqual(await record("leads", "lead-1"), { name: "Dana Lee", status: "qualified", score: 80 });
});

test("a failing later step rolls back creates, updates and deletes, then runs rollback_action tools", async () => {
  await put("accounts", "acct-keep", { status: "original", tier: 1 });
  await put("accounts", "acct-gone", { status: "closing" });
  const r = await create(chain("account-rollback", [
    step(1, "open", "database_operation", { operation: { collection: "accounts", action: "create" }, input_template: '{{"id": "acct-new", "status": "open"}}', output_variables: ["opened"],
      rollback_action: 'process_template {{"template_name": {opened.id|json}, "variables": {{}}}}' }),
    step(2, "touch", "database_operation", { operation: { collection: "accounts", action: "update" }, input_template: '{{"id": "acct-keep", "status": "changed"}}', output_variables: ["touched"],
      rollback_action: 'get_instruction_set {{"name": {set_name|json}}}' }),
    step(3, "close", "database_operation", { operation: { collection: "accounts", action: "delete" }, input_template: '{{"id": "acct-gone"}}', output_variables: ["closed"] }),
    step(4, "notify", "external_api", { tool: "process_template", input_template: '{{"template_name": "no-such-template", "variables": {{}}}}', output_variables: ["mail"] }),
  ]));
  assert.equal(r.isError, undefined, textOf(r));
  const out = await execute("account-rollback", { set_name: "mobile-mode" });
  assert.equal(out.isError, true);
  const t = textOf(out);
  assert.match(t, /- Failed Step: notify\n- Error: step 'notify': tool process_template failed: Template 'no-such-template' not found/);
  assert.match(t, /\*\*Rollback:\*\*\n- step 3: rolled_back\n- step 2: rolled_back\n- step 1: rollback_failed \(step 'open': rollback_action tool process_template failed: Template 'acct-new' not found/);

  // The journal was undone before each rollback_action ran, even where that tool failed.
  assert.equal(await record("accounts", "acct-new"), null);
  assert.deepEqual(await record("accounts", "acct-keep"), { status: "original", tier: 1 });
  assert.deepEqual(await record("accounts", "acct-gone"), { status: "closing" });
  const id = executionId(out);
  assert.equal(await journalRows(id), 0);
  const s = await status(id);
  assert.equal(s.status, "failed");
  assert.deepEqual(s.rollbacks.map((x) => [x.id, x.outcome]), [[3, "rolled_back"], [2, "rolled_back"], [1, "rollback_failed"]]);
});

test("rollback does not overwrite a record that changed since the step wrote it", async () => {
  const { session: sampler } = await initialize(w.mcpUrl, { capabilities: { sampling: {} } });
  // One attempt: a model answer that is not JSON is transient, and retried automatically otherwise.
  const r = await create({ ...chain("conflict-flow", [
    step(1, "save", "database_operation", { operation: { collection: "leads", action: "create" }, input_template: '{{"id": "lead-cf", "status": "new"}}', output_variables: ["lead"] }),
    step(2, "validate", "instruction_set", { instruction_set: "corporate-validation", input_template: "Check {lead.id}", output_variables: ["validation_status"] }),
  ]), configuration: { auto_retry_transient_failures: false } });
  assert.equal(r.isError, undefined, textOf(r));
  const res = await post(w.mcpUrl, { jsonrpc: "2.0", id: "conflict", method: "tools/call", params: { name: "execute_chain", arguments: { chain_name: "conflict-flow", variables: {} } } }, { session: sampler });
  const it = sseEvents(res, { timeoutMs: 15_000 });
  // Step 2 waits for the model: meanwhile someone else edits the record step 1 created.
  const request = await waitForMessage(it, (m) => m.method === "sampling/createMessage");
  assert.ok(request, "step 2 asked the client's model");
  assert.deepEqual(await record("leads", "lead-cf"), { status: "new" });
  await (await db()).prepare("UPDATE collection_records SET data = ?1 WHERE collection = 'leads' AND id = 'lead-cf'").bind('{"status":"edited"}').run();
  await post(w.mcpUrl, { jsonrpc: "2.0", id: request.id, result: { role: "assistant", model: "m", content: { type: "text", text: "no JSON here" } } }, { session: sampler });
  const reply = await waitForMessage(it, (m) => m.id === "conflict");
  it.close();
  const t = textOf(reply.result);
  assert.equal(reply.result.isError, true);
  assert.match(t, /- Failed Step: validate/);
  assert.match(t, /- step 1: rollback_failed \(record "lead-cf" in collection "leads" changed since step 1 'save' wrote it; not overwritten\)/);
  assert.deepEqual(await record("leads", "lead-cf"), { status: "edited" }, "the other writer's data is kept");
});

test("step inputs that are not what the operation needs fail the step with the reason", async () => {
  const r = await create(chain("bad-inputs", [
    step(1, "missing", "database_operation", { operation: { collection: "leads", action: "update" }, input_template: '{{"id": "no-such-lead", "status": "x"}}', output_variables: ["lead"], on_failure: "warn" }),
    step(2, "no-id", "database_operation", { operation: { collection: "leads", action: "get" }, output_variables: ["lead2"], on_failure: "warn" }),
    step(3, "not-json", "external_api", { tool: "process_template", input_template: "template_name: x", output_variables: ["y"], on_failure: "warn" }),
    step(4, "bad-args", "external_api", { tool: "process_template", input_template: '{{"template": 1}}', output_variables: ["z"], on_failure: "warn" }),
  ]));
  assert.equal(r.isError, undefined, textOf(r));
  const out = await execute("bad-inputs");
  assert.equal(out.isError, undefined, textOf(out));
  const t = textOf(out);
  assert.match(t, /- missing \(warned\): step 'missing': record "no-such-lead" not found in collection "leads"; create it first/);
  assert.match(t, /- no-id \(warned\): step 'no-id': get needs the record's "id" in the input_template object/);
  assert.match(t, /- not-json \(warned\): step 'not-json': the tool arguments \(input_template\) must be a JSON object \(write literal braces as \{\{ and \}\} in the template\)/);
  assert.match(t, /- bad-args \(warned\): step 'bad-args': tool process_template failed: Invalid arguments for tool process_template/);
});

test("create_chain refuses bad tool and record steps with the reason, and writes nothing", async () => {
  const cases = [
    ["no-tool", [step(1, "call", "external_api")], /step 1 'call' is an external_api step but names no tool/],
    ["unknown-tool", [step(1, "call", "external_api", { tool: "send_fax" })], /step 1 'call': tool "send_fax" does not exist on this server; tools\/list shows the tools/],
    ["chain-tool", [step(1, "call", "external_api", { tool: "execute_chain" })], /tool "execute_chain" belongs to the chains toolset/],
    ["chain-tool-id", [step(1, "call", "external_api", { tool: "chains::get-chain-status" })], /tool "chains::get-chain-status" belongs to the chains toolset/],
    ["no-operation", [step(1, "save", "database_operation")], /step 1 'save' is a database_operation step but has no operation/],
    ["bad-collection", [step(1, "save", "database_operation", { operation: { collection: "Leads!", action: "create" } })], /\/chain_definition\/steps\/0\/operation\/collection/],
    ["bad-action", [step(1, "save", "database_operation", { operation: { collection: "leads", action: "upsert" } })], /\/chain_definition\/steps\/0\/operation\/action/],
    ["raw-sql", [step(1, "save", "database_operation", { operation: { collection: "leads", action: "get", sql: "DROP TABLE leads" } })], /sql/],
    ["bad-rollback", [step(1, "aaa", "data_transformation", { rollback_action: "discard" })], /step 1 'aaa': rollback_action tool "discard" does not exist/],
    ["chain-rollback", [step(1, "aaa", "data_transformation", { rollback_action: 'create_chain {{"x": 1}}' })], /rollback_action tool "create_chain" belongs to the chains toolset/],
    ["bad-rollback-args", [step(1, "aaa", "data_transformation", { rollback_action: "get_instruction_set {{\"name\": {x +}}}" })], /step 1 'aaa': rollback_action arguments template line 1/],
  ];
  for (const [name, steps, expected] of cases) {
    const r = await create(chain(name, steps));
    assert.equal(r.isError, true, name);
    assert.match(textOf(r), expected, name);
    const row = await (await db()).prepare("SELECT name FROM execution_chains WHERE name = ?1").bind(name).first();
    assert.equal(row, null, `${name} was not written`);
  }
});
