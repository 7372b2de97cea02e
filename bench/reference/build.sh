#!/usr/bin/env bash
# Bundles the reference server (bench/reference/src) into one ES module for workerd:
# target/reference/index.js, minified as `wrangler deploy` would.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
node_modules/.bin/esbuild bench/reference/src/index.ts --bundle --format=esm --platform=browser \
  --conditions=workerd,worker --target=es2022 --minify --log-level=warning \
  --outfile=target/reference/index.js
