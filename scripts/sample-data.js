#!/usr/bin/env node
// `npm run sample-data -- --local|--remote [--env NAME] [--persist-to DIR] [--remove]`: loads the
// sample company of the domain tools (sample-data/domain.sql: 531 fictitious employees with
// salaries and SSN-like numbers, their invoices, deals and tickets) into a D1 database, or with
// --remove deletes exactly those rows again (sample-data/remove-domain.sql). It is not a migration,
// so a deploy never loads it; `npm run dev` loads it locally and the tests load it in Miniflare.
// Idempotent: a check query says whether the company is there, so it is loaded at most once and
// removed only when present. Each file runs as one transaction in D1: all of it or nothing.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const DOMAIN_SQL = join(root, "sample-data", "domain.sql");
export const REMOVE_SQL = join(root, "sample-data", "remove-domain.sql");
/**
 * Rows > 0 when the sample company is (at least partly) there: its lowest grade or its CEO, whose
 * fixed id no other row can take (docs/domain-data.md).
 */
export const PRESENT_SQL = "SELECT (SELECT COUNT(*) FROM hr_grade_levels WHERE grade = 'L0') + "
  + "(SELECT COUNT(*) FROM hr_employees WHERE id = '00000000-0000-4000-8000-000000000001') AS n";

const USAGE = "usage: npm run sample-data -- --local|--remote [--env NAME] [--persist-to DIR] [--remove]";

function parse(argv) {
  const o = { where: null, env: null, persist: null, remove: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--local" || a === "--remote") {
      if (o.where) throw new Error("give one of --local and --remote");
      o.where = a;
    } else if (a === "--env" || a === "--persist-to") {
      const v = argv[++i];
      if (!v || v.startsWith("--")) throw new Error(`${a} needs a value`);
      o[a === "--env" ? "env" : "persist"] = v;
    } else if (a === "--remove") {
      o.remove = true;
    } else {
      throw new Error(`unknown option ${a}`);
    }
  }
  if (!o.where) throw new Error("say where: --local (the wrangler dev database) or --remote (the deployed D1 database)");
  if (o.persist && o.where !== "--local") throw new Error("--persist-to goes with --local");
  return o;
}

function main() {
  let o;
  try {
    o = parse(process.argv.slice(2));
  } catch (e) {
    console.error(`sample-data: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  // --local means the database `npm run dev` serves (env dev); --remote the deployed one (top level).
  const env = o.env ?? (o.where === "--local" ? "dev" : "");
  const target = [o.where, `--env=${env}`, ...(o.persist ? ["--persist-to", o.persist] : [])];
  const wrangler = (args, stdio) => spawnSync(process.execPath, [join(root, "node_modules", "wrangler", "bin", "wrangler.js"), "d1", "execute", "DB", ...target, ...args],
    { cwd: root, encoding: "utf8", stdio, env: { WRANGLER_SEND_METRICS: "false", ...process.env } });
  const label = `${o.where === "--local" ? "local" : "remote"} D1 database DB${env ? ` (env ${env})` : ""}`;

  const check = wrangler(["--json", "--command", PRESENT_SQL], "pipe");
  let present;
  try {
    present = JSON.parse(check.stdout)[0].results[0].n > 0;
  } catch {
    console.error(`sample-data: could not query the ${label}; are the migrations applied (npm run dev, or npm run deploy)?\n${check.stdout}${check.stderr}`);
    process.exit(1);
  }
  if (present !== o.remove) {
    console.log(o.remove ? `sample-data: the ${label} has no sample company; nothing to remove` : `sample-data: the ${label} already has the sample company; nothing to do`);
    return;
  }
  console.log(o.remove ? `sample-data: removing the sample company from the ${label}` : `sample-data: loading the sample company into the ${label}`);
  // --json keeps wrangler from printing a result per statement (thousands); its errors still show.
  const run = wrangler(["--json", "--file", o.remove ? REMOVE_SQL : DOMAIN_SQL], "pipe");
  if (run.status !== 0) {
    console.error(`${run.stdout}${run.stderr}sample-data: failed; the file runs as one transaction, so nothing was changed${o.remove ? " (a row of your own that refers to a sample row without a cascade blocks the removal: the error above names it)" : ""}`);
    process.exit(run.status ?? 1);
  }
  console.log(`sample-data: ${o.remove ? "removed" : "loaded"}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
