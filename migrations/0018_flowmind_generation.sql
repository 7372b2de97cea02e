-- The generation of the FlowMind context catalog (issue 6): each wasm instance keeps the search
-- index it built over `contexts` until this number moves, so every write to `contexts`
-- (compose_workflow with save) bumps it. In D1, not KV, because it must be read consistently right
-- after the write.
CREATE TABLE IF NOT EXISTS flowmind_generation (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  generation INTEGER NOT NULL CHECK (generation >= 0)
);

INSERT OR IGNORE INTO flowmind_generation (id, generation) VALUES (1, 0);
