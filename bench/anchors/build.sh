#!/usr/bin/env bash
# Bundles the `agents` anchors (bench/anchors/src) as `wrangler deploy` would, without deploying:
# target/anchors/mcp-agent/mcp-agent.js (nodejs_compat, minified).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
WRANGLER_LOG=warn WRANGLER_SEND_METRICS=false node_modules/.bin/node node_modules/.bin/wrangler deploy --dry-run --minify \
  --config bench/anchors/mcp-agent.wrangler.jsonc --outdir "$root/target/anchors/mcp-agent"
