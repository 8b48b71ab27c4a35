-- Blobs small enough to pack live inline in data; larger ones live in a file
-- under objects/ and have data NULL. The row is written only after the bytes
-- are durable, so a row always names a whole blob.
CREATE TABLE blobs (
	id      BLOB    NOT NULL PRIMARY KEY, -- BLAKE3-256 of the uncompressed bytes
	size    INTEGER NOT NULL,             -- uncompressed size: bounds decompression
	stored  INTEGER NOT NULL,             -- bytes on disk (compressed or raw)
	enc     INTEGER NOT NULL,             -- 0 raw, 1 zstd
	data    BLOB,                         -- inline bytes, NULL when in a file
	created INTEGER NOT NULL              -- unix nanoseconds, for GC grace periods
);
