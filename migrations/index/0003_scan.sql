-- Scan mode: a scanned turn records, when it opens, the state of every
-- file the ignore rules let through (its manifest), and what it skipped
-- (files over the size limit, directories not walked): a code rewind to it
-- also undoes shell side effects, and deletes files not in the manifest
-- unless they are ignored or were skipped. The stat cache lets the next scan
-- reuse the blob id of a file whose stat has not changed; its blobs are live
-- for gc, so a cache hit never names a swept blob.
ALTER TABLE turns ADD COLUMN scanned INTEGER NOT NULL DEFAULT 0;

CREATE TABLE manifest (
	turn_id INTEGER NOT NULL REFERENCES turns (id),
	path    TEXT    NOT NULL,
	blob    BLOB    NOT NULL,
	mode    INTEGER NOT NULL,
	size    INTEGER NOT NULL,
	lost    INTEGER NOT NULL DEFAULT 0, -- as in snaps
	PRIMARY KEY (turn_id, path)
) WITHOUT ROWID;

CREATE TABLE manifest_skips (
	turn_id INTEGER NOT NULL REFERENCES turns (id),
	path    TEXT    NOT NULL,
	reason  TEXT    NOT NULL,
	PRIMARY KEY (turn_id, path)
) WITHOUT ROWID;

CREATE TABLE statcache (
	path    TEXT    NOT NULL PRIMARY KEY,
	size    INTEGER NOT NULL,
	mtime   INTEGER NOT NULL, -- nanoseconds
	ctime   INTEGER NOT NULL, -- nanoseconds
	inode   INTEGER NOT NULL,
	mode    INTEGER NOT NULL,
	blob    BLOB    NOT NULL,
	checked INTEGER NOT NULL  -- when the entry was stat'ed (nanoseconds): git's racy rule
) WITHOUT ROWID;
