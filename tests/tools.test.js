// tools/list and tools/call against the production catalog, with real D1 (migrated and seeded) and
// session storage: pagination, validation errors, and the instruction tools end to end.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root, startWorker } from "./support/worker.js";
import { initialize, rpc } from "./support/mcp.js";

let w;
let session;
before(async () => {
  w = await startWorker({ TOOLS_PAGE_SIZE: "2" });
  ({ session } = await initialize(w.mcpUrl));
});
after(() => w?.stop());

const call = (name, args) => rpc(w.mcpUrl, session, "tools/call", { name, arguments: args }).then((r) => r.reply);
const instructionTools = ["get_instruction_set", "get_mode_indicator", "initialize_travel_assistant", "list_instruction_sets", "switch_mode"];
const toolsets = { create_template: "templates", process_template: "templates", create_chain: "chains", execute_chain: "chains", get_chain_status: "chains", resume_chain: "chains", cancel_chain: "chains", list_chain_executions: "chains", search_flights: "flights", list_events: "calendar", field_request: "flowmind", list_available_contexts: "flowmind", get_help: "flowmind", evaluate_semantic_condition: "flowmind", execute_workflow: "flowmind", compose_workflow: "flowmind" };
for (const t of ["save-work", "create-path", "start-tide", "update-execution", "complete-tide", "query-patterns", "get-history"]) toolsets[`epic-tide-${t}`] = "epic_tide";
const productionTools = [...instructionTools, ...Object.keys(toolsets)].sort();
// This file's session is anonymous: list_events needs the calendar-read role (travel.test.js).
const anonymousTools = productionTools.filter((t) => t !== "list_events");

async function allTools() {
  const pages = [];
  let cursor;
  do {
    const r = (await rpc(w.mcpUrl, session, "tools/list", cursor ? { cursor } : {})).reply.result;
    pages.push(r.tools);
    cursor = r.nextCursor;
  } while (cursor);
  return pages;
}

describe("tools/list", () => {
  test("capabilities claim only what is implemented", async () => {
    const { result } = await initialize(w.mcpUrl);
    assert.deepEqual(Object.keys(result.capabilities).sort(), ["logging", "resources", "tasks", "tools"]);
    assert.deepEqual(result.capabilities.resources, { listChanged: false });
    // execute_chain runs as a task; tasks/list is the conformance fixtures' (tests/chain_tasks.test.js).
    assert.deepEqual(result.capabilities.tasks, { cancel: {}, requests: { tools: { call: {} } } });
  });

  test("pages follow cursors in a stable order and list every tool exactly once", async () => {
    const pages = await allTools();
    assert.ok(pages.length >= 3, "page size 2 splits the list");
    assert.ok(pages.every((p) => p.length <= 2));
    const names = pages.flat().map((t) => t.name);
    assert.deepEqual(names, anonymousTools);
    assert.deepEqual((await allTools()).flat().map((t) => t.name), names, "same order on a second pass");
  });

  test("every tool has a description, object schemas from schema/, and truthful annotations", async () => {
    for (const t of (await allTools()).flat()) {
      assert.match(t.name, /^[A-Za-z0-9_.-]{1,64}$/);
      assert.ok(t.description.length > 20, t.name);
      assert.equal(t.inputSchema.type, "object");
      const toolset = toolsets[t.name] ?? "instructions";
      const file = join(root, "schema", toolset, `${t.name}.input.json`);
      assert.deepEqual(t.inputSchema, JSON.parse(readFileSync(file, "utf8")), `${t.name} schema comes from ${file}`);
      // Only the tools that call third-party APIs reach outside this server.
      assert.equal(t.annotations.openWorldHint, ["flights", "calendar"].includes(toolset), t.name);
      if (toolset !== "instructions") continue;
      assert.equal(t.outputSchema.type, "object");
      assert.equal(t.annotations.destructiveHint, false);
      const writes = ["switch_mode", "initialize_travel_assistant"].includes(t.name);
      assert.equal(t.annotations.readOnlyHint, !writes, t.name);
    }
  });

  test("a cursor the server did not issue is -32602", async () => {
    for (const cursor of ["bogus", "00", 7]) {
      const r = await rpc(w.mcpUrl, session, "tools/list", { cursor });
      assert.equal(r.reply.error.code, -32602, String(cursor));
    }
  });
});

describe("tools/call", () => {
  test("an unknown tool is a JSON-RPC -32602 error", async () => {
    const r = await call("no_such_tool", {});
    assert.equal(r.error.code, -32602);
    assert.match(r.error.message, /no_such_tool/);
  });

  test("arguments failing the schema give isError naming the field and the rule; nothing is written", async () => {
    await call("switch_mode", { mode: "interactive-mode" });
    for (const [args, field] of [
      [{ mode: "desktop" }, "/mode"],
      [{}, "mode"],
      [{ mode: "mobile-mode", role: "admin" }, "role"],
      [{ mode: 3 }, "/mode"],
    ]) {
      const r = await call("switch_mode", args);
      assert.equal(r.result.isError, true, JSON.stringify(args));
      assert.match(r.result.content[0].text, /Invalid arguments for tool switch_mode/);
      assert.ok(r.result.content[0].text.includes(field), `${r.result.content[0].text} names ${field}`);
    }
    const mode = await call("get_mode_indicator", {});
    assert.equal(mode.result.structuredContent.mode, "interactive-mode");
  });

  test("arguments that are not an object are an isError result", async () => {
    const r = await rpc(w.mcpUrl, session, "tools/call", { name: "get_mode_indicator", arguments: [1] });
    assert.equal(r.reply.result.isError, true);
  });

  test("results carry structuredContent and the same JSON as text", async () => {
    const r = await call("get_mode_indicator", {});
    assert.deepEqual(JSON.parse(r.result.content[0].text), r.result.structuredContent);
    assert.equal(r.result.isError, undefined);
  });
});

describe("instruction tools", () => {
  test("list_instruction_sets lists the seeded sets, filtered by category", async () => {
    const all = (await call("list_instruction_sets", {})).result.structuredContent;
    assert.equal(all.count, all.instruction_sets.length);
    const names = all.instruction_sets.map((s) => s.name);
    for (const n of ["core-travel-assistant", "mobile-mode", "interactive-mode", "corporate-validation", "policy-compliance", "vendor-search"]) {
      assert.ok(names.includes(n), n);
    }
    const compliance = (await call("list_instruction_sets", { category: "compliance" })).result.structuredContent;
    assert.deepEqual(compliance.instruction_sets.map((s) => s.name), ["corporate-validation", "policy-compliance"]);
    const bad = await call("list_instruction_sets", { category: "secret" });
    assert.equal(bad.result.isError, true);
  });

  test("get_instruction_set returns the full set; an unknown name lists the available ones", async () => {
    const set = (await call("get_instruction_set", { name: "policy-compliance" })).result.structuredContent;
    assert.equal(set.category, "compliance");
    assert.match(set.content, /policy/);
    const missing = await call("get_instruction_set", { name: "no-such-set" });
    assert.equal(missing.result.isError, true);
    assert.match(missing.result.content[0].text, /"no-such-set" does not exist.*vendor-search/);
    const injected = await call("get_instruction_set", { name: "x' OR '1'='1" });
    assert.equal(injected.result.isError, true);
    assert.match(injected.result.content[0].text, /\/name/);
  });

  test("switch_mode and get_mode_indicator keep the mode per session", async () => {
    const s1 = await call("switch_mode", { mode: "mobile-mode" });
    assert.equal(s1.result.structuredContent.mode, "mobile-mode");
    assert.equal(s1.result.structuredContent.previous_mode, "interactive-mode");
    assert.equal(s1.result.structuredContent.changed, true);
    const again = await call("switch_mode", { mode: "mobile-mode" });
    assert.equal(again.result.structuredContent.changed, false);
    const ind = (await call("get_mode_indicator", {})).result.structuredContent;
    assert.equal(ind.mode, "mobile-mode");
    assert.match(ind.indicator, /MOBILE/);
    await call("switch_mode", { mode: "interactive-mode" });
  });

  test("initialize_travel_assistant sets the mode and returns core and mode instructions", async () => {
    const r = (await call("initialize_travel_assistant", { mode: "mobile-mode", agent_name: "Kim Henderson" })).result.structuredContent;
    assert.equal(r.mode, "mobile-mode");
    assert.equal(r.core_instructions.name, "core-travel-assistant");
    assert.equal(r.mode_instructions.name, "mobile-mode");
    assert.match(r.greeting, /Kim Henderson/);
    assert.ok(r.available_instruction_sets.length >= 6);
    const keep = (await call("initialize_travel_assistant", {})).result.structuredContent;
    assert.equal(keep.mode, "mobile-mode", "omitting mode keeps the current one");
  });
});
