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
//
// Clients register dynamically (/oauth/register) or name themselves by the URL of a client ID
// metadata document (CIMD), which the library fetches under the global_fetch_strictly_public flag.
// `/confirm/<id>` is the approval page of the changes a user asked for (confirm.js).
import { AuthorizationError, CimdFetchError, OAuthProvider, authorizationErrorRedirect } from "@cloudflare/workers-oauth-provider";
import { serveApproval } from "./confirm.js";
import { escape, internalToken, loopback, oidcAuthorizeUrl, oidcSignIn, origin, random, roleList, scopes } from "./shared.js";

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

/** GET and POST /authorize, GET /callback, the approval page; everything else goes to the Rust
 * Worker as it is. */
const app = {
  async fetch(request, env) {
    const url = new URL(request.url);
    const devLogin = env.DEV_LOGIN === "true";
    if (devLogin && !loopback(url.hostname)) {
      return new Response("DEV_LOGIN is for local development only: it is refused on a public host", { status: 403 });
    }
    const oauth = env.OAUTH_PROVIDER;
    try {
      const approval = await serveApproval(request, env, devLogin);
      if (approval) return approval;
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
        const verifier = random();
        const nonce = random();
        const { state, headers } = await oauth.beginUpstream(approved.request, { data: { verifier, nonce }, headers: approved.headers });
        headers.set("location", await oidcAuthorizeUrl(request, env, { state, nonce, verifier }));
        return new Response(null, { status: 302, headers });
      }
      if (url.pathname === "/callback" && request.method === "GET") {
        const { request: original, data, headers } = await oauth.finishUpstream(request);
        if (url.searchParams.get("error") || !url.searchParams.get("code")) {
          headers.set("location", authorizationErrorRedirect(original, "access_denied"));
          return new Response(null, { status: 302, headers });
        }
        const { user, roles } = await oidcSignIn(request, env, { code: url.searchParams.get("code"), verifier: data.verifier, nonce: data.nonce });
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
      // Advertised only when the Worker also has the global_fetch_strictly_public flag
      // (oauth/wrangler.toml), which keeps the document's fetch off private addresses.
      clientIdMetadataDocumentEnabled: true,
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
