// Desktop clients that only start local processes (Claude Desktop and similar) connect through
// mcp-remote (npm, pinned), a stdio-to-HTTP bridge that runs OAuth in the user's browser. Here the
// SDK's stdio client starts the real mcp-remote and calls a tool through it, against the dev
// configuration (wrangler.toml [env.dev.vars], anonymous access) and against the OAuth deployment,
// where mcp-remote registers, opens "the browser" (a script that answers the consent page as a
// person would) and calls with the token it got.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { root, startWorker } from "./support/worker.js";
import { startOAuthStack } from "./support/oauth.js";

const PROXY = join(root, "node_modules", "mcp-remote", "dist", "proxy.js");

/** The `[env.<name>.vars]` table of wrangler.toml (string values, as this file writes them). */
export function envVars(name) {
  const text = readFileSync(join(root, "wrangler.toml"), "utf8");
  const table = text.split(new RegExp(`^\\[env\\.${name}\\.vars\\]$`, "m"))[1]?.split(/^\[/m)[0] ?? "";
  return Object.fromEntries([...table.matchAll(/^([A-Z0-9_]+) = "(.*)"$/gm)].map(([, k, v]) => [k, v]));
}

/** Starts mcp-remote for `url` under the SDK's stdio client; `env` adds to its environment. */
async function remote(url, env = {}) {
  const config = mkdtempSync(join(tmpdir(), "mcp-remote-"));
  const stderr = [];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [PROXY, url, "--host", "127.0.0.1"],
    env: { ...process.env, MCP_REMOTE_CONFIG_DIR: config, ...env },
    stderr: "pipe",
  });
  transport.stderr?.on("data", (d) => stderr.push(String(d)));
  const client = new Client({ name: "desktop", version: "1" });
  try {
    await client.connect(transport);
  } catch (e) {
    rmSync(config, { recursive: true, force: true });
    throw new Error(`mcp-remote did not connect: ${e.message}\n${stderr.join("")}`);
  }
  return { client, stderr, close: async () => { await client.close(); rmSync(config, { recursive: true, force: true }); } };
}

describe("mcp-remote against the dev configuration", () => {
  let w;
  before(async () => {
    w = await startWorker({ ...envVars("dev"), ALLOWED_HOSTS: "" }, { quiet: true });
  });
  after(() => w?.stop());

  test("the protected resource metadata names a URL as issuer, its scopes, and is readable cross-origin", async () => {
    const resp = await fetch(`${w.url}.well-known/oauth-protected-resource/mcp`, { headers: { origin: "https://inspector.example" } });
    assert.equal(resp.headers.get("access-control-allow-origin"), "*");
    assert.match(resp.headers.get("content-type"), /application\/json/);
    const doc = await resp.json();
    assert.ok(doc.authorization_servers?.length, JSON.stringify(doc));
    for (const issuer of doc.authorization_servers) assert.doesNotThrow(() => new URL(issuer), issuer);
    assert.deepEqual(doc.scopes_supported, ["mcp"]);
    const preflight = await fetch(`${w.url}.well-known/oauth-protected-resource`, { method: "OPTIONS", headers: { origin: "https://inspector.example", "access-control-request-method": "GET", "access-control-request-headers": "mcp-protocol-version" } });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get("access-control-allow-origin"), "*");
    assert.match(preflight.headers.get("access-control-allow-headers"), /mcp-protocol-version/);
  });

  test("connects and calls a tool", async () => {
    const r = await remote(w.mcpUrl);
    try {
      const result = await r.client.callTool({ name: "switch_mode", arguments: { mode: "mobile-mode" } });
      assert.notEqual(result.isError, true, JSON.stringify(result));
      assert.match(JSON.stringify(result.content), /mobile/i);
    } finally {
      await r.close();
    }
  });
});

describe("mcp-remote against the OAuth deployment (production configuration)", () => {
  let s;
  let dir;
  before(async () => {
    s = await startOAuthStack({ sample: false });
    dir = mkdtempSync(join(tmpdir(), "mcp-remote-browser-"));
    // "The browser" mcp-remote opens: answers the consent page and follows the redirect to
    // mcp-remote's own callback, as a person clicking Allow would.
    const browser = join(dir, "browser");
    writeFileSync(browser, `#!${process.execPath}
import { consent } from ${JSON.stringify(join(root, "tests", "support", "oauth.js"))};
const back = await consent(process.argv[2], { user: "00000000-0000-4000-8000-000000000007", roles: ["hr-read"] });
const r = await fetch(back);
process.exit(r.ok ? 0 : 1);
`);
    chmodSync(browser, 0o755);
    writeFileSync(join(dir, "xdg-open"), `#!/bin/sh\nexec ${JSON.stringify(browser)} "$1"\n`);
    chmodSync(join(dir, "xdg-open"), 0o755);
  });
  after(async () => {
    await s?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("signs in through the browser and calls tools with the grant's roles", async () => {
    const r = await remote(s.mcpUrl, { BROWSER: join(dir, "browser"), PATH: `${dir}:${process.env.PATH}`, DISPLAY: "" });
    try {
      const tools = (await r.client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes("list_employees"), tools.join(","));
      const list = await r.client.callTool({ name: "list_employees", arguments: { limit: 1 } });
      assert.equal(list.structuredContent?.status, "success", JSON.stringify(list));
    } finally {
      await r.close();
    }
  });
});
