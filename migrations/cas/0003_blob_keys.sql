-- Smaller rows: each blob gets an integer key k, and a delta names its base
-- by that key instead of by the base's 32-byte id. The id is kept whole
-- once, in the row; the base index holds small integers. Column order puts data last, so reading a row's other columns
-- never walks the overflow pages of a large data value. AUTOINCREMENT: a
-- key is never reused, so a delta whose base row went missing keeps
-- pointing at nothing (broken, healed by the next Put of its content),
-- never at another blob.
CREATE TABLE blobs_v3 (
	k       INTEGER PRIMARY KEY AUTOINCREMENT,
	id      BLOB    NOT NULL,             -- BLAKE3-256 of the uncompressed bytes
	size    INTEGER NOT NULL,             -- uncompressed size: bounds decompression
	stored  INTEGER NOT NULL,             -- bytes on disk (compressed or raw)
	enc     INTEGER NOT NULL,             -- 0 raw, 1 zstd, 2 delta against base
	depth   INTEGER NOT NULL DEFAULT 0,   -- delta frames a read decodes
	base    INTEGER,                      -- enc 2: k of the base blob
	created INTEGER NOT NULL,             -- unix nanoseconds, for GC grace periods
	data    BLOB                          -- inline bytes, NULL when in a file
);
-- Roots before deltas, so keys follow the order in which a chain is read.
INSERT INTO blobs_v3 (id, size, stored, enc, depth, created, data)
	SELECT id, size, stored, enc, depth, created, data FROM blobs ORDER BY depth, created;
-- Ids are indexed by their first 8 bytes: an entry a quarter the size of
-- one holding the whole id. Lookups name the prefix and then the whole id,
-- and a new row is inserted only if no row has its id (writers hold the
-- write lock), so the index need not be unique.
CREATE INDEX blobs_id ON blobs_v3 (substr(id, 1, 8));
-- A delta whose base row is missing gets base NULL: still enc 2, so reads
-- report it corrupt, never absent.
UPDATE blobs_v3 SET base = (SELECT n.k FROM blobs o JOIN blobs_v3 n ON substr(n.id, 1, 8) = substr(o.base, 1, 8) AND n.id = o.base
		WHERE o.id = blobs_v3.id)
	WHERE enc = 2;
DROP TABLE blobs;
ALTER TABLE blobs_v3 RENAME TO blobs;
CREATE INDEX blobs_base ON blobs (base) WHERE base IS NOT NULL;
