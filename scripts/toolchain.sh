#!/usr/bin/env bash
# Installs everything the wasm build needs, idempotently, from package registries only, then writes
# `.toolchain/env` (sourced by scripts/build.sh). Every step is skipped when its result is already there.
#
# Order of preference for the wasm32-unknown-unknown standard library:
#   1. the current rustc already has it (a normal rustup install with the target added);
#   2. `rustup target add` answers within a short timeout (an online developer machine; never tried
#      when CI is set, because CI must build from the package registries alone);
#   3. Debian's rustc-web toolchain, with the wasm32 std built from rust-web-src (-Zbuild-std) for size,
#      into a sysroot under $state (see sized_std), once per rustc version and std settings. This is the
#      route on machines that reach only the package registries, where rustup components cannot be
#      downloaded. Routes 1 and 2 link rustup's prebuilt std, compiled for speed: the same code gives a
#      larger wasm there (docs/decisions.md, "A standard library built for size").
# worker-build would otherwise download wasm-bindgen, wasm-opt and esbuild from GitHub; we install them
# from crates.io and npm and point worker-build at them with WASM_BINDGEN_BIN, WASM_OPT_BIN, ESBUILD_BIN.
#
# `scripts/toolchain.sh --route` makes the choice above (installing what that route needs), prints it
# and stops. tests/toolchain.test.js runs it with stub rustc, rustup, apt-get and dpkg-query, pointing
# TOOLCHAIN_STATE (default .toolchain), TOOLCHAIN_DEBIAN_BIN (default /usr/bin: Debian's rustc and
# cargo) and TOOLCHAIN_RUSTUP_TIMEOUT (seconds, default 30) at its own.
# Portable to macOS: bash 3.2, no GNU coreutils.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
state="${TOOLCHAIN_STATE:-$root/.toolchain}"
debian_bin="${TOOLCHAIN_DEBIAN_BIN:-/usr/bin}"
mkdir -p "$state/bin"

WORKER_BUILD_VERSION="0.8.7"
TARGET="wasm32-unknown-unknown"
# Debian's rustc-web and the lld that rust-lld points to; the std sources build the wasm32 std.
DEBIAN_PACKAGES=(rustc-web cargo-web rust-web-src lld-22)

say() { printf '[toolchain] %s\n' "$*" >&2; }

# Runs "$@" for at most $1 seconds. perl's alarm, because macOS has no GNU `timeout` (perl ships with
# macOS and is essential on Debian); exec keeps the pid, so the alarm ends the command itself.
with_timeout() {
  local secs="$1"
  shift
  perl -e 'alarm shift; exec @ARGV or exit 127' "$secs" "$@"
}

has_wasm_std() { # $1 = rustc binary
  local dir
  dir="$("$1" --print target-libdir --target "$TARGET" 2>/dev/null)" || return 1
  compgen -G "$dir/libstd-*.rlib" >/dev/null
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    say "need root for: $*"; return 1; fi
}

debian_install() { # the Debian packages named that are not installed yet
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian packages: ${missing[*]} (apt-get; a minute or two, once)"
    as_root apt-get update -q >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  fi
}

debian_std() {
  debian_install "${DEBIAN_PACKAGES[@]}"
}

# The wasm32 std of the Debian route, built for size: at the release profile's settings (opt-level
# "z", one codegen unit, panic = "abort") with std's `optimize_for_size` feature (core's smaller sort
# and formatting paths), because a prebuilt std is compiled at opt-level 3 and LTO cannot undo its
# inlining (docs/decisions.md, "A standard library built for size"). It goes into a sysroot of this
# checkout's own, $state/wasm-std-<checksum of the settings and of rustc's version>, never into
# Debian's: the system's rustc-web stays as Debian ships it for every other project, and a change of
# these settings or a new rustc-web gives a new directory, which is rebuilt, while the old one is
# removed. The build reads rust-web-src only: nothing is downloaded.
STD_PROFILE='opt-level = "z"
codegen-units = 1
panic = "abort"'
STD_CRATES="std,panic_abort"
STD_FEATURES="optimize_for_size"
std_sysroot() { # the sysroot directory for today's settings and Debian's rustc
  local sum
  sum="$(printf '%s\n%s\n%s\n%s\n' "$STD_PROFILE" "$STD_CRATES" "$STD_FEATURES" "$("$debian_bin/rustc" -vV)" | cksum)"
  echo "$state/wasm-std-${sum%% *}"
}

sized_std() { # $1 = the sysroot to fill; skipped when a finished one is there
  local sysroot="$1" work="$state/std-build" host_lib lib
  [ -f "$sysroot/complete" ] && return 0
  debian_install "${DEBIAN_PACKAGES[@]}"
  say "building the $TARGET standard library for size with $debian_bin/rustc (3 to 10 minutes, once per rustc and settings)"
  rm -rf "$work" "$sysroot" && mkdir -p "$work/src"
  printf '[package]\nname = "wasm-std-bootstrap"\nversion = "0.0.0"\nedition = "2021"\n[lib]\npath = "src/lib.rs"\n[profile.release]\n%s\n' \
    "$STD_PROFILE" >"$work/Cargo.toml"
  echo '#![no_std]' >"$work/src/lib.rs"
  # embed-bitcode keeps the LLVM bitcode that a release build with LTO needs ("Can't find section .llvmbc").
  (cd "$work" && RUSTC_BOOTSTRAP=1 RUSTC="$debian_bin/rustc" RUSTFLAGS="-Cembed-bitcode=yes" \
    CARGO_TARGET_DIR="$work/target" "$debian_bin/cargo" build --quiet --release \
    -Zbuild-std="$STD_CRATES" -Zbuild-std-features="$STD_FEATURES" --target "$TARGET")
  lib="$sysroot/lib/rustlib/$TARGET/lib"
  mkdir -p "$lib"
  find "$work/target/$TARGET/release/deps" -name 'lib*.rlib' ! -name 'libwasm_std_bootstrap-*' \
    -exec cp {} "$lib/" \;
  # The host's part of Debian's sysroot (host libraries, rust-lld for the wasm link), by reference.
  host_lib="$("$debian_bin/rustc" --print sysroot)/lib/rustlib/$("$debian_bin/rustc" -vV | sed -n 's/^host: //p')"
  ln -s "$host_lib" "$sysroot/lib/rustlib/"
  compgen -G "$lib/libstd-*.rlib" >/dev/null || { say "the $TARGET std did not build into $lib"; return 1; }
  touch "$sysroot/complete"
  rm -rf "$work"
  for old in "$state"/wasm-std-*; do [ "$old" = "$sysroot" ] || rm -rf "$old"; done
}

# 1. The Rust wasm toolchain. The choice is remembered in $state/rust so rustup is asked only once.
[ -f "$state/env" ] || say "first run: installing what the build needs, once (5 to 20 minutes on a fresh machine; later runs skip this)"
route=""
[ -f "$state/rust" ] && route="$(cat "$state/rust")"
case "$route" in
  default) has_wasm_std rustc || route="" ;;
  debian) [ -x "$debian_bin/rustc" ] || route="" ;;
esac
if [ -z "$route" ]; then
  if command -v rustc >/dev/null && has_wasm_std rustc; then
    route=default
  elif [ -z "${CI:-}" ] && command -v rustup >/dev/null \
    && say "adding the $TARGET target with rustup (under a minute)" \
    && with_timeout "${TOOLCHAIN_RUSTUP_TIMEOUT:-30}" rustup target add "$TARGET" >/dev/null 2>&1 \
    && has_wasm_std rustc; then
    route=default
  elif command -v apt-get >/dev/null; then
    say "no $TARGET std from rustup here (not tried when CI is set); using Debian's rustc-web"
    debian_std
    route=debian
  else
    say "no $TARGET standard library: install Rust with rustup (https://rustup.rs), then run"
    say "  rustup target add $TARGET"
    say "(without rustup, this script needs Debian's apt-get to install rustc-web)"
    exit 1
  fi
  echo "$route" >"$state/rust"
fi
if [ "${1:-}" = "--route" ]; then
  echo "$route"
  exit 0
fi
if [ "$route" = debian ]; then
  std_root="$(std_sysroot)"
  sized_std "$std_root"
  # worker-build runs `rustc` and `cargo` from PATH, so put Debian's first for the build. Its `rustc`
  # names the sized std's sysroot, because worker-build looks for the wasm32 std where that rustc says.
  for b in cargo rustdoc; do ln -sf "$debian_bin/$b" "$state/bin/$b"; done
  rm -f "$state/bin/rustc"
  printf '#!/bin/sh\nexec "%s" --sysroot "%s" "$@"\n' "$debian_bin/rustc" "$std_root" >"$state/bin/rustc"
  chmod +x "$state/bin/rustc"
fi

# 1b. Chromium for the session page test (tests/page.test.js drives it headless through
# playwright-core), on either Rust route: a rustup machine needs it as much as a Debian one.
# Without apt (macOS) the page test skips outside CI.
if command -v apt-get >/dev/null; then
  debian_install chromium
fi

# 2. worker-build and the wasm-bindgen CLI matching Cargo.lock exactly (a schema mismatch breaks the build).
host_cargo="$(command -v cargo || echo "$debian_bin/cargo")"
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if ! "$cargo_bin/worker-build" --version 2>/dev/null | grep -q "$WORKER_BUILD_VERSION"; then
  say "installing worker-build $WORKER_BUILD_VERSION from crates.io (compiles it: 2 to 5 minutes, once)"
  "$host_cargo" install worker-build --version "$WORKER_BUILD_VERSION"
fi
bindgen_version="$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)"
if ! "$cargo_bin/wasm-bindgen" --version 2>/dev/null | grep -q " $bindgen_version\$"; then
  say "installing wasm-bindgen-cli $bindgen_version from crates.io (compiles it: 3 to 8 minutes, once)"
  # Not --locked: its lockfile names a webpki-roots version that is no longer published.
  "$host_cargo" install --force wasm-bindgen-cli --version "$bindgen_version"
fi

# 3. Node packages: wrangler, miniflare, esbuild, binaryen (wasm-opt), the MCP SDK and conformance suite.
# Installed when node_modules differs from package-lock.json in content (npm's record of what it
# installed, node_modules/.package-lock.json, against the lock), not when the lock is merely newer: a
# checkout or a worktree sharing node_modules touches the lock without changing it, and `npm ci`
# first empties node_modules (through a symlink, the shared target).
lock_matches() {
  [ -f node_modules/.package-lock.json ] && node -e '
    const want = require("./package-lock.json").packages;
    const have = require("./node_modules/.package-lock.json").packages;
    for (const [path, p] of Object.entries(want)) {
      if (!path) continue;
      if (have[path] ? have[path].version !== p.version : !p.optional) process.exit(1);
    }
    for (const path of Object.keys(have)) if (!(path in want)) process.exit(1);' 2>/dev/null
}
if ! lock_matches; then
  say "installing npm packages (npm ci: about a minute)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# 4. The Python MCP SDK (PyPI `mcp`, pinned) in a virtual environment of its own, for
# tests/oauth_python.test.js: the OAuth flow as a Python client runs it. Skipped, saying so, where
# python3 has no venv module; that test then says what is missing.
PYTHON_MCP_VERSION="2.3.0"
python_env="$state/python"
if ! "$python_env/bin/python" -c "import importlib.metadata as m; assert m.version('mcp') == '$PYTHON_MCP_VERSION'" 2>/dev/null; then
  if command -v python3 >/dev/null && python3 -c "import venv, ensurepip" 2>/dev/null; then
    say "installing the Python MCP SDK (mcp $PYTHON_MCP_VERSION from PyPI, in .toolchain/python: about a minute)"
    rm -rf "$python_env"
    python3 -m venv "$python_env"
    "$python_env/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$PYTHON_MCP_VERSION"
  else
    say "no python3 with venv: the Python SDK's OAuth test will say so (install python3 and python3-venv)"
  fi
fi

cat >"$state/env" <<EOF
export PATH="$state/bin:$cargo_bin:\$PATH"
export WASM_BINDGEN_BIN="$cargo_bin/wasm-bindgen"
export WASM_OPT_BIN="$root/node_modules/.bin/wasm-opt"
export ESBUILD_BIN="$root/node_modules/.bin/esbuild"
# Local workerd must not reach out: no Request.cf download, no wrangler telemetry.
export CLOUDFLARE_CF_FETCH_ENABLED=false
export WRANGLER_SEND_METRICS=false
export MCP_EDGE_PYTHON="$python_env/bin/python"
EOF
if [ "$route" = debian ]; then
  # Its own target dir, so native `cargo test` (rustup's rustc) and this build don't invalidate each other.
  printf 'export RUSTC="%s/rustc"\nexport CARGO_TARGET_DIR="%s/target/wasm"\n' "$debian_bin" "$root" >>"$state/env"
  # The sized std's sysroot for wasm32 compiles only (host build scripts and proc macros keep Debian's
  # own). Cargo adds it to .cargo/config.toml's flags and hashes it into each crate's fingerprint, so a
  # new sysroot (new settings, new rustc) rebuilds every wasm32 crate instead of mixing two std builds.
  printf 'export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="--sysroot=%s"\n' "$std_root" >>"$state/env"
fi
say "ready ($route rust toolchain)"
