// The FlowMind context catalog (issue 6): the committed migrations are what the generator writes from
// data/flowmind/ (0016 from the frozen snapshot contexts_0016.json; released rewordings such as 0028
// never rewritten; the next rewording the difference to contexts.json), the catalog keeps the
// invariants field_request and execute_workflow rely on, and the labelled requests of the matching measurement (tests/data/flowmind_requests.json,
// read by src/engine/matcher/eval.rs) refer to real contexts. Needs no Worker.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
// The toolchain pins a Node with node:sqlite; a missing module fails the file instead of skipping checks.
import { DatabaseSync } from "node:sqlite";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const MIGRATION = join(root, "migrations", "0016_flowmind_contexts.sql");
const { released, next } = JSON.parse(readFileSync(join(root, "data", "flowmind", "wording.json"), "utf8"));
const RELEASED = Object.keys(released).map((f) => join(root, "migrations", f));
const NEXT = join(root, "migrations", next);
// The wording migrations a database runs, in order: the released ones, then the next if there is one.
const WORDING = [...RELEASED, ...(existsSync(NEXT) ? [NEXT] : [])];
// The catalog as a database that has run 0016 and the released rewordings holds it.
function deployed() {
  const db = new DatabaseSync(":memory:");
  for (const file of [MIGRATION, join(root, "migrations", "0018_flowmind_generation.sql"), ...RELEASED]) db.exec(readFileSync(file, "utf8"));
  const rows = new Map(db.prepare("SELECT uri, description, tags, example_requests, activation_condition FROM contexts").all().map((r) => [r.uri, r]));
  return contexts.map((c) => {
    const r = rows.get(c.uri);
    return { ...c, description: r.description, tags: JSON.parse(r.tags), example_requests: JSON.parse(r.example_requests), activation_condition: r.activation_condition };
  });
}
const contexts = JSON.parse(readFileSync(join(root, "data", "flowmind", "contexts.json"), "utf8"));
const snapshot = JSON.parse(readFileSync(join(root, "data", "flowmind", "contexts_0016.json"), "utf8"));
const requests = JSON.parse(readFileSync(join(root, "tests", "data", "flowmind_requests.json"), "utf8"));
const byUri = new Map(contexts.map((c) => [c.uri, c]));

const DOMAINS = ["technical", "creative", "business", "regulatory", "personal", "emergency"];
// execute_workflow's workflow_uri pattern (seed), which every catalog URI must pass.
const URI = /^(workflow|agent|pattern):\/\/[a-z0-9-]+(\/[a-z0-9-]+)*$/;
const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const KEBAB = /^[a-z0-9]+(-[a-z0-9]+)*$/;
// A sentence ends at . ! or ? followed by a space or the end; abbreviations are avoided in the catalog.
const sentences = (text) => text.split(/[.!?](\s|$)/).filter((s) => s && s.trim()).length;
const words = (text) => new Set(text.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 2));

test("regenerating the catalog migrations reproduces the committed files byte for byte", () => {
  const dir = mkdtempSync(join(tmpdir(), "flowmind-data-"));
  try {
    execFileSync(process.execPath, [join(root, "scripts", "flowmind-data.js"), "--out-dir", dir], { stdio: "pipe" });
    for (const committed of [MIGRATION, NEXT]) {
      const name = committed.split("/").pop();
      assert.equal(existsSync(join(dir, name)), existsSync(committed), `${name}: run \`npm run flowmind-data\` and commit the result`);
      if (existsSync(committed)) assert.ok(readFileSync(join(dir, name)).equals(readFileSync(committed)), `${name}: run \`npm run flowmind-data\` and commit the result`);
    }
    for (const file of RELEASED) assert.ok(!existsSync(join(dir, file.split("/").pop())), `${file}: the generator never writes a released migration`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("released wording migrations are the bytes deployed databases ran", () => {
  for (const [file, sha] of Object.entries(released)) {
    const got = createHash("sha256").update(readFileSync(join(root, "migrations", file))).digest("hex");
    assert.equal(got, sha, `${file} was edited after its release: put new wording in ${next} (npm run flowmind-data) and restore it`);
  }
});

test("the generator refuses a catalog that differs from the 0016 snapshot in more than wording", () => {
  const dir = mkdtempSync(join(tmpdir(), "flowmind-data-"));
  try {
    // A copy of the generator beside data whose contexts.json is the deployed catalog with one change.
    mkdirSync(join(dir, "scripts"));
    for (const f of ["flowmind-data.js", "sql.js"]) cpSync(join(root, "scripts", f), join(dir, "scripts", f));
    cpSync(join(root, "data", "flowmind"), join(dir, "data", "flowmind"), { recursive: true });
    cpSync(join(root, "migrations"), join(dir, "migrations"), { recursive: true });
    const base = deployed();
    const run = (edit) => {
      const changed = structuredClone(base);
      edit(changed[0]);
      writeFileSync(join(dir, "data", "flowmind", "contexts.json"), JSON.stringify(changed));
      execFileSync(process.execPath, [join(dir, "scripts", "flowmind-data.js"), "--out-dir", dir], { stdio: "pipe" });
      return existsSync(join(dir, next)) ? readFileSync(join(dir, next), "utf8") : "";
    };
    assert.equal(run(() => {}), "", "the deployed catalog unchanged needs no next migration");
    assert.throws(() => run((c) => c.required_variables.push("extra_variable")),
      (e) => /only the wording .* may differ from contexts_0016\.json/.test(e.stderr.toString()));
    const wording = run((c) => (c.description += " Reworded."));
    assert.equal(wording.match(/^UPDATE contexts /gm).length, 1);
    assert.match(wording, new RegExp(`^UPDATE contexts SET description = '[^\\n]* Reworded\\.'\nWHERE uri = '${snapshot[0].uri}';$`, "m"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("no statement of the migrations reaches D1's 100 KB limit", () => {
  for (const file of [MIGRATION, ...WORDING]) {
    for (const stmt of readFileSync(file, "utf8").split(";\n")) assert.ok(Buffer.byteLength(stmt) < 100_000, stmt.slice(0, 80));
  }
});

test("at least 60 contexts, at least 8 per domain, of all three catalog types, with unique valid URIs", () => {
  assert.ok(contexts.length >= 60, `${contexts.length} contexts`);
  for (const d of DOMAINS) {
    const n = contexts.filter((c) => c.domain === d).length;
    assert.ok(n >= 8, `${d}: ${n}`);
  }
  assert.equal(byUri.size, contexts.length, "URIs are unique");
  for (const c of contexts) {
    assert.match(c.uri, URI);
    assert.equal(c.uri.split("://")[0], c.type, `${c.uri}: type matches the scheme`);
    assert.ok(DOMAINS.includes(c.domain), c.uri);
  }
  for (const t of ["workflow", "agent", "pattern"]) assert.ok(contexts.some((c) => c.type === t), t);
  assert.equal(new Set(contexts.map((c) => c.name.toLowerCase())).size, contexts.length, "names are unique");
});

test("every context is complete: text, tags, examples, activation and a confidence bar", () => {
  for (const c of contexts) {
    const at = c.uri;
    assert.ok(c.name.length >= 3 && c.name.length <= 100, at);
    const n = sentences(c.description);
    assert.ok(n >= 1 && n <= 3, `${at}: description has ${n} sentences`);
    assert.ok(c.tags.length >= 3 && c.tags.length <= 8, `${at}: ${c.tags.length} tags`);
    assert.equal(new Set(c.tags).size, c.tags.length, `${at}: duplicate tag`);
    for (const t of c.tags) assert.match(t, KEBAB, at);
    assert.ok(["simple", "moderate", "complex", "expert"].includes(c.complexity), at);
    assert.ok(c.example_requests.length >= 3 && c.example_requests.length <= 5, `${at}: ${c.example_requests.length} examples`);
    assert.equal(new Set(c.example_requests).size, c.example_requests.length, at);
    for (const e of c.example_requests) assert.ok(e.length >= 10 && e.length <= 500, `${at}: ${e}`);
    assert.equal(sentences(c.activation_condition), 1, `${at}: activation condition is one sentence`);
    assert.ok(c.confidence_required >= 0.5 && c.confidence_required <= 0.9, `${at}: ${c.confidence_required}`);
    assert.ok(Number.isInteger(c.popularity) && c.popularity >= 0, at);
    assert.ok(Number.isInteger(c.last_used_days_ago) && c.last_used_days_ago >= 0, at);
  }
  // Acting on the wrong emergency context costs more than asking: those demand more confidence.
  const mean = (d) => {
    const xs = contexts.filter((c) => c.domain === d).map((c) => c.confidence_required);
    return xs.reduce((a, b) => a + b, 0) / xs.length;
  };
  assert.ok(mean("emergency") > mean("creative") + 0.15);
});

test("variables are snake_case, named consistently across the catalog, and use the seed's names", () => {
  const all = new Set();
  for (const c of contexts) {
    const vars = [...c.required_variables, ...c.optional_variables];
    assert.equal(new Set(vars).size, vars.length, `${c.uri}: a variable is both required and optional, or listed twice`);
    for (const v of vars) {
      assert.match(v, SNAKE, c.uri);
      all.add(v);
    }
  }
  // Two spellings of one idea (`traveler`/`travelers`, `fiscal_period`/`fiscalperiod`) would split
  // variable alignment between contexts.
  const norm = (v) => v.replace(/_/g, "").replace(/s$/, "").replace(/ll/g, "l");
  const seen = new Map();
  for (const v of all) {
    const k = norm(v);
    assert.ok(!seen.has(k) || seen.get(k) === v, `${v} and ${seen.get(k)} name the same variable`);
    seen.set(k, v);
  }
  // The seed's extracted_variables names, not synonyms of them.
  for (const alias of ["tech", "language", "component", "error_kind", "genre_type", "target_audience", "business_function", "region", "country", "compliance"]) {
    assert.ok(!all.has(alias), `use the seed's name instead of ${alias}`);
  }
  for (const seedName of ["technology", "error_type", "system_component", "creative_type", "genre", "audience", "business_area",
    "stakeholder_count", "jurisdiction", "compliance_type", "urgency"]) {
    assert.ok(all.has(seedName), `${seedName} is used by some context`);
  }
});

test("execution previews name existing contexts; workflows have runnable steps", () => {
  for (const c of contexts) {
    const p = c.execution_preview;
    assert.ok(p.type && p.estimated_steps && p.stopping_condition, c.uri);
    for (const u of p.contexts_involved) {
      assert.ok(byUri.has(u), `${c.uri} involves unknown ${u}`);
      assert.notEqual(u, c.uri, `${c.uri} involves itself`);
    }
    if (c.type !== "workflow") {
      assert.equal(c.steps, undefined, `${c.uri}: only workflows have steps`);
      continue;
    }
    assert.ok(c.steps.length >= 2 && c.steps.length <= 6, `${c.uri}: ${c.steps.length} steps`);
    assert.equal(new Set(c.steps.map((s) => s.name)).size, c.steps.length, `${c.uri}: step names are unique`);
    // A step may use the context's variables and what earlier steps produced, nothing else.
    const known = new Set([...c.required_variables, ...c.optional_variables]);
    for (const s of c.steps) {
      assert.match(s.name, KEBAB, c.uri);
      assert.equal(sentences(s.instruction), 1, `${c.uri}/${s.name}: one instruction sentence`);
      for (const [, v] of s.instruction.matchAll(/\{\{([^}]*)\}\}/g)) assert.ok(known.has(v), `${c.uri}/${s.name} uses {{${v}}} before it exists`);
      assert.ok(s.outputs.length >= 1, `${c.uri}/${s.name}`);
      for (const o of s.outputs) {
        assert.match(o, SNAKE, c.uri);
        known.add(o);
      }
    }
  }
});

test("the labelled requests: enough of each kind, valid as field_request input, naming real contexts", () => {
  assert.ok(requests.length >= 150, `${requests.length} requests`);
  const outOfDomain = requests.filter((r) => r.expected.length === 0);
  const ambiguous = requests.filter((r) => r.expected.length === 2);
  assert.ok(outOfDomain.length >= 25, `${outOfDomain.length} out-of-domain`);
  assert.ok(ambiguous.length >= 15, `${ambiguous.length} ambiguous`);
  assert.equal(new Set(requests.map((r) => r.query.toLowerCase())).size, requests.length, "no request twice");
  for (const r of requests) {
    // field_request's schema: query 10-500 characters, confidence_level in [0, 1].
    assert.ok(r.query.length >= 10 && r.query.length <= 500, r.query);
    assert.ok(r.confidence_level >= 0 && r.confidence_level <= 1, r.query);
    assert.ok(r.expected.length <= 2, r.query);
    for (const u of r.expected) assert.ok(byUri.has(u), `${r.query}: unknown ${u}`);
    const v = r.extracted_variables ?? {};
    if (v.domain !== undefined) assert.ok(DOMAINS.includes(v.domain), r.query);
    if (v.urgency !== undefined) assert.ok(["low", "medium", "high", "critical", "emergency"].includes(v.urgency), r.query);
    // The same rule the validator enforces: a technical domain names its technology.
    if (v.domain === "technical") assert.ok(v.technology, `${r.query}: technical without technology`);
  }
  // Every domain is exercised, and requests with and without extracted variables both occur.
  for (const d of DOMAINS) assert.ok(requests.some((r) => r.expected.some((u) => byUri.get(u).domain === d)), d);
  const withVars = requests.filter((r) => r.extracted_variables).length;
  assert.ok(withVars > requests.length / 3 && withVars < requests.length - 25, `${withVars} with variables`);
});

test("the labelled requests are mostly not copies of the catalog's example requests", () => {
  const examples = contexts.flatMap((c) => c.example_requests.map((e) => words(e)));
  const overlap = (a, b) => [...a].filter((w) => b.has(w)).length / Math.max(1, new Set([...a, ...b]).size);
  const close = requests.filter((r) => {
    const q = words(r.query);
    return examples.some((e) => overlap(q, e) >= 0.5);
  });
  assert.ok(close.length <= requests.length * 0.2, `${close.length} near-copies: ${close.map((r) => r.query).join(" | ")}`);
});

test("the migration applies to SQLite and its CHECK constraints refuse malformed contexts", () => {
  const db = new DatabaseSync(":memory:");
  db.exec(readFileSync(MIGRATION, "utf8"));
  assert.equal(db.prepare("SELECT COUNT(*) n FROM contexts").get().n, contexts.length);
  const row = db.prepare("SELECT * FROM contexts WHERE uri = 'workflow://incident-response'").get();
  assert.deepEqual(JSON.parse(row.steps), byUri.get("workflow://incident-response").steps);
  assert.equal(row.last_used_at, "2026-11-19T12:00:00Z");
  assert.equal(db.prepare("SELECT COUNT(*) n FROM contexts WHERE type <> 'workflow' AND steps IS NOT NULL").get().n, 0);
  const insert = (uri, type, domain = "technical", complexity = "simple", confidence = 0.6) => db.prepare(`INSERT INTO contexts
      (uri, type, name, description, domain, complexity, confidence_required, execution_preview) VALUES (?, ?, 'n', 'd', ?, ?, ?, '{}')`)
    .run(uri, type, domain, complexity, confidence);
  for (const bad of [["agent://x", "workflow"], ["workflow://Bad", "workflow"], ["workflow://a b", "workflow"], ["workflow://a_b", "workflow"],
    ["workflow://a/", "workflow"], ["flow://x", "flow"],
    ["workflow://x", "workflow", "cooking"], ["workflow://x", "workflow", "technical", "trivial"], ["workflow://x", "workflow", "technical", "simple", 1.5]]) {
    assert.throws(() => insert(...bad), /CHECK constraint failed/, bad.join(" "));
  }
  insert("tool://list_events", "tool");
  insert("workflow://team/onboarding", "workflow");
});

test("0016 then the rewordings leave in SQLite exactly the catalog of contexts.json, the one the native measurement reads", () => {
  const db = new DatabaseSync(":memory:");
  for (const file of [MIGRATION, join(root, "migrations", "0018_flowmind_generation.sql"), ...WORDING]) db.exec(readFileSync(file, "utf8"));
  const rows = db.prepare("SELECT uri, description, tags, example_requests, activation_condition, required_variables, steps FROM contexts").all();
  assert.equal(rows.length, contexts.length);
  for (const r of rows) {
    const c = byUri.get(r.uri);
    assert.ok(c, r.uri);
    assert.deepEqual([r.description, JSON.parse(r.tags), JSON.parse(r.example_requests), r.activation_condition, JSON.parse(r.required_variables)],
      [c.description, c.tags, c.example_requests, c.activation_condition, c.required_variables], r.uri);
    assert.deepEqual(r.steps === null ? undefined : JSON.parse(r.steps), c.steps, r.uri);
  }
  // Instances that built their index from earlier wording rebuild it: one bump per rewording.
  assert.equal(db.prepare("SELECT generation FROM flowmind_generation").get().generation, WORDING.length);
});
