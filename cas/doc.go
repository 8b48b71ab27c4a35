// Package cas stores blobs by content. A blob's ID is the BLAKE3-256 digest
// of its uncompressed bytes; putting content that is already stored is a
// no-op, so turns and sessions that share a store share their bytes.
//
// Store is the interface; *Disk is the real store and *Memory an in-memory
// one for tests. Both pass the conformance suite in cas/castest. The
// package owns everything under a Disk's directory and nothing else: it
// never looks at workspaces, and never touches a .git directory.
//
// # On-disk layout
//
//	dir/blobs.db           SQLite (WAL: also blobs.db-wal, blobs.db-shm), table blobs
//	                       from migrations/cas: k (integer key), id (indexed by its
//	                       first 8 bytes), size, stored, enc, depth, base (a k),
//	                       created, data
//	dir/objects/xx/<id>    content over 1 MiB, one file per blob; xx = first 2 hex digits
//	dir/tmp/blob-*         files being written; each is flock'ed by its writer
//	dir/lock               flock'ed while object files are moved in or deleted
//	dir/gc.lock            flock'ed shared by writers (Hold), exclusive by a collector
//
// The store is private to its owner whatever the umask: directories are
// 0700 and files 0600. blobs.db is created with 0600 before SQLite opens
// it, since SQLite gives -wal and -shm the database's own mode; OpenDisk
// tightens dir, tmp/, objects/, the lock files and the database files when
// an older or foreign tool left them wider (objects/xx/ directories are
// made 0700 and sit inside objects/).
//
// Content up to 1 MiB (uncompressed) is stored inline in blobs.data.
// Larger content is streamed to a file (hashed and compressed on the way,
// never held whole in memory) and its row has data NULL. enc is 0 for raw
// bytes, 1 for one zstd frame and 2 for a delta (below). Content is stored raw when it is under 64
// bytes or when zstd saves less than 1/32 (~3%) of it; for a file blob that
// decision is taken on its first MiB. Frames carry no checksum of their own:
// the ID is the checksum.
//
// Content of 8 MiB and more that Put can see the size of (a file) is
// compressed at SpeedFastest by GOMAXPROCS encoders working on 2 MiB jobs
// of one frame (a 512 KiB window): bounded buffers whatever the size.
// Content of one zstd block (128 KiB; most files) is compressed by
// EncodeAll without history, by the encoder returned last (whose tables
// are likeliest still in cache); larger content (inline
// blobs over 128 KiB and file blobs under 8 MiB) by a SpeedDefault stream
// with a 1 MiB window, borrowed from a pool.
//
// # Deltas
//
// A blob with enc 2 is one zstd frame compressed with the plain bytes of
// another blob, its base (the row's base column holds the base's key k, not
// its 32-byte id), as raw dictionary (zstd's "patch-from"); depth counts
// the delta frames a read decodes. Only inline blobs are deltas, and only
// against inline bases. Put tries a delta when the caller hints at a base
// (WithBase, WithBaseFunc: a path's previous version) and the content is
// new: it reads the base's chain in one query, decodes it, checks that it
// gives the hint's bytes, and encodes against the hint, or against the
// hint's ancestor at depth 8 when the hint is already at depth 16 (so a
// read never decodes more than 16 deltas and a root). It keeps the delta
// only when it is under 1/16 of the content or a quarter smaller than the
// whole frame, so once the changes since that ancestor outgrow it the
// version is stored whole and starts a new chain. Delta frames are made at
// SpeedFastest: each sets a new dictionary, whose hash tables SpeedDefault
// takes ~10x longer to build. Ids stay the BLAKE3 of the plain bytes and
// reads verify as ever: a read hashes the bytes it returns, which covers
// every base it decoded through; bases are not hashed one by one, except
// the ancestor a new delta is encoded against. A delta written since
// migration 0003 is stored bare: a 0x00 byte and the frame's blocks, its
// header (magic, dictionary id, content size) rebuilt from the row on read;
// older rows hold whole frames and read as before.
//
// Invariants:
//
//   - A delta names a base that was committed before the delta was encoded,
//     and its insert checks, in its own transaction, that the base is still
//     there (a Delete without a Hold in between fails the commit): a delta
//     row is never durable without its base.
//   - DeleteMany (the collector's sweep) deletes deepest first and never a
//     blob that a remaining row names as base (the partial index
//     blobs_base answers that), so a live delta's chain stays whole even
//     when only the delta is referenced. Walk reports each blob's Base, so
//     verify does not call such bases orphans.
//   - A missing or damaged base makes its deltas ErrCorrupt, never
//     ErrNotFound; the dedup check treats a delta whose base row is gone as
//     broken, so the next Put of that content heals it. A healing Put never
//     writes a delta (the broken row could be in the hint's own chain).
//   - OpenStored hands a delta out re-encoded as a self-contained frame, so
//     a remote's packs never depend on bases in other packs.
//
// # Repacking
//
// Put makes forward deltas: each new version against the one before, so a
// path's oldest version is whole and a read of its newest decodes the
// longest chain. Repack (retention's collection runs it before it marks
// and sweeps) rewrites a chain the way git gc packs: the newest version
// (the row with the highest key; keys are never reused) whole, and every
// other row a delta against its neighbour one step nearer the newest,
// walking out along the chain's links (a breadth-first walk of the links
// taken both ways, so a chain that forked at depth 16 stays one chain), a
// row maxDepth steps out whole again. A version that removes a line from
// the next is a delta of a few dozen bytes where the one that added it
// was ~140, and the newest version, the one rewinds and new deltas read,
// decodes with no chain at all. Frames are made at SpeedBestCompression
// (whole) and SpeedDefault (deltas), which Put cannot afford per capture.
// Only chains whose newest row is a delta are read; in them, a delta
// whose base stays is kept as it is (its depth updated), so a collection
// re-encodes about two rows per path changed since the last one.
//
// Safety:
//
//   - A chain is read and decoded whole first, each row hashed against its
//     id; one with a corrupt, missing or non-inline row, a cycle or more
//     than 64 MiB of plain bytes is left as it is (damage is verify's to
//     report, and stays ErrCorrupt).
//   - Every new frame is decoded, against its new base's plain bytes, and
//     hashed against the row's id before its transaction commits. Rows
//     keep their key, id, size and created time; only stored, enc,
//     depth, base and data change.
//   - The rows of a chain change in one transaction, which first checks
//     that none of them changed since they were read and that no row
//     outside the chain names one of them as base; otherwise the chain is
//     skipped. A reader's chain query sees the chain either before or
//     after. The new bases form a tree rooted at whole rows, so no cycle
//     and no chain deeper than maxDepth can be written.
//   - Commits take the collector lock (a Put holding the store is never
//     between encoding a delta and recording it); a Put that holds
//     nothing records its delta at its base's depth as it is at commit,
//     and fails rather than write a chain deeper than maxDepth.
//   - A crash or error before a commit leaves that batch's chains as they
//     were; batches already committed are complete (the next repack
//     skips their chains).
//
// Rows rewritten in place leave their pages part-empty, which freeing
// pages does not give back: a repack that rewrote rows holding an eighth
// of blobs.db's size VACUUMs it (keys, hence bases, are kept), if blobs.db
// is at most 256 MiB (VACUUM holds the write lock while it copies; the
// collector lock keeps captures waiting rather than timing out).
//
// # Durability
//
// When Put or Batch.Commit returns, the blob is durable. Inline bytes are in
// a committed transaction (journal_mode=WAL with synchronous=FULL fsyncs the
// WAL at each commit). A file blob is written to tmp/, fsynced, renamed into
// objects/ and the directory fsynced before its row is inserted, so a row
// always names a whole blob and a blob is durable before any index outside
// this package can reference it. CloseForExit (a ckpt command ending)
// leaves a WAL of up to 64 KiB for the next process rather than
// checkpointing it: what it holds was fsynced at commit, and the next
// opener recovers it as after a crash. A crash can leave only:
//
//   - temp files: OpenDisk removes every file in tmp/ whose lock it can take
//     (a dead writer's lock is gone; a live writer's is not);
//   - object files without a row (a crash between rename and commit, or
//     between a Delete's commit and its unlink). They are harmless: reads go
//     by rows, and the next Put of that content renames over the file.
//   - rows whose object file a crash or a person removed or truncated: the
//     next Put of that content sees it and writes the blob again. They
//     are not swept at open, which would cost a full directory scan; a
//     collector may remove them while holding dir/lock.
//
// # Dedup that heals
//
// Put skips content whose row is there, but not blindly: its dedup check
// reads the row's metadata in the same indexed query and, for a file blob,
// stats the object file. A row whose recorded size is not the content's,
// whose encoding is unknown, whose inline data is not as long as recorded,
// or whose object file is missing or not of the recorded length is broken,
// and the Put writes the blob again over it (an UPDATE that keeps the row's
// key, which deltas against it name; a file is
// renamed over the broken one under dir/lock). The check never reads
// content: re-reading and hashing every deduplicated blob would make each
// capture of an unchanged 1 MiB file cost milliseconds. Damage that keeps
// the length (flipped bits) is caught by every read (ErrCorrupt, never
// "absent") and by verify; verify --repair deletes such a row, so the next
// Put of the content stores it afresh.
//
// # Giving space back
//
// Deleting rows leaves their pages inside blobs.db. The database is created
// with auto_vacuum=INCREMENTAL, and Compact (the collector calls it after
// every sweep) truncates the file by its free pages with
// migrations.Vacuum, in time linear in the pages freed (PRAGMA
// incremental_vacuum's is their square: 43 s of CPU to free 42 MiB), and
// runs wal_checkpoint(TRUNCATE), which empties the WAL. A
// blobs.db made before this setting is converted by its first Compact with
// one VACUUM (a rewrite of the file; it needs free disk space as large as
// the live data). Object files are unlinked, which frees them at once.
// Migration 0003 (integer keys) copies the blobs table once, so until the
// next Compact an upgraded blobs.db holds the old table's pages as free
// pages: about twice its size, for one collection's time.
//
// Reads verify: every reader hashes what it returns and fails with
// ErrCorrupt on a mismatch, on fewer or more bytes than the row records, on
// undecodable data and on a missing object file. Decompression is bounded by
// the recorded size: DecodeAll is capped at size+1 bytes, a stream is read
// for at most size+1 bytes, and decoders refuse windows over 64 MiB, so a
// zstd bomb costs a few hundred KiB and an ErrCorrupt.
//
// # Concurrency
//
// A Disk is safe for concurrent use by goroutines and by processes sharing
// the directory. SQLite serializes writers (BEGIN IMMEDIATE via _txlock,
// busy_timeout 10 s); within a process a mutex queues them so they do not
// poll. Dedup across writers is the insert's own check that no row has the
// id (the id index is on an 8-byte prefix, not unique; the check is
// race-free under the write lock). Moving files into objects/
// and deleting them happen under dir/lock (an flock plus a mutex), and a Put
// re-checks under it that the row is still absent, so a Delete can never
// unlink a file another Put has just recorded. Locks are always taken in the
// order dir/lock, then the SQLite write lock. The zstd EncodeAll/DecodeAll
// state is shared (it is concurrency-safe); a streaming encoder or decoder
// holds window-sized buffers and serves one stream, so streams borrow them
// from a sync.Pool. Where flock is missing (not Linux, macOS or a BSD), dir/lock
// only serializes one process and temp files are cleaned after an hour.
//
// A Batch hashes and compresses outside every lock, and commits early each
// time it holds 2 MiB of inline data, 4096 blobs or 64 files, without
// stopping the goroutines feeding it.
//
// # Why this layout
//
// Workspaces are mostly small files (Go's src: 11,478 files, 127.6 MB).
// One file per blob, as git's loose objects do, costs an inode and a whole
// filesystem block per blob: git stores that tree in 38.5 MB that take
// 73.3 MB on disk. Packed into SQLite the same blobs take 38.1 MB on disk,
// and one transaction commits thousands of them. Large blobs get files so
// they stream, do not bloat the WAL (which would write them twice), and can
// be deleted without rewriting pages.
//
// SQLite settings are in the DSN so every pooled connection gets them, and
// OpenDisk checks that journal_mode, busy_timeout and synchronous took. It
// opens through migrations.Open, which retries the SQLITE_BUSY that several
// processes creating the same new file at once get from the switch to WAL.
// page_size is 2048 for a new store (512 before; see the measurements). Every
// page a commit changes is one WAL frame written with its own pwrite, and a
// blob of a few KiB spans several 512-byte overflow pages: a capture of
// 2,000 files wrote 29 pages a file. journal_mode is set with the driver's _journal_mode key
// rather than _pragma, because the driver runs _pragma values in sorted
// order (journal_mode before page_size) and a database in WAL mode keeps
// the page size it was created with.
//
// # Measurements
//
// Machine: 2 cores, Intel(R) Xeon(R) Processor (lscpu), linux/amd64, go1.26,
// shared with other jobs (load average 1-2.5 during the runs, so wall times
// vary by ±30%). Command:
//
//	go test -run '^$' -bench . ./cas
//
//	BenchmarkPutSmall     8 KiB of Go source, durable        0.25-0.31 ms/op (target <= 0.5 ms)
//	BenchmarkGetSmall     8 KiB, verified                    0.054-0.073 ms/op
//	BenchmarkGet1MiB      largest inline blob                570-790 MB/s
//	BenchmarkPut64MiB     generated content, 0.23 stored/raw 245-300 MB/s
//	BenchmarkGet64MiB     same, verified                     690-800 MB/s
//	BenchmarkBulkGoroot   $GOROOT/src via one Batch, 2 goroutines:
//	                      ckpt 1.05-1.27 s (1.8-2.2 s CPU), 38.1 MB stored (38.1 MB on disk)
//	                      = 0.299 of raw (target <= 0.30) and 0.99x git's 38.5 MB
//	                      (0.52x git's 73.3 MB on disk; target <= git);
//	                      git add -A into a fresh repository, at the same time: 4.3-5.7 s,
//	                      so ckpt was 3.4-4.8x faster (target >= 3x) using 2.0-2.8x less CPU.
//	                      git alone was 3.3-4.0 s early in the session on a quieter
//	                      machine; against that ckpt's times are 2.6-3.8x.
//
// Choices measured on the bulk benchmark (stored MB / ckpt wall time):
//
//	zstd level  SpeedFastest 40.1 MB / 0.94 s, SpeedDefault 38.1 MB / 1.09 s,
//	            SpeedBetterCompression 36.9 MB / 1.17 s (+45% compression CPU
//	            single-threaded): SpeedDefault is the only level that meets the size
//	            and the speed targets together with some margin on speed.
//	page_size   512: 38.1 MB, 1024: 38.6 MB, 2048: 39.4 MB, 4096: 40.3 MB, 8192: 41.0 MB;
//	            no difference in time beyond noise, nor in Get of 8 KiB or 1 MiB blobs.
//	            On BenchmarkHistory (deltas, integer keys, prefix id index) 1024 would
//	            store 5.44 MB for 5.71 MB, but here 38.54 MB, past 0.30 of raw and git's
//	            38.5 MB: 512 stayed, until the system calls were counted. One
//	            whole-process `ckpt capture` of 2,000 files of Go's src into a new
//	            store (strace -f -c; CPU = user + sys, median of 3 interleaved runs,
//	            load average 31-33), by page size:
//
//	                     pwrite64  pread64  syscalls  CPU     blobs.db
//	            512      58,667    25,155   174,240   1.42 s  6.00 MB
//	            1024     32,302    12,862   126,920   1.20 s  6.13 MB
//	            2048     21,757     6,967   112,391   1.09 s  6.35 MB
//	            4096     16,755     3,422   102,415   1.26 s  6.55 MB
//
//	            (git add of the same paths: 0.91-0.97 s CPU.) BenchmarkHistory, the
//	            same run: 512 5.60 MB, 2048 5.34 MB (rows of deltas pack better in
//	            larger pages). 2048 takes a third fewer system calls and ~23% less
//	            CPU than 512 for 6% more bytes on whole small files and 5% fewer on
//	            deltas; 4096 saves few more calls and no CPU for 9% more bytes.
//	batch size  8 and 32 MiB early commits: equal within noise; 8 MiB keeps memory lower.
//
// Deltas, on bench/compare.sh's store-bytes figure (1,000 source files, each
// turn capturing 100 of them before a one-line edit; load average 5-20):
//
//	20 turns    whole versions 8.42 MB, 8-deep deltas 3.56 MB, now 3.33 MB (shadow
//	            git after gc: 2.80 MB); blobs.db 2.90 MB, index.db 0.42 MB
//	100 turns   8-deep deltas 9.00 MB, now 7.52 MB (shadow git after gc: 4.29 MB).
//	            9,992 of 11,000 blobs are deltas of 140 bytes on average (174
//	            before), against 2.5 KB for a whole version; blobs.db is 5.68 MB
//	            (7.16 MB before) for 3.88 MB of frames: about 165 bytes of SQLite a
//	            blob (270 before), of which 55 are page slack (two rows of ~200
//	            bytes to a 512-byte page). The session's index.db is 1.83 MB.
//
// What the changes since 8-deep deltas gave, on BenchmarkHistory (the same
// 100 turns put straight into a Disk; load average 11-15):
//
//	integer keys, base by key         blobs.db 7.13 -> 6.32 MB
//	16-deep chains, SpeedFastest      6.32 -> 6.05 MB
//	id index on an 8-byte prefix      6.05 -> 5.71 MB
//	bare delta frames                 5.71 -> 5.60 MB
//
// All of them against 8-deep deltas, two interleaved runs each: a turn's
// 100 puts 0.21-0.31 s -> 0.10-0.15 s (SpeedFastest); a Get of each file's
// latest version 0.89-0.92 ms -> 0.88-1.07 ms, chains twice as deep but
// read in one query and hashed once.
//
// Repack, on the same figure (bench/compare.sh --reps 1 --only store, which
// now runs ckpt gc before measuring as it runs git gc; load average 5-11):
//
//	                       blobs.db   frames                      gc CPU
//	before (no repack)     5.45 MB    2.49 MB whole, 1.40 MB in   0.2 s
//	                                  9,992 deltas of 140 B
//	repacked               4.82 MB    3.07 MB whole (the newest   9-11 s (git gc
//	                                  versions), 0.36 MB in       --aggressive:
//	                                  9,992 deltas of 36 B        21-23 s)
//
// The blob store's frames are now git's pack's (3.43 MB against 3.40); a
// Get of each file's newest version costs 120-185 µs of CPU where it cost
// 446 (no chain to decode), of every version 316-328 µs for 344-374. Rows
// rewritten in place had left blobs.db at 7.21 MB of part-empty pages
// before the VACUUM. Deltas at SpeedBetterCompression would save 0.11 MB
// more for ~8 s more CPU; whole frames at SpeedBetterCompression instead
// of SpeedBestCompression 0.13 MB less for ~5 s less. gc's peak RSS is
// ~82 MB (40 MB before).
//
// Git's pack was smaller for two reasons: it stores each file's newest
// version whole and older ones as deltas against newer ones (a delta that
// removes a line is ~36 bytes; one that adds it holds the line), which
// Repack now does too, and a pack has no per-object b-tree, which is
// what is left: blobs.db around the frames is 1.39 MB, ~126 B a blob (a
// pack index: 31 B an object). At Put, SpeedBetterCompression made
// deltas 12% smaller but took ~5 ms each (its dictionary tables are
// rebuilt per delta).
//
// Large files (128 MiB of Go source, whole ckpt capture process against
// zstd -3 -T1, interleaved, load average 12-13): single SpeedDefault stream
// 0.45-0.65x, the parallel SpeedFastest encoder 0.70-1.02x; at load 7,
// three interleaved runs: 0.40-0.65x before, 0.8-1.0x after. On 128 MiB it
// stores 32.1 MB where SpeedDefault stored 28.5 MB.
package cas
