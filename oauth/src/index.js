// mcp-edge-oauth: the OAuth 2.1 authorization server in front of mcp-edge (docs/oauth.md).
//
// MCP clients find it from the 401 of /mcp (protected resource metadata, then authorization server
// metadata), register (dynamic client registration), send the user through /authorize with PKCE and
// call /mcp with the access token. @cloudflare/workers-oauth-provider does the protocol: metadata,
// registration, codes, tokens, refresh, and the checks on every /mcp request. This file owns the
// user's side: who signs in (an upstream OpenID Connect provider in production, a development login
// locally), the consent page, and what reaches the Rust Worker.
//
// A valid /mcp request is forwarded over the service binding MCP with a fresh internal ES256 token
// (60 s) signed with INTERNAL_JWT_KEY, whose public half the Rust Worker has as JWKS. Its `sub` and
// `roles` are the grant's, fixed when the user signed in: nothing the MCP client sends can change them,
// and the client's own access token never reaches the Rust Worker.
import { AuthorizationError, CimdFetchError, OAuthProvider, authorizationErrorRedirect } from "@cloudflare/workers-oauth-provider";

/** Seconds an internal token lives: long enough for one request to reach the Rust Worker. */
const INTERNAL_TOKEN_SECONDS = 60;

const escape = (value) => String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const b64json = (value) => b64url(new TextEncoder().encode(JSON.stringify(value)));

/** The scopes clients are granted: OAUTH_SCOPES (space or comma separated), default `mcp`. */
export function scopes(env) {
  const list = String(env.OAUTH_SCOPES ?? "").split(/[\s,]+/).filter(Boolean);
  return list.length ? list : ["mcp"];
}

/** This server's public origin: PUBLIC_URL when set (a custom domain), else the request's. */
export function origin(request, env) {
  return (env.PUBLIC_URL ? new URL(env.PUBLIC_URL) : new URL(request.url)).origin;
}

/** Whether a host name is this machine: the development login is served to nothing else. */
const loopback = (host) => host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);

/** Roles as a list: a JSON list, or a string separated by spaces or commas. */
export function roleList(value) {
  if (Array.isArray(value)) return value.map(String).map((r) => r.trim()).filter(Boolean);
  return String(value ?? "").split(/[\s,]+/).filter(Boolean);
}

/** Signs the internal token the Rust Worker verifies against its JWKS (ES256, P-256). */
export async function internalToken(env, { issuer, audience, user, roles }) {
  if (!env.INTERNAL_JWT_KEY) throw new Error("INTERNAL_JWT_KEY is not set: `npm run deploy` creates it (docs/oauth.md)");
  const jwk = JSON.parse(env.INTERNAL_JWT_KEY);
  const key = await crypto.subtle.importKey("jwk", { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, d: jwk.d }, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
  const now = Math.floor(Date.now() / 1000);
  const header = { alg: "ES256", typ: "JWT", ...(jwk.kid ? { kid: jwk.kid } : {}) };
  const claims = { iss: issuer, aud: audience, sub: user, roles, iat: now, exp: now + INTERNAL_TOKEN_SECONDS };
  const input = `${b64json(header)}.${b64json(claims)}`;
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key, new TextEncoder().encode(input));
  return `${input}.${b64url(signature)}`;
}

/** /mcp with a valid access token: forwarded to the Rust Worker as the grant's user and roles. */
const api = {
  async fetch(request, env, ctx) {
    const props = ctx.props ?? {};
    const base = origin(request, env);
    const issuer = env.TOKEN_ISSUER || base;
    const token = await internalToken(env, { issuer, audience: `${base}/mcp`, user: props.userId, roles: roleList(props.roles) });
    const headers = new Headers(request.headers);
    headers.set("authorization", `Bearer ${token}`);
    // The Rust Worker takes its audience from the URL it is asked for: the public one, also when
    // the request came in on another route (workers.dev beside a custom domain in PUBLIC_URL).
    const url = new URL(request.url);
    const forwarded = new URL(url.pathname + url.search, base);
    return env.MCP.fetch(new Request(forwarded, new Request(request, { headers })));
  },
};

/** The consent page: who asks, where the tokens go, and (development login) who signs in. */
function consentPage(details, handle, devLogin) {
  const name = escape(details.clientName);
  const origin = details.clientDomain ? `Published by <strong>${escape(details.clientDomain)}</strong>.` : "This app registered itself; its name is not verified.";
  const login = devLogin
    ? `<fieldset><legend>Development login (never in production)</legend>
  <label>User id (an employee id, docs/domain-data.md) <input name="user" required value="00000000-0000-4000-8000-000000000001"></label><br>
  <label>Roles (comma-separated) <input name="roles" value=""></label></fieldset>`
    : "<p>You will sign in with your organisation's account next.</p>";
  return `<!doctype html>
<meta charset="utf-8">
<title>Authorize ${name}</title>
<h1>Allow ${name} to use mcp-edge as you?</h1>
<p>${origin} Access will be sent to <strong>${escape(details.redirectHost)}</strong>.</p>
${details.redirectIsLoopback ? "<p><strong>This sends access to an app on your computer.</strong> Continue only if you just started signing in from it.</p>" : ""}
<p>Scopes: ${details.scope.map(escape).join(", ") || "none"}</p>
<form method="post" action="/authorize">
  <input type="hidden" name="handle" value="${escape(handle)}">
  ${login}
  <p><button name="decision" value="approve">Allow</button> <button name="decision" value="deny">Deny</button></p>
</form>`;
}

/** The upstream OpenID Connect provider's metadata (OIDC_ISSUER's discovery document). */
async function oidcMetadata(env) {
  if (!env.OIDC_ISSUER || !env.OIDC_CLIENT_ID) throw new Error("OIDC_ISSUER and OIDC_CLIENT_ID are not set: sign-in needs an OpenID Connect provider (docs/oauth.md)");
  const url = `${env.OIDC_ISSUER.replace(/\/$/, "")}/.well-known/openid-configuration`;
  const resp = await fetch(url, { headers: { accept: "application/json" } });
  if (!resp.ok) throw new Error(`the OpenID Connect discovery document ${url} answered HTTP ${resp.status}`);
  return resp.json();
}

const sha256 = async (text) => b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
const random = () => b64url(crypto.getRandomValues(new Uint8Array(32)));

/** The claims of an ID token received straight from the token endpoint over TLS (OIDC Core
 * 3.1.3.7: TLS authenticates the issuer there); its issuer, audience and nonce are still checked. */
export function idTokenClaims(idToken, { issuer, clientId, nonce }) {
  const part = String(idToken ?? "").split(".")[1];
  if (!part) throw new Error("the token endpoint returned no id_token");
  const claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(part.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0))));
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (claims.iss !== issuer) throw new Error(`the id_token's issuer ${claims.iss} is not ${issuer}`);
  if (!aud.includes(clientId)) throw new Error("the id_token is not meant for this client");
  if (claims.nonce !== nonce) throw new Error("the id_token's nonce does not match this sign-in");
  if (typeof claims.exp !== "number" || claims.exp < Date.now() / 1000 - 60) throw new Error("the id_token has expired");
  return claims;
}

/** GET and POST /authorize, GET /callback; everything else goes to the Rust Worker as it is. */
const app = {
  async fetch(request, env) {
    const url = new URL(request.url);
    const devLogin = env.DEV_LOGIN === "true";
    if (devLogin && !loopback(url.hostname)) {
      return new Response("DEV_LOGIN is for local development only: it is refused on a public host", { status: 403 });
    }
    const oauth = env.OAUTH_PROVIDER;
    try {
      if (url.pathname === "/authorize" && request.method === "GET") {
        const authRequest = await oauth.parseAuthRequest(request);
        const details = await oauth.describeConsent(authRequest);
        const consent = await oauth.beginConsent(authRequest);
        consent.headers.set("content-type", "text/html; charset=utf-8");
        return new Response(consentPage(details, consent.handle, devLogin), { headers: consent.headers });
      }
      if (url.pathname === "/authorize" && request.method === "POST") {
        const form = await request.formData();
        const handle = String(form.get("handle") ?? "");
        if (form.get("decision") !== "approve") {
          const denied = await oauth.denyConsent(request, handle);
          return new Response(null, { status: 302, headers: denied.headers });
        }
        const approved = await oauth.approveConsent(request, handle);
        if (devLogin) {
          const user = String(form.get("user") ?? "").trim();
          if (!user || user.includes(":")) return new Response("The development login needs a user id (an employee id, without ':')", { status: 400 });
          const roles = roleList(form.get("roles"));
          const { redirectTo } = await oauth.completeAuthorization({ request: approved.request, userId: user, metadata: { login: "dev" }, scope: approved.request.scope, props: { userId: user, roles } });
          approved.headers.set("location", redirectTo);
          return new Response(null, { status: 302, headers: approved.headers });
        }
        const meta = await oidcMetadata(env);
        const verifier = random();
        const nonce = random();
        const { state, headers } = await oauth.beginUpstream(approved.request, { data: { verifier, nonce }, headers: approved.headers });
        const to = new URL(meta.authorization_endpoint);
        to.search = new URLSearchParams({
          response_type: "code",
          client_id: env.OIDC_CLIENT_ID,
          redirect_uri: `${origin(request, env)}/callback`,
          scope: env.OIDC_SCOPES || "openid profile email",
          state,
          nonce,
          code_challenge: await sha256(verifier),
          code_challenge_method: "S256",
        }).toString();
        headers.set("location", to.href);
        return new Response(null, { status: 302, headers });
      }
      if (url.pathname === "/callback" && request.method === "GET") {
        const { request: original, data, headers } = await oauth.finishUpstream(request);
        if (url.searchParams.get("error") || !url.searchParams.get("code")) {
          headers.set("location", authorizationErrorRedirect(original, "access_denied"));
          return new Response(null, { status: 302, headers });
        }
        const meta = await oidcMetadata(env);
        const resp = await fetch(meta.token_endpoint, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
          body: new URLSearchParams({
            grant_type: "authorization_code",
            code: url.searchParams.get("code"),
            redirect_uri: `${origin(request, env)}/callback`,
            client_id: env.OIDC_CLIENT_ID,
            ...(env.OIDC_CLIENT_SECRET ? { client_secret: env.OIDC_CLIENT_SECRET } : {}),
            code_verifier: data.verifier,
          }),
        });
        if (!resp.ok) throw new Error(`the OpenID Connect token endpoint answered HTTP ${resp.status}: ${(await resp.text()).slice(0, 200)}`);
        const claims = idTokenClaims((await resp.json()).id_token, { issuer: meta.issuer, clientId: env.OIDC_CLIENT_ID, nonce: data.nonce });
        const user = String(claims[env.OIDC_USER_CLAIM || "sub"] ?? "");
        if (!user || user.includes(":")) throw new Error(`the id_token has no usable ${env.OIDC_USER_CLAIM || "sub"} claim for the user id`);
        const roles = roleList(claims[env.OIDC_ROLES_CLAIM || "roles"]);
        const { redirectTo } = await oauth.completeAuthorization({ request: original, userId: user, metadata: { login: "oidc" }, scope: original.scope, props: { userId: user, roles } });
        headers.set("location", redirectTo);
        return new Response(null, { status: 302, headers });
      }
    } catch (error) {
      if (error instanceof AuthorizationError && error.redirectTo) return Response.redirect(error.redirectTo, 302);
      if (error instanceof AuthorizationError || error instanceof CimdFetchError) {
        const message = error instanceof AuthorizationError ? error.description : "This app could not be verified.";
        return new Response(`${message} Start signing in again from your MCP client.`, { status: 400, headers: { "content-type": "text/plain; charset=utf-8" } });
      }
      console.error(JSON.stringify({ oauth: url.pathname, error: String(error?.message ?? error) }));
      return new Response(`Sign-in failed: ${error?.message ?? error}`, { status: 502, headers: { "content-type": "text/plain; charset=utf-8" } });
    }
    // /health, the session pages and everything else the Rust Worker serves itself.
    return env.MCP.fetch(request);
  },
};

const providers = new Map();

/** The provider for one public origin (the resource URL is fixed per provider). */
function provider(request, env) {
  const base = origin(request, env);
  let p = providers.get(base);
  if (!p) {
    p = new OAuthProvider({
      apiRoute: "/mcp",
      apiHandler: api,
      defaultHandler: app,
      authorizeEndpoint: "/authorize",
      tokenEndpoint: "/oauth/token",
      clientRegistrationEndpoint: "/oauth/register",
      scopesSupported: scopes(env),
      resourceMetadata: { resource: `${base}/mcp`, authorization_servers: [base], resource_name: "mcp-edge" },
      requiredScopes: scopes(env),
    });
    providers.set(base, p);
  }
  return p;
}

export default {
  fetch(request, env, ctx) {
    return provider(request, env).fetch(request, env, ctx);
  },
};
