// create_chain through MCP against the built Worker with real D1: the seed's chain is stored, new
// chains are checked (structure, dependencies, cycles, references) and refused without writing.
import { after, before, test } from "node:test";
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
