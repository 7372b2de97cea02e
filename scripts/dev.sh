#!/usr/bin/env bash
# `npm run dev`: applies the D1 migrations and loads the sample company (sample-data/domain.sql, once)
# into the local database, then serves /mcp on http://localhost:8787 with local D1, KV and Durable
# Objects. wrangler builds the Worker with the environment's [build] command: the debug profile for
# `dev`, rebuilt and reloaded on every change in src/, schema/ and data/ (wrangler.toml [env.dev.build]).
# Options: --env dev|conformance (default dev), --port N (default 8787, or $PORT),
#          --persist-to DIR (local state directory, default .wrangler/state).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
env_name=dev
port="${PORT:-8787}"
persist=()
while [ $# -gt 0 ]; do
  case "$1" in
    --env) env_name="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --persist-to) persist=(--persist-to "$2"); shift 2 ;;
    *) echo "dev.sh: unknown option $1 (use --env NAME, --port N, --persist-to DIR)" >&2; exit 2 ;;
  esac
done
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
exec "$node" node_modules/wrangler/bin/wrangler.js dev --env "$env_name" --ip 127.0.0.1 --port "$port" \
  ${persist[@]+"${persist[@]}"} --show-interactive-dev-session=false
