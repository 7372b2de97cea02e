// The official Python MCP SDK (PyPI `mcp`, pinned in scripts/toolchain.sh, which installs it in
// .toolchain/python) as a plain client of both eras (a 2025-11-25 session and 2026-07-28), run
// through tests/support/python_client.py: the server's streams carry nothing it does not know (no
// "Unknown SSE event" or other warning on its stderr), progress reaches it, and it sees the same
// tools in both eras. Without that virtual environment the tests are skipped with the reason,
// except under CI=true, where they fail: scripts/toolchain.sh is meant to have made it.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { initialize, readSse, rpc } from "./support/mcp.js";
import { missing, pythonClient } from "./support/python.js";
import { hs256 } from "../scripts/token.js";

/** The SDK's modes: a 2025 session, 2026-07-28 pinned, and its default (discover, which picks 2026-07-28). */
const MODES = ["legacy", "2026-07-28", "auto"];

describe("the Python SDK as a client of both eras", { skip: missing ?? false }, () => {
  let w;
  // A secret as `npm run dev` has one: it seals anonymous 2026-07-28 callers' ids.
  before(async () => (w = await startWorker({ MCP_CATALOG: "conformance", TOOLS_PAGE_SIZE: "4", JWT_SECRET: "python-sdk-secret" })));
  after(() => w?.stop());

  for (const mode of MODES) {
    test(`${mode}: a call with progress and one with tool events, and not one warning`, async () => {
      const r = await pythonClient("surface", w.mcpUrl, mode);
      assert.equal(r.version, mode === "legacy" ? "2025-11-25" : "2026-07-28");
      assert.deepEqual(r.progress, [0, 50, 100], "progress reached the SDK");
      assert.equal(r.result.isError ?? false, false, JSON.stringify(r.result));
      assert.ok(r.pages > 1, "tools/list was paged");
      assert.equal(r.stable, true, "listing again, and the same cursor again, gives the same pages");
      assert.equal(r.stderr, "", "the SDK printed no warning (an unknown SSE event would be one)");
    });
  }

  test("the GET stream of a session carries JSON-RPC messages only; its tool events are on /sessions/:id/events", async () => {
    const { session } = await initialize(w.mcpUrl);
    await rpc(w.mcpUrl, session, "tools/call", { name: "get_mode_indicator", arguments: {} });
    await rpc(w.mcpUrl, session, "tools/call", { name: "switch_mode", arguments: { mode: "bogus" } });
    // From the first event on: a replay, so whatever the log holds for the stream is read.
    const headers = { accept: "text/event-stream", "mcp-session-id": session, "last-event-id": "g-0" };
    const mcp = (await readSse(await fetch(w.mcpUrl, { headers }), { timeoutMs: 1500 })).filter((e) => e.data);
    assert.deepEqual(mcp, [], "no tool_call, tool_result or error event on the MCP stream");
    const dashboard = await fetch(new URL(`/sessions/${session}/events`, w.url), { headers: { accept: "text/event-stream", "last-event-id": "g-0" } });
    const events = (await readSse(dashboard, { max: 5, timeoutMs: 3000 })).filter((e) => e.data);
    assert.deepEqual(events.map((e) => e.event), ["tool_call", "tool_result", "tool_call", "error"]);
  });
});

describe("notifications/tools/list_changed reaches the Python SDK in both eras", { skip: missing ?? false }, () => {
  const SECRET = "python-sdk-levels";
  let w, aud;
  // The first successful FlowMind call takes a signed-in user to the next level, so their tool list changes.
  before(async () => {
    w = await startWorker({ JWT_SECRET: SECRET, FLOWMIND_LEVELS: "1,50" }, { quiet: true });
    aud = new URL("/mcp", w.url).href;
  });
  after(() => w?.stop());
  const help = { name: "get_help", args: JSON.stringify({ help_type: "error", context: { error_message: "INVALID_VARIABLES" } }) };

  for (const [mode, user] of [["legacy", "00000000-0000-4000-8000-00000000aa01"], ["2026-07-28", "00000000-0000-4000-8000-00000000aa02"]]) {
    test(`${mode}: a call that reaches a new level announces the change (${mode === "legacy" ? "on the call's stream" : "on subscriptions/listen"})`, async () => {
      const token = hs256({ sub: user, roles: [], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET);
      const r = await pythonClient("list_changed", w.mcpUrl, mode, { token, args: [help] });
      assert.deepEqual(r.errors, [false], "the FlowMind call succeeded");
      if (mode !== "legacy") assert.equal(r.honoured, true, "the listen stream was acknowledged toolsListChanged");
      assert.equal(r.changes, 1);
      assert.equal(r.stderr, "");
    });
  }
});
