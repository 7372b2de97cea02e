// Seed 000's own templates look as the seed shows them (issue 21, items 1-3), through the official MCP
// SDK client against the built Worker with real D1 and KV: the trip confirmation and the three-tier
// proposal rendered as markdown and html with the seed's example data, compared with expected files
// (tests/data/templates/); the expression habits of a JavaScript-minded author; the template's own
// agent defaults, strict mode and warnings in every answer.
//
// To rewrite the expected files after an intended change: UPDATE_EXPECTED=1 node --test <this file>,
// then read the diff.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { root, startWorker } from "./support/worker.js";

let w;
let client;
before(async () => {
  w = await startWorker({ RATE_LIMITS: "*=off" });
  client = new Client({ name: "templates-seed-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(w.mcpUrl)));
  // The SDK checks each structuredContent against the tool's outputSchema once it has the list.
  await client.listTools();
});
after(async () => {
  await client?.close();
  await w?.stop();
});

const call = (name, args) => client.callTool({ name, arguments: args });
const textOf = (r) => r.content[0].text;
const process = (template_name, variables, processing_options = {}, extra = {}) =>
  call("process_template", { template_name, variables, processing_options: { use_cache: false, ...processing_options }, ...extra });

/** Compares `actual` with tests/data/templates/`file` (or rewrites it with UPDATE_EXPECTED=1). */
function matchesFile(actual, file) {
  const path = join(root, "tests", "data", "templates", file);
  if (process_env_update()) writeFileSync(path, actual);
  assert.equal(actual, readFileSync(path, "utf8"), `differs from tests/data/templates/${file}`);
}
const process_env_update = () => globalThis.process.env.UPDATE_EXPECTED === "1";

/** The seed's "Luxury Paris Honeymoon" example, with what the template's schema requires besides
 * (flights, hotel, activities, the agent's phone and email), a special requirement and packing
 * items, and markup-looking text in values that must stay text. */
const tripVars = {
  client: { name: "Michael & Sarah Johnson", tier: "vip" },
  trip: {
    destination: { city: "Paris", country: "France", visa_required: false, special_items: ["Plug adapter (type E)", "Evening wear for *gala* <b>dinner</b>"] },
    trip_type: "honeymoon", departure_date: "2025-09-15", return_date: "2025-09-22", duration_days: 7,
    travelers: { adults: 2, children: 0 },
    special_requirements: "Wheelchair access <script>alert(1)</script>",
    special_occasions: ["honeymoon"],
  },
  booking: { package_tier: "Luxury", reference_number: "BK-20250608-PAR-001" },
  pricing: { final_total: 14750, package_price: 12500, extras: 1500, taxes: 750, total_paid: 10000, remaining_balance: 4750, final_payment_date: "August 15, 2025" },
  flight: {
    departure_time: "9:30 AM", return_time: "17:45",
    outbound: { airline: "Air France", flight_number: "AF 11", departure_time: "9:30 AM", departure_airport: "JFK", arrival_time: "10:45 PM", arrival_airport: "CDG" },
    return: { airline: "Air France", flight_number: "AF 12", departure_time: "5:45 PM", departure_airport: "CDG", arrival_time: "8:10 PM", arrival_airport: "JFK" },
  },
  hotel: { name: "Le Meurice", rating: 5, address: "228 Rue de Rivoli, 75001 Paris", room_type: "Deluxe Suite", amenities: ["Spa", "Butler service"] },
  activities: [
    { name: "Seine dinner cruise", description: "Sunset cruise with a *five-course* dinner", date: "September 16" },
    { name: "Louvre after hours", description: "Private guided tour", date: "September 17" },
  ],
  agent: { phone: "(555) 123-4567", email: "kim@somotravel.com", contact_signature: "kim@somotravel.com | (555) 123-4567" },
  support: { vip_phone: "+1 555 0100" },
  current_date: "2025-06-08",
};
const tripContext = { session_info: { session_id: "Session-20250608-Johnson-Paris" } };

/** The seed's three-tier proposal example, as written there. */
const proposalVars = {
  client_name: "Michael & Jennifer Chen",
  destination: { city: "Tokyo", country: "Japan" },
  travel_dates: "2025-10-15 to 2025-10-25",
  traveler_count: "2 adults",
  classic: {
    price: 7250, description: "Essential Tokyo experience with modern comfort", hotels: "Shibuya Tobu Hotel (4-star) in central Tokyo",
    activities: ["Tokyo City Tour with English guide", "Senso-ji Temple and Asakusa district visit", "Tokyo Skytree observation deck", "Traditional sushi making class"],
  },
  premium: {
    price: 11650, description: "Enhanced Tokyo journey with cultural immersion", hotels: "Hotel New Otani Tokyo (5-star) with garden views",
    activities: ["Private Tokyo highlights tour", "Mount Fuji day trip with professional guide", "Kaiseki dinner at Michelin-starred restaurant", "Traditional tea ceremony experience", "Sumo wrestling tournament (if in season)"],
  },
  luxury: {
    price: 18750, description: "Ultimate Tokyo luxury with exclusive access", hotels: "The Ritz-Carlton Tokyo (5-star luxury) with club access",
    activities: ["Private helicopter tour of Tokyo and Mount Fuji", "Exclusive sake tasting at premium brewery", "Private geisha performance and dinner", "Luxury ryokan stay in Hakone with onsen", "Personal shopper for Tokyo fashion districts"],
  },
  current_date: "2025-06-08",
};

describe("the seed's templates look as the seed shows them", () => {
  for (const format of ["markdown", "html"]) {
    test(`trip confirmation as ${format}`, async () => {
      const r = await process("trip-confirmation-comprehensive", tripVars, { output_format: format }, { context_data: tripContext });
      assert.equal(r.isError, undefined, textOf(r));
      matchesFile(textOf(r), `trip-confirmation.${format === "html" ? "html" : "md"}`);
    });
    test(`three-tier proposal as ${format}`, async () => {
      const r = await process("three-tier-proposal", proposalVars, { output_format: format });
      assert.equal(r.isError, undefined, textOf(r));
      matchesFile(textOf(r), `three-tier-proposal.${format === "html" ? "html" : "md"}`);
    });
  }

  test("bold is bold, lists are lists, and a <script> in a variable is text", async () => {
    const md = textOf(await process("trip-confirmation-comprehensive", tripVars, { output_format: "markdown" }, { context_data: tripContext }));
    assert.ok(md.includes("**VIP Concierge:** Available 24/7 at +1 555 0100\n"), md);
    assert.ok(md.includes("**Special Requirements:** Wheelchair access \\<script\\>alert(1)\\</script\\>\n"), md);
    assert.ok(md.includes("• **Seine dinner cruise** - Sunset cruise with a \\*five-course\\* dinner (September 16)\n• **Louvre after hours**"), md);
    assert.ok(!md.includes("\\*\\*"), "no literal \\*\\* left");
    const html = textOf(await process("trip-confirmation-comprehensive", tripVars, { output_format: "html" }, { context_data: tripContext }));
    assert.ok(html.includes("<strong>VIP Concierge:</strong> Available 24/7 at +1 555 0100"), html);
    assert.ok(html.includes("<strong>Special Requirements:</strong> Wheelchair access &lt;script&gt;alert(1)&lt;/script&gt;"), html);
    assert.ok(html.includes("• <strong>Seine dinner cruise</strong> - Sunset cruise with a *five-course* dinner (September 16)"), html);
    assert.ok(html.includes("<li>Plug adapter (type E)</li>\n<li>Evening wear for *gala* &lt;b&gt;dinner&lt;/b&gt;</li>"), html);
    assert.ok(!html.includes("<script>") && !html.includes("<b>"), html);
    const proposal = textOf(await process("three-tier-proposal", proposalVars, { output_format: "html" }));
    assert.equal((proposal.match(/<ul>/g) ?? []).length, 3, proposal);
    assert.ok(proposal.includes("<li>Mount Fuji day trip with professional guide</li>"), proposal);
  });

  test("the confirmation signs as the template declares, unless agent_info says otherwise", async () => {
    const r = textOf(await process("trip-confirmation-comprehensive", tripVars, {}, { context_data: tripContext }));
    assert.ok(r.includes("Warm regards,\n\nKim Henderson\nSenior Travel Consultant\nSomo Travel\n"), r);
    assert.ok(r.includes("**Departure:** September 15, 2025 at 9:30 AM"), "a 12-hour time goes through 'h:mm A'");
    const other = textOf(await process("trip-confirmation-comprehensive", tripVars, {}, { context_data: { agent_info: { name: "Alex Morgan", title: "Director" } } }));
    assert.ok(other.includes("Alex Morgan\nDirector\nSomo Travel\n"), other);
  });
});

describe("missing values: warnings in every answer, strict mode on request", () => {
  const { contact_signature, ...agent } = tripVars.agent;
  const vars = { ...tripVars, agent };

  test("a lenient render lists each missing value in the answer", async () => {
    const r = await process("trip-confirmation-comprehensive", vars);
    assert.equal(r.isError, undefined, textOf(r));
    assert.deepEqual(r.structuredContent.missing_variables, ["agent.contact_signature", "session.id"]);
    assert.match(r.structuredContent.warnings[0], /^missing value for agent\.contact_signature: rendered empty\. Provide it in variables, or set processing_options\.strict: true/);
    assert.equal(r.structuredContent.fallback_used, false);
    assert.equal(r.structuredContent.text, textOf(r));
    assert.ok(r.content[1].text.includes("missing value for agent.contact_signature"), "the JSON text block carries the warnings too");
  });

  test("strict: true makes a missing value an error that names it", async () => {
    const r = await process("trip-confirmation-comprehensive", vars, { strict: true }, { context_data: tripContext });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /Template processing failed: line \d+, column \d+: missing value for agent\.contact_signature: provide it, or render without strict mode/);
    const ok = await process("trip-confirmation-comprehensive", tripVars, { strict: true }, { context_data: tripContext });
    assert.equal(ok.isError, undefined, textOf(ok));
    assert.deepEqual(ok.structuredContent.warnings, []);
  });
});

describe("what a JavaScript-minded author writes", () => {
  test("lambdas with parentheses and an index, filters inside them, dotted indexes, ?? and currency(missing)", async () => {
    const content = [
      "{activities.map((a, i) => '#' + (i + 1) + ' **' + a.name + '** ' + (a.price|currency)).join('\\n')}",
      "{activities.map((a) => a.name|upper).join(', ')} {activities.map(a => a.price|currency).join(' + ')}",
      "First: {activities.0.name}; {vip ? client.name|upper : client.name}",
      "Deposit: {currency(deposit)}{nickname ?? ''}",
      "Pick-up: {pickup|'h:mm A'}",
    ].join("\n\n");
    const created = await call("create_template", {
      template_definition: { name: "js-habits", title: "JavaScript habits", content, category: "custom", variables_schema: {} },
    });
    assert.equal(created.isError, undefined, textOf(created));
    const vars = { activities: [{ name: "Louvre", price: 120 }, { name: "Seine <cruise>", price: 89.5 }], vip: true, client: { name: "Ana" }, pickup: "9:30 AM" };
    const r = await process("js-habits", vars, { output_format: "html" });
    assert.equal(r.isError, undefined, textOf(r));
    assert.equal(
      textOf(r),
      "<p>#1 <strong>Louvre</strong> $120.00\n#2 <strong>Seine &lt;cruise&gt;</strong> $89.50</p>\n<p>LOUVRE, SEINE &lt;CRUISE&gt; $120.00 + $89.50</p>\n<p>First: Louvre; ANA</p>\n<p>Deposit:</p>\n<p>Pick-up: 9:30 AM</p>\n",
    );
    assert.deepEqual(r.structuredContent.missing_variables, ["deposit"], "currency(missing) renders empty with a warning instead of failing");
  });

  test("what stays unsupported is refused at creation with the fix", async () => {
    const cases = [
      ["`Dear ${client.name}`", /template strings \(`…\$\{x\}…`\) are not supported: join text with \+/],
      ["{items.map(i => { return i.name })}", /a function body in braces is not supported: write the value itself/],
      ["{formatDate(when)}", /unknown function formatDate\(\); the functions are the filters/],
      ["{status = 'ok'}", /a single '=' assigns, which expressions cannot do: compare with ==/],
    ];
    for (const [body, expected] of cases) {
      const content = body.startsWith("{") ? `Note: ${body}` : `Note: {${body}}`;
      const r = await call("create_template", {
        template_definition: { name: "js-unsupported", title: "Unsupported habit", content, category: "custom", variables_schema: {} },
      });
      assert.equal(r.isError, true, body);
      assert.match(textOf(r), expected, body);
    }
    // Methods are looked up when the template runs: an unknown one fails the render with the fix.
    const created = await call("create_template", {
      template_definition: { name: "js-method", title: "Unsupported method", content: "Total: {total.toFixed(2)}", category: "custom", variables_schema: {} },
    });
    assert.equal(created.isError, undefined, textOf(created));
    const r = await process("js-method", { total: 12.5 });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /unknown method \.toFixed\(\) \(for decimals write x\|number\(2\)\)/);
  });
});
