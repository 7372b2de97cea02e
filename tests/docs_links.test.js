// Every link of the README and docs/ leads somewhere: a relative link names a file or folder of the
// repository, and a `#fragment` names a heading of the page it points at (GitHub's anchors). The
// README is the front door and sends readers into docs/, so a page moved or a heading renamed
// without its links fails here rather than in front of a reader.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { root } from "./support/worker.js";

/** The text of a Markdown page without its fenced code blocks (links there are not links). */
function prose(text) {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a page: one per heading, a repeated one numbered as GitHub numbers it. */
export function anchors(text) {
  const seen = new Map();
  const out = new Set();
  for (const [, heading] of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** The links of a page: inline `[text](target)` outside code, without external ones. */
export function links(text) {
  return [...prose(text).replace(/`[^`\n]*`/g, "").matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1])
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

const pages = ["README.md", ...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => join("docs", f))];

test("the anchor rules are GitHub's", () => {
  assert.equal(slug("Domain tools (HR, Finance, Sales, Support)"), "domain-tools-hr-finance-sales-support");
  assert.equal(slug("`execute_workflow`"), "execute_workflow");
  assert.equal(slug("Two protocol eras on one endpoint"), "two-protocol-eras-on-one-endpoint");
  assert.deepEqual([...anchors("# A\n## B\n```\n# not a heading\n```\n## B\n")], ["a", "b", "b-1"]);
  assert.deepEqual(links("[x](docs/a.md) [y](https://e.org) `[z](no.md)`\n```\n[w](no.md)\n```\n[v](#here)"), ["docs/a.md", "#here"]);
});

test("the README is a front door of at most 250 lines, linking into docs/", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  // Lines as `wc -l` counts them: the newline that ends the last line does not start another.
  const lines = readme.split("\n").length - (readme.endsWith("\n") ? 1 : 0);
  assert.ok(lines <= 250, `README.md has ${lines} lines`);
  for (const page of ["development", "tools-reference", "configuration", "identity", "oauth", "deploying", "protocol", "sessions", "model-provider"]) {
    assert.ok(links(readme).includes(`docs/${page}.md`), `README links docs/${page}.md`);
  }
  assert.match(readme, /2025-11-25/);
  assert.match(readme, /2026-07-28/);
});

for (const page of pages) {
  test(`every link of ${page} resolves`, () => {
    const text = readFileSync(join(root, page), "utf8");
    const broken = [];
    for (const link of links(text)) {
      const [path, fragment] = link.split("#");
      const target = path ? join(dirname(join(root, page)), decodeURIComponent(path)) : join(root, page);
      if (!existsSync(target)) {
        broken.push(`${link}: no ${relative(root, target)}`);
        continue;
      }
      if (fragment && target.endsWith(".md") && !anchors(readFileSync(target, "utf8")).has(fragment)) {
        broken.push(`${link}: no heading #${fragment} in ${relative(root, target)}`);
      }
    }
    assert.deepEqual(broken, []);
  });
}
