// A stand-in for the external Workers AI service, for tests that start the Worker with
// `startWorker(vars, { ai: true })`. Workers AI is a remote-only binding (wrangler dev needs a
// Cloudflare login for it), so Miniflare gets two small workers instead:
//
// - `workers-ai`, the module behind a wrapped binding named AI: an object of class `Ai` with
//   `run(model, inputs)`, as the Workers AI binding has (workers-rs checks the class name), which
//   forwards each call to the stand-in service and throws when it answers with an error, as the
//   real binding does;
// - `ai-standin`, the service: deterministic embeddings in Workers AI's answer shape
//   `{shape: [n, 384], data: [[…]]}` for `{text: [...]}`, a scripted `{response}` for chat
//   `{messages: [...]}`, a record of every call, and modes that fail.
//
// Its embeddings are hashed bags of words over a tiny synonym table (toddler → child, gagging →
// choking, air → breathing, …) plus a direction every text shares, so that, as with bge-small,
// unrelated texts have a cosine near 0.5 and a paraphrase that shares no words with a text, but
// whose words are synonyms of its words, lies close to it.

/** The stand-in service's source (a module worker). */
export const STANDIN_SOURCE = `
const DIMS = 384;
let mode = "ok";
let judgement = "";
const calls = [];
const STOP = new Set("a an the and or of to in on for with is are was be my our your we i it this that what do how at by from as can not get".split(" "));
const SYNONYMS = {
  toddler: "child", kid: "child", child: "child", baby: "child", son: "child", daughter: "child",
  gagging: "choking", gag: "choking", choking: "choking", choke: "choking", swallowed: "choking", swallow: "choking",
  air: "breathing", airway: "breathing", breathing: "breathing", breathe: "breathing", breath: "breathing",
};
function hash(s, seed) {
  let h = (2166136261 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619) >>> 0; }
  return h;
}
const COMMON = Array.from({ length: DIMS }, (_, i) => ((hash(String(i), 7) & 1) ? 1 : -1) / Math.sqrt(DIMS));
function embed(text) {
  const f = new Array(DIMS).fill(0);
  for (const raw of String(text).toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    if (STOP.has(raw)) continue;
    const w = SYNONYMS[raw] ?? raw.replace(/(ing|ed|es|s)$/, "");
    f[hash(w, 0) % DIMS] += (hash(w, 1) & 1) ? 1 : -1;
  }
  const n = Math.hypot(...f) || 1;
  const v = f.map((x, i) => Math.SQRT1_2 * COMMON[i] + Math.SQRT1_2 * (x / n));
  const m = Math.hypot(...v);
  return v.map((x) => x / m);
}
export default {
  async fetch(req) {
    const url = new URL(req.url);
    if (url.pathname === "/calls") return Response.json(calls);
    if (url.pathname === "/reset") { calls.length = 0; mode = "ok"; judgement = ""; return new Response("ok"); }
    if (url.pathname === "/mode") { mode = await req.text(); return new Response("ok"); }
    if (url.pathname === "/judgement") { judgement = await req.text(); return new Response("ok"); }
    const { model, inputs } = await req.json();
    calls.push({ model, texts: inputs.text ?? null, messages: inputs.messages ?? null });
    if (mode === "fail") return new Response("InferenceUpstreamError: model overloaded", { status: 500 });
    if (mode === "hang") { await new Promise((r) => setTimeout(r, 20000)); }
    if (inputs.messages) return Response.json({ response: judgement });
    if (mode === "shape") return Response.json({ shape: [1, 3], data: [[0.1, 0.2, 0.3]] });
    const data = inputs.text.map(embed);
    return Response.json({ shape: [data.length, DIMS], data, pooling: "mean" });
  },
};
`;

/** The wrapped binding's module: what the Worker sees as env.AI. */
export const BINDING_SOURCE = `
class Ai {
  constructor(env) { this.env = env; }
  async run(model, inputs) {
    const res = await this.env.STANDIN.fetch("http://ai-standin/run", { method: "POST", body: JSON.stringify({ model, inputs }) });
    if (!res.ok) throw new Error(await res.text());
    return res.json();
  }
}
export default function (env) { return new Ai(env); }
`;

/** The Miniflare worker options of the two workers, for a `workers` array. */
export function aiWorkers(compatibilityDate) {
  return [
    // A wrapped binding runs with the compatibility date of the worker that uses it.
    { name: "workers-ai", modules: [{ type: "ESModule", path: "workers-ai.mjs", contents: BINDING_SOURCE }], serviceBindings: { STANDIN: "ai-standin" } },
    { name: "ai-standin", compatibilityDate, modules: true, script: STANDIN_SOURCE },
  ];
}

/**
 * A handle on the stand-in of a started Miniflare: `calls()` lists the calls so far ({model, texts,
 * messages}), `mode(m)` makes later calls succeed ("ok"), answer HTTP 500 ("fail"), hang for 20 s
 * ("hang") or answer embeddings of the wrong shape ("shape"); `judge(text)` sets a chat answer;
 * `reset()` forgets the calls and goes back to "ok".
 */
export function aiHandle(mf) {
  const send = async (path, body) => {
    const standin = await mf.getWorker("ai-standin");
    const res = await standin.fetch(`http://ai-standin${path}`, body === undefined ? {} : { method: "POST", body });
    return path === "/calls" ? res.json() : res.text();
  };
  return {
    calls: () => send("/calls"),
    mode: (m) => send("/mode", m),
    judge: (text) => send("/judgement", text),
    reset: () => send("/reset", ""),
  };
}
