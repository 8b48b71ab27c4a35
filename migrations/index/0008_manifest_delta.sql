-- Manifests stored as deltas: a manifest with a base holds only the rows
-- that differ from its base's entries (after the base's own chain is
-- applied), and a row with gone = 1 (blob empty) for each path its base has
-- and it lacks. depth counts the deltas down to a whole manifest (base
-- NULL, depth 0); a new manifest is stored whole once the chain would grow
-- past a bound, so a read applies a few deltas at most. A manifest stays
-- while any turn refers to it or to a delta built on it.
ALTER TABLE manifests ADD COLUMN base INTEGER REFERENCES manifests (id);
ALTER TABLE manifests ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE manifest_files ADD COLUMN gone INTEGER NOT NULL DEFAULT 0;
-- The foreign key check of a deleted manifest looks for deltas built on it.
CREATE INDEX manifests_base ON manifests (base) WHERE base IS NOT NULL;

-- The stat cache in buckets of directories: a re-scan that changed a few
-- files rewrites the rows of their directories' buckets, not the whole
-- cache. A directory's bucket is a hash of its path (checkpoints.dirBucket),
-- so a bucket holds whole directories. The statcache row (id 1) now holds a
-- header: the hash of the manifest the scan that wrote the cache took and a
-- generation; bucket rows count only while it exists (deleting it, as a
-- repair or a pull does, drops the whole cache).
CREATE TABLE statcache_dirs (
	bucket INTEGER NOT NULL PRIMARY KEY,
	data   BLOB    NOT NULL -- checkpoints.encodeStats of its files
);
