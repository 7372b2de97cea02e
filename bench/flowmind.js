// FlowMind matching quality for `npm run bench` (issue 6): every labelled request of
// tests/data/flowmind_requests.json through field_request over MCP (the shipped catalog plus the
// tool:// contexts): top-1, recall@3, no-match precision and recall, and how many the validator
// refused, how often it answered success with a wrong first match, and how many got each status.
// field_request's latency with 10,000 contexts is one of run.js's seed targets.
// Prints figures; asserts nothing.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root, startWorker } from "../tests/support/worker.js";
import { initialize, post } from "../tests/support/mcp.js";

async function fieldRequest(url, session, id, args) {
  const res = await post(url, { jsonrpc: "2.0", id, method: "tools/call", params: { name: "field_request", arguments: args } }, { session, version: "2025-11-25" });
  const body = await res.json();
  if (!body.result?.structuredContent) throw new Error(`field_request failed: ${JSON.stringify(body)}`);
  return { s: body.result.structuredContent };
}

async function accuracy(url, session) {
  const set = JSON.parse(readFileSync(join(root, "tests", "data", "flowmind_requests.json"), "utf8"));
  let inDomain = 0, top1 = 0, at3 = 0, ood = 0, noMatch = 0, noMatchRight = 0, refused = 0, wrongSuccess = 0;
  const statuses = {};
  let id = 1;
  for (const r of set) {
    const { s } = await fieldRequest(url, session, id++, { query: r.query, extracted_variables: r.extracted_variables, confidence_level: r.confidence_level });
    if (!s.success) refused++;
    const uris = (s.matches ?? []).map((m) => m.uri);
    const none = s.status === "no_matches";
    statuses[s.status] = (statuses[s.status] ?? 0) + 1;
    if (s.status === "success" && !r.expected.includes(uris[0])) wrongSuccess++;
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
  console.log(`  top-1 ${f(top1, inDomain)}  recall@3 ${f(at3, inDomain)}  no-match precision ${f(noMatchRight, noMatch)}  no-match recall ${f(noMatchRight, ood)}  wrong success ${f(wrongSuccess, set.length)}`);
  console.log(`  statuses: ${Object.entries(statuses).sort().map(([k, n]) => `${k} ${n}`).join(", ")}`);
}

/** Prints FlowMind's matching figures over MCP, on a Worker of its own with the shipped catalog. */
export async function flowmindAccuracy() {
  console.log("\n## FlowMind matching (labelled set over MCP)");
  const w = await startWorker({ RATE_LIMITS: "*=off", REQUEST_LIMIT: "off", SESSION_CREATE_LIMIT: "off" }, { quiet: true });
  try {
    const { session } = await initialize(w.mcpUrl);
    await accuracy(w.mcpUrl, session);
  } finally {
    await w.stop();
  }
}
