// `npm run bench`: one run, one set of tables. Prints figures; asserts nothing. Everything is sent
// to 127.0.0.1 only, and every loop is bounded by a duration or a count.
//   1. size of our wasm and of the reference's bundle, and each server's start-to-first-answer;
//   2. side by side with the TypeScript peers in workerd at the same time: the reference
//      (bench/reference/, the official SDK, sessions in isolate memory) and the `agents` anchor
//      `McpAgent` (bench/anchors/, one Durable Object per session, the peer of our 2025 lane), both on Miniflare's own socket (not `wrangler dev`, whose proxy caps any
//      worker at ~800 requests/s on 2 cores): the same cheap tool and the trip confirmation, at
//      fixed concurrency levels for a fixed duration each; then our 2026-07-28 lane beside
//      `createMcpHandler` (bench/anchors/, stateless, the peer of that lane), with a 2026-07-28
//      client; then the ceilings (bench/anchors/ceiling: a Rust Worker answering from its wasm
//      entry alone, and one forwarding to a Durable Object that does nothing);
//   2b. cost per call: the storage operations one call costs, per lane (bench/cost.js);
//   3. the seed's stated targets: sequential p50/p99 of the tools the seeds give figures for;
//   4. the native micro-benchmarks (criterion: `cargo bench --bench engines`).
// Results also go to bench/results/<time>.json (git-ignored), to compare runs.
// Every (server, client level) of the side-by-side tables and the ceilings is measured BENCH_RUNS
// times, in rounds that take every server in turn (the order rotated each round), so a drift of
// the shared machine reaches all peers alike; tables print the median requests/s with the spread
// (min–max) beside it, ratios come from the medians, p50 and p99 from the median run, and the JSON
// keeps every run's figures.
// Settings: BENCH_SECONDS (per level, default 5), BENCH_RUNS (runs per level, default 3),
// BENCH_LEVELS (default 1,8,32), BENCH_CALLS
// (sequential calls per seed target, default 200), BENCH_CONTEXTS (default 10000), BENCH_NATIVE=0
// skips criterion, BENCH_COST_CALLS (calls per lane counted for the cost per call, default 20),
// BENCH_ONLY=side|targets|native|cost runs one part (side includes cost); BENCH_ONLY=field_request
// runs only the field_request seed target (our Worker alone: load the contexts, warm up, measure);
// BENCH_TOOL=<tool> keeps only that tool's rows in the side-by-side tables (both lanes), e.g.
// `BENCH_ONLY=side BENCH_TOOL=process_template BENCH_LEVELS=1` for one call at one client.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import { root, startWorker } from "../tests/support/worker.js";
import { tripVars } from "../tests/support/samples.js";
import { hs256 } from "../scripts/token.js";
import { flowmindAccuracy } from "./flowmind.js";
import { native } from "./native.js";
import { costs } from "./cost.js";
import { load, modelStandIn, pct, plain, server, stateless, summary, syntheticContexts } from "./client.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`BENCH_RUNS must be a whole number of runs, 1 or more (got ${process.env.BENCH_RUNS})`);
const TOOL = process.env.BENCH_TOOL;
const LEVELS = (process.env.BENCH_LEVELS ?? "1,8,32").split(",").map(Number);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const CONTEXTS = Number(process.env.BENCH_CONTEXTS ?? 10_000);
const NATIVE = process.env.BENCH_NATIVE !== "0";
const COST_CALLS = Number(process.env.BENCH_COST_CALLS ?? 20);
const ONLY = process.env.BENCH_ONLY;
const part = (name) => !ONLY || ONLY === name;
// The one seed target whose figure issue 23 sets, measured without the rest of the run.
const FIELD_REQUEST_ONLY = ONLY === "field_request";
const REFERENCE = join(root, "target", "reference", "index.js");
const MCP_AGENT = join(root, "target", "anchors", "mcp-agent", "mcp-agent.js");
const MCP_HANDLER = join(root, "target", "anchors", "create-mcp-handler", "create-mcp-handler.js");
// The ceilings are built in the profile of the Worker in build/ (bench/anchors/ceiling.sh).
const PROFILE = existsSync(join(root, "build", ".built-release")) ? "release" : "dev";
const CEILING = join(root, "target", "ceiling", PROFILE);
const SECRET = "bench-secret";

const results = { date: new Date().toISOString(), settings: { SECONDS, RUNS, LEVELS, CALLS, CONTEXTS, TOOL }, size: {}, start: {}, side_by_side: [], side_2026: [], ceilings: [], cost: [], breakdown: [], targets: [], native: [] };
const f = (n, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : "—");
const row = (cells, widths) => cells.map((c, i) => String(c)[i ? "padStart" : "padEnd"](widths[i])).join("  ");
/** A median's requests/s with the spread of its runs beside it: `795 (700–810)`. */
const spread = (x) => `${f(x.rps, 0)} (${f(Math.min(...x.runs.map((r) => r.rps)), 0)}–${f(Math.max(...x.runs.map((r) => r.rps)), 0)})`;

/**
 * The run that stands for several: the one with the median requests/s (for an even count, the
 * lower of the two middle ones, so its p50 and p99 are figures one run really had).
 */
function median(runs) {
  const sorted = [...runs].sort((a, b) => a.rps - b.rps);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/**
 * Measures every server in `servers` at `clients` clients, RUNS times: each round takes the servers
 * in turn, starting one later each round, so what the machine does meanwhile falls on all of them
 * alike. A short warm-up per server before its first run, so none pays for compiling its code
 * inside the window. Returns, per server, the median run's figures, `errors` over all runs, the
 * first error seen, and `runs`: every run's requests/s, p50, p99 and errors.
 */
async function rounds(servers, { clients, call }) {
  const names = Object.keys(servers);
  const runs = Object.fromEntries(names.map((n) => [n, []]));
  for (const name of names) await load(servers[name], { clients, seconds: Math.min(1, SECONDS / 5), call });
  for (let round = 0; round < RUNS; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(round + i) % names.length];
      runs[name].push(await load(servers[name], { clients, seconds: SECONDS, call }));
    }
  }
  return Object.fromEntries(names.map((name) => {
    const all = runs[name];
    const { rps, p50, p99 } = median(all);
    return [name, {
      rps, p50, p99, calls: all.reduce((a, r) => a + r.calls, 0), errors: all.reduce((a, r) => a + r.errors, 0),
      firstError: all.find((r) => r.firstError)?.firstError ?? null,
      runs: all.map(({ rps, p50, p99, errors }) => ({ rps, p50, p99, errors })),
    }];
  }));
}

function sizes() {
  const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
  const files = { "ours: index_bg.wasm": join(root, "build", "index_bg.wasm"), "ours: index.js": join(root, "build", "index.js"), "reference: index.js (minified)": REFERENCE, "McpAgent: mcp-agent.js (minified)": MCP_AGENT, "createMcpHandler: (minified)": MCP_HANDLER, "ceiling: index_bg.wasm": join(CEILING, "index_bg.wasm") };
  console.log("\n## Size");
  for (const [name, file] of Object.entries(files)) {
    // BENCH_ONLY=cost needs only build/ and the McpAgent bundle; say what is missing, and go on.
    if (!existsSync(file)) {
      console.log(`  ${name.padEnd(36)} not built (${relative(root, file)})`);
      continue;
    }
    const bytes = readFileSync(file);
    const gz = gzipSync(bytes, { level: 9 }).length;
    results.size[name] = { raw: bytes.length, gzip: gz };
    console.log(`  ${name.padEnd(36)} raw ${kib(bytes.length).padStart(11)}  gzip ${kib(gz).padStart(11)}`);
  }
}

/** Our Worker, as the tests start it, with what the seed targets need. */
const ourVars = (model) => ({ JWT_SECRET: SECRET, RATE_LIMITS: "*=off", REQUEST_LIMIT: "off", SESSION_CREATE_LIMIT: "off", MODEL_PROVIDER_URL: model.url, MODEL_PROVIDER_KEY: "bench", MODEL_PROVIDER_MODEL: "bench" });

function startReference() {
  const mf = new Miniflare({ scriptPath: REFERENCE, modules: true, compatibilityDate: "2026-07-30", handleRuntimeStdio: (out, err) => { out.resume(); err.pipe(process.stderr); } });
  return mf.ready.then((url) => ({ mf, mcpUrl: new URL("/mcp", url).href, stop: () => mf.dispose() }));
}

/** The McpAgent anchor as `wrangler deploy` would run it (bench/anchors/mcp-agent.wrangler.jsonc). */
function startMcpAgent() {
  const mf = new Miniflare({
    scriptPath: MCP_AGENT, modules: true, compatibilityDate: "2026-07-30", compatibilityFlags: ["nodejs_compat"],
    durableObjects: { MCP_OBJECT: { className: "Anchor", useSQLite: true } },
    handleRuntimeStdio: (out, err) => { out.resume(); err.pipe(process.stderr); },
  });
  return mf.ready.then((url) => ({ mf, mcpUrl: new URL("/mcp", url).href, stop: () => mf.dispose() }));
}

/** The createMcpHandler anchor (bench/anchors/create-mcp-handler.wrangler.jsonc), stateless. */
function startMcpHandler() {
  const mf = new Miniflare({
    scriptPath: MCP_HANDLER, modules: true, compatibilityDate: "2026-07-30", compatibilityFlags: ["nodejs_compat"],
    handleRuntimeStdio: (out, err) => { out.resume(); err.pipe(process.stderr); },
  });
  return mf.ready.then((url) => ({ mf, mcpUrl: new URL("/mcp", url).href, stop: () => mf.dispose() }));
}

/** The ceilings' Worker (bench/anchors/ceiling, built by bench/anchors/ceiling.sh). */
function startCeiling() {
  const mf = new Miniflare({
    scriptPath: join(CEILING, "index.js"), rootPath: root, modules: true,
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"], fallthrough: true }],
    compatibilityDate: "2026-07-30", durableObjects: { HOP: { className: "Hop", useSQLite: true } },
    handleRuntimeStdio: (out, err) => { out.resume(); err.pipe(process.stderr); },
  });
  return mf.ready.then((url) => ({ mf, url, stop: () => mf.dispose() }));
}

/** Milliseconds from starting workerd to the first answered initialize, fresh each time. */
async function startTimes(model) {
  console.log("\n## Start: workerd start to first answered request (initialize), best of 3");
  const kinds = {
    ours: async () => {
      const mf = new Miniflare({
        scriptPath: join(root, "build", "index.js"), rootPath: root, modules: true,
        modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"], fallthrough: true }],
        compatibilityDate: "2026-07-30", compatibilityFlags: ["enable_request_signal"],
        durableObjects: { SESSION: { className: "Session", useSQLite: true }, CONFIRMATIONS: { className: "Confirmation", useSQLite: true }, RATE_LIMITER: { className: "RateLimiter", useSQLite: true }, LISTENERS: { className: "Listeners", useSQLite: true } },
        d1Databases: ["DB"], kvNamespaces: ["CACHE"],
        bindings: { ALLOWED_ORIGINS: "", ALLOWED_HOSTS: "", MCP_CATALOG: "production", ANONYMOUS_ACCESS: "true", ...ourVars(model) },
        handleRuntimeStdio: (out, err) => { out.resume(); err.resume(); },
      });
      return { mf, mcpUrl: new URL("/mcp", await mf.ready).href, stop: () => mf.dispose() };
    },
    reference: startReference,
    McpAgent: startMcpAgent,
  };
  for (const [name, start] of Object.entries(kinds)) {
    const times = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const w = await start();
      const srv = server(w.mcpUrl, { connections: 1 });
      await srv.connect();
      times.push(performance.now() - t0);
      await srv.close();
      await w.stop();
    }
    results.start[name] = Math.min(...times);
    console.log(`  ${name.padEnd(10)} ${f(Math.min(...times), 0)} ms`);
  }
}

/** The calls compared side by side: same tool, same input, same output on both servers. */
const SIDE_ALL = [
  { label: "get_mode_indicator", tool: "get_mode_indicator", args: {} },
  {
    label: "process_template trip (no cache)", tool: "process_template",
    args: { template_name: "trip-confirmation-comprehensive", variables: tripVars, processing_options: { use_cache: false } },
  },
];
const SIDE = SIDE_ALL.filter((entry) => !TOOL || entry.tool === TOOL);
if (!SIDE.length) throw new Error(`BENCH_TOOL=${TOOL} is none of the side-by-side tools (${SIDE_ALL.map((e) => e.tool).join(", ")})`);

/** JSON with object keys sorted, so two equal values print the same whatever their key order. */
const canonical = (v) => JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));
/** What a client sees of a result: its text and structured content. */
const seen = (r) => canonical([r.result?.content, r.result?.structuredContent]);

async function sideBySide(ours, peers) {
  console.log(`\n## Side by side with the TypeScript peers (${Object.keys(peers).join(", ")}): ${SECONDS} s per level, median of ${RUNS} run(s) (min–max), one session per virtual client`);
  const servers = { ours: server(ours.mcpUrl) };
  for (const [name, peer] of Object.entries(peers)) servers[name] = server(peer.mcpUrl);
  for (const entry of SIDE) {
    const a = await (await servers.ours.connect()).call(entry.tool, entry.args);
    for (const name of Object.keys(peers)) {
      const b = await (await servers[name].connect()).call(entry.tool, entry.args);
      const same = seen(a) === seen(b);
      console.log(`  ${entry.label}: outputs ${same ? "identical" : "DIFFER (figures not comparable)"} (ours and ${name})${a.ok && b.ok ? "" : `; ours ${a.error ?? "ok"}, ${name} ${b.error ?? "ok"}`}`);
    }
  }
  const short = (name) => (name === "reference" ? "ref" : name);
  const widths = [34, 6, 20, 8, 8, 6, ...Object.keys(peers).flatMap((name) => [Math.max(20, short(name).length + 4), 8, 8, 6, 7])];
  console.log(row(["call", "conc", "ours rps", "p50 ms", "p99 ms", "err", ...Object.keys(peers).flatMap((name) => [`${short(name)} rps`, "p50 ms", "p99 ms", "err", "ratio"])], widths));
  for (const entry of SIDE) {
    for (const clients of LEVELS) {
      const r = await rounds(servers, { clients, call: (s) => s.call(entry.tool, entry.args) });
      // `ratio`: our median throughput over each peer's.
      const ratios = Object.fromEntries(Object.keys(peers).map((name) => [name, r.ours.rps / r[name].rps]));
      results.side_by_side.push({ call: entry.label, concurrency: clients, ...r, ratio: ratios.reference, ratios });
      const cells = (x) => [spread(x), f(x.p50, 2), f(x.p99, 2), x.errors];
      console.log(row([entry.label, clients, ...cells(r.ours), ...Object.keys(peers).flatMap((name) => [...cells(r[name]), f(ratios[name], 2)])], widths));
      for (const [name, s] of Object.entries(r)) if (s.firstError) console.log(`    ${name}: first error: ${String(s.firstError).slice(0, 200)}`);
    }
  }
  await breakdown(servers, ours.mcpUrl);
  await Promise.all(Object.values(servers).map((s) => s.close()));
}

/** A bearer token for our 2026-07-28 lane: its modes and runs are kept per caller, so a call needs one. */
const bearer = (mcpUrl) => ({ authorization: `Bearer ${hs256({ sub: "bench-caller", roles: [], aud: mcpUrl, exp: Math.floor(Date.now() / 1000) + 3600 }, SECRET)}` });

/** The 2026-07-28 lane's calls: ours with a caller's token, the anchor as it is (it has no callers). */
const SIDE_2026 = SIDE;

/**
 * Our 2026-07-28 lane beside `createMcpHandler`, both driven by the 2026-07-28 client (one request
 * per call, no session); answers checked byte-identical first, as for the 2025 lane.
 */
async function sideBySide2026(ours, anchor) {
  console.log(`\n## 2026-07-28 lane side by side with createMcpHandler: ${SECONDS} s per level, median of ${RUNS} run(s) (min–max), stateless client (no session)`);
  const servers = { ours: stateless(ours.mcpUrl, { headers: bearer(ours.mcpUrl) }), createMcpHandler: stateless(anchor.mcpUrl) };
  for (const entry of SIDE_2026) {
    const a = await (await servers.ours.connect()).call(entry.tool, entry.args);
    const b = await (await servers.createMcpHandler.connect()).call(entry.tool, entry.args);
    console.log(`  ${entry.label}: outputs ${seen(a) === seen(b) ? "identical" : "DIFFER (figures not comparable)"} (ours 2026 and createMcpHandler)${a.ok && b.ok ? "" : `; ours ${a.error ?? "ok"}, createMcpHandler ${b.error ?? "ok"}`}`);
  }
  const widths = [34, 6, 20, 8, 8, 6, 20, 8, 8, 6, 7];
  console.log(row(["call (2026-07-28)", "conc", "ours rps", "p50 ms", "p99 ms", "err", "cMH rps", "p50 ms", "p99 ms", "err", "ratio"], widths));
  for (const entry of SIDE_2026) {
    for (const clients of LEVELS) {
      const r = await rounds(servers, { clients, call: (s) => s.call(entry.tool, entry.args) });
      const ratio = r.ours.rps / r.createMcpHandler.rps;
      results.side_2026.push({ call: entry.label, concurrency: clients, ...r, ratios: { createMcpHandler: ratio } });
      const cells = (x) => [spread(x), f(x.p50, 2), f(x.p99, 2), x.errors];
      console.log(row([entry.label, clients, ...cells(r.ours), ...cells(r.createMcpHandler), f(ratio, 2)], widths));
      for (const [name, s] of Object.entries(r)) if (s.firstError) console.log(`    ${name}: first error: ${String(s.firstError).slice(0, 200)}`);
    }
  }
  await Promise.all(Object.values(servers).map((s) => s.close()));
}

/**
 * The ceilings in the same workerd version: a Rust Worker answering from its wasm entry alone
 * (`hello-world`), and one forwarding each request to a Durable Object that does nothing
 * (`DO hop`), at the same client levels.
 */
async function ceilings(ceiling) {
  console.log(`\n## Ceilings (bench/anchors/ceiling, Rust, built ${PROFILE} as the Worker in build/ is): ${SECONDS} s per level, median of ${RUNS} run(s) (min–max)`);
  const kinds = { "hello-world": plain(new URL("/", ceiling.url).href), "DO hop": plain(new URL("/hop", ceiling.url).href) };
  const widths = [34, 6, 20, 8, 8, 6];
  console.log(row(["ceiling", "conc", "rps", "p50 ms", "p99 ms", "err"], widths));
  const measured = [];
  for (const clients of LEVELS) {
    const r = await rounds(kinds, { clients, call: (s) => s.call() });
    for (const name of Object.keys(kinds)) measured.push({ ceiling: name, concurrency: clients, ...r[name] });
  }
  for (const name of Object.keys(kinds)) {
    for (const r of measured.filter((m) => m.ceiling === name)) {
      results.ceilings.push(r);
      console.log(row([name, r.concurrency, spread(r), f(r.p50, 2), f(r.p99, 2), r.errors], widths));
      if (r.firstError) console.log(`    ${name}: first error: ${String(r.firstError).slice(0, 200)}`);
    }
  }
  await Promise.all(Object.values(kinds).map((srv) => srv.close()));
}

/** The lanes whose storage operations per call the bench counts (bench/cost.js). */
const COST_LANES = (trip) => [
  { label: "ours 2025 get_mode_indicator", server: "ours", era: "2025", tool: "get_mode_indicator", args: {} },
  { label: "ours 2025 process_template (no cache)", server: "ours", era: "2025", tool: "process_template", args: trip },
  { label: "ours 2026 get_mode_indicator", server: "ours", era: "2026", tool: "get_mode_indicator", args: {}, token: true },
  { label: "ours 2026 process_template (no cache)", server: "ours", era: "2026", tool: "process_template", args: trip, token: true },
  { label: "McpAgent get_mode_indicator", server: "McpAgent", era: "2025", tool: "get_mode_indicator", args: {} },
  { label: "McpAgent process_template", server: "McpAgent", era: "2025", tool: "process_template", args: trip },
];

/**
 * Where a call's time goes, one client: a request our Worker refuses before any session object
 * (the Worker and wasm entry alone), `ping` (plus one round trip to the session's Durable Object
 * and its SQLite), and the cheapest tool (plus the executor: schema check, event log, result).
 */
async function breakdown(servers, ourUrl) {
  console.log(`\n## Where the time goes (one client, ${SECONDS} s each)`);
  const widths = [58, 9, 8, 8];
  console.log(row(["request", "rps", "p50 ms", "p99 ms"], widths));
  const edge = server(ourUrl, { connections: 1 });
  const lat = [];
  const t0 = performance.now();
  while (performance.now() - t0 < SECONDS * 1000) {
    const start = performance.now();
    await edge.raw({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    lat.push(performance.now() - start);
  }
  await edge.close();
  const rows = [["ours: tools/list without a session (refused by the Worker)", summary(lat, 0, performance.now() - t0)]];
  for (const [name, srv] of Object.entries(servers)) {
    rows.push([`${name}: ping in a session`, await load(srv, { clients: 1, seconds: SECONDS, call: (s) => s.rpc("ping", {}) })]);
    rows.push([`${name}: tools/call get_mode_indicator`, await load(srv, { clients: 1, seconds: SECONDS, call: (s) => s.call("get_mode_indicator", {}) })]);
  }
  for (const [label, r] of rows) {
    results.breakdown.push({ request: label, ...r });
    console.log(row([label, f(r.rps, 0), f(r.p50, 2), f(r.p99, 2)], widths));
  }
}

/** Loads the synthetic contexts into D1 in batches, and makes any cached index stale. */
async function loadContexts(db, n) {
  const rows = syntheticContexts(n);
  const cols = Object.keys(rows[0]);
  const sql = `INSERT OR REPLACE INTO contexts (${cols.join(", ")}) VALUES (${cols.map((_, i) => `?${i + 1}`).join(", ")})`;
  for (let i = 0; i < rows.length; i += 500) {
    await db.batch(rows.slice(i, i + 500).map((r) => db.prepare(sql).bind(...cols.map((c) => r[c]))));
  }
  const generation = await db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'flowmind_generation'").first();
  if (generation) await db.prepare("UPDATE flowmind_generation SET generation = generation + 1").run();
}

const approval = { traveler_name: "Dana Lee", destination: "Berlin", travel_dates: "2025-10-06 to 2025-10-08", total_cost: 2150, business_justification: "Client workshop" };
const corporate = { company_name: "Acme", traveler_name: "Dana Lee", cost_center: "CC-7", trip_requirements: { city: "Berlin" }, budget_approval: 3000 };
const words = ["sync", "login", "error", "invoice", "export", "dashboard", "slow", "password", "billing", "timeout"];
const requests = JSON.parse(readFileSync(join(root, "tests", "data", "flowmind_requests.json"), "utf8"));

/**
 * The seed's stated targets, one entry per call kind. `as`: which caller (anonymous or the sample
 * company's CEO); `args(i)`: the i-th call's arguments; `target`: the seed's figure in ms, and where
 * it is stated. Entries whose tool is not in tools/list are reported as not available.
 */
const TARGETS = [
  { label: "process_template trip (result cache)", tool: "process_template", target: 100, seed: "000", args: () => ({ template_name: "trip-confirmation-comprehensive", variables: tripVars }) },
  { label: "process_template trip (no cache)", tool: "process_template", target: 100, seed: "000", args: () => ({ template_name: "trip-confirmation-comprehensive", variables: tripVars, processing_options: { use_cache: false } }) },
  {
    label: "create_template (D1 upsert)", tool: "create_template", target: 200, seed: "000",
    args: (i) => ({
      template_definition: {
        name: `bench-${i % 50}`, title: "Bench template", category: "custom", content: "Hi {client.name}, see you in {city|upper}.",
        variables_schema: { "client.name": { type: "string", required: true }, city: { type: "string" } },
        usage_examples: [{ name: "one", variables: { client: { name: "A" }, city: "Rome" } }],
      },
      creation_options: { overwrite_existing: true },
    }),
  },
  {
    label: "create_chain (plan + refs + upsert)", tool: "create_chain", target: 500, seed: "000",
    args: (i) => ({
      chain_definition: {
        name: `bench-chain-${i % 50}`, title: "Bench chain", category: "custom",
        steps: [
          { id: 1, name: "approval", type: "template_processing", template_id: "corporate-approval-request", input_variables: [], output_variables: ["approval_text"] },
          { id: 2, name: "headline", type: "data_transformation", input_template: "{traveler_name|upper} to {destination}", input_variables: [], output_variables: ["headline"] },
        ],
      },
      creation_options: { overwrite_existing: true },
    }),
  },
  { label: "execute_chain corporate (sync, 5 steps)", tool: "execute_chain", target: 2000, seed: "000", args: () => ({ chain_name: "corporate-booking-workflow", variables: corporate }) },
  { label: "execute_chain 2 steps (sync)", tool: "execute_chain", target: 2000, seed: "000", args: () => ({ chain_name: "bench-chain-0", variables: approval }) },
  {
    label: "list_employees (uncached SQL)", tool: "list_employees", as: "ceo", target: 500, seed: "002",
    // Distinct arguments on every call, so the KV read cache does not answer.
    args: (i, ctx) => ({ department: ctx.departments[i % ctx.departments.length], limit: 1 + (Math.floor(i / ctx.departments.length) % 50) }),
  },
  { label: "search_tickets (FTS5, uncached)", tool: "search_tickets", as: "ceo", target: 500, seed: "002", args: (i) => ({ query: `${words[i % 10]} ${words[Math.floor(i / 10) % 10]}`, limit: 1 + (Math.floor(i / 100) % 50) }) },
  {
    label: `field_request (${CONTEXTS} contexts)`, tool: "field_request", target: null, seed: "001", needsContexts: true,
    args: (i) => ({ query: requests[i % requests.length].query.padEnd(10, "."), extracted_variables: requests[i % requests.length].extracted_variables ?? {}, confidence_level: requests[i % requests.length].confidence_level }),
  },
  { label: "epic-tide-save-work", tool: "epic-tide-save-work", target: null, seed: "004", args: (i) => ({ what: `Bench work ${i}`, how: ["measure", "report"], metrics: ["p99 printed"] }) },
];

async function targets(ours) {
  console.log(`\n## Seed targets: ${CALLS} sequential calls each, one session, after 10 warm-up calls (local workerd)`);
  const db = await ours.mf.getD1Database("DB");
  const ceo = (await db.prepare("SELECT id FROM hr_employees WHERE manager_id IS NULL").first()).id;
  const token = hs256({ sub: ceo, roles: ["executive"], aud: ours.mcpUrl, exp: Math.floor(Date.now() / 1000) + 3600 }, SECRET);
  const ctx = { departments: (await db.prepare("SELECT name FROM hr_departments ORDER BY name").all()).results.map((r) => r.name) };
  const srv = server(ours.mcpUrl, { connections: 1 });
  const callers = { anonymous: await srv.connect(), ceo: await srv.connect({ authorization: `Bearer ${token}` }) };
  // A caller sees only the tools its roles allow: the union of both lists is what the server has.
  const available = new Set();
  for (const c of Object.values(callers)) for (const t of (await c.rpc("tools/list", {})).reply.result.tools) available.add(t.name);
  const widths = [40, 8, 8, 10, 6];
  console.log(row(["call", "p50 ms", "p99 ms", "target ms", "seed"], widths));
  let contextsLoaded = false;
  for (const t of TARGETS) {
    if (FIELD_REQUEST_ONLY && t.tool !== "field_request") continue;
    if (!available.has(t.tool)) {
      console.log(`${t.label.padEnd(widths[0])}  not available (no ${t.tool} in tools/list)`);
      results.targets.push({ call: t.label, available: false });
      continue;
    }
    if (t.needsContexts && !contextsLoaded) {
      await loadContexts(db, CONTEXTS);
      contextsLoaded = true;
    }
    const caller = callers[t.as ?? "anonymous"];
    let error = null;
    for (let i = 0; i < 10 && !error; i++) {
      const r = await caller.call(t.tool, t.args(i, ctx));
      if (!r.ok) error = r.error;
    }
    if (error) {
      console.log(`${t.label.padEnd(widths[0])}  failed: ${String(error).slice(0, 160)}`);
      results.targets.push({ call: t.label, error });
      continue;
    }
    const lat = [];
    for (let i = 0; i < CALLS; i++) {
      const t0 = performance.now();
      const r = await caller.call(t.tool, t.args(i + 10, ctx));
      if (r.ok) lat.push(performance.now() - t0);
      else error ??= r.error;
    }
    lat.sort((a, b) => a - b);
    const p50 = pct(lat, 50);
    const p99 = pct(lat, 99);
    results.targets.push({ call: t.label, p50, p99, target: t.target, errors: CALLS - lat.length });
    console.log(row([t.label, f(p50, 2), f(p99, 2), t.target === null ? "none" : `< ${t.target}`, t.seed], widths) + (error ? `  (${CALLS - lat.length} errors: ${String(error).slice(0, 100)})` : ""));
  }
  await srv.close();
}

/**
 * One line per lane and peer, `ratio <lane> vs <peer>: <lowest ratio over the client levels>` (our
 * median throughput over the peer's median at each level, see `rounds`; for the native template
 * benchmarks, the peer's time over ours), so
 * runs can be compared by a script: 1.00 or more means we are at least as fast.
 */
function ratios() {
  console.log(`\n## Summary (throughput ratios from the median of ${RUNS} run(s) per level)`);
  const lowest = (call, peer) => {
    const rs = results.side_by_side.filter((r) => r.call === call).map((r) => r.ratios[peer]).filter(Number.isFinite);
    return rs.length ? Math.min(...rs) : null;
  };
  const lines = [];
  for (const peer of ["reference", "McpAgent"]) {
    lines.push(["2025", peer, lowest("get_mode_indicator", peer)]);
    lines.push(["2025 process_template", peer, lowest("process_template trip (no cache)", peer)]);
  }
  const lowest2026 = (call) => {
    const rs = results.side_2026.filter((r) => r.call === call).map((r) => r.ratios.createMcpHandler).filter(Number.isFinite);
    return rs.length ? Math.min(...rs) : null;
  };
  lines.push(["2026", "createMcpHandler", lowest2026("get_mode_indicator")]);
  lines.push(["2026 process_template", "createMcpHandler", lowest2026("process_template trip (no cache)")]);
  // Lane against ceiling: our throughput over the ceiling's at the same client level (1.00 would
  // mean the lane costs nothing beyond what the ceiling does).
  const vsCeiling = (rows, call, ceiling) => {
    const rs = rows.filter((r) => r.call === call).map((r) => r.ours.rps / results.ceilings.find((c) => c.ceiling === ceiling && c.concurrency === r.concurrency)?.rps).filter(Number.isFinite);
    return rs.length ? Math.min(...rs) : null;
  };
  lines.push(["2025", "DO-hop ceiling", vsCeiling(results.side_by_side, "get_mode_indicator", "DO hop")]);
  lines.push(["2026", "hello-world ceiling", vsCeiling(results.side_2026, "get_mode_indicator", "hello-world")]);
  const time = (id) => results.native.find((r) => r.bench === id)?.mean_ns;
  for (const what of ["render", "parse+render"]) {
    const [ours, theirs] = [time(`template/ours/${what}`), time(`template/minijinja/${what}`)];
    lines.push([`template ${what}`, "MiniJinja", ours && theirs ? theirs / ours : null]);
  }
  results.ratios = [];
  for (const [lane, peer, ratio] of lines) {
    if (ratio === null) continue;
    results.ratios.push({ lane, peer, ratio });
    console.log(`ratio ${lane} vs ${peer}: ${f(ratio, 2)}`);
  }
}

console.log(`mcp-edge bench, ${new Date().toISOString()}, ${process.env.BENCH_MACHINE ?? "this machine"}`);
sizes();
const model = await modelStandIn();
try {
  if (FIELD_REQUEST_ONLY) {
    const ours = await startWorker(ourVars(model), { quiet: true });
    try {
      await targets(ours);
    } finally {
      await ours.stop();
    }
  }
  if (part("side") || part("targets")) await startTimes(model);
  if (part("side") || part("targets")) {
    // All servers run at once, as the issue asks: none gets the machine to itself.
    const ours = await startWorker(ourVars(model), { quiet: true });
    const reference = await startReference();
    const mcpAgent = await startMcpAgent();
    const mcpHandler = await startMcpHandler();
    const ceiling = await startCeiling();
    try {
      if (part("side")) {
        await sideBySide(ours, { reference, McpAgent: mcpAgent });
        await sideBySide2026(ours, mcpHandler);
        await ceilings(ceiling);
      }
      if (part("targets")) await targets(ours);
    } finally {
      await ours.stop();
      await reference.stop();
      await mcpAgent.stop();
      await mcpHandler.stop();
      await ceiling.stop();
    }
  }
  if (part("side") || part("cost")) {
    // Its own Workers (wrapped by the counter), after the timed parts, so counting costs them nothing.
    results.cost = await costs(COST_LANES(SIDE_ALL[1].args), { calls: COST_CALLS, bindings: ourVars(model), bearer, f, row });
  }
} finally {
  model.close();
}
if (part("targets")) await flowmindAccuracy();
if (NATIVE && part("native")) results.native = native(root, { f, row }) ?? [];
ratios();
mkdirSync(join(root, "bench", "results"), { recursive: true });
const out = join(root, "bench", "results", `bench-${results.date.replace(/[:.]/g, "-")}.json`);
writeFileSync(out, JSON.stringify(results, null, 2));
console.log(`\nresults: ${out}`);
