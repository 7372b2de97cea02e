// The official Python MCP SDK (PyPI `mcp`, pinned in scripts/toolchain.sh, which installs it in
// .toolchain/python) run as a client through tests/support/python_client.py. Without that virtual
// environment, tests that use it are skipped with `missing` as the reason, except under CI=true,
// where importing this module fails: scripts/toolchain.sh is meant to have made it.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { root } from "./worker.js";

const python = process.env.MCP_EDGE_PYTHON ?? join(root, ".toolchain", "python", "bin", "python");

/** Why the Python SDK cannot run here, or null when it can. */
export const missing = existsSync(python) ? null : `no Python MCP SDK at ${python}: run bash scripts/toolchain.sh (needs python3 with venv)`;
if (missing && process.env.CI === "true") throw new Error(missing);

/**
 * Runs python_client.py `scenario` against `mcpUrl` in the SDK's `mode` (`legacy`, `2026-07-28`
 * or `auto`), with `token` and `args` (as JSON); resolves with its JSON line and its stderr, or
 * rejects with its output.
 */
export function pythonClient(scenario, mcpUrl, mode, { token, args } = {}) {
  return pythonScript("python_client.py", [scenario, mcpUrl, mode, token ?? "-", JSON.stringify(args ?? null)]);
}

/**
 * Runs tests/support/`script` with `argv`; resolves with the JSON of its last stdout line and its
 * stderr, or rejects with its output.
 */
export function pythonScript(script, argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [join(root, "tests", "support", script), ...argv]);
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("close", (status) =>
      status === 0 ? resolve({ ...JSON.parse(out.trim().split("\n").at(-1)), stderr: err }) : reject(new Error(`python exited ${status}: ${err}${out}`)),
    );
  });
}
