// A session's `last_seen` is written only when the stored time lags by more than a tenth of the
// idle timeout (docs/decisions.md, "last_seen on every call"), on every lane that uses the
// session: the MCP lane did so, while the chat routes (GET and POST /sessions/:id/chat, relayed
// events) wrote it on every request. Counted at the runtime's storage APIs by the bench's counter
// (bench/cost/counter.js) around the built Worker, unchanged.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { Miniflare } from "miniflare";
import { migrate, root } from "./support/worker.js";

const OUT = join(root, "target", "session-seen");
let mf;
let url;

before(async () => {
  mkdirSync(OUT, { recursive: true });
  const rel = (p) => `./${relative(OUT, p)}`;
  const script = join(OUT, "ours.js");
  writeFileSync(
    script,
    `import * as base from ${JSON.stringify(rel(join(root, "build", "index.js")))};
import { patchState, takeTotals } from ${JSON.stringify(rel(join(root, "bench", "cost", "counter.js")))};
export * from ${JSON.stringify(rel(join(root, "build", "index.js")))};
export const Session = class extends base.Session { constructor(ctx, env) { patchState(ctx); super(ctx, env); } };
export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__counted") return Response.json(takeTotals());
    return base.default.prototype.fetch.call({ env, ctx }, request);
  },
};
`,
  );
  mf = new Miniflare({
    rootPath: root, scriptPath: script, modules: true,
    modulesRules: [{ type: "ESModule", include: ["**/*.js"] }, { type: "CompiledWasm", include: ["**/*.wasm"], fallthrough: true }],
    compatibilityDate: "2026-07-30", compatibilityFlags: ["enable_request_signal"],
    durableObjects: { SESSION: { className: "Session", useSQLite: true }, CONFIRMATIONS: { className: "Confirmation", useSQLite: true }, RATE_LIMITER: { className: "RateLimiter", useSQLite: true }, LISTENERS: { className: "Listeners", useSQLite: true } },
    d1Databases: ["DB"], kvNamespaces: ["CACHE"],
    bindings: { ALLOWED_ORIGINS: "", ALLOWED_HOSTS: "", MCP_CATALOG: "production", ANONYMOUS_ACCESS: "true", FLOWMIND_LEVELS: "off", RATE_LIMITS: "*=off" },
    handleRuntimeStdio: (out, err) => { out.resume(); err.pipe(process.stderr); },
  });
  url = await mf.ready;
  await migrate(await mf.getD1Database("DB"));
});
after(() => mf?.dispose());

const counted = async () => (await fetch(new URL("/__counted", url))).json();

test("reading a chat session's history again and again writes nothing (last_seen moved less than the slack)", async () => {
  const created = await fetch(new URL("/sessions", url), { method: "POST" });
  assert.equal(created.status, 201);
  const { session_id: id } = await created.json();
  const history = async () => {
    const r = await fetch(new URL(`/sessions/${id}/chat`, url));
    assert.equal(r.status, 200, await r.clone().text());
    return r.json();
  };
  await history();
  await counted();
  for (let i = 0; i < 5; i++) assert.deepEqual((await history()).messages, []);
  // Only the session's meta rows: the rate limiter's object is counted too (one isolate).
  const { statements } = await counted();
  const meta = Object.entries(statements).filter(([q, s]) => /\bmeta\b/.test(q) && s.rowsWritten > 0);
  assert.deepEqual(meta.map(([q, s]) => `${s.runs}x ${q}`), [], "five reads of the history wrote no session meta row");
});
