// Cost per call for `npm run bench`: the storage operations one call costs, per lane, measured at
// the runtime's APIs by bench/cost/counter.js around the built Worker and the McpAgent anchor
// (wrapper modules written to target/cost/, importing the builds unchanged). Each lane's calls run
// after a warm-up, sequentially, with the counter read before and after; docs/decisions.md turns
// the printed figures into a price per million calls.
import { mkdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { Miniflare } from "miniflare";
import { loadSampleData, migrate, root } from "../tests/support/worker.js";
import { server, stateless } from "./client.js";

const OUT = join(root, "target", "cost");
const COUNTER = join(root, "bench", "cost", "counter.js");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** BENCH_COST_DETAIL=1: each lane's Durable Object SQL statements, per call (also in the JSON). */
const DETAIL = process.env.BENCH_COST_DETAIL === "1";
/**
 * BENCH_COST_GAP_MS: a pause between the counted calls. Dashboard events are written in batches
 * (up to 250 ms behind the answer), so back-to-back calls share rows; a gap above that window gives
 * each call its own batch: the cost per call of a session used now and then, the worst case.
 */
const GAP_MS = Number(process.env.BENCH_COST_GAP_MS ?? 0);

/**
 * Writes target/cost/<name>.js: `bundle`'s exports, its Durable Object classes (`classes`) patched
 * on construction, its fetch handler patching the D1 (`DB`) and KV (`CACHE`) bindings and answering
 * `/__bench/cost` with the counter's totals. `entrypoint`: the default export is a class (workers-rs)
 * rather than a handler object.
 */
function wrapper(name, bundle, classes, entrypoint) {
  mkdirSync(OUT, { recursive: true });
  const rel = (p) => `./${relative(OUT, p)}`;
  const call = entrypoint ? "base.default.prototype.fetch.call({ env, ctx }, request)" : "base.default.fetch(request, env, ctx)";
  const text = `import * as base from ${JSON.stringify(rel(bundle))};
import { patchEnv, patchState, takeTotals } from ${JSON.stringify(rel(COUNTER))};
export * from ${JSON.stringify(rel(bundle))};
const counted = (B) => class extends B { constructor(ctx, env) { patchState(ctx); patchEnv(env.DB, env.CACHE); super(ctx, env); } };
${classes.map((c) => `export const ${c} = counted(base.${c});`).join("\n")}
export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__bench/cost") return Response.json(takeTotals());
    patchEnv(env.DB, env.CACHE);
    return ${call};
  },
};
`;
  const file = join(OUT, `${name}.js`);
  writeFileSync(file, text);
  return file;
}

/** Our Worker (build/) with the counter, configured as tests/support/worker.js configures it. */
async function startOurs(bindings) {
  const mf = new Miniflare({
    rootPath: root, scriptPath: wrapper("ours", join(root, "build", "index.js"), ["Session", "Confirmation", "RateLimiter", "Listeners"], true),
    modules: true, modulesRules: [{ type: "ESModule", include: ["**/*.js"] }, { type: "CompiledWasm", include: ["**/*.wasm"], fallthrough: true }],
    compatibilityDate: "2026-07-30", compatibilityFlags: ["enable_request_signal"],
    durableObjects: { SESSION: { className: "Session", useSQLite: true }, CONFIRMATIONS: { className: "Confirmation", useSQLite: true }, RATE_LIMITER: { className: "RateLimiter", useSQLite: true }, LISTENERS: { className: "Listeners", useSQLite: true } },
    d1Databases: ["DB"], kvNamespaces: ["CACHE"],
    bindings: { ALLOWED_ORIGINS: "", ALLOWED_HOSTS: "", MCP_CATALOG: "production", ANONYMOUS_ACCESS: "true", FLOWMIND_LEVELS: "off", ...bindings },
    handleRuntimeStdio: (out, err) => { out.resume(); err.pipe(process.stderr); },
  });
  const url = await mf.ready;
  const db = await mf.getD1Database("DB");
  await migrate(db);
  await loadSampleData(db);
  return { mf, url, mcpUrl: new URL("/mcp", url).href };
}

/** The McpAgent anchor (target/anchors/mcp-agent) with the counter. */
async function startMcpAgent() {
  const bundle = join(root, "target", "anchors", "mcp-agent", "mcp-agent.js");
  const mf = new Miniflare({
    rootPath: root, scriptPath: wrapper("mcp-agent", bundle, ["Anchor"], false), modules: true, modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
    compatibilityDate: "2026-07-30", compatibilityFlags: ["nodejs_compat"],
    durableObjects: { MCP_OBJECT: { className: "Anchor", useSQLite: true } },
    handleRuntimeStdio: (out, err) => { out.resume(); err.pipe(process.stderr); },
  });
  const url = await mf.ready;
  return { mf, url, mcpUrl: new URL("/mcp", url).href };
}

/** The counter's totals since its last reading. */
const totals = async (url) => (await fetch(new URL("/__bench/cost", url))).json();

/**
 * Per lane, the storage operations of one call (the mean over `calls` calls after 3 warm-up calls
 * and after the session, if any, is open). `lanes`: [{ label, server: "ours" | "McpAgent",
 * era: "2025" | "2026", token, tool, args }]; `token`: the call carries `bearer(mcpUrl)`'s header.
 */
export async function costs(lanes, { calls, bindings, bearer, f, row }) {
  console.log(`\n## Cost per call: storage operations one call costs (mean of ${calls} calls${GAP_MS ? `, ${GAP_MS} ms apart` : ", back to back"}, counted at the runtime's APIs)`);
  const servers = { ours: await startOurs(bindings), McpAgent: await startMcpAgent() };
  const widths = [46, 10, 10, 10, 10, 8, 8];
  console.log(row(["lane and call", "DO read", "DO written", "D1 read", "D1 written", "KV read", "KV write"], widths));
  const out = [];
  try {
    for (const lane of lanes) {
      const s = servers[lane.server];
      const headers = lane.token ? bearer(s.mcpUrl) : {};
      const client = lane.era === "2026" ? stateless(s.mcpUrl, { connections: 1, headers }) : server(s.mcpUrl, { connections: 1 });
      const c = await client.connect(headers);
      let error = null;
      for (let i = 0; i < 3; i++) error ??= (await c.call(lane.tool, lane.args)).error;
      // Writes the server makes behind its answer (batched events) land before the reading.
      await sleep(400);
      await totals(s.url);
      for (let i = 0; i < calls; i++) {
        if (i > 0 && GAP_MS > 0) await sleep(GAP_MS);
        error ??= (await c.call(lane.tool, lane.args)).error;
      }
      await sleep(400);
      const t = await totals(s.url);
      await c.close();
      await client.close();
      const { statements, ...counts } = t;
      const per = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / calls]));
      out.push({ lane: lane.label, ...per, statements, error });
      console.log(row([lane.label, f(per.doRowsRead, 1), f(per.doRowsWritten, 1), f(per.d1RowsRead, 1), f(per.d1RowsWritten, 1), f(per.kvReads, 1), f(per.kvWrites, 1)], widths)
        + (per.d1Uncounted ? `  (${f(per.d1Uncounted, 1)} D1 first/raw calls without meta, not counted)` : "")
        + (error ? `  (failed: ${String(error).slice(0, 100)})` : ""));
      if (DETAIL) {
        for (const [q, st] of Object.entries(statements).sort((a, b) => b[1].rowsWritten - a[1].rowsWritten)) {
          console.log(`    ${f(st.runs / calls, 1)} runs, ${f(st.rowsRead / calls, 1)} read, ${f(st.rowsWritten / calls, 1)} written: ${q}`);
        }
      }
    }
  } finally {
    await Promise.all(Object.values(servers).map((s) => s.mf.dispose()));
  }
  return out;
}
