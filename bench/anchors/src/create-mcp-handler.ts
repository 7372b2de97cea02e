// The `createMcpHandler` anchor of `npm run bench` (npm `agents` over `@modelcontextprotocol/server`,
// both pinned in package.json): the stateless peer of our 2026-07-28 lane, written as the `agents`
// documentation shows for a stateless server (a factory building a fresh SDK v2 `McpServer` per
// request, served by `createMcpHandler` from `agents/mcp`). It serves the same tools as the other
// peers (bench/reference/src/tools.ts, with `z.object` schemas as SDK v2 takes them), so its answers
// are byte-identical to theirs and, as the bench checks before measuring, to ours.
import { createMcpHandler } from "agents/mcp";
import { McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import { registerTools } from "../../reference/src/tools.js";

const handler = createMcpHandler(() => registerTools(new McpServer({ name: "reference", version: "1.0.0" }), { mode: "interactive-mode" }, (shape) => z.object(shape)));

export default {
  fetch: (request: Request, env: unknown, ctx: ExecutionContext) => handler(request, env, ctx),
};
