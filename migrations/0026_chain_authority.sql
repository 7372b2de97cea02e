-- Chains are never confused deputies (issue 15): who saved a chain, and the roles their token
-- carried then. A step acts with the roles both the chain's author and its runner hold, as the
-- runner only when the author is the runner (src/tools/chains/guard.rs, docs/chains.md).
--   author:       the token's sub; NULL for an anonymous author.
--   author_roles: a JSON array of roles; NULL only for chains the server ships or builds (FlowMind's
--                 workflows), whose steps act with the runner's own rights.
ALTER TABLE execution_chains ADD COLUMN author TEXT;
ALTER TABLE execution_chains ADD COLUMN author_roles TEXT CHECK (author_roles IS NULL OR json_valid(author_roles));

-- Chains saved before authors were recorded have no known author: their steps act with no roles
-- and no identity. Shipped chains as shipped (revision 1) and workflow chains keep NULL.
UPDATE execution_chains SET author_roles = '[]'
WHERE category <> 'flowmind-workflow'
  AND NOT (name IN ('corporate-booking-workflow', 'mobile-lead-processing', 'client-followup-sequence') AND revision = 1);

-- An execution keeps the author it started with, as it keeps the definition.
ALTER TABLE chain_executions ADD COLUMN author TEXT;
ALTER TABLE chain_executions ADD COLUMN author_roles TEXT CHECK (author_roles IS NULL OR json_valid(author_roles));
UPDATE chain_executions SET author_roles = '[]'
WHERE chain_id IN (SELECT id FROM execution_chains WHERE author_roles IS NOT NULL);
