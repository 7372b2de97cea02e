-- Run objects of the 2026-07-28 lane (src/stateless/runs.rs): every chain or workflow run a
-- signed-in 2026 caller starts lives in a Session Durable Object of its own, named `session` (the
-- run's chain_executions.owner). `user` is the only caller who may address it, by execution id.
CREATE TABLE IF NOT EXISTS run_objects (
  session    TEXT PRIMARY KEY,
  user       TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);
-- Pruning objects that never got an execution (a refused execute_chain) goes by age.
CREATE INDEX IF NOT EXISTS run_objects_created ON run_objects (created_ms);
