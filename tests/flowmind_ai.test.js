// FlowMind with models, through the official MCP SDK client against the built Worker:
// field_request's bge-small embedding blend through a Workers AI binding named AI (backed by the
// stand-in of support/ai.js, since Workers AI is an external, remote-only service). Without it, or
// when it fails, the answers keep their shape and say why.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
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
    withAi = await startWorker({ RATE_LIMITS: "*=off", FLOWMIND_EMBEDDING_TIMEOUT_MS: "1000" }, { quiet: true, ai: true });
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

  test("a paraphrase sharing no words with its context is found through the embedding alone", async () => {
    // The medical first-response context speaks of a child who swallowed something, airway,
    // breathing and choking; this request says none of those words, only their synonyms in the
    // stand-in's space (toddler, gagging, air).
    const args = { query: "our toddler keeps gagging and fighting for air", extracted_variables: { domain: "emergency", urgency: "critical" }, confidence_level: 0.6 };
    const lexical = await call(bareClient, "field_request", args);
    assert.ok(!lexical.matches.some((m) => m.uri === MEDICAL), JSON.stringify(lexical.matches.map((m) => m.uri)));

    const s = await call(ai, "field_request", args);
    assert.equal(s.degraded, false);
    assert.equal(s.matches[0].uri, MEDICAL, JSON.stringify(s.matches.map((m) => [m.uri, m.confidence])));
    const r = s.matches[0].match_reasoning;
    assert.equal(r.lexical_similarity, 0, "no shared words");
    assert.ok(r.embedding_similarity > s.matches[1].match_reasoning.embedding_similarity);
    assert.ok(r.semantic_similarity > 0, "the blend gives it the similarity the text could not");
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
