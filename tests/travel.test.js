// search_flights (Duffel) and list_events (Google Calendar) against local stand-ins that speak
// those APIs' formats: the exact request each tool sends, the normalized answer, and every way
// the call can fail (missing token, the API's 4xx message, 503, a body that is not JSON, bad
// arguments); and who may read which calendar (the calendar-read role, CALENDAR_ALLOWED_IDS, a
// result cache kept per caller).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { generateKeyPairSync, verify } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root, startWorker } from "./support/worker.js";
import { LATEST, post } from "./support/mcp.js";
import { hs256 } from "../scripts/token.js";

const textOf = (r) => r.content.map((c) => c.text).join("\n");
const BYPASS = { "mcp-edge/cache": "bypass" };
const SECRET = "travel-test-secret";
const CALENDAR_READER = { sub: "dana", roles: ["calendar-read"] };

/**
 * An MCP session on `worker`: as `who` ({sub, roles}, signed with SECRET), or anonymous without it.
 * `rpc(method, params)` answers with the parsed JSON-RPC reply.
 */
async function signIn(worker, who) {
  const headers = who ? { authorization: `Bearer ${hs256({ ...who, aud: worker.mcpUrl, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}` } : {};
  const init = await post(worker.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "travel-test", version: "1" } } }, { headers });
  assert.equal(init.status, 200, await init.clone().text());
  const session = init.headers.get("mcp-session-id");
  let n = 1;
  const rpc = async (method, params) => (await post(worker.mcpUrl, { jsonrpc: "2.0", id: n++, method, ...(params ? { params } : {}) }, { session, headers, version: LATEST })).json();
  return { rpc, tools: async () => (await rpc("tools/list")).result.tools };
}

/**
 * A local HTTP API: records each request and answers with `p.reply` ({status, body}), or with
 * `p.reply(request)` when it is a function; a `null` answer leaves the request hanging.
 */
function stubApi() {
  const p = { requests: [], hung: [], reply: { status: 200, body: "{}" } };
  p.server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const url = new URL(req.url, "http://stub");
      p.requests.push({ method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), rawQuery: url.search, headers: req.headers, body });
      const answer = typeof p.reply === "function" ? p.reply(p.requests.at(-1)) : p.reply;
      // null: never answer (a hung upstream); the socket is closed when the server is.
      if (answer === null) return p.hung.push(res);
      const { status, body: out } = answer;
      res.writeHead(status, { "content-type": "application/json" }).end(typeof out === "string" ? out : JSON.stringify(out));
    });
  });
  return new Promise((resolve) => p.server.listen(0, "127.0.0.1", () => {
    p.url = `http://127.0.0.1:${p.server.address().port}`;
    resolve(p);
  }));
}

const segment = (from, to, code, number, departs, arrives) => ({
  origin: { iata_code: from }, destination: { iata_code: to }, departing_at: departs, arriving_at: arrives,
  marketing_carrier: { iata_code: code, name: { AF: "Air France", UA: "United Airlines" }[code] }, marketing_carrier_flight_number: number,
});
const offers = {
  data: {
    id: "orq_1",
    offers: [
      { id: "off_b", total_amount: "1210.40", total_currency: "USD", slices: [
        { duration: "PT13H30M", segments: [segment("SFO", "EWR", "UA", "1234", "2025-05-10T08:00:00", "2025-05-10T16:30:00"), segment("EWR", "CDG", "UA", "57", "2025-05-10T18:00:00", "2025-05-11T07:30:00")] },
        { duration: "PT11H", segments: [segment("CDG", "SFO", "AF", "84", "2025-05-17T13:00:00", "2025-05-17T15:00:00")] },
      ] },
      { id: "off_a", total_amount: "980.00", total_currency: "USD", slices: [
        { duration: "PT10H55M", segments: [segment("SFO", "CDG", "AF", "83", "2025-05-10T15:40:00", "2025-05-11T11:35:00")] },
        { duration: "PT11H", segments: [segment("CDG", "SFO", "AF", "84", "2025-05-17T13:00:00", "2025-05-17T15:00:00")] },
      ] },
    ],
  },
};
const events = {
  kind: "calendar#events",
  items: [
    { id: "ev1", status: "confirmed", summary: "Flight to Paris", location: "SFO", start: { dateTime: "2025-05-10T15:40:00-07:00" }, end: { dateTime: "2025-05-11T11:35:00+02:00" }, attendees: [{ email: "dana@example.com", responseStatus: "accepted" }] },
    { id: "ev2", status: "tentative", start: { date: "2025-05-12" }, end: { date: "2025-05-13" } },
  ],
};

describe("travel tools", () => {
  let duffel, google, w, session, bare, bareSession;
  // Each case must reach the stand-in, so the result cache is bypassed but where a test is about it.
  const call = async (name, args, s = session) => (await s.rpc("tools/call", { name, arguments: args, _meta: BYPASS }));
  before(async () => {
    [duffel, google] = await Promise.all([stubApi(), stubApi()]);
    w = await startWorker({
      DUFFEL_BASE_URL: duffel.url, DUFFEL_API_TOKEN: "duffel_test_token",
      GOOGLE_CALENDAR_BASE_URL: `${google.url}/`, GOOGLE_CALENDAR_ACCESS_TOKEN: "ya29.test",
      CALENDAR_ALLOWED_IDS: "primary, team@group.calendar.google.com", JWT_SECRET: SECRET,
    }, { quiet: true });
    session = await signIn(w, CALENDAR_READER);
    // A deployment with the base URLs but no tokens.
    bare = await startWorker({ DUFFEL_BASE_URL: duffel.url, GOOGLE_CALENDAR_BASE_URL: google.url, JWT_SECRET: SECRET }, { quiet: true });
    bareSession = await signIn(bare, CALENDAR_READER);
  });
  after(async () => {
    await w?.stop();
    await bare?.stop();
    for (const api of [duffel, google]) {
      api?.server.closeAllConnections();
      api?.server.close();
    }
  });

  test("both tools are listed for a calendar reader, with output schemas", async () => {
    const tools = await session.tools();
    for (const name of ["search_flights", "list_events"]) {
      const t = tools.find((x) => x.name === name);
      assert.ok(t, name);
      assert.equal(t.outputSchema.type, "object");
      assert.equal(t.annotations.openWorldHint, true);
    }
  });

  test("list_events needs the calendar-read role: others neither see it nor reach Google", async () => {
    google.requests.length = 0;
    google.reply = { status: 200, body: events };
    for (const who of [null, { sub: "eve", roles: [] }, { sub: "eve", roles: ["hr-read", "executive"] }]) {
      const s = await signIn(w, who);
      const names = (await s.tools()).map((t) => t.name);
      assert.ok(names.includes("search_flights"), "search_flights stays open to everyone");
      assert.ok(!names.includes("list_events"), `${JSON.stringify(who)} sees list_events`);
      for (const meta of [BYPASS, undefined]) {
        const r = await s.rpc("tools/call", { name: "list_events", arguments: { time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" }, ...(meta ? { _meta: meta } : {}) });
        assert.equal(r.error?.code, -32602, JSON.stringify(r));
        assert.match(r.error.message, /unknown tool "list_events"/);
      }
    }
    // The 2026-07-28 lane: the same, for a bearer of other roles and for no token at all.
    for (const who of [null, { sub: "eve", roles: ["executive"] }]) {
      const modern = async (method, params, name) => {
        const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28", "mcp-method": method, ...(name ? { "mcp-name": name } : {}) };
        if (who) headers.authorization = `Bearer ${hs256({ ...who, aud: w.mcpUrl, exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}`;
        const _meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
        return (await fetch(w.mcpUrl, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta } }) })).json();
      };
      const listed = await modern("tools/list", {});
      assert.ok(listed.result.tools.some((t) => t.name === "search_flights"), JSON.stringify(listed).slice(0, 200));
      assert.ok(!listed.result.tools.some((t) => t.name === "list_events"), `2026-07-28 ${JSON.stringify(who)}`);
      const called = await modern("tools/call", { name: "list_events", arguments: { time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" } }, "list_events");
      assert.equal(called.error?.code, -32602, JSON.stringify(called));
      assert.match(called.error.message, /unknown tool "list_events"/);
    }
    assert.equal(google.requests.length, 0);
  });

  test("without the role, neither a chain step nor a FlowMind tool:// context reaches list_events", async () => {
    google.requests.length = 0;
    google.reply = { status: 200, body: events };
    const contexts = async (s) => (await s.rpc("tools/call", { name: "list_available_contexts", arguments: { filter: { type: ["tool"] }, pagination: { limit: 50 } } })).result.structuredContent.result.contexts.map((c) => c.uri);
    assert.ok((await contexts(session)).includes("tool://list_events"), "a reader has the context");
    const eve = await signIn(w, { sub: "eve", roles: [] });
    assert.ok(!(await contexts(eve)).includes("tool://list_events"));
    const chain = {
      name: "calendar-peek", title: "Reads a calendar", category: "custom",
      steps: [{ id: 1, name: "peek", type: "external_api", tool: "list_events", input_template: '{{"time_min": "2025-05-10T00:00:00Z", "time_max": "2025-05-11T00:00:00Z"}}', input_variables: [], output_variables: ["seen"] }],
    };
    // Refused when the chain is saved, or else when its step runs: either way naming the tool.
    const created = (await eve.rpc("tools/call", { name: "create_chain", arguments: { chain_definition: chain } })).result;
    const refusal = created.isError ? created : (await eve.rpc("tools/call", { name: "execute_chain", arguments: { chain_name: "calendar-peek", variables: {} } })).result;
    assert.equal(refusal.isError, true, textOf(refusal));
    assert.match(textOf(refusal), /list_events/);
    assert.equal(google.requests.length, 0);
  });

  test("list_events reads only the calendars CALENDAR_ALLOWED_IDS lists, and says which", async () => {
    google.requests.length = 0;
    google.reply = { status: 200, body: events };
    for (const calendar_id of ["ceo@example.com", "Team@group.calendar.google.com", "primary,ceo@example.com"]) {
      const r = await call("list_events", { calendar_id, time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" });
      assert.equal(r.result.isError, true, JSON.stringify(r));
      assert.equal(textOf(r.result), `calendarId ${JSON.stringify(calendar_id)} is not a calendar this server shares; allowed: primary, team@group.calendar.google.com. Call again with one of them (an operator adds calendars to the CALENDAR_ALLOWED_IDS setting).`);
    }
    assert.equal(google.requests.length, 0, "nothing sent for a calendar the deployment does not share");
  });

  test("list_events without CALENDAR_ALLOWED_IDS reads the primary calendar only", async () => {
    google.requests.length = 0;
    google.reply = { status: 200, body: events };
    const ok = await call("list_events", { time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" }, bareSession);
    assert.match(textOf(ok.result), /GOOGLE_CALENDAR_ACCESS_TOKEN/, "primary passes the check (and then needs a token)");
    const r = await call("list_events", { calendar_id: "team@group.calendar.google.com", time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" }, bareSession);
    assert.equal(r.result.isError, true);
    assert.match(textOf(r.result), /is not a calendar this server shares; allowed: primary\. /);
    assert.equal(google.requests.length, 0);
  });

  test("list_events results are cached per caller: another reader's identical call goes to Google", async () => {
    google.requests.length = 0;
    google.reply = { status: 200, body: events };
    const args = { time_min: "2025-07-01T00:00:00Z", time_max: "2025-07-02T00:00:00Z" };
    const plain = async (s) => (await s.rpc("tools/call", { name: "list_events", arguments: args })).result;
    const other = await signIn(w, { sub: "sam", roles: ["calendar-read"] });
    const sameUserOtherSession = await signIn(w, CALENDAR_READER);
    assert.equal((await plain(session))._meta["mcp-edge/cache"], "miss");
    assert.equal((await plain(sameUserOtherSession))._meta["mcp-edge/cache"], "hit", "the same user and roles share their entry");
    assert.equal((await plain(other))._meta["mcp-edge/cache"], "miss", "another user is not served Dana's result");
    assert.equal((await plain(other))._meta["mcp-edge/cache"], "hit");
    assert.equal(google.requests.length, 2, "one upstream request per caller");
  });

  test("chain steps name both tools by the seed's tool ids (flights-mcp::search-flights, google-calendar-mcp::list-events)", async () => {
    duffel.requests.length = 0;
    duffel.reply = { status: 201, body: offers };
    google.requests.length = 0;
    google.reply = { status: 200, body: events };
    const chain = {
      name: "seed-ids", title: "Flights and the calendar by seed ids", category: "custom",
      steps: [
        { id: 1, name: "fly", type: "external_api", tool: "flights-mcp::search-flights", input_template: '{{"origin": "LIS", "destination": "JFK", "departure_date": "2025-06-01"}}', input_variables: [], output_variables: ["flights"] },
        { id: 2, name: "agenda", type: "external_api", tool: "google-calendar-mcp::list-events", input_template: '{{"timeMin": "2025-06-01T00:00:00Z", "timeMax": "2025-06-02T00:00:00Z"}}', input_variables: [], output_variables: ["agenda"] },
      ],
    };
    const created = (await session.rpc("tools/call", { name: "create_chain", arguments: { chain_definition: chain, creation_options: { overwrite_existing: true } } })).result;
    assert.equal(created.isError, undefined, textOf(created));
    const out = (await session.rpc("tools/call", { name: "execute_chain", arguments: { chain_name: "seed-ids", variables: {} } })).result;
    assert.equal(out.isError, undefined, textOf(out));
    const id = textOf(out).match(/exec-[0-9a-f]{32}/)[0];
    const status = (await session.rpc("tools/call", { name: "get_chain_status", arguments: { execution_id: id } })).result.structuredContent;
    assert.equal(status.status, "completed", JSON.stringify(status).slice(0, 800));
    const [fly, agenda] = status.steps;
    assert.equal(fly.outputs.flights.status, "success", JSON.stringify(fly).slice(0, 400));
    assert.ok(Array.isArray(agenda.outputs.agenda.events), JSON.stringify(agenda).slice(0, 400));
    assert.equal(duffel.requests.length, 1);
    assert.equal(google.requests.length, 1);
    const unknown = (await session.rpc("tools/call", { name: "create_chain", arguments: { chain_definition: { ...chain, name: "seed-ids-bad", steps: [{ ...chain.steps[0], tool: "flights-mcp::book-flights" }] } } })).result;
    assert.equal(unknown.isError, true);
    assert.match(textOf(unknown), /"flights-mcp::book-flights" does not exist on this server; .*flights-mcp::search-flights/);
  });

  test("search_flights sends Duffel's offer request and returns the offers cheapest first", async () => {
    duffel.requests.length = 0;
    duffel.reply = { status: 201, body: offers };
    const r = await call("search_flights", { origin: "SFO", destination: "CDG", departure_date: "2025-05-10", return_date: "2025-05-17", adults: 2, cabin_class: "business" });
    assert.equal(r.result.isError, undefined, JSON.stringify(r));
    assert.equal(duffel.requests.length, 1);
    const req = duffel.requests[0];
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/air/offer_requests");
    assert.deepEqual(req.query, { return_offers: "true" });
    assert.equal(req.headers.authorization, "Bearer duffel_test_token");
    assert.equal(req.headers["duffel-version"], "v2");
    assert.equal(req.headers["content-type"], "application/json");
    assert.equal(req.headers.accept, "application/json");
    assert.deepEqual(JSON.parse(req.body), {
      data: {
        slices: [
          { origin: "SFO", destination: "CDG", departure_date: "2025-05-10" },
          { origin: "CDG", destination: "SFO", departure_date: "2025-05-17" },
        ],
        passengers: [{ type: "adult" }, { type: "adult" }],
        cabin_class: "business",
        max_connections: 2,
      },
    });
    const out = r.result.structuredContent;
    assert.deepEqual(out, {
      flights: [
        { id: "off_a", price: "980.00", currency: "USD", carriers: ["Air France"], duration: "PT21H55M", stops: 0, segments: [
          { from: "SFO", to: "CDG", departs_at: "2025-05-10T15:40:00", arrives_at: "2025-05-11T11:35:00", carrier: "AF", flight_number: "AF83" },
          { from: "CDG", to: "SFO", departs_at: "2025-05-17T13:00:00", arrives_at: "2025-05-17T15:00:00", carrier: "AF", flight_number: "AF84" },
        ] },
        { id: "off_b", price: "1210.40", currency: "USD", carriers: ["United Airlines", "Air France"], duration: "PT24H30M", stops: 1, segments: [
          { from: "SFO", to: "EWR", departs_at: "2025-05-10T08:00:00", arrives_at: "2025-05-10T16:30:00", carrier: "UA", flight_number: "UA1234" },
          { from: "EWR", to: "CDG", departs_at: "2025-05-10T18:00:00", arrives_at: "2025-05-11T07:30:00", carrier: "UA", flight_number: "UA57" },
          { from: "CDG", to: "SFO", departs_at: "2025-05-17T13:00:00", arrives_at: "2025-05-17T15:00:00", carrier: "AF", flight_number: "AF84" },
        ] },
      ],
      count: 2,
      total_offers: 2,
      status: "success",
    });
    assert.match(textOf(r.result), /2 flight offers from SFO to CDG/);
  });

  test("search_flights defaults (seed 003): one way, one adult, economy, at most 2 connections", async () => {
    duffel.requests.length = 0;
    duffel.reply = { status: 201, body: { data: { offers: [] } } };
    const r = await call("search_flights", { origin: "SFO", destination: "CDG", departure_date: "2025-05-10" });
    assert.deepEqual(r.result.structuredContent, { flights: [], count: 0, total_offers: 0, status: "success" });
    assert.deepEqual(JSON.parse(duffel.requests[0].body), {
      data: { slices: [{ origin: "SFO", destination: "CDG", departure_date: "2025-05-10" }], passengers: [{ type: "adult" }], cabin_class: "economy", max_connections: 2 },
    });
    // The seed's own example call, and an explicit max_connections, which is sent as given.
    duffel.requests.length = 0;
    const seed = await call("search_flights", { origin: "SFO", destination: "CDG", departure_date: "2025-05-10", cabin_class: "economy", max_connections: 0 });
    assert.equal(seed.result.isError, undefined, JSON.stringify(seed));
    assert.equal(JSON.parse(duffel.requests[0].body).data.max_connections, 0);
    const listed = (await session.tools()).find((t) => t.name === "search_flights");
    assert.equal(listed.inputSchema.properties.max_connections.default, 2);
  });

  test("search_flights: Duffel's errors become tool errors the model can act on, never retried", async () => {
    const args = { origin: "SFO", destination: "CDG", departure_date: "2025-05-10" };
    const cases = [
      [{ status: 422, body: { errors: [{ title: "Invalid date", message: "The departure_date must be in the future", code: "invalid_date" }] } }, /Duffel rejected the request \(HTTP 422\): The departure_date must be in the future/],
      [{ status: 401, body: { errors: [{ message: "The access token is invalid" }] } }, /HTTP 401\): The access token is invalid.*DUFFEL_API_TOKEN/],
      [{ status: 503, body: "upstream busy" }, /temporarily unavailable \(HTTP 503\).*try again later/],
      [{ status: 429, body: { errors: [{ message: "rate limited" }] } }, /temporarily unavailable \(HTTP 429\)/],
      [{ status: 201, body: "<html>oops" }, /Duffel answered HTTP 201 with a body that is not JSON \(<html>oops\)/],
      [{ status: 201, body: { data: {} } }, /no data\.offers/],
    ];
    for (const [reply, message] of cases) {
      duffel.requests.length = 0;
      duffel.reply = reply;
      const r = await call("search_flights", args);
      assert.equal(r.result.isError, true, JSON.stringify(r));
      assert.match(textOf(r.result), message);
      assert.equal(duffel.requests.length, 1, "sent once, not retried");
    }
  });

  test("search_flights: invalid arguments are refused before anything is sent", async () => {
    duffel.requests.length = 0;
    const cases = [
      [{ origin: "sfo", destination: "CDG", departure_date: "2025-05-10" }, /\/origin/],
      [{ origin: "SFO", destination: "CDGX", departure_date: "2025-05-10" }, /\/destination/],
      [{ origin: "SFO", destination: "CDG", departure_date: "10/05/2025" }, /\/departure_date/],
      [{ origin: "SFO", destination: "CDG", departure_date: "2025-05-10", return_date: "2025-05-09" }, /return_date 2025-05-09 is before departure_date 2025-05-10/],
      [{ origin: "SFO", destination: "SFO", departure_date: "2025-05-10" }, /two different airports/],
      [{ origin: "SFO", destination: "CDG", departure_date: "2025-05-10", adults: 10 }, /\/adults/],
      [{ origin: "SFO", destination: "CDG", departure_date: "2025-05-10", adults: 0 }, /\/adults/],
      [{ origin: "SFO", destination: "CDG", departure_date: "2025-05-10", cabin_class: "coach" }, /\/cabin_class/],
      [{ origin: "SFO", departure_date: "2025-05-10" }, /destination/],
    ];
    for (const [args, message] of cases) {
      const r = await call("search_flights", args);
      assert.equal(r.result?.isError, true, `${JSON.stringify(args)}: ${JSON.stringify(r)}`);
      assert.match(textOf(r.result), message, JSON.stringify(args));
    }
    assert.equal(duffel.requests.length, 0);
  });

  test("list_events takes the seed's parameters: its own example call, sent as Google's events request", async () => {
    google.requests.length = 0;
    google.reply = { status: 200, body: events };
    // seed 003, "Calendar Events", Example Usage (the LLM output).
    const r = await call("list_events", { timeMin: "2025-05-10T00:00:00Z", timeMax: "2025-05-15T23:59:59Z", maxResults: 50 });
    assert.equal(r.result.isError, undefined, JSON.stringify(r));
    assert.equal(google.requests.length, 1);
    const req = google.requests[0];
    assert.equal(req.method, "GET");
    assert.equal(req.path, "/calendar/v3/calendars/primary/events");
    assert.equal(req.rawQuery, "?timeMin=2025-05-10T00%3A00%3A00Z&timeMax=2025-05-15T23%3A59%3A59Z&maxResults=50&singleEvents=false");
    assert.equal(req.headers.authorization, "Bearer ya29.test");
    assert.equal(req.body, "");
    assert.deepEqual(r.result.structuredContent, {
      events: [
        { id: "ev1", summary: "Flight to Paris", start: "2025-05-10T15:40:00-07:00", end: "2025-05-11T11:35:00+02:00", location: "SFO", attendees: ["dana@example.com"], status: "confirmed" },
        { id: "ev2", summary: null, start: "2025-05-12", end: "2025-05-13", location: null, attendees: [], status: "tentative" },
      ],
      count: 2,
      has_more: false,
      status: "success",
    });

    google.requests.length = 0;
    const expanded = await call("list_events", { calendarId: "team@group.calendar.google.com", timeMin: "2025-05-10T00:00:00+02:00", timeMax: "2025-05-15T23:59:59Z", maxResults: 50, singleEvents: true });
    assert.equal(expanded.result.isError, undefined, JSON.stringify(expanded));
    assert.equal(google.requests[0].path, "/calendar/v3/calendars/team%40group.calendar.google.com/events");
    assert.deepEqual(google.requests[0].query, { timeMin: "2025-05-10T00:00:00+02:00", timeMax: "2025-05-15T23:59:59Z", maxResults: "50", singleEvents: "true", orderBy: "startTime" });
  });

  test("list_events still takes the earlier snake_case names, one name per field", async () => {
    google.requests.length = 0;
    google.reply = { status: 200, body: events };
    const r = await call("list_events", { calendar_id: "team@group.calendar.google.com", time_min: "2025-05-10T00:00:00+02:00", time_max: "2025-05-15T23:59:59Z", max_results: 50 });
    assert.equal(r.result.isError, undefined, JSON.stringify(r));
    assert.equal(google.requests[0].rawQuery, "?timeMin=2025-05-10T00%3A00%3A00%2B02%3A00&timeMax=2025-05-15T23%3A59%3A59Z&maxResults=50&singleEvents=false");
    assert.equal(r.result.structuredContent.count, 2);
    const both = await call("list_events", { timeMin: "2025-05-10T00:00:00Z", time_min: "2025-05-09T00:00:00Z", timeMax: "2025-05-11T00:00:00Z" });
    assert.equal(both.result.isError, true);
    assert.match(textOf(both.result), /timeMin and time_min are the same field under two names; give only timeMin/);
    assert.equal(google.requests.length, 1, "nothing sent for the ambiguous call");
  });

  test("list_events defaults (seed 003): the primary calendar, 25 events, recurring events not expanded", async () => {
    google.requests.length = 0;
    google.reply = { status: 200, body: { items: [], nextPageToken: "next" } };
    const r = await call("list_events", { timeMin: "2025-05-10T00:00:00Z", timeMax: "2025-05-11T00:00:00Z" });
    assert.deepEqual(r.result.structuredContent, { events: [], count: 0, has_more: true, status: "success" });
    assert.equal(google.requests[0].path, "/calendar/v3/calendars/primary/events");
    assert.equal(google.requests[0].query.maxResults, "25");
    assert.equal(google.requests[0].query.singleEvents, "false");
    assert.equal(google.requests[0].query.orderBy, undefined, "Google orders by start time only for expanded events");
  });

  test("list_events: Google's errors become tool errors; only temporary ones are retried, three tries in all", async () => {
    const args = { time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" };
    const cases = [
      [{ status: 404, body: { error: { code: 404, message: "Not Found", errors: [{ reason: "notFound" }] } } }, /Google Calendar rejected the request \(HTTP 404\): Not Found/, 1],
      [{ status: 401, body: { error: { code: 401, message: "Request had invalid authentication credentials." } } }, /invalid authentication credentials.*GOOGLE_CALENDAR_ACCESS_TOKEN/, 1],
      [{ status: 503, body: { error: { code: 503, message: "Backend Error" } } }, /temporarily unavailable \(HTTP 503\).*try again later\. \(tried 3 times\)/, 3],
      [{ status: 429, body: { error: { code: 429, message: "Rate Limit Exceeded" } } }, /temporarily unavailable \(HTTP 429\).*\(tried 3 times\)/, 3],
      [{ status: 200, body: "not json" }, /not JSON/, 1],
    ];
    for (const [reply, message, tries] of cases) {
      google.requests.length = 0;
      google.reply = reply;
      const r = await call("list_events", args);
      assert.equal(r.result.isError, true, JSON.stringify(r));
      assert.match(textOf(r.result), message);
      assert.equal(google.requests.length, tries, JSON.stringify(reply));
    }
  });

  test("list_events: a temporary failure, then an answer: the retry's answer is the result", async () => {
    google.requests.length = 0;
    const answers = [{ status: 503, body: { error: { code: 503, message: "Backend Error" } } }, { status: 200, body: events }];
    google.reply = () => answers.shift() ?? { status: 500, body: "called too often" };
    const r = await call("list_events", { time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" });
    assert.equal(r.result.isError, undefined, JSON.stringify(r));
    assert.equal(r.result.structuredContent.count, 2);
    assert.equal(google.requests.length, 2);
    assert.deepEqual(google.requests[1].query, google.requests[0].query, "the same request again");
  });

  test("list_events: an attempt that never answers is abandoned after 6 s and tried again", async () => {
    google.requests.length = 0;
    let first = true;
    google.reply = () => {
      if (first) {
        first = false;
        return null;
      }
      return { status: 200, body: events };
    };
    const r = await call("list_events", { time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" });
    assert.equal(r.result.isError, undefined, JSON.stringify(r));
    assert.equal(google.requests.length, 2);
  });

  test("both tools answer a repeated call from the result cache, without another upstream request", async () => {
    duffel.reply = { status: 201, body: offers };
    google.reply = { status: 200, body: events };
    for (const [api, name, args] of [
      [duffel, "search_flights", { origin: "JFK", destination: "LHR", departure_date: "2025-06-01" }],
      [google, "list_events", { time_min: "2025-06-01T00:00:00Z", time_max: "2025-06-02T00:00:00Z" }],
    ]) {
      api.requests.length = 0;
      const plain = async () => (await session.rpc("tools/call", { name, arguments: args })).result;
      const first = await plain();
      const second = await plain();
      assert.equal(first._meta["mcp-edge/cache"], "miss", name);
      assert.equal(second._meta["mcp-edge/cache"], "hit", name);
      assert.deepEqual(second.structuredContent, first.structuredContent);
      assert.equal(api.requests.length, 1, `${name}: one upstream request`);
    }
  });

  test("list_events: invalid arguments are refused before anything is sent", async () => {
    google.requests.length = 0;
    const cases = [
      [{ time_min: "2025-05-11T00:00:00Z", time_max: "2025-05-10T00:00:00Z" }, /timeMax 2025-05-10T00:00:00Z is not after timeMin/],
      [{ timeMin: "2025-05-10T00:00:00Z", timeMax: "2025-05-10T00:00:00Z" }, /not after timeMin/],
      [{ timeMin: "2025-05-10T00:00:00Z", timeMax: "2025-05-11T00:00:00Z", maxResults: 2501 }, /\/maxResults/],
      [{ timeMin: "2025-05-10T00:00:00Z", timeMax: "2025-05-11T00:00:00Z", singleEvents: "yes" }, /\/singleEvents/],
      [{ timeMin: "2025-05-10T00:00:00Z" }, /timeMax/],
      [{ time_min: "2025-05-10", time_max: "2025-05-11T00:00:00Z" }, /\/time_min/],
      [{ time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z", max_results: 2501 }, /\/max_results/],
      [{ time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z", max_results: 0 }, /\/max_results/],
      [{ time_max: "2025-05-11T00:00:00Z" }, /time_min/],
    ];
    for (const [args, message] of cases) {
      const r = await call("list_events", args);
      assert.equal(r.result?.isError, true, `${JSON.stringify(args)}: ${JSON.stringify(r)}`);
      assert.match(textOf(r.result), message, JSON.stringify(args));
    }
    assert.equal(google.requests.length, 0);
  });

  test("without tokens, both tools name the secret to set and send nothing", async () => {
    duffel.requests.length = 0;
    google.requests.length = 0;
    const f = await call("search_flights", { origin: "SFO", destination: "CDG", departure_date: "2025-05-10" }, bareSession);
    assert.equal(f.result.isError, true);
    assert.match(textOf(f.result), /Duffel is not configured.*set the secret DUFFEL_API_TOKEN/);
    const e = await call("list_events", { time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" }, bareSession);
    assert.equal(e.result.isError, true);
    assert.match(textOf(e.result), /set the secret GOOGLE_CALENDAR_ACCESS_TOKEN .* or GOOGLE_SERVICE_ACCOUNT_KEY/);
    assert.equal(duffel.requests.length + google.requests.length, 0);
  });
});

describe("a chain step calling list_events against a Google that never answers (security case 22)", () => {
  let api, w, session;
  before(async () => {
    api = await stubApi();
    api.reply = () => null;
    w = await startWorker({ GOOGLE_CALENDAR_BASE_URL: api.url, GOOGLE_CALENDAR_ACCESS_TOKEN: "ya29.test", JWT_SECRET: SECRET }, { quiet: true });
    session = await signIn(w, CALENDAR_READER);
  });
  after(async () => {
    await w?.stop();
    api?.server.closeAllConnections();
    api?.server.close();
  });
  const call = async (name, args) => (await session.rpc("tools/call", { name, arguments: args })).result;
  /** A chain that writes a record, then reads the calendar with `peek` (step settings). */
  const chain = (name, peek) => ({
    name, title: "Notes, then reads the calendar", category: "custom",
    steps: [
      { id: 1, name: "note", type: "database_operation", operation: { collection: "peeks", action: "create" }, input_template: `{{"id": "${name}"}}`, input_variables: [], output_variables: ["noted"] },
      { id: 2, name: "peek", type: "external_api", tool: "list_events", input_template: '{{"time_min": "2025-05-10T00:00:00Z", "time_max": "2025-05-11T00:00:00Z"}}', input_variables: [], output_variables: ["seen"], depends_on: [1], ...peek },
    ],
  });
  const record = async (id) => (await w.mf.getD1Database("DB")).prepare("SELECT data FROM collection_records WHERE collection = 'peeks' AND id = ?1").bind(id).first();
  const run = async (name, peek, options = {}) => {
    const created = await call("create_chain", { chain_definition: chain(name, peek) });
    assert.notEqual(created.isError, true, textOf(created));
    api.requests.length = 0;
    const out = await call("execute_chain", { chain_name: name, variables: {}, execution_options: options });
    const id = textOf(out).match(/exec-[0-9a-f]{32}/)?.[0];
    assert.ok(id, textOf(out));
    return { out, status: (await call("get_chain_status", { execution_id: id })).structuredContent };
  };

  test("an attempt that times out is abandoned and retried; the last failure rolls back the earlier step", async () => {
    const { out, status } = await run("peek-retry", { timeout_ms: 1000, retry_config: { max_retries: 1, backoff_ms: 100 } });
    assert.equal(out.isError, true, textOf(out));
    assert.equal(status.status, "failed", JSON.stringify(status).slice(0, 400));
    const peek = status.steps.find((s) => s.name === "peek");
    assert.equal(peek.attempts, 2, JSON.stringify(peek));
    assert.equal(api.requests.length, 2, "one upstream request per attempt");
    assert.match(textOf(out), /rolled_back/);
    assert.equal(await record("peek-retry"), null, "the note was rolled back");
  });

  // Security case 22: a step's retries stop at the run's deadline (before the fix all 6 attempts
  // ran, about 12 s against a 5 s deadline, and the run ended `failed`).
  test("past the run's deadline no further attempt starts: the run ends timed_out and rolls back", async () => {
    const { out, status } = await run("peek-deadline", { timeout_ms: 2000, retry_config: { max_retries: 5, backoff_ms: 100 } }, { timeout_ms: 5000 });
    assert.equal(out.isError, true, textOf(out));
    assert.ok(api.requests.length < 6, `${api.requests.length} attempts of 6 started`);
    assert.equal(status.status, "timed_out", JSON.stringify(status.steps).slice(0, 1500));
    assert.equal(await record("peek-deadline"), null, "the note was rolled back");
  });
});

describe("list_events after a deployment stops sharing a calendar", () => {
  let api, dir;
  before(async () => {
    api = await stubApi();
    api.reply = { status: 200, body: events };
    dir = mkdtempSync(join(tmpdir(), "mcp-edge-calendar-"));
  });
  after(() => {
    api?.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a result cached while the calendar was allowed is not served once it is not", async () => {
    const args = { calendar_id: "team@group.calendar.google.com", time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" };
    const run = async (allowed) => {
      const w = await startWorker({ GOOGLE_CALENDAR_BASE_URL: api.url, GOOGLE_CALENDAR_ACCESS_TOKEN: "ya29.test", JWT_SECRET: SECRET, CALENDAR_ALLOWED_IDS: allowed }, { quiet: true, persist: dir });
      try {
        return (await (await signIn(w, CALENDAR_READER)).rpc("tools/call", { name: "list_events", arguments: args })).result;
      } finally {
        await w.stop();
      }
    };
    assert.equal((await run("primary,team@group.calendar.google.com"))._meta["mcp-edge/cache"], "miss");
    assert.equal((await run("primary,team@group.calendar.google.com"))._meta["mcp-edge/cache"], "hit", "the cache outlives a restart");
    const refused = await run("primary");
    assert.equal(refused.isError, true, JSON.stringify(refused));
    assert.match(textOf(refused), /not a calendar this server shares; allowed: primary\./);
    assert.equal(api.requests.length, 1);
  });
});

describe("list_events with a service account key", () => {
  // The server signs its own RS256 assertion with the key and trades it at the key's token_uri;
  // the stand-in token endpoint checks the signature with the public half, as Google does.
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  const args = { time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" };
  const b64url = (part) => JSON.parse(Buffer.from(part, "base64url").toString());
  let api, w, session, broken, brokenSession, minted = 0;
  const keyFile = (over = {}) => JSON.stringify({
    type: "service_account", project_id: "p", private_key_id: "k1", client_email: "reader@p.iam.gserviceaccount.com",
    private_key: privateKey, token_uri: `${api.url}/token`, ...over,
  });
  const call = async (s) => s.rpc("tools/call", { name: "list_events", arguments: args, _meta: BYPASS });
  before(async () => {
    api = await stubApi();
    api.tokenReply = null;
    api.reply = (req) => {
      if (req.path !== "/token") return { status: 200, body: { items: [] } };
      if (api.tokenReply) return api.tokenReply;
      minted += 1;
      return { status: 200, body: { access_token: `ya29.minted-${minted}`, expires_in: 3599, token_type: "Bearer" } };
    };
    w = await startWorker({ GOOGLE_CALENDAR_BASE_URL: api.url, GOOGLE_SERVICE_ACCOUNT_KEY: keyFile(), GOOGLE_CALENDAR_SUBJECT: "dana@example.com", JWT_SECRET: SECRET }, { quiet: true });
    session = await signIn(w, CALENDAR_READER);
    // Valid PEM and base64, but not a key WebCrypto can import.
    broken = await startWorker({ GOOGLE_CALENDAR_BASE_URL: api.url, GOOGLE_SERVICE_ACCOUNT_KEY: keyFile({ private_key: "-----BEGIN PRIVATE KEY-----\nAAECAwQ=\n-----END PRIVATE KEY-----\n" }), JWT_SECRET: SECRET }, { quiet: true });
    brokenSession = await signIn(broken, CALENDAR_READER);
  });
  after(async () => {
    await w?.stop();
    await broken?.stop();
    api?.server.close();
  });

  test("a token endpoint refusal is a tool error that points at the key, not at the arguments", async () => {
    api.requests.length = 0;
    api.tokenReply = { status: 400, body: { error: "invalid_grant", error_description: "Invalid JWT Signature." } };
    const r = await call(session);
    assert.equal(r.result.isError, true, JSON.stringify(r));
    assert.match(textOf(r.result), /Google's token endpoint rejected the request \(HTTP 400\): Invalid JWT Signature\. Check the secret GOOGLE_SERVICE_ACCOUNT_KEY/);
    assert.deepEqual(api.requests.map((q) => q.path), ["/token"], "no calendar request without a token");
    api.tokenReply = null;
  });

  test("the server mints a token with a signed RS256 assertion and reuses it until it expires", async () => {
    api.requests.length = 0;
    api.tokenReply = null;
    for (let i = 0; i < 2; i++) {
      const r = await call(session);
      assert.equal(r.result.isError, undefined, JSON.stringify(r));
    }
    assert.deepEqual(api.requests.map((q) => q.path), ["/token", "/calendar/v3/calendars/primary/events", "/calendar/v3/calendars/primary/events"]);
    const grant = api.requests[0];
    assert.equal(grant.method, "POST");
    assert.equal(grant.headers["content-type"], "application/x-www-form-urlencoded");
    const form = new URLSearchParams(grant.body);
    assert.equal(form.get("grant_type"), "urn:ietf:params:oauth:grant-type:jwt-bearer");
    const [header, claims, signature] = form.get("assertion").split(".");
    assert.deepEqual(b64url(header), { alg: "RS256", typ: "JWT" });
    const c = b64url(claims);
    assert.equal(c.iss, "reader@p.iam.gserviceaccount.com");
    assert.equal(c.scope, "https://www.googleapis.com/auth/calendar.readonly");
    assert.equal(c.aud, `${api.url}/token`);
    assert.equal(c.sub, "dana@example.com");
    assert.equal(c.exp - c.iat, 3600);
    assert.ok(Math.abs(c.iat - Date.now() / 1000) < 120, "issued now");
    assert.ok(verify("RSA-SHA256", Buffer.from(`${header}.${claims}`), publicKey, Buffer.from(signature, "base64url")), "signature verifies with the public key");
    for (const q of api.requests.slice(1)) assert.equal(q.headers.authorization, "Bearer ya29.minted-1");
  });

  test("a key WebCrypto cannot use names the secret and sends nothing", async () => {
    api.requests.length = 0;
    const r = await call(brokenSession);
    assert.equal(r.result.isError, true, JSON.stringify(r));
    assert.match(textOf(r.result), /The secret GOOGLE_SERVICE_ACCOUNT_KEY is not a usable service account key: .*RSA private key could not be used/);
    assert.equal(api.requests.length, 0);
  });
});

describe("TOOL_TIMEOUTS", () => {
  let api, w, session;
  before(async () => {
    api = await stubApi();
    api.reply = () => null;
    w = await startWorker({ GOOGLE_CALENDAR_BASE_URL: api.url, GOOGLE_CALENDAR_ACCESS_TOKEN: "ya29.test", TOOL_TIMEOUTS: "list_events=1s", JWT_SECRET: SECRET }, { quiet: true });
    session = await signIn(w, CALENDAR_READER);
  });
  after(async () => {
    await w?.stop();
    api?.server.closeAllConnections();
    api?.server.close();
  });

  test("a deployment's timeout replaces the one the tool declares (20 s for list_events)", async () => {
    const r = await session.rpc("tools/call", { name: "list_events", arguments: { time_min: "2025-05-10T00:00:00Z", time_max: "2025-05-11T00:00:00Z" } });
    assert.equal(r.result.isError, true, JSON.stringify(r));
    assert.match(textOf(r.result), /tool list_events did not finish within 1000 ms and was stopped/);
    assert.equal(api.requests.length, 1, "the first try was still waiting");
  });

  test("a TOOL_TIMEOUTS entry naming no tool stops the server with the setting's name", async () => {
    const bad = await startWorker({ TOOL_TIMEOUTS: "list_event=5s" }, { quiet: true });
    try {
      const res = await fetch(bad.mcpUrl, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }) });
      assert.equal(res.status, 500);
      assert.match(JSON.stringify(await res.json()), /TOOL_TIMEOUTS names tools this deployment does not have: list_event/);
    } finally {
      await bad.stop();
    }
  });
});

describe("the shipped wrangler.toml limits the paid flight search", () => {
  let duffel, w, session;
  const shipped = readFileSync(join(root, "wrangler.toml"), "utf8").match(/^RATE_LIMITS = "(.*)"$/m)[1];
  before(async () => {
    duffel = await stubApi();
    duffel.reply = { status: 201, body: { data: { offers: [] } } };
    w = await startWorker({ DUFFEL_BASE_URL: duffel.url, DUFFEL_API_TOKEN: "duffel_test_token", RATE_LIMITS: shipped, JWT_SECRET: SECRET }, { quiet: true });
    session = await signIn(w, { sub: "pat", roles: [] });
  });
  after(async () => {
    await w?.stop();
    duffel?.server.closeAllConnections();
    duffel?.server.close();
  });

  test("search_flights: 10 calls a minute per caller; the 11th is refused and reaches no Duffel", async () => {
    assert.equal(shipped, "search_flights=10/1m");
    const search = (day) => session.rpc("tools/call", { name: "search_flights", arguments: { origin: "SFO", destination: "CDG", departure_date: `2025-05-${String(day).padStart(2, "0")}` } });
    for (let day = 1; day <= 10; day++) {
      const r = await search(day);
      assert.equal(r.result.isError, undefined, JSON.stringify(r));
    }
    const refused = await search(11);
    assert.equal(refused.result.isError, true, JSON.stringify(refused));
    assert.match(textOf(refused.result), /rate limit/i);
    assert.equal(duffel.requests.length, 10);
    const other = await session.rpc("tools/call", { name: "get_mode_indicator", arguments: {} });
    assert.equal(other.result.isError, undefined, "other tools keep the default limit");
  });
});
