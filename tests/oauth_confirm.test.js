// Approving a change in the browser on an OAuth deployment (docs/oauth.md "Approving changes"): the
// user's MCP client holds their token, so the session page and POST /api/confirm/<id> are out of
// their reach; pending_confirmation.approveUrl leads to the companion's /confirm/<id> instead, where
// they sign in as they did for the client and approve or deny. The companion asks the Rust Worker
// over the service binding as the user of that sign-in; only the user who asked can decide.
// Headless Chromium (Debian's chromium) clicks through the development login; the production sign-in
// through an OpenID Connect provider stand-in is followed with fetch.
import { after, afterEach, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { MemoryProvider, consent, startOAuthStack, startOidcStandIn } from "./support/oauth.js";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const CI = Boolean(process.env.CI) && process.env.CI !== "false";
const missing = !existsSync(CHROMIUM);
const skip = missing && !CI ? `${CHROMIUM} is missing: install Debian's chromium package (scripts/toolchain.sh does) to run the approval page tests` : false;
const WAIT = { timeout: 30_000 };

const ALICE = "00000000-0000-4000-8000-000000000001";
const MARCUS = "00000000-0000-4000-8000-000000000006";
const HR_WRITE = ["hr-read", "hr-write"];

/** Signs `who` in through the whole OAuth flow with the SDK; returns the connected client. */
async function connect(mcpUrl, who) {
  const provider = new MemoryProvider((url) => consent(url, who));
  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  await assert.rejects(new Client({ name: "approve-test", version: "1" }).connect(first), UnauthorizedError);
  await first.finishAuth(provider.redirected.searchParams.get("code"));
  const client = new Client({ name: "approve-test", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
  return client;
}

/** Asks for a salary change through MCP; returns the pending_confirmation answer. */
async function askSalary(client, employee, salary) {
  const r = await client.callTool({ name: "update_salary", arguments: { employee_id: employee, new_salary: salary, reason: "approval page test" } });
  assert.equal(r.structuredContent?.status, "pending_confirmation", JSON.stringify(r));
  return r.structuredContent;
}

describe("approving a change on the companion's page (development login, Chromium)", { skip }, () => {
  let s, db, browser, profile, alice;
  before(async () => {
    if (missing) throw new Error(`CI: ${CHROMIUM} is missing; scripts/toolchain.sh installs Debian's chromium package`);
    s = await startOAuthStack();
    db = await s.mf.getD1Database("DB", "mcp-edge");
    alice = await connect(s.mcpUrl, { user: ALICE, roles: HR_WRITE });
    profile = mkdtempSync(join(tmpdir(), "mcp-edge-chromium-"));
    browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
  });
  after(async () => {
    await alice?.close();
    await browser?.close();
    await s?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });
  afterEach(async () => {
    // Each test signs in afresh: the page's sign-in is a cookie of this browser.
    await browser?.clearCookies();
    for (const p of browser?.pages() ?? []) await p.close();
  });
  const salaryOf = async (id) => (await db.prepare("SELECT salary_cents FROM hr_employees WHERE id = ?1").bind(id).first()).salary_cents;

  /** Opens `url` in a new tab and signs in with the development login as `user`. */
  async function signIn(url, user, roles) {
    const page = await browser.newPage();
    await page.goto(url);
    await page.fill('input[name="user"]', user);
    await page.fill('input[name="roles"]', roles.join(","));
    await page.click('button:has-text("Sign in")');
    // The change (#message), or why there is none (#result).
    await page.waitForSelector("#message, #result", WAIT);
    return page;
  }

  test("approveUrl leads to the companion's page, where the user who asked signs in and approves", async () => {
    const pending = await askSalary(alice, MARCUS, 123456);
    const approveUrl = new URL(pending.approveUrl, s.url);
    assert.equal(approveUrl.href, `${s.url}/confirm/${pending.confirmationId}`);
    const before = await salaryOf(MARCUS);
    const page = await signIn(approveUrl.href, ALICE, HR_WRITE);
    assert.match(await page.textContent("#message"), /salary/i, "the page shows what will change");
    assert.match(await page.textContent("table"), /123,?456/, "with the amounts");
    assert.equal(await salaryOf(MARCUS), before, "nothing changed before the approval");
    await page.click('button:has-text("Approve")');
    await page.waitForSelector("#result", WAIT);
    assert.match(await page.textContent("#result"), /Approved and done/);
    assert.equal(await salaryOf(MARCUS), 12345600, "the change was made");
    const state = await alice.callTool({ name: "get_confirmation", arguments: { confirmation_id: pending.confirmationId } });
    assert.equal(state.structuredContent.data.state, "executed", JSON.stringify(state));
  });

  test("Deny changes nothing", async () => {
    const before = await salaryOf(MARCUS);
    const pending = await askSalary(alice, MARCUS, 222222);
    const page = await signIn(new URL(pending.approveUrl, s.url).href, ALICE, HR_WRITE);
    await page.click('button:has-text("Deny")');
    await page.waitForSelector("#result", WAIT);
    assert.match(await page.textContent("#result"), /Denied: nothing was changed/);
    assert.equal(await salaryOf(MARCUS), before);
  });

  test("another user who signs in neither sees nor decides the change", async () => {
    const before = await salaryOf(MARCUS);
    const pending = await askSalary(alice, MARCUS, 333333);
    const url = new URL(pending.approveUrl, s.url).href;
    const page = await signIn(url, MARCUS, HR_WRITE);
    assert.match(await page.textContent("#result"), /no such confirmation/i);
    assert.doesNotMatch(await page.content(), /333,?333/, "nothing of the change is shown");
    // Nor can that user post a decision: their page has no form to decide with, and one they make
    // up is refused before the Rust Worker is asked (which would refuse another user too).
    const decided = await page.evaluate(async (to) => {
      const r = await fetch(to, { method: "POST", body: new URLSearchParams({ decision: "approve", form: "forged" }) });
      return { status: r.status, text: await r.text() };
    }, url);
    assert.equal(decided.status, 403, decided.text);
    assert.equal(await salaryOf(MARCUS), before);
  });

  test("without a sign-in, a decision is refused and nothing is shown", async () => {
    const pending = await askSalary(alice, MARCUS, 444444);
    const url = `${s.url}/confirm/${pending.confirmationId}`;
    const page = await (await fetch(url)).text();
    assert.match(page, /Development login/);
    assert.doesNotMatch(page, /444,?444/);
    const posted = await fetch(url, { method: "POST", body: new URLSearchParams({ decision: "approve" }) });
    assert.equal(posted.status, 401);
    assert.equal((await fetch(`${s.url}/confirm/not-an-id`)).status, 404);
  });
});

describe("approving a change on the companion's page (production sign-in)", () => {
  let oidc, s;
  before(async () => {
    oidc = await startOidcStandIn({ user: ALICE, roles: HR_WRITE });
    s = await startOAuthStack({ oauthVars: { DEV_LOGIN: "false", OIDC_ISSUER: oidc.issuer, OIDC_CLIENT_ID: oidc.clientId, OIDC_CLIENT_SECRET: oidc.clientSecret } });
  });
  after(async () => {
    await s?.stop();
    await oidc?.stop();
  });

  /** What a browser does: follows redirects by hand, keeping the cookies the companion sets. */
  async function browse(url, jar, init = {}) {
    for (let hop = 0; hop < 5; hop++) {
      const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
      const r = await fetch(url, { ...init, redirect: "manual", headers: { ...(init.headers ?? {}), ...(cookie && new URL(url).origin === s.url ? { cookie } : {}) } });
      for (const c of r.headers.getSetCookie()) {
        const [pair] = c.split(";");
        const [k, ...v] = pair.split("=");
        if (/Max-Age=0/.test(c)) jar.delete(k);
        else jar.set(k, v.join("="));
      }
      if (![302, 303].includes(r.status)) return r;
      url = new URL(r.headers.get("location"), url).href;
      init = {};
    }
    throw new Error("too many redirects");
  }

  test("the user signs in at their provider, then sees and approves the change", async () => {
    oidc.signIn({ user: ALICE, roles: HR_WRITE });
    const client = await connect(s.mcpUrl, {});
    try {
      const pending = await askSalary(client, MARCUS, 150000);
      const url = new URL(pending.approveUrl, s.url).href;
      const jar = new Map();
      const page = await browse(url, jar);
      const html = await page.text();
      assert.equal(page.status, 200, html);
      assert.ok(oidc.requests.filter((r) => r === "GET /authorize").length >= 2, "signed in at the provider for the page too");
      assert.match(html, /150,?000/);
      const form = html.match(/name="form" value="([^"]+)"/)?.[1];
      assert.ok(form, html);
      const done = await browse(url, jar, { method: "POST", body: new URLSearchParams({ form, decision: "approve" }) });
      assert.match(await done.text(), /Approved and done/);
    } finally {
      await client.close();
    }
  });

  test("a sign-in as another user at the provider cannot decide", async () => {
    oidc.signIn({ user: ALICE, roles: HR_WRITE });
    const client = await connect(s.mcpUrl, {});
    try {
      const pending = await askSalary(client, MARCUS, 160000);
      oidc.signIn({ user: MARCUS, roles: HR_WRITE });
      const page = await browse(new URL(pending.approveUrl, s.url).href, new Map());
      assert.equal(page.status, 404);
      assert.match(await page.text(), /no such confirmation/i);
    } finally {
      await client.close();
    }
  });
});
