// `npm run token -- --user 00000000-0000-4000-8000-000000000001 --roles hr-read,manager`: mints an
// HS256 bearer token for local development, signed with the JWT_SECRET that scripts/dev.sh keeps in
// .dev.vars (or $JWT_SECRET). The named sample users' ids are in docs/domain-data.md.
// Options: --user ID (the sub: an employee id, a UUID), --roles a,b (comma-separated), --ttl SECONDS
// (default 3600), --issuer ISS (default http://localhost:8787, the dev server's URL, which
// scripts/dev.sh makes its JWT_ISSUER), --audience AUD (default http://localhost:8787/mcp, the dev
// server's /mcp URL), --port N (sets the port of both defaults, for `npm run dev -- --port N`).
import { createHmac } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(fileURLToPath(import.meta.url), "..", "..");

/** Parses `--name value` pairs; every option needs a value. */
export function options(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i];
    if (!name.startsWith("--") || argv[i + 1] === undefined) throw new Error(`expected --option value, got ${name}`);
    out[name.slice(2)] = argv[i + 1];
  }
  return out;
}

/** The secret of local development: $JWT_SECRET, else JWT_SECRET in .dev.vars. */
export function devSecret() {
  if (process.env.JWT_SECRET) return process.env.JWT_SECRET;
  const file = join(root, ".dev.vars");
  const line = existsSync(file) && readFileSync(file, "utf8").split("\n").find((l) => l.startsWith("JWT_SECRET="));
  if (!line) throw new Error("no JWT_SECRET: run `npm run dev` once (it writes .dev.vars) or set $JWT_SECRET");
  return line.slice("JWT_SECRET=".length).trim().replace(/^"(.*)"$/, "$1");
}

const b64 = (v) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");

/** An HS256 JWT over `claims`. */
export function hs256(claims, secret) {
  const input = `${b64({ alg: "HS256", typ: "JWT" })}.${b64(claims)}`;
  return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const o = options(process.argv.slice(2));
    if (!o.user) throw new Error("--user is required (the employee id the token speaks for)");
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      sub: o.user,
      roles: (o.roles ?? "").split(",").map((r) => r.trim()).filter(Boolean),
      iss: o.issuer ?? `http://localhost:${o.port ?? 8787}`,
      aud: o.audience ?? `http://localhost:${o.port ?? 8787}/mcp`,
      iat: now,
      exp: now + Number(o.ttl ?? 3600),
    };
    console.log(hs256(claims, devSecret()));
  } catch (e) {
    console.error(`token: ${e.message}`);
    process.exit(2);
  }
}
