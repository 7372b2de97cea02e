// Starts the built Worker (build/index.js + wasm) in workerd through Miniflare, with real D1, KV and
// SQLite-backed Durable Objects, the D1 migrations applied and, unless a test asks for a
// production-like database, the sample company (sample-data/domain.sql). One instance per test file.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { Agent, setGlobalDispatcher } from "undici";
import { aiHandle, aiWorkers } from "./ai.js";
import { DOMAIN_SQL, PRESENT_SQL } from "../../scripts/sample-data.js";

// A connection per request for the tests' fetch (pipelining 0 turns keep-alive off). Under load,
// workerd sometimes drops a kept-alive connection after a slow answer (10.9 s for executive's
// list_employees at load 6); the next request written to that socket, which the server never
// reads, fails with ECONNRESET ("fetch failed") and no log line. Which request that was cannot be
// told apart from a crash on it, so a retry would hide real faults; a fresh connection per request
// cannot be hit by that race, and a request the server drops or crashes on still fails.
setGlobalDispatcher(new Agent({ pipelining: 0 }));

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * Splits a migration file into statements: on `;` outside quotes, ignoring `--` comments. A
 * CREATE TRIGGER body holds `;`-terminated statements, so a trigger ends only at `END;` (as in
 * wrangler's splitter).
 */
export function splitSql(text) {
  const out = [];
  let cur = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (!quoted && c === "-" && text[i + 1] === "-") {
      while (i < text.length && text[i] !== "\n") i++;
      cur += "\n";
      continue;
    }
    if (c === "'") quoted = !quoted;
    if (c === ";" && !quoted) {
      if (/^\s*CREATE\s+(TEMP\s+|TEMPORARY\s+)?TRIGGER\s/i.test(cur) && !/\sEND\s*$/i.test(cur)) {
        cur += c;
        continue;
      }
      if (cur.trim()) out.push(cur.trim());
      cur = "";
      continue;
    }
    cur += c;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/**
 * Applies the files of migrations/ not applied yet, in name order, recording each in d1_migrations
 * as wrangler does (so a persisted database is not migrated twice).
 */
export async function migrate(db) {
  const dir = join(root, "migrations");
  await db.prepare("CREATE TABLE IF NOT EXISTS d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TEXT DEFAULT CURRENT_TIMESTAMP)").run();
  const done = new Set((await db.prepare("SELECT name FROM d1_migrations").all()).results.map((r) => r.name));
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql") && !done.has(f)).sort()) {
    for (const stmt of splitSql(readFileSync(join(dir, file), "utf8"))) {
      await db.prepare(stmt).run();
    }
    await db.prepare("INSERT INTO d1_migrations (name) VALUES (?1)").bind(file).run();
  }
}

/**
 * Loads the sample company (sample-data/domain.sql) unless it is there already, as
 * `npm run sample-data` does: a persisted database gets it once.
 */
export async function loadSampleData(db) {
  if ((await db.prepare(PRESENT_SQL).first("n")) > 0) return;
  for (const stmt of splitSql(readFileSync(DOMAIN_SQL, "utf8"))) {
    await db.prepare(stmt).run();
  }
}

/**
 * Starts the Worker. `vars` override the wrangler [vars]; with `quiet`, the Worker's stdout (one log
 * line per tool call) is dropped; with `logs` (an array), its stdout lines are collected there
 * instead; with `persist` (a directory), D1, KV and Durable Object storage live there, so a second
 * Worker started on it continues where the first stopped; with `ai`, a Workers AI binding named AI
 * is backed by the stand-in of support/ai.js; with `sample: false`, D1 gets the migrations alone, as
 * a production deployment does (no sample company).
 * Returns { url, mcpUrl, mf, stop }, and `ai` (the stand-in's handle) when asked for.
 */
export async function startWorker(vars = {}, { quiet = false, logs, persist, ai = false, sample = true } = {}) {
  const collect = (stdout) => {
    let rest = "";
    stdout.setEncoding("utf8");
    stdout.on("data", (chunk) => {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop();
      logs.push(...lines);
    });
  };
  const compatibilityDate = "2026-07-30";
  const worker = {
    rootPath: root,
    scriptPath: join(root, "build", "index.js"),
    modules: true,
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"], fallthrough: true }],
    compatibilityDate,
    compatibilityFlags: ["enable_request_signal"],
    durableObjects: {
      SESSION: { className: "Session", useSQLite: true },
      CONFIRMATIONS: { className: "Confirmation", useSQLite: true },
      RATE_LIMITER: { className: "RateLimiter", useSQLite: true },
      LISTENERS: { className: "Listeners", useSQLite: true },
    },
    d1Databases: ["DB"],
    kvNamespaces: ["CACHE"],
    bindings: {
      ALLOWED_ORIGINS: "http://localhost:*",
      ALLOWED_HOSTS: "",
      MCP_CATALOG: "production",
      ANONYMOUS_ACCESS: "true",
      // FlowMind's progressive authorization is tested in flowmind_levels.test.js; elsewhere every
      // caller gets every FlowMind tool, so tests of the tools themselves need no 50 warm-up calls.
      FLOWMIND_LEVELS: "off",
      ...vars,
    },
  };
  const mf = new Miniflare({
    ...(persist ? { d1Persist: join(persist, "d1"), kvPersist: join(persist, "kv"), durableObjectsPersist: join(persist, "do") } : {}),
    ...(quiet || logs ? { handleRuntimeStdio: (stdout, stderr) => { logs ? collect(stdout) : stdout.resume(); stderr.pipe(process.stderr); } } : {}),
    ...(ai
      ? { workers: [{ name: "mcp-edge", ...worker, wrappedBindings: { AI: { scriptName: "workers-ai" } } }, ...aiWorkers(compatibilityDate)] }
      : worker),
  });
  const url = await mf.ready;
  const db = await mf.getD1Database("DB");
  await migrate(db);
  if (sample) await loadSampleData(db);
  const mcpUrl = new URL("/mcp", url).href;
  return { url, mcpUrl, mf, stop: () => mf.dispose(), ...(ai ? { ai: aiHandle(mf) } : {}) };
}
