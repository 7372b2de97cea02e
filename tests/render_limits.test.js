// Rendering costs are bounded by the input (issue 15, item 4), and the template security cases
// 27–30 of the security notes, end to end: create_template and process_template through MCP against
// the built Worker with real D1 and KV.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { initialize, rpc } from "./support/mcp.js";

let w;
let session;
before(async () => {
  w = await startWorker({ RATE_LIMITS: "*=off" });
  ({ session } = await initialize(w.mcpUrl));
});
after(() => w?.stop());

const call = async (name, args) => (await rpc(w.mcpUrl, session, "tools/call", { name, arguments: args })).reply.result;
const textOf = (r) => r.content[0].text;
/**
 * The budget a refusal names (`a budget of N units`), checked against what the input allows: the
 * fuel (100,000), one unit per byte of the template, two per value, key or 16 bytes of text in the
 * variables. A value, key or byte of text takes at least one byte of JSON, so the allowance is at most
 * twice the variables' JSON; `extra` bytes cover what process_template adds to them (agent, dates,
 * session). So the work done before the refusal is linear in the input: that, not a clock, is what
 * "refused quickly" means here (timings on a shared machine prove nothing).
 */
function assertRefusedByBudget(result, content, variables, extra = 4096) {
  assert.equal(result.isError, true, textOf(result));
  const m = /evaluation budget exhausted: .*a budget of (\d+) units: 100000, /.exec(textOf(result));
  assert.ok(m, `refused by the budget: ${textOf(result)}`);
  const allowed = 100_000 + content.length + 2 * (JSON.stringify(variables).length + extra);
  assert.ok(Number(m[1]) > 100_000 && Number(m[1]) <= allowed, `a budget of ${m[1]} units, linear in the input (at most ${allowed})`);
}
const create = (name, content, extra = {}) =>
  call("create_template", { template_definition: { name, title: `Test ${name}`, content, category: "custom", variables_schema: {}, ...extra } });
const process = (template_name, variables, processing_options = {}) =>
  call("process_template", { template_name, variables, processing_options: { use_cache: false, ...processing_options } });

/** The Worker still answers after a refusal: the wasm instance did not trap. */
async function stillAlive() {
  const r = await call("get_mode_indicator", {});
  assert.equal(r.isError, undefined, JSON.stringify(r));
}

describe("rendering costs are bounded by the input", () => {
  test("a 24 KB create_template whose example maps 8,000 zeros onto themselves is refused within a budget linear in its input", async () => {
    const zeros = Array(8_000).fill(0);
    const definition = {
      name: "test-map-boom",
      title: "Map boom",
      content: "{x.map(i => x)} boom",
      category: "custom",
      variables_schema: {},
      usage_examples: [{ name: "zeros", variables: { x: zeros } }],
    };
    assert.ok(JSON.stringify(definition).length > 16_000, "the request carries the whole list");
    const result = await call("create_template", { template_definition: definition });
    assert.match(textOf(result), /compilation test failed with usage example "zeros": line 1, column 3: evaluation budget exhausted/);
    assert.match(textOf(result), /x\.map\(i => x\)\) costs the square of the input/, "says what to do");
    assertRefusedByBudget(result, definition.content, { x: zeros });
    assert.match(textOf(await process("test-map-boom", {})), /not found/, "nothing was saved");
    await stillAlive();
  });

  test("a filter over 200,000 strings that reads the whole list for each item is refused within a budget linear in its input", async () => {
    const x = Array(200_000).fill("a");
    assert.equal(textOf(await create("test-filter-all", "{x.filter(i => x.length > 0).length}")).includes("created successfully"), true);
    assert.equal(textOf(await create("test-length", "{x.length}")).includes("created successfully"), true);
    // The same input with a cheap template renders: the input itself is within its budget.
    assert.equal(textOf(await process("test-length", { x })), "200000");
    const result = await process("test-filter-all", { x });
    assert.match(textOf(result), /Template processing failed: line 1, column \d+: evaluation budget exhausted/);
    assertRefusedByBudget(result, "{x.filter(i => x.length > 0).length}", { x });
    await stillAlive();
  });

  test("the costliest shape per input byte the cost search found is refused within a budget linear in its input", async () => {
    const l = Array(2_000).fill({ name: "n", ok: true, k: [1, 2] });
    await create("test-worst", "{l.map(v => l).length}");
    await create("test-worst-baseline", "{l.length + l[0].k.length}");
    assert.equal(textOf(await process("test-worst-baseline", { l })), "2002");
    const result = await process("test-worst", { l });
    assertRefusedByBudget(result, "{l.map(v => l).length}", { l });
  });

  test("a large list rendered once still renders: the budget grows with the input", async () => {
    const items = Array.from({ length: 20_000 }, (_, i) => ({ name: `n${i}`, ok: i % 2 === 0 }));
    await create("test-large-once", "{items.filter(i => i.ok).map(i => i.name).join(', ').length} of {items.length}");
    const r = await process("test-large-once", { items });
    const expected = items.filter((i) => i.ok).map((i) => i.name).join(", ").length;
    assert.equal(textOf(r), `${expected} of 20000`);
  });
});

describe("security cases 27-30: templates", () => {
  test("27: values are HTML-escaped once, cannot break out of an attribute, and javascript: URLs are blocked", async () => {
    await create("test-escape", "# Hi {name}\n\n[site]({url}) {note}");
    const html = async (variables) => textOf(await process("test-escape", variables, { output_format: "html" }));
    const h = await html({ name: "<script>alert(1)</script>", url: '" onmouseover="alert(1)', note: "&lt;b&gt; & <i>" });
    assert.ok(h.includes("<h1>Hi &lt;script&gt;alert(1)&lt;/script&gt;</h1>"), h);
    assert.ok(!h.includes("<script>"), h);
    assert.ok(h.includes('href="&quot; onmouseover=&quot;alert(1)"'), h);
    assert.ok(!h.includes('onmouseover="'), `no attribute of its own: ${h}`);
    assert.ok(h.includes("&amp;lt;b&amp;gt; &amp; &lt;i&gt;"), `escaped exactly once: ${h}`);
    for (const url of ["javascript:alert(1)", " JaVa\tScript:alert(1)", "data:text/html,<b>x</b>"]) {
      const out = await html({ name: "A", url, note: "" });
      assert.ok(out.includes('href="#"'), `${JSON.stringify(url)}: ${out}`);
    }
  });

  test("28: missing paths render empty and __proto__ or constructor never reach host data", async () => {
    await create("test-proto", "[{client.name}|{o.__proto__}|{o.constructor}|{constructor}|{o.toString}|{__proto__.polluted}]");
    const o = JSON.parse('{"__proto__": "own key"}');
    const r = await process("test-proto", { o }, { include_metadata: true });
    assert.equal(r.isError, undefined, textOf(r));
    assert.match(textOf(r), /^\[\|own key\|\|\|\|\]/);
    assert.match(textOf(r), /Warnings: missing values for client, o\.constructor, constructor, o\.toString, __proto__/);
    assert.ok(!/function|\[object|native code/.test(textOf(r)), textOf(r));
    const own = await process("test-proto", JSON.parse('{"__proto__": {"polluted": "a plain key"}}'));
    assert.equal(textOf(own), "[|||||a plain key]", "__proto__ is read as the key it is");
  });

  test("29: 10,000 nested parentheses, paths 10,000 parts deep, a map over 400,000 items and output over 1 MiB are refused with a position; the Worker keeps serving", async () => {
    const tooLong = await create("test-deep", `{${"(".repeat(10_000)}1${")".repeat(10_000)}}`);
    assert.equal(tooLong.isError, true);
    assert.match(textOf(tooLong), /Invalid arguments for tool create_template: .*content/, "10,000 levels do not fit the 10,000 characters a template may have");
    const deep = await create("test-deep", `{${"(".repeat(4_990)}1${")".repeat(4_990)}}`);
    assert.equal(deep.isError, true);
    assert.match(textOf(deep), /Template syntax validation failed: line 1, column \d+: expression nested deeper than 200 levels/);
    const deepPath = Array(10_000).fill("a").join(".");
    const deepDefaults = await create("test-deep-path", "{a.a} default", { default_values: { [deepPath]: 1 } });
    assert.match(textOf(deepDefaults), /default_values keys must be dotted paths/, "a path of 10,000 parts would nest the variables 10,000 deep");
    const deepSchema = await create("test-deep-path", "{a.a} default", { variables_schema: { [deepPath]: { type: "string" } } });
    assert.match(textOf(deepSchema), /is not a dotted path like client\.name \(at most 32 parts\)/);
    await create("test-map-all", "{x.map(i => i * 2).length}");
    const mapped = await process("test-map-all", { x: Array(400_000).fill(0) });
    assert.match(textOf(mapped), /line 1, column \d+: evaluation budget exhausted/);
    await create("test-big-output", "{s}{s}{s}{s}{s}");
    const big = await process("test-big-output", { s: "y".repeat(250_000) });
    assert.match(textOf(big), /line 1, column 14: result larger than the limit of 1048576 bytes/);
    await stillAlive();
  });

  test("30: currency and dates give deterministic text or a typed error", async () => {
    await create("test-money", "{v|currency}");
    const money = async (v) => textOf(await process("test-money", { v }));
    assert.equal(await money(0.1 + 0.2), "$0.30");
    assert.equal(await money(-0), "$0.00");
    assert.equal(await money(1e21), "$1,000,000,000,000,000,000,000.00");
    assert.equal(await money(-1234.5), "-$1,234.50");
    for (const bad of ["NaN", "Infinity", "-Infinity"]) {
      assert.match(await money(bad), new RegExp(`Template processing failed: line 1, column 3: currency: ${bad} is not a finite number`));
    }
    await create("test-date", "{d|'dddd, MMMM D, YYYY h:mm A'}");
    const date = async (d) => textOf(await process("test-date", { d }));
    assert.equal(await date("2024-02-29"), "Thursday, February 29, 2024 12:00 AM");
    assert.match(await date("2025-02-29"), /date: "2025-02-29" is not a valid date/);
    assert.match(await date("not a date"), /is not a valid date/);
    assert.equal(await date("2025-06-15T23:30:00-05:00"), "Sunday, June 15, 2025 11:30 PM", "the clock time as written");
    assert.equal(await date(1_750_000_000), "Sunday, June 15, 2025 3:06 PM", "epoch seconds");
    assert.equal(await date(1_750_000_000_000), "Sunday, June 15, 2025 3:06 PM", "epoch milliseconds");
  });
});
