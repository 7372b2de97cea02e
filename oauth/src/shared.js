// What the companion's pages share: its origin, the internal token it signs for the Rust Worker,
// and signing in through the upstream OpenID Connect provider (docs/oauth.md).

/** Seconds an internal token lives: long enough for one request to reach the Rust Worker. */
const INTERNAL_TOKEN_SECONDS = 60;

export const escape = (value) => String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
export const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
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
export const loopback = (host) => host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);

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

/** The upstream OpenID Connect provider's metadata (OIDC_ISSUER's discovery document). */
export async function oidcMetadata(env) {
  if (!env.OIDC_ISSUER || !env.OIDC_CLIENT_ID) throw new Error("OIDC_ISSUER and OIDC_CLIENT_ID are not set: sign-in needs an OpenID Connect provider (docs/oauth.md)");
  const url = `${env.OIDC_ISSUER.replace(/\/$/, "")}/.well-known/openid-configuration`;
  const resp = await fetch(url, { headers: { accept: "application/json" } });
  if (!resp.ok) throw new Error(`the OpenID Connect discovery document ${url} answered HTTP ${resp.status}`);
  return resp.json();
}

export const sha256 = async (text) => b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
export const random = () => b64url(crypto.getRandomValues(new Uint8Array(32)));

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


/** Where the upstream provider sends the browser back, for both sign-ins (one redirect URI). */
export const callbackUrl = (request, env) => `${origin(request, env)}/callback`;

/**
 * The upstream provider's authorization URL for one sign-in: PKCE (S256), `state` and `nonce`,
 * back to `/callback`.
 */
export async function oidcAuthorizeUrl(request, env, { state, nonce, verifier }) {
  const meta = await oidcMetadata(env);
  const to = new URL(meta.authorization_endpoint);
  to.search = new URLSearchParams({
    response_type: "code",
    client_id: env.OIDC_CLIENT_ID,
    redirect_uri: callbackUrl(request, env),
    scope: env.OIDC_SCOPES || "openid profile email",
    state,
    nonce,
    code_challenge: await sha256(verifier),
    code_challenge_method: "S256",
  }).toString();
  return to.href;
}

/**
 * Trades the code the provider sent back to `/callback` for an ID token and reads who signed in:
 * `{ user, roles }` from OIDC_USER_CLAIM and OIDC_ROLES_CLAIM (issuer, audience, nonce and expiry
 * checked by idTokenClaims).
 */
export async function oidcSignIn(request, env, { code, verifier, nonce }) {
  const meta = await oidcMetadata(env);
  const resp = await fetch(meta.token_endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: callbackUrl(request, env),
      client_id: env.OIDC_CLIENT_ID,
      ...(env.OIDC_CLIENT_SECRET ? { client_secret: env.OIDC_CLIENT_SECRET } : {}),
      code_verifier: verifier,
    }),
  });
  if (!resp.ok) throw new Error(`the OpenID Connect token endpoint answered HTTP ${resp.status}: ${(await resp.text()).slice(0, 200)}`);
  const claims = idTokenClaims((await resp.json()).id_token, { issuer: meta.issuer, clientId: env.OIDC_CLIENT_ID, nonce });
  const user = String(claims[env.OIDC_USER_CLAIM || "sub"] ?? "");
  if (!user || user.includes(":")) throw new Error(`the id_token has no usable ${env.OIDC_USER_CLAIM || "sub"} claim for the user id`);
  return { user, roles: roleList(claims[env.OIDC_ROLES_CLAIM || "roles"]) };
}
