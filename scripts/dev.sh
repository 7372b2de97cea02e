#!/usr/bin/env bash
# `npm run dev`: applies the D1 migrations and loads the sample company (sample-data/domain.sql, once)
# into the local database, then serves /mcp on http://localhost:8787 with local D1, KV and Durable
# Objects. wrangler builds the Worker with the environment's [build] command: the debug profile for
# `dev`, rebuilt and reloaded on every change in src/, schema/ and data/ (wrangler.toml [env.dev.build]).
# The dev server's JWT_ISSUER is its own URL, http://localhost:<port>: OAuth clients (mcp-remote)
# read it from the protected resource metadata and need a URL there.
# `npm run dev:oauth` (--oauth) serves the OAuth companion (oauth/, docs/oauth.md) on the port
# instead, with its development login, in front of the same dev Worker (one wrangler session, joined
# by the service binding MCP); the key pair they share is made once into .dev.vars and oauth/.dev.vars.
# Options: --env dev|conformance (default dev), --port N (default 8787, or $PORT),
#          --persist-to DIR (local state directory, default .wrangler/state), --oauth.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
env_name=dev
port="${PORT:-8787}"
persist=()
oauth=false
while [ $# -gt 0 ]; do
  case "$1" in
    --env) env_name="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --persist-to) persist=(--persist-to "$2"); shift 2 ;;
    --oauth) oauth=true; shift ;;
    *) echo "dev.sh: unknown option $1 (use --env NAME, --port N, --persist-to DIR, --oauth)" >&2; exit 2 ;;
  esac
done
if $oauth && [ "$env_name" != dev ]; then
  echo "dev.sh: --oauth serves the dev environment only (oauth/wrangler.toml has no $env_name)" >&2
  exit 2
fi
bash scripts/toolchain.sh
# shellcheck source=/dev/null
source .toolchain/env
# A random HS256 secret for local tokens (`npm run token`), kept across runs; wrangler dev reads
# .dev.vars as secrets (.dev.vars.example lists the others). Never committed.
if ! grep -qs '^JWT_SECRET=' .dev.vars; then
  echo "JWT_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')" >> .dev.vars
fi
node="$root/node_modules/.bin/node"
# "${persist[@]+...}": macOS's bash 3.2 calls an empty array unbound under `set -u`.
"$node" node_modules/wrangler/bin/wrangler.js d1 migrations apply DB --local --env "$env_name" ${persist[@]+"${persist[@]}"}
"$node" scripts/sample-data.js --local --env "$env_name" ${persist[@]+"${persist[@]}"}
issuer="http://localhost:$port"
if $oauth; then
  if ! grep -qs '^JWKS=' .dev.vars || ! grep -qs '^INTERNAL_JWT_KEY=' oauth/.dev.vars; then
    keys="$("$node" scripts/oauth-keys.js)"
    sed -i.bak '/^JWKS=/d' .dev.vars && rm -f .dev.vars.bak
    grep '^JWKS=' <<<"$keys" >> .dev.vars
    grep '^INTERNAL_JWT_KEY=' <<<"$keys" > oauth/.dev.vars
  fi
  echo "[dev] OAuth: connect MCP clients to $issuer/mcp; sign in with the development login" >&2
  exec "$node" node_modules/wrangler/bin/wrangler.js dev -c oauth/wrangler.toml -c wrangler.toml --env "$env_name" \
    --ip 127.0.0.1 --port "$port" --var "PUBLIC_URL:$issuer" \
    ${persist[@]+"${persist[@]}"} --show-interactive-dev-session=false
fi
# Only the dev environment names an issuer; the conformance fixtures keep theirs unset. Without the
# companion there is no approval page of its own: approveUrl is the session page (APPROVE_URL empty).
issuer_var=()
[ "$env_name" = dev ] && issuer_var=(--var "JWT_ISSUER:$issuer" --var "APPROVE_URL:")
exec "$node" node_modules/wrangler/bin/wrangler.js dev --env "$env_name" --ip 127.0.0.1 --port "$port" \
  ${issuer_var[@]+"${issuer_var[@]}"} ${persist[@]+"${persist[@]}"} --show-interactive-dev-session=false
