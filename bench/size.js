// Size report of the release Worker (`npm run bench` runs it first; `node bench/size.js` alone works
// after a release build). Prints figures, asserts nothing:
//   - the shipped files (build/index_bg.wasm, build/index.js), raw and gzip -9;
//   - the wasm's sections, raw and each gzip -9 on its own (the sum is a little above the whole);
//   - the 30 largest functions and the largest crates by code bytes, read from the symbolized copy
//     that scripts/build.sh keeps (target/wasm/index_bg.symbols.wasm: the same code with its `name`
//     section, which the shipped wasm does not carry);
//   - the 30 largest generic families: one function monomorphised many times (its instances' names
//     differ only in type arguments and hash), summed, which is where a generic helper or a `dyn`
//     argument would share code;
//   - the 30 largest data segments with a printable preview (what is compiled in as data).
// Writes the same as JSON to bench/results/size-<time>.json (git-ignored, like run.js's results), or
// to the file given with --out.
// A wasm parser of its own (sections, imports, code bodies, data segments, the name section) so no
// tool beyond node is needed.
import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const TOP = 30;
const SECTION_NAMES = ["custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "datacount", "tag"];

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const gz = (bytes) => gzipSync(bytes, { level: 9 }).length;

/** A cursor over a wasm binary: LEB128 integers, names, sub-slices. */
class Reader {
  constructor(bytes, pos = 0, end = bytes.length) {
    Object.assign(this, { bytes, pos, end });
  }
  u8() {
    return this.bytes[this.pos++];
  }
  uleb() {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = this.bytes[this.pos++];
      result += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return result;
      shift += 7;
    }
  }
  name() {
    const len = this.uleb();
    const s = Buffer.from(this.bytes.subarray(this.pos, this.pos + len)).toString("utf8");
    this.pos += len;
    return s;
  }
  /** Skips a constant expression (offsets of data and element segments): opcodes up to `end`. */
  constExpr() {
    for (;;) {
      const op = this.u8();
      if (op === 0x0b) return;
      if (op === 0x41 || op === 0x42 || op === 0x23) this.uleb();
      else if (op === 0x44) this.pos += 8;
      else if (op === 0x43) this.pos += 4;
    }
  }
}

/** Sections, imported function count, code body sizes, data segments and function names. */
export function parseWasm(bytes) {
  if (bytes.readUInt32LE(0) !== 0x6d736100) throw new Error("not a wasm module");
  const r = new Reader(bytes, 8);
  const sections = [];
  let importedFuncs = 0;
  const bodies = [];
  const segments = [];
  const names = new Map();
  while (r.pos < r.end) {
    const id = r.u8();
    const size = r.uleb();
    const start = r.pos;
    const s = new Reader(bytes, start, start + size);
    let name = SECTION_NAMES[id] ?? `unknown ${id}`;
    if (id === 0) name = `custom "${s.name()}"`;
    sections.push({ name, size: 1 + lebLen(size) + size, bytes: bytes.subarray(start, start + size) });
    if (id === 2) {
      for (let n = s.uleb(); n > 0; n--) {
        s.name();
        s.name();
        const kind = s.u8();
        if (kind === 0) (s.uleb(), importedFuncs++);
        else if (kind === 1) (s.u8(), limits(s));
        else if (kind === 2) limits(s);
        else if (kind === 3) s.pos += 2;
        else if (kind === 4) (s.u8(), s.uleb());
      }
    } else if (id === 10) {
      for (let n = s.uleb(), i = 0; i < n; i++) {
        const len = s.uleb();
        bodies.push(len);
        s.pos += len;
      }
    } else if (id === 11) {
      for (let n = s.uleb(); n > 0; n--) {
        const flags = s.uleb();
        if (flags === 2) s.uleb();
        if (flags !== 1) s.constExpr();
        const len = s.uleb();
        segments.push(bytes.subarray(s.pos, s.pos + len));
        s.pos += len;
      }
    } else if (name === 'custom "name"') {
      while (s.pos < s.end) {
        const sub = s.u8();
        const len = s.uleb();
        const next = s.pos + len;
        if (sub === 1) for (let n = s.uleb(); n > 0; n--) names.set(s.uleb(), s.name());
        s.pos = next;
      }
    }
    r.pos = start + size;
  }
  return { sections, importedFuncs, bodies, segments, names };
}

function limits(s) {
  const flags = s.u8();
  s.uleb();
  if (flags & 1) s.uleb();
}

function lebLen(n) {
  let len = 1;
  while (n >= 128) (n = Math.floor(n / 128), len++);
  return len;
}

/** The crate a demangled Rust symbol belongs to: its first path segment, or the implementing type's. */
export function crateOf(symbol) {
  // v0-mangled names (the prebuilt std) carry the crate's hash in brackets: core[81ac…]::fmt.
  let s = symbol.replace(/\[[0-9a-f]+\]/g, "");
  if (s.startsWith("<")) {
    s = s.slice(1).replace(/^(&(mut )?|\*(const|mut) |dyn )+/, "");
    // <f64 as core::fmt::Display>::fmt and <&T as …>: the trait's crate; <str>::to_lowercase: core.
    const as = / as ([A-Za-z_][A-Za-z0-9_]*)::/.exec(s);
    if (!/^[A-Za-z_][A-Za-z0-9_]*::/.test(s)) return as ? as[1] : /^(str|char|\[|[iuf](8|16|32|64|128|size))\b/.test(s) ? "core" : "(other)";
  }
  const m = /^([A-Za-z_][A-Za-z0-9_]*)::/.exec(s);
  if (m) return m[1];
  if (/^(__wbg|__wbindgen|wasm_bindgen|__externref)|externref shim|^closure[0-9]+ externref/.test(s) || / externref shim$/.test(s)) return "wasm_bindgen (glue)";
  if (/^(mem|memcpy|memset|memmove|memcmp|bcmp|strlen|__rust|__rdl|__rg|dlmalloc|__multi|__udiv|__ashl|__lshr|__ashr|__float|__fix|__mul|__div|__extend|__trunc)/.test(s)) return "compiler_builtins";
  return "(other)";
}

/** A function's name with its hash and type arguments erased: the instances of one generic share it. */
export function familyOf(symbol) {
  let s = symbol.replace(/::h[0-9a-f]{16}$/, "").replace(/\[[0-9a-f]+\]/g, "");
  // Innermost brackets first; `<T as Trait>` names an impl, not type arguments, so it stays (held in
  // « » while the outer brackets are erased).
  for (let prev = ""; prev !== s; ) (prev = s), (s = s.replace(/<([^<>]*)>/g, (_, inner) => (inner.includes(" as ") ? `«${inner}»` : "<_>")));
  return s.replace(/«/g, "<").replace(/»/g, ">");
}

/** A short printable preview of a data segment: its longest runs of text. */
function preview(seg) {
  const text = Buffer.from(seg.subarray(0, 4096)).toString("latin1").replace(/[^\x20-\x7e]+/g, " ").trim();
  return text.slice(0, 80);
}

/** Builds the report of `shipped` (the deployed wasm) and `symbolized` (the same with names, if any). */
export function sizeReport({ shipped = join(root, "build", "index_bg.wasm"), js = join(root, "build", "index.js"), symbolized = join(root, "target", "wasm", "index_bg.symbols.wasm") } = {}) {
  const bytes = readFileSync(shipped);
  const wasm = parseWasm(bytes);
  const report = {
    date: new Date().toISOString(),
    files: {},
    sections: wasm.sections.map((s) => ({ name: s.name, raw: s.size, gzip: gz(s.bytes) })),
    top_functions: [],
    crates: [],
    generic_families: [],
    top_data: [],
  };
  for (const [name, file] of [["index_bg.wasm", shipped], ["index.js", js]]) {
    if (!existsSync(file)) continue;
    const b = readFileSync(file);
    report.files[name] = { raw: b.length, gzip: gz(b) };
  }
  const named = existsSync(symbolized) ? parseWasm(readFileSync(symbolized)) : wasm;
  if (named.names.size > 0) {
    report.symbols_from = relative(root, named === wasm ? shipped : symbolized);
    const fns = named.bodies.map((size, i) => ({ name: named.names.get(named.importedFuncs + i) ?? `func[${named.importedFuncs + i}]`, size }));
    const crates = new Map();
    for (const fn of fns) {
      const c = crateOf(fn.name);
      const e = crates.get(c) ?? { crate: c, size: 0, functions: 0 };
      e.size += fn.size;
      e.functions++;
      crates.set(c, e);
    }
    report.code_bytes = fns.reduce((a, f) => a + f.size, 0);
    report.top_functions = fns.sort((a, b) => b.size - a.size).slice(0, TOP);
    report.crates = [...crates.values()].sort((a, b) => b.size - a.size).slice(0, TOP);
    const families = new Map();
    for (const fn of fns) {
      const f = familyOf(fn.name);
      const e = families.get(f) ?? { family: f, size: 0, instances: 0 };
      e.size += fn.size;
      e.instances++;
      families.set(f, e);
    }
    report.generic_families = [...families.values()].filter((e) => e.instances > 1).sort((a, b) => b.size - a.size).slice(0, TOP);
  }
  report.data_bytes = wasm.segments.reduce((a, s) => a + s.length, 0);
  report.top_data = wasm.segments
    .map((s, i) => ({ segment: i, size: s.length, gzip: gz(s), preview: preview(s) }))
    .sort((a, b) => b.size - a.size)
    .slice(0, TOP);
  return report;
}

/** Prints a report made by sizeReport. */
export function printSize(report) {
  const pct = (n, of) => `${((100 * n) / of).toFixed(1)}%`.padStart(6);
  console.log("\n## Size of the Worker (gzip -9)");
  for (const [name, f] of Object.entries(report.files)) console.log(`  ${name.padEnd(28)} raw ${kib(f.raw).padStart(11)}  gzip ${kib(f.gzip).padStart(11)}`);
  const total = report.files["index_bg.wasm"]?.raw ?? 1;
  console.log("\n  wasm sections                raw            gzip (alone)");
  for (const s of report.sections) console.log(`  ${s.name.padEnd(28)} ${kib(s.raw).padStart(11)} ${pct(s.raw, total)}  ${kib(s.gzip).padStart(11)}`);
  if (report.top_functions.length) {
    console.log(`\n  largest crates by code bytes (${report.symbols_from}; ${kib(report.code_bytes)} of code)`);
    for (const c of report.crates) console.log(`  ${c.crate.slice(0, 40).padEnd(40)} ${kib(c.size).padStart(11)} ${pct(c.size, report.code_bytes)}  ${String(c.functions).padStart(5)} fns`);
    console.log(`\n  ${TOP} largest functions`);
    for (const fn of report.top_functions) console.log(`  ${kib(fn.size).padStart(10)}  ${fn.name.length > 110 ? `${fn.name.slice(0, 107)}...` : fn.name}`);
    console.log(`\n  ${TOP} largest generic families (instances differing only in type arguments, summed)`);
    for (const g of report.generic_families) console.log(`  ${kib(g.size).padStart(10)} ${String(g.instances).padStart(4)}x  ${g.family.length > 100 ? `${g.family.slice(0, 97)}...` : g.family}`);
  } else {
    console.log("\n  (no symbolized copy: per-function figures need target/wasm/index_bg.symbols.wasm from scripts/build.sh)");
  }
  console.log(`\n  ${TOP} largest data segments (${kib(report.data_bytes)} of data)`);
  for (const d of report.top_data.slice(0, TOP)) console.log(`  ${kib(d.size).padStart(10)} gzip ${kib(d.gzip).padStart(10)}  ${d.preview}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const at = args.indexOf("--out");
  const report = sizeReport();
  const out = at >= 0 ? args[at + 1] : join(root, "bench", "results", `size-${report.date.replace(/[:.]/g, "-")}.json`);
  printSize(report);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nsize report: ${relative(root, out)}`);
}
