// Chains are never confused deputies (issue 15), against the built Worker with real D1: a step acts
// with the rights both the chain's author and its runner hold (never the runner's identity when
// someone else wrote the chain), FlowMind's level gates hold inside chains, events never show what a
// step's tool marks x-sensitive, and the chain engine's faults and limits (security cases 21, 24, 25).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startWorker } from "./support/worker.js";
import { initialize, readSse, rpc } from "./support/mcp.js";
import { namedUsers } from "./support/domain.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "chain-security-secret";
const textOf = (r) => (r.content ?? []).map((c) => c.text).join("\n");
const step = (id, name, type, extra = {}) => ({ id, name, type, input_variables: [], output_variables: [], ...extra });
const chain = (name, steps, extra = {}) => ({ name, title: "A chain security test", category: "custom", steps, ...extra });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe("whose rights a step has", () => {
  let w, db, users, ceo;
  before(async () => {
    w = await startWorker({ JWT_SECRET: SECRET, ANONYMOUS_ACCESS: "true" }, { quiet: true });
    db = await w.mf.getD1Database("DB");
    users = namedUsers(w, SECRET);
    ceo = await db.prepare("SELECT id, ssn, salary_cents FROM hr_employees WHERE manager_id IS NULL").first();
  });
  after(() => w?.stop());

  const records = async (collection) =>
    (await db.prepare("SELECT id, data FROM collection_records WHERE collection = ?1").bind(collection).all()).results;
  // Public, so that another user can run it (who may read a chain is tests/ownership.test.js's
  // subject; here it is whose rights its steps have).
  const create = async (s, def) => {
    const r = await s.call("create_chain", { chain_definition: def, creation_options: { overwrite_existing: true, visibility: "public" } });
    assert.equal(r.isError, undefined, textOf(r));
  };
  /** get_employee on `who`, then the answer's SSN and salary stored in `collection`. */
  const peek = (name, collection) => chain(name, [
    step(1, "read_employee", "external_api", { tool: "get_employee", input_template: '{{"employee_id": {who|json}}}', input_variables: ["who"], output_variables: ["employee"] }),
    step(2, "store", "database_operation", {
      operation: { collection, action: "create" },
      input_template: '{{"id": {who|json}, "ssn": {employee.data.ssn|json}, "salary": {employee.data.salary|json}}}',
      output_variables: ["stored"],
    }),
  ]);

  test("a chain saved by a user with no roles cannot carry the CEO's SSN and salary out through an HR user who runs it", async () => {
    const mallory = await users.as("Marcus Johnson", []);
    const hr = await users.as("Alice Chen", ["hr-read", "hr-write"]);
    assert.equal((await mallory.call("get_employee", { employee_id: ceo.id })).structuredContent.status, "error", "the author cannot read the CEO");
    await create(mallory, peek("payroll-peek", "loot"));

    for (const who of [ceo.id, await users.idOf("Alice Chen")]) {
      const r = await hr.call("execute_chain", { chain_name: "payroll-peek", variables: { who } });
      assert.equal(r.isError, true, textOf(r));
      const text = textOf(r);
      assert.match(text, /Failed Step: read_employee/);
      assert.match(text, /chain steps act with the rights both the chain's author and the runner hold: the chain was saved by [0-9a-f-]{36} holding roles none, so this step acted with roles none \(missing hr-read, hr-write\) and as neither of you/);
      assert.ok(!text.includes(ceo.ssn), "the SSN is not in the answer");
      const id = text.match(/exec-[0-9a-f]{32}/)[0];
      const s = (await hr.call("get_chain_status", { execution_id: id })).structuredContent;
      assert.deepEqual(s.steps.map((x) => [x.name, x.state, x.attempts]), [["read_employee", "failed", 1], ["store", "not_run", 0]], "refused once, never retried");
    }
    assert.deepEqual(await records("loot"), [], "nothing reached the collection");
    const anywhere = await db.prepare("SELECT COUNT(*) AS n FROM collection_records WHERE data LIKE ?1").bind(`%${ceo.ssn}%`).first();
    assert.equal(anywhere.n, 0, "the SSN is in no record");
  });

  test("an HR author's chain run by another HR user works, with the rights both hold", async () => {
    const author = await users.as("Alice Chen", ["hr-read", "hr-write"]);
    const runner = await users.as("Eve Thompson", ["hr-read", "hr-write", "executive"]);
    await create(author, peek("hr-lookup", "hr-notes"));
    const r = await runner.call("execute_chain", { chain_name: "hr-lookup", variables: { who: ceo.id } });
    assert.equal(r.isError, undefined, textOf(r));
    const [stored] = await records("hr-notes");
    assert.equal(stored.id, ceo.id);
    assert.deepEqual(JSON.parse(stored.data), { ssn: ceo.ssn, salary: ceo.salary_cents / 100 });

    // An author who may only read (hr-read): the runner's hr-write does not unmask for the step.
    const reader = await users.as("Frank Davis", ["hr-read"]);
    await create(reader, peek("hr-lookup-masked", "hr-masked"));
    const masked = await runner.call("execute_chain", { chain_name: "hr-lookup-masked", variables: { who: ceo.id } });
    assert.equal(masked.isError, undefined, textOf(masked));
    const [m] = await records("hr-masked");
    assert.deepEqual(JSON.parse(m.data), { ssn: "*** (Hidden)", salary: "*** (Hidden)" });
  });

  test("one's own chain acts as oneself, with the roles held both when saving and now", async () => {
    const frank = await users.idOf("Frank Davis");
    const before = await users.as("Frank Davis", []);
    await create(before, peek("my-record", "mine"));
    const later = await users.as("Frank Davis", ["hr-read"]);
    const r = await later.call("execute_chain", { chain_name: "my-record", variables: { who: frank } });
    assert.equal(r.isError, undefined, textOf(r));
    const [own] = await records("mine");
    assert.equal(JSON.parse(own.data).ssn, "*** (Hidden)", "one's own SSN is masked for oneself, as in a direct call");
    assert.notEqual(JSON.parse(own.data).salary, "*** (Hidden)", "one's own salary is one's own to see");
  });

  test("a tool the runner may use but the author may not is refused, naming the missing roles", async () => {
    const manager = await users.as("Nina Patel", ["manager"]);
    await create(manager, chain("reviews", [step(1, "reviews", "external_api", { tool: "get_performance_reviews", input_template: "{{}}", output_variables: ["reviews"] })]));
    const hr = await users.as("Alice Chen", ["hr-read", "hr-write"]);
    const r = await hr.call("execute_chain", { chain_name: "reviews", variables: {} });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /step 'reviews': tool get_performance_reviews needs one of the roles hr-write, executive, manager, which this step lacks: chain steps act with the rights both the chain's author and the runner hold: the chain was saved by [0-9a-f-]{36} holding roles manager, so this step acted with roles none \(missing hr-read, hr-write\)/);
  });

});

describe("FlowMind's level gates inside chains", () => {
  let w, db, users;
  before(async () => {
    w = await startWorker({ JWT_SECRET: SECRET, ANONYMOUS_ACCESS: "true", FLOWMIND_LEVELS: "2,4" }, { quiet: true });
    db = await w.mf.getD1Database("DB");
    users = namedUsers(w, SECRET);
  });
  after(() => w?.stop());

  const flowmindSteps = (name) => chain(name, [
    step(1, "help", "external_api", { tool: "get_help", input_template: '{{"help_type": "concept", "specific_question": "levels"}}', output_variables: ["help"] }),
    step(2, "contexts", "external_api", { tool: "list_available_contexts", input_template: "{{}}", output_variables: ["contexts"], depends_on: [1] }),
  ]);
  // Public, so that another user can run it (who may read a chain is tests/ownership.test.js's
  // subject; here it is whose rights its steps have).
  const create = async (s, def) => {
    const r = await s.call("create_chain", { chain_definition: def, creation_options: { overwrite_existing: true, visibility: "public" } });
    assert.equal(r.isError, undefined, textOf(r));
  };
  const run = async (s, name) => {
    const r = await s.call("execute_chain", { chain_name: name, variables: {} });
    const id = textOf(r).match(/exec-[0-9a-f]{32}/)[0];
    return { r, s: (await s.call("get_chain_status", { execution_id: id })).structuredContent };
  };
  const locked = /step 'contexts': Tool list_available_contexts is locked: it needs FlowMind level advanced and you are beginner .*Chain steps meet FlowMind's levels as direct calls do, at the runner's level \(and the author's, when someone else saved the chain\); calls made by chain steps do not count towards a level\./;

  test("a beginner's chain step may use a beginner's tools only, as a direct call", async () => {
    const anon = await users.as(null);
    await create(anon, flowmindSteps("flowmind-steps"));
    const direct = await anon.call("list_available_contexts", {});
    assert.equal(direct.isError, true);
    assert.match(textOf(direct), /^Tool list_available_contexts is locked/);
    const { r, s } = await run(anon, "flowmind-steps");
    assert.equal(r.isError, true, textOf(r));
    assert.match(textOf(r), /Failed Step: contexts/);
    assert.match(textOf(r), locked);
    assert.equal(s.steps[0].state, "done", "a beginner's tool runs");
    assert.equal(s.steps[1].attempts, 1, "a locked tool is not retried");
  });

  test("an advanced user's own chain may use every FlowMind tool; a beginner's chain run by them may not", async () => {
    const eve = await users.as("Eve Thompson", []);
    await db.prepare("INSERT INTO flowmind_progress (caller, successes, updated_at) VALUES (?1, 10, 0)").bind(await users.idOf("Eve Thompson")).run();
    await create(eve, flowmindSteps("advanced-steps"));
    const own = await run(eve, "advanced-steps");
    assert.equal(own.r.isError, undefined, textOf(own.r));
    assert.equal(own.s.steps[1].state, "done");

    const beginner = await users.as("Sarah Kim", []);
    await create(beginner, flowmindSteps("beginner-steps"));
    const theirs = await run(eve, "beginner-steps");
    assert.equal(theirs.r.isError, true);
    assert.match(textOf(theirs.r), locked);
    const count = await db.prepare("SELECT successes FROM flowmind_progress WHERE caller = ?1").bind(await users.idOf("Eve Thompson")).first();
    assert.equal(count.successes, 10, "calls made by chain steps do not count");
  });
});

describe("what events show of a chain step", () => {
  let w, db, aud, ids, nestedResult;
  before(async () => {
    w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
    db = await w.mf.getD1Database("DB");
    aud = new URL("/mcp", w.url).href;
    const users = namedUsers(w, SECRET);
    ids = { alice: await users.idOf("Alice Chen"), sarah: await users.idOf("Sarah Kim") };
    const author = await users.as("Alice Chen", ["hr-write"]);
    const r = await author.call("create_chain", { chain_definition: chain("raise", [
      step(1, "raise", "external_api", { tool: "update_salary", input_template: `{{"employee_id": "${ids.sarah}", "new_salary": 123457}}`, output_variables: ["answer"] }),
      step(2, "note", "data_transformation", { input_template: "{answer|json}", output_variables: ["note"] }),
    ]) });
    assert.equal(r.isError, undefined, textOf(r));
  });
  after(() => w?.stop());

  test("a chain step calling update_salary, confirmed in the client, shows no salary in any event of its session", async () => {
    const old = (await db.prepare("SELECT salary_cents FROM hr_employees WHERE id = ?1").bind(ids.sarah).first()).salary_cents;
    const headers = { authorization: `Bearer ${hs256({ sub: ids.alice, roles: ["hr-write"], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` };
    const client = new Client({ name: "chain-security", version: "1" }, { capabilities: { elicitation: {} } });
    const asked = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return { action: "accept", content: { approve: true } };
    });
    const transport = new StreamableHTTPClientTransport(new URL(w.mcpUrl), { requestInit: { headers } });
    await client.connect(transport);
    const r = await client.callTool({ name: "execute_chain", arguments: { chain_name: "raise", variables: {} } });
    assert.equal(r.isError, undefined, textOf(r));
    assert.equal(asked.length, 1, "the user was asked");
    assert.equal((await db.prepare("SELECT salary_cents FROM hr_employees WHERE id = ?1").bind(ids.sarah).first()).salary_cents, 12345700);
    const id = textOf(r).match(/exec-[0-9a-f]{32}/)[0];
    await client.callTool({ name: "get_chain_status", arguments: { execution_id: id } });

    const all = await readSse(await fetch(new URL(`/sessions/${transport.sessionId}/events`, w.url), { headers: { accept: "text/event-stream", "last-event-id": "g-0", ...headers } }), { timeoutMs: 3000 });
    await transport.terminateSession();
    await client.close();
    const tools = all.filter((e) => ["tool_call", "tool_result", "error"].includes(e.event)).map((e) => ({ event: e.event, ...JSON.parse(e.data) }));
    const steps = tools.filter((e) => e.tool.startsWith("raise/"));
    assert.deepEqual(steps.map((e) => [e.event, e.tool]), [["tool_call", "raise/raise"], ["tool_result", "raise/raise"], ["tool_call", "raise/note"], ["tool_result", "raise/note"]]);
    assert.deepEqual(JSON.parse(steps[0].input), { employee_id: ids.sarah, new_salary: "*** (Hidden)" }, "arguments through update_salary's redaction");
    assert.deepEqual(steps[1].result, { answer: "*** (Hidden)" });
    assert.equal(steps[2].input, "*** (Hidden)", "a step reading a hidden value shows no input");
    assert.deepEqual(steps[3].result, { note: "*** (Hidden)" });
    const nested = tools.find((e) => e.event === "tool_call" && e.tool === "update_salary");
    assert.equal(nested.arguments.new_salary, "*** (Hidden)");

    const salaries = [/123,?457/, new RegExp(String(old / 100).replace(/\B(?=(\d{3})+(?!\d))/g, ",?"))];
    const leaks = (e) => salaries.some((re) => re.test(JSON.stringify(e)));
    // The chain's own events, its answers (execute_chain and get_chain_status results) and the
    // nested call's arguments.
    assert.deepEqual(tools.filter((e) => !(e.event === "tool_result" && e.tool === "update_salary")).filter(leaks), []);
    nestedResult = tools.find((e) => e.event === "tool_result" && e.tool === "update_salary");
  });

  // The nested call's own tool_result is the executor's, redacted through update_salary's output
  // schema (x-sensitive on outputs: issue 15 item 5, branch `session`).
  test("the nested update_salary result shows no salary either", () => {
    assert.ok(nestedResult, "the run's test saw the nested result");
    assert.doesNotMatch(JSON.stringify(nestedResult), /123,?457/);
  });
});

describe("faults and limits of runs (security cases 21, 24, 25)", () => {
  let w, db, provider, session;
  const call = async (name, args) => (await rpc(w.mcpUrl, session, "tools/call", { name, arguments: args })).reply.result;
  const status = async (execution_id) => (await call("get_chain_status", { execution_id })).structuredContent;
  before(async () => {
    provider = await modelProvider();
    w = await startWorker({ MODEL_PROVIDER_URL: provider.url, MODEL_PROVIDER_KEY: "k", JOB_LEASE_SECONDS: "1" }, { quiet: true });
    db = await w.mf.getD1Database("DB");
    ({ session } = await initialize(w.mcpUrl));
  });
  after(async () => {
    await w?.stop();
    provider?.server.closeAllConnections();
    provider?.server.close();
  });

  test("case 21: a step that fails twice then succeeds takes 3 attempts, each after its backoff", async () => {
    provider.mode = (n) => (n <= 2 ? "unavailable" : "answer");
    const r = await call("create_chain", { chain_definition: chain("flaky", [
      step(1, "ask", "instruction_set", { instruction_set: "client-communication", input_template: "Approve?", output_variables: ["status", "note"], retry_config: { max_retries: 3, backoff_ms: 200, retry_on_errors: ["model_unavailable"] } }),
    ]) });
    assert.equal(r.isError, undefined, textOf(r));
    const out = await call("execute_chain", { chain_name: "flaky", variables: {} });
    assert.equal(out.isError, undefined, textOf(out));
    const row = await db.prepare("SELECT report FROM chain_executions WHERE id = ?1").bind(textOf(out).match(/exec-[0-9a-f]{32}/)[0]).first();
    const attempts = JSON.parse(row.report).steps[0].attempts;
    assert.equal(attempts.length, 3);
    assert.deepEqual(attempts.map((a) => a.error?.message ?? null), ["the model provider answered HTTP 503", "the model provider answered HTTP 503", null]);
    // The waits are backoff_ms × 2^(n-1) plus up to 25 % jitter: at least 200 and 400 ms.
    assert.ok(attempts[1].started_ms - (attempts[0].started_ms + attempts[0].duration_ms) >= 200);
    assert.ok(attempts[2].started_ms - (attempts[1].started_ms + attempts[1].duration_ms) >= 400);
  });

  test("case 24: a D1 write failing when a background run ends leaves it to the watchdog, which finishes it without re-running completed steps", async () => {
    await call("create_chain", { chain_definition: chain("journaled", [
      step(1, "save", "database_operation", { operation: { collection: "fault-test", action: "create" }, input_template: '{{"id": "once", "n": 1}}', output_variables: ["saved"] }),
      step(2, "double", "data_transformation", { input_template: "{saved.n * 2}", output_variables: ["doubled"] }),
    ]) });
    // The injected fault: D1 refuses to store any final status of an execution.
    await db.prepare("CREATE TRIGGER inject_d1_failure BEFORE UPDATE OF status ON chain_executions WHEN NEW.status <> 'running' BEGIN SELECT RAISE(ABORT, 'injected D1 failure'); END").run();
    const started = await call("execute_chain", { chain_name: "journaled", variables: {}, execution_options: { async_execution: true } });
    const id = textOf(started).match(/exec-[0-9a-f]{32}/)[0];
    // The steps ran and were checkpointed; only the final write failed, so the record still says running.
    for (let i = 0; i < 100 && (await status(id)).steps[1].state !== "done"; i++) await sleep(100);
    assert.equal((await status(id)).status, "running");
    await db.prepare("DROP TRIGGER inject_d1_failure").run();
    let s;
    for (let i = 0; i < 150; i++) {
      s = await status(id);
      if (s.status !== "running") break;
      await sleep(200);
    }
    assert.equal(s.status, "completed", JSON.stringify(s));
    assert.ok(s.runs >= 2, "the watchdog ran it again");
    assert.deepEqual(s.steps.map((x) => x.attempts), [1, 1], "completed steps were not executed again");
    const rows = await db.prepare("SELECT data FROM collection_records WHERE collection = 'fault-test'").all();
    assert.deepEqual(rows.results.map((x) => JSON.parse(x.data)), [{ n: 1 }]);
  });

  test("case 25: 1025 steps or 10,000 retries are refused before anything is stored; a 2 MiB step output fails its run cleanly", async () => {
    const many = Array.from({ length: 1025 }, (_, i) => step(i + 1, `step_${i + 1}`, "data_transformation", { input_template: "x", output_variables: [`v${i + 1}`] }));
    const r = await call("create_chain", { chain_definition: chain("too-many", many) });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /\/chain_definition\/steps: maximum 20 items required, but got 1025 items/);
    // Fan-out is bounded by the definition: at most 20 steps of 1 + 10 attempts, one call each.
    const retries = await call("create_chain", { chain_definition: chain("fan-out", [
      step(1, "call", "external_api", { tool: "get_mode_indicator", retry_config: { max_retries: 10000 } }),
    ]) });
    assert.equal(retries.isError, true);
    assert.match(textOf(retries), /retry_config\/max_retries: must be <=10, but got 10000/);
    assert.equal((await db.prepare("SELECT COUNT(*) AS n FROM execution_chains WHERE name IN ('too-many', 'fan-out')").first()).n, 0);

    provider.mode = "huge";
    const big = await call("create_chain", { chain_definition: chain("big-output", [
      step(1, "grow", "instruction_set", { instruction_set: "client-communication", input_template: "Grow", output_variables: ["status", "note"], retry_config: { max_retries: 2, backoff_ms: 100 } }),
    ]) });
    assert.equal(big.isError, undefined, textOf(big));
    const out = await call("execute_chain", { chain_name: "big-output", variables: {} });
    assert.equal(out.isError, true);
    assert.match(textOf(out), /step 'grow' produced 20971\d\d bytes of outputs; a step's outputs are limited to 262144 bytes \(the execution's record keeps them\)/);
    assert.ok(textOf(out).length < 10_000, "the refusal does not carry the output");
    const id = textOf(out).match(/exec-[0-9a-f]{32}/)[0];
    const row = await db.prepare("SELECT status, length(report) AS size, report FROM chain_executions WHERE id = ?1").bind(id).first();
    assert.equal(row.status, "failed");
    assert.ok(row.size < 10_000, `the record stays small (${row.size} bytes)`);
    assert.equal(JSON.parse(row.report).steps[0].attempts.length, 1, "a refused output is not retried");

  });

  test("case 25: outputs a client supplies to a paused step are bounded the same way", async () => {
    const plain = await startWorker({}, { quiet: true });
    try {
      const { session: s } = await initialize(plain.mcpUrl);
      const call2 = async (name, args) => (await rpc(plain.mcpUrl, s, "tools/call", { name, arguments: args })).reply.result;
      await call2("create_chain", { chain_definition: chain("paused-big", [
        step(1, "ask", "instruction_set", { instruction_set: "client-communication", input_template: "Say", output_variables: ["reply"] }),
      ]) });
      const paused = await call2("execute_chain", { chain_name: "paused-big", variables: {} });
      const pid = textOf(paused).match(/exec-[0-9a-f]{32}/)[0];
      const resumed = await call2("resume_chain", { execution_id: pid, outputs: { reply: "x".repeat(300 * 1024) } });
      assert.equal(resumed.isError, true);
      assert.match(textOf(resumed), /^Outputs rejected: they are 3072\d\d bytes of JSON; a step's outputs are limited to 262144 bytes/);
      assert.equal((await call2("get_chain_status", { execution_id: pid })).structuredContent.status, "awaiting_input", "still paused, nothing kept");
    } finally {
      await plain.stop();
    }
  });
});

/** A stand-in for an OpenAI-compatible model provider: answers or fails as told. */
function modelProvider() {
  const p = { requests: [], mode: "answer" };
  p.server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      p.requests.push(JSON.parse(body));
      const mode = typeof p.mode === "function" ? p.mode(p.requests.length) : p.mode;
      if (mode === "unavailable") return res.writeHead(503).end("busy");
      const answer = mode === "huge" ? { status: "x".repeat(2 * 1024 * 1024), note: "ok" } : { status: "approved", note: "ok" };
      res.writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ choices: [{ message: { role: "assistant", content: JSON.stringify(answer) } }] }));
    });
  });
  return new Promise((resolve) => p.server.listen(0, "127.0.0.1", () => {
    p.url = `http://127.0.0.1:${p.server.address().port}/v1/chat/completions`;
    resolve(p);
  }));
}
