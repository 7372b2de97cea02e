-- Records have owners (issue 15). Templates, chains, collection records, EPIC-TIDE works, paths
-- and patterns each get:
--   owner        `user:<sub>` (a signed-in caller), `session:<MCP session id>` (an anonymous caller
--                in a 2025 session), or NULL for what the server ships (changed only by the
--                `admin` role);
--   visibility   'private' (the owner only), 'shared' (also callers holding a role of
--                shared_roles) or 'public' (everyone reads; only the owner writes);
--   shared_roles a JSON array of role names.
-- Every read, list and write of the tools checks them in its SQL (src/tools/ownership.rs). New
-- rows are private unless the writer says otherwise; every row that exists now was shipped or
-- written before records had owners, so it becomes owner NULL and public: readable as before,
-- changed only by an admin. EPIC-TIDE tides and their executions belong to their path.

ALTER TABLE template_definitions ADD COLUMN owner TEXT;
ALTER TABLE template_definitions ADD COLUMN visibility TEXT NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'shared', 'public'));
ALTER TABLE template_definitions ADD COLUMN shared_roles TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(shared_roles) AND json_type(shared_roles) = 'array');
UPDATE template_definitions SET visibility = 'public';

ALTER TABLE execution_chains ADD COLUMN owner TEXT;
ALTER TABLE execution_chains ADD COLUMN visibility TEXT NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'shared', 'public'));
ALTER TABLE execution_chains ADD COLUMN shared_roles TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(shared_roles) AND json_type(shared_roles) = 'array');
UPDATE execution_chains SET visibility = 'public';

ALTER TABLE collection_records ADD COLUMN owner TEXT;
ALTER TABLE collection_records ADD COLUMN visibility TEXT NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'shared', 'public'));
ALTER TABLE collection_records ADD COLUMN shared_roles TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(shared_roles) AND json_type(shared_roles) = 'array');
UPDATE collection_records SET visibility = 'public';

-- The undo journal keeps the access of the record before each change, so undoing a delete
-- restores the record with its owner (NULL for a change that created the record).
ALTER TABLE record_changes ADD COLUMN owner TEXT;
ALTER TABLE record_changes ADD COLUMN visibility TEXT;
ALTER TABLE record_changes ADD COLUMN shared_roles TEXT;

ALTER TABLE epic_works ADD COLUMN owner TEXT;
ALTER TABLE epic_works ADD COLUMN visibility TEXT NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'shared', 'public'));
ALTER TABLE epic_works ADD COLUMN shared_roles TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(shared_roles) AND json_type(shared_roles) = 'array');
UPDATE epic_works SET visibility = 'public';

ALTER TABLE epic_paths ADD COLUMN owner TEXT;
ALTER TABLE epic_paths ADD COLUMN visibility TEXT NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'shared', 'public'));
ALTER TABLE epic_paths ADD COLUMN shared_roles TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(shared_roles) AND json_type(shared_roles) = 'array');
UPDATE epic_paths SET visibility = 'public';

-- A pattern summarises the completed tides of one owner's paths, so it is one per owner, domain
-- and tag set (it was one per domain and tag set): the table is rebuilt without that constraint.
CREATE TABLE epic_patterns_owned (
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
  owner              TEXT,
  visibility         TEXT NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'shared', 'public')),
  shared_roles       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(shared_roles) AND json_type(shared_roles) = 'array')
);
INSERT INTO epic_patterns_owned (id, domain, tags, common_sequence, sequence_support, proven_adaptations,
                                 success_rate, successful_tides, completed_tides, paths, updated_ms, owner, visibility)
  SELECT id, domain, tags, common_sequence, sequence_support, proven_adaptations,
         success_rate, successful_tides, completed_tides, paths, updated_ms, NULL, 'public'
  FROM epic_patterns;
DROP TABLE epic_patterns;
ALTER TABLE epic_patterns_owned RENAME TO epic_patterns;
CREATE UNIQUE INDEX IF NOT EXISTS epic_patterns_per_owner ON epic_patterns (ifnull(owner, ''), domain, tags);

CREATE INDEX IF NOT EXISTS template_definitions_by_owner ON template_definitions (owner);
CREATE INDEX IF NOT EXISTS execution_chains_by_owner ON execution_chains (owner);
CREATE INDEX IF NOT EXISTS epic_paths_by_owner_group ON epic_paths (owner, domain, tags);
