-- Retention: turns can be pinned (with an optional label) so no policy
-- prunes them; a pruned turn has lost its file snapshots to retention and can
-- no longer be rewound in code. lost marks a snapshot or op state whose blob
-- verify --repair found missing or corrupt: a rewind skips such a path and
-- says why, rather than restoring anything else in its place.
ALTER TABLE turns ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN label  TEXT    NOT NULL DEFAULT '';
ALTER TABLE turns ADD COLUMN pruned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snaps ADD COLUMN lost INTEGER NOT NULL DEFAULT 0;
ALTER TABLE op_files ADD COLUMN lost INTEGER NOT NULL DEFAULT 0;
