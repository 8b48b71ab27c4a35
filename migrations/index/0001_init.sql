-- One index per session. Every change to the workspace that ckpt knows of is
-- an event on one clock (the clock table): a turn opening, the first capture
-- of a path in a turn, and each path a rewind or undo rewrote. A file's state
-- at the start of turn T is the "before" state of its first event after
-- T's seq; that is what a code rewind restores.

CREATE TABLE meta (
	key   TEXT NOT NULL PRIMARY KEY,
	value TEXT NOT NULL
);

CREATE TABLE clock (
	id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
	n  INTEGER NOT NULL
);
INSERT INTO clock (id, n) VALUES (1, 0);

-- ops are rewinds and undos. A row is written with state 'planned' together
-- with all its op_files before any file is touched, and set to 'done' once
-- every file is in place; a 'planned' row found later is finished first.
CREATE TABLE ops (
	id     INTEGER PRIMARY KEY AUTOINCREMENT,
	seq    INTEGER NOT NULL UNIQUE,
	kind   TEXT    NOT NULL CHECK (kind IN ('rewind', 'undo')),
	turn   INTEGER NOT NULL,               -- target turn number (for undo: the rewind's)
	scope  TEXT    NOT NULL CHECK (scope IN ('code', 'conversation', 'both')),
	state  TEXT    NOT NULL CHECK (state IN ('planned', 'done', 'undone')),
	undoes INTEGER REFERENCES ops (id),    -- for kind 'undo': the rewind it reverses
	prompt TEXT    NOT NULL DEFAULT '',    -- prompt handed back by a conversation rewind
	time   INTEGER NOT NULL                -- unix nanoseconds
);

CREATE TABLE turns (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	seq       INTEGER NOT NULL UNIQUE,
	number    INTEGER NOT NULL,             -- the turn number users see
	prompt    TEXT    NOT NULL,
	time      INTEGER NOT NULL,             -- unix nanoseconds
	hidden_by INTEGER REFERENCES ops (id)   -- NULL while in the active history
);
CREATE UNIQUE INDEX turns_active_number ON turns (number) WHERE hidden_by IS NULL;

-- FileSnap: a path's state at the start of a turn, taken at its first
-- capture in that turn. blob NULL means the file did not exist. end_* is the
-- state found when the next turn opened (end_state 0 unknown, 1 present,
-- 2 absent). dirs lists, for an absent file, the ancestor directories that
-- were absent too (newline separated): a rewind may remove them once empty.
CREATE TABLE snaps (
	turn_id   INTEGER NOT NULL REFERENCES turns (id),
	path      TEXT    NOT NULL,
	seq       INTEGER NOT NULL UNIQUE,
	blob      BLOB,
	mode      INTEGER NOT NULL,
	size      INTEGER NOT NULL,
	dirs      TEXT    NOT NULL DEFAULT '',
	end_state INTEGER NOT NULL DEFAULT 0,
	end_blob  BLOB,
	end_mode  INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (turn_id, path)
) WITHOUT ROWID;
CREATE INDEX snaps_path_seq ON snaps (path, seq);

-- op_files: for each path an op rewrites, the state before (recorded before
-- any file is touched, so the op can be undone) and the target state. A NULL
-- blob means absent; *_dirs as in snaps.
CREATE TABLE op_files (
	op_id       INTEGER NOT NULL REFERENCES ops (id),
	path        TEXT    NOT NULL,
	seq         INTEGER NOT NULL UNIQUE,
	before_blob BLOB,
	before_mode INTEGER NOT NULL,
	before_size INTEGER NOT NULL,
	after_blob  BLOB,
	after_mode  INTEGER NOT NULL,
	after_size  INTEGER NOT NULL,
	before_dirs TEXT    NOT NULL DEFAULT '',
	after_dirs  TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (op_id, path)
) WITHOUT ROWID;
CREATE INDEX op_files_path_seq ON op_files (path, seq);

CREATE TABLE messages (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	turn_id INTEGER NOT NULL REFERENCES turns (id),
	role    TEXT    NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
	text    TEXT    NOT NULL,
	time    INTEGER NOT NULL
);
CREATE INDEX messages_turn ON messages (turn_id, id);
