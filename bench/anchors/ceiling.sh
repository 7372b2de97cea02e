#!/usr/bin/env bash
# Builds the ceilings' Worker (bench/anchors/ceiling, release, the Worker's own profile) offline
# with the project's toolchain into target/ceiling/{index.js,index_bg.wasm}. Skipped when the build
# there is newer than the crate's sources, so `npm run bench` builds it once.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
crate="$root/bench/anchors/ceiling"
out="$root/target/ceiling"
if [ -f "$out/.built" ] && [ -z "$(find "$crate/src" "$crate/Cargo.toml" "$crate/Cargo.lock" "$root/.cargo" -newer "$out/.built" -print -quit)" ]; then
  exit 0
fi
bash scripts/toolchain.sh
# shellcheck source=/dev/null
source .toolchain/env
echo "[ceiling] building the ceilings' Worker (release, once: a few minutes)" >&2
rm -f "$out/.built"
started="$(mktemp)"
# worker-build writes its output inside the crate by default; --out-dir is relative to the crate.
(cd "$crate" && CARGO_NET_OFFLINE=true worker-build --release --out-dir ../../../target/ceiling)
mv "$started" "$out/.built"
