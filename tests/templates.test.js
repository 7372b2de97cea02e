// create_template and process_template through MCP against the built Worker with real D1 and KV:
// every shipped template in every format, creation checks, bad inputs, caching and metadata.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.js";
import { initialize, rpc } from "./support/mcp.js";
import { tripVars } from "./support/samples.js";

let w;
let session;
before(async () => {
  w = await startWorker();
  ({ session } = await initialize(w.mcpUrl));
});
after(() => w?.stop());

const call = async (name, args) => (await rpc(w.mcpUrl, session, "tools/call", { name, arguments: args })).reply.result;
const textOf = (r) => r.content[0].text;
const process = (template_name, variables, processing_options = {}, extra = {}) =>
  call("process_template", { template_name, variables, processing_options, ...extra });

const welcomeVars = {
  client: { name: "Sarah Johnson", email: "sarah.johnson@email.com", tier: "vip" },
  trip: {
    destination: { city: "Paris", country: "France" }, departure_date: "2025-06-15", return_date: "2025-06-22", duration_days: 7,
    travelers: { adults: 2, children: 0 }, trip_type: "honeymoon", budget: { total: 8500, currency: "USD" },
  },
  pricing: { classic_price: 6375, premium_price: 9350, luxury_price: 14875 },
};
const tier = (price, name) => ({ price, description: `${name} option`, hotels: `${name} hotel`, activities: [`${name} tour`, `${name} dinner`] });
const proposalVars = {
  client_name: "Michael & Jennifer Chen", destination: { city: "Tokyo", country: "Japan" }, travel_dates: "2025-10-15 to 2025-10-25",
  traveler_count: "2 adults", classic: tier(7250, "Classic"), premium: tier(11650, "Premium"), luxury: tier(18750, "Luxury"),
};
const approvalVars = { traveler_name: "Dana Lee", destination: "Berlin", travel_dates: "2025-10-06 to 2025-10-08", total_cost: 2150, business_justification: "Client workshop" };
const summaryVars = { company_name: "Acme", traveler_name: "Dana Lee", compliance_status: "Compliant", vendor_options: "Lufthansa LH 400", approval_required: true };

describe("shipped templates", () => {
  const cases = [
    ["trip-confirmation-comprehensive", tripVars, "Your Paris Adventure is Confirmed!", "$14,750.00"],
    ["client-welcome-email", welcomeVars, "Welcome aboard, Sarah Johnson!", "$14,875.00"],
    ["three-tier-proposal", proposalVars, "Travel proposal for Michael & Jennifer Chen", "$18,750.00"],
    ["corporate-approval-request", approvalVars, "Approval needed: Dana Lee to Berlin", "$2,150.00"],
    ["corporate-booking-summary", summaryVars, "Booking summary: Dana Lee (Acme)", "Pending manager approval"],
  ];
  for (const [name, vars, heading, detail] of cases) {
    test(`${name} renders as text, markdown and html`, async () => {
      const text = await process(name, vars, { output_format: "text" });
      assert.equal(text.isError, undefined, textOf(text));
      assert.ok(textOf(text).includes(heading), textOf(text));
      assert.ok(textOf(text).includes(detail), textOf(text));
      assert.ok(!/\{[a-z_.]+\}/.test(textOf(text)), "no placeholder left");
      const md = await process(name, vars, { output_format: "markdown" });
      assert.ok(textOf(md).length > 50);
      const html = await process(name, vars, { output_format: "html" });
      assert.match(textOf(html), /<(p|h1|ul|table)>/);
    });
  }

  test("html output escapes values exactly once and renders the markdown", async () => {
    const r = await process("corporate-approval-request", { ...approvalVars, traveler_name: "<script>alert(1)</script> & Co" }, { output_format: "html" });
    const html = textOf(r);
    assert.ok(html.includes("&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co"), html);
    assert.ok(!html.includes("<script>"), html);
    assert.ok(html.includes("<strong>Estimated cost:</strong>"), html);
  });
});

describe("process_template inputs", () => {
  test("an unknown template lists the available ones", async () => {
    const r = await process("no-such-template", {});
    assert.equal(r.isError, true);
    assert.match(textOf(r), /Template 'no-such-template' not found\. Available templates: .*trip-confirmation-comprehensive \(client-communication\)/);
  });

  test("variables failing the template schema are each named", async () => {
    const r = await process("corporate-approval-request", { ...approvalVars, total_cost: -5, manager_email: "nope", traveler_name: undefined });
    assert.equal(r.isError, true);
    const t = textOf(r);
    for (const part of ["traveler_name is required", "total_cost must be at least 0", "manager_email must be in email format"]) assert.ok(t.includes(part), t);
  });

  test("validate_variables: false renders anyway; fallback_content replaces a failure", async () => {
    const r = await process("corporate-approval-request", { destination: "Rome" }, { validate_variables: false });
    assert.equal(r.isError, undefined);
    assert.match(textOf(r), /to Rome/);
    const f = await process("corporate-approval-request", {}, { fallback_content: "We will be in touch shortly." });
    assert.equal(f.isError, undefined);
    assert.match(textOf(f), /using fallback content:\n\nWe will be in touch shortly\.\n\n\*\*Error:\*\* Template variable validation failed/);
  });

  test("context data is available as agent and session", async () => {
    const r = await process("corporate-approval-request", approvalVars, {}, { context_data: { agent_info: { name: "Alex Morgan", agency: "Somo Travel" }, session_info: { session_id: "S-9" } } });
    assert.match(textOf(r), /Alex Morgan, Somo Travel/);
  });

  test("include_metadata appends processing details and records the processing in D1", async () => {
    const r = await process("corporate-approval-request", approvalVars, { include_metadata: true }, { context_data: { session_info: { session_id: "S-meta" } } });
    assert.match(textOf(r), /\*\*Processing Metadata:\*\*\n- Template: Corporate Travel Approval Request \(corporate-approval-request\)/);
    const db = await w.mf.getD1Database("DB");
    const row = await db.prepare("SELECT output_format, session_id FROM template_processings WHERE session_id = 'S-meta'").first();
    assert.deepEqual(row, { output_format: "text", session_id: "S-meta" });
  });

  test("compiled templates are reused from the instance's cache unless use_cache is false", async () => {
    const meta = async (opts) => textOf(await process("client-welcome-email", welcomeVars, { include_metadata: true, ...opts })).match(/- Compiled Template: (.*)/)[1];
    await meta({});
    assert.equal(await meta({}), "reused from this instance's cache");
    assert.equal(await meta({ use_cache: false }), "compiled for this call");
  });

  test("results are cached in KV under a digest of the inputs", async () => {
    const kv = await w.mf.getKVNamespace("CACHE");
    const before = (await kv.list({ prefix: "template-result:" })).keys.length;
    await process("corporate-booking-summary", { ...summaryVars, company_name: "Cache Co" });
    const keys = (await kv.list({ prefix: "template-result:" })).keys;
    assert.equal(keys.length, before + 1);
    assert.match(keys.at(-1).name, /^template-result:[0-9a-f]{64}$/);
  });
});

describe("create_template", () => {
  const def = (overrides = {}) => ({
    name: "test-note",
    title: "Test note template",
    content: "Hi {client.name}, your trip to {city} on {date|'MMMM D'} is booked.",
    category: "client-communication",
    variables_schema: { "client.name": { type: "string", required: true }, city: { type: "string", required: true }, date: { type: "string", format: "date-iso" } },
    usage_examples: [{ name: "basic", variables: { client: { name: "Ana" }, city: "Lisbon", date: "2025-05-01" } }],
    ...overrides,
  });

  test("creates, refuses a duplicate, and overwrites with a new revision", async () => {
    const created = await call("create_template", { template_definition: def() });
    assert.equal(created.isError, undefined, textOf(created));
    assert.match(textOf(created), /Template 'test-note' created successfully\.[\s\S]*- Variables: 3[\s\S]*- \{client\.name\} \(string\) - required/);
    const first = await process("test-note", { client: { name: "Ana" }, city: "Lisbon", date: "2025-05-01" });
    assert.equal(textOf(first), "Hi Ana, your trip to Lisbon on May 1 is booked.");
    const dup = await call("create_template", { template_definition: def() });
    assert.equal(dup.isError, true);
    assert.match(textOf(dup), /already exists\. Use creation_options\.overwrite_existing: true/);
    const updated = await call("create_template", { template_definition: def({ content: "Hello again {client.name} in {city}." }), creation_options: { overwrite_existing: true } });
    assert.match(textOf(updated), /Template 'test-note' updated successfully/);
    const r = await process("test-note", { client: { name: "Ana" }, city: "Lisbon" });
    assert.equal(textOf(r), "Hello again Ana in Lisbon.", "the new revision is rendered, not a cached compile");
  });

  test("warns about variables the schema does not declare", async () => {
    const r = await call("create_template", { template_definition: def({ name: "test-undeclared", content: "Hi {client.name}, {hotel.name} awaits in {city}." }) });
    assert.match(textOf(r), /\*\*Warning:\*\* Template contains undefined variables: hotel\.name/);
  });

  test("bad definitions are refused with the reason, and nothing is saved", async () => {
    const cases = [
      [def({ name: "bad-syntax", content: "Hello {client.name + }, welcome." }), /Template syntax validation failed: line 1, column 22: expected a value/],
      [def({ name: "bad-script", content: "Hello {client.name}<script>alert(1)</script>" }), /security validation failed: <script> tags/],
      [def({ name: "bad-handler", content: "<a href=x onclick='go()'>{city}</a> text" }), /event-handler attribute onclick/],
      [def({ name: "bad-url", content: "[Pay now](javascript:pay()) for {city}" }), /javascript: URLs are not allowed/],
      [def({ name: "bad-schema", variables_schema: { city: { type: "text" } } }), /Invalid arguments for tool create_template: .*variables_schema\/city\/type/],
      [def({ name: "bad-pattern", variables_schema: { city: { type: "string", pattern: "(" } } }), /variables_schema\.city\.pattern is not a valid regular expression/],
      [def({ name: "bad-example", content: "Total {1 / zero}!", usage_examples: [{ name: "zero", variables: { zero: 0 } }] }), /compilation test failed with usage example "zero": line 1, column 10: division by zero/],
      [def({ name: "x" }), /\/template_definition\/name/],
      [def({ name: "bad-defaults", default_values: { "not a path": 1 } }), /default_values keys must be dotted paths/],
    ];
    for (const [definition, expected] of cases) {
      const r = await call("create_template", { template_definition: definition });
      assert.equal(r.isError, true, definition.name);
      assert.match(textOf(r), expected, definition.name);
      if (definition.name.length >= 3) {
        const p = await process(definition.name, {});
        assert.match(textOf(p), /not found/, `${definition.name} was not saved`);
      }
    }
  });

  test("set_active: false saves the template without serving it", async () => {
    await call("create_template", { template_definition: def({ name: "test-inactive" }), creation_options: { set_active: false } });
    assert.match(textOf(await process("test-inactive", {})), /not found/);
  });
});
