-- Runs belong to the user, not the MCP connection (issue 21 item 7): a background run goes on in
-- the session object that started it after that session ended, and the user cancels it from
-- another session. That session cannot reach the run's job lease, so it asks here: the reason the
-- run was asked to stop. The run reads it at each checkpoint (after every batch of steps) and
-- stops at that step boundary, as cancel_chain in its own session would; resume_chain clears it.
ALTER TABLE chain_executions ADD COLUMN stop_request TEXT;
