// What the migration generators (domain-data.js, flowmind-data.js) share: SQL literals and INSERT
// statements cut to D1's limits.

/** A value as an SQL literal: NULL, a finite number, or a quoted string. */
export const sql = (v) => {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new Error(`not a finite number: ${v}`);
    return String(v);
  }
  return `'${String(v).replaceAll("'", "''")}'`;
};

/**
 * INSERT statements for `rows` (objects keyed by `columns`). D1 limits a statement to 100 KB:
 * rows go out in batches of at most 100 rows and ~40 KB.
 */
export function inserts(table, columns, rows) {
  const out = [];
  let batch = [];
  let size = 0;
  const flush = () => {
    if (!batch.length) return;
    out.push(`INSERT INTO ${table} (${columns.join(", ")}) VALUES\n${batch.join(",\n")};\n`);
    batch = [];
    size = 0;
  };
  for (const row of rows) {
    const values = `(${columns.map((c) => sql(row[c])).join(", ")})`;
    if (batch.length === 100 || size + values.length > 40000) flush();
    batch.push(values);
    size += values.length + 2;
  }
  flush();
  return out;
}
