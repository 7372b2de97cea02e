#!/usr/bin/env bash
# `npm run bench`: builds the release Worker, the TypeScript reference server (bench/reference,
# bundled with esbuild into target/reference), the `agents` anchors `McpAgent` and `createMcpHandler`
# (bench/anchors, bundled by wrangler into target/anchors) and the Rust ceilings (bench/anchors/ceiling,
# built once into target/ceiling), then prints the size report (bench/size.js), start times, the
# side-by-side tables (2025 and 2026-07-28 lanes), the ceilings, the cost per call, the seed targets
# and the native micro-benchmarks (bench/run.js; settings there).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
# shellcheck source=/dev/null
source .toolchain/env
bash bench/reference/build.sh
bash bench/anchors/build.sh
# The size report (sections, largest crates and functions, data); run.js prints start times.
"$root/node_modules/.bin/node" bench/size.js
exec "$root/node_modules/.bin/node" bench/run.js
