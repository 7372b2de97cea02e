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
stamp="build/.built-$profile"
if [ -f "$stamp" ] && [ -f build/index.js ] &&
  [ -z "$(find src schema data Cargo.toml Cargo.lock .cargo -newer "$stamp" -print -quit)" ]; then
  echo "[build] up to date ($profile)" >&2
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
mv "$started" "$stamp"
