// Smoke runs of `npm run bench` and `npm run load` with tiny settings: each starts, prints its
// tables, and the behaviour they rest on holds (the reference peer answers exactly what we answer;
// no write is lost or duplicated; a killed dev server leaves no chain stuck). Figures are not
// checked: speed is measured by the scripts themselves, never by tests.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { root } from "./support/worker.js";

const node = join(root, "node_modules", ".bin", "node");
const run = (script, env) => spawnSync(node, [join(root, "bench", script)], { cwd: root, encoding: "utf8", timeout: 300_000, env: { ...process.env, ...env } });

test("npm run bench: prints every table, and the reference answers what we answer", () => {
  const build = spawnSync("bash", [join(root, "bench", "reference", "build.sh")], { cwd: root, encoding: "utf8" });
  assert.equal(build.status, 0, build.stderr);
  const r = run("run.js", { BENCH_SECONDS: "0.3", BENCH_LEVELS: "2", BENCH_CALLS: "3", BENCH_CONTEXTS: "200", BENCH_NATIVE: "0" });
  assert.equal(r.status, 0, r.stderr + r.stdout);
  for (const heading of ["## Size", "## Start", "## Side by side", "## Where the time goes", "## Seed targets", "results: "]) assert.match(r.stdout, new RegExp(heading), r.stdout);
  assert.match(r.stdout, /get_mode_indicator: outputs identical/);
  assert.match(r.stdout, /process_template trip \(no cache\): outputs identical/);
  assert.match(r.stdout, /^call\s+conc\s+ours rps/m);
  assert.match(r.stdout, /^get_mode_indicator\s+2\s+\d+/m);
  assert.match(r.stdout, /^execute_chain corporate \(sync, 5 steps\)\s+[\d.]+\s+[\d.]+\s+< 2000/m, "the corporate chain runs to the end with the model stand-in");
  assert.doesNotMatch(r.stdout, /failed:|errors:|first error:/, "no call failed");
});

test("npm run load: nothing lost or duplicated, and a killed dev server leaves no chain stuck", () => {
  const r = run("load.js", { LOAD_SESSIONS: "4", LOAD_CALLS: "10", LOAD_CHAINS: "2", LOAD_DEADLINE: "240" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /=> calls 40, errors 0, lost 0, duplicated 0, p50/);
  assert.match(r.stdout, /chains: completed 2; stuck running 0/);
  assert.match(r.stdout, /completed steps that ran again: 0/);
  assert.match(r.stdout, /verdict: ok/);
});
