#!/usr/bin/env bash
# Builds the ceilings' Worker (bench/anchors/ceiling) offline with the project's toolchain into
# target/ceiling/<profile>/{index.js,index_bg.wasm}, in the profile of the Worker in build/ (release
# when build/ holds a release build, else dev), so a lane and its ceiling are compiled alike.
# Skipped when that build is newer than the crate's sources, so `npm run bench` builds it once.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
profile=dev
[ -f build/.built-release ] && profile=release
crate="$root/bench/anchors/ceiling"
out="$root/target/ceiling/$profile"
if [ -f "$out/.built" ] && [ -z "$(find "$crate/src" "$crate/Cargo.toml" "$crate/Cargo.lock" "$root/.cargo" -newer "$out/.built" -print -quit)" ]; then
  exit 0
fi
bash scripts/toolchain.sh
# shellcheck source=/dev/null
source .toolchain/env
echo "[ceiling] building the ceilings' Worker ($profile, once: a minute or two)" >&2
rm -f "$out/.built"
started="$(mktemp)"
# worker-build writes its output inside the crate by default; --out-dir is relative to the crate.
(cd "$crate" && CARGO_NET_OFFLINE=true worker-build "--$profile" --out-dir "../../../target/ceiling/$profile")
mv "$started" "$out/.built"
