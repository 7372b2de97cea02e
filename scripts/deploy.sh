#!/usr/bin/env bash
# `npm run deploy`: builds the Worker (release), makes sure its D1 database exists, applies the D1
# migrations to it, then deploys. Migrations go first, so code that needs a new table is never live
# before the table. The database is found by its name in wrangler.toml ([[d1_databases]]
# database_name) or created on the first deploy; the KV namespace is provisioned by `wrangler deploy`
# itself on the first deploy (a binding without an id) and kept on later ones. No ids to paste.
# `npm run deploy -- --dry-run [--outdir DIR]` builds the deploy bundle offline without publishing.
# Needs `npx wrangler login` (or CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID): README "Deploying".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dry_run=false
outdir="dist"
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=true; shift ;;
    --outdir) outdir="$2"; shift 2 ;;
    *) echo "deploy.sh: unknown option $1 (use --dry-run, --outdir DIR)" >&2; exit 2 ;;
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
say "deploying the Worker"
exec "${wrangler[@]}" deploy --env=
