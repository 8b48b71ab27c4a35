-- Scan mode: a scanned turn records, when it opens, the state of every
-- file the ignore rules let through (its manifest), and what it skipped
-- (files over the size limit, directories not walked): a code rewind to it
-- also undoes shell side effects, and deletes files not in the manifest
-- unless they are ignored or were skipped. Manifests are stored once per
-- distinct content (hash: BLAKE3 of their encoding), so turns that find the
-- workspace unchanged share one. The stat cache lets the next scan reuse
-- the blob id of a file whose stat has not changed; it is one encoded row,
-- and its blobs are live for gc, so a cache hit never names a swept blob.
CREATE TABLE manifests (
	id   INTEGER PRIMARY KEY AUTOINCREMENT,
	hash BLOB    NOT NULL UNIQUE
);

CREATE TABLE manifest_files (
	manifest_id INTEGER NOT NULL REFERENCES manifests (id),
	path        TEXT    NOT NULL,
	blob        BLOB    NOT NULL,
	mode        INTEGER NOT NULL,
	size        INTEGER NOT NULL,
	lost        INTEGER NOT NULL DEFAULT 0, -- as in snaps
	PRIMARY KEY (manifest_id, path)
) WITHOUT ROWID;

CREATE TABLE manifest_skips (
	manifest_id INTEGER NOT NULL REFERENCES manifests (id),
	path        TEXT    NOT NULL,
	reason      TEXT    NOT NULL,
	PRIMARY KEY (manifest_id, path)
) WITHOUT ROWID;

ALTER TABLE turns ADD COLUMN manifest_id INTEGER REFERENCES manifests (id); -- NULL: not scanned

CREATE TABLE statcache (
	id   INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
	data BLOB    NOT NULL -- checkpoints.encodeStats
);
