-- Runs of chains (execute_chain): who started them, their state and the full step report.
CREATE TABLE IF NOT EXISTS chain_executions (
  id             TEXT PRIMARY KEY,
  chain_id       INTEGER NOT NULL REFERENCES execution_chains (id) ON DELETE CASCADE,
  chain_revision INTEGER NOT NULL,
  owner          TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'timed_out')),
  variables      TEXT NOT NULL CHECK (json_valid(variables)),
  report         TEXT CHECK (report IS NULL OR json_valid(report)),
  started_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  finished_at    TEXT
);

CREATE INDEX IF NOT EXISTS chain_executions_by_owner ON chain_executions (owner, started_at);
