// Package retention keeps a ckpt store's disk use bounded: it decides which
// checkpoints to prune (a pure function that explains every decision),
// removes whole sessions, collects blobs nothing references, and verifies
// that every referenced blob is there and intact.
//
// # What pruning means
//
// Pruning a turn drops its file snapshots; its conversation stays, and the
// turn can no longer be rewound in code. A code rewind to turn T needs the
// snapshots of T and of every turn opened after it, so retention only ever
// prunes a prefix of a session's turns (hidden ones included, in the order
// they were opened): the first turn a rule keeps keeps every later one.
// Undo records (the before and after states of rewinds and undos) are never
// pruned, and neither is a pinned turn, nor the session's open turn.
//
// The rules: MaxAge prunes turns opened longer ago (default 30 days),
// KeepTurns keeps only the newest N turns of each session, and MaxBytes
// (off by default) prunes the oldest turns of the whole store, across
// sessions, until the bytes only they reference bring the store under the
// quota. A session not used for MaxAge, with nothing pinned, is removed
// whole. Policy.Session narrows pruning to one session and removes none.
//
// # The quota is bytes on disk
//
// MaxBytes bounds what the store takes on disk as du counts it (DiskUsage:
// the allocated blocks of every file under the store, session indexes and
// SQLite WALs included), not the content it holds. PlanFor splits that
// total into blob content (stored sizes), each session's directory, and
// the rest (config, locks, block rounding), less what the next collection's
// compaction gives back (blobs.db's free pages and WAL). Each blob carries
// its share of blobs.db's per-row overhead and each snapshot row its share
// of its session's index; pruning frees what only pruned turns reference
// (a blob a kept delta is stored against stays), removing a session frees
// its directory too. That is an estimate, so Retain plans again when the
// compacted store is still over the quota. Collection ends with cas.Disk.Compact and pruning with
// checkpoints.Index.Compact, which return SQLite's freed pages to the file
// system, so after prune and gc the store is under the quota on disk.
//
// # Removing a session
//
// Only two things remove a session whole: the MaxAge rule above, and
// RemoveSession (ckpt sessions rm ID), which refuses a session with pinned
// turns or without a readable index unless forced. Both hold the session's
// rewind lock and rename its directory away before deleting it, so a crash
// leaves no half-deleted index that looks live.
//
// # Why collection is safe while others capture
//
// A writer (capture, opening a turn, planning a rewind) stores a blob and
// then commits an index row that references it. Between the two the blob
// is unreferenced, and a plain mark-and-sweep could delete it; worse, a Put
// of content already stored is a no-op, so even an old, unreferenced blob
// can be about to gain a reference (dedup resurrection), which no grace
// period measured on the blob's age can see. ckpt uses a lock instead: every
// writer holds the store's shared hold (cas.Store.Hold, an flock on
// blobs/gc.lock) from its Put until its row commits, and the collector
// marks and sweeps under the exclusive lock (cas.Disk.Collect). While the
// collector runs, no write is half done, so every reference that will exist
// is already committed and visible to the mark; after it, a Put of swept
// content stores it again. Writers wait at most one collection; the
// collector waits for in-flight captures (milliseconds). An optional grace
// period (Policy.Grace, default 0) also spares blobs younger than it, as a
// second line for writers outside this protocol.
//
// An empty or unreadable live set never deletes anything: if any session's
// index cannot be read, or a session has no index.db (missing or empty, or
// its whole directory gone while the store's registry still names it; see
// checkpoints.RegistryDir; ErrNoIndex), collection stops before deleting
// and names the directory. Retention never opens a missing index, which
// would create an empty one; only removing the session (RemoveSession with
// force) lets its blobs go.
//
// # The catalog
//
// Planning, collection's mark and listing sessions read each session's
// summary (its turns with their blobs, undo blobs, every blob it
// references, last use) from the store's catalog (checkpoints.Catalog)
// instead of opening thousands of indexes. The catalog vouches for a
// summary only while the index's files are exactly as they were when it
// was read, with no commit pending in a WAL and no write recent enough to
// hide in the file system's timestamp granularity; every other session is
// read from its index, under the collector's lock for the mark. So the
// mark sees every reference any index holds, as it did when it opened
// every index, whoever wrote it and however a writer stopped. Verify reads
// every index and checks the catalog's trusted summaries against them.
package retention
