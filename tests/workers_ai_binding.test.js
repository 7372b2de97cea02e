// Workers AI is bound in production and nowhere else (issue 23): wrangler.toml's top level binds
// it as AI, so a deployment's field_request blends embeddings; the dev and conformance
// environments must not have it, since local runs cannot reach Cloudflare's service. The file is
// read through wrangler itself, so the test holds to wrangler's rule that `ai` is not inherited
// by named environments rather than to a parse of our own.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { unstable_readConfig } from "wrangler";
import { root } from "./support/worker.js";

const read = (env) => unstable_readConfig({ config: join(root, "wrangler.toml"), env }, { hideWarnings: true });

describe("the Workers AI binding in wrangler.toml", () => {
  test("production (the top level) binds Workers AI as AI", () => {
    assert.deepEqual(read(undefined).ai, { binding: "AI" });
  });

  for (const env of ["dev", "conformance"]) {
    test(`the ${env} environment has no AI binding, so it runs offline`, () => {
      const config = read(env);
      assert.equal(config.ai, undefined);
      // The environment itself was read: its own vars are there.
      assert.ok(Object.keys(config.vars).length > 0);
    });
  }
});
