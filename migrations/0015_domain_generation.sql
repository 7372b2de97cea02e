-- The generation of the domain data (issue 4): part of every cached domain read's key, bumped by
-- every confirmed write, so a write makes every earlier cached read unreachable at once. It lives
-- in D1, not KV, because it must be read consistently right after a write.
CREATE TABLE IF NOT EXISTS domain_generation (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  generation INTEGER NOT NULL CHECK (generation >= 0)
);

INSERT OR IGNORE INTO domain_generation (id, generation) VALUES (1, 0);
