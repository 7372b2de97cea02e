#!/usr/bin/env bash
# Builds the Worker under several release-profile variants and prints the wasm size of each (raw and
# gzip), to check the choice in Cargo.toml [profile.release]. Slow (one full build per variant);
# not part of `npm test`. Usage: bash bench/profiles.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/toolchain.sh >/dev/null
# shellcheck source=/dev/null
source .toolchain/env
out="$root/target/profiles"
mkdir -p "$out"
# name | opt-level | lto | extra worker-build flag
variants=(
  "chosen:z:true:"
  "opt-s:s:true:"
  "opt-3:3:true:"
  "no-lto:z:false:"
  "no-wasm-opt:z:true:--no-opt"
)
printf '%-12s %-6s %-6s %-10s %12s %12s\n' variant opt lto wasm-opt raw gzip
for v in "${variants[@]}"; do
  IFS=: read -r name opt lto flag <<<"$v"
  CARGO_PROFILE_RELEASE_OPT_LEVEL="$opt" CARGO_PROFILE_RELEASE_LTO="$lto" \
    worker-build --release ${flag:+"$flag"} --out-dir "$out/$name" >/dev/null 2>&1
  wasm="$out/$name/index_bg.wasm"
  printf '%-12s %-6s %-6s %-10s %10s B %10s B\n' "$name" "$opt" "$lto" "${flag:-yes}" \
    "$(wc -c <"$wasm")" "$(gzip -9c "$wasm" | wc -c)"
done
