// FlowMind's execute_workflow through the official MCP SDK client against the built Worker: a
// workflow context's steps run as a chain execution of the session in its three modes (interactive
// pauses for step outputs, autonomous asks the client's model through MCP sampling, step_confirm
// pauses for approval before each step), continued with session_id; approvals the call asks for
// (require_approval_for, a low confidence_level) in every mode, confidence overrides, the per-caller
// limit of open workflows across sessions, parallel steps that really overlap, popularity and
// recency of used contexts, the chain tools leaving workflow chains alone, the 20-a-minute rate
// limit and every refusal.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { createServer } from "node:http";
import { startWorker } from "./support/worker.js";
import { hs256 } from "../scripts/token.js";
import { sseEvents } from "./support/mcp.js";

const SECRET = "workflows-secret";
let w;
const clients = [];

async function connect({ worker = w, sampling, user } = {}) {
  const c = new Client({ name: "flowmind-workflows-test", version: "1.0.0" }, { capabilities: sampling ? { sampling: {} } : {} });
  if (sampling) c.setRequestHandler(CreateMessageRequestSchema, sampling);
  const headers = user ? { authorization: `Bearer ${hs256({ sub: user, roles: [], aud: new URL("/mcp", worker.url).href, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` } : {};
  await c.connect(new StreamableHTTPClientTransport(new URL(worker.mcpUrl), { requestInit: { headers } }));
  clients.push(c);
  return c;
}

before(async () => {
  w = await startWorker({ RATE_LIMITS: "*=off", JWT_SECRET: SECRET });
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

  test("a confidence_level below the workflow's confidence_required is refused, unless confidence_override.min_confidence lowers the bar", async () => {
    const prompts = [];
    const c = await connect({ sampling: model(prompts) });
    let s = await run(c, { ...review, execution_mode: "autonomous", confidence_level: 0.5 });
    assert.equal(s.error.code, "CONFIDENCE_TOO_LOW");
    assert.match(s.error.message, /only with confidence 0.6 \(its confidence_required\); your confidence_level is 0.5/);
    assert.match(s.error.fix.instruction, /step_confirm/);
    assert.equal(s.next_actions[0].parameters.execution_mode, "step_confirm");
    s = await run(c, { ...review, execution_mode: "autonomous", confidence_level: 0.5, confidence_override: { min_confidence: 0.7 } });
    assert.equal(s.error.code, "CONFIDENCE_TOO_LOW");
    assert.match(s.error.message, /0.7 \(confidence_override.min_confidence\)/);
    assert.equal(prompts.length, 0, "nothing ran");

    s = await run(c, { ...review, execution_mode: "autonomous", confidence_level: 0.5, confidence_override: { min_confidence: 0.5 } });
    assert.equal(s.result.status, "completed", JSON.stringify(s.result));
    assert.deepEqual(s.result.confidence, { your_confidence: 0.5, confidence_required: 0.6, min_confidence: 0.5, require_confirmation_below: 0.5, overridden: true, steps_confirmed: false });
    assert.deepEqual(s.result.approvals, []);
    s = await run(c, { ...review, execution_mode: "autonomous", confidence_level: 0.9 });
    assert.equal(s.result.status, "completed");
  });

  test("require_confirmation_below above the caller's confidence makes even an autonomous run wait for approval of each step", async () => {
    const prompts = [];
    const c = await connect({ sampling: model(prompts) });
    let s = await run(c, { ...review, execution_mode: "autonomous", confidence_level: 0.7, confidence_override: { require_confirmation_below: 0.9 } });
    assert.equal(s.result.status, "awaiting_input");
    assert.equal(s.result.awaiting.kind, "confirmation");
    assert.equal(s.result.awaiting.step, "understand-change");
    assert.match(s.result.awaiting.preview, /It needs your approval: your confidence_level 0.7 is below 0.9 \(confidence_override.require_confirmation_below\), so every step is confirmed\./);
    assert.match(s.result.awaiting.how_to_approve, /approval "approve"/);
    assert.equal(s.result.approvals.length, 3);
    assert.equal(prompts.length, 0, "the client's model is not asked to approve");
    const id = s.result.session_id;
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, approval: "approve" });
    assert.equal(s.result.execution_mode, "autonomous");
    assert.equal(s.result.awaiting.step, "review");
    assert.equal(prompts.length, 1, "the approved step ran through the model");
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: id } });
  });

  test("confidence_override without a confidence_level is refused, saying what to add", async () => {
    const c = await connect({ sampling: model([]) });
    const s = await run(c, { ...review, execution_mode: "autonomous", confidence_override: { min_confidence: 0.4 } });
    assert.equal(s.error.code, "CONFIDENCE_LEVEL_NEEDED");
    assert.match(s.error.fix.instruction, /confidence_level/);
    assert.equal(s.next_actions[0].parameters.confidence_level, 0.6);
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
    assert.deepEqual(s.result.awaiting, {
      kind: "confirmation",
      step: "understand-change",
      preview: "Step 1 of 3 of workflow://code-review: 'understand-change'.\n\nSummarise what the change in PR 42 (src/lib.rs) does and which parts of the Rust code base it touches.",
      how_to_approve: `Call execute_workflow with workflow_uri workflow://code-review, session_id ${id} and approval "approve" to run step 'understand-change', or approval "reject" to stop the workflow.`,
    });
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

describe("with the server's model provider", () => {
  let provider, pw;
  const systems = [];
  before(async () => {
    // An OpenAI-compatible stand-in (an external service) answering every requested key.
    provider = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        const system = JSON.parse(body).messages[0].content;
        systems.push(system);
        const keys = system.match(/Its keys: (.*)\.$/)[1].split(", ");
        const content = JSON.stringify(Object.fromEntries(keys.map((k) => [k, `${k} by provider`])));
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ choices: [{ message: { role: "assistant", content } }] }));
      });
    });
    await new Promise((r) => provider.listen(0, "127.0.0.1", r));
    pw = await startWorker({ RATE_LIMITS: "*=off", MODEL_PROVIDER_URL: `http://127.0.0.1:${provider.address().port}/v1/chat/completions`, MODEL_PROVIDER_KEY: "k", MODEL_PROVIDER_MODEL: "m" }, { quiet: true });
  });
  after(async () => {
    await pw?.stop();
    provider?.closeAllConnections();
    provider?.close();
  });

  test("step_confirm approvals wait for the caller: the server's model runs the steps but never approves them", async () => {
    const c = await connect({ worker: pw });
    let s = await run(c, { ...review, execution_mode: "step_confirm" });
    assert.equal(s.result.awaiting.kind, "confirmation");
    assert.equal(systems.length, 0);
    const id = s.result.session_id;
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, approval: "approve" });
    assert.equal(s.result.awaiting.kind, "confirmation");
    assert.equal(s.result.awaiting.step, "review");
    assert.equal(s.result.outputs.change_summary, "change_summary by provider");
    assert.equal(systems.length, 1);
    assert.ok(systems.every((x) => !/Answer "approved"/.test(x)), "the provider was never asked to approve");
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: id } });
  });
});

describe("constraints and refusals", () => {
  // Seed 001: max_steps is the most steps "before requiring confirmation" (issue 22 item 6; this
  // was a MAX_STEPS_EXCEEDED refusal).
  test("a workflow with more steps than max_steps runs, confirming each step past the limit", async () => {
    const c = await connect();
    let s = await run(c, { ...review, constraints: { max_steps: 2 } });
    assert.equal(s.success, true, JSON.stringify(s));
    assert.deepEqual(s.result.approvals.map((a) => a.step), ["prioritise"]);
    assert.match(s.result.approvals[0].why, /step 3 of 3, past constraints.max_steps 2/);
    // End to end: the steps within the limit ask only for their outputs, the one past it asks for
    // confirmation first, and approving it runs it to completion (nothing is refused).
    const id = s.result.session_id;
    assert.equal(s.result.awaiting.kind, "input");
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { change_summary: "adds a cache" } });
    assert.equal(s.result.awaiting.kind, "input");
    assert.equal(s.result.awaiting.step, "review");
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { review_comments: ["nit: naming"] } });
    assert.equal(s.result.awaiting.kind, "confirmation");
    assert.equal(s.result.awaiting.step, "prioritise");
    assert.match(s.result.awaiting.preview, /max_steps/);
    assert.deepEqual(s.next_actions.map((a) => a.parameters.approval), ["approve", "reject"]);
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, approval: "approve" });
    assert.equal(s.result.awaiting.kind, "input");
    assert.equal(s.result.awaiting.step, "prioritise");
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { review_summary: "fine", merge_recommendation: "merge" } });
    assert.equal(s.result.status, "completed");

    // The two ways out that the old MAX_STEPS_EXCEEDED refusal suggested now both start a run:
    // a max_steps that covers every step confirms nothing, and step_confirm confirms every step.
    s = await run(c, { ...review, constraints: { max_steps: 3 } });
    assert.equal(s.success, true, JSON.stringify(s));
    assert.deepEqual(s.result.approvals ?? [], []);
    assert.equal(s.result.awaiting.kind, "input");
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: s.result.session_id } });
    s = await run(c, { ...review, execution_mode: "step_confirm", constraints: { max_steps: 2 } });
    assert.equal(s.success, true, JSON.stringify(s));
    assert.equal(s.result.awaiting.kind, "confirmation");
    assert.equal(s.result.awaiting.step, "understand-change");
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: s.result.session_id } });
    const help = (await c.callTool({ name: "get_help", arguments: { help_type: "error", context: { error_message: "MAX_STEPS_EXCEEDED" } } })).structuredContent;
    assert.equal(help.result.code, null, "no tool answers MAX_STEPS_EXCEEDED any more, so get_help does not pretend to know it");
  });

  test("unknown workflows and malformed URIs are refused; an agent and a pattern run", async () => {
    const c = await connect();
    let s = await run(c, { workflow_uri: "workflow://no-such-thing" });
    assert.equal(s.error.code, "WORKFLOW_NOT_FOUND");
    assert.deepEqual(s.next_actions.map((a) => a.tool), ["field_request", "list_available_contexts"]);
    // Seed 001's URI pattern admits agent:// and pattern:// (issue 22 item 6): an agent runs as one
    // step that applies it (its required variables first), no longer NOT_EXECUTABLE.
    s = await run(c, { workflow_uri: "agent://debugger" });
    assert.equal(s.error.code, "MISSING_VARIABLES");
    s = await run(c, { workflow_uri: "agent://debugger", initial_variables: { technology: "Rust", error_description: "index out of bounds" } });
    assert.equal(s.success, true, JSON.stringify(s));
    assert.equal(s.result.awaiting.step, "apply");
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: s.result.session_id } });
    // A pattern runs the same way.
    s = await run(c, { workflow_uri: "pattern://retry-with-backoff", initial_variables: { technology: "Go" } });
    assert.equal(s.success, true, JSON.stringify(s));
    assert.equal(s.result.awaiting.step, "apply");
    assert.match(s.result.awaiting.input, /Retry with exponential backoff|backoff/i);
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: s.result.session_id } });
    assert.match(await failing(c, "execute_workflow", { workflow_uri: "workflow://Code_Review" }), /workflow_uri/);
    assert.match(await failing(c, "execute_workflow", { workflow_uri: "tool://field_request" }), /workflow_uri/);
    assert.match(await failing(c, "execute_workflow", { ...review, execution_mode: "fast" }), /execution_mode/);
    assert.match(await failing(c, "execute_workflow", { ...review, constraints: { max_duration_ms: 10 } }), /max_duration_ms/);
  });

  test("an anonymous caller may have five workflows open in its session; a cancelled one makes room", async () => {
    const c = await connect();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await run(c, review)).result.session_id);
    const s = await run(c, review);
    assert.equal(s.error.code, "TOO_MANY_OPEN_WORKFLOWS");
    assert.match(s.error.message, new RegExp(`You have 5 workflows open \\(at most 5 per caller, counted in this session for a caller without a token\\): ${ids.join(", ")}\\.`));
    assert.deepEqual(s.next_actions[0], { tool: "cancel_chain", reason: "Stop the oldest open workflow of this session", parameters: { execution_id: ids[0], reason: "making room for workflow://code-review" } });
    const other = await connect();
    assert.equal((await run(other, review)).result.status, "awaiting_input", "another anonymous session counts apart");
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: ids[0] } });
    assert.equal((await run(c, review)).result.status, "awaiting_input");
  });

  test("require_approval_for entries that are neither actions nor steps are refused, naming the entry", async () => {
    const c = await connect();
    const s = await run(c, { ...review, constraints: { require_approval_for: ["review", "deploys"] } });
    assert.equal(s.error.code, "INVALID_CONSTRAINTS");
    assert.match(s.error.message, /^constraints.require_approval_for\[1\] is "deploys", which is neither an action \(external_api_calls, file_modifications, context_switches\) nor a step of workflow:\/\/code-review \(understand-change, review, prioritise\)$/);
    assert.deepEqual(s.next_actions[0].parameters.constraints, { require_approval_for: ["review"] });
    assert.match(await failing(c, "execute_workflow", { ...review, constraints: { require_approval_for: ["Not A Name"] } }), /require_approval_for/);
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

describe("require_approval_for", () => {
  test("a named step waits for explicit approval in interactive mode, then runs", async () => {
    const c = await connect();
    let s = await run(c, { ...review, constraints: { require_approval_for: ["review"] } });
    const id = s.result.session_id;
    assert.deepEqual(s.result.approvals, [{ step: "review", why: "constraints.require_approval_for names it" }]);
    assert.equal(s.result.awaiting.kind, "input");
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, step_outputs: { change_summary: "adds a cache" } });
    assert.equal(s.result.awaiting.kind, "confirmation");
    assert.equal(s.result.awaiting.step, "review");
    assert.match(s.result.awaiting.preview, /^Step 2 of 3 of workflow:\/\/code-review: 'review'\. It needs your approval: constraints\.require_approval_for names it\.\n\nReview the change/);
    assert.match(s.summary ?? s.teaching.tip, /approval/);
    assert.deepEqual(s.next_actions[0].parameters, { workflow_uri: review.workflow_uri, session_id: id, approval: "approve" });
    s = await run(c, { workflow_uri: review.workflow_uri, session_id: id, approval: "approve" });
    assert.equal(s.result.awaiting.kind, "input");
    assert.equal(s.result.awaiting.step, "review");
    assert.deepEqual(s.result.steps.map((x) => [x.name, x.kind, x.state]), [
      ["understand-change", "step", "done"], ["confirm-review", "confirmation", "done"], ["review", "step", "awaiting_input"], ["prioritise", "step", "pending"],
    ]);
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: id } });
  });

  test("actions gate the steps of a composed workflow that perform them, in autonomous mode too; the client's model is never asked to approve", async () => {
    const c = await connect();
    const saved = (await c.callTool({ name: "compose_workflow", arguments: { name: "review-then-flights", flow_type: "sequential", save: true, components: [{ uri: "workflow://code-review", role: "primary" }, { uri: "tool://search_flights", role: "support" }, { uri: "tool://create_template", role: "support" }] } })).structuredContent;
    assert.equal(saved.success, true, JSON.stringify(saved));
    assert.deepEqual(saved.result.steps.map((x) => [x.name, x.context, x.actions]), [
      ["code-review-understand-change", "workflow://code-review", []],
      ["code-review-review", "workflow://code-review", []],
      ["code-review-prioritise", "workflow://code-review", []],
      ["search_flights", "tool://search_flights", ["external_api_calls", "context_switches"]],
      ["create_template", "tool://create_template", ["file_modifications", "context_switches"]],
    ]);

    const prompts = [];
    const m = await connect({ sampling: model(prompts) });
    const vars = { technology: "Rust", code_reference: "PR 9", origin: "LHR", destination: "JFK", departure_date: "2027-01-10", template_definition: "a template" };
    const args = { workflow_uri: "workflow://review-then-flights", initial_variables: vars, execution_mode: "autonomous", constraints: { require_approval_for: ["external_api_calls", "file_modifications"] } };
    let s = await run(m, args);
    assert.equal(s.result.status, "awaiting_input", JSON.stringify(s.result));
    assert.deepEqual(s.result.approvals, [
      { step: "search_flights", why: "tool://search_flights calls an outside service (external_api_calls)" },
      { step: "create_template", why: "tool://create_template changes stored data (file_modifications)" },
    ]);
    assert.equal(s.result.awaiting.step, "search_flights");
    assert.match(s.result.awaiting.preview, /It needs your approval: tool:\/\/search_flights calls an outside service \(external_api_calls\)\./);
    assert.equal(prompts.length, 3, "the three review steps ran through the model, then the run paused");
    assert.ok(prompts.every((p) => !/Answer "approved"/.test(p.system)), "no approval went to the model");
    const id = s.result.session_id;
    s = await run(m, { workflow_uri: args.workflow_uri, session_id: id, approval: "approve" });
    assert.equal(s.result.awaiting.step, "create_template");
    assert.equal(prompts.length, 4);
    s = await run(m, { workflow_uri: args.workflow_uri, session_id: id, approval: "reject" });
    assert.equal(s.result.status, "cancelled");
    assert.match(s.error.message, /step 'create_template' was rejected/);
    assert.equal(prompts.length, 4, "the rejected step did not run");

    // context_switches gates the two tool steps; nothing else.
    s = await run(m, { ...args, constraints: { require_approval_for: ["context_switches"] } });
    assert.deepEqual(s.result.approvals.map((a) => [a.step, a.why]), [
      ["search_flights", "it switches to tool://search_flights (context_switches)"],
      ["create_template", "it switches to tool://create_template (context_switches)"],
    ]);
    await m.callTool({ name: "cancel_chain", arguments: { execution_id: s.result.session_id } });
  });
});

describe("open workflows per caller", () => {
  test("a signed-in user's runs count together over their sessions: the sixth is refused, an end of any kind makes room", async () => {
    const a = await connect({ user: "pat" });
    const b = await connect({ user: "pat" });
    const ids = [];
    for (const c of [a, a, a, b, b]) ids.push((await run(c, review)).result.session_id);
    let s = await run(b, review);
    assert.equal(s.error.code, "TOO_MANY_OPEN_WORKFLOWS");
    assert.match(s.error.message, new RegExp(ids.join(", ")));
    assert.deepEqual(s.next_actions[0].parameters, { execution_id: ids[3], reason: "making room for workflow://code-review" }, "the oldest run of this session");
    assert.match(s.error.fix.instruction, /Paused runs count until they end/);
    const c2 = await connect({ user: "sam" });
    assert.equal((await run(c2, review)).result.status, "awaiting_input", "another user has slots of their own");

    // Cancelled in the other session: room here.
    await a.callTool({ name: "cancel_chain", arguments: { execution_id: ids[0] } });
    const sixth = (await run(b, review)).result.session_id;
    assert.equal((await run(b, review)).error.code, "TOO_MANY_OPEN_WORKFLOWS");

    // Completed: room again.
    let id = ids[1];
    for (const out of [{ change_summary: "x" }, { review_comments: "y" }, { review_summary: "z", merge_recommendation: "merge" }]) {
      s = await run(a, { workflow_uri: review.workflow_uri, session_id: id, step_outputs: out });
    }
    assert.equal(s.result.status, "completed");
    const seventh = (await run(b, review)).result.session_id;
    assert.equal((await run(a, review)).error.code, "TOO_MANY_OPEN_WORKFLOWS");

    // Rejected at an approval (step_confirm): room again.
    await a.callTool({ name: "cancel_chain", arguments: { execution_id: ids[2] } });
    s = await run(a, { ...review, execution_mode: "step_confirm" });
    id = s.result.session_id;
    assert.equal((await run(b, review)).error.code, "TOO_MANY_OPEN_WORKFLOWS");
    s = await run(a, { workflow_uri: review.workflow_uri, session_id: id, approval: "reject" });
    assert.equal(s.result.status, "cancelled");

    // A run whose end was never reported (its record ended behind the lease's back) does not hold
    // its slot: the next start finds it over and takes the slot.
    const eighth = (await run(a, review)).result.session_id;
    assert.equal((await run(a, review)).error.code, "TOO_MANY_OPEN_WORKFLOWS");
    const db = await w.mf.getD1Database("DB");
    await db.prepare("UPDATE chain_executions SET status = 'failed' WHERE id = ?1").bind(eighth).run();
    assert.equal((await run(a, review)).result.status, "awaiting_input");
    for (const [c, x] of [[b, ids[3]], [b, ids[4]], [b, sixth], [b, seventh]]) await c.callTool({ name: "cancel_chain", arguments: { execution_id: x } });
  });
});

describe("parallel steps", () => {
  const flow = { name: "parallel-check", flow_type: "parallel", save: true, components: [{ uri: "agent://debugger", role: "primary" }, { uri: "pattern://character-arc", role: "support" }, { uri: "workflow://logo-concept", role: "synthesis" }] };
  const vars = { technology: "Rust", error_description: "panics", character_name: "Ada", brand_name: "Northwind" };

  test("independent steps run at the same time: the model is asked for both before either answers", async () => {
    const c = await connect();
    assert.equal((await c.callTool({ name: "compose_workflow", arguments: flow })).structuredContent.success, true);
    const asked = [];
    let inFlight = 0;
    let most = 0;
    let release;
    const both = new Promise((r) => (release = r));
    const answer = model([]);
    const m = await connect({
      sampling: async (req) => {
        const text = req.params.messages[0].content.text;
        asked.push(text.slice(0, 40));
        inFlight += 1;
        most = Math.max(most, inFlight);
        if (/^Apply the (agent Debugger|pattern Character arc)/.test(text)) {
          if (inFlight >= 2) release();
          // The first of the two answers only once the second has been asked (or after 5 s, when
          // the steps ran one at a time and the assertion below fails).
          await Promise.race([both, new Promise((r) => setTimeout(r, 5000))]);
        }
        inFlight -= 1;
        return answer(req);
      },
    });
    const dashboard = await fetch(new URL(`/sessions/${m.transport.sessionId}/events`, w.url), { headers: { accept: "text/event-stream" } });
    assert.equal(dashboard.status, 200);
    const s = await run(m, { workflow_uri: "workflow://parallel-check", initial_variables: vars, execution_mode: "autonomous" });
    assert.equal(s.result.status, "completed", JSON.stringify(s.result));
    assert.equal(most, 2, `steps overlapped: ${JSON.stringify(asked)}`);
    // The session's events show both steps starting before either finished, then the synthesis.
    const seen = sseEvents(dashboard, { timeoutMs: 5000 });
    const steps = [];
    while (steps.length < 10) {
      const ev = await seen.next();
      assert.ok(ev, `events so far: ${JSON.stringify(steps)}`);
      const data = ev.data ? JSON.parse(ev.data) : {};
      if (String(data.tool).startsWith("wfa-parallel-check/")) steps.push(`${ev.event} ${data.tool.split("/")[1]}`);
    }
    seen.close();
    assert.deepEqual(steps.slice(0, 2).sort(), ["tool_call character-arc", "tool_call debugger"]);
    assert.deepEqual(steps.slice(2, 4).sort(), ["tool_result character-arc", "tool_result debugger"]);
    assert.deepEqual(steps.slice(4), ["tool_call logo-concept-ideas", "tool_result logo-concept-ideas", "tool_call logo-concept-refine", "tool_result logo-concept-refine", "tool_call logo-concept-evaluate", "tool_result logo-concept-evaluate"]);
    assert.deepEqual(s.result.steps.map((x) => x.state), ["done", "done", "done", "done", "done"]);
    assert.equal(s.result.outputs.debugger_result, "debugger_result by model");
    assert.equal(s.result.outputs.character_arc_result, "character_arc_result by model");
    // The synthesis ran after both, with their outputs.
    assert.deepEqual(asked.slice(2).map((t) => t.slice(0, 8)), ["Generate", "Pick the", "Judge lo"]);
  });

  test("without a model, steps that run together pause together and take their outputs in one call", async () => {
    const c = await connect();
    let s = await run(c, { workflow_uri: "workflow://parallel-check", initial_variables: vars });
    const id = s.result.session_id;
    assert.equal(s.result.awaiting.kind, "input");
    assert.deepEqual(s.result.awaiting.supply, ["debugger_result", "character_arc_result"]);
    assert.deepEqual(s.result.awaiting.steps.map((x) => x.step), ["debugger", "character-arc"]);
    assert.deepEqual(s.next_actions[0].parameters.step_outputs, { debugger_result: "<debugger_result>", character_arc_result: "<character_arc_result>" });
    assert.match(await failing(c, "execute_workflow", { workflow_uri: "workflow://parallel-check", session_id: id, step_outputs: { debugger_result: "fixed" } }), /character_arc_result is missing/);
    s = await run(c, { workflow_uri: "workflow://parallel-check", session_id: id, step_outputs: { debugger_result: "fixed", character_arc_result: "grows" } });
    assert.equal(s.result.awaiting.step, "logo-concept-ideas");
    assert.equal(s.result.steps_finished, 2);
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: id } });
  });
});

describe("usage", () => {
  test("a run counts in its context's popularity and last_used_at, which list_available_contexts sorts by", async () => {
    const c = await connect();
    for (const name of ["usage-a", "usage-b"]) {
      const r = (await c.callTool({ name: "compose_workflow", arguments: { name, flow_type: "sequential", save: true, components: [{ uri: "workflow://logo-concept", role: "primary" }, { uri: "pattern://character-arc", role: "support" }] } })).structuredContent;
      assert.equal(r.success, true);
    }
    const list = async (by, order = "desc") => (await c.callTool({ name: "list_available_contexts", arguments: { filter: { tags: ["composed"] }, sort: { by, order }, pagination: { limit: 50 } } })).structuredContent.result.contexts.filter((x) => x.uri.startsWith("workflow://usage-"));
    let before = await list("popularity");
    assert.deepEqual(before.map((x) => [x.uri, x.popularity, x.last_used_at]), [["workflow://usage-a", 0, null], ["workflow://usage-b", 0, null]]);

    const id = (await run(c, { workflow_uri: "workflow://usage-b", initial_variables: { brand_name: "N", character_name: "A" } })).result.session_id;
    let after = await list("popularity");
    assert.deepEqual(after.map((x) => [x.uri, x.popularity]), [["workflow://usage-b", 1], ["workflow://usage-a", 0]]);
    assert.ok(Date.now() - Date.parse(after[0].last_used_at) < 60_000, after[0].last_used_at);
    assert.deepEqual((await list("recent")).map((x) => x.uri), ["workflow://usage-b", "workflow://usage-a"]);
    await c.callTool({ name: "cancel_chain", arguments: { execution_id: id } });

    // Refused calls are no use: nothing moves.
    assert.equal((await run(c, { workflow_uri: "workflow://usage-a" })).error.code, "MISSING_VARIABLES");
    assert.equal((await list("popularity", "asc"))[0].popularity, 0);
  });
});

describe("the chain tools and workflow chains", () => {
  test("workflow chains are FlowMind's: not run, resumed, created or replaced through the chain tools, nor offered by them; status and cancel work", async () => {
    const c = await connect();
    const id = (await run(c, review)).result.session_id;
    let text = await failing(c, "execute_chain", { chain_name: "wf-code-review", variables: {} });
    assert.match(text, /Chain 'wf-code-review' is the chain of a FlowMind workflow .*execute_chain does not touch it: run the workflow with execute_workflow/);
    text = await failing(c, "resume_chain", { execution_id: id, outputs: { change_summary: "x" } });
    assert.match(text, /resume_chain does not touch it.*continue with session_id/);
    const step = { id: 1, name: "only", type: "data_transformation", input_template: "x", input_variables: [], output_variables: ["y"] };
    for (const [name, opts] of [["wf-code-review", { overwrite_existing: true }], ["wfc-mine", {}], ["wfa-mine", {}]]) {
      text = await failing(c, "create_chain", { chain_definition: { name, title: "My chain", category: "custom", steps: [step] }, creation_options: opts });
      assert.match(text, /is the chain of a FlowMind workflow/, name);
    }
    text = await failing(c, "execute_chain", { chain_name: "no-such-chain", variables: {} });
    assert.match(text, /Available chains: /);
    assert.doesNotMatch(text, /wf-|flowmind-workflow/);
    assert.equal((await c.callTool({ name: "get_chain_status", arguments: { execution_id: id } })).structuredContent.chain, "wf-code-review");
    assert.equal((await c.callTool({ name: "cancel_chain", arguments: { execution_id: id } })).structuredContent.status, "cancelled");
    assert.equal((await run(c, { workflow_uri: review.workflow_uri, session_id: id })).result.status, "cancelled");
  });
});
