// OAuth for MCP clients with the official Python SDK (PyPI `mcp`, pinned in scripts/toolchain.sh,
// which installs it in .toolchain/python): its OAuthClientProvider discovers the companion
// authorization server, registers, runs PKCE through the consent page (answered by the script as a
// person would, support/oauth_client.py) and calls tools as the user and roles of the grant.
// Without that virtual environment the test is skipped with the reason, except under CI=true, where
// it fails: scripts/toolchain.sh is meant to have made it.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { root } from "./support/worker.js";
import { startOAuthStack } from "./support/oauth.js";

const python = process.env.MCP_EDGE_PYTHON ?? join(root, ".toolchain", "python", "bin", "python");
const missing = existsSync(python) ? null : `no Python MCP SDK at ${python}: run bash scripts/toolchain.sh (needs python3 with venv)`;
if (missing && process.env.CI === "true") throw new Error(missing);

/** Runs the Python client; resolves with its JSON line, or rejects with its output. */
function pythonClient(mcpUrl, user, roles) {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [join(root, "tests", "support", "oauth_client.py"), mcpUrl, user, roles.join(",")]);
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("close", (status) => (status === 0 ? resolve(JSON.parse(out.trim().split("\n").at(-1))) : reject(new Error(`python exited ${status}: ${err}${out}`))));
  });
}

describe("OAuth with the Python SDK (development login)", { skip: missing ?? false }, () => {
  let s;
  before(async () => (s = await startOAuthStack()));
  after(() => s?.stop());

  test("signs in and calls tools as the grant's user and roles", async () => {
    const nina = "00000000-0000-4000-8000-000000000005";
    const r = await pythonClient(s.mcpUrl, nina, ["manager"]);
    assert.ok(r.tools.includes("get_org_chart"), "a manager's tool");
    assert.ok(!r.tools.includes("update_salary"), "not hr-write's");
    assert.equal(r.me.status, "success", JSON.stringify(r.me));
    assert.match(JSON.stringify(r.me.data), new RegExp(`"${nina}"`));
    assert.equal(r.listed.status, "success", JSON.stringify(r.listed));
  });
});
