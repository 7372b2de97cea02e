-- FlowMind usage (issue 6): execute_workflow counts each run of a context (contexts.popularity + 1,
-- last_used_at = now) and bumps usage_generation in the same batch. Instances keep their search index
-- while only usage_generation moves and re-read just popularity and last_used_at, so a run does not
-- cost every instance a rebuild of the index (which generation still triggers).
ALTER TABLE flowmind_generation ADD COLUMN usage_generation INTEGER NOT NULL DEFAULT 0 CHECK (usage_generation >= 0);
