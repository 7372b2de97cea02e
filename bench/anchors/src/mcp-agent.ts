// The `McpAgent` anchor of `npm run bench` (npm `agents`, pinned in package.json): the peer of our
// 2025 session lane, one Durable Object per session, written as the `agents` documentation shows
// (a class with `server` and `init()`, served with `McpAgent.serve`). It serves the same tools as
// the in-memory reference (bench/reference/src/tools.ts), so its answers are byte-identical.
import { McpAgent } from "agents/mcp";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { registerTools } from "../../reference/src/tools.js";

export class Anchor extends McpAgent {
  server = new McpServer({ name: "reference", version: "1.0.0" });

  async init() {
    registerTools(this.server, { mode: "interactive-mode" });
  }
}

export default Anchor.serve("/mcp", { binding: "MCP_OBJECT" });
