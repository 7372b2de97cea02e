#!/usr/bin/env bash
# `npm run deploy`: builds the Worker, applies the D1 migrations to the remote database, and deploys.
# `npm run deploy -- --dry-run [--outdir DIR]` builds the deploy bundle offline without publishing.
# Needs `npx wrangler login` (or CLOUDFLARE_API_TOKEN) and the D1/KV ids in wrangler.toml: README "Deploying".
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
wrangler=("$root/node_modules/.bin/node" node_modules/wrangler/bin/wrangler.js)
if $dry_run; then
  exec "${wrangler[@]}" deploy --dry-run --outdir "$outdir"
fi
if grep -Eq '^database_id = "0{8}-' wrangler.toml || grep -Eq '^id = "0{32}"' wrangler.toml; then
  cat >&2 <<'MSG'
deploy.sh: wrangler.toml still has placeholder D1/KV ids. Create them once and paste the ids it prints:
  npx wrangler d1 create mcp-edge            -> [[d1_databases]] database_id
  npx wrangler kv namespace create CACHE     -> [[kv_namespaces]] id
MSG
  exit 1
fi
"${wrangler[@]}" d1 migrations apply DB --remote
exec "${wrangler[@]}" deploy
