-- Agent sessions that continue a session of the store (a Claude Code
-- conversation forked by a rewind records into the session it was forked
-- from): agent session id -> the ckpt session, and where the fork began
-- (the conversation entry it began after, and the agent session whose
-- transcript holds it). The fact is a meta row of the continued session's
-- index (checkpoints.Index.AddContinuation); this table finds it by the
-- agent's id without opening every index. It is rebuilt from the indexes
-- (and from the link files of older stores) while continuations_built has
-- no row: a new or rebuilt catalog, a store older than this table.
CREATE TABLE continuations (
	id      TEXT NOT NULL PRIMARY KEY,
	session TEXT NOT NULL,
	at      TEXT NOT NULL,
	at_in   TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE continuations_built (done INTEGER NOT NULL PRIMARY KEY);
