// OAuth for MCP clients, end to end with the official TypeScript SDK's OAuth client provider: the
// SDK discovers the authorization server from /mcp's 401 (protected resource metadata, then
// authorization server metadata), registers itself (dynamic client registration), sends the user
// to /authorize with PKCE (the consent page is answered by a script, as a person would), trades
// the code for a token and calls tools with it. The companion Worker (oauth/) forwards to the built
// Rust Worker over a service binding; roles and the user id come from the grant, never the client.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { MemoryProvider, consent, startOAuthStack } from "./support/oauth.js";
import { clientDocumentStandIn } from "./support/oauth_cimd.js";

/** Connects the SDK client through the whole OAuth flow; returns { client, provider }. */
async function connectWithOAuth(mcpUrl, who) {
  const provider = new MemoryProvider((url) => consent(url, who));
  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  await assert.rejects(new Client({ name: "oauth-test", version: "1" }).connect(first), UnauthorizedError, "the first connect needs authorization");
  assert.ok(provider.redirected, "the SDK sent the user to the authorization page");
  assert.equal(provider.redirected.origin + provider.redirected.pathname, provider.redirectUrl);
  await first.finishAuth(provider.redirected.searchParams.get("code"));
  assert.ok(provider.saved?.access_token, "a token");
  const client = new Client({ name: "oauth-test", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
  return { client, provider };
}

const MARCUS = "00000000-0000-4000-8000-000000000006";

describe("OAuth with the TypeScript SDK (development login)", () => {
  let s;
  before(async () => (s = await startOAuthStack()));
  after(() => s?.stop());

  test("discovery documents name the companion as authorization server, with CORS", async () => {
    const prm = await fetch(`${s.url}/.well-known/oauth-protected-resource/mcp`, { headers: { origin: "https://claude.ai" } });
    assert.equal(prm.status, 200);
    const doc = await prm.json();
    assert.equal(doc.resource, s.mcpUrl);
    assert.deepEqual(doc.authorization_servers, [s.url]);
    assert.deepEqual(doc.scopes_supported, ["mcp"]);
    assert.ok(prm.headers.get("access-control-allow-origin"), "browser clients may read it");
    // Browser-based clients (the MCP Inspector's web UI, claude.ai) read the metadata and register
    // from their own origin.
    const asResp = await fetch(`${s.url}/.well-known/oauth-authorization-server`, { headers: { origin: "https://inspector.example" } });
    assert.ok(asResp.headers.get("access-control-allow-origin"), "authorization server metadata readable cross-origin");
    const preflight = await fetch(`${s.url}/oauth/register`, { method: "OPTIONS", headers: { origin: "https://inspector.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" } });
    assert.ok(preflight.status < 300 && preflight.headers.get("access-control-allow-origin"), `registration preflight: ${preflight.status}`);
    const as = await asResp.json();
    assert.equal(as.issuer, s.url);
    assert.ok(as.registration_endpoint && as.authorization_endpoint && as.token_endpoint);
    assert.ok(as.code_challenge_methods_supported.includes("S256"));
    const unauthorized = await fetch(s.mcpUrl, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: "{}" });
    assert.equal(unauthorized.status, 401);
    assert.match(unauthorized.headers.get("www-authenticate"), /resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource/);
  });

  test("the SDK signs in, and the user id and roles are the grant's", async () => {
    const { client } = await connectWithOAuth(s.mcpUrl, { user: MARCUS, roles: ["hr-read"] });
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes("list_employees"), "hr-read's tool is listed");
      assert.ok(!tools.includes("update_salary"), "hr-write's is not");
      const me = await client.callTool({ name: "get_employee", arguments: {} });
      assert.equal(me.structuredContent.status, "success", JSON.stringify(me));
      assert.match(JSON.stringify(me.structuredContent.data), new RegExp(`"${MARCUS}"`), "the caller is the user who signed in");
      const list = await client.callTool({ name: "list_employees", arguments: { limit: 2 } });
      assert.equal(list.structuredContent.status, "success", JSON.stringify(list));
    } finally {
      await client.close();
    }
  });

  test("a client cannot choose its roles: headers it adds are replaced by the grant's token", async () => {
    const { client, provider } = await connectWithOAuth(s.mcpUrl, { user: MARCUS, roles: [] });
    await client.close();
    const call = (headers) =>
      fetch(s.mcpUrl, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list", ...headers },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } } }),
      });
    const listed = await (await call({ authorization: `Bearer ${provider.saved.access_token}`, "x-mcp-edge-caller": JSON.stringify({ user: MARCUS, roles: ["hr-read"] }) })).json();
    assert.ok(listed.result, JSON.stringify(listed));
    assert.ok(!listed.result.tools.some((t) => t.name === "list_employees"), "no role the grant lacks");
    assert.equal((await call({ authorization: "Bearer not-a-token" })).status, 401);
  });

  test("Deny sends the client back with access_denied and no code", async () => {
    const provider = new MemoryProvider((url) => consent(url, { user: MARCUS, decision: "deny" }));
    const transport = new StreamableHTTPClientTransport(new URL(s.mcpUrl), { authProvider: provider });
    await assert.rejects(new Client({ name: "oauth-test", version: "1" }).connect(transport), UnauthorizedError);
    assert.equal(provider.redirected.searchParams.get("error"), "access_denied");
    assert.equal(provider.redirected.searchParams.get("code"), null);
  });

  test("the development login is refused on a host that is not this machine", async () => {
    const r = await s.mf.dispatchFetch("https://mcp.example.com/authorize?response_type=code");
    assert.equal(r.status, 403);
    assert.match(await r.text(), /DEV_LOGIN is for local development only/);
  });
});

describe("OAuth with a client ID metadata document (CIMD)", () => {
  let s, site;
  before(async () => {
    site = clientDocumentStandIn();
    s = await startOAuthStack({ outbound: site.outbound });
  });
  after(() => s?.stop());

  test("a client named by the https URL of its metadata document signs in without registering", async () => {
    const as = await (await fetch(`${s.url}/.well-known/oauth-authorization-server`)).json();
    assert.equal(as.client_id_metadata_document_supported, true, JSON.stringify(as));
    const provider = new MemoryProvider(async (url) => {
      assert.equal(new URL(url).searchParams.get("client_id"), site.clientId, "the SDK uses the document's URL as its client_id");
      const page = await (await fetch(url)).text();
      assert.match(page, /Allow CIMD test client to use mcp-edge/, "the consent page names the client as its document does");
      assert.match(page, /Published by <strong>client\.example<\/strong>/);
      return consent(url, { user: MARCUS, roles: ["hr-read"] });
    });
    Object.defineProperty(provider, "clientMetadataUrl", { value: site.clientId });
    const first = new StreamableHTTPClientTransport(new URL(s.mcpUrl), { authProvider: provider });
    await assert.rejects(new Client({ name: "cimd-test", version: "1" }).connect(first), UnauthorizedError);
    await first.finishAuth(provider.redirected.searchParams.get("code"));
    assert.equal(provider.client?.client_id, site.clientId, "no registration: the client id is the URL");
    assert.ok(site.fetched.length > 0, "the server read the document");
    const client = new Client({ name: "cimd-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(s.mcpUrl), { authProvider: provider }));
    try {
      const me = await client.callTool({ name: "get_employee", arguments: {} });
      assert.match(JSON.stringify(me.structuredContent.data), new RegExp(`"${MARCUS}"`));
    } finally {
      await client.close();
    }
  });

  test("only the redirect URIs the document lists are accepted", async () => {
    const as = await (await fetch(`${s.url}/.well-known/oauth-authorization-server`)).json();
    const authorize = (redirect) => {
      const url = new URL(as.authorization_endpoint);
      url.search = new URLSearchParams({ response_type: "code", client_id: site.clientId, redirect_uri: redirect, code_challenge: "x".repeat(43), code_challenge_method: "S256", resource: s.mcpUrl }).toString();
      return fetch(url, { redirect: "manual" });
    };
    const listed = await authorize("http://127.0.0.1:9/callback");
    assert.equal(listed.status, 200, await listed.clone().text());
    const other = await authorize("http://127.0.0.1:9/elsewhere");
    assert.equal(other.status, 400, await other.clone().text());
  });
});
