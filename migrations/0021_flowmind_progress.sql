-- FlowMind progressive authorization (issue 6, seed 001): successful FlowMind calls per signed-in
-- user (`caller` is the token's `sub`), from which the user's level follows. In D1 because the
-- count outlives sessions and two sessions of one user add to the same row (an upsert, atomic).
-- Anonymous callers have no identity beyond their session and are counted in its own storage.
CREATE TABLE IF NOT EXISTS flowmind_progress (
  caller     TEXT PRIMARY KEY,
  successes  INTEGER NOT NULL DEFAULT 0 CHECK (successes >= 0),
  updated_at INTEGER NOT NULL
);
