-- Change log: one row per committed change to the session, in commit order,
-- so a front-end in another process can follow the session (Controller.Watch)
-- by reading the rows after the last one it saw. Triggers write the rows in
-- the transaction of the change itself, so every writer records them and no
-- row is ever missing or out of order. kind is 'turn_opened', 'captured',
-- 'message', 'op' (a rewind, undo, redo or summarize finished: op_id) or
-- 'pinned' (a turn's pin or label changed).
CREATE TABLE changes (
	id    INTEGER PRIMARY KEY AUTOINCREMENT,
	kind  TEXT    NOT NULL,
	turn  INTEGER NOT NULL DEFAULT 0,
	path  TEXT    NOT NULL DEFAULT '',
	op_id INTEGER -- ops.id, for kind 'op'
);

CREATE TRIGGER changes_turn_opened AFTER INSERT ON turns BEGIN
	INSERT INTO changes (kind, turn) VALUES ('turn_opened', NEW.number);
END;

CREATE TRIGGER changes_captured AFTER INSERT ON snaps BEGIN
	INSERT INTO changes (kind, turn, path)
		SELECT 'captured', number, NEW.path FROM turns WHERE id = NEW.turn_id;
END;

CREATE TRIGGER changes_message AFTER INSERT ON messages BEGIN
	INSERT INTO changes (kind, turn)
		SELECT 'message', number FROM turns WHERE id = NEW.turn_id;
END;

CREATE TRIGGER changes_op AFTER UPDATE OF state ON ops
	WHEN OLD.state = 'planned' AND NEW.state = 'done' BEGIN
	INSERT INTO changes (kind, turn, op_id) VALUES ('op', NEW.turn, NEW.id);
END;

CREATE TRIGGER changes_pinned AFTER UPDATE OF pinned, label ON turns
	WHEN OLD.pinned IS NOT NEW.pinned OR OLD.label IS NOT NEW.label BEGIN
	INSERT INTO changes (kind, turn) VALUES ('pinned', NEW.number);
END;
