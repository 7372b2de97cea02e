#!/usr/bin/env bash
# `npm run load`: builds the release Worker, then runs bench/load.js (load and durability against
# the Worker in workerd, or `wrangler dev` with LOAD_TARGET=wrangler, on 127.0.0.1; settings there).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
# shellcheck source=/dev/null
source .toolchain/env
exec "$root/node_modules/.bin/node" bench/load.js
