// 2026-07-28 tasks (the io.modelcontextprotocol/tasks extension, issue 19 item 1) through the
// official TypeScript SDK 2.x client (`@modelcontextprotocol/client` 2.4.0, installed beside
// `@modelcontextprotocol/server`). That client has no tasks API and refuses a task result: its
// 2026 codec accepts only `resultType` "complete" and "input_required" on every request
// (dist/src-*.mjs, `decodeResult`: "Unsupported result type 'task'"), and the error it raises
// carries no task id. It does send `tasks/get` and `tasks/cancel` through `client.request` with
// an explicit result schema (its era gate lets the two names SEP-2663 reuses through then). So:
// the extension is declared in the client's capabilities (a declaration, not a tasks client of
// our own), execute_chain on a chain the caller stored answers with a task the SDK refuses (this
// test notices when an SDK release accepts it), the task is found under its execution id with
// list_chain_executions, and then followed, guarded and cancelled through the SDK's requests.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import * as z from "zod";
import { startWorker } from "./support/worker.js";
import { settle } from "./support/tasks.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "sdk2-tasks-secret";
const EXTENSION = "io.modelcontextprotocol/tasks";
const UNKNOWN = "exec-00000000000000000000000000000000";
const step = (id, name, template, outputs, extra = {}) => ({ id, name, type: "data_transformation", input_variables: [], output_variables: outputs, input_template: template, ...extra });
const CHAINS = [
  {
    name: "sdk2-task-quick", title: "Quick task", category: "custom",
    steps: [step(1, "one", "{n * 2}", ["doubled"]), step(2, "two", "{doubled + 1}", ["plus_one"])],
    input_schema: { type: "object", properties: { n: { type: "number", required: true } } },
  },
  {
    // Step 2 asks a model; the server has none and a background run asks no client, so it pauses.
    name: "sdk2-task-approval", title: "Approval task", category: "custom",
    steps: [
      step(1, "prepare", "{name|upper}", ["shout"]),
      step(2, "decide", "Approve {shout}?", ["status"], { type: "instruction_set", instruction_set: "client-communication" }),
      step(3, "finish", "{shout}:{status}", ["result"]),
    ],
    input_schema: { type: "object", properties: { name: { type: "string", required: true } } },
  },
];
/** What tasks/get answers (the SDK has no schema of its own for it on 2026-07-28). */
const TaskSchema = z.looseObject({ taskId: z.string(), status: z.string() });

describe("2026-07-28 tasks through the TypeScript SDK 2.x client", () => {
  let w, a, b;
  /** A 2026-07-28 client signed in as `sub` that declares the tasks extension. */
  async function connect(sub) {
    const token = hs256({ sub, roles: [], aud: new URL("/mcp", w.url).href, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET);
    const client = new Client({ name: "sdk2-tasks-test", version: "1.0.0" }, { capabilities: { extensions: { [EXTENSION]: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(w.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    return client;
  }
  const request = (client, method, taskId, schema = TaskSchema) => client.request({ method, params: { taskId } }, schema).catch((e) => ({ error: { code: e.code, message: e.message } }));
  /** Starts `chain_name` as a task; the SDK refuses the CreateTaskResult, so the id comes from list_chain_executions. */
  async function start(client, chain_name, variables) {
    await assert.rejects(client.callTool({ name: "execute_chain", arguments: { chain_name, variables } }), (e) => e.code === "UNSUPPORTED_RESULT_TYPE" && /Unsupported result type 'task' for tools\/call/.test(e.message));
    const listed = (await client.callTool({ name: "list_chain_executions", arguments: { chain_name } })).structuredContent.executions;
    assert.equal(listed.length, 1, JSON.stringify(listed));
    return listed[0].execution_id;
  }

  before(async () => {
    w = await startWorker({ JWT_SECRET: SECRET }, { quiet: true });
    [a, b] = [await connect("sdk2-user-a"), await connect("sdk2-user-b")];
    assert.equal(a.getNegotiatedProtocolVersion(), "2026-07-28");
    for (const def of CHAINS) {
      const r = await a.callTool({ name: "create_chain", arguments: { chain_definition: def, creation_options: { overwrite_existing: true } } });
      assert.equal(r.isError ?? false, false, JSON.stringify(r));
    }
  });
  after(async () => {
    await a?.close();
    await b?.close();
    w?.stop();
  });

  test("execute_chain answers a declaring client with a task (which the SDK refuses); tasks/get follows it to its result", async () => {
    const id = await start(a, "sdk2-task-quick", { n: 4 });
    assert.match(id, /^exec-[0-9a-f]{32}$/);
    const done = await settle(() => request(a, "tasks/get", id));
    assert.equal(done.status, "completed", JSON.stringify(done));
    assert.match(done.result.content[0].text, /^Chain execution completed successfully\.[\s\S]*plus_one: 9/);
  });

  test("another caller's task id answers tasks/get and tasks/cancel like an unknown one; tasks/cancel cancels a paused task", async () => {
    const id = await start(a, "sdk2-task-approval", { name: "Ada" });
    const paused = await settle(() => request(a, "tasks/get", id));
    assert.equal(paused.status, "input_required", JSON.stringify(paused));
    const same = (x, idX, y, idY) => {
      for (const e of [x, y]) assert.equal(e.error?.code, -32602, JSON.stringify(e));
      assert.equal(x.error.message.replace(idX, "ID"), y.error.message.replace(idY, "ID"));
    };
    same(await request(b, "tasks/get", id), id, await request(b, "tasks/get", UNKNOWN), UNKNOWN);
    same(await request(b, "tasks/cancel", id, z.looseObject({})), id, await request(b, "tasks/cancel", UNKNOWN, z.looseObject({})), UNKNOWN);
    assert.equal((await request(a, "tasks/get", id)).status, "input_required", "the stranger changed nothing");
    assert.deepEqual(await request(a, "tasks/cancel", id, z.looseObject({})), {});
    assert.equal((await request(a, "tasks/get", id)).status, "cancelled");
    assert.deepEqual(await request(a, "tasks/cancel", id, z.looseObject({})), {}, "cancelling again is fine");
  });

  test("without a result schema the SDK refuses tasks/get on 2026-07-28 before sending it", () => {
    assert.throws(() => a.request({ method: "tasks/get", params: { taskId: UNKNOWN } }), (e) => e.code === "METHOD_NOT_SUPPORTED_BY_PROTOCOL_VERSION");
  });
});
