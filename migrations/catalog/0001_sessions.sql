-- The store's catalog of sessions (STORE/catalog.db): one row per session
-- directory, a cache of what its index holds, so that listing sessions,
-- planning retention and marking live blobs need not open every index.
-- A row is trusted only while the files of the session's index are as the
-- row's sig recorded them (see checkpoints/catalog.go); anything else is
-- read from the index again and the row rewritten. Losing this database
-- loses nothing: it is rebuilt from the indexes.
CREATE TABLE sessions (
	id   TEXT    NOT NULL PRIMARY KEY,
	sig  BLOB    NOT NULL, -- the index files' identity, size and times when read
	at   INTEGER NOT NULL, -- unix nanoseconds, taken before sig
	data BLOB    NOT NULL  -- checkpoints.encodeSummary
) WITHOUT ROWID;
