-- Executions that run in the background, pause for input, or are cancelled (issue 3). SQLite cannot
-- change a CHECK constraint in place, so the table is rebuilt with its rows.
CREATE TABLE chain_executions_next (
  id             TEXT PRIMARY KEY,
  chain_id       INTEGER NOT NULL REFERENCES execution_chains (id) ON DELETE CASCADE,
  chain_revision INTEGER NOT NULL,
  owner          TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status IN ('running', 'awaiting_input', 'completed', 'failed', 'timed_out', 'cancelled')),
  -- sync: inside the execute_chain call; async: in the background, driven by the session's alarm.
  mode           TEXT NOT NULL DEFAULT 'sync' CHECK (mode IN ('sync', 'async')),
  -- The chain definition as it was when the run started: a resumed run follows the same plan.
  definition     TEXT NOT NULL CHECK (json_valid(definition)),
  -- parallel, rollback, max_execution_ms, save_intermediate_results.
  options        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(options)),
  -- Runs started since the execution was started or last resumed; a background execution
  -- interrupted too often is failed, not continued forever.
  runs           INTEGER NOT NULL DEFAULT 1,
  variables      TEXT NOT NULL CHECK (json_valid(variables)),
  -- The step report: the checkpoint while running or paused, the final report after.
  report         TEXT CHECK (report IS NULL OR json_valid(report)),
  started_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  finished_at    TEXT
);

INSERT INTO chain_executions_next (id, chain_id, chain_revision, owner, status, definition, variables, report, started_at, updated_at, finished_at)
SELECT e.id, e.chain_id, e.chain_revision, e.owner, e.status, c.definition, e.variables, e.report, e.started_at,
       COALESCE(e.finished_at, e.started_at), e.finished_at
FROM chain_executions e JOIN execution_chains c ON c.id = e.chain_id;

DROP TABLE chain_executions;
ALTER TABLE chain_executions_next RENAME TO chain_executions;
CREATE INDEX IF NOT EXISTS chain_executions_by_owner ON chain_executions (owner, status, started_at);
