// Before/after of one change on a shared, loaded machine: two builds of our Worker run at once
// and are measured in alternation, the order swapped each round, so both see the same load.
// Prints each build's requests/s and p50 per call and client level, and the ratio after/before;
// then the CPU time its workerd process spent per call (BENCH_CPU_CALLS calls, one client), which
// other processes on the machine disturb far less than wall time. Figures only, nothing asserted.
//
// Usage: node bench/ab.js <before-dir> <after-dir>: each a copy of build/ (index.js, index_bg.wasm)
// inside the repository (workerd serves modules from under its root only), e.g. target/ab/before.
// Settings: BENCH_SECONDS per measurement (2; 0: CPU figures only), BENCH_LEVELS (1,8), BENCH_ROUNDS
// (3), BENCH_CPU_CALLS per CPU measurement (300).
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Miniflare } from "miniflare";
import { loadSampleData, migrate, root } from "../tests/support/worker.js";
import { tripVars } from "../tests/support/samples.js";
import { hs256 } from "../scripts/token.js";
import { load, server, stateless } from "./client.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const LEVELS = (process.env.BENCH_LEVELS ?? "1,8").split(",").map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CPU_CALLS = Number(process.env.BENCH_CPU_CALLS ?? 300);
const SECRET = "bench-secret";
const [before, after] = process.argv.slice(2).map((d) => resolve(d));
if (!before || !after) {
  console.error("usage: node bench/ab.js <before-dir> <after-dir> (copies of build/)");
  process.exit(2);
}

/** The workerd processes this process started (Linux /proc), by pid. */
function workerds() {
  const pids = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const [comm, rest] = [stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), stat.slice(stat.lastIndexOf(")") + 2).split(" ")];
      if (comm.startsWith("workerd") && Number(rest[1]) === process.pid) pids.push(Number(pid));
    } catch {}
  }
  return pids;
}

/** CPU time (user + system) process `pid` has used, in ms. */
function cpuMs(pid) {
  const rest = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((Number(rest[11]) + Number(rest[12])) * 1000) / 100;
}

/** Our Worker from `dir`, configured as bench/run.js configures it. */
async function start(dir) {
  const known = new Set(workerds());
  const mf = new Miniflare({
    rootPath: root, scriptPath: join(dir, "index.js"), modules: true,
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"], fallthrough: true }],
    compatibilityDate: "2026-07-30", compatibilityFlags: ["enable_request_signal"],
    durableObjects: { SESSION: { className: "Session", useSQLite: true }, CONFIRMATIONS: { className: "Confirmation", useSQLite: true }, RATE_LIMITER: { className: "RateLimiter", useSQLite: true }, LISTENERS: { className: "Listeners", useSQLite: true } },
    d1Databases: ["DB"], kvNamespaces: ["CACHE"],
    bindings: { ALLOWED_ORIGINS: "", ALLOWED_HOSTS: "", MCP_CATALOG: "production", ANONYMOUS_ACCESS: "true", JWT_SECRET: SECRET, RATE_LIMITS: "*=off", REQUEST_LIMIT: "off", SESSION_CREATE_LIMIT: "off" },
    handleRuntimeStdio: (out, err) => { out.resume(); err.resume(); },
  });
  const url = await mf.ready;
  const db = await mf.getD1Database("DB");
  await migrate(db);
  await loadSampleData(db);
  const mcpUrl = new URL("/mcp", url).href;
  const token = hs256({ sub: "bench-caller", roles: [], aud: mcpUrl, exp: Math.floor(Date.now() / 1000) + 3600 }, SECRET);
  const pid = workerds().find((p) => !known.has(p));
  return { mf, pid, lanes: { 2025: server(mcpUrl), 2026: stateless(mcpUrl, { headers: { authorization: `Bearer ${token}` } }) } };
}

const trip = { template_name: "trip-confirmation-comprehensive", variables: tripVars, processing_options: { use_cache: false } };
const CALLS = [
  { lane: "2025", tool: "get_mode_indicator", args: {} },
  { lane: "2025", tool: "process_template", args: trip },
  { lane: "2026", tool: "get_mode_indicator", args: {} },
  { lane: "2026", tool: "process_template", args: trip },
];

const builds = { before: await start(before), after: await start(after) };
const sums = {};
const cpu = {};
try {
  for (const [name, b] of Object.entries(builds)) {
    for (const c of CALLS) {
      const r = await (await b.lanes[c.lane].connect()).call(c.tool, c.args);
      if (!r.ok) throw new Error(`${name} ${c.lane} ${c.tool}: ${r.error}`);
    }
  }
  for (let round = 0; round < (SECONDS > 0 ? ROUNDS : 0); round++) {
    const order = round % 2 ? ["after", "before"] : ["before", "after"];
    for (const c of CALLS) {
      for (const clients of LEVELS) {
        for (const name of order) {
          const srv = builds[name].lanes[c.lane];
          const call = (s) => s.call(c.tool, c.args);
          await load(srv, { clients, seconds: Math.min(1, SECONDS / 4), call });
          const r = await load(srv, { clients, seconds: SECONDS, call });
          const key = `${c.lane} ${c.tool}|${clients}|${name}`;
          (sums[key] ??= []).push(r);
          if (r.errors) console.log(`  ${key}: ${r.errors} errors, first: ${String(r.firstError).slice(0, 200)}`);
        }
      }
    }
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? ["after", "before"] : ["before", "after"];
    for (const c of CALLS) {
      for (const name of order) {
        const b = builds[name];
        if (!b.pid) continue;
        const s = await b.lanes[c.lane].connect();
        const t0 = cpuMs(b.pid);
        for (let i = 0; i < CPU_CALLS; i++) await s.call(c.tool, c.args);
        (cpu[`${c.lane} ${c.tool}|${name}`] ??= []).push((cpuMs(b.pid) - t0) / CPU_CALLS);
      }
    }
  }
} finally {
  for (const b of Object.values(builds)) {
    await Promise.all(Object.values(b.lanes).map((l) => l.close()));
    await b.mf.dispose();
  }
}

const mean = (xs) => xs.reduce((a, x) => a + x, 0) / xs.length;
console.log(`ab: ${new Date().toISOString()}, ${ROUNDS} rounds of ${SECONDS} s, levels ${LEVELS.join(",")}`);
if (SECONDS > 0) console.log(["call".padEnd(28), "conc", "before rps", "p50", "after rps", "p50", "after/before"].join("  "));
for (const c of SECONDS > 0 ? CALLS : []) {
  for (const clients of LEVELS) {
    const get = (name) => sums[`${c.lane} ${c.tool}|${clients}|${name}`];
    const [b, a] = [get("before"), get("after")];
    const rps = (rs) => mean(rs.map((r) => r.rps));
    const p50 = (rs) => mean(rs.map((r) => r.p50));
    console.log([`${c.lane} ${c.tool}`.padEnd(28), String(clients).padStart(4), rps(b).toFixed(0).padStart(10), p50(b).toFixed(2).padStart(5), rps(a).toFixed(0).padStart(9), p50(a).toFixed(2).padStart(5), (rps(a) / rps(b)).toFixed(2).padStart(12)].join("  "));
  }
}
if (Object.keys(cpu).length) {
  console.log(`\nCPU of each build's workerd process per call (${CPU_CALLS} calls back to back, one client; mean of ${ROUNDS} rounds; 10 ms ticks)`);
  console.log(["call".padEnd(28), "before ms", "after ms", "after/before"].join("  "));
  for (const c of CALLS) {
    const [b, a] = ["before", "after"].map((name) => mean(cpu[`${c.lane} ${c.tool}|${name}`]));
    console.log([`${c.lane} ${c.tool}`.padEnd(28), b.toFixed(3).padStart(9), a.toFixed(3).padStart(8), (a / b).toFixed(2).padStart(12)].join("  "));
  }
} else {
  console.log("\n(no CPU figures: the workerd processes were not found under /proc)");
}
