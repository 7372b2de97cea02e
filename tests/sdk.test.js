// The official MCP TypeScript SDK client (Streamable HTTP transport) against the built Worker:
// initialize → tools/list (all pages) → tools/call → progress → disconnect and resume → DELETE.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { startWorker } from "./support/worker.js";

let w;
before(async () => {
  w = await startWorker({ MCP_CATALOG: "conformance", TOOLS_PAGE_SIZE: "4" });
});
after(() => w?.stop());

async function connect(sessionId) {
  const client = new Client({ name: "mcp-edge-sdk-test", version: "1.0.0" }, { capabilities: { sampling: {}, elicitation: {} } });
  const transport = new StreamableHTTPClientTransport(new URL(w.mcpUrl), sessionId ? { sessionId } : {});
  await client.connect(transport);
  return { client, transport };
}

test("the SDK client runs a whole session", async () => {
  const { client, transport } = await connect();
  assert.match(transport.sessionId, /^[0-9a-f]{64}$/);
  assert.equal(client.getServerVersion().name, "mcp-edge");
  assert.ok(client.getServerCapabilities().tools);

  // tools/list, every page.
  const names = [];
  let cursor;
  let pages = 0;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
    pages++;
  } while (cursor);
  assert.ok(pages > 3, `paginated into ${pages} pages`);
  assert.equal(new Set(names).size, names.length);
  for (const n of ["switch_mode", "get_instruction_set", "test_tool_with_progress"]) assert.ok(names.includes(n), n);

  // tools/call with structured output (validated by the SDK against the listed outputSchema).
  const mode = await client.callTool({ name: "switch_mode", arguments: { mode: "mobile-mode" } });
  assert.equal(mode.structuredContent.mode, "mobile-mode");
  const invalid = await client.callTool({ name: "switch_mode", arguments: { mode: "nope" } });
  assert.equal(invalid.isError, true);

  // Progress notifications reach the caller before the result.
  const progress = [];
  const done = await client.callTool({ name: "test_tool_with_progress", arguments: {} }, CallToolResultSchema, {
    onprogress: (p) => progress.push(p.progress),
  });
  assert.deepEqual(progress, [0, 50, 100]);
  assert.equal(done.content[0].type, "text");

  // The server ends the connection after priming; the SDK resumes with GET + Last-Event-ID.
  const resumed = await client.callTool({ name: "test_reconnection", arguments: {} });
  assert.match(resumed.content[0].text, /Reconnection test completed/);

  // The client disconnects mid-call; a new connection resumes the stream from its last event id.
  let token;
  const firstProgress = new Promise((resolve) => {
    client
      .callTool({ name: "test_tool_with_progress", arguments: {} }, CallToolResultSchema, {
        onprogress: resolve,
        onresumptiontoken: (t) => (token = t),
      })
      .catch(() => {});
  });
  await firstProgress;
  const seen = token;
  await transport.close();
  await new Promise((r) => setTimeout(r, 300));
  // A transport that joins the existing session (no second initialize) and asks for the rest of the stream.
  const t2 = new StreamableHTTPClientTransport(new URL(w.mcpUrl), { sessionId: transport.sessionId });
  await t2.start();
  const replayed = [];
  const result = await new Promise((resolve, reject) => {
    t2.onmessage = (m) => {
      replayed.push(m);
      if (m.id === "resume-1") resolve(m.result);
    };
    t2.onerror = reject;
    t2.send({ jsonrpc: "2.0", id: "resume-1", method: "tools/call", params: { name: "test_tool_with_progress" } }, { resumptionToken: seen });
  });
  assert.match(seen, /^r\d+-\d+$/);
  assert.deepEqual(replayed.filter((m) => m.method === "notifications/progress").map((m) => m.params.progress), [50, 100], "exactly the missed events");
  assert.equal(result.content[0].type, "text");

  // DELETE ends the session.
  await t2.terminateSession();
  const after = await fetch(w.mcpUrl, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": transport.sessionId },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  assert.equal(after.status, 404);
  await t2.close();
});

test("the SDK client answers elicitation on the call's stream", async () => {
  const { client, transport } = await connect();
  const { ElicitRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    assert.equal(req.params.message, "Your details?");
    return { action: "accept", content: { username: "kim", email: "kim@example.com" } };
  });
  const r = await client.callTool({ name: "test_elicitation", arguments: { message: "Your details?" } });
  assert.match(r.content[0].text, /action=accept/);
  assert.match(r.content[0].text, /kim@example.com/);
  await transport.terminateSession();
  await client.close();
});

test("the seed's corporate chain runs end to end, its instruction steps answered by the client's model", async () => {
  const { client, transport } = await connect();
  const { CreateMessageRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
  const prompts = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    prompts.push(req.params.messages[0].content.text);
    const keys = req.params.systemPrompt.match(/Its keys: (.*)\.$/)[1].split(", ");
    const answer = Object.fromEntries(keys.map((k) => [k, k === "validation_status" ? "approved" : k === "approval_required" ? false : `${k} value`]));
    return { role: "assistant", model: "test-model", content: { type: "text", text: JSON.stringify(answer) } };
  });
  const result = await client.callTool({
    name: "execute_chain",
    arguments: {
      chain_name: "corporate-booking-workflow",
      variables: { company_name: "Acme", traveler_name: "Dana Lee", cost_center: "CC-7", trip_requirements: { city: "Berlin" }, budget_approval: 3000 },
    },
  });
  const text = result.content[0].text;
  assert.equal(result.isError, undefined, text);
  assert.match(text, /Chain execution completed successfully\.[\s\S]*- Steps Completed: 5\/5/);
  assert.match(text, /generate_approval_request \(skipped\): condition false/);
  assert.match(text, /- booking_summary: # Booking summary: Dana Lee \(Acme\)/);
  assert.equal(prompts.length, 3, "three instruction_set steps asked the model");
  assert.match(prompts[0], /Company: Acme\nTraveler: Dana Lee\nCost Center: CC-7/);
  await transport.terminateSession();
  await client.close();
});

test("the seed's lead and follow-up chains run end to end with the seed's example inputs", async () => {
  const { client, transport } = await connect();
  const { CreateMessageRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
  let asked = 0;
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    asked++;
    const keys = req.params.systemPrompt.match(/Its keys: (.*)\.$/)[1].split(", ");
    return { role: "assistant", model: "test-model", content: { type: "text", text: JSON.stringify(Object.fromEntries(keys.map((k) => [k, `${k} value`]))) } };
  });
  const lead = await client.callTool({
    name: "execute_chain",
    arguments: {
      chain_name: "mobile-lead-processing",
      variables: {
        raw_lead_message: "[MOBILE] Hey Kim! The Johnsons want a romantic getaway to Santorini for their 10th anniversary. Budget $8,000-$10,000 for 2, late September.",
        source_channel: "whatsapp",
        agent_name: "Kim Henderson",
      },
    },
  });
  assert.equal(lead.isError, undefined, lead.content[0].text);
  assert.match(lead.content[0].text, /- Steps Completed: 4\/4[\s\S]*- welcome_message: welcome_message value/);
  const follow = await client.callTool({
    name: "execute_chain",
    arguments: { chain_name: "client-followup-sequence", variables: { client_id: "CL-20250601-Johnson", days_since_proposal: 5, last_interaction_type: "email_opened", proposal_tier_interest: "premium" } },
  });
  assert.equal(follow.isError, undefined, follow.content[0].text);
  assert.match(follow.content[0].text, /- engagement_level: medium[\s\S]*- followup_message: followup_message value/);
  assert.equal(asked, 4 + 2, "every instruction step asked the model once");
  await transport.terminateSession();
  await client.close();
});
