-- ckpt: foreign_keys off
-- (the line above makes the runner apply this file with foreign keys off and
-- run PRAGMA foreign_key_check before it commits: tables are rebuilt here.)
--
-- A compact schema, so a session of a few turns takes a few pages. Every
-- table and index takes at least one 512-byte page, and the schema's text
-- is stored in the file too; this rebuilds every table with:
--   - the clock kept in meta (key 'clock'), and meta WITHOUT ROWID, so its
--     key is its b-tree (no separate index);
--   - the stat cache's directory rows in statcache itself, bucket b at id
--     -1-b (the header stays at id 1), so deleting statcache's rows, as a
--     pull or a repair does, drops the whole cache in one statement;
--   - no AUTOINCREMENT (and so no sqlite_sequence): turns and messages are
--     never deleted, the change log keeps its newest row when trimmed, an op
--     is deleted only while planned (nothing refers to it then) and a
--     manifest only when nothing refers to it, so a rowid is never reused
--     where anything could still name it;
--   - no UNIQUE index on ops.seq or steps.seq (no query looks either up:
--     the clock makes them unique) and no steps_key index (a step is found
--     by key among its turn's steps through the primary key, and looked up
--     and opened in one write transaction, so one key opens one step);
--   - the same tables, columns, column order, constraints and the other
--     indexes and triggers, written without spacing or comments (SQLite
--     keeps a statement's text as written); INT for INTEGER where a column
--     is not a rowid (the same affinity); no NOT NULL on the primary key
--     columns of WITHOUT ROWID tables (SQLite enforces it there).
-- Every row is copied with its ids, so references and followers of the
-- change log keep their place. The old tables are renamed first (SQLite
-- rewrites the references to them), the new ones created under the old
-- names, filled, and the old ones dropped.

ALTER TABLE meta RENAME TO old_meta;
ALTER TABLE clock RENAME TO old_clock;
ALTER TABLE ops RENAME TO old_ops;
ALTER TABLE turns RENAME TO old_turns;
ALTER TABLE snaps RENAME TO old_snaps;
ALTER TABLE op_files RENAME TO old_op_files;
ALTER TABLE messages RENAME TO old_messages;
ALTER TABLE manifests RENAME TO old_manifests;
ALTER TABLE manifest_files RENAME TO old_manifest_files;
ALTER TABLE manifest_skips RENAME TO old_manifest_skips;
ALTER TABLE statcache RENAME TO old_statcache;
ALTER TABLE statcache_dirs RENAME TO old_statcache_dirs;
ALTER TABLE op_conv RENAME TO old_op_conv;
ALTER TABLE changes RENAME TO old_changes;
ALTER TABLE steps RENAME TO old_steps;
ALTER TABLE step_snaps RENAME TO old_step_snaps;
DROP INDEX turns_active_number;
DROP INDEX snaps_path_seq;
DROP INDEX op_files_path_seq;
DROP INDEX messages_turn;
DROP INDEX steps_key;
DROP INDEX step_snaps_path_seq;
DROP INDEX manifests_base;
DROP TRIGGER changes_turn_opened;
DROP TRIGGER changes_captured;
DROP TRIGGER changes_message;
DROP TRIGGER changes_op;
DROP TRIGGER changes_pinned;
DROP TRIGGER changes_step_opened;
DROP TRIGGER changes_step_captured;

CREATE TABLE meta(key TEXT PRIMARY KEY,value NOT NULL)WITHOUT ROWID;
CREATE TABLE ops(id INTEGER PRIMARY KEY,seq INT NOT NULL,kind TEXT NOT NULL CHECK(kind IN('rewind','undo')),turn INT NOT NULL,scope TEXT NOT NULL CHECK(scope IN('code','conversation','both')),state TEXT NOT NULL CHECK(state IN('planned','done','undone')),undoes INT REFERENCES ops,prompt TEXT NOT NULL DEFAULT'',time INT NOT NULL,action TEXT NOT NULL DEFAULT'rewind'CHECK(action IN('rewind','summarize_from','summarize_up_to')),conv_recorded INT NOT NULL DEFAULT 0,revert INT NOT NULL DEFAULT 0,step INT NOT NULL DEFAULT 0);
CREATE TABLE turns(id INTEGER PRIMARY KEY,seq INT NOT NULL UNIQUE,number INT NOT NULL,prompt TEXT NOT NULL,time INT NOT NULL,hidden_by INT REFERENCES ops,pinned INT NOT NULL DEFAULT 0,label TEXT NOT NULL DEFAULT'',pruned INT NOT NULL DEFAULT 0,manifest_id INT REFERENCES manifests);
CREATE TABLE snaps(turn_id INT REFERENCES turns,path TEXT,seq INT NOT NULL UNIQUE,blob BLOB,mode INT NOT NULL,size INT NOT NULL,dirs TEXT NOT NULL DEFAULT'',end_state INT NOT NULL DEFAULT 0,end_blob BLOB,end_mode INT NOT NULL DEFAULT 0,lost INT NOT NULL DEFAULT 0,step INT NOT NULL DEFAULT 0,PRIMARY KEY(turn_id,path))WITHOUT ROWID;
CREATE TABLE op_files(op_id INT REFERENCES ops,path TEXT,seq INT NOT NULL UNIQUE,before_blob BLOB,before_mode INT NOT NULL,before_size INT NOT NULL,after_blob BLOB,after_mode INT NOT NULL,after_size INT NOT NULL,before_dirs TEXT NOT NULL DEFAULT'',after_dirs TEXT NOT NULL DEFAULT'',lost INT NOT NULL DEFAULT 0,PRIMARY KEY(op_id,path))WITHOUT ROWID;
CREATE TABLE messages(id INTEGER PRIMARY KEY,turn_id INT NOT NULL REFERENCES turns,role TEXT NOT NULL CHECK(role IN('user','assistant','tool','system')),text TEXT NOT NULL,time INT NOT NULL,hidden_by INT REFERENCES ops,added_by INT REFERENCES ops);
CREATE TABLE manifests(id INTEGER PRIMARY KEY,hash BLOB NOT NULL UNIQUE,base INT REFERENCES manifests,depth INT NOT NULL DEFAULT 0);
CREATE TABLE manifest_files(manifest_id INT REFERENCES manifests,path TEXT,blob BLOB NOT NULL,mode INT NOT NULL,size INT NOT NULL,lost INT NOT NULL DEFAULT 0,gone INT NOT NULL DEFAULT 0,PRIMARY KEY(manifest_id,path))WITHOUT ROWID;
CREATE TABLE manifest_skips(manifest_id INT REFERENCES manifests,path TEXT,reason TEXT NOT NULL,PRIMARY KEY(manifest_id,path))WITHOUT ROWID;
CREATE TABLE statcache(id INTEGER PRIMARY KEY,data BLOB NOT NULL);
CREATE TABLE op_conv(op_id INT REFERENCES ops,what TEXT CHECK(what IN('turn','message')),row_id INT,shown_before INT NOT NULL,PRIMARY KEY(op_id,what,row_id))WITHOUT ROWID;
CREATE TABLE changes(id INTEGER PRIMARY KEY,kind TEXT NOT NULL,turn INT NOT NULL DEFAULT 0,path TEXT NOT NULL DEFAULT'',op_id INT);
CREATE TABLE steps(turn_id INT REFERENCES turns,number INT,seq INT NOT NULL,key TEXT NOT NULL DEFAULT'',tool TEXT NOT NULL DEFAULT'',time INT NOT NULL,PRIMARY KEY(turn_id,number))WITHOUT ROWID;
CREATE TABLE step_snaps(turn_id INT REFERENCES turns,step INT,path TEXT,seq INT NOT NULL UNIQUE,blob BLOB,mode INT NOT NULL,size INT NOT NULL,dirs TEXT NOT NULL DEFAULT'',lost INT NOT NULL DEFAULT 0,PRIMARY KEY(turn_id,step,path))WITHOUT ROWID;

INSERT INTO meta(key, value) SELECT 'clock', n FROM old_clock WHERE id = 1;
INSERT INTO meta(key, value) SELECT key, value FROM old_meta WHERE key <> 'clock';
INSERT INTO ops(id, seq, kind, turn, scope, state, undoes, prompt, time, action, conv_recorded, revert, step)
	SELECT id, seq, kind, turn, scope, state, undoes, prompt, time, action, conv_recorded, revert, step FROM old_ops;
INSERT INTO manifests(id, hash, base, depth) SELECT id, hash, base, depth FROM old_manifests;
INSERT INTO turns(id, seq, number, prompt, time, hidden_by, pinned, label, pruned, manifest_id)
	SELECT id, seq, number, prompt, time, hidden_by, pinned, label, pruned, manifest_id FROM old_turns;
INSERT INTO snaps(turn_id, path, seq, blob, mode, size, dirs, end_state, end_blob, end_mode, lost, step)
	SELECT turn_id, path, seq, blob, mode, size, dirs, end_state, end_blob, end_mode, lost, step FROM old_snaps;
INSERT INTO op_files(op_id, path, seq, before_blob, before_mode, before_size, after_blob, after_mode, after_size, before_dirs, after_dirs, lost)
	SELECT op_id, path, seq, before_blob, before_mode, before_size, after_blob, after_mode, after_size, before_dirs, after_dirs, lost FROM old_op_files;
INSERT INTO messages(id, turn_id, role, text, time, hidden_by, added_by)
	SELECT id, turn_id, role, text, time, hidden_by, added_by FROM old_messages;
INSERT INTO manifest_files(manifest_id, path, blob, mode, size, lost, gone)
	SELECT manifest_id, path, blob, mode, size, lost, gone FROM old_manifest_files;
INSERT INTO manifest_skips(manifest_id, path, reason) SELECT manifest_id, path, reason FROM old_manifest_skips;
INSERT INTO statcache(id, data) SELECT id, data FROM old_statcache;
INSERT INTO statcache(id, data) SELECT -1 - bucket, data FROM old_statcache_dirs;
INSERT INTO op_conv(op_id, what, row_id, shown_before) SELECT op_id, what, row_id, shown_before FROM old_op_conv;
INSERT INTO changes(id, kind, turn, path, op_id) SELECT id, kind, turn, path, op_id FROM old_changes;
INSERT INTO steps(turn_id, number, seq, key, tool, time) SELECT turn_id, number, seq, key, tool, time FROM old_steps;
INSERT INTO step_snaps(turn_id, step, path, seq, blob, mode, size, dirs, lost)
	SELECT turn_id, step, path, seq, blob, mode, size, dirs, lost FROM old_step_snaps;

DROP TABLE old_step_snaps;
DROP TABLE old_steps;
DROP TABLE old_changes;
DROP TABLE old_op_conv;
DROP TABLE old_statcache_dirs;
DROP TABLE old_statcache;
DROP TABLE old_manifest_skips;
DROP TABLE old_manifest_files;
DROP TABLE old_messages;
DROP TABLE old_op_files;
DROP TABLE old_snaps;
DROP TABLE old_turns;
DROP TABLE old_manifests;
DROP TABLE old_ops;
DROP TABLE old_clock;
DROP TABLE old_meta;

CREATE UNIQUE INDEX turns_active_number ON turns(number)WHERE hidden_by IS NULL;
CREATE INDEX snaps_path_seq ON snaps(path,seq);
CREATE INDEX op_files_path_seq ON op_files(path,seq);
CREATE INDEX messages_turn ON messages(turn_id,id);
CREATE INDEX manifests_base ON manifests(base)WHERE base IS NOT NULL;
CREATE INDEX step_snaps_path_seq ON step_snaps(path,seq);
CREATE TRIGGER changes_turn_opened AFTER INSERT ON turns BEGIN INSERT INTO changes(kind,turn)VALUES('turn_opened',NEW.number);END;
CREATE TRIGGER changes_captured AFTER INSERT ON snaps BEGIN INSERT INTO changes(kind,turn,path)SELECT'captured',number,NEW.path FROM turns WHERE id=NEW.turn_id;END;
CREATE TRIGGER changes_message AFTER INSERT ON messages BEGIN INSERT INTO changes(kind,turn)SELECT'message',number FROM turns WHERE id=NEW.turn_id;END;
CREATE TRIGGER changes_op AFTER UPDATE OF state ON ops WHEN OLD.state='planned'AND NEW.state='done'BEGIN INSERT INTO changes(kind,turn,op_id)VALUES('op',NEW.turn,NEW.id);END;
CREATE TRIGGER changes_pinned AFTER UPDATE OF pinned,label ON turns WHEN OLD.pinned IS NOT NEW.pinned OR OLD.label IS NOT NEW.label BEGIN INSERT INTO changes(kind,turn)VALUES('pinned',NEW.number);END;
CREATE TRIGGER changes_step_opened AFTER INSERT ON steps BEGIN INSERT INTO changes(kind,turn)SELECT'step_opened',number FROM turns WHERE id=NEW.turn_id;END;
CREATE TRIGGER changes_step_captured AFTER INSERT ON step_snaps BEGIN INSERT INTO changes(kind,turn,path)SELECT'captured',number,NEW.path FROM turns WHERE id=NEW.turn_id;END;

-- Give the old tables' pages back to the file system (a no-op unless the
-- index is in incremental auto-vacuum mode, as indexes ckpt creates are).
PRAGMA incremental_vacuum;
