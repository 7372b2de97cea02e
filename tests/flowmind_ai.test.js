// FlowMind with models, through the official MCP SDK client against the built Worker:
// field_request's bge-small embedding blend through a Workers AI binding named AI (backed by the
// stand-in of support/ai.js, since Workers AI is an external, remote-only service), and
// evaluate_semantic_condition assisted by an OpenAI-compatible model provider (a local stand-in
// server). Without either, or when they fail, the answers keep their shape and say why.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startWorker } from "./support/worker.js";

const MODEL = "@cf/baai/bge-small-en-v1.5";
const MEDICAL = "workflow://medical-emergency-triage";

async function connect(worker) {
  const c = new Client({ name: "flowmind-ai-test", version: "1.0.0" });
  await c.connect(new StreamableHTTPClientTransport(new URL(worker.mcpUrl)));
  return c;
}

async function call(c, name, args) {
  const r = await c.callTool({ name, arguments: args });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  assert.ok(r.structuredContent, JSON.stringify(r));
  return r.structuredContent;
}

const incident = {
  query: "The checkout API is returning 500 errors in production and customers cannot pay",
  extracted_variables: { domain: "technical", technology: "nodejs", system_component: "checkout", urgency: "critical" },
  confidence_level: 0.8,
};

/** Keys of an object, sorted, for comparing shapes. */
const keys = (o) => Object.keys(o).sort();

describe("field_request with a Workers AI binding", () => {
  let withAi, bare, ai, bareClient;
  before(async () => {
    // FLOWMIND_GENERATION_TTL_MS 0: a test below edits D1 directly, as another instance would, and
    // expects the next call to see it (the default 1 s bound is tested natively, testkit::flowmind).
    withAi = await startWorker({ RATE_LIMITS: "*=off", FLOWMIND_EMBEDDING_TIMEOUT_MS: "1000", FLOWMIND_GENERATION_TTL_MS: "0" }, { quiet: true, ai: true });
    bare = await startWorker({ RATE_LIMITS: "*=off" }, { quiet: true });
    ai = await connect(withAi);
    bareClient = await connect(bare);
  });
  after(async () => {
    await ai?.close();
    await bareClient?.close();
    await withAi?.stop();
    await bare?.stop();
  });

  test("answers are not degraded and name the embedding index, in the shape of a degraded answer", async () => {
    await withAi.ai.reset();
    const s = await call(ai, "field_request", incident);
    assert.equal(s.status, "success");
    assert.equal(s.matches[0].uri, "workflow://incident-response");
    assert.equal(s.degraded, false);
    assert.equal(s.degraded_reason, null);
    assert.ok(s._metadata.indices_used.includes("bge_small_embeddings"), JSON.stringify(s._metadata));
    assert.equal(s._metadata.embedding_model, MODEL);
    const m = s.matches[0].match_reasoning;
    assert.equal(typeof m.embedding_similarity, "number");
    assert.equal(typeof m.lexical_similarity, "number");

    // One batched call: the request first, then every pooled context it had not embedded yet.
    const calls = await withAi.ai.calls();
    assert.equal(calls.length, 1, JSON.stringify(calls.map((c) => c.texts?.length)));
    assert.equal(calls[0].model, MODEL);
    assert.equal(calls[0].texts[0], incident.query);
    assert.equal(calls[0].texts.length, s._metadata.embeddings.computed);
    assert.equal(s._metadata.embeddings.contexts, 50, "the pool is bounded");
    assert.equal(s._metadata.embeddings.computed, 1 + s._metadata.embeddings.contexts - s._metadata.embeddings.cached_contexts);

    const d = await call(bareClient, "field_request", incident);
    assert.equal(d.degraded, true);
    assert.match(d.degraded_reason, /No Workers AI binding named AI is configured/);
    assert.ok(!d._metadata.indices_used.includes("bge_small_embeddings"));
    assert.equal(d._metadata.embedding_model, null);
    assert.equal(d.matches[0].match_reasoning.embedding_similarity, null);
    assert.deepEqual(keys(s), keys(d));
    assert.deepEqual(keys(s.matches[0]), keys(d.matches[0]));
    assert.deepEqual(keys(s.matches[0].match_reasoning), keys(d.matches[0].match_reasoning));
    assert.deepEqual(keys(s._metadata), keys(d._metadata));
  });

  test("a paraphrase in other words is found, by the synonyms and by the embedding", async () => {
    // The medical first-response context speaks of a child who swallowed something, airway,
    // breathing and choking; this request says none of those words, only their synonyms in the
    // stand-in's space (toddler, gagging, air).
    const args = { query: "our toddler keeps gagging and fighting for air", extracted_variables: { domain: "emergency", urgency: "critical" }, confidence_level: 0.6 };
    // Since issue 23 the text matcher's own synonyms (data/flowmind/synonyms.json: gagging is
    // medical) find the context without a model too, the better answer; the embedding still
    // ranks it above the runner-up.
    const lexical = await call(bareClient, "field_request", args);
    assert.equal(lexical.matches[0]?.uri, MEDICAL, JSON.stringify(lexical.matches.map((m) => m.uri)));

    const s = await call(ai, "field_request", args);
    assert.equal(s.degraded, false);
    assert.equal(s.matches[0].uri, MEDICAL, JSON.stringify(s.matches.map((m) => [m.uri, m.confidence])));
    const r = s.matches[0].match_reasoning;
    assert.ok(r.embedding_similarity > s.matches[1].match_reasoning.embedding_similarity);
    assert.ok(r.semantic_similarity > 0);
  });

  test("a paraphrase sharing no word with its context, nor a synonym of the text matcher's, is found through the embedding alone", async () => {
    // toddler and air are in the stand-in's word table (child, breathing: words of the medical
    // context's text) but in no group of data/flowmind/synonyms.json, and fighting is in neither.
    const args = { query: "toddler fighting for air", extracted_variables: { domain: "emergency", urgency: "critical" }, confidence_level: 0.6 };
    const lexical = await call(bareClient, "field_request", args);
    assert.ok(!lexical.matches.some((m) => m.uri === MEDICAL), JSON.stringify(lexical.matches.map((m) => m.uri)));

    const s = await call(ai, "field_request", args);
    assert.equal(s.degraded, false);
    assert.equal(s.matches[0].uri, MEDICAL, JSON.stringify(s.matches.map((m) => [m.uri, m.confidence])));
    const r = s.matches[0].match_reasoning;
    assert.equal(r.lexical_similarity, 0, "no shared word, no synonym");
    assert.ok(r.embedding_similarity > 0.5, JSON.stringify(r));
    assert.ok(r.semantic_similarity > 0, "the blend gives it the similarity the text could not");
    assert.ok(s.matches[0].confidence > s.matches[1].confidence);
  });

  test("embeddings are cached: a repeated search calls the model for nothing, a new one for what is new", async () => {
    await call(ai, "field_request", incident);
    await withAi.ai.reset();
    const again = await call(ai, "field_request", incident);
    assert.equal(again.degraded, false);
    assert.deepEqual(await withAi.ai.calls(), [], "nothing re-embedded");
    assert.deepEqual(again._metadata.embeddings, { contexts: 50, computed: 0, cached_contexts: 50, query_cached: true });

    const other = { ...incident, query: "Payments fail in production since the deploy and the checkout page shows errors" };
    const s = await call(ai, "field_request", other);
    const calls = await withAi.ai.calls();
    assert.equal(calls.length, 1);
    assert.equal(calls[0].texts[0], other.query);
    assert.equal(calls[0].texts.length, 1 + 50 - s._metadata.embeddings.cached_contexts, "only the request and contexts never embedded");
    assert.ok(s._metadata.embeddings.cached_contexts > 0);

    const db = await withAi.mf.getD1Database("DB");
    const row = await db.prepare("SELECT COUNT(*) AS n, MIN(dims) AS dims FROM flowmind_embeddings WHERE model = ?1").bind(MODEL).first();
    assert.ok(row.n >= 50, JSON.stringify(row));
    assert.equal(row.dims, 384);

    // An edited context is re-embedded on its next search (its text no longer matches the hash).
    const uri = s.matches[0].uri;
    await db.prepare("UPDATE contexts SET description = description || ' Also covers card declines.' WHERE uri = ?1").bind(uri).run();
    await db.prepare("UPDATE flowmind_generation SET generation = generation + 1").run();
    await withAi.ai.reset();
    const edited = await call(ai, "field_request", other);
    const recalls = await withAi.ai.calls();
    assert.equal(recalls.length, 1);
    assert.equal(recalls[0].texts.length, 1, "the request is cached in KV; only the edited context is embedded");
    assert.match(recalls[0].texts[0], /Also covers card declines\./);
    assert.equal(edited._metadata.embeddings.cached_contexts, 49);
  });

  test("evaluate_semantic_condition asks the Workers AI binding when no MODEL_PROVIDER_URL is set", async () => {
    await withAi.ai.reset();
    await withAi.ai.judge(JSON.stringify({ result: true, confidence: 0.9, reasoning: "Three failures in a row." }));
    const s = await call(ai, "evaluate_semantic_condition", { condition: "user seems frustrated", context: { user_message: "third failure today, this is useless" }, evaluation_type: "detailed" });
    assert.equal(s._metadata.model_assisted, true);
    assert.equal(s.result.model.provider, "workers_ai");
    assert.equal(s.result.model.reasoning, "Three failures in a row.");
    const calls = await withAi.ai.calls();
    assert.equal(calls.length, 1);
    assert.equal(calls[0].model, "@cf/meta/llama-3.1-8b-instruct");
    assert.match(calls[0].messages[1].content, /^Condition: user seems frustrated/);
  });

  test("a failing, malformed or silent model: degraded with what happened, same shape, text matching", async () => {
    const reference = await call(bareClient, "field_request", { ...incident, query: "Checkout errors in production for every customer trying to pay" });
    for (const [mode, reason, query] of [
      ["fail", /Workers AI \(@cf\/baai\/bge-small-en-v1\.5\) failed: .*model overloaded/, "Checkout errors in production for every customer trying to pay"],
      ["shape", /unexpected shape: (the answer has 1 vectors for \d+ texts|vector 0 has 3 dimensions, not 384)/, "Checkout errors in production for all customers trying to pay"],
      ["hang", /did not answer within 1000 ms \(FLOWMIND_EMBEDDING_TIMEOUT_MS\)/, "Checkout errors in production for our customers trying to pay"],
    ]) {
      await withAi.ai.reset();
      await withAi.ai.mode(mode);
      const s = await call(ai, "field_request", { ...incident, query });
      assert.equal(s.degraded, true, mode);
      assert.match(s.degraded_reason, reason);
      assert.ok(!s._metadata.indices_used.includes("bge_small_embeddings"), mode);
      assert.equal(s._metadata.embeddings, null);
      assert.equal(s.matches[0].uri, "workflow://incident-response", mode);
      assert.deepEqual(keys(s), keys(reference));
      assert.equal((await withAi.ai.calls()).length, 1, `${mode}: the model was asked once`);
    }
    await withAi.ai.reset();
  });
});

/**
 * An OpenAI-compatible model provider that answers every request with `p.answer` as the message
 * content, or HTTP 500 while `p.fail` is set. `p.requests` records { auth, body } of each.
 */
function judge() {
  const p = { requests: [], answer: null, fail: false };
  p.server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      p.requests.push({ auth: req.headers.authorization, body: JSON.parse(body) });
      if (p.fail) return res.writeHead(500, { "content-type": "application/json" }).end('{"error":"overloaded"}');
      res.writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ choices: [{ message: { role: "assistant", content: `Here you go: ${JSON.stringify(p.answer)}` } }] }));
    });
  });
  return new Promise((resolve) => p.server.listen(0, "127.0.0.1", () => {
    p.url = `http://127.0.0.1:${p.server.address().port}/v1/chat/completions`;
    resolve(p);
  }));
}

describe("evaluate_semantic_condition with a model provider", () => {
  let provider, w, bare, c, bareClient;
  before(async () => {
    provider = await judge();
    w = await startWorker({ RATE_LIMITS: "*=off", MODEL_PROVIDER_URL: provider.url, MODEL_PROVIDER_KEY: "judge-key", MODEL_PROVIDER_MODEL: "judge-small" }, { quiet: true });
    bare = await startWorker({ RATE_LIMITS: "*=off" }, { quiet: true });
    c = await connect(w);
    bareClient = await connect(bare);
  });
  after(async () => {
    await c?.close();
    await bareClient?.close();
    await w?.stop();
    await bare?.stop();
    provider?.server.closeAllConnections();
    provider?.server.close();
  });

  const ask = (client, user_message, condition = "user seems frustrated") =>
    call(client, "evaluate_semantic_condition", { condition, context: { user_message, session_variables: { plan: "pro" } }, evaluation_type: "detailed" });

  test("without a model the rules decide alone, and detailed says why", async () => {
    const s = await ask(bareClient, "this export is useless, broken again!!");
    assert.equal(s._metadata.model_assisted, false);
    assert.match(s._metadata.model_not_used_reason, /no model is configured \(MODEL_PROVIDER_URL or a Workers AI binding named AI\)/);
    assert.equal(s.result.evaluator, "rules");
    assert.equal(s.result.model.used, false);
    assert.match(s.result.reasoning.at(-1), /^No model was consulted: no model is configured/);
  });

  test("agreement: the same verdict with more confidence, both shown", async () => {
    const message = "this export is useless, broken again!!";
    const rules = (await ask(bareClient, message)).result;
    provider.answer = { result: true, confidence: 0.85, reasoning: "They call the export useless and broken." };
    const before = provider.requests.length;
    const s = await ask(c, message);
    assert.equal(s._metadata.model_assisted, true);
    assert.equal(s._metadata.model_not_used_reason, null);
    assert.equal(s.result.evaluator, "rules+model");
    assert.equal(s.result.result, true);
    assert.equal(s.result.rules.result, rules.result);
    assert.equal(s.result.rules.confidence, rules.confidence);
    assert.ok(s.result.confidence > rules.confidence && s.result.confidence > 0.85, `${s.result.confidence} vs ${rules.confidence}`);
    assert.deepEqual(s.result.model, { used: true, provider: "openai_compatible", result: true, confidence: 0.85, reasoning: "They call the export useless and broken.", agrees_with_rules: true });
    assert.ok(s.result.reasoning.some((r) => r.includes("They call the export useless and broken.")));
    assert.match(s.result.reasoning.at(-1), /agree, so the confidence rises/);

    assert.equal(provider.requests.length, before + 1);
    const req = provider.requests.at(-1);
    assert.equal(req.auth, "Bearer judge-key");
    assert.equal(req.body.model, "judge-small");
    assert.match(req.body.messages[0].content, /JSON object/);
    assert.match(req.body.messages[1].content, /Condition: user seems frustrated\nUser message: this export is useless, broken again!!/);
    assert.match(req.body.messages[1].content, /"plan":"pro"/);

    const cached = await ask(c, message);
    assert.equal(cached._metadata.cache_hit, true);
    assert.deepEqual(cached.result, s.result);
    assert.equal(provider.requests.length, before + 1, "the 5 s cache answers without asking the model again");
  });

  test("disagreement: the more confident side wins with less confidence, and detailed shows both", async () => {
    const message = "the report is broken";
    const rules = (await ask(bareClient, message)).result;
    provider.answer = { result: !rules.result, confidence: 0.97, reasoning: "A plain statement of fact, without any annoyance." };
    const s = await ask(c, message);
    assert.equal(s.result.rules.result, rules.result);
    assert.equal(s.result.model.result, !rules.result);
    assert.equal(s.result.model.agrees_with_rules, false);
    assert.equal(s.result.result, !rules.result, "the model was far surer than the rules");
    assert.ok(s.result.confidence < 0.97, `${s.result.confidence}: disagreement costs confidence`);
    assert.match(s.result.reasoning.at(-1), /disagree/);

    // An exact variable comparison (0.97) outweighs a model that disagrees less surely.
    provider.answer = { result: false, confidence: 0.8, reasoning: "Looks like a free plan." };
    const v = await ask(c, "what does my plan include?", "plan is pro");
    assert.equal(v.result.rules.result, true);
    assert.equal(v.result.result, true);
    assert.ok(v.result.confidence < v.result.rules.confidence);
  });

  test("a failing or nonsensical provider: the rules alone, and detailed says what went wrong", async () => {
    provider.fail = true;
    const message = "honestly I am fed up, nothing works";
    const rules = (await ask(bareClient, message)).result;
    const s = await ask(c, message);
    provider.fail = false;
    assert.equal(s._metadata.model_assisted, false);
    assert.match(s._metadata.model_not_used_reason, /the model provider answered HTTP 500; the rules decided alone/);
    assert.equal(s.result.result, rules.result);
    assert.equal(s.result.confidence, rules.confidence);
    assert.equal(s.result.model.used, false);

    provider.answer = "I think so";
    const g = await ask(c, "honestly I am fed up, nothing works at all");
    assert.equal(g._metadata.model_assisted, false);
    assert.match(g._metadata.model_not_used_reason, /holds no JSON object/);
  });
});
