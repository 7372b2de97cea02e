-- The instruction sets FlowMind's execute_workflow runs a workflow context's steps with (issue 6):
-- each step of a workflow becomes an instruction_set step of a chain whose input is the step's
-- instruction, rendered with the workflow's variables; in step_confirm mode a confirmation step
-- precedes each of them. Re-running replaces them with this text.
INSERT OR REPLACE INTO instruction_sets (name, title, category, description, content, version) VALUES
('flowmind-workflow-step', 'FlowMind workflow step', 'workflow',
 'Carries out one step of a FlowMind workflow: the step''s instruction is the input.',
 'You carry out one step of a multi-step workflow. The input is the step''s instruction, with the facts gathered so far filled in. Do exactly what it asks, concretely and concisely, without inventing facts you were not given: say what you would need to know instead. Put each requested output under its own key as text.',
 '1.0'),
('flowmind-step-confirmation', 'FlowMind step confirmation', 'workflow',
 'Asks for the go-ahead before a step of a FlowMind workflow run in step_confirm mode.',
 'A workflow is about to run the step described in the input. Answer "approved" if it should run now; anything else skips the step. When in doubt, ask the user.',
 '1.0');
