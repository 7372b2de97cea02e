#!/usr/bin/env bash
# Bundles the `agents` anchors (bench/anchors/src) as `wrangler deploy` would, without deploying:
# target/anchors/mcp-agent/mcp-agent.js and target/anchors/create-mcp-handler/create-mcp-handler.js
# (nodejs_compat, minified); then the Rust ceilings (bench/anchors/ceiling.sh, built once).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
for anchor in mcp-agent create-mcp-handler; do
  WRANGLER_LOG=warn WRANGLER_SEND_METRICS=false node_modules/.bin/node node_modules/.bin/wrangler deploy --dry-run --minify \
    --config "bench/anchors/$anchor.wrangler.jsonc" --outdir "$root/target/anchors/$anchor"
done
bash bench/anchors/ceiling.sh
