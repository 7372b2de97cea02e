// scripts/toolchain.sh's choice of Rust route (README "The two commands"), run with `--route` on a
// PATH of stubs: rustc, rustup, apt-get, dpkg-query and sudo that record their calls and install
// nothing, plus links to the few system tools the script uses. No GNU `timeout` is on that PATH
// (macOS has none), so the rustup timeout is exercised as it runs there.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "./support/worker.js";

const SYSTEM_TOOLS = ["bash", "sh", "perl", "cat", "mkdir", "dirname", "rm", "grep", "sleep", "touch", "env", "id", "basename"];

/**
 * A sandbox: `std` says which rustc already has the wasm32 std ("default", "debian" or none; the
 * Debian route builds its own after the choice, which `--route` does not reach); `debianRustc` false
 * leaves Debian's rustc out;
 * `rustup` is "ok" (adds the target), "fail", "slow" (adds it after 20 s, past the 1 s timeout) or
 * absent; `apt` says whether apt-get exists (installing the Debian packages gives Debian's rustc
 * its std); `remembered` is a route already in the state's `rust` file.
 */
function sandbox({ std, rustup, apt = true, remembered, debianRustc = true } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "mcp-edge-toolchain-"));
  const [bin, sys, debian, log] = [join(dir, "bin"), join(dir, "sys"), join(dir, "debian"), join(dir, "calls.log")];
  const libDefault = join(dir, "lib-default");
  const libDebian = join(dir, "lib-debian");
  for (const d of [bin, sys, debian, libDefault, libDebian, join(dir, "state")]) mkdirSync(d);
  writeFileSync(log, "");
  const stub = (path, body) => {
    writeFileSync(path, `#!/bin/sh\necho "$(basename "$0") $*" >> ${log}\n${body}\n`);
    chmodSync(path, 0o755);
  };
  const rustc = (libdir) => `[ "$1" = "--print" ] && echo ${libdir}\nexit 0`;
  const addStd = (libdir) => `touch ${libdir}/libstd-0000.rlib`;
  if (std === "default") writeFileSync(join(libDefault, "libstd-0000.rlib"), "");
  if (std === "debian") writeFileSync(join(libDebian, "libstd-0000.rlib"), "");
  stub(join(bin, "rustc"), rustc(libDefault));
  if (debianRustc) stub(join(debian, "rustc"), rustc(libDebian));
  stub(join(debian, "cargo"), "exit 1");
  if (rustup === "ok") stub(join(bin, "rustup"), addStd(libDefault));
  if (rustup === "fail") stub(join(bin, "rustup"), "exit 1");
  if (rustup === "slow") stub(join(bin, "rustup"), `sleep 20\n${addStd(libDefault)}`);
  if (apt) {
    stub(join(bin, "apt-get"), `[ "$1" = "install" ] && ${addStd(libDebian)}\nexit 0`);
    stub(join(bin, "dpkg-query"), "exit 1");
    stub(join(bin, "sudo"), 'exec "$@"');
  }
  for (const tool of SYSTEM_TOOLS) {
    const found = spawnSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim();
    assert.ok(found, `${tool} is on this machine`);
    symlinkSync(found, join(sys, tool));
  }
  if (remembered) writeFileSync(join(dir, "state", "rust"), `${remembered}\n`);
  const run = (env = {}) => {
    const r = spawnSync(join(sys, "bash"), [join(root, "scripts", "toolchain.sh"), "--route"], {
      encoding: "utf8",
      env: {
        PATH: `${bin}:${sys}`, HOME: dir, TOOLCHAIN_STATE: join(dir, "state"), TOOLCHAIN_DEBIAN_BIN: debian,
        TOOLCHAIN_RUSTUP_TIMEOUT: "1", ...env,
      },
    });
    const calls = readFileSync(log, "utf8").split("\n").filter(Boolean);
    return { status: r.status, route: r.stdout.trim(), stderr: r.stderr, calls, remembered: existsSync(join(dir, "state", "rust")) ? readFileSync(join(dir, "state", "rust"), "utf8").trim() : null };
  };
  return { run, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const called = (calls, cmd) => calls.filter((c) => c.startsWith(`${cmd} `));

test("a rustc that already has the wasm32 std is used as it is: no rustup, no apt-get", () => {
  const box = sandbox({ std: "default", rustup: "ok" });
  try {
    for (const CI of [undefined, "true"]) {
      const r = box.run(CI ? { CI } : {});
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.route, "default");
      assert.deepEqual(called(r.calls, "rustup"), []);
      assert.deepEqual(called(r.calls, "apt-get"), []);
    }
  } finally {
    box.cleanup();
  }
});

test("outside CI, rustup adds the target (macOS: no GNU timeout needed); the choice is remembered", () => {
  const box = sandbox({ rustup: "ok", apt: false });
  try {
    const r = box.run();
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.route, "default");
    assert.deepEqual(called(r.calls, "rustup"), ["rustup target add wasm32-unknown-unknown"]);
    assert.equal(r.remembered, "default");
    const again = box.run();
    assert.equal(again.route, "default");
    assert.equal(called(again.calls, "rustup").length, 1, "rustup is not asked a second time");
  } finally {
    box.cleanup();
  }
});

test("with CI set, rustup is never asked: Debian's rustc-web is installed with apt-get", () => {
  const box = sandbox({ rustup: "ok" });
  try {
    const r = box.run({ CI: "true" });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.route, "debian");
    assert.deepEqual(called(r.calls, "rustup"), []);
    const install = called(r.calls, "apt-get").find((c) => c.includes("install"));
    for (const p of ["rustc-web", "cargo-web", "rust-web-src", "lld-22"]) assert.ok(install?.includes(p), `${p} in ${install}`);
    assert.equal(r.remembered, "debian");
  } finally {
    box.cleanup();
  }
});

test("a rustup that fails or hangs past the timeout falls back to Debian's rustc-web", () => {
  for (const rustup of ["fail", "slow"]) {
    const box = sandbox({ rustup });
    try {
      const r = box.run();
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.route, "debian", `rustup ${rustup}`);
      assert.deepEqual(called(r.calls, "rustup"), ["rustup target add wasm32-unknown-unknown"]);
    } finally {
      box.cleanup();
    }
  }
});

test("a remembered route whose std is still there is taken without asking anything", () => {
  const box = sandbox({ std: "debian", rustup: "ok", remembered: "debian" });
  try {
    const r = box.run();
    assert.equal(r.route, "debian");
    assert.deepEqual(called(r.calls, "rustup"), []);
    assert.deepEqual(called(r.calls, "dpkg-query"), []);
  } finally {
    box.cleanup();
  }
});

test("a remembered Debian route whose rustc is gone is chosen again", () => {
  const box = sandbox({ rustup: "ok", apt: false, remembered: "debian", debianRustc: false });
  try {
    const r = box.run();
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.route, "default");
    assert.equal(r.remembered, "default");
  } finally {
    box.cleanup();
  }
});

test("no wasm32 std, no working rustup and no apt-get: exit 1 saying what to install", () => {
  const box = sandbox({ rustup: "fail", apt: false });
  try {
    const r = box.run();
    assert.equal(r.status, 1);
    assert.match(r.stderr, /rustup target add wasm32-unknown-unknown/);
    assert.equal(r.remembered, null);
  } finally {
    box.cleanup();
  }
});
