// The approval page of an OAuth deployment: `/confirm/<id>`, where `pending_confirmation.approveUrl`
// leads (the Rust Worker's APPROVE_URL = "/confirm", set by `npm run deploy` and `npm run dev:oauth`).
//
// A user of an OAuth deployment has no bearer token of their own (their MCP client holds it), so the
// session page and `POST /api/confirm/<id>` are out of their reach. Here they sign in instead, the
// way they signed in for the client (the upstream OpenID Connect provider; the development login
// locally), see what the change is, and approve or deny it. The page asks the Rust Worker over the
// service binding with an internal token whose `sub` and `roles` are those of that sign-in: nothing
// the browser sends chooses the user, and the Rust Worker still lets only the user who asked decide.
//
// The sign-in is kept for SESSION_SECONDS in OAUTH_KV under the hash of a random value held in a
// `__Host-` cookie (HttpOnly, SameSite=Lax); a decision also needs the form token stored with it, so
// no other site can make the browser decide.
import { escape, internalToken, oidcAuthorizeUrl, oidcSignIn, origin, random, roleList, sha256 } from "./shared.js";

/** How long a sign-in on the approval page lasts, in seconds. */
const SESSION_SECONDS = 15 * 60;
/** How long a sign-in at the upstream provider may take, in seconds. */
const SIGNIN_SECONDS = 10 * 60;
const SESSION_COOKIE = "__Host-mcp-edge-approver";
const SIGNIN_COOKIE = "__Host-mcp-edge-approver-signin";
/** A confirmation id: 32 hex digits (the Rust Worker's `is_confirmation_id`). */
const CONFIRMATION_ID = /^[0-9a-f]{32}$/;

const cookie = (name, value, maxAge) => `${name}=${value}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=${maxAge}`;

/** The value of cookie `name` in the request, or null. */
function readCookie(request, name) {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const [key, ...value] = part.trim().split("=");
    if (key === name) return value.join("=");
  }
  return null;
}

const html = (body, status = 200, headers = {}) =>
  new Response(
    `<!doctype html>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Approve a change · mcp-edge</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse}td,th{padding:.2rem .8rem .2rem 0;text-align:left;vertical-align:top}button{font-size:1rem;padding:.4rem 1.2rem;margin-right:.5rem}</style>
${body}`,
    { status, headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...headers } },
  );

/** The signed-in approver of this browser: `{ user, roles, form }`, or null. */
async function approver(request, env) {
  const token = readCookie(request, SESSION_COOKIE);
  if (!token) return null;
  return env.OAUTH_KV.get(`approver:${await sha256(token)}`, "json");
}

/** Signs `who` in on this browser; returns the `Set-Cookie` value. */
async function signIn(env, who) {
  const token = random();
  const record = { user: who.user, roles: who.roles, form: random() };
  await env.OAUTH_KV.put(`approver:${await sha256(token)}`, JSON.stringify(record), { expirationTtl: SESSION_SECONDS });
  return cookie(SESSION_COOKIE, token, SESSION_SECONDS);
}

/** `GET` or `POST` of the Rust Worker's `/api/confirm/<id>` as the signed-in user. */
async function rust(request, env, who, id, decision) {
  const base = origin(request, env);
  const token = await internalToken(env, { issuer: env.TOKEN_ISSUER || base, audience: `${base}/mcp`, user: who.user, roles: who.roles });
  const init = decision === undefined
    ? { method: "GET", headers: { authorization: `Bearer ${token}` } }
    : { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ approved: decision }) };
  const resp = await env.MCP.fetch(new Request(`${base}/api/confirm/${id}`, init));
  const body = await resp.json().catch(() => ({}));
  return { status: resp.status, body };
}

/** The development login's form (no password; refused on any host that is not this machine). */
const devLoginPage = (id) =>
  html(`<h1>Sign in to approve a change</h1>
<form method="post" action="/confirm/${id}">
  <input type="hidden" name="step" value="sign-in">
  <fieldset><legend>Development login (never in production)</legend>
  <label>User id (an employee id, docs/domain-data.md) <input name="user" required></label><br>
  <label>Roles (comma-separated) <input name="roles" value=""></label></fieldset>
  <p><button>Sign in</button></p>
</form>`);

/** A value of the change for people: amounts as they are, lists and objects as JSON. */
const shown = (value) => escape(value !== null && typeof value === "object" ? JSON.stringify(value) : String(value));

/** The change and, while it waits, the Approve and Deny buttons. */
function changePage(who, data) {
  const rows = Object.entries(data.confirmationData ?? {})
    .filter(([key]) => key !== "expiresAt")
    .map(([key, value]) => `<tr><th>${escape(key)}</th><td>${shown(value)}</td></tr>`)
    .join("");
  const waiting = data.state === "pending";
  const state = waiting
    ? `<p>It waits for your decision until <time>${escape(data.expiresAt)}</time>.</p>
<form method="post" action="/confirm/${escape(data.confirmationId)}">
  <input type="hidden" name="form" value="${escape(who.form)}">
  <button name="decision" value="approve">Approve</button> <button name="decision" value="deny">Deny</button>
</form>`
    : `<p id="state">This change is ${escape(data.state)}: there is nothing to decide.</p>`;
  return html(`<h1>Approve a change?</h1>
<p id="message">${escape(data.message)}</p>
<table>${rows}</table>
${state}
<p><small>Signed in as ${escape(who.user)}.</small></p>`);
}

/** The page for an answer of the Rust Worker that is not the change: no such change, a decision
 * refused, or an approved change that could not be made (its domain error, HTTP 200). */
const answerPage = (status, body) =>
  html(`<h1>${status === 200 ? "Approved, but not done" : "Nothing was decided"}</h1>
<p id="result">${escape(body?.data?.message ?? body?.message ?? `The server answered HTTP ${status}.`)}</p>
${body?.suggestedAction ? `<p>${escape(body.suggestedAction)}</p>` : ""}`, status === 200 ? 200 : status >= 500 ? 502 : status);

/**
 * The approval page's routes: `GET` and `POST /confirm/<id>`, and `GET /callback` when it brings
 * back this browser's sign-in for the page (the OAuth flow's own sign-in has no such cookie).
 * Returns null for every other request.
 */
export async function serveApproval(request, env, devLogin) {
  const url = new URL(request.url);
  if (url.pathname === "/callback") {
    const state = readCookie(request, SIGNIN_COOKIE);
    if (!state || state !== url.searchParams.get("state")) return null;
    return finishSignIn(request, env, url, state);
  }
  const id = url.pathname.match(/^\/confirm\/([^/]+)$/)?.[1];
  if (id === undefined) return null;
  if (!CONFIRMATION_ID.test(id)) return html(`<h1>No such change</h1><p id="result">This is not a confirmation link: ask for the change again from your MCP client.</p>`, 404);
  if (request.method === "GET") {
    const who = await approver(request, env);
    if (!who) return devLogin ? devLoginPage(id) : startSignIn(request, env, id);
    const { status, body } = await rust(request, env, who, id);
    return status === 200 ? changePage(who, body.data) : answerPage(status, body);
  }
  if (request.method !== "POST") return new Response("GET or POST /confirm/<id>", { status: 405, headers: { allow: "GET, POST" } });
  // A browser names the page's origin on a form POST; another origin is another site.
  const from = request.headers.get("origin");
  if (from && from !== origin(request, env) && from !== url.origin) return html(`<h1>Refused</h1><p id="result">A decision is made on this page only.</p>`, 403);
  const form = await request.formData();
  if (form.get("step") === "sign-in") {
    if (!devLogin) return html(`<h1>Refused</h1><p id="result">Sign in with your organisation's account: open the link again.</p>`, 403);
    const user = String(form.get("user") ?? "").trim();
    if (!user || user.includes(":")) return html(`<h1>Sign in</h1><p id="result">The development login needs a user id (an employee id, without ':').</p>`, 400);
    const session = await signIn(env, { user, roles: roleList(form.get("roles")) });
    return new Response(null, { status: 303, headers: { location: `/confirm/${id}`, "set-cookie": session } });
  }
  const who = await approver(request, env);
  if (!who) return html(`<h1>Signed out</h1><p id="result">Your sign-in on this page ended: <a href="/confirm/${id}">open the change again</a>.</p>`, 401);
  if (form.get("form") !== who.form) return html(`<h1>Refused</h1><p id="result">This form is not from your sign-in: <a href="/confirm/${id}">open the change again</a>.</p>`, 403);
  const decision = form.get("decision");
  if (decision !== "approve" && decision !== "deny") return html(`<h1>Nothing was decided</h1><p id="result">Press Approve or Deny.</p>`, 400);
  const { status, body } = await rust(request, env, who, id, decision === "approve");
  if (status === 200 && body.status === "success" && decision === "approve") {
    return html(`<h1>Approved</h1><p id="result">Approved and done.</p><p>${escape(body.summary ?? body.data?.message ?? "")}</p>`);
  }
  if (status === 200 && decision === "deny") return html(`<h1>Denied</h1><p id="result">Denied: nothing was changed.</p>`);
  return answerPage(status, body);
}

/** Sends the browser to the upstream provider to sign in for approval page `id`. */
async function startSignIn(request, env, id) {
  const state = random();
  const verifier = random();
  const nonce = random();
  const location = await oidcAuthorizeUrl(request, env, { state, nonce, verifier });
  await env.OAUTH_KV.put(`approver-signin:${await sha256(state)}`, JSON.stringify({ id, verifier, nonce }), { expirationTtl: SIGNIN_SECONDS });
  return new Response(null, { status: 302, headers: { location, "set-cookie": cookie(SIGNIN_COOKIE, state, SIGNIN_SECONDS) } });
}

/** `/callback` of the page's sign-in: who signed in, then back to the change. */
async function finishSignIn(request, env, url, state) {
  const key = `approver-signin:${await sha256(state)}`;
  const pending = await env.OAUTH_KV.get(key, "json");
  await env.OAUTH_KV.delete(key);
  const headers = new Headers({ "set-cookie": cookie(SIGNIN_COOKIE, "", 0) });
  if (!pending) return html(`<h1>Sign-in expired</h1><p id="result">Open the approval link again.</p>`, 400, Object.fromEntries(headers));
  if (url.searchParams.get("error") || !url.searchParams.get("code")) {
    return html(`<h1>Not signed in</h1><p id="result">The sign-in was cancelled: nothing was decided.</p>`, 400, Object.fromEntries(headers));
  }
  const who = await oidcSignIn(request, env, { code: url.searchParams.get("code"), verifier: pending.verifier, nonce: pending.nonce });
  headers.append("set-cookie", await signIn(env, who));
  headers.set("location", `/confirm/${pending.id}`);
  return new Response(null, { status: 303, headers });
}
