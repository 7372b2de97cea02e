// The key pair the OAuth companion (oauth/) and the Rust Worker share: the companion signs each
// forwarded /mcp request's internal token with the private key (its INTERNAL_JWT_KEY secret), the
// Rust Worker verifies it against the public one (its JWKS secret). ES256 (P-256), a fresh `kid` each
// time. `node scripts/oauth-keys.js` prints both as JSON lines `INTERNAL_JWT_KEY=…` and `JWKS=…`,
// the form of .dev.vars; scripts/deploy.sh and scripts/dev.sh use it.
import { randomUUID, webcrypto } from "node:crypto";
import { fileURLToPath } from "node:url";

/** A new key pair: { privateJwk, jwks } as the JSON strings the two Workers read. */
export async function internalKeys() {
  const pair = await webcrypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const kid = randomUUID();
  const priv = await webcrypto.subtle.exportKey("jwk", pair.privateKey);
  const pub = await webcrypto.subtle.exportKey("jwk", pair.publicKey);
  const privateJwk = JSON.stringify({ kty: priv.kty, crv: priv.crv, x: priv.x, y: priv.y, d: priv.d, kid, alg: "ES256" });
  const jwks = JSON.stringify({ keys: [{ kty: pub.kty, crv: pub.crv, x: pub.x, y: pub.y, kid, alg: "ES256", use: "sig" }] });
  return { privateJwk, jwks };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { privateJwk, jwks } = await internalKeys();
  console.log(`INTERNAL_JWT_KEY=${privateJwk}`);
  console.log(`JWKS=${jwks}`);
}
