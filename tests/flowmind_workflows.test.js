// FlowMind's execute_workflow through the official MCP SDK client against the built Worker: a
// workflow context's steps run as a chain execution of the session in its three modes (interactive
// pauses for step outputs, autonomous asks the client's model through MCP sampling, step_confirm
// pauses for approval before each step), continued with session_id; constraints, confidence
// overrides, the per-session limit of open workflows, the 20-a-minute rate limit and every refusal.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startWorker } from "./support/worker.js";

let w;
const clients = [];

async function connect({ worker = w, sampling } = {}) {
  const c = new Client({ name: "flowmind-workflows-test", version: "1.0.0" }, { capabilities: sampling ? { sampling: {} } : {} });
  if (sampling) c.setRequestHandler(CreateMessageRequestSchema, sampling);
  await c.connect(new StreamableHTTPClientTransport(new URL(worker.mcpUrl)));
  clients.push(c);
  return c;
}

before(async () => {
  w = await startWorker({ RATE_LIMITS: "*=off" });
});
after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await w?.stop();
});

/** Calls execute_workflow and returns its structured answer after the checks every answer passes. */
async function run(c, args) {
  const r = await c.callTool({ name: "execute_workflow", arguments: args });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  const s = r.structuredContent;
  assert.equal(typeof s.success, "boolean");
  for (const k of ["tip", "pattern", "confidence_calibration"]) assert.equal(typeof s.teaching[k], "string", `teaching.${k}`);
  for (const a of s.next_actions) assert.ok(typeof a.tool === "string" && typeof a.reason === "string" && a.parameters, JSON.stringify(a));
  assert.equal(typeof s._performance.total_time_ms, "number");
  if (!s.success) {
    for (const k of ["code", "message"]) assert.equal(typeof s.error[k], "string");
    assert.ok(s.error.fix.instruction && s.error.fix.example && s.error.fix.why, JSON.stringify(s.error));
  }
  return s;
}

/** A tool error (isError) and its text. */
async function failing(c, name, args) {
  const r = await c.callTool({ name, arguments: args });
  assert.equal(r.isError, true, JSON.stringify(r));
  return r.content.map((x) => x.text).join("\n");
}

const review = { workflow_uri: "workflow://code-review", initial_variables: { technology: "Rust", code_reference: "PR 42 (src/lib.rs)" } };

/** A sampling handler answering every requested key, recording the prompts. */
function model(prompts, { delayMs = 0 } = {}) {
  return async (req) => {
    prompts.push({ system: req.params.systemPrompt, text: req.params.messages[0].content.text });
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    const keys = req.params.systemPrompt.match(/Its keys: (.*)\.$/)[1].split(", ");
    return { role: "assistant", model: "test-model", content: { type: "text", text: JSON.stringify(Object.fromEntries(keys.map((k) => [k, `${k} by model`]))) } };
  };
}

describe("interactive mode", () => {
  test("pauses at each step for its outputs, continues with session_id and step_outputs, and completes", async () => {
    const c = await connect();
    let s = await run(c, review);
    assert.equal(s.success, true);
    const id = s.result.session_id;
    assert.match(id, /^exec-[0-9a-f]+$/);
    assert.equal(s.result.execution_id, id);
    assert.equal(s.result.execution_mode, "interactive");
    assert.equal(s.result.status, "awaiting_input");
    assert.equal(s.result.steps_total, 3);
    assert.equal(s.result.awaiting.kind, "input");
    assert.equal(s.result.awaiting.step, "understand-change");
    assert.deepEqual(s.result.awaiting.supply, ["change_summary"]);
    assert.equal(s.result.awaiting.input, "Summarise what the change in PR 42 (src/lib.rs) does and which parts of the Rust code base it touches.");
    assert.match(s.result.awaiting.instructions, /one step of a multi-step workflow/);
    assert.deepEqual(s.next_actions[0], {
      tool: "execute_workflow",
      reason: "Supply the outputs of step 'understand-change' and continue",
      parameters: { workflow_uri: "workflow://code-review", session_id: id, step_outputs: { change_summary: "<change_summary>" } },
    });

    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { change_summary: "adds a cache" } });
    assert.equal(s.result.awaiting.step, "review");
    assert.equal(s.result.steps_finished, 1);
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { review_comments: ["nit: naming"] } });
    assert.equal(s.result.awaiting.step, "prioritise");
    assert.match(s.result.awaiting.input, /Sort \["nit: naming"\]|Sort nit: naming/);
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { review_summary: "fine", merge_recommendation: "merge" } });
    assert.equal(s.success, true);
    assert.equal(s.result.status, "completed");
    assert.equal(s.result.awaiting, undefined);
    assert.deepEqual(s.result.outputs, { change_summary: "adds a cache", review_comments: ["nit: naming"], review_summary: "fine", merge_recommendation: "merge" });
    assert.deepEqual(s.result.steps.map((x) => [x.name, x.state]), [["understand-change", "done"], ["review", "done"], ["prioritise", "done"]]);

    // The run is an ordinary chain execution of this session.
    const status = (await c.callTool({ name: "get_chain_status", arguments: { execution_id: id } })).structuredContent;
    assert.equal(status.status, "completed");
    assert.equal(status.chain, "wf-code-review");

    // session_id alone shows the state; supplying to a finished run is refused.
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id });
    assert.equal(s.result.status, "completed");
    assert.match(await failing(c, "execute_workflow", { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { x: 1 } }), /is completed, not paused/);
  });

  test("missing required variables are refused with the questions to ask and the call that fixes it; nothing starts", async () => {
    const c = await connect();
    const s = await run(c, { workflow_uri: "workflow://code-review", initial_variables: { technology: "Rust", code_reference: "  " } });
    assert.equal(s.success, false);
    assert.equal(s.error.code, "MISSING_VARIABLES");
    assert.match(s.error.message, /lacks code_reference/);
    assert.match(s.error.fix.instruction, /What is the code reference\?/);
    assert.equal(s.next_actions[0].tool, "execute_workflow");
    assert.deepEqual(Object.keys(s.next_actions[0].parameters.initial_variables).sort(), ["code_reference", "technology"]);
    assert.equal(s.partial_results.blocked_by, "MISSING_VARIABLES");
  });

  test("wrong step_outputs are rejected and the run stays paused", async () => {
    const c = await connect();
    const s = await run(c, review);
    const id = s.result.session_id;
    assert.match(await failing(c, "execute_workflow", { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { wrong: 1 } }), /Outputs rejected/);
    assert.match(await failing(c, "execute_workflow", { workflow_uri: review.workflow_uri, session_id: id, approval: "approve" }), /waits for the outputs of step 'understand-change'/);
    const again = await run(c, { workflow_uri: review.workflow_uri, session_id: id });
    assert.equal(again.result.status, "awaiting_input");
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: id } });
  });
});

describe("session_id", () => {
  test("is bound to the MCP session that started the run and to its workflow", async () => {
    const a = await connect();
    const b = await connect();
    const id = (await run(a, review)).result.session_id;
    assert.match(await failing(b, "execute_workflow", { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { change_summary: "x" } }), /not found in this session/);
    assert.match(await failing(a, "execute_workflow", { workflow_uri: "workflow://api-design", session_id: id }), /is not a run of workflow:\/\/api-design/);
    await a.callTool({ name: "cancel_chain", arguments: { execution_id: id } });
  });
});

describe("autonomous mode", () => {
  test("runs every step through the client's model (MCP sampling) to completion without pausing", async () => {
    const prompts = [];
    const c = await connect({ sampling: model(prompts) });
    const s = await run(c, { ...review, execution_mode: "autonomous" });
    assert.equal(s.success, true, JSON.stringify(s));
    assert.equal(s.result.status, "completed");
    assert.equal(s.result.execution_mode, "autonomous");
    assert.equal(prompts.length, 3);
    assert.match(prompts[0].text, /PR 42 \(src\/lib\.rs\).*Rust/);
    assert.match(prompts[2].text, /^Sort review_comments by model into blocking/);
    assert.equal(s.result.outputs.merge_recommendation, "merge_recommendation by model");
  });

  test("is refused up front when no model can answer the steps", async () => {
    const c = await connect();
    const s = await run(c, { ...review, execution_mode: "autonomous" });
    assert.equal(s.success, false);
    assert.equal(s.error.code, "AUTONOMOUS_UNAVAILABLE");
    assert.match(s.error.message, /did not declare MCP sampling.*MODEL_PROVIDER_URL/);
    assert.equal(s.next_actions[0].parameters.execution_mode, "interactive");
  });

  test("confidence_override below the workflow's confidence_required is refused", async () => {
    const c = await connect({ sampling: model([]) });
    let s = await run(c, { ...review, execution_mode: "autonomous", confidence_override: { min_confidence: 0.4 } });
    assert.equal(s.error.code, "CONFIDENCE_TOO_LOW");
    assert.match(s.error.message, /needs confidence 0.6.*min_confidence 0.4/);
    s = await run(c, { ...review, execution_mode: "autonomous", confidence_override: { require_confirmation_below: 0.9 } });
    assert.equal(s.error.code, "CONFIDENCE_TOO_LOW");
    s = await run(c, { ...review, execution_mode: "autonomous", confidence_override: { min_confidence: 0.7, require_confirmation_below: 0.5 } });
    assert.equal(s.result.status, "completed");
  });

  test("max_duration_ms is the run's deadline: no step starts after it", async () => {
    const prompts = [];
    const c = await connect({ sampling: model(prompts, { delayMs: 1500 }) });
    const s = await run(c, { ...review, execution_mode: "autonomous", constraints: { max_duration_ms: 1000 } });
    assert.equal(s.success, false);
    assert.equal(s.result.status, "timed_out");
    assert.equal(s.error.code, "WORKFLOW_TIMED_OUT");
    assert.equal(prompts.length, 1);
    assert.equal(s.result.outputs.change_summary, "change_summary by model");
  });
});

describe("step_confirm mode", () => {
  test("pauses for approval before each step; approve runs it, reject stops the workflow", async () => {
    const c = await connect();
    let s = await run(c, { ...review, execution_mode: "step_confirm" });
    const id = s.result.session_id;
    assert.equal(s.result.execution_mode, "step_confirm");
    assert.deepEqual(s.result.awaiting, { kind: "confirmation", step: "understand-change", preview: "Step 1 of 3 of workflow://code-review: 'understand-change'.\n\nSummarise what the change in PR 42 (src/lib.rs) does and which parts of the Rust code base it touches." });
    assert.deepEqual(s.next_actions.map((a) => a.parameters.approval), ["approve", "reject"]);
    assert.match(await failing(c, "execute_workflow", { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { change_summary: "x" } }), /waits for approval of step 'understand-change'/);

    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, approval: "approve" });
    assert.equal(s.result.awaiting.kind, "input");
    assert.equal(s.result.awaiting.step, "understand-change");
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { change_summary: "adds a cache" } });
    assert.equal(s.result.awaiting.kind, "confirmation");
    assert.equal(s.result.awaiting.step, "review");
    assert.equal(s.result.execution_mode, "step_confirm");

    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, approval: "reject" });
    assert.equal(s.success, false);
    assert.equal(s.result.status, "cancelled");
    assert.match(s.error.message, /step 'review' was rejected/);
    assert.deepEqual(s.result.outputs, { change_summary: "adds a cache" });
  });

  test("with a model, confirmations go to the client too and the run completes once each is approved", async () => {
    const prompts = [];
    const answer = model(prompts);
    const c = await connect({
      sampling: async (req) => (/Answer "approved"/.test(req.params.systemPrompt) ? (prompts.push({ approval: true }), { role: "assistant", model: "m", content: { type: "text", text: '{"approval_1":"approved","approval_2":"approved","approval_3":"approved"}' } }) : answer(req)),
    });
    const s = await run(c, { ...review, execution_mode: "step_confirm" });
    assert.equal(s.result.status, "completed", JSON.stringify(s.result));
    assert.equal(prompts.filter((p) => p.approval).length, 3);
  });
});

describe("constraints and refusals", () => {
  test("a workflow with more steps than max_steps is refused, with the calls that fit", async () => {
    const c = await connect();
    const s = await run(c, { ...review, constraints: { max_steps: 2 } });
    assert.equal(s.error.code, "MAX_STEPS_EXCEEDED");
    assert.match(s.error.message, /has 3 steps; constraints.max_steps allows 2/);
    assert.equal(s.next_actions[0].parameters.constraints.max_steps, 3);
    assert.equal(s.next_actions[1].parameters.execution_mode, "step_confirm");
  });

  test("unknown workflows, agents and patterns, and malformed URIs are refused", async () => {
    const c = await connect();
    let s = await run(c, { workflow_uri: "workflow://no-such-thing" });
    assert.equal(s.error.code, "WORKFLOW_NOT_FOUND");
    assert.deepEqual(s.next_actions.map((a) => a.tool), ["field_request", "list_available_contexts"]);
    s = await run(c, { workflow_uri: "agent://debugger" });
    assert.equal(s.error.code, "NOT_EXECUTABLE");
    assert.match(s.error.message, /is an agent context: it has no steps/);
    assert.match(await failing(c, "execute_workflow", { workflow_uri: "workflow://Code_Review" }), /workflow_uri/);
    assert.match(await failing(c, "execute_workflow", { workflow_uri: "tool://field_request" }), /workflow_uri/);
    assert.match(await failing(c, "execute_workflow", { ...review, execution_mode: "fast" }), /execution_mode/);
    assert.match(await failing(c, "execute_workflow", { ...review, constraints: { max_duration_ms: 10 } }), /max_duration_ms/);
  });

  test("at most five workflows may be open in a session; a cancelled one makes room", async () => {
    const c = await connect();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await run(c, review)).result.session_id);
    const s = await run(c, review);
    assert.equal(s.error.code, "TOO_MANY_OPEN_WORKFLOWS");
    assert.match(s.error.message, new RegExp(ids[0]));
    assert.deepEqual(s.next_actions[0], { tool: "cancel_chain", reason: "Stop the oldest open workflow", parameters: { execution_id: ids[0], reason: "making room for workflow://code-review" } });
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: ids[0] } });
    assert.equal((await run(c, review)).result.status, "awaiting_input");
  });
});

test("execute_workflow is limited to 20 calls a minute per caller by default", async () => {
  const limited = await startWorker({}, { quiet: true });
  try {
    const c = await connect({ worker: limited });
    for (let i = 0; i < 20; i++) {
      const r = await c.callTool({ name: "execute_workflow", arguments: { workflow_uri: "workflow://no-such-thing" } });
      assert.notEqual(r.isError, true, `call ${i + 1}: ${JSON.stringify(r)}`);
    }
    const r = await c.callTool({ name: "execute_workflow", arguments: { workflow_uri: "workflow://no-such-thing" } });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /rate limit|retry/i);
    const other = await c.callTool({ name: "get_help", arguments: { help_type: "best_practices" } });
    assert.notEqual(other.isError, true);
  } finally {
    await limited.stop();
  }
});

describe("compose_workflow", () => {
  async function compose(c, args) {
    const r = await c.callTool({ name: "compose_workflow", arguments: args });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    const s = r.structuredContent;
    for (const k of ["tip", "pattern", "confidence_calibration"]) assert.equal(typeof s.teaching[k], "string");
    if (!s.success) assert.ok(s.error.code && s.error.fix.instruction && s.partial_results.blocked_by, JSON.stringify(s));
    return s;
  }
  const parts = [
    { uri: "workflow://code-review", role: "primary" },
    { uri: "agent://debugger", role: "validation" },
  ];

  test("round trip: compose, save, found by field_request and list_available_contexts, executed like any workflow", async () => {
    const c = await connect();
    const draft = await compose(c, { name: "review-and-debug", description: "Review a change, then chase the bugs the review found with the debugger.", components: parts, flow_type: "sequential" });
    assert.equal(draft.success, true);
    assert.equal(draft.result.saved, false);
    assert.deepEqual(draft.result.steps.map((s) => s.name), ["code-review-understand-change", "code-review-review", "code-review-prioritise", "debugger"]);
    assert.deepEqual(draft.result.context.variables.required, ["technology", "code_reference", "error_description"]);
    assert.deepEqual(draft.result.chain_definition.steps.map((s) => s.depends_on), [[], [1], [2], [3]]);
    assert.equal(draft.next_actions[0].parameters.save, true);
    assert.equal((await run(c, { workflow_uri: "workflow://review-and-debug" })).error.code, "WORKFLOW_NOT_FOUND", "a draft is not in the catalog");

    const saved = await compose(c, draft.next_actions[0].parameters);
    assert.equal(saved.result.saved, true);
    assert.deepEqual(saved.next_actions[0], { tool: "execute_workflow", reason: "Run workflow://review-and-debug", parameters: { workflow_uri: "workflow://review-and-debug", initial_variables: { technology: "<technology>", code_reference: "<code_reference>", error_description: "<error_description>" } } });

    const listed = (await c.callTool({ name: "list_available_contexts", arguments: { filter: { tags: ["composed"] }, pagination: { limit: 50 } } })).structuredContent;
    assert.ok(JSON.stringify(listed).includes("workflow://review-and-debug"), JSON.stringify(listed).slice(0, 500));
    const found = (await c.callTool({ name: "field_request", arguments: { query: "Review a change, then chase the bugs the review found with the debugger", extracted_variables: { domain: "technical", technology: "Rust" }, confidence_level: 0.7 } })).structuredContent;
    assert.ok(found.matches.some((m) => m.uri === "workflow://review-and-debug"), JSON.stringify(found.matches.map((m) => m.uri)));

    const prompts = [];
    const m = await connect({ sampling: model(prompts) });
    const s = await run(m, { workflow_uri: "workflow://review-and-debug", initial_variables: { technology: "Rust", code_reference: "PR 7", error_description: "panic on empty input" }, execution_mode: "autonomous" });
    assert.equal(s.result.status, "completed", JSON.stringify(s.result));
    assert.equal(prompts.length, 4);
    assert.match(prompts[3].text, /Apply the agent Debugger \(agent:\/\/debugger\) as the validation of this workflow: .*Known: technology: Rust, error_description: panic on empty input\./);
    assert.equal(s.result.outputs.debugger_result, "debugger_result by model");

    const again = await compose(c, { ...draft.next_actions[0].parameters });
    assert.equal(again.error.code, "NAME_TAKEN");
    assert.match(again.error.message, /workflow:\/\/review-and-debug already exists/);
  });

  test("parallel, conditional and iterative flows become the chain dependencies and conditions they describe", async () => {
    const c = await connect();
    let s = await compose(c, { name: "par-flow", flow_type: "parallel", components: [{ uri: "agent://debugger", role: "primary" }, { uri: "pattern://character-arc", role: "support" }, { uri: "workflow://short-story-draft", role: "synthesis" }] });
    assert.deepEqual(s.result.chain_definition.steps.map((x) => [x.name, x.depends_on]), [["debugger", []], ["character-arc", []], ["short-story-draft-shape", [1, 2]], ["short-story-draft-draft", [3]], ["short-story-draft-revise", [4]]]);
    s = await compose(c, { name: "cond-flow", flow_type: "conditional", components: [{ uri: "workflow://code-review", role: "primary" }, { uri: "agent://debugger", role: "support", when: "urgency == 'critical'" }] });
    assert.equal(s.result.chain_definition.steps[3].conditional_execution, "urgency == 'critical'");
    s = await compose(c, { name: "iter-flow", flow_type: "iterative", components: [{ uri: "agent://debugger", role: "primary", configuration: { iterations: 3 } }, { uri: "pattern://character-arc", role: "validation" }] });
    assert.deepEqual(s.result.steps.map((x) => x.name), ["debugger", "character-arc", "debugger-r2", "character-arc-r2", "debugger-r3", "character-arc-r3"]);

    // A conditional composition runs: the guarded component is skipped when its condition is false.
    s = await compose(c, { name: "cond-run", flow_type: "conditional", save: true, components: [{ uri: "workflow://short-story-draft", role: "primary" }, { uri: "agent://debugger", role: "support", when: "urgency == 'critical'" }] });
    assert.equal(s.success, true);
    const m = await connect({ sampling: model([]) });
    const r = await run(m, { workflow_uri: "workflow://cond-run", initial_variables: { premise: "a lighthouse", error_description: "none", technology: "ink", urgency: "low" }, execution_mode: "autonomous" });
    assert.equal(r.result.status, "completed");
    assert.deepEqual(r.result.steps.map((x) => x.state), ["done", "done", "done", "skipped"]);
  });

  test("unknown components, duplicates, misplaced or broken conditions, a missing primary and bad arguments are refused; nothing is saved", async () => {
    const c = await connect();
    let s = await compose(c, { name: "nope", flow_type: "sequential", save: true, components: [{ uri: "workflow://code-review", role: "primary" }, { uri: "workflow://no-such-flow", role: "support" }, { uri: "agent://ghost", role: "support" }] });
    assert.equal(s.error.code, "UNKNOWN_COMPONENTS");
    assert.match(s.error.message, /workflow:\/\/no-such-flow, agent:\/\/ghost/);
    assert.deepEqual(s.next_actions.map((a) => a.tool), ["field_request", "list_available_contexts"]);
    s = await compose(c, { name: "nope", flow_type: "sequential", save: true, components: [{ uri: "workflow://code-review", role: "support", when: "x" }, { uri: "workflow://code-review", role: "support" }] });
    assert.equal(s.error.code, "INVALID_COMPOSITION");
    assert.match(s.error.message, /only flow_type conditional uses.*listed twice.*no component has role primary/);
    s = await compose(c, { name: "nope", flow_type: "conditional", save: true, components: [{ uri: "workflow://code-review", role: "primary" }, { uri: "agent://debugger", role: "support", when: "urgency ==" }] });
    assert.equal(s.error.code, "INVALID_COMPOSITION");
    s = await compose(c, { name: "nope", flow_type: "iterative", save: true, components: [{ uri: "workflow://code-review", role: "primary", configuration: { iterations: 9 } }, { uri: "agent://debugger", role: "support" }] });
    assert.match(s.error.message, /must be 1 to 5/);
    assert.equal((await run(c, { workflow_uri: "workflow://nope" })).error.code, "WORKFLOW_NOT_FOUND");
    assert.match(await failing(c, "compose_workflow", { name: "Bad Name", flow_type: "sequential", components: parts }), /name/);
    assert.match(await failing(c, "compose_workflow", { name: "one", flow_type: "sequential", components: [parts[0]] }), /components/);
    assert.match(await failing(c, "compose_workflow", { name: "one", flow_type: "loop", components: parts }), /flow_type/);
  });
});

test("get_help explains the workflow tools' errors and shows their usage", async () => {
  const c = await connect();
  const refusal = await run(c, { workflow_uri: "workflow://code-review", initial_variables: {} });
  const help = async (args) => (await c.callTool({ name: "get_help", arguments: args })).structuredContent;
  let h = await help({ help_type: "error", context: { error_message: refusal.error.message } });
  assert.equal(h.result?.code ?? h.code, "MISSING_VARIABLES", JSON.stringify(h));
  for (const tool of ["execute_workflow", "compose_workflow"]) {
    h = await help({ help_type: "usage", context: { attempted_action: tool } });
    assert.ok(JSON.stringify(h).includes(tool), JSON.stringify(h).slice(0, 300));
  }
});
