// Smoke runs of `npm run bench` and `npm run load` with tiny settings: each starts, prints its
// tables, and the behaviour they rest on holds (every peer answers exactly what we answer, on the
// 2025 lane and, with a 2026-07-28 client, on the stateless lane; the ceilings answer; each lane's
// storage operations per call are counted;
// no write is lost or duplicated; a killed dev server leaves no chain stuck). Figures are not
// checked: speed is measured by the scripts themselves, never by tests.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root } from "./support/worker.js";

const node = join(root, "node_modules", ".bin", "node");
const run = (script, env, timeout = 300_000) => spawnSync(node, [join(root, "bench", script)], { cwd: root, encoding: "utf8", timeout, env: { ...process.env, ...env } });

// The whole bench, criterion included, in this test's environment: run after `source
// .toolchain/env`, that is the Debian route, where cargo's target directory is target/wasm (the
// native part once looked for criterion's output in target/ and crashed there). The first run
// compiles the benchmarks (over 20 minutes on a loaded 2-core machine), so the limit is generous.
test("npm run bench: prints every table, and every peer answers what we answer", { timeout: 2_700_000 }, () => {
  for (const peer of ["reference", "anchors"]) {
    const build = spawnSync("bash", [join(root, "bench", peer, "build.sh")], { cwd: root, encoding: "utf8" });
    assert.equal(build.status, 0, build.stderr);
  }
  const r = run("run.js", { BENCH_SECONDS: "0.3", BENCH_RUNS: "3", BENCH_LEVELS: "2", BENCH_CALLS: "3", BENCH_CONTEXTS: "200", BENCH_NATIVE_SECONDS: "0.1", BENCH_COST_CALLS: "3" }, 2_600_000);
  assert.equal(r.status, 0, r.stderr + r.stdout);
  for (const heading of ["## Size", "## Start", "## Side by side", "## Where the time goes", "## 2026-07-28 lane side by side", "## Ceilings", "## Cost per call", "## Seed targets", "## Native micro-benchmarks", "## Summary", "results: "]) assert.match(r.stdout, new RegExp(heading), r.stdout);
  for (const peer of ["reference", "McpAgent"]) {
    assert.match(r.stdout, new RegExp(`get_mode_indicator: outputs identical \\(ours and ${peer}\\)`));
    assert.match(r.stdout, new RegExp(`process_template trip \\(no cache\\): outputs identical \\(ours and ${peer}\\)`));
  }
  for (const call of ["get_mode_indicator", "process_template trip \\(no cache\\)"]) assert.match(r.stdout, new RegExp(`${call}: outputs identical \\(ours 2026 and createMcpHandler\\)`));
  for (const ceiling of ["hello-world", "DO hop"]) assert.match(r.stdout, new RegExp(`^${ceiling}\\s+2\\s+\\d+`, "m"), ceiling);
  // One row per lane, six counts each; the session lanes write to their Durable Object on every call.
  for (const lane of ["ours 2025 get_mode_indicator", "ours 2026 process_template \\(no cache\\)", "McpAgent get_mode_indicator"]) assert.match(r.stdout, new RegExp(`^${lane}(\\s+\\d+\\.\\d){6}$`, "m"), lane);
  // The counter reaches each store: Durable Object rows on both servers' session lanes, D1 rows
  // where our stateless process_template reads the template.
  assert.match(r.stdout, /^McpAgent get_mode_indicator\s+[\d.]+\s+[1-9][\d.]*/m, "McpAgent's rows written per call are counted");
  // Ours reads nothing per call (meta is kept in memory) and writes its batched events behind the
  // answer, which the bench waits for: some rows are written, if fewer than one a call.
  assert.match(r.stdout, /^ours 2025 get_mode_indicator\s+[\d.]+\s+(?!0\.0\s)\d+\.\d/m, "our session object's rows written are counted");
  assert.match(r.stdout, /^ours 2026 process_template \(no cache\)(\s+[\d.]+){2}\s+[1-9][\d.]*/m, "D1 rows read are counted");
  assert.match(r.stdout, /^call\s+conc\s+ours rps/m);
  assert.match(r.stdout, /^get_mode_indicator\s+2\s+\d+/m);
  assert.match(r.stdout, /^execute_chain corporate \(sync, 5 steps\)\s+[\d.]+\s+[\d.]+\s+< 2000/m, "the corporate chain runs to the end with the model stand-in");
  assert.doesNotMatch(r.stdout, /failed:|errors:|first error:/, "no call failed");
  for (const bench of ["template/ours/render", "template/minijinja/render", "template/ours/parse+render", "bm25/rank/10000 contexts"]) assert.match(r.stdout, new RegExp(`^${bench.replace(/[+/]/g, "\\$&")}\\s+[\\d.]+ [mµn]?s`, "m"), `criterion measured ${bench}`);
  // One comparable line per lane and peer, with a number a script can read.
  for (const lane of ["2025 vs reference", "2025 process_template vs reference", "2025 vs McpAgent", "2025 process_template vs McpAgent", "2026 vs createMcpHandler", "2026 process_template vs createMcpHandler", "2025 vs DO-hop ceiling", "2026 vs hello-world ceiling", "template render vs MiniJinja", "template parse\\+render vs MiniJinja"]) assert.match(r.stdout, new RegExp(`^ratio ${lane}: \\d+\\.\\d\\d$`, "m"), lane);
  medianOfRuns(r.stdout, 3);
});

/**
 * Every measured (server, level) of the side-by-side tables and the ceilings was run `n` times: the
 * JSON keeps each run, the figures shown are the median run's, the tables print the spread beside
 * the median, and the summary lines are the lowest ratio of the medians.
 */
function medianOfRuns(stdout, n) {
  const results = JSON.parse(readFileSync(stdout.match(/^results: (.+)$/m)[1], "utf8"));
  assert.equal(results.settings.RUNS, n);
  const measured = [
    ...results.side_by_side.flatMap((row) => ["ours", "reference", "McpAgent"].map((name) => row[name])),
    ...results.side_2026.flatMap((row) => [row.ours, row.createMcpHandler]),
    ...results.ceilings,
  ];
  assert.equal(measured.length, 2 * 3 + 2 * 2 + 2, "two calls on each lane and two ceilings, at one level");
  for (const m of measured) {
    assert.equal(m.runs.length, n, JSON.stringify(m));
    const middle = [...m.runs].sort((a, b) => a.rps - b.rps)[Math.floor((n - 1) / 2)];
    assert.deepEqual([m.rps, m.p50, m.p99], [middle.rps, middle.p50, middle.p99], JSON.stringify(m));
    assert.equal(m.errors, m.runs.reduce((a, r) => a + r.errors, 0));
  }
  // The median with its runs' lowest and highest beside it.
  const ours = results.side_by_side.find((row) => row.call === "get_mode_indicator").ours;
  const rps = ours.runs.map((x) => x.rps);
  const shown = [ours.rps, Math.min(...rps), Math.max(...rps)].map((x) => x.toFixed(0));
  assert.match(stdout, new RegExp(`^get_mode_indicator\\s+2\\s+${shown[0]} \\(${shown[1]}–${shown[2]}\\)\\s`, "m"));
  // A summary line is the lowest over the levels of the medians' ratio, as a script reads it.
  const line = (lane) => Number(stdout.match(new RegExp(`^ratio ${lane}: (\\d+\\.\\d\\d)$`, "m"))[1]);
  const lowest = (rows, call, peer) => Math.min(...rows.filter((row) => row.call === call).map((row) => row.ours.rps / row[peer].rps));
  assert.equal(line("2025 vs McpAgent"), Number(lowest(results.side_by_side, "get_mode_indicator", "McpAgent").toFixed(2)));
  assert.equal(line("2026 process_template vs createMcpHandler"), Number(lowest(results.side_2026, "process_template trip (no cache)", "createMcpHandler").toFixed(2)));
}

test("npm run load: nothing lost or duplicated, and a killed dev server leaves no chain stuck", () => {
  const r = run("load.js", { LOAD_SESSIONS: "4", LOAD_CALLS: "10", LOAD_CHAINS: "2", LOAD_DEADLINE: "240" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /=> calls 40, errors 0, lost 0, duplicated 0, p50/);
  assert.match(r.stdout, /chains: completed 2; stuck running 0/);
  assert.match(r.stdout, /completed steps that ran again: 0/);
  assert.match(r.stdout, /verdict: ok/);
});
