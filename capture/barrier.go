package capture

import (
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
)

// A Barrier makes every file an operation staged durable with one call for
// the whole file system, instead of one fsync per file: on Linux, syncfs(2)
// writes back every dirty page and inode of the file system and commits its
// journal, so once Sync returns nil each temp file staged with the barrier
// has its bytes, size and mode on disk, and a rename made after it can only
// ever expose the whole new file. Writing a thousand small files and then
// syncing them once costs the file system one journal commit, where fsyncs
// commit many and make every file creation between them wait.
//
// Sync reports a write-back error anywhere on the file system since the
// barrier was opened (Linux reports those to syncfs from 5.8 on), so it
// is opened before the first file is staged and an error fails the whole
// operation before anything is renamed, even one that was someone else's.
// NewBarrier returns nil where that promise cannot be made: another OS, an
// older kernel, or a file system not known to make syncfs durable (network
// and FUSE file systems may not pass it on); and where it would not pay:
// when other processes have much dirty data that syncfs would wait for
// too. Callers then fsync each file (StageUnsynced and SyncStaged).
//
// A Barrier is safe for concurrent use: workers stage with it while one
// goroutine calls Sync once they are done.
type Barrier struct {
	f      *os.File    // the workspace root, opened before the first write
	fi     fs.FileInfo // f's, for the device it is on
	sync   func(*os.File) error
	synced atomic.Bool // Sync returned nil
}

// NewBarrier opens a barrier on the workspace's file system, or returns nil
// when it has none (see Barrier). Close releases it.
func (w *Workspace) NewBarrier() *Barrier {
	b := w.openBarrier()
	if b != nil && !syncfsDurable(b.f) {
		b.Close()
		return nil
	}
	return b
}

// openBarrier opens a barrier whatever the file system (tests use it).
func (w *Workspace) openBarrier() *Barrier {
	f, err := w.dir.Open(".")
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil
	}
	return &Barrier{f: f, fi: fi, sync: w.syncFS}
}

// covers reports whether Sync makes durable a file in the directory dir:
// syncfs reaches one file system, and a directory below the root may be
// another one mounted there.
func (b *Barrier) covers(dir fs.FileInfo) bool { return sameDevice(b.fi, dir) }

// Sync makes every file staged with b durable. It fails when the file
// system reports a write error since b was opened; the staged files then
// cannot be committed (only discarded). It is called once, after the last
// StageFor.
func (b *Barrier) Sync() error {
	if err := b.sync(b.f); err != nil {
		return fmt.Errorf("capture: sync file system: %w", err)
	}
	b.synced.Store(true)
	return nil
}

// Close releases the barrier's handle.
func (b *Barrier) Close() error { return b.f.Close() }

// durable reports whether a file staged with b may be committed.
func (b *Barrier) durable() bool { return b.synced.Load() }
