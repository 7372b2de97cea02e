#!/usr/bin/env bash
# Builds the Worker (build/index.js + build/index_bg.wasm) with worker-build, offline.
# Usage: scripts/build.sh [--dev]   (release by default). Skips the build when nothing it reads
# changed since the last one of the same profile (wrangler runs this as its [build] command too).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/toolchain.sh
# shellcheck source=/dev/null
source .toolchain/env
profile="release"
[ "${1:-}" = "--dev" ] && profile="dev"
up_to_date() { # $1 = a profile whose build is in build/ and newer than everything it reads
  local stamp="build/.built-$1"
  [ -f "$stamp" ] && [ -f build/index.js ] &&
    [ -z "$(find src schema data Cargo.toml Cargo.lock .cargo -newer "$stamp" -print -quit)" ]
}
stamp="build/.built-$profile"
if up_to_date "$profile"; then
  echo "[build] up to date ($profile)" >&2
  exit 0
fi
# A debug build is asked for speed of rebuilding; an up-to-date release build of the same sources
# serves as well (so `npm run dev` after `npm test`, or a wrangler dev started by the load bench,
# does not spend minutes on a debug build of code that is already built).
if [ "$profile" = dev ] && up_to_date release; then
  echo "[build] up to date (the release build serves)" >&2
  exit 0
fi
rm -f build/.built-*
# The stamp carries the time the build started: a file edited while it runs is newer, so the
# next build does not skip it.
started="$(mktemp)"
if [ "$profile" = release ]; then
  echo "[build] building the Worker (release: optimized and LTO, a few minutes)" >&2
else
  echo "[build] building the Worker (debug: several minutes the first time, then well under a minute per change)" >&2
fi
worker-build "--$profile"
if [ "$profile" = release ]; then
  # wasm-bindgen's output keeps the `name` section (function names: ~0.2 MiB gzipped). The shipped
  # wasm goes without it; the symbolized copy stays in target/ for bench/size.js and for reading a
  # stack trace (docs/decisions.md, "The name section"). This wasm-opt run strips custom sections
  # only: no optimization pass (Cargo.toml, `wasm-opt = false`; docs/decisions.md, "No wasm-opt").
  mkdir -p "$CARGO_TARGET_DIR"
  cp build/index_bg.wasm "$CARGO_TARGET_DIR/index_bg.symbols.wasm"
  features=(--enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int
    --enable-bulk-memory --enable-multivalue --enable-reference-types --enable-exception-handling)
  "$WASM_OPT_BIN" "$CARGO_TARGET_DIR/index_bg.symbols.wasm" -o build/index_bg.wasm "${features[@]}" \
    --strip-debug --strip-producers
fi
mv "$started" "$stamp"
