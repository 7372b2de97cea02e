-- Every request for, decision on and execution of a confirmed write (issue 4): who, which tool, a
-- hash of the arguments (not the arguments: they may hold salaries), what happened, when.
CREATE TABLE IF NOT EXISTS audit_log (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  at              TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  user_id         TEXT NOT NULL,
  tool            TEXT NOT NULL,
  confirmation_id TEXT NOT NULL,
  arguments_hash  TEXT NOT NULL CHECK (length(arguments_hash) = 64),
  event           TEXT NOT NULL CHECK (event IN ('requested', 'approved', 'denied', 'expired', 'refused', 'executed', 'failed')),
  outcome         TEXT
);

CREATE INDEX IF NOT EXISTS audit_log_by_confirmation ON audit_log (confirmation_id, id);
CREATE INDEX IF NOT EXISTS audit_log_by_user ON audit_log (user_id, at);
