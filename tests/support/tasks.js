// What the MCP task tests share (chain_tasks, workflow_tasks): a 2025-11-25 SDK client that
// declares tasks, and polling a task until its status settles.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A 2025-11-25 SDK client of its own session at `mcpUrl`, sending `headers`, that declares tasks
 * (unless `tasks` is false) and the other `capabilities` given (sampling, elicitation).
 */
export async function tasksClient(mcpUrl, headers, { name, tasks = true, capabilities = {} }) {
  const client = new Client({ name, version: "1.0.0" }, { capabilities: { ...(tasks ? { tasks: { requests: {} } } : {}), ...capabilities } });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers } }));
  return client;
}

/** Polls until `get()` answers a task whose status `until` accepts (15 s at most). */
export async function settle(get, until = (t) => t.status !== "working") {
  for (let i = 0; i < 150; i++) {
    const t = await get();
    if (until(t)) return t;
    await sleep(100);
  }
  throw new Error("the task did not settle");
}
