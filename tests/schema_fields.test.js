// Every field of the chain and template tools' input schemas, given a value of the wrong type or
// outside its enum, is refused with an error naming that field, and nothing is written. The cases
// are derived from schema/, so a field added there is covered without editing this file.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root, startWorker } from "./support/worker.js";
import { initialize, rpc } from "./support/mcp.js";

let w;
let session;
before(async () => {
  w = await startWorker({}, { quiet: true });
  ({ session } = await initialize(w.mcpUrl));
});
after(() => w?.stop());

const step = { id: 1, name: "one", type: "data_transformation", input_template: "{x}", input_variables: [], output_variables: ["y"] };
const execution_id = `exec-${"0".repeat(32)}`;
/** A valid call of each tool; each case breaks one field of it. */
const bases = {
  "templates/create_template": { template_definition: { name: "field-check", title: "Field check", content: "Hi {name}", category: "custom", variables_schema: { name: { type: "string" } }, default_values: {}, usage_examples: [{ name: "one", variables: {} }] }, creation_options: {} },
  "templates/process_template": { template_name: "client-welcome-email", variables: {}, context_data: { agent_info: {}, session_info: {} }, processing_options: {} },
  "chains/create_chain": { chain_definition: { name: "field-check", title: "Field check", category: "custom", steps: [{ ...step, retry_config: { max_retries: 1, backoff_ms: 100 }, fallback_step: { name: "fb", type: "data_transformation" }, operation: { collection: "c", action: "get" } }], input_schema: { type: "object", properties: {} }, output_schema: { type: "object", properties: {} }, configuration: {} }, creation_options: {} },
  "chains/execute_chain": { chain_name: "corporate-booking-workflow", variables: {}, execution_options: {}, context_metadata: {} },
  "chains/get_chain_status": { execution_id },
  "chains/resume_chain": { execution_id, outputs: {} },
  "chains/cancel_chain": { execution_id, reason: "r" },
};

const typeOf = (s) => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : []);
/** A value the field's schema refuses: outside its enum, or of another type. */
function wrong(s) {
  if (s.enum) return s.enum.every((v) => typeof v === "number") ? -987654 : "not-an-option";
  const t = typeOf(s);
  if (t.length === 0) return undefined;
  return t.includes("boolean") ? "yes" : true;
}

const keysOf = (pointer) => pointer.split("/").filter(Boolean);
function setAt(args, keys, value) {
  const copy = structuredClone(args);
  let o = copy;
  for (const k of keys.slice(0, -1)) o = o[k];
  o[keys.at(-1)] = value;
  return copy;
}

/** [pointer, arguments] pairs: each breaks one field, at any depth where `base` has the parent. */
function cases(schema, base, args, pointer = "") {
  const out = [];
  if (schema.properties && base && typeof base === "object" && !Array.isArray(base)) {
    for (const [k, sub] of Object.entries(schema.properties)) {
      const at = `${pointer}/${k}`;
      const bad = wrong(sub);
      if (bad !== undefined) out.push([at, setAt(args, keysOf(at), bad)]);
      if (k in base) out.push(...cases(sub, base[k], args, at));
    }
  }
  if (schema.items && Array.isArray(base) && base.length > 0) out.push(...cases(schema.items, base[0], args, `${pointer}/0`));
  return out;
}

async function counts() {
  const db = await w.mf.getD1Database("DB");
  const out = {};
  for (const t of ["template_definitions", "template_processings", "execution_chains", "chain_executions", "collection_records"]) {
    out[t] = (await db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).first()).n;
  }
  return out;
}

test("a wrong value in any field is refused, naming the field, and writes nothing", async () => {
  const before = await counts();
  let checked = 0;
  for (const [file, base] of Object.entries(bases)) {
    const tool = file.split("/")[1];
    const schema = JSON.parse(readFileSync(join(root, "schema", `${file}.input.json`), "utf8"));
    const all = cases(schema, base, base);
    assert.ok(all.length >= Object.keys(base).length, `${tool}: ${all.length} cases`);
    for (const [pointer, args] of all) {
      const r = (await rpc(w.mcpUrl, session, "tools/call", { name: tool, arguments: args })).reply.result;
      const text = r.content.map((c) => c.text).join("\n");
      assert.equal(r.isError, true, `${tool} ${pointer}: ${text}`);
      assert.match(text, new RegExp(`^Invalid arguments for tool ${tool}`), `${tool} ${pointer}`);
      assert.ok(text.includes(pointer), `${tool} ${pointer}: ${text}`);
      checked++;
    }
  }
  assert.ok(checked > 100, `${checked} fields checked`);
  assert.deepEqual(await counts(), before);
});
