// `npm run deploy -- --dry-run` builds the deploy bundle offline: the Worker module, its wasm, and
// every binding the Worker needs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "./support/worker.js";

test("deploy --dry-run bundles the Worker and its wasm without publishing", () => {
  const out = mkdtempSync(join(tmpdir(), "mcp-edge-deploy-"));
  try {
    const run = spawnSync("bash", ["scripts/deploy.sh", "--dry-run", "--outdir", out], { cwd: root, encoding: "utf8", env: { ...process.env, CI: "true" } });
    const log = run.stdout + run.stderr;
    assert.equal(run.status, 0, log);
    assert.match(log, /--dry-run: exiting now/);
    for (const binding of ["env.SESSION (Session)", "env.CONFIRMATIONS (Confirmation)", "env.RATE_LIMITER (RateLimiter)", "env.LISTENERS (Listeners)", "env.DB (mcp-edge)", "env.CACHE"]) assert.ok(log.includes(binding), binding);
    const files = readdirSync(out);
    assert.ok(files.includes("index.js"), files.join(","));
    const wasm = files.find((f) => f.endsWith(".wasm"));
    assert.ok(wasm && statSync(join(out, wasm)).size > 100_000, "the wasm module is in the bundle");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
