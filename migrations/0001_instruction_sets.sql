-- Named instruction sets the travel assistant loads on demand (instructions toolset).
CREATE TABLE IF NOT EXISTS instruction_sets (
  name        TEXT PRIMARY KEY CHECK (length(name) BETWEEN 3 AND 64 AND name NOT GLOB '*[^a-z0-9-]*'),
  title       TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
  category    TEXT NOT NULL CHECK (category IN ('core', 'mode', 'workflow', 'compliance', 'research', 'communication')),
  description TEXT NOT NULL,
  content     TEXT NOT NULL,
  version     TEXT NOT NULL DEFAULT '1.0',
  updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

CREATE INDEX IF NOT EXISTS instruction_sets_by_category ON instruction_sets (category, name);
