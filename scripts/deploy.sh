#!/usr/bin/env bash
# `npm run deploy`: builds the Worker (release), makes sure its D1 database exists, applies the D1
# migrations to it, then deploys. Migrations go first, so code that needs a new table is never live
# before the table. The database is found by its name in wrangler.toml ([[d1_databases]]
# database_name) or created on the first deploy; the KV namespace is provisioned by `wrangler deploy`
# itself on the first deploy (a binding without an id) and kept on later ones. No ids to paste.
# Then it deploys the OAuth companion (oauth/, docs/oauth.md) in front of it: on the first deploy it
# makes the ES256 key pair they share and uploads each half as a secret with its Worker
# (INTERNAL_JWT_KEY to the companion, JWKS to the Rust Worker); later deploys keep them.
# `npm run deploy -- --no-oauth` deploys the Rust Worker alone, for tokens of an identity provider you
# run (JWT_ISSUER and JWKS_URL in wrangler.toml, docs/identity.md).
# `npm run deploy -- --dry-run [--outdir DIR]` builds the deploy bundle offline without publishing.
# Needs `npx wrangler login` (or CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID): docs/deploying.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dry_run=false
oauth=true
outdir="dist"
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=true; shift ;;
    --outdir) outdir="$2"; shift 2 ;;
    --no-oauth) oauth=false; shift ;;
    *) echo "deploy.sh: unknown option $1 (use --dry-run, --outdir DIR, --no-oauth)" >&2; exit 2 ;;
  esac
done
bash scripts/build.sh
# shellcheck source=/dev/null
source .toolchain/env
node="$root/node_modules/.bin/node"
wrangler=("$node" node_modules/wrangler/bin/wrangler.js)
if $dry_run; then
  exec "${wrangler[@]}" deploy --dry-run --outdir "$outdir"
fi

say() { printf '[deploy] %s\n' "$*" >&2; }

# The production binding's database name: the top-level [[d1_databases]], before any [env.*] table.
db_name="$(awk '/^\[env\./ { exit } /^database_name *=/ { gsub(/^[^=]*= *"|".*$/, ""); print; exit }' wrangler.toml)"
if [ -z "$db_name" ]; then
  say "wrangler.toml has no top-level [[d1_databases]] database_name for the DB binding"
  exit 1
fi
# An id in wrangler.toml names the database outright; otherwise look it up by name.
if ! awk '/^\[env\./ { exit } /^database_id *=/ { found = 1 } END { exit !found }' wrangler.toml; then
  databases="$("${wrangler[@]}" d1 list --json)"
  if ! DB_NAME="$db_name" "$node" -e '
    const list = JSON.parse(require("fs").readFileSync(0, "utf8"));
    process.exit(list.some((d) => d.name === process.env.DB_NAME) ? 0 : 1);' <<<"$databases"; then
    say "first deploy: creating the D1 database $db_name"
    "${wrangler[@]}" d1 create "$db_name"
  fi
fi
# --env= is the top level (production): wrangler.toml also defines the local-only dev and conformance.
say "applying D1 migrations to $db_name"
"${wrangler[@]}" d1 migrations apply DB --remote --env=
if ! $oauth; then
  say "deploying the Worker (--no-oauth: tokens from your identity provider, docs/identity.md)"
  exec "${wrangler[@]}" deploy --env=
fi

# Secrets made once, on the first OAuth deploy, and kept by later ones (a deploy uploads only the
# missing ones): the key pair the companion and the Rust Worker share (INTERNAL_JWT_KEY there, JWKS
# here), and the Rust Worker's HMAC keys of pagination cursors and paused requests, which would
# otherwise derive from a JWT_SECRET an OAuth deployment does not have.
secret_names() { # the names of a Worker's secrets, one a line; $@ = wrangler config options
  "${wrangler[@]}" secret list --format json "$@" 2>/dev/null |
    "$node" -e '
      let list = [];
      try { list = JSON.parse(require("fs").readFileSync(0, "utf8")); } catch {}
      for (const s of list) console.log(s.name);'
}
secrets="$(mktemp -d)"
trap 'rm -rf "$secrets"' EXIT
RUST_SECRETS="$(secret_names --env=)" OAUTH_SECRETS="$(secret_names -c oauth/wrangler.toml --env=)" \
  "$node" --input-type=module -e '
    import { randomBytes } from "node:crypto";
    import { writeFileSync } from "node:fs";
    import { internalKeys } from "./scripts/oauth-keys.js";
    const dir = process.argv[1];
    const rust = {};
    const oauth = {};
    const has = (list, name) => process.env[list].split("\n").includes(name);
    // Both halves of the key pair or neither: one Worker keeping an old half would refuse the other.
    if (!has("RUST_SECRETS", "JWKS") || !has("OAUTH_SECRETS", "INTERNAL_JWT_KEY")) {
      const { privateJwk, jwks } = await internalKeys();
      rust.JWKS = jwks;
      oauth.INTERNAL_JWT_KEY = privateJwk;
    }
    for (const name of ["CURSOR_SECRET", "REQUEST_STATE_SECRET"]) {
      if (!has("RUST_SECRETS", name)) rust[name] = randomBytes(32).toString("hex");
    }
    writeFileSync(`${dir}/rust.json`, JSON.stringify(rust), { mode: 0o600 });
    writeFileSync(`${dir}/oauth.json`, JSON.stringify(oauth), { mode: 0o600 });
    console.error(`[deploy] secrets to create: ${[...Object.keys(rust), ...Object.keys(oauth)].join(", ") || "none"}`);
  ' "$secrets"
if ! grep -Eq '^OIDC_ISSUER = "https?://[^"]+"' oauth/wrangler.toml; then
  say "note: OIDC_ISSUER in oauth/wrangler.toml is empty, so nobody can sign in yet: set it and"
  say "OIDC_CLIENT_ID there, deploy again, and store the client secret with"
  say "npx wrangler secret put OIDC_CLIENT_SECRET -c oauth/wrangler.toml (docs/deploying.md)"
fi
# approveUrl leads to the companion's approval page, where the user signs in (docs/oauth.md).
say "deploying the Worker"
"${wrangler[@]}" deploy --env= --secrets-file "$secrets/rust.json" --var APPROVE_URL:/confirm
say "deploying the OAuth server (oauth/) in front of it"
"${wrangler[@]}" deploy -c oauth/wrangler.toml --env= --secrets-file "$secrets/oauth.json"
say "done: connect MCP clients to the OAuth server's URL above, path /mcp (docs/oauth.md)"
