// Bench-only storage counter (bench/cost.js wraps a built Worker with it): counts the storage
// operations the Worker's code performs, at the runtime's own APIs, with no change to the code
// measured. It patches the prototypes of the objects workerd hands the code (Durable Object
// SqlStorage and storage, D1 statements and database, KV namespace) on first sight, so every
// caller, in the Worker or in any of its Durable Objects (one isolate in workerd), is counted:
//   - Durable Object SQLite: `sql.exec` cursors' `rowsRead` / `rowsWritten` (read once the call is
//     over, as the cursor counts while it is consumed), plus the KV-style API's keys
//     (`get`/`put`/`delete`, stored in SQLite and billed as rows read / written);
//   - D1: `meta.rows_read` / `meta.rows_written` of `all`, `run` and `batch` (`first` and `raw`
//     return no meta: they are counted as calls so a run can say it missed them);
//   - KV: reads (`get`, `getWithMetadata`, `list`) and writes (`put`, `delete`).
const cursors = [];
const zero = () => ({ doRowsRead: 0, doRowsWritten: 0, d1RowsRead: 0, d1RowsWritten: 0, kvReads: 0, kvWrites: 0, d1Uncounted: 0 });
let totals = zero();
const patched = new WeakSet();

/** Replaces `proto[name]` with a function that calls the original and hands its result to `after`. */
function wrap(proto, name, after) {
  const original = proto?.[name];
  if (typeof original !== "function") return;
  proto[name] = function (...args) {
    const out = original.apply(this, args);
    return after(out, args);
  };
}

/** Patches `obj`'s prototype once with `how(proto)`. */
function once(obj, how) {
  const proto = obj && Object.getPrototypeOf(obj);
  if (!proto || patched.has(proto)) return;
  patched.add(proto);
  how(proto);
}

const keys = (k) => (Array.isArray(k) ? k.length : k && typeof k === "object" ? Object.keys(k).length : 1);
const d1Meta = (r) => {
  totals.d1RowsRead += r?.meta?.rows_read ?? 0;
  totals.d1RowsWritten += r?.meta?.rows_written ?? 0;
  return r;
};

/** Patches a Durable Object's storage (SQL and KV-style API) from its `ctx`. */
export function patchState(ctx) {
  const storage = ctx?.storage;
  if (!storage) return;
  if (storage.sql) once(storage.sql, (p) => wrap(p, "exec", (cursor, [query]) => (cursors.push([query, cursor]), cursor)));
  once(storage, (p) => {
    wrap(p, "get", (out, [k]) => ((totals.doRowsRead += keys(k)), out));
    wrap(p, "put", (out, [k]) => ((totals.doRowsWritten += keys(k)), out));
    wrap(p, "delete", (out, [k]) => ((totals.doRowsWritten += keys(k)), out));
  });
}

/** Patches the D1 binding `db` and the KV binding `kv` (either may be absent). */
export function patchEnv(db, kv) {
  if (db?.prepare) {
    once(db, (p) => wrap(p, "batch", (out) => out.then((rs) => (rs.forEach(d1Meta), rs))));
    once(db.prepare("SELECT 1"), (p) => {
      for (const m of ["all", "run"]) wrap(p, m, (out) => out.then(d1Meta));
      for (const m of ["first", "raw"]) wrap(p, m, (out) => ((totals.d1Uncounted += 1), out));
    });
  }
  if (kv?.get) {
    once(kv, (p) => {
      for (const m of ["get", "getWithMetadata", "list"]) wrap(p, m, (out) => ((totals.kvReads += 1), out));
      for (const m of ["put", "delete"]) wrap(p, m, (out) => ((totals.kvWrites += 1), out));
    });
  }
}

/**
 * The totals since the last reading (cursors' counts included), then zero. `statements`: per
 * Durable Object SQL statement (its first 80 characters), how often it ran and the rows it read
 * and wrote, so a run can say where the rows go.
 */
export function takeTotals() {
  const statements = {};
  for (const [query, c] of cursors) {
    totals.doRowsRead += c.rowsRead ?? 0;
    totals.doRowsWritten += c.rowsWritten ?? 0;
    const key = String(query).replace(/\s+/g, " ").trim().slice(0, 80);
    const st = (statements[key] ??= { runs: 0, rowsRead: 0, rowsWritten: 0 });
    st.runs += 1;
    st.rowsRead += c.rowsRead ?? 0;
    st.rowsWritten += c.rowsWritten ?? 0;
  }
  cursors.length = 0;
  const out = { ...totals, statements };
  totals = zero();
  return out;
}
