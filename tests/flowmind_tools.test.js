// FlowMind's field_request, list_available_contexts and get_help through the official MCP SDK
// client against the built Worker (catalog from D1 migration 0016, tool:// contexts from the
// registry): every status, every validation rule in the educational error format, teaching,
// next_actions, _performance and _metadata, and the per-instance index keyed by the catalog
// generation.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startWorker } from "./support/worker.js";
import { hs256 } from "../scripts/token.js";

const SECRET = "flowmind-secret";
let w, client;

async function connect(headers = {}, worker = w) {
  const c = new Client({ name: "flowmind-test", version: "1.0.0" });
  await c.connect(new StreamableHTTPClientTransport(new URL(worker.mcpUrl), { requestInit: { headers } }));
  return c;
}

before(async () => {
  // FLOWMIND_GENERATION_TTL_MS 0: a test below edits D1 directly, as another instance would, and
  // expects the next call to see it (the default 1 s bound is tested natively, testkit::flowmind).
  w = await startWorker({ JWT_SECRET: SECRET, RATE_LIMITS: "*=off", FLOWMIND_GENERATION_TTL_MS: "0" });
  client = await connect();
});
after(async () => {
  await client?.close();
  await w?.stop();
});

/** Calls a FlowMind tool and returns its structured answer, after the checks every answer passes. */
async function call(name, args, c = client) {
  const r = await c.callTool({ name, arguments: args });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  const s = r.structuredContent;
  assert.ok(s, JSON.stringify(r));
  assert.equal(typeof s.success, "boolean");
  for (const k of ["tip", "pattern", "confidence_calibration"]) assert.equal(typeof s.teaching[k], "string", `teaching.${k}`);
  assert.ok(Array.isArray(s.next_actions));
  for (const a of s.next_actions) {
    assert.equal(typeof a.tool, "string");
    assert.equal(typeof a.reason, "string");
    assert.ok(a.parameters && typeof a.parameters === "object");
  }
  for (const k of ["total_time_ms", "search_time_ms", "assembly_time_ms"]) assert.equal(typeof s._performance[k], "number", `_performance.${k}`);
  // Seed 001's Response Enhancement: every answer carries _insights read from its timings.
  assert.ok(["none", "search", "assembly"].includes(s._insights?.bottleneck), JSON.stringify(s._insights));
  assert.equal(typeof s._insights.search_share, "number");
  assert.ok(s._insights.notes.length > 0 && s._insights.notes.every((n) => typeof n === "string"));
  return s;
}

const fr = (args) => call("field_request", args);
const incident = {
  query: "The checkout API is returning 500 errors in production and customers cannot pay",
  extracted_variables: { domain: "technical", technology: "nodejs", system_component: "checkout", urgency: "critical" },
  confidence_level: 0.8,
};

describe("field_request statuses", () => {
  test("a clear request: success, the right context first, runnable, with what it still needs", async () => {
    const s = await fr(incident);
    assert.equal(s.success, true);
    assert.equal(s.status, "success");
    const m = s.matches[0];
    assert.equal(m.uri, "workflow://incident-response");
    assert.ok(m.confidence >= 0.6 && m.confidence <= 1, "at or above the success threshold");
    assert.ok(m.confidence >= s.matches[1].confidence);
    assert.equal(typeof m.match_reasoning.semantic_similarity, "number");
    assert.equal(m.match_reasoning.domain_match, true);
    assert.match(m.match_reasoning.explanation, /match/);
    assert.deepEqual(m.activation, { condition: m.activation.condition, confidence_required: 0.75, your_confidence: 0.8, can_execute: true });
    assert.deepEqual(m.variables.missing, ["error_description"]);
    assert.ok(m.variables.provided.includes("system_component"));
    assert.equal(m.execution_preview.type, "recursive_workflow");
    assert.deepEqual(m.next_action, { tool: "execute_workflow", parameters: { workflow_uri: "workflow://incident-response", initial_variables: { system_component: "checkout", technology: "nodejs", urgency: "critical" }, confidence_level: 0.8 } });
    assert.match(s.guidance.suggestions[0], /^Ask user: "What specific error/);
    assert.equal(s.disambiguation.needed, false);
    assert.equal(s.degraded, true, "no embedding model is bound in tests");
    assert.equal(s._metadata.contexts_searched > 74, true, "catalog rows plus tool:// contexts");
    assert.deepEqual(s._metadata.indices_used, ["bm25f", "variable_alignment", "domain_signal"]);
    assert.equal(s.next_actions[0].tool, "execute_workflow");
  });

  test("a caller less sure than the context requires gets the match but cannot execute it", async () => {
    const s = await fr({ ...incident, confidence_level: 0.5 });
    assert.equal(s.matches[0].activation.can_execute, false);
    assert.match(s.next_actions[0].reason, /confirm with the user/);
    assert.match(s.teaching.confidence_calibration, /be more confident/);
  });

  test("an ambiguous request: disambiguation questions, each naming the variable it captures", async () => {
    const s = await fr({ query: "find me a new job and practise the interviews", extracted_variables: { domain: "personal" }, confidence_level: 0.6 });
    assert.equal(s.status, "disambiguation_needed");
    assert.equal(s.disambiguation.needed, true);
    assert.ok(s.disambiguation.questions.length >= 2);
    for (const q of s.disambiguation.questions) {
      assert.match(q.question, /\?$/);
      assert.ok(q.variable_captured.length > 0);
      assert.ok(q.why.length > 0);
    }
    assert.deepEqual(new Set(s.matches.slice(0, 2).map((m) => m.uri)), new Set(["workflow://job-search", "workflow://interview-prep"]));
    assert.equal(s.next_actions[0].tool, "field_request");
  });

  // Refinement is the band from the no-match threshold (0.28, fitted on the training split) to
  // the success threshold 0.60 (docs/flowmind.md): the best match of this labelled request is
  // about 0.3 over the shipped catalog and today's tools.
  test("a weak match: refinement_suggested, with a browse of its domain", async () => {
    const s = await fr({ query: "long weekend in the mountains on a budget", confidence_level: 0.5 });
    assert.equal(s.status, "refinement_suggested");
    assert.equal(s.matches[0].uri, "workflow://trip-planning");
    assert.ok(s.matches[0].confidence >= 0.28 && s.matches[0].confidence < 0.6, String(s.matches[0].confidence));
    assert.deepEqual(s.next_actions.map((a) => a.tool), ["field_request", "list_available_contexts"]);
    assert.deepEqual(s.next_actions[1].parameters, { filter: { domain: ["personal"] } });
  });

  test("out-of-domain and empty-of-meaning requests: no_matches, no matches listed", async () => {
    for (const query of ["bake sourdough bread with a crispy crust", "zxqv wibble frobnicate quux"]) {
      const s = await fr({ query, confidence_level: 0.7 });
      assert.equal(s.status, "no_matches", query);
      assert.deepEqual(s.matches, []);
      assert.match(s.teaching.confidence_calibration, /too high/);
      assert.deepEqual(s.next_actions.map((a) => a.tool), ["list_available_contexts", "get_help"]);
    }
  });

  test("large content without a summary: content_processing_required", async () => {
    const s = await fr({ query: "Review this contract for GDPR problems before we sign it", confidence_level: 0.7, content_reference: { has_large_content: true, content_type: "document", content_file_path: "/tmp/dpa.pdf" } });
    assert.equal(s.status, "content_processing_required");
    assert.equal(s.next_actions[0].tool, "field_request");
    assert.equal(s.next_actions[0].parameters.content_reference.has_large_content, true);
  });

  test("type_filter, max_results and include_explanations; tool:// contexts are matched too", async () => {
    const s = await fr({ query: "list the deals in negotiation worth more than 100000", extracted_variables: { domain: "business", business_area: "sales" }, confidence_level: 0.6, context_preferences: { type_filter: ["tool"], max_results: 2, include_explanations: false } });
    assert.ok(s.matches.length <= 2);
    for (const m of s.matches) {
      assert.equal(m.type, "tool");
      assert.equal(m.match_reasoning.explanation, undefined);
    }
    assert.ok(s._metadata.indices_used.includes("type_filtered"));
  });
});

describe("field_request validation: the seed's educational errors", () => {
  /** Calls with `args` and checks the error format; returns the answer. */
  async function refused(args, code) {
    const s = await fr(args);
    assert.equal(s.success, false, JSON.stringify(s));
    assert.equal(s.error.code, code, JSON.stringify(s.error));
    assert.equal(typeof s.error.message, "string");
    for (const k of ["instruction", "why"]) assert.equal(typeof s.error.fix[k], "string", `fix.${k}`);
    assert.ok(s.error.fix.example && typeof s.error.fix.example === "object");
    assert.ok(s.guidance && typeof s.guidance === "object");
    assert.equal(typeof s.partial_results.message, "string");
    assert.equal(typeof s.partial_results.blocked_by, "string");
    assert.equal(s.next_actions.at(-1).tool, "get_help");
    return s;
  }

  test("technical without technology (the allOf rule): INVALID_VARIABLES, with what would have matched", async () => {
    const s = await refused({ ...incident, extracted_variables: { domain: "technical", system_component: "checkout" } }, "INVALID_VARIABLES");
    assert.equal(s.error.message, 'Domain "technical" requires technology to be specified');
    assert.deepEqual(s.error.fix.example, { technology: "python" });
    assert.ok(s.guidance.common_technologies.includes("python"));
    assert.equal(s.partial_results.blocked_by, "missing_technology_variable");
    assert.match(s.partial_results.message, /^Would have found \d context/);
    assert.equal(s.partial_results.would_match[0], "workflow://incident-response");
    const retry = s.next_actions[0];
    assert.equal(retry.tool, "field_request");
    assert.equal(retry.parameters.extracted_variables.technology, "python", "the fix merged into the call");
    const fixed = await fr(retry.parameters);
    assert.equal(fixed.success, true);
    assert.equal(fixed.matches[0].uri, "workflow://incident-response");
  });

  test("critical urgency without a domain (the second allOf rule): INVALID_VARIABLES", async () => {
    const s = await refused({ query: "prod is on fire, the api gateway stopped answering", extracted_variables: { urgency: "critical" }, confidence_level: 0.7 }, "INVALID_VARIABLES");
    assert.equal(s.error.problems[0].field, "extracted_variables.domain");
    assert.equal(s.partial_results.blocked_by, "missing_domain_variable");
  });

  test("a query under 3 words: QUERY_TOO_BRIEF; over 500 characters: QUERY_TOO_LONG", async () => {
    const s = await refused({ query: "the bug", confidence_level: 0.5 }, "QUERY_TOO_BRIEF");
    assert.equal(s.error.problems[0].issue, "Too brief");
    await refused({ query: "fix it", confidence_level: 0.5 }, "QUERY_TOO_BRIEF");
    const long = await refused({ query: "please help ".repeat(50), confidence_level: 0.5 }, "QUERY_TOO_LONG");
    assert.equal(long.error.fix.example.content_reference.has_large_content, true);
  });

  test("confidence above 0.9 with fewer than 3 variables: CONFIDENCE_INCONSISTENT", async () => {
    const s = await refused({ query: "Plan a family trip to Lisbon for a week in May", extracted_variables: { domain: "personal" }, confidence_level: 0.95 }, "CONFIDENCE_INCONSISTENT");
    assert.equal(s.error.problems[0].issue, "High confidence with few variables");
    const ok = await fr({ query: "Plan a family trip to Lisbon for a week in May", extracted_variables: { domain: "personal", destination: "Lisbon", travel_dates: "May" }, confidence_level: 0.95 });
    assert.equal(ok.success, true);
  });

  test("missing or malformed arguments are answered in the same format", async () => {
    await refused({ confidence_level: 0.5 }, "MISSING_QUERY");
    await refused({ query: "Plan a family trip to Lisbon" }, "INVALID_CONFIDENCE");
    await refused({ query: "Plan a family trip to Lisbon", confidence_level: 2 }, "INVALID_CONFIDENCE");
    const s = await refused({ query: "Plan a family trip to Lisbon", confidence_level: 0.5, extracted_variables: { domain: "cooking" }, colour: "red" }, "INVALID_INPUT");
    assert.ok(s.guidance.schema_problems.some((p) => p.includes("/extracted_variables/domain")), JSON.stringify(s.guidance));
    assert.ok(s.guidance.schema_problems.some((p) => p.includes("colour")), JSON.stringify(s.guidance));
  });

  test("the listed schema keeps the seed's allOf rules", async () => {
    const { tools } = await client.listTools();
    const t = tools.find((x) => x.name === "field_request");
    assert.equal(t.inputSchema.allOf.length, 2);
    assert.deepEqual(t.inputSchema.required, ["query", "confidence_level"]);
  });
});

describe("the catalog index", () => {
  test("is built once per instance and rebuilt when the catalog generation moves", async () => {
    await fr(incident);
    const warm = await fr(incident);
    assert.equal(warm._metadata.cache_hit, true);
    assert.ok(warm._insights.notes.some((n) => n.startsWith("The catalog index was reused")), JSON.stringify(warm._insights));
    const db = await w.mf.getD1Database("DB");
    await db.prepare("INSERT INTO contexts (uri, type, name, description, domain, tags, complexity, example_requests, activation_condition, confidence_required, required_variables, optional_variables, execution_preview) VALUES ('pattern://kombucha-brewing', 'pattern', 'Kombucha brewing', 'Brew kombucha at home: scoby, sweet tea, fermentation times and flavouring.', 'personal', '[\"kombucha\",\"fermentation\",\"scoby\"]', 'simple', '[\"how do I brew kombucha with a scoby\"]', 'User wants to ferment kombucha.', 0.5, '[]', '[]', '{\"type\":\"pattern\",\"estimated_steps\":\"3\",\"contexts_involved\":[],\"stopping_condition\":\"First batch bottled\"}')").run();
    const before = await fr({ query: "how do I brew kombucha with a scoby at home", confidence_level: 0.6 });
    assert.equal(before._metadata.cache_hit, true);
    assert.notEqual(before.matches[0]?.uri, "pattern://kombucha-brewing", "the new row is not indexed until the generation moves");
    await db.prepare("UPDATE flowmind_generation SET generation = generation + 1 WHERE id = 1").run();
    const after = await fr({ query: "how do I brew kombucha with a scoby at home", confidence_level: 0.6 });
    assert.equal(after._metadata.cache_hit, false);
    assert.equal(after.matches[0].uri, "pattern://kombucha-brewing");
    await db.prepare("DELETE FROM contexts WHERE uri = 'pattern://kombucha-brewing'").run();
    await db.prepare("UPDATE flowmind_generation SET generation = generation + 1 WHERE id = 1").run();
  });

  test("tool:// contexts follow the caller's roles, like tools/list", async () => {
    const s = await call("list_available_contexts", { filter: { type: ["tool"] }, pagination: { limit: 50 } });
    const anonymous = s.result.contexts.map((c) => c.uri);
    assert.ok(anonymous.includes("tool://field_request"));
    assert.ok(!anonymous.includes("tool://list_employees"), "an hr tool is hidden from an anonymous caller");
    const aud = new URL("/mcp", w.url).href;
    const token = hs256({ sub: "00000000-0000-4000-8000-0000000000f1", roles: ["hr-read"], aud, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET);
    const hr = await connect({ authorization: `Bearer ${token}` });
    try {
      const t = await call("list_available_contexts", { filter: { type: ["tool"] }, pagination: { limit: 50 } }, hr);
      assert.ok(t.result.contexts.some((c) => c.uri === "tool://list_employees"));
      assert.equal(t.result.total, s.result.total + t.result.contexts.filter((c) => !anonymous.includes(c.uri)).length);
    } finally {
      await hr.close();
    }
  });
});

describe("list_available_contexts", () => {
  test("filters, sorts and pages with totals", async () => {
    const first = await call("list_available_contexts", { filter: { domain: ["regulatory"], type: ["workflow"] }, sort: { by: "popularity" }, pagination: { limit: 5 } });
    const r = first.result;
    assert.equal(r.returned, 5);
    assert.ok(r.total > 5);
    assert.equal(r.has_more, true);
    assert.equal(r.next_offset, 5);
    for (const c of r.contexts) {
      assert.equal(c.domain, "regulatory");
      assert.equal(c.type, "workflow");
    }
    const pops = r.contexts.map((c) => c.popularity);
    assert.deepEqual(pops, [...pops].sort((a, b) => b - a));
    const next = first.next_actions.find((a) => a.tool === "list_available_contexts");
    assert.deepEqual(next.parameters.pagination, { offset: 5, limit: 5 });
    const rest = await call("list_available_contexts", next.parameters);
    assert.equal(rest.result.returned, r.total - 5);
    assert.equal(rest.result.has_more, false);
    const seen = new Set([...r.contexts, ...rest.result.contexts].map((c) => c.uri));
    assert.equal(seen.size, r.total);
  });

  test("tags, complexity, name order; nothing found still teaches", async () => {
    const s = await call("list_available_contexts", { filter: { tags: ["gdpr"] }, sort: { by: "name" } });
    assert.ok(s.result.total >= 1);
    for (const c of s.result.contexts) assert.ok(c.tags.includes("gdpr"));
    const names = s.result.contexts.map((c) => c.name);
    assert.deepEqual(names, [...names].sort());
    const none = await call("list_available_contexts", { filter: { tags: ["no-such-tag"], complexity: "expert" } });
    assert.equal(none.result.total, 0);
    assert.match(none.teaching.tip, /drop a filter/);
  });

  test("bad arguments are refused with the field named", async () => {
    const r = await client.callTool({ name: "list_available_contexts", arguments: { pagination: { limit: 500 } } });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /pagination\/limit/);
  });
});

describe("get_help", () => {
  test("error: explains a code and its fix", async () => {
    const s = await call("get_help", { help_type: "error", context: { error_message: "INVALID_VARIABLES" } });
    assert.equal(s.result.code, "INVALID_VARIABLES");
    assert.equal(typeof s.result.fix.instruction, "string");
    assert.equal(s.next_actions[0].tool, "field_request");
  });

  test("error: explains a message given as text, and says so when it does not know it", async () => {
    const s = await call("get_help", { help_type: "error", context: { error_message: 'Domain "technical" requires technology to be specified' } });
    assert.equal(s.result.code, "INVALID_VARIABLES");
    const u = await call("get_help", { help_type: "error", context: { error_message: "the flux capacitor melted" } });
    assert.equal(u.result.code, null);
    assert.ok(u.result.known_codes.includes("QUERY_TOO_BRIEF"));
  });

  test("error: the workflow tools' codes each get their own explanation; the next action calls the tool the fix belongs to", async () => {
    const codes = [
      ["TOOL_LOCKED", "field_request"], ["INVALID_CONSTRAINTS", "execute_workflow"], ["CONFIDENCE_LEVEL_NEEDED", "execute_workflow"],
      ["CONFIDENCE_TOO_LOW", "execute_workflow"], ["WORKFLOW_TIMED_OUT", "execute_workflow"], ["WORKFLOW_CANCELLED", "execute_workflow"],
      ["INVALID_COMPOSITION", "compose_workflow"], ["NOT_EXECUTABLE", "get_help"], ["TOO_MANY_OPEN_WORKFLOWS", "get_help"],
      ["COMPLEXITY_ABOVE_LEVEL", "field_request"],
    ];
    for (const [code, tool] of codes) {
      const s = await call("get_help", { help_type: "error", context: { error_message: code } });
      assert.equal(s.result.code, code);
      assert.equal(s.next_actions[0].tool, tool, code);
      if (tool !== "get_help") assert.deepEqual(s.next_actions[0].parameters, s.result.fix.example, code);
    }
    const s = await call("get_help", { help_type: "error", context: { error_message: "TOO_MANY_OPEN_WORKFLOWS" } });
    assert.match(s.result.explanation, /per caller: a signed-in user's runs over all their MCP sessions and 2026-07-28 requests together.*Paused runs count/);
  });

  test("usage: the named tool's schema and an example that works", async () => {
    const s = await call("get_help", { help_type: "usage", specific_question: "How do I call field_request?" });
    assert.equal(s.result.tools.length, 1);
    const u = s.result.tools[0];
    assert.equal(u.tool, "field_request");
    assert.equal(u.input_schema.allOf.length, 2);
    const ran = await fr(u.example);
    assert.equal(ran.success, true);
    assert.equal(ran.status, "success");
  });

  test("best_practices and concept, from the catalog", async () => {
    const b = await call("get_help", { help_type: "best_practices" });
    assert.ok(b.result.practices.length >= 5);
    assert.equal(b.result.contexts_per_domain.emergency, 12);
    const c = await call("get_help", { help_type: "concept", specific_question: "What does confidence mean here?" });
    assert.equal(c.result.concepts[0].concept, "confidence");
    const u = await call("get_help", { help_type: "concept", specific_question: "what is workflow://gdpr-review" });
    assert.equal(u.result.context.uri, "workflow://gdpr-review");
  });
});

describe("evaluate_semantic_condition", () => {
  const frustrated = { condition: "user seems frustrated", context: { user_message: "This is RIDICULOUS, the export is broken again!!" } };

  test("boolean, confidence (the default) and detailed answers", async () => {
    const b = await call("evaluate_semantic_condition", { ...frustrated, evaluation_type: "boolean" });
    assert.deepEqual(b.result, { result: true });
    const c = await call("evaluate_semantic_condition", frustrated);
    assert.equal(c.result.result, true);
    assert.ok(c.result.confidence > 0.5 && c.result.confidence <= 1);
    assert.equal(c.result.reasoning, undefined);
    const d = await call("evaluate_semantic_condition", { ...frustrated, evaluation_type: "detailed" });
    assert.equal(d.result.condition_kind, "sentiment");
    assert.ok(d.result.reasoning.length >= 2);
    assert.ok(d.result.evidence.cues.includes("ridiculous"));
  });

  test("urgency, variables, mentions and negation", async () => {
    const ask = async (condition, context) => (await call("evaluate_semantic_condition", { condition, context, evaluation_type: "detailed" })).result;
    assert.equal((await ask("request is urgent", { user_message: "we need this fixed ASAP, production is down" })).result, true);
    assert.equal((await ask("request is urgent", { user_message: "whenever you get a chance, could you look at the colours" })).result, false);
    const vars = { user_message: "ok", session_variables: { budget: 7500, user_tier: "premium" } };
    const over = await ask("budget is over 5000", vars);
    assert.equal(over.result, true);
    assert.equal(over.condition_kind, "variable");
    assert.equal((await ask("budget is under 5000", vars)).result, false);
    assert.equal((await ask("user tier is premium", vars)).result, true);
    assert.equal((await ask("mentions a refund", { user_message: "please process a refund for order 42" })).result, true);
    assert.equal((await ask("does not mention a refund", { user_message: "where is my parcel?" })).result, true);
    assert.equal((await ask("user is not frustrated", { user_message: "thanks, that worked perfectly" })).result, true);
  });

  test("the same evaluation within 5 s comes from the cache", async () => {
    const args = { condition: "mentions pricing", context: { user_message: `what is the pricing for ${Date.now()} seats?` } };
    const first = await call("evaluate_semantic_condition", args);
    assert.equal(first._metadata.cache_hit, false);
    const second = await call("evaluate_semantic_condition", args);
    assert.equal(second._metadata.cache_hit, true);
    assert.deepEqual(second.result, first.result);
    assert.ok(first._insights.notes.includes("Computed for this call: no cached answer was used."), JSON.stringify(first._insights));
    assert.ok(second._insights.notes.some((n) => n.startsWith("Answered from the result cache")), JSON.stringify(second._insights));
  });

  test("a missing user_message is refused with the field named", async () => {
    const r = await client.callTool({ name: "evaluate_semantic_condition", arguments: { condition: "user seems frustrated", context: {} } });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /user_message/);
  });
});

describe("rate limits", () => {
  // Behaviour, not speed: field_request's bucket refills one token every 6 minutes here, so however
  // slowly the machine answers, the burst is exactly 10 and each premature call adds a token's
  // refill time to the wait. Recovery is shown on get_help (a bucket of 1 refilled in 2 s): waiting
  // at least as long as told always recovers, so a slow machine only waits longer. The built-in
  // 10-per-10-s limit itself is checked by limits.rs's unit tests (built_in_limits_yield_to_the_setting).
  test("field_request backs off progressively: a burst of the bucket's size, then refusals whose wait grows with every premature call; waiting as told recovers", async () => {
    const w2 = await startWorker({ RATE_LIMITS: "field_request=10/1h, get_help=1/2s" }, { quiet: true });
    const c = await connect({}, w2);
    try {
      for (let i = 0; i < 10; i++) {
        const r = await c.callTool({ name: "field_request", arguments: incident });
        assert.notEqual(r.isError, true, `call ${i + 1}: ${JSON.stringify(r)}`);
      }
      // Progressive backoff: a refused call takes a token as debt, so each premature call adds a
      // token's refill time (360 s here) to the wait.
      const waits = [];
      for (let i = 0; i < 3; i++) {
        const refused = await c.callTool({ name: "field_request", arguments: incident });
        assert.equal(refused.isError, true);
        const m = refused.content[0].text.match(/^Rate limit reached for tool field_request: 10 calls per 3600 s per caller\. Try again in (\d+) s\. Each call before then adds to the wait \(progressive backoff\)\.$/);
        assert.ok(m, refused.content[0].text);
        waits.push(Number(m[1]));
      }
      for (let i = 1; i < waits.length; i++) {
        // 360 s more, less whatever refilled while the previous call was answered.
        assert.ok(waits[i] > waits[i - 1] && waits[i] <= waits[i - 1] + 360, `waits grow by a token's refill time: ${waits}`);
      }
      assert.ok(waits[0] > 360 && waits[0] <= 720, `the first refusal already owes one token: ${waits}`);

      const other = await c.callTool({ name: "get_help", arguments: { help_type: "best_practices" } });
      assert.notEqual(other.isError, true, "other tools keep their own buckets");
      let told = null;
      for (let i = 0; i < 5 && told === null; i++) {
        const r = await c.callTool({ name: "get_help", arguments: { help_type: "best_practices" } });
        if (r.isError) {
          const m = r.content[0].text.match(/^Rate limit reached for tool get_help: 1 call per 2 s per caller\. Try again in (\d+) s\.$/);
          assert.ok(m, r.content[0].text);
          told = Number(m[1]);
        }
      }
      assert.ok(told !== null, "a second get_help within its refill time is refused");
      await new Promise((r) => setTimeout(r, told * 1000 + 200));
      const again = await c.callTool({ name: "get_help", arguments: { help_type: "best_practices" } });
      assert.notEqual(again.isError, true, "waiting as told recovers");
    } finally {
      await c.close();
      await w2.stop();
    }
  });
});
