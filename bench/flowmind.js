// FlowMind figures for `npm run bench` (issue 6), self-contained so the main harness only calls
// `benchFlowmind()`:
//   1. matching quality end to end: every labelled request of tests/data/flowmind_requests.json
//      through field_request over MCP (the shipped catalog plus the tool:// contexts): top-1,
//      recall@3, no-match precision and recall, and how many the validator refused;
//   2. field_request latency with 10,000 contexts in D1: p50/p99 of warm calls (the index is built
//      once per instance and generation; the first call, which builds it, is reported apart).
// Prints figures; asserts nothing.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root, startWorker } from "../tests/support/worker.js";
import { initialize, post } from "../tests/support/mcp.js";

const CONTEXTS = Number(process.env.BENCH_FLOWMIND_CONTEXTS ?? 10_000);
const CALLS = Number(process.env.BENCH_FLOWMIND_CALLS ?? 300);

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function fieldRequest(url, session, id, args) {
  const t0 = performance.now();
  const res = await post(url, { jsonrpc: "2.0", id, method: "tools/call", params: { name: "field_request", arguments: args } }, { session, version: "2025-11-25" });
  const body = await res.json();
  const ms = performance.now() - t0;
  if (!body.result?.structuredContent) throw new Error(`field_request failed: ${JSON.stringify(body)}`);
  return { s: body.result.structuredContent, ms };
}

async function accuracy(url, session) {
  const set = JSON.parse(readFileSync(join(root, "tests", "data", "flowmind_requests.json"), "utf8"));
  let inDomain = 0, top1 = 0, at3 = 0, ood = 0, noMatch = 0, noMatchRight = 0, refused = 0;
  let id = 1;
  for (const r of set) {
    const { s } = await fieldRequest(url, session, id++, { query: r.query, extracted_variables: r.extracted_variables, confidence_level: r.confidence_level });
    if (!s.success) refused++;
    const uris = (s.matches ?? []).map((m) => m.uri);
    const none = s.status === "no_matches";
    if (none) noMatch++;
    if (r.expected.length === 0) {
      ood++;
      if (none) noMatchRight++;
    } else {
      inDomain++;
      if (r.expected.includes(uris[0])) top1++;
      if (uris.slice(0, 3).some((u) => r.expected.includes(u))) at3++;
    }
  }
  const f = (n, d) => (d ? (n / d).toFixed(3) : "n/a");
  console.log(`field_request matching, ${set.length} labelled requests over MCP (${inDomain} in-domain, ${ood} out-of-domain; ${refused} refused by validation, counted as misses)`);
  console.log(`  top-1 ${f(top1, inDomain)}  recall@3 ${f(at3, inDomain)}  no-match precision ${f(noMatchRight, noMatch)}  no-match recall ${f(noMatchRight, ood)}`);
}

/** 10,000 synthetic contexts: words drawn from a fixed vocabulary, so the index has realistic
 * posting lists; deterministic (a linear congruential generator). */
function syntheticRows(n) {
  const vocab = "audit backup budget campaign contract customer dashboard deploy design draft email escalate export forecast grant hiring incident invoice launch lease license migrate onboarding outage payroll pipeline plan policy pricing privacy recipe refund release report research review risk roadmap schedule security survey tax ticket training travel vendor venue wedding workshop".split(" ");
  const domains = ["technical", "creative", "business", "regulatory", "personal", "emergency"];
  let seed = 42;
  const rnd = (k) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % k);
  const words = (k) => Array.from({ length: k }, () => vocab[rnd(vocab.length)]);
  const rows = [];
  for (let i = 0; i < n; i++) {
    const esc = (s) => s.replaceAll("'", "''");
    rows.push(`('workflow://bench-${i}', 'workflow', '${esc(words(3).join(" "))}', '${esc(words(25).join(" "))}', '${domains[i % 6]}', '${JSON.stringify(words(5))}', 'moderate', '${JSON.stringify([words(8).join(" "), words(8).join(" ")])}', 'bench', 0.6, '["${words(1)[0]}_name"]', '[]', '{"type":"workflow","estimated_steps":"3","contexts_involved":[],"stopping_condition":"done"}', ${rnd(500)})`);
  }
  return rows;
}

async function latency(w, url, session) {
  const db = await w.mf.getD1Database("DB");
  const rows = syntheticRows(CONTEXTS);
  // D1 caps a statement at 100 KB: 50 rows each, 20 statements a batch.
  const statements = [];
  for (let i = 0; i < rows.length; i += 50) {
    statements.push(db.prepare(`INSERT INTO contexts (uri, type, name, description, domain, tags, complexity, example_requests, activation_condition, confidence_required, required_variables, optional_variables, execution_preview, popularity) VALUES ${rows.slice(i, i + 50).join(", ")}`));
  }
  for (let i = 0; i < statements.length; i += 20) await db.batch(statements.slice(i, i + 20));
  await db.prepare("UPDATE flowmind_generation SET generation = generation + 1 WHERE id = 1").run();
  const total = (await db.prepare("SELECT COUNT(*) AS n FROM contexts").first()).n;
  const queries = [
    { query: "The checkout API is returning 500 errors in production and customers cannot pay", extracted_variables: { domain: "technical", technology: "nodejs", system_component: "checkout" }, confidence_level: 0.8 },
    { query: "draft the vendor contract review and the privacy policy audit", confidence_level: 0.6 },
    { query: "plan the wedding venue budget and the travel schedule", extracted_variables: { domain: "personal" }, confidence_level: 0.6 },
  ];
  const first = await fieldRequest(url, session, 1, queries[0]);
  const lat = [];
  let hits = 0;
  for (let i = 0; i < CALLS; i++) {
    const { s, ms } = await fieldRequest(url, session, i + 2, queries[i % queries.length]);
    lat.push(ms);
    if (s._metadata?.cache_hit) hits++;
  }
  lat.sort((a, b) => a - b);
  console.log(`field_request with ${total} contexts in D1 (plus the tool:// contexts), ${CALLS} sequential calls`);
  console.log(`  first call (loads the rows, builds the index) ${first.ms.toFixed(1)} ms; then p50 ${pct(lat, 50).toFixed(2)} ms  p99 ${pct(lat, 99).toFixed(2)} ms (${hits} of ${CALLS} answered from the cached index)`);
}

/** Prints FlowMind's matching figures and field_request latency with 10,000 contexts. */
export async function benchFlowmind() {
  const w = await startWorker({ RATE_LIMITS: "*=off" }, { quiet: true });
  try {
    const { session } = await initialize(w.mcpUrl);
    await accuracy(w.mcpUrl, session);
    await latency(w, w.mcpUrl, session);
  } finally {
    await w.stop();
  }
}
