// Identity on /mcp against the built Worker: bearer JWTs (HS256 with a secret; RS256 and ES256 from a
// JWKS served over HTTP; HS256 beside a JWKS only when JWT_ALLOW_HS256 opts in), 401 with WWW-Authenticate and the protected resource metadata (RFC 9728),
// anonymous access as a setting, and sessions bound to the user who started them.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHmac, generateKeyPairSync, sign } from "node:crypto";
import { createServer } from "node:http";
import { join } from "node:path";
import { root, startWorker } from "./support/worker.js";
import { LATEST, post } from "./support/mcp.js";

const SECRET = "test-secret-for-hs256";
const ISSUER = "https://id.test";
const b64 = (v) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
const now = () => Math.floor(Date.now() / 1000);

const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
const jwks = {
  keys: [
    { ...rsa.publicKey.export({ format: "jwk" }), kid: "rsa-1", alg: "RS256", use: "sig" },
    { ...ec.publicKey.export({ format: "jwk" }), kid: "ec-1", alg: "ES256", use: "sig" },
  ],
};

/** A signed JWT; `alg` HS256 (secret), RS256 or ES256 (the JWKS keys). */
function jwt(claims, { alg = "HS256", kid, secret = SECRET, header = {} } = {}) {
  const input = `${b64({ alg, typ: "JWT", ...(kid ? { kid } : {}), ...header })}.${b64(claims)}`;
  let sig;
  if (alg === "HS256") sig = createHmac("sha256", secret).update(input).digest();
  else if (alg === "RS256") sig = sign("sha256", Buffer.from(input), rsa.privateKey);
  else if (alg === "ES256") sig = sign("sha256", Buffer.from(input), { key: ec.privateKey, dsaEncoding: "ieee-p1363" });
  else sig = Buffer.alloc(0);
  return `${input}.${sig.toString("base64url")}`;
}

const initBody = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: "auth-test", version: "1" } } };
const bearer = (token) => ({ authorization: `Bearer ${token}` });

let jwksServer;
let jwksHits = 0;
before(async () => {
  jwksServer = createServer((req, res) => {
    jwksHits++;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(jwks));
  });
  await new Promise((r) => jwksServer.listen(0, "127.0.0.1", r));
});
after(() => jwksServer?.close());

describe("tokens required", () => {
  let w, aud, claims;
  before(async () => {
    w = await startWorker({ ANONYMOUS_ACCESS: "false", JWT_SECRET: SECRET, JWT_ALLOW_HS256: "true", JWT_ISSUER: ISSUER, JWKS_URL: `http://127.0.0.1:${jwksServer.address().port}/jwks` }, { quiet: true });
    aud = new URL("/mcp", w.url).href;
    claims = (extra = {}) => ({ iss: ISSUER, aud, sub: "E0042", roles: ["hr-read"], exp: now() + 600, ...extra });
  });
  after(() => w?.stop());

  const init = (headers) => post(w.mcpUrl, initBody, { headers });

  test("no token: 401 pointing at the protected resource metadata", async () => {
    const r = await init({});
    assert.equal(r.status, 401);
    const challenge = r.headers.get("www-authenticate");
    assert.equal(challenge, `Bearer resource_metadata="${new URL("/.well-known/oauth-protected-resource/mcp", w.url).href}"`);
    assert.match((await r.json()).error.message, /needs a bearer token/);
    for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const doc = await (await fetch(new URL(path, w.url))).json();
      assert.equal(doc.resource, aud);
      assert.deepEqual(doc.authorization_servers, [ISSUER]);
      assert.deepEqual(doc.bearer_methods_supported, ["header"]);
    }
  });

  test("valid HS256, RS256 and ES256 tokens open a session", async () => {
    for (const opts of [{}, { alg: "RS256", kid: "rsa-1" }, { alg: "ES256", kid: "ec-1" }]) {
      const r = await init(bearer(jwt(claims(), opts)));
      assert.equal(r.status, 200, `${opts.alg ?? "HS256"}: ${await r.text()}`);
      assert.ok(r.headers.get("mcp-session-id"));
    }
    assert.equal(jwksHits, 1, "the JWKS is fetched once and kept");
  });

  test("every invalid token is refused with invalid_token and the reason", async () => {
    const cases = [
      ["wrong secret", jwt(claims(), { secret: "other" }), /signature does not verify/],
      ["expired", jwt(claims({ exp: now() - 3600 })), /expired/],
      ["not yet valid", jwt(claims({ nbf: now() + 3600 })), /not valid yet/],
      ["other audience", jwt(claims({ aud: "https://elsewhere.example/mcp" })), /not meant for this server/],
      ["other issuer", jwt(claims({ iss: "https://evil.example" })), /not issued by https:\/\/id\.test/],
      ["no sub", jwt(claims({ sub: undefined })), /no sub/],
      ["alg none", `${b64({ alg: "none" })}.${b64(claims())}.`, /algorithm none is not accepted/],
      ["not a JWT", "abc.def", /not a JWT/],
      ["tampered payload", (() => { const [h, , s] = jwt(claims()).split("."); return `${h}.${b64(claims({ roles: ["executive"] }))}.${s}`; })(), /signature does not verify/],
      ["unknown kid", jwt(claims(), { alg: "RS256", kid: "rsa-9" }), /no key in the JWKS matches/],
      ["RS256 signed by another key", (() => { const [h, p] = jwt(claims(), { alg: "RS256", kid: "rsa-1" }).split("."); return `${h}.${p}.${b64("x".repeat(256))}`; })(), /signature does not verify/],
    ];
    for (const [name, token, reason] of cases) {
      const r = await init(bearer(token));
      assert.equal(r.status, 401, name);
      const challenge = r.headers.get("www-authenticate");
      assert.match(challenge, /^Bearer resource_metadata="[^"]+", error="invalid_token", error_description="[^"]+"$/, name);
      assert.match(challenge, reason, name);
    }
    const basic = await init({ authorization: "Basic dXNlcjpwYXNz" });
    assert.equal(basic.status, 401);
    assert.match(basic.headers.get("www-authenticate"), /must be 'Bearer <JWT>'/);
  });

  test("a session answers only the user who started it", async () => {
    const alice = bearer(jwt(claims({ sub: "E0001" })));
    const bob = bearer(jwt(claims({ sub: "E0002" })));
    const r = await init(alice);
    const session = r.headers.get("mcp-session-id");
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    assert.equal((await post(w.mcpUrl, ping, { session, headers: alice, version: LATEST })).status, 200);
    const other = await post(w.mcpUrl, ping, { session, headers: bob, version: LATEST });
    assert.equal(other.status, 403);
    assert.match((await other.json()).error.message, /started by another user/);
    assert.equal((await post(w.mcpUrl, ping, { session, version: LATEST })).status, 401);
    const stream = await fetch(w.mcpUrl, { headers: { accept: "text/event-stream", "mcp-session-id": session, ...bob } });
    assert.equal(stream.status, 403);
    const del = await fetch(w.mcpUrl, { method: "DELETE", headers: { "mcp-session-id": session, ...bob } });
    assert.equal(del.status, 403);
    assert.equal((await post(w.mcpUrl, ping, { session, headers: alice, version: LATEST })).status, 200, "still alive for its owner");
  });

  test("npm run token mints a token this server accepts", async () => {
    const token = execFileSync(join(root, "node_modules", ".bin", "node"), [join(root, "scripts", "token.js"), "--user", "E0007", "--roles", "hr-read,manager", "--issuer", ISSUER, "--audience", aud], { env: { ...process.env, JWT_SECRET: SECRET }, encoding: "utf8" }).trim();
    const payload = JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString());
    assert.equal(payload.sub, "E0007");
    assert.deepEqual(payload.roles, ["hr-read", "manager"]);
    assert.equal((await init(bearer(token))).status, 200);
  });
});

describe("HS256 beside a JWKS", () => {
  let w, claims;
  before(async () => {
    w = await startWorker({ ANONYMOUS_ACCESS: "false", JWT_SECRET: SECRET, JWKS: JSON.stringify(jwks) }, { quiet: true });
    claims = () => ({ aud: new URL("/mcp", w.url).href, sub: "E0042", roles: ["executive"], exp: now() + 600 });
  });
  after(() => w?.stop());

  test("is refused unless JWT_ALLOW_HS256 opts in: the shared secret cannot outrank the identity provider", async () => {
    const hs = await post(w.mcpUrl, initBody, { headers: bearer(jwt(claims())) });
    assert.equal(hs.status, 401);
    assert.match(hs.headers.get("www-authenticate"), /error="invalid_token".*HS256 tokens are not accepted here.*JWT_ALLOW_HS256/);
    const rs = await post(w.mcpUrl, initBody, { headers: bearer(jwt(claims(), { alg: "RS256", kid: "rsa-1" })) });
    assert.equal(rs.status, 200, await rs.text());
  });
});

describe("anonymous access allowed", () => {
  let w, aud;
  before(async () => {
    w = await startWorker({ ANONYMOUS_ACCESS: "true", JWT_SECRET: SECRET }, { quiet: true });
    aud = new URL("/mcp", w.url).href;
  });
  after(() => w?.stop());

  test("callers without a token are served; a bad token is still refused", async () => {
    assert.equal((await post(w.mcpUrl, initBody)).status, 200);
    const bad = await post(w.mcpUrl, initBody, { headers: bearer("abc.def.ghi") });
    assert.equal(bad.status, 401);
    assert.match(bad.headers.get("www-authenticate"), /error="invalid_token"/);
  });

  test("anonymous and token sessions do not mix", async () => {
    const token = bearer(jwt({ aud, sub: "E0001", exp: now() + 600 }));
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    const anon = (await post(w.mcpUrl, initBody)).headers.get("mcp-session-id");
    assert.equal((await post(w.mcpUrl, ping, { session: anon, headers: token, version: LATEST })).status, 403);
    const mine = (await post(w.mcpUrl, initBody, { headers: token })).headers.get("mcp-session-id");
    assert.equal((await post(w.mcpUrl, ping, { session: mine, version: LATEST })).status, 403);
    assert.equal((await post(w.mcpUrl, ping, { session: mine, headers: token, version: LATEST })).status, 200);
  });
});
