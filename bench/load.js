// `npm run load`: load and durability against `wrangler dev` (the way developers run the server),
// with its state in a fresh temporary directory. Prints figures and a verdict; bounded in count
// and time (LOAD_DEADLINE, default 600 s, stops everything); loopback only.
//   1. LOAD_SESSIONS (default 200) concurrent MCP sessions × LOAD_CALLS (default 50) mixed calls:
//      create/process templates, create/execute chains, EPIC-TIDE writes (when the server has
//      them) and domain reads as users with different roles. Then every acknowledged write is
//      read back through the API and compared, and the database is counted for extra rows:
//      lost and duplicated writes (goal: 0 and 0).
//   2. Fault run: LOAD_CHAINS (default 20) background chains, each writing a record, asking a
//      slow model and writing a second record; the dev server is killed (SIGKILL, the whole
//      process group) while they run and started again on the same state. Afterwards every chain
//      must be completed, failed or cancelled (none stuck running), and no step that had completed
//      before the kill may run again.
// Exit status 1 when a goal is missed, so a smoke run can tell.
import { spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "../tests/support/worker.js";
import { hs256 } from "../scripts/token.js";
import { modelStandIn, pct, server } from "./client.js";

const SESSIONS = Number(process.env.LOAD_SESSIONS ?? 200);
const CALLS = Number(process.env.LOAD_CALLS ?? 50);
const CHAINS = Number(process.env.LOAD_CHAINS ?? 20);
// A free port unless told: engineers on one machine may each run this at once.
const PORT = Number(process.env.LOAD_PORT ?? (await freePort()));
const DEADLINE = Date.now() + Number(process.env.LOAD_DEADLINE ?? 600) * 1000;
const RUN = randomBytes(3).toString("hex");

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
const node = join(root, "node_modules", ".bin", "node");
const wranglerJs = join(root, "node_modules", "wrangler", "bin", "wrangler.js");
const dir = mkdtempSync(join(tmpdir(), "mcp-edge-load-"));
const mcpUrl = `http://127.0.0.1:${PORT}/mcp`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const f = (n, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : "—");

// A stop that cannot be missed: past the deadline everything started here is ended.
const watchdog = setTimeout(() => {
  console.log(`load: deadline passed (LOAD_DEADLINE), stopping`);
  dev?.kill();
  process.exit(2);
}, DEADLINE - Date.now());
watchdog.unref();

function localSecret() {
  const file = join(root, ".dev.vars");
  const line = existsSync(file) && readFileSync(file, "utf8").split("\n").find((l) => l.startsWith("JWT_SECRET="));
  return line ? line.slice("JWT_SECRET=".length).trim().replace(/^"(.*)"$/, "$1") : null;
}
// wrangler dev reads .dev.vars as secrets; when it holds a JWT_SECRET, that is the one in force.
const devVarsSecret = localSecret();
const SECRET = devVarsSecret ?? randomBytes(32).toString("hex");

function wrangler(args) {
  const r = spawnSync(node, [wranglerJs, ...args, "--env", "dev", "--persist-to", dir], { cwd: root, encoding: "utf8", env: { ...process.env, CI: "true" } });
  if (r.status !== 0) throw new Error(`wrangler ${args.join(" ")}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** Rows of a query on the local D1 database. */
function sql(query) {
  const out = wrangler(["d1", "execute", "DB", "--local", "--json", "--command", query]);
  return JSON.parse(out.slice(out.indexOf("[")))[0].results;
}

let dev = null;
/** Starts `wrangler dev` on the state directory and waits until /mcp answers initialize. */
async function startDev(model) {
  const vars = { RATE_LIMITS: "*=off", REQUEST_LIMIT: "off", SESSION_CREATE_LIMIT: "off", MODEL_PROVIDER_URL: model.url, MODEL_PROVIDER_KEY: "load", MODEL_PROVIDER_MODEL: "load", JOB_LEASE_SECONDS: "2", ...(devVarsSecret ? {} : { JWT_SECRET: SECRET }) };
  const args = [wranglerJs, "dev", "--env", "dev", "--ip", "127.0.0.1", "--port", String(PORT), "--persist-to", dir, "--show-interactive-dev-session=false", "--log-level", "error"];
  for (const [k, v] of Object.entries(vars)) args.push("--var", `${k}:${v}`);
  const child = spawn(node, args, { cwd: root, detached: true, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, CI: "true" } });
  let stderr = "";
  child.stderr.on("data", (c) => (stderr = (stderr + c).slice(-4000)));
  dev = {
    child,
    /** Ends wrangler and workerd at once: the process group, with SIGKILL (a crash, not a shutdown). */
    kill() {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    },
  };
  const srv = server(mcpUrl, { connections: 1 });
  for (const end = Date.now() + 120_000; ; await sleep(250)) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}): ${stderr}`);
    if (Date.now() > end) throw new Error(`wrangler dev did not answer within 120 s: ${stderr}`);
    try {
      await srv.connect();
      break;
    } catch {
      // Not listening yet.
    }
  }
  await srv.close();
}

async function stopDev() {
  const child = dev.child;
  dev.kill();
  if (child.exitCode === null) await new Promise((r) => child.once("exit", r));
  dev = null;
}

// Domain callers: sample users with the roles docs/domain.md shows, each with a read it may do.
const ROLES = [
  { user: "Eve Thompson", roles: ["executive"], tool: "get_pipeline", args: () => ({ quarter: "2026-Q4" }) },
  { user: "Alice Chen", roles: ["hr-read"], tool: "list_employees", args: (i) => ({ department: "Human Resources", limit: 1 + (i % 10) }) },
  { user: "Nina Patel", roles: ["manager"], tool: "get_performance_reviews", args: () => ({ status: "due" }) },
  { user: "Ryan Lee", roles: ["sales-read"], tool: "list_deals", args: (i) => ({ closing_from: "2026-11-01", closing_to: "2026-11-30", limit: 1 + (i % 10) }) },
  { user: "Dan Williams", roles: ["support-read"], tool: "search_tickets", args: (i) => ({ query: ["sync", "login", "invoice", "export"][i % 4] }) },
  { user: "Bob Martinez", roles: ["finance-read"], tool: "get_expense_report", args: (_, ids) => ({ employee_id: ids["Marcus Johnson"], month: "2026-10" }) },
  { user: "Marcus Johnson", roles: [], tool: "get_employee", args: (_, ids) => ({ employee_id: ids["Marcus Johnson"] }) },
  { user: null, roles: [], tool: "get_mode_indicator", args: () => ({}) },
];

const textOf = (r) => (r.result?.content ?? []).map((c) => c.text ?? "").join("\n");

/**
 * The call kinds of the mix, one entry each. `run(ctx)` makes the call and returns the call's
 * result plus, for a write, what to read back. `tool` entries absent from tools/list are skipped.
 */
const KINDS = [
  {
    kind: "create_template", tool: "create_template", writes: "template",
    run: async ({ s, marker }) => {
      const r = await s.call("create_template", {
        template_definition: {
          name: marker, title: "Load template", category: "custom", content: `Load ${marker} for {who}.`,
          variables_schema: { who: { type: "string", required: true } },
          usage_examples: [{ name: "one", variables: { who: "A" } }],
        },
        // Public: the read-back below runs in a session of its own, and records have owners.
        creation_options: { visibility: "public" },
      });
      return { r, written: r.ok && { kind: "template", name: marker, marker } };
    },
  },
  {
    kind: "process_template", tool: "process_template",
    run: async ({ s, state }) => {
      const name = state.template ?? "trip-confirmation-comprehensive";
      return { r: await s.call("process_template", { template_name: name, variables: { who: "B", client: { name: "C" } } }) };
    },
  },
  {
    kind: "create_chain", tool: "create_chain", writes: "chain",
    run: async ({ s, marker }) => {
      const r = await s.call("create_chain", {
        chain_definition: {
          name: marker, title: "Load chain", category: "custom",
          steps: [{ id: 1, name: "echo", type: "data_transformation", input_template: `${marker}:{who}`, input_variables: [], output_variables: ["echo"] }],
        },
        creation_options: { visibility: "public" },
      });
      return { r, written: r.ok && { kind: "chain", name: marker, marker } };
    },
  },
  {
    kind: "execute_chain", tool: "execute_chain", writes: "execution",
    run: async ({ s, state, marker }) => {
      if (!state.chain) return { r: await s.call("get_mode_indicator", {}) };
      const r = await s.call("execute_chain", { chain_name: state.chain, variables: { who: marker } });
      const id = textOf(r).match(/exec-[0-9a-f]{32}/)?.[0];
      // Executions are their session's: the read-back asks in the same session.
      return { r, written: r.ok && id && { kind: "execution", id, expect: `${state.chain}:${marker}`, session: s.session, headers: s.headers } };
    },
  },
  {
    kind: "domain read", tool: null,
    run: async ({ s, role, i, ids }) => ({ r: await s.call(role.tool, role.args(i, ids)) }),
  },
  {
    // A work, then a path of that work (which the server accepts only if the work exists); the
    // path is read back with epic-tide-get-history.
    kind: "epic-tide-save-work", tool: "epic-tide-save-work", writes: "tide",
    run: async ({ s, marker }) => {
      const r = await s.call("epic-tide-save-work", { what: `Load work ${marker}`, how: ["measure", "report"], metrics: ["nothing lost"], visibility: "public" });
      const work = r.ok && r.result.structuredContent?.name;
      if (!work) return { r };
      const p = await s.call("epic-tide-create-path", { what: `Load path ${marker}`, works: [work], metrics: ["read back"], visibility: "public" });
      const path = p.ok && p.result.structuredContent?.name;
      return { r: p, written: path && { kind: "tide", path, marker } };
    },
  },
];

/** Which kind the i-th call of a session makes: a fixed cycle, so every run makes the same mix. */
const CYCLE = ["create_template", "process_template", "create_chain", "execute_chain", "domain read", "epic-tide-save-work", "process_template", "execute_chain", "domain read", "domain read"];

async function mixed(ids) {
  const srv = server(mcpUrl, { connections: 128 });
  const available = new Set((await (await srv.connect()).rpc("tools/list", {})).reply.result.tools.map((t) => t.name));
  const kinds = new Map(KINDS.map((k) => [k.kind, k]));
  for (const k of KINDS) if (k.tool && !available.has(k.tool)) console.log(`  ${k.kind}: not available (no ${k.tool} in tools/list); its share goes to domain reads`);
  const pick = (i) => {
    const k = kinds.get(CYCLE[i % CYCLE.length]);
    return k.tool && !available.has(k.tool) ? kinds.get("domain read") : k;
  };
  const aud = mcpUrl;
  const token = (role) => hs256({ sub: ids[role.user], roles: role.roles, iss: "http://localhost:8787", aud, exp: Math.floor(Date.now() / 1000) + 3600 }, SECRET);
  const stats = new Map();
  const writes = [];
  const all = [];
  let firstError = null;
  let sessionErrors = 0;
  // Write calls that failed: their write may still have happened, so rows beyond the acknowledged
  // writes count as duplicates only past these.
  const failedWrites = { template: 0, chain: 0, execution: 0, tide: 0 };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: SESSIONS }, async (_, n) => {
    const role = ROLES[n % ROLES.length];
    // Starting a session is safe to retry (a failed one leaves nothing behind); calls are not.
    let s = null;
    for (let attempt = 0; attempt < 3 && !s; attempt++) {
      s = await srv.connect(role.user ? { authorization: `Bearer ${token(role)}` } : {}).catch((e) => {
        sessionErrors++;
        firstError ??= `initialize: ${String(e).slice(0, 200)}`;
        return sleep(200 * (attempt + 1)).then(() => null);
      });
    }
    if (!s) return;
    const state = {};
    for (let i = 0; i < CALLS && Date.now() < DEADLINE; i++) {
      const k = pick(i);
      const marker = `load-${RUN}-${n}-${i}`;
      const start = performance.now();
      const { r, written } = await k.run({ s, state, marker, role, i, ids }).catch((e) => ({ r: { ok: false, error: String(e) } }));
      const ms = performance.now() - start;
      const st = stats.get(k.kind) ?? { calls: 0, errors: 0, lat: [] };
      stats.set(k.kind, st);
      st.calls++;
      if (r.ok) {
        st.lat.push(ms);
        all.push(ms);
      } else {
        st.errors++;
        firstError ??= `${k.kind}: ${String(r.error).slice(0, 200)}`;
        if (k.writes) failedWrites[k.writes]++;
      }
      if (written) {
        writes.push(written);
        if (written.kind === "template") state.template = written.name;
        if (written.kind === "chain") state.chain = written.name;
      }
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  all.sort((a, b) => a - b);
  console.log(`\n  ${"kind".padEnd(22)} ${"calls".padStart(6)} ${"errors".padStart(6)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)}`);
  let calls = 0;
  let errors = 0;
  for (const [kind, st] of stats) {
    st.lat.sort((a, b) => a - b);
    calls += st.calls;
    errors += st.errors;
    console.log(`  ${kind.padEnd(22)} ${String(st.calls).padStart(6)} ${String(st.errors).padStart(6)} ${f(pct(st.lat, 50)).padStart(8)} ${f(pct(st.lat, 99)).padStart(8)}`);
  }
  if (sessionErrors) console.log(`  ${"(initialize, retried)".padEnd(22)} ${"".padStart(6)} ${String(sessionErrors).padStart(6)}`);
  errors += sessionErrors;
  console.log(`  ${"all".padEnd(22)} ${String(calls).padStart(6)} ${String(errors).padStart(6)} ${f(pct(all, 50)).padStart(8)} ${f(pct(all, 99)).padStart(8)}   ${f(calls / seconds, 0)} calls/s over ${f(seconds)} s`);
  if (firstError) console.log(`  first error: ${firstError}`);

  // Read back every acknowledged write through the API, 32 at a time.
  const reader = await srv.connect();
  let lost = 0;
  let unchecked = 0;
  const lostExamples = [];
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < writes.length) {
      const w = writes[next++];
      let ok;
      if (w.kind === "template") {
        ok = textOf(await reader.call("process_template", { template_name: w.name, variables: { who: "R" } })).includes(`Load ${w.marker} for R.`);
      } else if (w.kind === "chain") {
        ok = textOf(await reader.call("execute_chain", { chain_name: w.name, variables: { who: "R" }, execution_options: { track_progress: false } })).includes(`${w.marker}:R`);
      } else if (w.kind === "execution") {
        const st = (await srv.attach(w.session, { authorization: w.headers.authorization }).call("get_chain_status", { execution_id: w.id })).result?.structuredContent;
        ok = st?.status === "completed" && st.steps?.[0]?.outputs?.echo === w.expect;
      } else if (w.kind === "tide") {
        const h = await reader.call("epic-tide-get-history", { path_name: w.path });
        ok = h.ok && Array.isArray(h.result.structuredContent?.tides);
      } else {
        unchecked++;
        continue;
      }
      if (!ok) {
        lost++;
        if (lostExamples.length < 3) lostExamples.push(w);
      }
    }
  }));
  await srv.close();
  return { calls, errors, writes, failedWrites, lost, lostExamples, unchecked, p50: pct(all, 50), p99: pct(all, 99), seconds };
}

/** Rows in D1 beyond one per acknowledged write (by kind), in one query (each costs a wrangler start). */
function extraRows(writes) {
  const acked = (kind) => writes.filter((w) => w.kind === kind).length;
  const like = `'load-${RUN}-%'`;
  const [n] = sql(`SELECT
    (SELECT COUNT(*) FROM template_definitions WHERE name LIKE ${like}) AS templates,
    (SELECT COUNT(*) FROM execution_chains WHERE name LIKE ${like}) AS chains,
    (SELECT COUNT(*) FROM chain_executions e JOIN execution_chains c ON c.id = e.chain_id WHERE c.name LIKE ${like}) AS executions,
    (SELECT COUNT(*) FROM epic_paths WHERE name LIKE 'load-path-load-${RUN}-%') AS paths`);
  return { templates: n.templates - acked("template"), chains: n.chains - acked("chain"), executions: n.executions - acked("execution"), paths: n.paths - acked("tide") };
}

/** Fault run: background chains, a kill -9 of the dev server while they run, a restart. */
async function faultRun(model) {
  const srv = server(mcpUrl, { connections: 32 });
  const s = await srv.connect();
  const chain = `load-${RUN}-fault`;
  const created = await s.call("create_chain", {
    chain_definition: {
      name: chain, title: "Fault run", category: "custom",
      steps: [
        { id: 1, name: "first_record", type: "database_operation", operation: { collection: "loadfault", action: "create" }, input_template: `{{"id": "{run_id}-1", "step": 1}}`, input_variables: ["run_id"], output_variables: ["first"] },
        { id: 2, name: "ask_model", type: "instruction_set", instruction_set: "client-communication", input_template: "Fault run {run_id}", input_variables: ["run_id"], output_variables: ["status"], depends_on: [1] },
        { id: 3, name: "second_record", type: "database_operation", operation: { collection: "loadfault", action: "create" }, input_template: `{{"id": "{run_id}-3", "step": 3, "status": {status|json}}}`, input_variables: ["run_id", "status"], output_variables: ["second"], depends_on: [2] },
      ],
    },
    creation_options: { overwrite_existing: true },
  });
  if (!created.ok) throw new Error(`fault run: create_chain: ${created.error}`);
  model.delayMs = 3000;
  const ids = [];
  for (let i = 0; i < CHAINS; i++) {
    const r = await s.call("execute_chain", { chain_name: chain, variables: { run_id: `${RUN}-${i}` }, execution_options: { async_execution: true, track_progress: true } });
    const id = textOf(r).match(/exec-[0-9a-f]{32}/)?.[0];
    if (!id) throw new Error(`fault run: execute_chain: ${r.error ?? textOf(r)}`);
    ids.push(id);
  }
  // Kill while the model is answering the runs: their first step is checkpointed as done.
  for (const end = Date.now() + 20_000; model.received() < CHAINS && Date.now() < end; ) await sleep(50);
  const before = new Map();
  for (const id of ids) before.set(id, (await s.call("get_chain_status", { execution_id: id })).result?.structuredContent);
  const doneBefore = [...before.values()].reduce((n, st) => n + (st?.steps ?? []).filter((x) => x.state === "done").length, 0);
  await srv.close();
  await stopDev();
  model.delayMs = 0;
  console.log(`  killed the dev server (SIGKILL) with ${CHAINS} chains running, ${doneBefore} of their steps done; restarting on the same state`);
  const restart0 = performance.now();
  await startDev(model);
  console.log(`  restarted in ${f((performance.now() - restart0) / 1000)} s`);
  const srv2 = server(mcpUrl, { connections: 8 });
  const s2 = srv2.attach(s.session);
  const after = new Map();
  const settle = Date.now() + 90_000;
  for (;;) {
    for (const id of ids) after.set(id, (await s2.call("get_chain_status", { execution_id: id })).result?.structuredContent);
    if ([...after.values()].every((st) => st && st.status !== "running") || Date.now() > settle) break;
    await sleep(500);
  }
  await srv2.close();
  const counts = {};
  let reran = 0;
  let firstFailure = null;
  for (const id of ids) {
    const a = after.get(id);
    if (a?.status !== "completed") firstFailure ??= a?.error ?? JSON.stringify(a);
    counts[a?.status ?? "unknown"] = (counts[a?.status ?? "unknown"] ?? 0) + 1;
    for (const step of before.get(id)?.steps ?? []) {
      const later = a?.steps?.find((x) => x.id === step.id);
      if (step.state === "done" && later && later.attempts !== step.attempts) reran++;
    }
  }
  // The model is asked once per run unless its step was under way at the kill (which may re-run).
  const asked = [...model.requests.values()];
  const records = sql(`SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d FROM collection_records WHERE collection = 'loadfault' AND id LIKE '${RUN}-%'`)[0];
  return { counts, reran, stuck: counts.running ?? 0, askedTwice: asked.filter((n) => n > 1).length, records, firstFailure };
}

console.log(`mcp-edge load: wrangler dev on 127.0.0.1:${PORT}, state in ${dir}`);
const model = await modelStandIn();
let failed = false;
try {
  wrangler(["d1", "migrations", "apply", "DB", "--local"]);
  // The sample company is not a migration (sample-data/domain.sql); the domain callers need it.
  wrangler(["d1", "execute", "DB", "--local", "--file", join(root, "sample-data", "domain.sql")]);
  const ids = Object.fromEntries(sql("SELECT first_name || ' ' || last_name AS name, id FROM hr_employees").map((r) => [r.name, r.id]));
  await startDev(model);
  console.log(`\n## ${SESSIONS} sessions × ${CALLS} mixed calls`);
  const m = await mixed(ids);
  await stopDev();
  const extra = extraRows(m.writes);
  const fw = m.failedWrites;
  console.log(`\n  writes acknowledged ${m.writes.length}, read back ${m.writes.length - m.lost - m.unchecked}, lost ${m.lost}${m.unchecked ? `, not checkable ${m.unchecked}` : ""}`);
  console.log(`  rows beyond the acknowledged writes: templates ${extra.templates}, chains ${extra.chains}, executions ${extra.executions}, EPIC-TIDE paths ${extra.paths} (write calls that failed: ${fw.template}, ${fw.chain}, ${fw.execution}, ${fw.tide})`);
  if (m.lostExamples.length) console.log(`  lost, e.g.: ${JSON.stringify(m.lostExamples)}`);
  const duplicated = Math.max(0, extra.templates - fw.template) + Math.max(0, extra.chains - fw.chain) + Math.max(0, extra.executions - fw.execution) + Math.max(0, extra.paths - fw.tide);
  console.log(`  => calls ${m.calls}, errors ${m.errors}, lost ${m.lost}, duplicated ${duplicated}, p50 ${f(m.p50)} ms, p99 ${f(m.p99)} ms`);
  failed ||= m.lost > 0 || duplicated > 0;

  console.log(`\n## Fault run: ${CHAINS} background chains, dev server killed mid-run`);
  await startDev(model);
  const fr = await faultRun(model);
  await stopDev();
  console.log(`  chains: ${Object.entries(fr.counts).map(([k, v]) => `${k} ${v}`).join(", ")}; stuck running ${fr.stuck}`);
  console.log(`  completed steps that ran again: ${fr.reran}; model asked twice for ${fr.askedTwice} runs (a step under way at the kill may run again)`);
  console.log(`  records written ${fr.records.n}, distinct ${fr.records.d}${fr.firstFailure ? `; first chain not completed: ${String(fr.firstFailure).slice(0, 200)}` : ""}`);
  failed ||= fr.stuck > 0 || fr.reran > 0 || fr.records.n !== fr.records.d;
  console.log(`\nverdict: ${failed ? "FAILED" : "ok"} (goals: 0 lost, 0 duplicated, none stuck, no completed step re-run)`);
} catch (e) {
  console.log(`load: ${e.stack ?? e}`);
  failed = true;
} finally {
  if (dev) await stopDev();
  model.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
