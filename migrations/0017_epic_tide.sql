-- EPIC-TIDE (seed 004): works, paths (blueprints of works), tides (attempts at a path), the
-- per-work execution log of each tide, and the patterns derived from completed tides. Every id,
-- timestamp (ms since the epoch), version, attempt and duration is set by the server. Status,
-- outcome and action values are checked against data/epic-tide/vocabulary.json by the server, so
-- the vocabulary lives in one place.

CREATE TABLE IF NOT EXISTS epic_works (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE CHECK (name GLOB '[a-z]*' AND name NOT GLOB '*[^a-z0-9-]*'),
  what        TEXT NOT NULL,
  how         TEXT NOT NULL CHECK (json_valid(how)),
  metrics     TEXT NOT NULL CHECK (json_valid(metrics)),
  version     INTEGER NOT NULL DEFAULT 1,
  created_ms  INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS epic_paths (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE CHECK (name GLOB '[a-z]*' AND name NOT GLOB '*[^a-z0-9-]*'),
  what        TEXT NOT NULL,
  works       TEXT NOT NULL CHECK (json_valid(works)),
  metrics     TEXT NOT NULL CHECK (json_valid(metrics)),
  domain      TEXT NOT NULL,
  -- A sorted JSON array, so that equal tag sets compare equal.
  tags        TEXT NOT NULL CHECK (json_valid(tags)),
  version     INTEGER NOT NULL DEFAULT 1,
  created_ms  INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS epic_tides (
  id               TEXT PRIMARY KEY,
  path_id          TEXT NOT NULL REFERENCES epic_paths (id),
  path_version     INTEGER NOT NULL,
  attempt          INTEGER NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('active', 'completed')),
  -- This tide's effective work sequence (the path's, after its adaptations) and the path's
  -- metrics when it started.
  sequence         TEXT NOT NULL CHECK (json_valid(sequence)),
  metrics          TEXT NOT NULL CHECK (json_valid(metrics)),
  adaptations      TEXT NOT NULL CHECK (json_valid(adaptations)),
  started_ms       INTEGER NOT NULL,
  completed_ms     INTEGER,
  duration_ms      INTEGER,
  outcome          TEXT,
  metrics_achieved TEXT CHECK (metrics_achieved IS NULL OR json_valid(metrics_achieved)),
  learnings        TEXT,
  next_action      TEXT,
  UNIQUE (path_id, attempt)
);

-- At most one active tide per path: the guard behind start-tide's refusal of a second start, even
-- when two starts race.
CREATE UNIQUE INDEX IF NOT EXISTS epic_tides_one_active ON epic_tides (path_id) WHERE status = 'active';

-- Every update-execution call, in the order the database accepted them (seq per tide).
CREATE TABLE IF NOT EXISTS epic_executions (
  tide_id     TEXT NOT NULL REFERENCES epic_tides (id),
  seq         INTEGER NOT NULL,
  work_name   TEXT NOT NULL,
  status      TEXT NOT NULL,
  error       TEXT,
  output      TEXT,
  updated_ms  INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  PRIMARY KEY (tide_id, seq)
);

-- One pattern per domain and tag set, derived from the completed tides of its paths.
CREATE TABLE IF NOT EXISTS epic_patterns (
  id                 TEXT PRIMARY KEY,
  domain             TEXT NOT NULL,
  tags               TEXT NOT NULL CHECK (json_valid(tags)),
  common_sequence    TEXT NOT NULL CHECK (json_valid(common_sequence)),
  sequence_support   REAL NOT NULL,
  proven_adaptations TEXT NOT NULL CHECK (json_valid(proven_adaptations)),
  success_rate       REAL NOT NULL,
  successful_tides   INTEGER NOT NULL,
  completed_tides    INTEGER NOT NULL,
  paths              TEXT NOT NULL CHECK (json_valid(paths)),
  updated_ms         INTEGER NOT NULL,
  UNIQUE (domain, tags)
);

CREATE INDEX IF NOT EXISTS epic_paths_by_group ON epic_paths (domain, tags);
