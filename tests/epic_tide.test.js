// EPIC-TIDE (seed 004) through MCP against the built Worker with real D1: the usage flow of
// docs/epic-tide.md through the official SDK client, every error code, the validation rules,
// server-generated fields, concurrent starts and updates, patterns over several tides, history,
// and the vocabulary resource.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { root, startWorker } from "./support/worker.js";
import { initialize, rpc } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "epic-tide-secret";

let w;
let client;
const clients = [];
before(async () => {
  w = await startWorker({ RATE_LIMITS: "*=1000/1m", JWT_SECRET: SECRET });
  client = await connect();
});
after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await w?.stop();
});

/** An SDK client: anonymous, or signed in as user `sub` (records belong to their owner). */
async function connect(sub) {
  const c = new Client({ name: "epic-tide-test", version: "1.0.0" });
  const aud = new URL("/mcp", w.url).href;
  const headers = sub ? { authorization: `Bearer ${hs256({ sub, roles: [], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` } : {};
  await c.connect(new StreamableHTTPClientTransport(new URL(w.mcpUrl), { requestInit: { headers } }));
  // Listing the tools makes the SDK check every structuredContent against its outputSchema.
  let cursor;
  do cursor = (await c.listTools(cursor ? { cursor } : {})).nextCursor;
  while (cursor);
  clients.push(c);
  return c;
}

/** Calls a tool through the SDK client (which checks structuredContent against the outputSchema). */
const call = (name, args, via = client) => via.callTool({ name: `epic-tide-${name}`, arguments: args });
/** Calls a tool that must succeed; returns its structured content. */
async function ok(name, args, via) {
  const r = await call(name, args, via);
  assert.notEqual(r.isError, true, `${name}: ${r.content?.[0]?.text}`);
  return r.structuredContent;
}
/** Calls a tool that must be refused with `code`; returns the error object. */
async function refused(name, args, code) {
  const r = await call(name, args);
  assert.equal(r.isError, true, `${name} should fail: ${JSON.stringify(r.structuredContent)}`);
  assert.equal(r.structuredContent?.error?.code, code, r.content[0].text);
  assert.ok(r.content[0].text.startsWith(`${code}: `), r.content[0].text);
  return r.structuredContent.error;
}
/** Calls a tool whose arguments break its input schema; returns the error text. */
async function invalid(name, args) {
  const r = await call(name, args);
  assert.equal(r.isError, true, `${name} should be refused: ${JSON.stringify(r.structuredContent)}`);
  assert.equal(r.structuredContent, undefined);
  return r.content[0].text;
}

let unique = 0;
/** A work saved (by `via`, the default client unless given) under a name no other test uses; returns its name. */
async function work(label = "work", via = undefined) {
  const s = await ok("save-work", { what: `${label} ${++unique}`, how: ["do it"], metrics: ["done"] }, via);
  return s.name;
}
/** A path of fresh works, saved by `via`; returns { name, works }. */
async function path({ works = 3, domain, tags, metrics = ["Shipped"], via } = {}) {
  const names = [];
  for (let i = 0; i < works; i++) names.push(await work("work", via));
  const s = await ok("create-path", { what: `Path ${++unique}`, works: names, metrics, ...(domain ? { domain } : {}), ...(tags ? { tags } : {}) }, via);
  return { name: s.name, works: names };
}

/** Whether `got` has everything `want` has: objects by key, arrays item by item and of equal length. */
function assertHas(got, want, at = "") {
  if (Array.isArray(want)) {
    assert.ok(Array.isArray(got), `${at}: ${JSON.stringify(got)}`);
    assert.equal(got.length, want.length, `${at}: ${JSON.stringify(got)}`);
    want.forEach((v, i) => assertHas(got[i], v, `${at}[${i}]`));
  } else if (want && typeof want === "object") {
    for (const [k, v] of Object.entries(want)) assertHas(got?.[k], v, `${at}.${k}`);
  } else {
    assert.deepEqual(got, want, at);
  }
}

test("docs/epic-tide.md: the usage flow answers as the page says", async () => {
  const steps = readFileSync(join(root, "docs", "epic-tide.md"), "utf8")
    .split("\n")
    .map((line) => line.match(/^\| (\d+) \| `(epic-tide-[a-z-]+)` \| `(\{.*\})` \| `?([^`|]+)`? \|$/))
    .filter(Boolean);
  assert.equal(steps.length, 14);
  const saved = await connect();
  let tideId = "$TIDE_ID";
  for (const [, step, name, args, answer] of steps) {
    const r = await saved.callTool({ name, arguments: JSON.parse(args.replaceAll("$TIDE_ID", tideId)) });
    if (/^[A-Z_]+$/.test(answer)) {
      assert.equal(r.structuredContent?.error?.code, answer, `step ${step}: ${r.content[0].text}`);
      continue;
    }
    assert.notEqual(r.isError, true, `step ${step}: ${r.content[0].text}`);
    assertHas(r.structuredContent, JSON.parse(answer), `step ${step}`);
    if (name === "epic-tide-start-tide") tideId = r.structuredContent.tide_id;
  }
});

test("the seed's usage flow as written names the two works it never saved", async () => {
  await ok("save-work", { what: "Setup database seed", how: ["Create schema", "Run migrations"], metrics: ["Database accessible"] });
  const e = await refused("create-path", { what: "Build API seed", works: ["setup-env-seed", "setup-database-seed", "create-api-seed"], metrics: ["API running"] }, "INVALID_SEQUENCE");
  assert.deepEqual(e.unknown_works, ["setup-env-seed", "create-api-seed"]);
  assert.match(e.message, /Save each with epic-tide-save-work first/);
});

describe("server-generated fields", () => {
  test("ids, versions, attempts, timestamps and durations come from the server", async () => {
    const before = Date.now();
    const s = await ok("save-work", { what: "Generated fields", how: ["a"], metrics: ["b"] });
    assert.match(s.work_id, /^work-[0-9a-f]{32}$/);
    assert.equal(s.version, 1);
    assert.equal(s.created_at, s.updated_at);
    assert.ok(Math.abs(Date.parse(s.created_at) - before) < 60_000, s.created_at);
    const p = await ok("create-path", { what: "Generated path", works: [s.name], metrics: ["m"] });
    assert.match(p.path_id, /^path-[0-9a-f]{32}$/);
    const t = await ok("start-tide", { path_name: p.name });
    assert.match(t.tide_id, /^tide-[0-9a-f]{32}$/);
    assert.equal(t.attempt, 1);
    assert.match(t.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const u = await ok("update-execution", { tide_id: t.tide_id, work_name: s.name, status: "complete" });
    assert.ok(Number.isInteger(u.duration_ms) && u.duration_ms >= 0);
    const c = await ok("complete-tide", { tide_id: t.tide_id, outcome: "success" });
    assert.ok(Date.parse(c.completed_at) >= Date.parse(t.started_at));
    assert.ok(Number.isInteger(c.duration_ms) && c.duration_ms >= 0);
    assert.equal(c.duration_ms, Date.parse(c.completed_at) - Date.parse(t.started_at));
    assert.equal((await ok("start-tide", { path_name: p.name })).attempt, 2);
  });

  test("a field the server sets is refused by name, on every tool", async () => {
    const cases = [
      ["save-work", { what: "x", how: ["a"], metrics: ["b"], work_id: "w1" }, "work_id"],
      ["save-work", { what: "x", how: ["a"], metrics: ["b"], created_at: "2026-01-01" }, "created_at"],
      ["save-work", { what: "x", how: ["a"], metrics: ["b"], version: 3 }, "version"],
      ["create-path", { what: "x", works: ["a"], metrics: ["b"], path_id: "p1" }, "path_id"],
      ["start-tide", { path_name: "x", attempt: 2 }, "attempt"],
      ["start-tide", { path_name: "x", tide_id: "t" }, "tide_id"],
      ["start-tide", { path_name: "x", started_at: "now" }, "started_at"],
      ["update-execution", { tide_id: "t", work_name: "a", status: "complete", duration: 5 }, "duration"],
      ["update-execution", { tide_id: "t", work_name: "a", status: "complete", updated_at: "now" }, "updated_at"],
      ["complete-tide", { tide_id: "t", outcome: "success", completed_at: "now" }, "completed_at"],
      ["query-patterns", { pattern_id: "x" }, "pattern_id"],
      ["get-history", { path_name: "x", tides: [] }, "tides"],
    ];
    for (const [name, args, field] of cases) {
      const text = await invalid(name, args);
      assert.match(text, new RegExp(`Invalid arguments for tool epic-tide-${name}: .*${field}`), text);
    }
  });
});

describe("validation rules", () => {
  const long = (n) => "x".repeat(n);
  test("required strings may not be empty or blank", async () => {
    for (const [name, args, at] of [
      ["save-work", { what: "", how: ["a"], metrics: ["b"] }, "/what"],
      ["save-work", { what: "   ", how: ["a"], metrics: ["b"] }, "/what"],
      ["save-work", { what: "ok", how: [""], metrics: ["b"] }, "/how/0"],
      ["save-work", { what: "ok", how: ["a"], metrics: [" "] }, "/metrics/0"],
      ["create-path", { what: "", works: ["a"], metrics: ["b"] }, "/what"],
      ["start-tide", { path_name: "" }, "/path_name"],
      ["update-execution", { tide_id: "", work_name: "a", status: "complete" }, "/tide_id"],
      ["update-execution", { tide_id: "t", work_name: "a", status: "" }, "/status"],
      ["complete-tide", { tide_id: "t", outcome: "" }, "/outcome"],
      ["complete-tide", { tide_id: "t", outcome: "success", learnings: "  " }, "/learnings"],
    ]) {
      const text = await invalid(name, args);
      assert.ok(text.includes(`at ${at}`), `${name} ${JSON.stringify(args)}: ${text}`);
    }
  });

  test("required fields are required", async () => {
    assert.match(await invalid("save-work", { what: "x", how: ["a"] }), /missing.*metrics/);
    assert.match(await invalid("create-path", { what: "x", metrics: ["a"] }), /missing.*works/);
    assert.match(await invalid("update-execution", { tide_id: "t", work_name: "a" }), /missing.*status/);
    assert.match(await invalid("complete-tide", { tide_id: "t" }), /missing.*outcome/);
    assert.match(await invalid("get-history", {}), /missing.*path_name/);
  });

  test("array limits and maxLength are enforced", async () => {
    const items = (n) => Array.from({ length: n }, (_, i) => `s${i}`);
    for (const [name, args, at] of [
      ["save-work", { what: "ok", how: [], metrics: ["b"] }, "/how"],
      ["save-work", { what: "ok", how: items(21), metrics: ["b"] }, "/how"],
      ["save-work", { what: "ok", how: ["a"], metrics: [] }, "/metrics"],
      ["save-work", { what: "ok", how: ["a"], metrics: items(11) }, "/metrics"],
      ["save-work", { what: long(201), how: ["a"], metrics: ["b"] }, "/what"],
      ["create-path", { what: "ok", works: [], metrics: ["b"] }, "/works"],
      ["create-path", { what: "ok", works: ["a", "a"], metrics: ["b"] }, "/works"],
      ["complete-tide", { tide_id: "t", outcome: "success", learnings: long(1001) }, "/learnings"],
      ["query-patterns", { min_success_rate: 1.5 }, "/min_success_rate"],
      ["query-patterns", { min_success_rate: -0.1 }, "/min_success_rate"],
      ["start-tide", { path_name: "p", adaptations: Array.from({ length: 21 }, () => ({ action: "remove", target: "a" })) }, "/adaptations"],
    ]) {
      const text = await invalid(name, args);
      assert.ok(text.includes(`at ${at}`), `${name}: ${text}`);
    }
    // At the limits, the calls go through.
    const s = await ok("save-work", { what: `${long(190)} ${++unique}`.slice(-200), how: items(20), metrics: items(10) });
    assert.equal(s.state, "created");
    // 1000 characters of learnings pass the schema: the refusal is about the tide, not the text.
    await refused("complete-tide", { tide_id: "t", outcome: "success", learnings: long(1000) }, "TIDE_NOT_FOUND");
  });

  test("work names follow ^[a-z][a-z0-9-]*$", async () => {
    for (const bad of ["Setup-Env", "setup_env", "1setup", "setup env"]) {
      const text = await invalid("create-path", { what: "ok", works: [bad], metrics: ["b"] });
      assert.ok(text.includes("at /works/0"), text);
    }
    assert.ok((await invalid("update-execution", { tide_id: "t", work_name: "Bad Name", status: "complete" })).includes("at /work_name"));
    const e = await refused("save-work", { what: "42 things", how: ["a"], metrics: ["b"] }, "INVALID_NAME");
    assert.match(e.message, /"42-things", which does not start with a letter/);
    await refused("create-path", { what: "!!!", works: ["a"], metrics: ["b"] }, "INVALID_NAME");
  });
});

describe("save-work and create-path", () => {
  test("a second save of a name is DUPLICATE_WORK unless update is asked for, which bumps the version on change", async () => {
    const args = { what: "Versioned work", how: ["one"], metrics: ["m"] };
    const first = await ok("save-work", args);
    const dup = await refused("save-work", { ...args, how: ["two"] }, "DUPLICATE_WORK");
    assert.equal(dup.work_id, first.work_id);
    assert.match(dup.message, /Pass update: true to replace it/);
    const same = await ok("save-work", { ...args, update: true });
    assert.deepEqual([same.state, same.version, same.work_id], ["unchanged", 1, first.work_id]);
    const changed = await ok("save-work", { ...args, how: ["two"], update: true });
    assert.deepEqual([changed.state, changed.version, changed.work_id], ["updated", 2, first.work_id]);
    const db = await w.mf.getD1Database("DB");
    const row = await db.prepare("SELECT version, how FROM epic_works WHERE name = 'versioned-work'").first();
    assert.deepEqual(row, { version: 2, how: '["two"]' });
    assert.equal((await ok("save-work", { what: "Fresh with update", how: ["a"], metrics: ["b"], update: true })).state, "created");
  });

  test("paths: unknown works are INVALID_SEQUENCE, a second save DUPLICATE_PATH, update bumps the version", async () => {
    const a = await work();
    const e = await refused("create-path", { what: "Mixed path", works: [a, "never-saved-1", "never-saved-2"], metrics: ["m"] }, "INVALID_SEQUENCE");
    assert.deepEqual(e.unknown_works, ["never-saved-1", "never-saved-2"]);
    const p = await ok("create-path", { what: "Mixed path", works: [a], metrics: ["m"] });
    assert.deepEqual([p.name, p.version, p.state, p.works], ["mixed-path", 1, "created", [a]]);
    const dup = await refused("create-path", { what: "Mixed path", works: [a], metrics: ["m"] }, "DUPLICATE_PATH");
    assert.equal(dup.path_id, p.path_id);
    const b = await work();
    const up = await ok("create-path", { what: "Mixed path", works: [a, b], metrics: ["m"], update: true });
    assert.deepEqual([up.version, up.state, up.works], [2, "updated", [a, b]]);
  });
});

describe("tides", () => {
  test("start-tide: PATH_NOT_FOUND lists known paths; one active tide per path", async () => {
    const p = await path();
    const nf = await refused("start-tide", { path_name: "no-such-path-at-all" }, "PATH_NOT_FOUND");
    assert.ok(nf.known_paths.includes(p.name));
    const t = await ok("start-tide", { path_name: p.name });
    const again = await refused("start-tide", { path_name: p.name }, "TIDE_ALREADY_ACTIVE");
    assert.equal(again.active_tide_id, t.tide_id);
    assert.match(again.message, /Complete it with epic-tide-complete-tide/);
    await ok("complete-tide", { tide_id: t.tide_id, outcome: "failed" });
    assert.equal((await ok("start-tide", { path_name: p.name })).attempt, 2);
  });

  test("adaptations give the tide's sequence and are checked against the path", async () => {
    const p = await path();
    const [a, b, c] = p.works;
    const extra = await work("extra");
    const t = await ok("start-tide", {
      path_name: p.name,
      adaptations: [
        { action: "insert", target: extra, details: { before: b } },
        { action: "reorder", target: c, details: { position: 1 } },
        { action: "remove", target: a },
        { action: "modify", target: b, details: { reason: "use the cached image" } },
      ],
    });
    assert.deepEqual(t.sequence, [c, extra, b]);
    await ok("complete-tide", { tide_id: t.tide_id, outcome: "partial" });
    const bad = [
      [[{ action: "rename", target: a }], "INVALID_ADAPTATION", /action must be one of: insert, modify, remove, reorder/],
      [[{ action: "remove", target: extra }], "INVALID_ADAPTATION", /is not in the sequence/],
      [[{ action: "insert", target: "never-saved-3" }], "INVALID_SEQUENCE", /unknown works: never-saved-3/],
      [[{ action: "insert", target: a }], "INVALID_ADAPTATION", /already in the sequence/],
      [[{ action: "reorder", target: a }], "INVALID_ADAPTATION", /needs one of/],
      [[{ action: "modify", target: a }], "INVALID_ADAPTATION", /needs details.reason/],
      [[{ action: "insert", target: extra, details: { after: "nowhere" } }], "INVALID_ADAPTATION", /"nowhere" is not in the sequence/],
    ];
    for (const [adaptations, code, message] of bad) {
      const e = await refused("start-tide", { path_name: p.name, adaptations }, code);
      assert.match(e.message, message);
    }
    // Nothing was started by the refused calls.
    assert.equal((await ok("start-tide", { path_name: p.name })).attempt, 2);
  });

  test("update-execution: vocabulary, the tide's works, active tides only; every update kept", async () => {
    const p = await path({ works: 2 });
    const t = await ok("start-tide", { path_name: p.name });
    const st = await refused("update-execution", { tide_id: t.tide_id, work_name: p.works[0], status: "done" }, "INVALID_STATUS");
    assert.match(st.message, /^Status must be one of: complete, failed, blocked, reused; got "done"/);
    await refused("update-execution", { tide_id: "tide-0000", work_name: p.works[0], status: "complete" }, "TIDE_NOT_FOUND");
    const nit = await refused("update-execution", { tide_id: t.tide_id, work_name: "not-in-it", status: "complete" }, "WORK_NOT_IN_TIDE");
    assert.deepEqual(nit.sequence, p.works);
    const u1 = await ok("update-execution", { tide_id: t.tide_id, work_name: p.works[0], status: "failed", error: "timeout", output: "log 1" });
    const u2 = await ok("update-execution", { tide_id: t.tide_id, work_name: p.works[0], status: "complete", output: "log 2" });
    assert.deepEqual([u1.update, u2.update], [1, 2]);
    await ok("complete-tide", { tide_id: t.tide_id, outcome: "partial" });
    const na = await refused("update-execution", { tide_id: t.tide_id, work_name: p.works[1], status: "complete" }, "TIDE_NOT_ACTIVE");
    assert.match(na.message, /^No active TIDE for this PATH/);
    const h = await ok("get-history", { path_name: p.name, include_execution_details: true });
    const ex = h.tides[0].execution;
    assert.deepEqual([ex[p.works[0]].status, ex[p.works[0]].updates], ["complete", 2]);
    assert.deepEqual(ex[p.works[0]].history.map((u) => [u.update, u.status, u.error, u.output]), [[1, "failed", "timeout", "log 1"], [2, "complete", null, "log 2"]]);
    assert.deepEqual(ex[p.works[1]], { status: null, updates: 0, history: [] });
  });

  test("complete-tide: vocabulary, the path's metrics, once; next_action by the documented rule", async () => {
    const p = await path({ works: 2, metrics: ["API running", "Tests pass"] });
    const [a, b] = p.works;
    const t1 = await ok("start-tide", { path_name: p.name });
    const oc = await refused("complete-tide", { tide_id: t1.tide_id, outcome: "done" }, "INVALID_OUTCOME");
    assert.match(oc.message, /^Outcome must be one of: success, partial, failed; got "done"/);
    const m = await refused("complete-tide", { tide_id: t1.tide_id, outcome: "partial", metrics_achieved: { "API running": true, "Fast": false } }, "INVALID_METRICS");
    assert.deepEqual([m.unknown_metrics, m.path_metrics], [["Fast"], ["API running", "Tests pass"]]);
    await refused("complete-tide", { tide_id: "tide-nope", outcome: "success" }, "TIDE_NOT_FOUND");
    assert.match(await invalid("complete-tide", { tide_id: t1.tide_id, outcome: "success", metrics_achieved: { "API running": "yes" } }), /at \/metrics_achieved/);

    // 1: a works, b fails → retry (no earlier attempt).
    await ok("update-execution", { tide_id: t1.tide_id, work_name: a, status: "complete" });
    await ok("update-execution", { tide_id: t1.tide_id, work_name: b, status: "failed", error: "boom" });
    const c1 = await ok("complete-tide", { tide_id: t1.tide_id, outcome: "failed", metrics_achieved: { "API running": true }, learnings: "b breaks" });
    assert.equal(c1.next_action, "retry_tide");
    await refused("complete-tide", { tide_id: t1.tide_id, outcome: "success" }, "TIDE_NOT_ACTIVE");
    // 2: a is blocked → a different work failed than before → retry.
    const t2 = await ok("start-tide", { path_name: p.name });
    await ok("update-execution", { tide_id: t2.tide_id, work_name: a, status: "blocked", error: "no access" });
    assert.equal((await ok("complete-tide", { tide_id: t2.tide_id, outcome: "partial" })).next_action, "retry_tide");
    // 3: a blocked again → repeated failure on the same work → revise the path.
    const t3 = await ok("start-tide", { path_name: p.name });
    await ok("update-execution", { tide_id: t3.tide_id, work_name: a, status: "blocked" });
    await ok("update-execution", { tide_id: t3.tide_id, work_name: b, status: "complete" });
    const c3 = await ok("complete-tide", { tide_id: t3.tide_id, outcome: "failed" });
    assert.equal(c3.next_action, "revise_path");
    assert.deepEqual(c3.repeated_failures, [a]);
    // 4: a failed, then redone → its latest status is complete → retry.
    const t4 = await ok("start-tide", { path_name: p.name });
    await ok("update-execution", { tide_id: t4.tide_id, work_name: a, status: "failed" });
    await ok("update-execution", { tide_id: t4.tide_id, work_name: a, status: "reused" });
    assert.equal((await ok("complete-tide", { tide_id: t4.tide_id, outcome: "partial" })).next_action, "retry_tide");
    // 5: success → create_pattern, with the pattern's id.
    const t5 = await ok("start-tide", { path_name: p.name });
    const c5 = await ok("complete-tide", { tide_id: t5.tide_id, outcome: "success", metrics_achieved: { "API running": true, "Tests pass": true } });
    assert.equal(c5.next_action, "create_pattern");
    assert.match(c5.pattern_id, /^pattern-[0-9a-f]{32}$/);

    const h = await ok("get-history", { path_name: p.name });
    assert.deepEqual(h.tides.map((t) => [t.attempt, t.outcome, t.next_action]), [
      [1, "failed", "retry_tide"], [2, "partial", "retry_tide"], [3, "failed", "revise_path"], [4, "partial", "retry_tide"], [5, "success", "create_pattern"],
    ]);
    assert.equal(h.tides[0].learnings, "b breaks");
    assert.deepEqual(h.tides[0].metrics_achieved, { "API running": true });
    assert.deepEqual(h.tides[0].execution, { [a]: { status: "complete", updates: 1 }, [b]: { status: "failed", updates: 1 } });
  });

  test("get-history: PATH_NOT_FOUND; a path without tides has an empty history", async () => {
    await refused("get-history", { path_name: "no-such-history" }, "PATH_NOT_FOUND");
    const p = await path({ works: 1 });
    const h = await ok("get-history", { path_name: p.name });
    assert.deepEqual([h.path_name, h.works, h.tides], [p.name, p.works, []]);
  });
});

describe("concurrency", () => {
  // Two sessions of one signed-in user: a path's tides are its owner's, in any of their sessions.
  const USER = "00000000-0000-4000-8000-000000000006";
  test("two simultaneous starts of one path in two sessions leave exactly one active tide", async () => {
    const [one, two] = [await connect(USER), await connect(USER)];
    for (let round = 0; round < 3; round++) {
      const p = await path({ works: 1, via: one });
      const results = await Promise.all([one, two].map((c) => call("start-tide", { path_name: p.name }, c)));
      const started = results.filter((r) => !r.isError);
      const refusedOnes = results.filter((r) => r.isError);
      assert.equal(started.length, 1, JSON.stringify(results.map((r) => r.content[0].text)));
      assert.equal(refusedOnes[0].structuredContent.error.code, "TIDE_ALREADY_ACTIVE");
      assert.equal(refusedOnes[0].structuredContent.error.active_tide_id, started[0].structuredContent.tide_id);
      const db = await w.mf.getD1Database("DB");
      const rows = await db.prepare("SELECT t.status, t.attempt FROM epic_tides t JOIN epic_paths p ON p.id = t.path_id WHERE p.name = ?1").bind(p.name).all();
      assert.deepEqual(rows.results, [{ status: "active", attempt: 1 }]);
    }
  });

  test("two simultaneous updates of the same work are both recorded, in order", async () => {
    const [one, two] = [await connect(USER), await connect(USER)];
    const p = await path({ works: 1, via: one });
    const t = await ok("start-tide", { path_name: p.name }, one);
    const results = await Promise.all([
      call("update-execution", { tide_id: t.tide_id, work_name: p.works[0], status: "failed", output: "from one" }, one),
      call("update-execution", { tide_id: t.tide_id, work_name: p.works[0], status: "complete", output: "from two" }, two),
    ]);
    for (const r of results) assert.notEqual(r.isError, true, r.content[0].text);
    assert.deepEqual(results.map((r) => r.structuredContent.update).sort(), [1, 2]);
    const h = await ok("get-history", { path_name: p.name, include_execution_details: true }, two);
    const history = h.tides[0].execution[p.works[0]].history;
    assert.deepEqual(history.map((u) => u.update), [1, 2]);
    const byUpdate = Object.fromEntries(results.map((r) => [r.structuredContent.update, r.structuredContent.status]));
    assert.deepEqual(history.map((u) => u.status), [byUpdate[1], byUpdate[2]]);
    assert.equal(h.tides[0].execution[p.works[0]].status, byUpdate[2]);
  });
});

describe("patterns", () => {
  test("derived per domain and tags from several tides; filtered by domain, tags and success rate", async () => {
    const shared = [await work("shared"), await work("shared"), await work("shared")];
    const auth = await work("auth");
    const mk = async (tags) => (await ok("create-path", { what: `Pattern path ${++unique}`, works: shared, metrics: ["m"], domain: "game", tags })).name;
    const p1 = await mk(["multiplayer", "unity"]);
    const p2 = await mk(["unity", "multiplayer"]);
    const solo = await mk(["unity"]);
    const run = async (name, outcome, adaptations) => {
      const t = await ok("start-tide", { path_name: name, ...(adaptations ? { adaptations } : {}) });
      return ok("complete-tide", { tide_id: t.tide_id, outcome });
    };
    const insertAuth = [{ action: "insert", target: auth, details: { after: shared[0], reason: "log in first" } }];
    assert.equal((await run(p1, "failed")).pattern_id, undefined, "no pattern before a success");
    assert.equal((await ok("query-patterns", { domain: "game" })).patterns.length, 0);
    const first = await run(p1, "success", insertAuth);
    await run(p2, "success", insertAuth);
    const last = await run(p2, "success");
    assert.equal(first.pattern_id, last.pattern_id, "tags are a set: both paths share one pattern");
    await run(solo, "partial");
    await run(solo, "success");

    const all = (await ok("query-patterns", { domain: "game" })).patterns;
    assert.equal(all.length, 2);
    const [mp, unity] = all;
    assert.deepEqual(mp.tags, ["multiplayer", "unity"]);
    assert.deepEqual(mp.common_sequence, [shared[0], auth, shared[1], shared[2]]);
    assert.equal(mp.sequence_support, 0.6667);
    assert.equal(mp.success_rate, 0.75);
    assert.deepEqual([mp.successful_tides, mp.completed_tides], [3, 4]);
    assert.deepEqual(mp.paths, [p1, p2].sort());
    assert.deepEqual(mp.proven_adaptations, { [`insert ${auth}`]: { action: "insert", target: auth, details: { after: shared[0], reason: "log in first" }, successful_tides: 2 } });
    assert.deepEqual([unity.tags, unity.success_rate, unity.common_sequence], [["unity"], 0.5, shared]);

    assert.deepEqual((await ok("query-patterns", { domain: "game", tags: ["multiplayer"] })).patterns.map((p) => p.pattern_id), [mp.pattern_id]);
    assert.deepEqual((await ok("query-patterns", { tags: ["unity"], min_success_rate: 0.6 })).patterns.map((p) => p.pattern_id), [mp.pattern_id]);
    assert.deepEqual((await ok("query-patterns", { domain: "game", min_success_rate: 0.5, limit: 1 })).patterns.map((p) => p.pattern_id), [mp.pattern_id]);
    assert.equal((await ok("query-patterns", { domain: "game", tags: ["vr"] })).patterns.length, 0);
    assert.equal((await ok("query-patterns", { domain: "no-such-domain" })).patterns.length, 0);
  });
});

describe("the vocabulary resource", () => {
  test("is listed and read as the repository's file; validation uses the same values", async () => {
    const file = readFileSync(join(root, "data", "epic-tide", "vocabulary.json"), "utf8");
    assert.ok(client.getServerCapabilities().resources, "resources capability declared");
    const { resources } = await client.listResources();
    const entry = resources.find((r) => r.uri === "epic-tide://vocabulary");
    assert.equal(entry?.mimeType, "application/json");
    const read = await client.readResource({ uri: "epic-tide://vocabulary" });
    assert.equal(read.contents[0].text, file);
    const vocab = JSON.parse(file);
    assert.deepEqual(vocab.statuses.map((s) => s.name), ["complete", "failed", "blocked", "reused"]);
    const { session } = await initialize(w.mcpUrl);
    const missing = await rpc(w.mcpUrl, session, "resources/read", { uri: "epic-tide://nope" });
    assert.equal(missing.reply.error.code, -32002);
  });
});
