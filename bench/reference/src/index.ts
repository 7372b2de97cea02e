// The reference peer of `npm run bench`: a small MCP server written the way the TypeScript SDK's
// documentation shows for Workers (McpServer, zod input schemas, the Web-standard Streamable HTTP
// transport), serving the same cheap tool as ours and an equivalent of process_template on the
// seed's trip-confirmation template, with plain string code. Sessions live in isolate memory: the
// cheapest a TypeScript server can keep them (ours keeps each in a Durable Object's SQLite).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { type Mode, registerTools } from "./tools.js";

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  mode: Mode;
}

const sessions = new Map<string, Session>();

function server(session: Session): McpServer {
  return registerTools(new McpServer({ name: "reference", version: "1.0.0" }), session);
}

async function mcp(request: Request): Promise<Response> {
  const id = request.headers.get("mcp-session-id");
  if (id) {
    const session = sessions.get(id);
    if (!session) return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }, { status: 404 });
    return session.transport.handleRequest(request);
  }
  const session = { mode: "interactive-mode" } as Session;
  session.transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => crypto.randomUUID(),
    enableJsonResponse: true,
    onsessioninitialized: (sid) => {
      sessions.set(sid, session);
    },
    onsessionclosed: (sid) => {
      sessions.delete(sid);
    },
  });
  await server(session).connect(session.transport);
  return session.transport.handleRequest(request);
}

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/mcp") return mcp(request);
    return new Response("not found", { status: 404 });
  },
};
