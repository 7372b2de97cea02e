// The README's tool table: every production tool has a row, and every row's example call works.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root, startWorker } from "./support/worker.js";
import { initialize, rpc } from "./support/mcp.js";

let w;
before(async () => (w = await startWorker()));
after(() => w?.stop());

const rows = readFileSync(join(root, "README.md"), "utf8")
  .split("\n")
  .map((line) => line.match(/^\| `([a-z0-9_]+)` \| .+ \| `(\{.*\})` \|$/))
  .filter(Boolean)
  .map(([, name, args]) => ({ name, args: JSON.parse(args.replaceAll("\\|", "|")) }));

test("every listed tool is documented in the README", async () => {
  const { session } = await initialize(w.mcpUrl);
  const listed = (await rpc(w.mcpUrl, session, "tools/list")).reply.result.tools.map((t) => t.name);
  assert.deepEqual(rows.map((r) => r.name).sort(), listed.sort());
});

test("every README example call succeeds", async () => {
  const { session } = await initialize(w.mcpUrl);
  let executionId = "$EXECUTION_ID";
  for (const { name, args } of rows) {
    // Examples may name the execution an earlier example started.
    const filled = JSON.parse(JSON.stringify(args).replaceAll("$EXECUTION_ID", executionId));
    const r = (await rpc(w.mcpUrl, session, "tools/call", { name, arguments: filled })).reply;
    executionId = r.result?.content?.[0]?.text?.match(/exec-[0-9a-f]{32}/)?.[0] ?? executionId;
    assert.ok(r.result, `${name}: ${JSON.stringify(r)}`);
    assert.notEqual(r.result.isError, true, `${name}: ${JSON.stringify(r.result)}`);
  }
});
