#!/usr/bin/env bash
# Builds the Worker (build/index.js + build/index_bg.wasm) with worker-build, offline.
# Usage: scripts/build.sh [--dev]   (release by default)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/toolchain.sh
# shellcheck source=/dev/null
source .toolchain/env
profile="--release"
[ "${1:-}" = "--dev" ] && profile="--dev"
worker-build "$profile"
