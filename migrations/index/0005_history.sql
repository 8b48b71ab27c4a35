-- History and redo: an op can be reversed by a later undo whatever its
-- kind (an undo of an undo is a redo), so every state an op replaced stays
-- reachable. For that each op records, as it finishes, the conversation
-- rows whose visibility it changed: op_conv holds one row per turn or
-- message with its visibility before the op (a message the op added was not
-- shown before it). Reversing the op puts those rows back, whatever later
-- ops did to turns.hidden_by. conv_recorded is 1 for ops finished with this
-- record (0 for ops finished before this migration: their conversation
-- change is known only from hidden_by, so only the latest can be reversed).
ALTER TABLE ops ADD COLUMN conv_recorded INTEGER NOT NULL DEFAULT 0;
-- revert is 1 for a revert of one turn (kind 'rewind', scope 'code'), so
-- the history can say which it was.
ALTER TABLE ops ADD COLUMN revert INTEGER NOT NULL DEFAULT 0;

CREATE TABLE op_conv (
	op_id        INTEGER NOT NULL REFERENCES ops (id),
	what         TEXT    NOT NULL CHECK (what IN ('turn', 'message')),
	row_id       INTEGER NOT NULL, -- turns.id or messages.id
	shown_before INTEGER NOT NULL, -- 1: shown just before the op
	PRIMARY KEY (op_id, what, row_id)
) WITHOUT ROWID;
