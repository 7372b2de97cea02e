// The native micro-benchmarks of `npm run bench` (criterion, `cargo bench --bench engines`), read
// back from criterion's estimates. Criterion writes under cargo's target directory, which is not
// always `target/`: the Debian toolchain route (.toolchain/env) sets CARGO_TARGET_DIR=target/wasm.
// So the directory is asked of cargo itself (`cargo metadata`), with the same environment the
// benchmark ran in, and never guessed.
// Settings: BENCH_NATIVE_SECONDS (criterion's measurement time per benchmark, default 3; warm-up
// is a third of it, at most 1 s), BENCH_NATIVE_FILTER (a criterion name filter, default all).
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/** The target directory cargo uses for `root` in this environment (honours CARGO_TARGET_DIR and config). */
export function targetDirectory(root, env = process.env) {
  const meta = spawnSync("cargo", ["metadata", "--format-version", "1", "--no-deps", "--offline"], { cwd: root, encoding: "utf8", env, maxBuffer: 64 << 20 });
  if (meta.status !== 0) throw new Error(`cargo metadata failed (exit ${meta.status}): ${meta.stderr.slice(-1000)}`);
  return JSON.parse(meta.stdout).target_directory;
}

/**
 * Every benchmark's estimates under criterion's output directory written since `since` (ms since
 * the epoch; older ones are from earlier runs): [[name, dir], ...], sorted.
 */
export function estimates(dir, since = 0) {
  const found = [];
  const walk = (d, name) => {
    const file = join(d, "new", "estimates.json");
    if (existsSync(file)) {
      if (statSync(file).mtimeMs >= since) found.push([name, d]);
    } else for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory() && e.name !== "report") walk(join(d, e.name), name ? `${name}/${e.name}` : e.name);
  };
  walk(dir, "");
  return found.sort();
}

/**
 * Runs criterion and prints one row per benchmark; returns [{ bench, mean_ns, per_element_ns }],
 * or null when cargo bench failed (its error is printed).
 */
export function native(root, { f, row }) {
  const seconds = Number(process.env.BENCH_NATIVE_SECONDS ?? 3);
  const warm = Math.min(1, seconds / 3);
  console.log("\n## Native micro-benchmarks (criterion, `cargo bench --bench engines`)");
  const args = ["bench", "--quiet", "--bench", "engines", "--", "--warm-up-time", String(warm), "--measurement-time", String(seconds), "--noplot"];
  if (process.env.BENCH_NATIVE_FILTER) args.push(process.env.BENCH_NATIVE_FILTER);
  const started = Date.now() - 1000;
  const run = spawnSync("cargo", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "ignore", "pipe"], maxBuffer: 64 << 20 });
  if (run.status !== 0) {
    console.log(`  cargo bench failed (exit ${run.status}):\n${run.stderr.slice(-2000)}`);
    return null;
  }
  const dir = join(targetDirectory(root), "criterion");
  console.log(`  (criterion's output: ${dir})`);
  const widths = [40, 12, 14];
  console.log(row(["benchmark", "mean", "per element"], widths));
  const unit = (ns) => (ns >= 1e6 ? `${f(ns / 1e6, 2)} ms` : ns >= 1e3 ? `${f(ns / 1e3, 2)} µs` : `${f(ns, 0)} ns`);
  const out = [];
  for (const [name, d] of estimates(dir, started)) {
    const mean = JSON.parse(readFileSync(join(d, "new", "estimates.json"), "utf8")).mean.point_estimate;
    const bench = JSON.parse(readFileSync(join(d, "new", "benchmark.json"), "utf8"));
    const per = bench.throughput?.Elements ? mean / bench.throughput.Elements : null;
    out.push({ bench: bench.full_id ?? name, mean_ns: mean, per_element_ns: per });
    console.log(row([bench.full_id ?? name, unit(mean), per && bench.throughput.Elements > 1 ? unit(per) : ""], widths));
  }
  // The goal of issue 17, from this run: our render and parse+render against MiniJinja's.
  const mean = (id) => out.find((r) => r.bench === id)?.mean_ns;
  for (const what of ["render", "parse+render"]) {
    const ours = mean(`template/ours/${what}`);
    const theirs = mean(`template/minijinja/${what}`);
    if (ours && theirs) console.log(`  template ${what}: ours ${unit(ours)}, MiniJinja ${unit(theirs)}: ${f(ours / theirs, 2)}× MiniJinja's time`);
  }
  return out;
}
