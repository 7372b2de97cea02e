// The production rehearsal: the top-level (production) configuration of wrangler.toml served
// locally as `npm run deploy` deploys it (the OAuth companion in front, users signing in through an
// upstream OpenID Connect provider, here a stand-in), with the database a deploy creates (migrations
// only). No anonymous access, tokens only through OAuth, no sample company; the official SDK client
// connects, and the domain tools refuse a user without roles and work for one with them.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { root } from "./support/worker.js";
import { MemoryProvider, consent, startOAuthStack, startOidcStandIn } from "./support/oauth.js";

import { hs256 } from "../scripts/token.js";

/** The top-level [vars] of a wrangler.toml (string values, as these files write them). */
export function productionVars(file) {
  const text = readFileSync(file, "utf8");
  const table = text.split(/^\[vars\]$/m)[1]?.split(/^\[/m)[0] ?? "";
  return Object.fromEntries([...table.matchAll(/^([A-Z0-9_]+) = "(.*)"$/gm)].map(([, k, v]) => [k, v]));
}

const INIT = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "rehearsal", version: "1" } } };
const post = (fetcher, url, headers = {}) =>
  fetcher(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(INIT) });

describe("production rehearsal", () => {
  const users = { nobody: { user: "10000000-0000-4000-8000-000000000001", roles: [] }, hr: { user: "10000000-0000-4000-8000-000000000002", roles: ["hr-read"] } };
  let oidc;
  let s;
  before(async () => {
    // The stand-in signs in whoever the test names next; the roles are in its ID token.
    oidc = await startOidcStandIn({ user: "", roles: [] });
    const standIn = oidc;
    s = await startOAuthStack({
      sample: false,
      oauthVars: { ...productionVars(join(root, "oauth", "wrangler.toml")), OIDC_ISSUER: standIn.issuer, OIDC_CLIENT_ID: standIn.clientId, OIDC_CLIENT_SECRET: standIn.clientSecret },
      mcpVars: { ...productionVars(join(root, "wrangler.toml")), FLOWMIND_LEVELS: "off" },
    });
  });
  after(async () => {
    await s?.stop();
    await oidc?.stop();
  });

  /** Signs `who` in through the whole flow (consent, then the upstream provider). */
  async function connect(who) {
    oidc.signIn(who);
    const provider = new MemoryProvider((url) => consent(url));
    const first = new StreamableHTTPClientTransport(new URL(s.mcpUrl), { authProvider: provider });
    await assert.rejects(new Client({ name: "rehearsal", version: "1" }).connect(first), UnauthorizedError);
    await first.finishAuth(provider.redirected.searchParams.get("code"));
    const client = new Client({ name: "rehearsal", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(s.mcpUrl), { authProvider: provider }));
    return client;
  }

  test("the configuration is production's: no anonymous access, no development login", () => {
    assert.equal(productionVars(join(root, "wrangler.toml")).ANONYMOUS_ACCESS, "false");
    assert.equal(productionVars(join(root, "oauth", "wrangler.toml")).DEV_LOGIN, "false");
  });

  test("without a token, or with a hand-made one, /mcp is 401", async () => {
    assert.equal((await post(fetch, s.mcpUrl)).status, 401);
    const aud = s.mcpUrl;
    const forged = hs256({ sub: users.hr.user, roles: ["hr-read", "admin"], iss: s.url, aud, exp: Math.floor(Date.now() / 1000) + 600 }, "guess");
    assert.equal((await post(fetch, s.mcpUrl, { authorization: `Bearer ${forged}` })).status, 401);
    // The Rust Worker itself, reached without the companion, takes no such token either.
    const rust = await s.mf.getWorker("mcp-edge");
    assert.equal((await post((u, i) => rust.fetch(u, i), s.mcpUrl)).status, 401);
    assert.equal((await post((u, i) => rust.fetch(u, i), s.mcpUrl, { authorization: `Bearer ${forged}` })).status, 401);
  });

  test("the database has the schema and shipped definitions, and no sample company", async () => {
    const db = await s.mf.getD1Database("DB", "mcp-edge");
    assert.equal((await db.prepare("SELECT COUNT(*) n FROM hr_employees").first("n")), 0);
    assert.ok((await db.prepare("SELECT COUNT(*) n FROM instruction_sets").first("n")) > 0);
  });

  test("a user signed in without roles is refused the domain tools", async () => {
    const client = await connect(users.nobody);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes("get_mode_indicator"), "tools open to anyone signed in");
      assert.ok(!tools.includes("list_employees"), "no hr-read tool without the role");
      const refused = await client.callTool({ name: "list_employees", arguments: {} }).catch((e) => ({ error: e.message }));
      assert.equal(refused.structuredContent?.code, "INSUFFICIENT_PERMISSIONS", JSON.stringify(refused));
      assert.ok(oidc.requests.includes("POST /token"), "signed in through the upstream provider");
    } finally {
      await client.close();
    }
  });

  test("an ID token for another sign-in, issuer or client signs nobody in", async () => {
    for (const [wrong, message] of [["nonce", /nonce does not match/], ["issuer", /issuer https:\/\/evil\.example is not/], ["audience", /not meant for this client/]]) {
      oidc.misbehave = wrong;
      oidc.signIn(users.hr);
      const provider = new MemoryProvider((url) => consent(url));
      const transport = new StreamableHTTPClientTransport(new URL(s.mcpUrl), { authProvider: provider });
      await assert.rejects(new Client({ name: "rehearsal", version: "1" }).connect(transport), message, wrong);
      assert.equal(provider.saved, undefined, `no token (${wrong})`);
    }
    oidc.misbehave = null;
  });

  test("a user whose provider grants hr-read uses the HR tools", async () => {
    const client = await connect(users.hr);
    try {
      const list = await client.callTool({ name: "list_employees", arguments: { limit: 5 } });
      assert.equal(list.structuredContent?.status, "success", JSON.stringify(list));
      assert.deepEqual(list.structuredContent.data, [], "an empty company");
    } finally {
      await client.close();
    }
  });
});
