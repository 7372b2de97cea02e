#!/usr/bin/env bash
# `npm run bench`: builds the release Worker and prints its size and tools/call latency/throughput.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
# shellcheck source=/dev/null
source .toolchain/env
exec "$root/node_modules/.bin/node" bench/run.js
