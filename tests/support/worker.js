// Starts the built Worker (build/index.js + wasm) in workerd through Miniflare, with real D1, KV and
// SQLite-backed Durable Objects, and the D1 migrations applied. One instance per test file.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Splits a migration file into statements: on `;` outside quotes, ignoring `--` comments. */
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
      if (cur.trim()) out.push(cur.trim());
      cur = "";
      continue;
    }
    cur += c;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/** Applies every file of migrations/ in name order, as wrangler would. */
export async function migrate(db) {
  const dir = join(root, "migrations");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()) {
    for (const stmt of splitSql(readFileSync(join(dir, file), "utf8"))) {
      await db.prepare(stmt).run();
    }
  }
}

/**
 * Starts the Worker. `vars` override the wrangler [vars]; with `quiet`, the Worker's stdout (one log
 * line per tool call) is dropped. Returns { url, mcpUrl, mf, stop }.
 */
export async function startWorker(vars = {}, { quiet = false } = {}) {
  const mf = new Miniflare({
    ...(quiet ? { handleRuntimeStdio: (stdout, stderr) => { stdout.resume(); stderr.pipe(process.stderr); } } : {}),
    rootPath: root,
    scriptPath: join(root, "build", "index.js"),
    modules: true,
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"], fallthrough: true }],
    compatibilityDate: "2026-07-30",
    compatibilityFlags: ["enable_request_signal"],
    durableObjects: { SESSION: { className: "Session", useSQLite: true } },
    d1Databases: ["DB"],
    kvNamespaces: ["CACHE"],
    bindings: {
      ALLOWED_ORIGINS: "http://localhost:*",
      ALLOWED_HOSTS: "",
      MCP_CATALOG: "production",
      ...vars,
    },
  });
  const url = await mf.ready;
  await migrate(await mf.getD1Database("DB"));
  const mcpUrl = new URL("/mcp", url).href;
  return { url, mcpUrl, mf, stop: () => mf.dispose() };
}
