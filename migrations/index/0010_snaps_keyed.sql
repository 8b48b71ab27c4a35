-- ckpt: foreign_keys off
-- (the line above makes the runner apply this file with foreign keys off and
-- run PRAGMA foreign_key_check before it commits: snaps is rebuilt here.)
--
-- Smaller snapshot rows and indexes:
--   - seq is snaps' rowid (INTEGER PRIMARY KEY): the table is appended in
--     clock order and needs no index of its own for seq, which every
--     snapshot paid for twice before (the UNIQUE index on seq, and the
--     (path, seq) index carrying the 2-column primary key);
--   - a path is named by a small integer, path_id, a row of paths: its text
--     is stored once per session, not in every snapshot and in each index
--     entry. Reads that need the text go through the view named_snaps,
--     which has snaps' columns as they were (path its text).
-- A turn's snapshot of a path is found through a UNIQUE index on (turn_id,
-- path_id), which keeps the first capture winning (INSERT OR IGNORE); a
-- path's snapshots in clock order through the index on path_id (SQLite
-- keeps the rowid in every index entry, so it is one on (path_id, seq)).
-- Every lookup is still a seek. Every row is copied with its values; paths
-- are numbered in the order of their first snapshot; the change log's
-- trigger is made again on the new table.

ALTER TABLE snaps RENAME TO old_snaps;
DROP INDEX snaps_path_seq;
DROP TRIGGER changes_captured;

CREATE TABLE paths(id INTEGER PRIMARY KEY,path TEXT NOT NULL UNIQUE);
CREATE TABLE snaps(turn_id INT NOT NULL REFERENCES turns,path_id INT NOT NULL REFERENCES paths,seq INTEGER PRIMARY KEY,blob BLOB,mode INT NOT NULL,size INT NOT NULL,dirs TEXT NOT NULL DEFAULT'',end_state INT NOT NULL DEFAULT 0,end_blob BLOB,end_mode INT NOT NULL DEFAULT 0,lost INT NOT NULL DEFAULT 0,step INT NOT NULL DEFAULT 0);
INSERT INTO paths(path) SELECT path FROM old_snaps GROUP BY path ORDER BY min(seq);
INSERT INTO snaps(turn_id, path_id, seq, blob, mode, size, dirs, end_state, end_blob, end_mode, lost, step)
	SELECT o.turn_id, p.id, o.seq, o.blob, o.mode, o.size, o.dirs, o.end_state, o.end_blob, o.end_mode, o.lost, o.step
	FROM old_snaps o JOIN paths p ON p.path = o.path ORDER BY o.seq;
DROP TABLE old_snaps;

CREATE UNIQUE INDEX snaps_turn_path ON snaps(turn_id,path_id);
CREATE INDEX snaps_path ON snaps(path_id);
CREATE VIEW named_snaps AS SELECT s.turn_id,p.path,s.seq,s.blob,s.mode,s.size,s.dirs,s.end_state,s.end_blob,s.end_mode,s.lost,s.step FROM snaps s JOIN paths p ON p.id=s.path_id;
CREATE TRIGGER changes_captured AFTER INSERT ON snaps BEGIN INSERT INTO changes(kind,turn,path)SELECT'captured',t.number,p.path FROM turns t,paths p WHERE t.id=NEW.turn_id AND p.id=NEW.path_id;END;

-- Give the old table's pages back to the file system (a no-op unless the
-- index is in incremental auto-vacuum mode, as indexes ckpt creates are).
PRAGMA incremental_vacuum;
