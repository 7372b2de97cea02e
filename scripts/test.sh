#!/usr/bin/env bash
# `npm test`: lint, native unit tests of the pure core, the wasm build, then the integration tests
# (node's test runner: Miniflare/workerd with real D1, KV and Durable Objects, the official MCP SDK
# client, and the official conformance suite against `wrangler dev --env conformance`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/toolchain.sh

# Native checks use the machine's default cargo (rustup's, with rustfmt and clippy).
cargo fmt --check
cargo clippy --quiet --all-targets -- -D warnings
cargo test --quiet

bash scripts/build.sh
# shellcheck source=/dev/null
source .toolchain/env
node="$root/node_modules/.bin/node"
# Every file gets 10 minutes, except the bench smoke test: it builds criterion and the peers'
# bundles, which alone can take longer than that on a loaded 2-core machine. Both runs happen
# even when the first fails, and the script fails if either did.
others=()
for file in tests/*.test.js; do
  [ "$file" = tests/bench.test.js ] || others+=("$file")
done
status=0
"$node" --test --test-concurrency=1 --test-timeout=600000 "${others[@]}" || status=$?
"$node" --test --test-timeout=2700000 tests/bench.test.js || status=$?
exit "$status"
