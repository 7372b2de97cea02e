// `npm run bench`: wasm size (raw and gzipped) and tools/call latency and throughput against the
// release build in local workerd (Miniflare with real D1 and SQLite-backed Durable Objects).
// Prints figures; asserts nothing. Bounded: a fixed number of requests, all to 127.0.0.1.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { root, startWorker } from "../tests/support/worker.js";
import { initialize, post } from "../tests/support/mcp.js";
import { tripVars } from "../tests/support/samples.js";
import { hs256 } from "../scripts/token.js";
import { benchFlowmind } from "./flowmind.js";

const SEQUENTIAL = Number(process.env.BENCH_REQUESTS ?? 500);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 8);

const wasm = readFileSync(join(root, "build", "index_bg.wasm"));
const js = readFileSync(join(root, "build", "index.js"));
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
console.log("wasm size");
console.log(`  index_bg.wasm  raw ${kib(wasm.length)}  gzip ${kib(gzipSync(wasm, { level: 9 }).length)}`);
console.log(`  index.js       raw ${kib(js.length)}  gzip ${kib(gzipSync(js, { level: 9 }).length)}`);

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Calls a tool in `client` ({ session, headers }); fails on an error result or a domain error. */
async function callOnce(url, client, id, name, args) {
  args = typeof args === "function" ? args(id) : args;
  const t0 = performance.now();
  const res = await post(url, { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }, { session: client.session, headers: client.headers, version: "2025-11-25" });
  const body = await res.json();
  if (!body.result || body.result.isError || body.result.structuredContent?.status === "error") throw new Error(`bench call failed: ${JSON.stringify(body)}`);
  return performance.now() - t0;
}

async function measure(label, url, sessions, name, args) {
  for (let i = 0; i < 20; i++) await callOnce(url, sessions[0], i, name, args);
  const lat = [];
  for (let i = 0; i < SEQUENTIAL; i++) lat.push(await callOnce(url, sessions[0], i, name, args));
  lat.sort((a, b) => a - b);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      while (next < SEQUENTIAL) {
        const i = next++;
        await callOnce(url, sessions[(worker + i) % sessions.length], i, name, args);
      }
    }),
  );
  const rps = SEQUENTIAL / ((performance.now() - t0) / 1000);
  console.log(`  ${label.padEnd(36)} p50 ${pct(lat, 50).toFixed(2)} ms  p99 ${pct(lat, 99).toFixed(2)} ms  ${rps.toFixed(0)} rps (${CONCURRENCY} concurrent, ${sessions.length} sessions)`);
}

const SECRET = "bench-secret";
// Thousands of calls of one tool by one caller: the rate limits (RATE_LIMITS) are switched off.
const w = await startWorker({ JWT_SECRET: SECRET, RATE_LIMITS: "*=off" }, { quiet: true });
try {
  const sessions = [];
  for (let i = 0; i < SESSIONS; i++) sessions.push({ session: (await initialize(w.mcpUrl)).session, headers: {} });
  // Domain tools need a token: sessions signed in as the sample company's CEO (executive).
  const db = await w.mf.getD1Database("DB");
  const ceo = (await db.prepare("SELECT id FROM hr_employees WHERE manager_id IS NULL").first()).id;
  const token = hs256({ sub: ceo, roles: ["executive"], aud: new URL("/mcp", w.url).href, exp: Math.floor(Date.now() / 1000) + 3600 }, SECRET);
  const executives = [];
  for (let i = 0; i < SESSIONS; i++) {
    const headers = { authorization: `Bearer ${token}` };
    const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bench", version: "1" } } }, { headers });
    executives.push({ session: init.headers.get("mcp-session-id"), headers });
  }
  console.log(`tools/call, ${SEQUENTIAL} sequential calls for latency, then ${SEQUENTIAL} with ${CONCURRENCY} in flight`);
  await measure("get_mode_indicator (session SQLite)", w.mcpUrl, sessions, "get_mode_indicator", {});
  await measure("get_instruction_set (KV result cache)", w.mcpUrl, sessions, "get_instruction_set", { name: "vendor-search" });
  const approval = { traveler_name: "Dana Lee", destination: "Berlin", travel_dates: "2025-10-06 to 2025-10-08", total_cost: 2150, business_justification: "Client workshop" };
  // include_metadata skips the KV result cache, so these two differ only by the compiled-template
  // cache: the trip confirmation is the largest shipped template.
  for (const use_cache of [true, false]) {
    await measure(`process_template trip-confirmation (compiled cache ${use_cache ? "on" : "off"})`, w.mcpUrl, sessions, "process_template", {
      template_name: "trip-confirmation-comprehensive", variables: tripVars, processing_options: { output_format: "markdown", include_metadata: true, use_cache },
    });
  }
  await measure("process_template html (no cache)", w.mcpUrl, sessions, "process_template", {
    template_name: "corporate-approval-request", variables: approval, processing_options: { output_format: "html", use_cache: false },
  });
  await measure("create_template (D1 upsert)", w.mcpUrl, sessions, "create_template", (i) => ({
    template_definition: {
      name: `bench-${i % 50}`, title: "Bench template", category: "custom", content: "Hi {client.name}, see you in {city|upper}.",
      variables_schema: { "client.name": { type: "string", required: true }, city: { type: "string" } },
      usage_examples: [{ name: "one", variables: { client: { name: "A" }, city: "Rome" } }],
    },
    creation_options: { overwrite_existing: true },
  }));
  const steps = [
    { id: 1, name: "approval", type: "template_processing", template_id: "corporate-approval-request", input_variables: [], output_variables: ["approval_text"] },
    { id: 2, name: "headline", type: "data_transformation", input_template: "{traveler_name|upper} to {destination}", input_variables: [], output_variables: ["headline"] },
  ];
  await measure("create_chain (plan + refs + upsert)", w.mcpUrl, sessions, "create_chain", (i) => ({
    chain_definition: { name: `bench-chain-${i % 50}`, title: "Bench chain", category: "custom", steps },
    creation_options: { overwrite_existing: true },
  }));
  await measure("execute_chain (2 steps, recorded)", w.mcpUrl, sessions, "execute_chain", { chain_name: "bench-chain-0", variables: approval });
  // Distinct arguments on every call (until the combinations run out, after the latency run), so
  // the KV read cache does not answer: these latencies are the SQL's.
  const departments = (await db.prepare("SELECT name FROM hr_departments ORDER BY name").all()).results.map((r) => r.name);
  let k = 0;
  await measure("list_employees (row-level SQL, uncached)", w.mcpUrl, executives, "list_employees", () => {
    k++;
    return { department: departments[k % departments.length], limit: 1 + (Math.floor(k / departments.length) % 50) };
  });
  const words = ["sync", "login", "error", "invoice", "export", "dashboard", "slow", "password", "billing", "timeout"];
  k = 0;
  await measure("search_tickets (FTS5 bm25, uncached)", w.mcpUrl, executives, "search_tickets", () => {
    k++;
    return { query: `${words[k % 10]} ${words[Math.floor(k / 10) % 10]}`, limit: 1 + (Math.floor(k / 100) % 50) };
  });
  await measure("list_employees (KV cache hit)", w.mcpUrl, executives, "list_employees", { department: "Engineering" });
} finally {
  await w.stop();
}

await benchFlowmind();
