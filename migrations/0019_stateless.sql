-- The 2026-07-28 (stateless) lane of /mcp: single-use request states and idempotent writes.

-- Redeemed 2026-07-28 requestState nonces (src/stateless/call.rs): a sealed state is accepted
-- once. A row is kept until the state it names would have expired anyway, then pruned.
CREATE TABLE IF NOT EXISTS request_state_redeemed (
  nonce TEXT PRIMARY KEY,
  expires_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS request_state_redeemed_expiry ON request_state_redeemed (expires_ms);

-- Results of 2026-07-28 writes, kept so a retried request gets the first run's result instead of
-- running again (src/stateless/idempotency.rs). `result` is NULL while the first run is going.
CREATE TABLE IF NOT EXISTS idempotent_calls (
  key TEXT PRIMARY KEY,
  result TEXT,
  expires_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idempotent_calls_expiry ON idempotent_calls (expires_ms);
