-- Named collections of JSON records, written only by database_operation chain steps (create, update,
-- delete, get by id; never free SQL). `data` holds the record's fields without its id.
CREATE TABLE IF NOT EXISTS collection_records (
  collection  TEXT NOT NULL CHECK (length(collection) BETWEEN 1 AND 50 AND collection GLOB '[a-z]*' AND collection NOT GLOB '*[^a-z0-9_-]*'),
  id          TEXT NOT NULL CHECK (length(id) BETWEEN 1 AND 200),
  data        TEXT NOT NULL CHECK (json_valid(data) AND json_type(data) = 'object'),
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (collection, id)
);

-- Undo journal of those writes while an execution runs: the record's data before and after each
-- change (NULL = absent), numbered per execution. A row and its write are one D1 batch; rollback
-- restores `before` only while the record still holds `after`, and removes the row with it.
CREATE TABLE IF NOT EXISTS record_changes (
  execution_id TEXT NOT NULL,
  step_id      INTEGER NOT NULL,
  seq          INTEGER NOT NULL,
  collection   TEXT NOT NULL,
  record_id    TEXT NOT NULL,
  before       TEXT CHECK (before IS NULL OR json_valid(before)),
  after        TEXT CHECK (after IS NULL OR json_valid(after)),
  changed_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (execution_id, seq)
);

CREATE INDEX IF NOT EXISTS record_changes_by_step ON record_changes (execution_id, step_id, seq);
