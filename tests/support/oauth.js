// The OAuth deployment served locally: the companion authorization server (oauth/, bundled by
// esbuild as wrangler bundles it) in front of the built Rust Worker, joined by the service binding
// MCP, in workerd through Miniflare with real KV, D1 and Durable Objects. The keys they share are
// made here as `npm run deploy` makes them (scripts/oauth-keys.js), and so are the Rust Worker's
// CURSOR_SECRET and REQUEST_STATE_SECRET. Also: the scripted consent a
// person would click through, and an OpenID Connect provider stand-in for the production sign-in.
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { createServer as netServer } from "node:net";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { loadSampleData, migrate, root } from "./worker.js";
import { internalKeys } from "../../scripts/oauth-keys.js";

/** A free TCP port on 127.0.0.1: the issuer URL must be known before the server starts. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = netServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

/** The companion Worker as one ES module, the way wrangler bundles oauth/src/index.js. */
export async function bundleOAuth() {
  const out = await build({
    entryPoints: [join(root, "oauth", "src", "index.js")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    conditions: ["workerd", "worker", "browser"],
    external: ["cloudflare:*"],
    write: false,
    logLevel: "silent",
  });
  return out.outputFiles[0].text;
}

/** The compatibility flags of oauth/wrangler.toml (global_fetch_strictly_public, for CIMD). */
function oauthFlags() {
  const text = readFileSync(join(root, "oauth", "wrangler.toml"), "utf8");
  const list = text.match(/^compatibility_flags = \[(.*)\]$/m)?.[1] ?? "";
  return [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
}

/**
 * Starts the OAuth deployment. `oauthVars` and `mcpVars` override each Worker's vars (the Rust
 * Worker gets the production settings: no anonymous access); `sample` loads the sample company;
 * `outbound` (a function from Request to Response) answers the companion's outgoing requests, as
 * the Internet would (a client's metadata document). Returns { url, mcpUrl, mf, stop }.
 */
export async function startOAuthStack({ oauthVars = {}, mcpVars = {}, sample = true, outbound } = {}) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const keys = await internalKeys();
  const compatibilityDate = "2026-07-30";
  const mf = new Miniflare({
    host: "127.0.0.1",
    port,
    workers: [
      {
        name: "mcp-edge-oauth",
        modules: true,
        script: await bundleOAuth(),
        compatibilityDate,
        compatibilityFlags: oauthFlags(),
        ...(outbound ? { outboundService: outbound } : {}),
        kvNamespaces: ["OAUTH_KV"],
        serviceBindings: { MCP: "mcp-edge" },
        bindings: { OAUTH_SCOPES: "mcp", DEV_LOGIN: "true", ...oauthVars, INTERNAL_JWT_KEY: keys.privateJwk },
      },
      {
        name: "mcp-edge",
        rootPath: root,
        scriptPath: join(root, "build", "index.js"),
        modules: true,
        modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"], fallthrough: true }],
        compatibilityDate,
        compatibilityFlags: ["enable_request_signal"],
        durableObjects: {
          SESSION: { className: "Session", useSQLite: true },
          CONFIRMATIONS: { className: "Confirmation", useSQLite: true },
          RATE_LIMITER: { className: "RateLimiter", useSQLite: true },
          LISTENERS: { className: "Listeners", useSQLite: true },
        },
        d1Databases: ["DB"],
        kvNamespaces: ["CACHE"],
        // The top-level (production) [vars] of wrangler.toml that matter here, and what
        // `npm run deploy` sets for the OAuth mode: the companion as issuer, its public key, its
        // approval page as where approveUrl leads.
        bindings: {
          ALLOWED_ORIGINS: "",
          ALLOWED_HOSTS: "",
          MCP_CATALOG: "production",
          ANONYMOUS_ACCESS: "false",
          RATE_LIMITS: "search_flights=10/1m",
          FLOWMIND_LEVELS: "off",
          APPROVE_URL: "/confirm",
          ...mcpVars,
          JWT_ISSUER: url,
          JWKS: keys.jwks,
          CURSOR_SECRET: randomBytes(32).toString("hex"),
          REQUEST_STATE_SECRET: randomBytes(32).toString("hex"),
        },
      },
    ],
    handleRuntimeStdio: (stdout, stderr) => {
      stdout.resume();
      stderr.pipe(process.stderr);
    },
  });
  await mf.ready;
  const db = await mf.getD1Database("DB", "mcp-edge");
  await migrate(db);
  if (sample) await loadSampleData(db);
  return { url, mcpUrl: `${url}/mcp`, mf, stop: () => mf.dispose() };
}

/** An OAuthClientProvider kept in memory; `authorize` answers the consent page like a person. */
export class MemoryProvider {
  constructor(authorize) {
    this.authorize = authorize;
    this.client = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.redirected = null;
  }
  get redirectUrl() {
    return "http://127.0.0.1:9/callback";
  }
  get clientMetadata() {
    return { client_name: "oauth test", redirect_uris: [this.redirectUrl], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  async redirectToAuthorization(url) {
    this.redirected = await this.authorize(url);
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** The `Set-Cookie` headers of a response as one `Cookie` header value. */
const cookiesOf = (resp) => resp.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");

/**
 * What a person does in the browser: opens the authorization URL, reads the consent page and
 * presses Allow (with the development login's user and roles, when the page has one). Follows the
 * upstream sign-in when the page sends there (the OpenID Connect stand-in signs in at once).
 * Returns the redirect back to the client (its URL, with `code` and `state`).
 */
export async function consent(authorizationUrl, { user, roles = [], decision = "approve" } = {}) {
  const page = await fetch(authorizationUrl, { redirect: "manual" });
  const html = await page.text();
  if (page.status !== 200) throw new Error(`consent page: HTTP ${page.status}: ${html}`);
  const handle = html.match(/name="handle" value="([^"]+)"/)?.[1];
  if (!handle) throw new Error(`no consent form: ${html}`);
  const form = new URLSearchParams({ handle, decision });
  if (html.includes('name="user"')) {
    form.set("user", user);
    form.set("roles", roles.join(","));
  }
  const action = new URL("/authorize", authorizationUrl);
  const posted = await fetch(action, { method: "POST", body: form, redirect: "manual", headers: { cookie: cookiesOf(page) } });
  if (posted.status !== 302) throw new Error(`consent: HTTP ${posted.status}: ${await posted.text()}`);
  let location = new URL(posted.headers.get("location"), action);
  // The production sign-in: the upstream provider, then the companion's /callback.
  if (!location.searchParams.has("code") && !location.searchParams.has("error")) {
    const upstream = await fetch(location, { redirect: "manual" });
    const back = new URL(upstream.headers.get("location"));
    const done = await fetch(back, { redirect: "manual", headers: { cookie: cookiesOf(posted) } });
    if (done.status !== 302) throw new Error(`callback: HTTP ${done.status}: ${await done.text()}`);
    location = new URL(done.headers.get("location"), back);
  }
  return location;
}

/**
 * An OpenID Connect provider stand-in (a third-party service): discovery, an authorization
 * endpoint that signs `user` (or whoever `signIn` names next) in at once with `roles`, and a token endpoint that checks the code,
 * the client, the redirect URI and the PKCE verifier before it answers an ID token. Setting
 * `misbehave` to "nonce", "issuer" or "audience" makes that claim of the next ID tokens wrong.
 */
export async function startOidcStandIn({ user, roles, clientId = "mcp-edge", clientSecret = "oidc-secret" }) {
  let current = { user, roles };
  const codes = new Map();
  const requests = [];
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, issuer);
    requests.push(`${req.method} ${url.pathname}`);
    const json = (status, body) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === "/.well-known/openid-configuration") {
      return json(200, { issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, response_types_supported: ["code"], code_challenge_methods_supported: ["S256"] });
    }
    if (url.pathname === "/authorize") {
      const p = url.searchParams;
      if (p.get("client_id") !== clientId || p.get("code_challenge_method") !== "S256") return json(400, { error: "invalid_request" });
      const code = crypto.randomUUID();
      codes.set(code, { ...current, redirect: p.get("redirect_uri"), challenge: p.get("code_challenge"), nonce: p.get("nonce") });
      const back = new URL(p.get("redirect_uri"));
      back.searchParams.set("code", code);
      back.searchParams.set("state", p.get("state"));
      res.writeHead(302, { location: back.href });
      return res.end();
    }
    if (url.pathname === "/token" && req.method === "POST") {
      let body = "";
      for await (const chunk of req) body += chunk;
      const p = new URLSearchParams(body);
      const grant = codes.get(p.get("code"));
      codes.delete(p.get("code"));
      const { createHash } = await import("node:crypto");
      const challenge = createHash("sha256").update(p.get("code_verifier") ?? "").digest("base64url");
      if (!grant || grant.redirect !== p.get("redirect_uri") || grant.challenge !== challenge || p.get("client_id") !== clientId || p.get("client_secret") !== clientSecret) {
        return json(400, { error: "invalid_grant" });
      }
      const now = Math.floor(Date.now() / 1000);
      const b64 = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
      const claims = { iss: issuer, aud: clientId, sub: grant.user, roles: grant.roles, nonce: grant.nonce, iat: now, exp: now + 300 };
      // A provider (or a man in the middle) answering an ID token that is not for this sign-in.
      if (stand.misbehave === "nonce") claims.nonce = "another sign-in";
      if (stand.misbehave === "issuer") claims.iss = "https://evil.example";
      if (stand.misbehave === "audience") claims.aud = "another-client";
      const idToken = `${b64({ alg: "RS256", typ: "JWT" })}.${b64(claims)}.c2ln`;
      return json(200, { access_token: "upstream-access", token_type: "Bearer", id_token: idToken, expires_in: 300 });
    }
    json(404, { error: "not_found" });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;
  /** Who the next sign-in is: { user, roles }. */
  const signIn = (who) => (current = who);
  const stand = { issuer, clientId, clientSecret, requests, signIn, misbehave: null, stop: () => new Promise((r) => server.close(r)) };
  return stand;
}
