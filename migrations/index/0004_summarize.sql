-- Summarize: an op can replace part of the conversation with one summary
-- message, leaving turns and file checkpoints alone. Such an op is recorded
-- as kind 'rewind', scope 'conversation', with action 'summarize_from' or
-- 'summarize_up_to' (ordinary rewinds keep action 'rewind'), so it joins
-- the undo stack unchanged. It hides the summarized messages (hidden_by)
-- and adds the summary (added_by); its undo unhides the first and hides the
-- second, never deleting a row.
ALTER TABLE ops ADD COLUMN action TEXT NOT NULL DEFAULT 'rewind'
	CHECK (action IN ('rewind', 'summarize_from', 'summarize_up_to'));
ALTER TABLE messages ADD COLUMN hidden_by INTEGER REFERENCES ops (id); -- NULL: shown
ALTER TABLE messages ADD COLUMN added_by  INTEGER REFERENCES ops (id); -- the summarize op that wrote it
