// Seed 000's chains as a user of them meets them (issue 21, items 4-9), against the built Worker
// with real D1 and Durable Objects: the shipped corporate chain with realistic model answers,
// retries by the seed's error codes, input variables without a value, context_metadata and runs
// that belong to the signed-in user, the seed's reply texts, and the execution options.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root, startWorker } from "./support/worker.js";
import { LATEST, post } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const textOf = (r) => r.content.map((c) => c.text).join("\n");
const idIn = (r) => textOf(r).match(/exec-[0-9a-f]{32}/)[0];
const SECRET = "chain-seed-secret";
const step = (id, name, extra = {}) => ({ id, name, type: "data_transformation", input_variables: [], output_variables: [], ...extra });

/**
 * A stand-in for an OpenAI-compatible model provider. `p.answer(userText, n)` gives the reply for
 * the n-th request: an object (sent as the model's JSON), `"unavailable"` (HTTP 503) or `"slow"`
 * (answered after 1.5 s with `p.slowAnswer`). `p.inFlight` and `p.maxInFlight` count overlapping
 * requests.
 */
function modelProvider() {
  const p = { requests: [], inFlight: 0, maxInFlight: 0, answer: () => ({}) };
  p.server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const parsed = JSON.parse(body);
      p.requests.push(parsed);
      const user = parsed.messages.at(-1).content;
      const a = p.answer(user, p.requests.length);
      const reply = (value) => res.writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ choices: [{ message: { role: "assistant", content: JSON.stringify(value) } }] }));
      if (a === "unavailable") return res.writeHead(503).end("busy");
      if (a === "hang") return;
      if (a && a.slow) {
        p.inFlight++;
        p.maxInFlight = Math.max(p.maxInFlight, p.inFlight);
        setTimeout(() => {
          p.inFlight--;
          reply(a.slow);
        }, 1500);
        return;
      }
      reply(a);
    });
  });
  return new Promise((resolve) => p.server.listen(0, "127.0.0.1", () => {
    p.url = `http://127.0.0.1:${p.server.address().port}/v1/chat/completions`;
    resolve(p);
  }));
}

/** An MCP session, signed in as `sub` when given (else anonymous). */
async function connect(w, sub) {
  const headers = sub ? { authorization: `Bearer ${hs256({ sub, roles: [], aud: w.mcpUrl, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` } : {};
  const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "chain-seed", version: "1" } } }, { headers });
  assert.equal(init.status, 200, await init.clone().text());
  const session = init.headers.get("mcp-session-id");
  await post(w.mcpUrl, { jsonrpc: "2.0", method: "notifications/initialized" }, { session, headers, version: LATEST });
  let n = 1;
  const call = async (name, args) => {
    const r = await (await post(w.mcpUrl, { jsonrpc: "2.0", id: n++, method: "tools/call", params: { name, arguments: args } }, { session, headers, version: LATEST })).json();
    assert.ok(r.result, JSON.stringify(r));
    return r.result;
  };
  return {
    session,
    authorization: headers.authorization,
    call,
    create: (def) => call("create_chain", { chain_definition: def, creation_options: { overwrite_existing: true, visibility: "public" } }),
    execute: (chain_name, variables, execution_options = {}, extra = {}) => call("execute_chain", { chain_name, variables, execution_options, ...extra }),
    status: async (execution_id) => {
      const r = await call("get_chain_status", { execution_id });
      assert.equal(r.isError, undefined, textOf(r));
      return r.structuredContent;
    },
  };
}

const corporate = {
  company_name: "Acme", traveler_name: "Dana Lee", cost_center: "CC-7", trip_requirements: { city: "Berlin", nights: 3 }, budget_approval: 3000,
  // Step 4's template needs these; the seed's input_schema does not list them, so they are passed as extra variables.
  destination: "Berlin", travel_dates: "2025-10-01 to 2025-10-04", total_cost: 1540, business_justification: "Customer workshop", manager_email: "boss@acme.example",
};

describe("the shipped corporate chain with a model that answers like a model", () => {
  let provider, w, c;
  before(async () => {
    provider = await modelProvider();
    w = await startWorker({ MODEL_PROVIDER_URL: provider.url, MODEL_PROVIDER_KEY: "k", JWT_SECRET: SECRET }, { quiet: true });
    c = await connect(w);
  });
  after(async () => {
    await w?.stop();
    provider?.server.closeAllConnections();
    provider?.server.close();
  });

  /** Answers per step, by the step's rendered input. */
  const answers = ({ validation = "approved", approval = "true" } = {}) => (user) => {
    if (user.startsWith("Validate corporate booking request")) {
      return { validation_status: validation, corporate_tier: "gold", policy_restrictions: "economy class only", pre_approved_vendors: ["Hilton", "Lufthansa"] };
    }
    if (user.startsWith("Check policy compliance")) {
      return { compliance_status: "compliant", policy_violations: [], approval_required: approval, alternative_options: [] };
    }
    if (user.startsWith("Search preferred vendors")) {
      return { vendor_options: ["Hilton Berlin Mitte, $210/night", { vendor: "Lufthansa", fare: 640 }], pricing_comparison: "Hilton is 12% under budget", availability_status: "available" };
    }
    return { error: "unexpected prompt" };
  };

  test("a list for vendor_options and \"true\" for approval_required: the run completes, saying what it converted", async () => {
    provider.answer = answers();
    const r = await c.execute("corporate-booking-workflow", corporate);
    assert.equal(r.isError, undefined, textOf(r));
    assert.match(textOf(r), /^Chain execution completed successfully\.[\s\S]*Steps Completed: 5\/5/);
    const s = await c.status(idIn(r));
    assert.deepEqual(s.steps.map((x) => x.state), ["done", "done", "done", "done", "done"]);
    assert.deepEqual(s.steps[1].warnings, ["approval_required: the answer was the text \"true\"; taken as the boolean true"]);
    assert.equal(s.steps[1].outputs.approval_required, true);
    const summary = s.steps[4].outputs.booking_summary;
    assert.match(summary, /## Vendor options\n\n- Hilton Berlin Mitte, \$210\/night\n- fare: 640, vendor: Lufthansa\n/);
    assert.match(summary, /\*\*Approval:\*\* Pending manager approval/);
    assert.deepEqual(s.steps[4].warnings, ["vendor_options: a list where template corporate-booking-summary expects text; rendered as text"]);
    assert.match(s.steps[3].outputs.approval_request_content, /Dana Lee needs your approval for business travel to Berlin/);
    assert.match(textOf(r), /\*\*Warnings:\*\*[\s\S]*\n- check_travel_policy_compliance: approval_required: the answer was the text "true"/);
    assert.deepEqual(s.steps[0].warnings, ["input variable manager_approval_id has no value: it is an optional input of the chain and was not given; pass it in execute_chain's variables (or give it a default in the chain's input_schema)"]);
  });

  test("credentials not approved: step 2 is skipped, and the summary step fails naming the step, the variable and the fix", async () => {
    provider.answer = answers({ validation: "rejected" });
    const r = await c.execute("corporate-booking-workflow", corporate);
    assert.equal(r.isError, true);
    const t = textOf(r);
    assert.match(t, /^Chain execution failed\.[\s\S]*- Failed Step: create_booking_summary/);
    assert.match(t, /step 'create_booking_summary': template corporate-booking-summary: Template variable validation failed: compliance_status is required/);
    assert.match(t, /input variable compliance_status has no value: step 2 'check_travel_policy_compliance', which outputs it, was skipped: condition false/);
    assert.match(t, /give it a default \(a default in the chain's input_schema, or `default\(…\)` in the template\), or guard this step with conditional_execution/);
    const s = await c.status(idIn(r));
    assert.deepEqual(s.steps.map((x) => x.state), ["done", "skipped", "done", "skipped", "failed"]);
    assert.match(s.steps[3].reason, /^condition false \(approval_required has no value: step 2 'check_travel_policy_compliance', which outputs it, was skipped: condition false/);
  });

  test("a model that reports vendor_unavailable is retried as retry_on_errors says", async () => {
    const base = answers();
    let searches = 0;
    provider.answer = (user) => {
      if (user.startsWith("Search preferred vendors") && ++searches === 1) return { error: "vendor_unavailable", message: "the GDS is down" };
      return base(user);
    };
    const r = await c.execute("corporate-booking-workflow", corporate);
    assert.equal(r.isError, undefined, textOf(r));
    const s = await c.status(idIn(r));
    assert.equal(s.steps[2].attempts, 2, "step 3 lists vendor_unavailable in retry_on_errors");
    assert.equal(searches, 2);
  });
});

describe("chain runs: codes, inputs, outputs, options", () => {
  let provider, w, c;
  before(async () => {
    provider = await modelProvider();
    w = await startWorker({ MODEL_PROVIDER_URL: provider.url, MODEL_PROVIDER_KEY: "k", JWT_SECRET: SECRET }, { quiet: true });
    c = await connect(w);
  });
  after(async () => {
    await w?.stop();
    provider?.server.closeAllConnections();
    provider?.server.close();
  });

  const ask = (id, name, extra = {}) => step(id, name, { type: "instruction_set", instruction_set: "client-communication", input_template: `Decide ${name}`, output_variables: [`${name}_out`], ...extra });

  test("auto_retry_transient_failures retries a step without retry_config; off, one attempt", async () => {
    for (const [auto, attempts, status] of [[true, 2, "completed"], [false, 1, "failed"]]) {
      const name = `auto-retry-${auto}`;
      assert.equal((await c.create({ name, title: "Auto retry", category: "custom", steps: [ask(1, "decide")], configuration: { auto_retry_transient_failures: auto } })).isError, undefined);
      provider.requests.length = 0;
      provider.answer = (_, n) => (n === 1 ? "unavailable" : { decide_out: "yes" });
      const r = await c.execute(name, {});
      const s = await c.status(idIn(r));
      assert.equal(s.status, status, JSON.stringify(s));
      assert.equal(s.steps[0].attempts, attempts);
      if (!auto) assert.match(s.steps[0].reason, /HTTP 503/);
    }
  });

  test("an input variable without a value is a warning in the step report; a strict chain fails the step", async () => {
    const def = (name, configuration) => ({
      name, title: "Inputs", category: "custom", configuration,
      steps: [step(1, "greet", { input_template: "Hello {name}{title}", input_variables: ["name", "title"], output_variables: ["greeting"] })],
    });
    assert.equal((await c.create(def("lenient-inputs", {}))).isError, undefined);
    const r = await c.execute("lenient-inputs", { name: "Ana" });
    assert.equal(r.isError, undefined, textOf(r));
    const s = await c.status(idIn(r));
    assert.deepEqual(s.steps[0].outputs, { greeting: "Hello Ana" });
    assert.deepEqual(s.steps[0].warnings, ["input variable title has no value: it is not among the chain's input variables and no step outputs it; pass it in execute_chain's variables (or give it a default in the chain's input_schema)"]);
    assert.match(textOf(r), /\*\*Warnings:\*\*\n- greet: input variable title has no value/);

    assert.equal((await c.create(def("strict-inputs", { strict_inputs: true }))).isError, undefined);
    const strict = await c.execute("strict-inputs", { name: "Ana" });
    assert.equal(strict.isError, true);
    assert.match(textOf(strict), /- Failed Step: greet[\s\S]*input variable title has no value: .*\(the chain is strict: configuration\.strict_inputs\)/);
  });

  test("on_failure: warn and skip cover a condition that cannot be evaluated and a template that cannot render", async () => {
    assert.equal((await c.create({
      name: "failing-prechecks", title: "Prechecks", category: "custom", configuration: { strict_inputs: true },
      steps: [
        step(1, "odd", { conditional_execution: "{-label} > 0", on_failure: "skip", output_variables: ["a"] }),
        step(2, "strict", { input_template: "{nothing}", on_failure: "warn", output_variables: ["b"] }),
        step(3, "last", { input_template: "done", output_variables: ["c"] }),
      ],
    })).isError, undefined);
    const r = await c.execute("failing-prechecks", { label: "text" });
    assert.equal(r.isError, undefined, textOf(r));
    const s = await c.status(idIn(r));
    assert.deepEqual(s.steps.map((x) => x.state), ["skipped", "warned", "done"]);
    assert.match(s.steps[0].reason, /^conditional_execution: [\s\S]*cannot negate a/);
    assert.match(s.steps[1].reason, /^input_template: /);
  });

  test("output_schema validates the final outputs; integer inputs are whole numbers", async () => {
    assert.equal((await c.create({
      name: "typed-outputs", title: "Typed outputs", category: "custom",
      steps: [step(1, "count", { input_template: "{n * 1.5}", output_variables: ["total"] })],
      input_schema: { type: "object", properties: { n: { type: "integer", required: true, minimum: 1 } } },
      output_schema: { type: "object", properties: { total: { type: "integer", description: "A whole total" } } },
    })).isError, undefined);
    const ok = await c.execute("typed-outputs", { n: 2 });
    assert.equal(ok.isError, undefined, textOf(ok));
    assert.match(textOf(ok), /- total: 3/);
    const bad = await c.execute("typed-outputs", { n: 3 });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /- Final Status: failed[\s\S]*the run's outputs do not match the chain's output_schema: total must be of type integer, got 4\.5/);
    const fraction = await c.execute("typed-outputs", { n: 2.5 });
    assert.equal(fraction.isError, true);
    assert.equal(textOf(fraction).split("\n")[0], "Error executing chain: Variable validation failed: n must be an integer, got 2.5");
    const badSchema = await c.create({ name: "bad-output-schema", title: "Bad output", category: "custom", steps: [step(1, "only")], output_schema: { type: "object", properties: { x: { type: "text" } } } });
    assert.equal(badSchema.isError, true);
    assert.match(textOf(badSchema), /output_schema\.properties\.x\.type is "text"; use string, number, integer, boolean, object, array or date/);
  });

  test("the seed's reply texts: Error executing chain with Troubleshooting, Estimated Duration for background runs", async () => {
    const unknown = await c.execute("no-such-chain", {});
    assert.equal(unknown.isError, true);
    assert.match(textOf(unknown), /^Error executing chain: Chain 'no-such-chain' not found\. Available chains: .*corporate-booking-workflow \(booking-management\)[\s\S]*\n\n\*\*Troubleshooting:\*\*\n- Verify chain name exists and is active[\s\S]*- Check input variables match chain schema[\s\S]*- Ensure all referenced instruction sets are available[\s\S]*- Check system resources and try again$/);
    provider.answer = () => ({ decide_out: "yes" });
    assert.equal((await c.create({ name: "estimated", title: "Estimated", category: "custom", steps: [ask(1, "decide"), step(2, "after", { input_template: "{decide_out}", output_variables: ["x"] })] })).isError, undefined);
    const bg = await c.execute("estimated", {}, { async_execution: true });
    assert.match(textOf(bg), /^Chain execution started asynchronously\.[\s\S]*- Total Steps: 2\n- Estimated Duration: 8010ms\n/);
  });

  test("skip_validation runs without the required inputs; save_intermediate_results: false keeps no step details", async () => {
    const strictInput = { name: "needs-input", title: "Needs input", category: "custom", steps: [step(1, "echo", { input_template: "[{who}]", output_variables: ["echoed"] })], input_schema: { type: "object", properties: { who: { type: "string", required: true } } } };
    assert.equal((await c.create(strictInput)).isError, undefined);
    const refused = await c.execute("needs-input", {});
    assert.match(textOf(refused), /^Error executing chain: Variable validation failed: who is required/);
    const skipped = await c.execute("needs-input", {}, { skip_validation: true });
    assert.equal(skipped.isError, undefined, textOf(skipped));
    assert.match(textOf(skipped), /- echoed: \[\]/);

    const lean = await c.execute("needs-input", { who: "Bo" }, { save_intermediate_results: false });
    assert.equal(lean.isError, undefined, textOf(lean));
    const s = await c.status(idIn(lean));
    assert.equal(s.status, "completed");
    assert.deepEqual(s.steps[0], { id: 1, name: "echo", state: "done", reason: null, attempts: 0, outputs: {} });
    const row = await (await w.mf.getD1Database("DB")).prepare("SELECT report FROM chain_executions WHERE id = ?1").bind(idIn(lean)).first();
    const kept = JSON.parse(row.report).steps[0];
    for (const detail of ["input", "outputs", "attempts"]) assert.equal(kept[detail], undefined, `${detail} is not kept`);
  });

  test("the run-wide timeout_ms wins over configuration.max_execution_time and ends the run timed_out", async () => {
    assert.equal((await c.create({ name: "slow-chain", title: "Slow chain", category: "custom", configuration: { max_execution_time: 300000 }, steps: [ask(1, "wait", { timeout_ms: 6000 }), step(2, "never")] })).isError, undefined);
    provider.answer = () => "hang";
    const r = await c.execute("slow-chain", {}, { timeout_ms: 5000 });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /- Final Status: timed_out/);
    const s = await c.status(idIn(r));
    assert.equal(s.status, "timed_out");
    assert.deepEqual(s.steps.map((x) => x.state), ["failed", "not_run"]);
    assert.match(s.steps[0].reason, /longer than 6000 ms/);
  });

  test("rollback_on_failure: false leaves a failed run's records; parallel_execution: false runs parallel steps one at a time", async () => {
    assert.equal((await c.create({
      name: "write-then-fail", title: "Write then fail", category: "custom",
      steps: [
        step(1, "save", { type: "database_operation", operation: { collection: "seed-tests", action: "create" }, input_template: '{{"id": {key|json}}}', output_variables: ["rec"] }),
        step(2, "boom", { type: "external_api", tool: "process_template", input_template: '{{"template_name": "no-such-template", "variables": {{}}}}', depends_on: [1] }),
      ],
    })).isError, undefined);
    const db = await w.mf.getD1Database("DB");
    const record = (id) => db.prepare("SELECT id FROM collection_records WHERE collection = 'seed-tests' AND id = ?1").bind(id).first();
    const kept = await c.execute("write-then-fail", { key: "kept" }, { rollback_on_failure: false });
    assert.equal(kept.isError, true);
    assert.doesNotMatch(textOf(kept), /\*\*Rollback:\*\*/);
    assert.ok(await record("kept"), "no rollback");
    const undone = await c.execute("write-then-fail", { key: "undone" });
    assert.match(textOf(undone), /\*\*Rollback:\*\*\n- step 1: rolled_back/);
    assert.equal(await record("undone"), null);

    assert.equal((await c.create({ name: "two-at-once", title: "Two at once", category: "custom", steps: [ask(1, "left", { parallel_execution: true }), ask(2, "right", { parallel_execution: true })] })).isError, undefined);
    for (const [parallel, overlap] of [[true, 2], [false, 1]]) {
      provider.maxInFlight = 0;
      provider.answer = (user) => ({ slow: user.includes("left") ? { left_out: 1 } : { right_out: 2 } });
      const r = await c.execute("two-at-once", {}, { parallel_execution: parallel });
      assert.equal(r.isError, undefined, textOf(r));
      assert.equal(provider.maxInFlight, overlap, `parallel_execution: ${parallel}`);
    }
  });

  test("conditional_logic steps set branch variables from conditions", async () => {
    assert.equal((await c.create({
      name: "branching", title: "Branching", category: "custom",
      steps: [
        step(1, "route", { type: "conditional_logic", input_template: "{{\"vip\": {(tier == 'vip')|json}, \"route\": {(tier == 'vip' ? 'concierge' : 'standard')|json}}}", output_variables: ["vip", "route"] }),
        step(2, "concierge", { input_template: "call {name}", conditional_execution: "{vip}", output_variables: ["call"] }),
      ],
    })).isError, undefined);
    const vip = await c.status(idIn(await c.execute("branching", { tier: "vip", name: "Ana" })));
    assert.deepEqual(vip.steps.map((x) => [x.state, x.outputs]), [["done", { vip: true, route: "concierge" }], ["done", { call: "call Ana" }]]);
    const std = await c.status(idIn(await c.execute("branching", { tier: "standard", name: "Bo" })));
    assert.deepEqual(std.steps.map((x) => x.state), ["done", "skipped"]);
    assert.equal(std.steps[0].outputs.route, "standard");
  });

  test("ending a signed-in user's MCP session does not stop their background run: it finishes, and a new session reads its result", async () => {
    const old = await connect(w, "rosa");
    assert.equal((await old.create({ name: "two-slow", title: "Two slow steps", category: "custom", steps: [ask(1, "first"), ask(2, "second", { depends_on: [1] })] })).isError, undefined);
    provider.answer = (user) => (user.includes("Decide first") ? { slow: { first_out: "one" } } : { second_out: "two" });
    const background = idIn(await old.execute("two-slow", {}, { async_execution: true }));
    const del = await fetch(w.mcpUrl, { method: "DELETE", headers: { "mcp-session-id": old.session, "mcp-protocol-version": LATEST, authorization: old.authorization } });
    assert.equal(del.status, 204);

    const later = await connect(w, "rosa");
    let done;
    for (let i = 0; i < 100; i++) {
      done = await later.status(background);
      if (done.status !== "running") break;
      assert.equal(done.note, undefined, "under way in the ended session's object, not left for resume_chain");
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(done.status, "completed", JSON.stringify(done));
    assert.deepEqual(done.steps.map((x) => x.outputs), [{ first_out: "one" }, { second_out: "two" }]);

    const other = await connect(w, "mallory");
    assert.match(textOf(await other.call("get_chain_status", { execution_id: background })), /not found/);
  });

  test("process_template's apply_security: false leaves markup as written; on (the default) it is shown as text", async () => {
    const created = await c.call("create_template", { template_definition: { name: "security-note", title: "Security note", category: "custom", content: "Say <b>hi</b> to {note}", variables_schema: { note: { type: "string", required: true } } }, creation_options: { overwrite_existing: true } });
    assert.equal(created.isError, undefined, textOf(created));
    const render = async (output_format, apply_security) => {
      const processing_options = { output_format, use_cache: false, ...(apply_security === undefined ? {} : { apply_security }) };
      const r = await c.call("process_template", { template_name: "security-note", variables: { note: "**Ana** <i>x</i>" }, processing_options });
      assert.equal(r.isError, undefined, textOf(r));
      return r.structuredContent.text;
    };
    assert.equal(await render("markdown", false), "Say <b>hi</b> to **Ana** <i>x</i>");
    for (const secure of [undefined, true]) assert.equal(await render("markdown", secure), "Say <b>hi</b> to \\*\\*Ana\\*\\* \\<i\\>x\\</i\\>");
    const open = await render("html", false);
    assert.match(open, /Say <b>hi<\/b> to \*\*Ana\*\* &lt;i&gt;x&lt;\/i&gt;/, "a value is escaped either way; the template's own HTML stays HTML");
    const safe = await render("html", undefined);
    assert.match(safe, /Say &lt;b&gt;hi&lt;\/b&gt; to \*\*Ana\*\* &lt;i&gt;x&lt;\/i&gt;/, "the template's raw HTML is shown as text");
  });
});

describe("runs belong to the user: context_metadata, other sessions", () => {
  let w;
  before(async () => {
    w = await startWorker({ JWT_SECRET: SECRET, ANONYMOUS_ACCESS: "true" }, { quiet: true });
    const c = await connect(w, "maria");
    const approval = { name: "user-approval", title: "User approval", category: "custom", steps: [step(1, "decide", { type: "instruction_set", instruction_set: "client-communication", input_template: "Approve {who}?", output_variables: ["ok"] }), step(2, "after", { input_template: "{who}:{ok}", output_variables: ["result"] })] };
    assert.equal((await c.create(approval)).isError, undefined);
  });
  after(() => w?.stop());

  test("context_metadata is stored with the run and list_chain_executions filters on it", async () => {
    const c = await connect(w, "maria");
    const meta = { agent_id: "kim_henderson", session_id: "Session-20250608-Santorini-Anniversary", client_id: "CL-1", source_channel: "whatsapp" };
    const first = idIn(await c.execute("user-approval", { who: "Ana" }, {}, { context_metadata: meta }));
    const second = idIn(await c.execute("user-approval", { who: "Bo" }, {}, { context_metadata: { agent_id: "sam", source_channel: "email" } }));
    const list = async (filter) => {
      const r = await c.call("list_chain_executions", filter);
      assert.equal(r.isError, undefined, textOf(r));
      return r.structuredContent;
    };
    const byKim = await list({ agent_id: "kim_henderson" });
    assert.deepEqual(byKim.executions.map((e) => e.execution_id), [first]);
    assert.deepEqual(byKim.executions[0].context_metadata, meta);
    assert.equal(byKim.executions[0].status, "awaiting_input");
    assert.equal(byKim.executions[0].this_session, true);
    assert.deepEqual((await list({ source_channel: "email" })).executions.map((e) => e.execution_id), [second]);
    assert.deepEqual((await list({ session_id: meta.session_id, client_id: "CL-1", chain_name: "user-approval", status: "awaiting_input" })).executions.map((e) => e.execution_id), [first]);
    assert.equal((await list({ client_id: "nobody" })).count, 0);
    const all = (await list({})).executions.map((e) => e.execution_id);
    assert.ok(all.includes(first) && all.includes(second));
    const bad = await c.call("list_chain_executions", { source_channel: "fax" });
    assert.equal(bad.isError, true);
  });

  test("a signed-in user sees, resumes and cancels from a new session the runs of an earlier one; others do not", async () => {
    const before = await connect(w, "maria");
    const a = idIn(await before.execute("user-approval", { who: "Cy" }));
    const b = idIn(await before.execute("user-approval", { who: "Di" }));
    const later = await connect(w, "maria");
    const listed = (await later.call("list_chain_executions", { chain_name: "user-approval", status: "awaiting_input" })).structuredContent.executions;
    const mine = listed.find((e) => e.execution_id === a);
    assert.ok(mine, JSON.stringify(listed));
    assert.equal(mine.this_session, false);
    assert.equal((await later.status(a)).status, "awaiting_input");

    const done = await later.call("resume_chain", { execution_id: a, outputs: { ok: "yes" } });
    assert.equal(done.isError, undefined, textOf(done));
    assert.match(textOf(done), /- result: Cy:yes/);
    const cancelled = await later.call("cancel_chain", { execution_id: b });
    assert.equal(cancelled.isError, undefined, textOf(cancelled));
    assert.equal(cancelled.structuredContent.status, "cancelled");

    for (const other of [await connect(w, "mallory"), await connect(w)]) {
      const r = await other.call("get_chain_status", { execution_id: a });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /not found/);
      assert.equal((await other.call("list_chain_executions", { chain_name: "user-approval" })).structuredContent.count, 0);
    }
  });

  test("a signed-in user's paused run outlives the session that started it", async () => {
    const old = await connect(w, "maria");
    const id = idIn(await old.execute("user-approval", { who: "Flo" }));
    const del = await fetch(w.mcpUrl, { method: "DELETE", headers: { "mcp-session-id": old.session, "mcp-protocol-version": LATEST, authorization: old.authorization } });
    assert.equal(del.status, 204);
    const later = await connect(w, "maria");
    assert.equal((await later.status(id)).status, "awaiting_input");
    const done = await later.call("resume_chain", { execution_id: id, outputs: { ok: "yes" } });
    assert.equal(done.isError, undefined, textOf(done));
    assert.match(textOf(done), /- result: Flo:yes/);
  });

  test("an anonymous caller's runs stay in their session", async () => {
    const anon = await connect(w);
    const id = idIn(await anon.execute("user-approval", { who: "Ed" }));
    assert.equal((await anon.call("list_chain_executions", {})).structuredContent.executions[0].execution_id, id);
    const again = await connect(w);
    assert.match(textOf(await again.call("get_chain_status", { execution_id: id })), /not found in this session/);
  });
});

test("docs/chains.md lists every error code a step produces", () => {
  const doc = readFileSync(join(root, "docs", "chains.md"), "utf8");
  const section = doc.slice(doc.indexOf("### Error codes"));
  for (const code of ["api_timeout", "vendor_unavailable", "model_unavailable", "model_output", "rate_limited", "conflict", "storage", "client"]) {
    assert.match(section, new RegExp(`\`${code}\``), code);
  }
});
