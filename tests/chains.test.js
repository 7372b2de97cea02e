// create_chain through MCP against the built Worker with real D1: the seed's chain is stored, new
// chains are checked (structure, dependencies, cycles, references) and refused without writing.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root, startWorker } from "./support/worker.js";
import { initialize, rpc } from "./support/mcp.js";

let w;
let session;
before(async () => {
  w = await startWorker();
  ({ session } = await initialize(w.mcpUrl));
});
after(() => w?.stop());

const create = async (chain_definition, creation_options) =>
  (await rpc(w.mcpUrl, session, "tools/call", { name: "create_chain", arguments: { chain_definition, ...(creation_options ? { creation_options } : {}) } })).reply.result;
const textOf = (r) => r.content[0].text;
const seed = () => JSON.parse(readFileSync(join(root, "src", "engine", "testdata", "corporate-booking-workflow.json"), "utf8"));
const stored = async (name) => (await w.mf.getD1Database("DB")).prepare("SELECT name, revision, is_active FROM execution_chains WHERE name = ?1").bind(name).first();

test("the seed's corporate chain ships in D1", async () => {
  assert.deepEqual(await stored("corporate-booking-workflow"), { name: "corporate-booking-workflow", revision: 1, is_active: 1 });
});

test("a valid chain is created, refused as a duplicate, and overwritten with a new revision", async () => {
  const def = { ...seed(), name: "corporate-copy" };
  const r = await create(def);
  assert.equal(r.isError, undefined, textOf(r));
  const t = textOf(r);
  assert.match(t, /^Chain 'corporate-copy' created successfully\./);
  assert.match(t, /- Steps: 5/);
  assert.match(t, /2\. check_travel_policy_compliance \(instruction_set\) - conditional/);
  assert.match(t, /3\. search_preferred_vendors \(instruction_set\) - parallel/);
  assert.match(t, /- Max Execution Time: 180000ms/);
  const dup = await create(def);
  assert.equal(dup.isError, true);
  assert.match(textOf(dup), /already exists\. Use creation_options\.overwrite_existing: true/);
  const again = await create(def, { overwrite_existing: true, set_active: false });
  assert.match(textOf(again), /updated successfully[\s\S]*- Status: Inactive/);
  assert.deepEqual(await stored("corporate-copy"), { name: "corporate-copy", revision: 2, is_active: 0 });
});

test("bad chains are refused with every reason, and nothing is written", async () => {
  const step = (id, name, extra = {}) => ({ id, name, type: "data_transformation", input_variables: [], output_variables: [], ...extra });
  const cases = [
    ["cycle-chain", [step(1, "aaa", { depends_on: [2] }), step(2, "bbb", { depends_on: [1] })], /steps form a cycle: (1 'aaa' → 2 'bbb' → 1 'aaa'|2 'bbb' → 1 'aaa' → 2 'bbb')/],
    ["dup-chain", [step(1, "aaa"), step(1, "aaa")], /step ids must be unique: 1[\s\S]*step names must be unique: 'aaa'/],
    ["missing-dep", [step(1, "aaa", { depends_on: [7] })], /step 1 'aaa' depends on step 7, which does not exist/],
    ["bad-cond", [step(1, "aaa", { conditional_execution: "{x} ==" })], /step 1 'aaa': conditional_execution line 1, column 7/],
    ["no-set", [step(1, "aaa", { type: "instruction_set" })], /names no instruction_set/],
    ["ghost-refs", [step(1, "aaa", { type: "instruction_set", instruction_set: "no-such-set" }), step(2, "bbb", { type: "template_processing", template_id: "no-such-template" })],
      /Reference validation failed: instruction sets not found: no-such-set[\s\S]*active templates not found: no-such-template/],
    ["too-many", Array.from({ length: 21 }, (_, i) => step(i + 1, `step${i + 1}`)), /\/chain_definition\/steps/],
    ["bad-step-field", [step(1, "aaa", { colour: "red" })], /colour/],
  ];
  for (const [name, steps, expected] of cases) {
    const r = await create({ name, title: "A test chain", category: "custom", steps });
    assert.equal(r.isError, true, name);
    assert.match(textOf(r), expected, name);
    assert.equal(await stored(name), null, `${name} was not written`);
  }
  const schema = await create({ name: "bad-schema", title: "A test chain", category: "custom", steps: [step(1, "aaa")],
    input_schema: { type: "object", properties: { a: { type: "integer" } }, required: ["zz"] } });
  assert.match(textOf(schema), /input_schema\.required names "zz"/);
});

test("validate_references: false stores a chain whose references do not exist yet", async () => {
  const r = await create(
    { name: "later-refs", title: "A test chain", category: "custom", steps: [{ id: 1, name: "aaa", type: "template_processing", template_id: "to-be-written", input_variables: [], output_variables: ["x"] }] },
    { validate_references: false },
  );
  assert.equal(r.isError, undefined, textOf(r));
  assert.equal((await stored("later-refs")).name, "later-refs");
});

describe("execute_chain", () => {
  const step = (id, name, extra = {}) => ({ id, name, type: "data_transformation", input_variables: [], output_variables: [], ...extra });
  const run = async (chain_name, variables, extra = {}) =>
    rpc(w.mcpUrl, session, "tools/call", { name: "execute_chain", arguments: { chain_name, variables, ...extra }, _meta: { progressToken: "chain" } });

  test("runs template and transformation steps in order, reports progress, and records the execution", async () => {
    const r = await create({
      name: "approval-flow", title: "Approval flow test", category: "custom",
      steps: [
        step(1, "approval", { type: "template_processing", template_id: "corporate-approval-request", output_variables: ["approval_text"] }),
        step(2, "headline", { input_template: "{traveler_name|upper}: {approval_text.length > 0 ? 'ready' : 'empty'}", output_variables: ["headline"] }),
      ],
    });
    assert.equal(r.isError, undefined, textOf(r));
    const out = await run("approval-flow", { traveler_name: "Dana Lee", destination: "Berlin", travel_dates: "2025-10-06 to 2025-10-08", total_cost: 2150, business_justification: "Client workshop" });
    const result = out.reply.result;
    assert.equal(result.isError, undefined, textOf(result));
    assert.match(textOf(result), /^Chain execution completed successfully\.[\s\S]*- Steps Completed: 2\/2[\s\S]*- headline: DANA LEE: ready/);
    assert.match(textOf(result), /- approval_text: Subject: Approval needed: Dana Lee to Berlin/);
    const progress = out.messages.filter((m) => m.method === "notifications/progress").map((m) => [m.params.progress, m.params.total, m.params.message]);
    assert.deepEqual(progress, [[1, 2, "approval: done"], [2, 2, "headline: done"]]);
    const id = textOf(result).match(/\*\*Execution ID:\*\* (exec-[0-9a-f]{32})/)[1];
    const db = await w.mf.getD1Database("DB");
    const row = await db.prepare("SELECT status, owner, report FROM chain_executions WHERE id = ?1").bind(id).first();
    assert.equal(row.status, "completed");
    assert.equal(row.owner, session, "the record is bound to the calling session");
    assert.equal(JSON.parse(row.report).steps[1].outputs.headline, "DANA LEE: ready");

    const status = (await rpc(w.mcpUrl, session, "tools/call", { name: "get_chain_status", arguments: { execution_id: id } })).reply.result.structuredContent;
    assert.equal(status.status, "completed");
    assert.equal(status.chain, "approval-flow");
    assert.deepEqual(status.steps.map((s) => [s.name, s.state, s.attempts]), [["approval", "done", 1], ["headline", "done", 1]]);
    assert.equal(status.steps_finished, 2);
    const other = await initialize(w.mcpUrl);
    const foreign = (await rpc(w.mcpUrl, other.session, "tools/call", { name: "get_chain_status", arguments: { execution_id: id } })).reply.result;
    assert.equal(foreign.isError, true);
    assert.match(textOf(foreign), /not found in this session/);
    const bad = (await rpc(w.mcpUrl, session, "tools/call", { name: "get_chain_status", arguments: { execution_id: "exec-1" } })).reply.result;
    assert.match(textOf(bad), /\/execution_id/);
  });

  test("a failing step fails the chain and rolls back completed steps", async () => {
    await create({
      name: "failing-flow", title: "Failing flow test", category: "custom",
      steps: [
        step(1, "prepare", { input_template: "ok", output_variables: ["prepared"], rollback_action: 'get_instruction_set {{"name": "mobile-mode"}}' }),
        step(2, "call_api", { type: "external_api", tool: "process_template", input_template: '{{"template_name": "no-such-template", "variables": {{}}}}', depends_on: [1] }),
      ],
    });
    const result = (await run("failing-flow", {})).reply.result;
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^Chain execution failed\.[\s\S]*- Failed Step: call_api[\s\S]*Template 'no-such-template' not found[\s\S]*\*\*Rollback:\*\*\n- step 1: rolled_back[\s\S]*\*\*Partial Results:\*\*\n- prepared: ok/);
  });

  test("input variables are validated against the chain's input_schema", async () => {
    const result = (await run("corporate-booking-workflow", { traveler_name: "Dana Lee" })).reply.result;
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^Error executing chain: Variable validation failed: /);
    assert.match(textOf(result), /\*\*Troubleshooting:\*\*\n- Verify chain name exists and is active/);
    for (const field of ["company_name", "cost_center", "trip_requirements", "budget_approval"]) assert.match(textOf(result), new RegExp(`${field} is required`));
    assert.doesNotMatch(textOf(result), /traveler_name is required/);
  });

  test("without a model, an untracked run cannot pause, so its instruction step fails with the reason", async () => {
    const vars = { company_name: "Acme", traveler_name: "Dana Lee", cost_center: "CC-1", trip_requirements: { city: "Berlin" }, budget_approval: 3000 };
    const result = (await run("corporate-booking-workflow", vars, { execution_options: { track_progress: false } })).reply.result;
    assert.equal(result.isError, true);
    assert.match(textOf(result), /validate_corporate_credentials[\s\S]*the client did not declare MCP sampling, no MODEL_PROVIDER_URL is configured, and a run with track_progress: false cannot pause/);
    const tracked = (await run("corporate-booking-workflow", vars)).reply.result;
    assert.equal(tracked.isError, undefined, textOf(tracked));
    assert.match(textOf(tracked), /^Chain execution paused: a step needs input\.[\s\S]*\*\*Step 'validate_corporate_credentials' waits for:\*\* validation_status/);
  });

  test("unknown chains list the available ones; background runs need a record", async () => {
    const unknown = (await run("no-such-chain", {})).reply.result;
    assert.match(textOf(unknown), /Chain 'no-such-chain' not found\. Available chains: .*corporate-booking-workflow \(booking-management\)/);
    const untracked = (await run("approval-flow", {}, { execution_options: { async_execution: true, track_progress: false } })).reply.result;
    assert.equal(untracked.isError, true);
    assert.match(textOf(untracked), /async_execution needs track_progress: true/);
  });
});

test("every shipped chain passes create_chain's own checks", async () => {
  const db = await w.mf.getD1Database("DB");
  const { results } = await db.prepare("SELECT name, definition FROM execution_chains WHERE name IN ('corporate-booking-workflow', 'mobile-lead-processing', 'client-followup-sequence')").all();
  assert.equal(results.length, 3);
  for (const { name, definition } of results) {
    const r = await create({ ...JSON.parse(definition), name: `${name}-check`.slice(0, 50) });
    assert.equal(r.isError, undefined, `${name}: ${textOf(r)}`);
  }
});
