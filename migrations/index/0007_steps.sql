-- Steps: each tool call of a turn (an agent's pre-tool event) opens a step,
-- numbered from 1 within the turn, at a clock value of its own. A code
-- rewind to step S of turn T ("T.S") puts back every path with an event
-- after step S opened to the before-state of its first such event, as a
-- turn rewind does from the turn's clock value. Captures before a turn's
-- first step belong to step 0.
--
-- snaps keeps the first capture of a path in a turn (turn semantics are
-- unchanged); step records which step made it. A path captured again in a
-- later step of the same turn gets one step_snaps row there (the first
-- capture in that step wins): its state before that tool call. key is the
-- agent's tool-call id when it gave one, so a repeated event of one tool
-- call finds its step rather than opening another.
CREATE TABLE steps (
	turn_id INTEGER NOT NULL REFERENCES turns (id),
	number  INTEGER NOT NULL,               -- 1, 2, ... within the turn
	seq     INTEGER NOT NULL UNIQUE,
	key     TEXT    NOT NULL DEFAULT '',    -- the agent's tool-call id, or ''
	tool    TEXT    NOT NULL DEFAULT '',    -- the tool's name, when known
	time    INTEGER NOT NULL,               -- unix nanoseconds
	PRIMARY KEY (turn_id, number)
) WITHOUT ROWID;
CREATE UNIQUE INDEX steps_key ON steps (turn_id, key) WHERE key != '';

ALTER TABLE snaps ADD COLUMN step INTEGER NOT NULL DEFAULT 0;

CREATE TABLE step_snaps (
	turn_id INTEGER NOT NULL REFERENCES turns (id),
	step    INTEGER NOT NULL,
	path    TEXT    NOT NULL,
	seq     INTEGER NOT NULL UNIQUE,
	blob    BLOB,                           -- NULL: absent, as in snaps
	mode    INTEGER NOT NULL,
	size    INTEGER NOT NULL,
	dirs    TEXT    NOT NULL DEFAULT '',
	lost    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (turn_id, step, path)
) WITHOUT ROWID;
CREATE INDEX step_snaps_path_seq ON step_snaps (path, seq);

-- The step a code rewind went back to (0: the turn's start).
ALTER TABLE ops ADD COLUMN step INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER changes_step_opened AFTER INSERT ON steps BEGIN
	INSERT INTO changes (kind, turn)
		SELECT 'step_opened', number FROM turns WHERE id = NEW.turn_id;
END;

CREATE TRIGGER changes_step_captured AFTER INSERT ON step_snaps BEGIN
	INSERT INTO changes (kind, turn, path)
		SELECT 'captured', number, NEW.path FROM turns WHERE id = NEW.turn_id;
END;
