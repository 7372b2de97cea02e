// A local stand-in of the Cloudflare API for the endpoints `wrangler deploy`, `wrangler d1 …` and
// `wrangler kv …` call, so tests run scripts/deploy.sh and scripts/sample-data.js end to end with
// nothing reaching Cloudflare: wrangler is pointed here with CLOUDFLARE_API_BASE_URL. D1 databases are
// real SQLite databases (node:sqlite), so migrations and queries are executed, not just recorded.
import { createServer } from "node:http";
import { createHash, randomUUID } from "node:crypto";
import { DatabaseSync } from "node:sqlite";

/** The account every request must name. */
export const ACCOUNT_ID = "0123456789abcdef0123456789abcdef";

const ok = (result, extra = {}) => ({ success: true, errors: [], messages: [], result, ...extra });
const fail = (code, message) => ({ success: false, errors: [{ code, message }], messages: [], result: null });

/** Reads a request body as a Buffer. */
const body = (req) => new Promise((resolve, reject) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => resolve(Buffer.concat(chunks)));
  req.on("error", reject);
});

/** The parts of a multipart/form-data body: [{ name, filename, type, data }]. */
function multipart(buf, contentType) {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType ?? "");
  if (!boundary) return [];
  const sep = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const parts = [];
  let at = buf.indexOf(sep);
  while (at !== -1) {
    const start = at + sep.length;
    if (buf.subarray(start, start + 2).toString() === "--") break;
    const next = buf.indexOf(sep, start);
    if (next === -1) break;
    const part = buf.subarray(start + 2, next - 2);
    const headEnd = part.indexOf("\r\n\r\n");
    const head = part.subarray(0, headEnd).toString();
    parts.push({
      name: /name="([^"]*)"/.exec(head)?.[1],
      filename: /filename="([^"]*)"/.exec(head)?.[1],
      type: /content-type:\s*([^\r\n]+)/i.exec(head)?.[1],
      data: part.subarray(headEnd + 4),
    });
    at = next;
  }
  return parts;
}

/** Runs `sql` (several statements) in one transaction, as D1 runs a migration or an imported file. */
function execute(db, sql) {
  db.exec("BEGIN");
  try {
    db.exec(sql);
    db.exec("COMMIT");
  } catch (e) {
    db.exec("ROLLBACK");
    throw e;
  }
}

/** Answers D1's /query: one statement with its rows, or several run as one transaction. */
function query(db, sql, params = []) {
  const started = performance.now();
  if (sql.trim().replace(/;\s*$/, "").includes(";")) {
    execute(db, sql);
    return [{ results: [], success: true, meta: { duration: performance.now() - started } }];
  }
  const stmt = db.prepare(sql);
  const rows = stmt.columns().length ? stmt.all(...params).map((r) => ({ ...r })) : (stmt.run(...params), []);
  return [{ results: rows, success: true, meta: { duration: performance.now() - started } }];
}

/**
 * Starts the stand-in on 127.0.0.1. Returns { url, env, requests, unknown, d1, kv, scripts, stop }:
 * `env` holds the variables that point wrangler here; `requests` lists every call as { method, path
 * (after /client/v4/accounts/<id>), sql (of a D1 query) }; `d1` maps database names to { uuid, db }
 * (node:sqlite); `kv` maps namespace titles to ids; `scripts` maps Worker names to their live upload
 * ({ metadata, modules, uploads }); `unknown` lists calls the stand-in has no answer for.
 */
export async function startCloudflare() {
  const requests = [];
  const unknown = [];
  const d1 = new Map();
  const kv = new Map();
  const scripts = new Map();
  const imports = new Map();
  let url;
  const versions = new Map();
  /** An uploaded script or version: its metadata (inherited bindings resolved) and module sizes. */
  const upload = (name, parts) => {
    const meta = parts.find((p) => p.name === "metadata");
    if (!meta) return {};
    const metadata = JSON.parse(meta.data.toString("utf8"));
    const previous = scripts.get(name);
    // An inherited binding keeps what the live script binds under that name.
    metadata.bindings = (metadata.bindings ?? []).map((b) => (b.type === "inherit" ? previous?.metadata.bindings.find((p) => p.name === b.name) ?? b : b));
    // `keep_bindings` keeps the live script's bindings of those types (secrets a deploy does not send).
    for (const kept of previous?.metadata.bindings ?? []) {
      if (metadata.keep_bindings?.includes(kept.type) && !metadata.bindings.some((b) => b.name === kept.name)) metadata.bindings.push(kept);
    }
    const modules = Object.fromEntries(parts.filter((p) => p !== meta).map((p) => [p.name, p.data.length]));
    const tag = randomUUID().replaceAll("-", "");
    return { id: randomUUID(), metadata, modules, tag, migrationTag: metadata.migrations?.new_tag ?? previous?.migrationTag, uploads: (previous?.uploads ?? 0) + 1 };
  };
  const byIdOrName = (key) => [...d1.entries()].find(([name, d]) => name === key || d.uuid === key);

  const routes = [
    ["GET", /^\/accounts\/(\w+)\/d1\/database$/, (m, q) => {
      const name = q.get("name");
      const list = [...d1.entries()].filter(([n]) => !name || n.includes(name)).map(([n, d]) => ({ uuid: d.uuid, name: n, version: "production", created_at: d.created }));
      return ok(list, { result_info: { page: 1, per_page: 1000, count: list.length, total_count: list.length } });
    }],
    ["POST", /^\/accounts\/(\w+)\/d1\/database$/, (m, q, json) => {
      if (d1.has(json.name)) return [400, fail(7502, "A database with that name already exists")];
      const db = new DatabaseSync(":memory:");
      db.exec("PRAGMA foreign_keys = ON");
      const entry = { uuid: randomUUID(), db, created: new Date().toISOString() };
      d1.set(json.name, entry);
      return ok({ uuid: entry.uuid, name: json.name, created_in_region: "WEUR" });
    }],
    ["GET", /^\/accounts\/(\w+)\/d1\/database\/([^/]+)$/, (m) => {
      const found = byIdOrName(decodeURIComponent(m[2]));
      if (!found) return [404, fail(7404, `The database ${m[2]} could not be found`)];
      return ok({ uuid: found[1].uuid, name: found[0], version: "production", num_tables: 0, file_size: 0 });
    }],
    ["POST", /^\/accounts\/(\w+)\/d1\/database\/([^/]+)\/query$/, (m, q, json) => {
      const found = byIdOrName(m[2]);
      if (!found) return [404, fail(7404, "database not found")];
      try {
        return ok(query(found[1].db, json.sql, json.params));
      } catch (e) {
        return [400, fail(7500, `${e.message}: SQLITE_ERROR`)];
      }
    }],
    // `d1 execute --file`: init (hand out an upload URL), the upload, ingest, then poll.
    ["POST", /^\/accounts\/(\w+)\/d1\/database\/([^/]+)\/import$/, (m, q, json) => {
      const found = byIdOrName(m[2]);
      if (!found) return [404, fail(7404, "database not found")];
      if (json.action === "init") {
        const filename = `${json.etag}.sql`;
        return ok({ success: true, upload_url: `${url}/__upload/${filename}`, filename });
      }
      if (json.action === "ingest") {
        const sql = imports.get(json.filename);
        if (sql === undefined) return [400, fail(7400, "no such upload")];
        try {
          execute(found[1].db, sql);
        } catch (e) {
          return ok({ success: false, type: "import", at_bookmark: "b1", status: "error", error: e.message, messages: [], errors: [e.message] });
        }
        return ok({ success: true, type: "import", at_bookmark: "b1", status: "complete", messages: [], errors: [], result: { num_queries: sql.split(";\n").length, final_bookmark: "b2", meta: { served_by: "stand-in", duration: 1, changes: 0, last_row_id: 0, changed_db: true, size_after: sql.length, rows_read: 0, rows_written: 0 } } });
      }
      if (json.action === "poll") return [400, fail(7400, "the stand-in completes imports at ingest")];
      return [400, fail(7400, `unknown import action ${json.action}`)];
    }],
    // Workers: the service (404 with code 10007 before the first deploy), its settings (the bindings
    // of the last upload, which a binding without an id inherits), secrets, the workers.dev subdomain.
    ["GET", /^\/accounts\/(\w+)\/workers\/services\/([^/]+)$/, (m) => {
      const script = scripts.get(m[2]);
      if (!script) return [404, fail(10007, "This Worker does not exist on your account.")];
      return ok({ id: m[2], default_environment: { environment: "production", script: { id: m[2], tag: script.tag, tags: [], migration_tag: script.migrationTag, last_deployed_from: "wrangler" } } });
    }],
    ["GET", /^\/accounts\/(\w+)\/workers\/scripts\/([^/]+)\/settings$/, (m) => {
      const script = scripts.get(m[2]);
      if (!script) return [404, fail(10007, "This Worker does not exist on your account.")];
      return ok({ bindings: script.metadata.bindings, compatibility_date: script.metadata.compatibility_date, compatibility_flags: script.metadata.compatibility_flags ?? [] });
    }],
    ["GET", /^\/accounts\/(\w+)\/workers\/scripts$/, () => ok([...scripts.entries()].map(([id, s]) => ({ id, tag: s.tag, migration_tag: s.migrationTag })))],
    ["GET", /^\/accounts\/(\w+)\/workers\/scripts\/([^/]+)\/deployments$/, () => ok({ deployments: [] })],
    ["GET", /^\/accounts\/(\w+)\/workers\/scripts\/([^/]+)\/secrets$/, (m) => {
      const script = scripts.get(m[2]);
      if (!script) return [404, fail(10007, "This Worker does not exist on your account.")];
      return ok(script.metadata.bindings.filter((b) => b.type === "secret_text").map((b) => ({ name: b.name, type: b.type })));
    }],
    ["PATCH", /^\/accounts\/(\w+)\/workers\/scripts\/([^/]+)\/script-settings$/, (m, q, json) => ok(json)],
    ["GET", /^\/accounts\/(\w+)\/workers\/subdomain$/, () => ok({ subdomain: "stand-in" })],
    ["GET", /^\/accounts\/(\w+)\/workers\/scripts\/([^/]+)\/subdomain$/, () => ok({ enabled: true, previews_enabled: false })],
    ["POST", /^\/accounts\/(\w+)\/workers\/scripts\/([^/]+)\/subdomain$/, () => ok({ enabled: true, previews_enabled: false })],
    // A first deploy uploads the script whole (PUT); later ones upload a version, then deploy it.
    ["PUT", /^\/accounts\/(\w+)\/workers\/scripts\/([^/]+)$/, (m, q, json, parts) => {
      const version = upload(m[2], parts);
      if (!version.metadata) return [400, fail(10021, "no metadata part")];
      scripts.set(m[2], version);
      return ok({ id: m[2], tag: version.tag, etag: version.tag, startup_time_ms: 1, deployment_id: version.id, has_modules: true });
    }],
    ["POST", /^\/accounts\/(\w+)\/workers\/scripts\/([^/]+)\/versions$/, (m, q, json, parts) => {
      const version = upload(m[2], parts);
      if (!version.metadata) return [400, fail(10021, "no metadata part")];
      versions.set(version.id, version);
      return ok({ id: version.id, number: version.uploads, resources: { script: { etag: version.tag } }, startup_time_ms: 1 });
    }],
    ["POST", /^\/accounts\/(\w+)\/workers\/scripts\/([^/]+)\/deployments$/, (m, q, json) => {
      const [only] = json.versions ?? [];
      const version = versions.get(only?.version_id);
      if (!version || only.percentage !== 100) return [400, fail(10000, "the stand-in deploys one uploaded version at 100%")];
      scripts.set(m[2], version);
      return ok({ id: randomUUID(), strategy: "percentage", versions: json.versions });
    }],
    ["GET", /^\/accounts\/(\w+)\/storage\/kv\/namespaces$/, () => ok([...kv.entries()].map(([title, id]) => ({ id, title })))],
    ["POST", /^\/accounts\/(\w+)\/storage\/kv\/namespaces$/, (m, q, json) => {
      const id = randomUUID().replaceAll("-", "");
      kv.set(json.title, id);
      return ok({ id, title: json.title });
    }],
  ];

  const server = createServer(async (req, res) => {
    const u = new URL(req.url, "http://stand-in");
    const buf = await body(req);
    requests.push({ method: req.method, path: u.pathname.replace(/^\/client\/v4\/accounts\/\w+/, ""), sql: req.url.endsWith("/query") ? JSON.parse(buf.toString("utf8")).sql : undefined });
    const send = (status, payload) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(payload));
    };
    if (req.method === "PUT" && u.pathname.startsWith("/__upload/")) {
      imports.set(u.pathname.slice("/__upload/".length), buf.toString("utf8"));
      res.writeHead(200, { etag: `"${createHash("md5").update(buf).digest("hex")}"` }).end();
      return;
    }
    const path = u.pathname.replace(/^\/client\/v4/, "");
    for (const [method, re, handle] of routes) {
      const m = re.exec(path);
      if (!m || method !== req.method) continue;
      if (m[1] && m[1] !== ACCOUNT_ID) return send(403, fail(10000, "wrong account"));
      const type = req.headers["content-type"] ?? "";
      const json = type.includes("json") && buf.length ? JSON.parse(buf.toString("utf8")) : {};
      const parts = type.startsWith("multipart/") ? multipart(buf, type) : [];
      const out = await handle(m, u.searchParams, json, parts);
      return Array.isArray(out) ? send(out[0], out[1]) : send(200, out);
    }
    unknown.push(`${req.method} ${u.pathname}${u.search}`);
    send(404, fail(10007, `stand-in: no route for ${req.method} ${u.pathname}`));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${server.address().port}`;
  const env = {
    CLOUDFLARE_API_BASE_URL: `${url}/client/v4`,
    CLOUDFLARE_API_TOKEN: "stand-in-token",
    CLOUDFLARE_ACCOUNT_ID: ACCOUNT_ID,
    WRANGLER_SEND_METRICS: "false",
    // No banner: the banner asks the npm registry for a newer wrangler.
    WRANGLER_HIDE_BANNER: "true",
    CI: "true",
  };
  return {
    url, env, requests, unknown, d1, kv, scripts,
    stop: () => new Promise((resolve) => server.close(resolve)),
  };
}
