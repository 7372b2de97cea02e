// What the domain tool tests share: MCP sessions signed in as the sample company's named users
// (looked up by name in D1, so tests never depend on the id format), with any roles a test needs,
// and a walker that follows cursors to the last page.
import assert from "node:assert/strict";
import { LATEST, post } from "./mcp.js";
import { hs256 } from "../../scripts/token.js";

/**
 * Signs in named users of a started Worker: `as("Dan Williams", ["support-read"])` is a session
 * whose token carries the employee's id as `sub` and exactly those roles; `as(null)` is anonymous.
 * `idOf("Dan Williams")` is the employee's id.
 */
export function namedUsers(w, secret) {
  const aud = new URL("/mcp", w.url).href;
  const ids = {};
  const sessions = {};
  let db;
  async function idOf(name) {
    if (ids[name]) return ids[name];
    db ??= await w.mf.getD1Database("DB");
    const [first, last] = name.split(" ");
    const row = await db.prepare("SELECT id FROM hr_employees WHERE first_name = ?1 AND last_name = ?2").bind(first, last).first();
    assert.ok(row, `no employee named ${name}`);
    return (ids[name] = row.id);
  }
  async function as(name, roles = []) {
    const key = JSON.stringify([name, roles]);
    if (sessions[key]) return sessions[key];
    const headers = name ? { authorization: `Bearer ${hs256({ sub: await idOf(name), roles, aud, exp: Math.floor(Date.now() / 1000) + 600 }, secret)}` } : {};
    const init = await post(w.mcpUrl, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "domain-test", version: "1" } } }, { headers });
    assert.equal(init.status, 200, await init.clone().text());
    const session = init.headers.get("mcp-session-id");
    let n = 1;
    const rpc = async (method, params) => (await post(w.mcpUrl, { jsonrpc: "2.0", id: n++, method, params }, { session, headers, version: LATEST })).json();
    const s = {
      rpc,
      tools: async () => (await rpc("tools/list", {})).result.tools.map((t) => t.name),
      /** The call's result, or the JSON-RPC error reply. */
      call: async (tool, args = {}) => {
        const r = await rpc("tools/call", { name: tool, arguments: args });
        return r.error ? r : r.result;
      },
      /** The structured answer, which must be a success. */
      data: async (tool, args) => {
        const r = await s.call(tool, args);
        assert.equal(r.structuredContent?.status, "success", JSON.stringify(r));
        return r.structuredContent;
      },
      /** The structured answer, which must be an error; returns it. */
      failure: async (tool, args) => {
        const r = await s.call(tool, args);
        assert.equal(r.structuredContent?.status, "error", JSON.stringify(r));
        assert.ok(r.structuredContent.suggestedAction, "every error suggests what to do");
        return r.structuredContent;
      },
      /** Every row of a list tool, following nextCursor to the end; also the pages' sizes. */
      all: async (tool, args) => {
        const rows = [];
        const sizes = [];
        let cursor;
        for (;;) {
          const r = await s.data(tool, { ...args, ...(cursor ? { cursor } : {}) });
          rows.push(...r.data);
          sizes.push(r.metadata.returnedCount);
          assert.equal(r.metadata.returnedCount, r.data.length);
          assert.equal(r.metadata.truncated, r.metadata.hasMore);
          if (!r.metadata.hasMore) return { rows, sizes };
          assert.match(r.metadata.hint, /nextCursor/);
          cursor = r.metadata.nextCursor;
        }
      },
    };
    sessions[key] = s;
    return s;
  }
  return { as, idOf };
}

/** Checks that a list tool refuses an altered cursor, another caller's, and one for other filters. */
export async function refusesForeignCursors(tool, owner, other, args, otherArgs) {
  const first = await owner.data(tool, { ...args, limit: 2 });
  const cursor = first.metadata.nextCursor;
  assert.ok(cursor, `${tool} has a second page`);
  const flip = cursor.slice(0, 5) + (cursor[5] === "A" ? "B" : "A") + cursor.slice(6);
  const cases = [
    [owner, { ...args, cursor: flip }, /altered/],
    [other, { ...args, cursor }, /another caller/],
    [owner, { ...otherArgs, cursor }, /other filters/],
    [owner, { ...args, cursor: "not-a-cursor" }, /malformed/],
  ];
  for (const [s, a, why] of cases) {
    const r = await s.failure(tool, a);
    assert.equal(r.code, "INVALID_INPUT", JSON.stringify(a));
    assert.match(r.message, why);
  }
  const second = await owner.data(tool, { ...args, limit: 2, cursor });
  assert.notDeepEqual(second.data, first.data, "the genuine cursor works");
}
