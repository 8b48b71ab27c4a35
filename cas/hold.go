package cas

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// holdLock is the collector lock of a Disk: dir/gc.lock, flock'ed shared by
// every Hold and exclusive by Collect. Within a process an RWMutex orders
// holds and collections, and the first hold takes the shared flock for all
// of them, since flock locks belong to the open file, not the goroutine.
type holdLock struct {
	path string

	rw      sync.RWMutex // readers: holds; writer: a collection
	mu      sync.Mutex   // guards f and holders
	f       *os.File
	holders int
}

// file opens dir/gc.lock once and keeps it for the store's life: a hold
// is then two flock calls, not an open and a close as well.
func (l *holdLock) file() (*os.File, error) {
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		l.f = f
	}
	return l.f, nil
}

func (l *holdLock) hold() (func(), error) {
	l.rw.RLock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holders == 0 {
		f, err := l.file()
		if err == nil {
			err = lockFileShared(f)
		}
		if err != nil {
			l.rw.RUnlock()
			return nil, err
		}
	}
	l.holders++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.holders--
			if l.holders == 0 && l.f != nil { // nil: the store was closed meanwhile
				unlockFile(l.f)
			}
			l.mu.Unlock()
			l.rw.RUnlock()
		})
	}, nil
}

// exclusive takes the lock for a collector. No hold is held in this
// process once rw is locked, so the shared file can carry LOCK_EX.
func (l *holdLock) exclusive() (func(), error) {
	l.rw.Lock()
	l.mu.Lock()
	f, err := l.file()
	l.mu.Unlock()
	if err == nil {
		err = lockFile(f)
	}
	if err != nil {
		l.rw.Unlock()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unlockFile(f)
			l.rw.Unlock()
		})
	}, nil
}

// close releases the lock file.
func (l *holdLock) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// Hold implements Store.Hold with a shared flock on dir/gc.lock.
func (d *Disk) Hold(ctx context.Context) (func(), error) {
	if d.closed.Load() {
		return nil, fmt.Errorf("cas: hold: %w", ErrClosed)
	}
	release, err := d.gc.hold()
	if err != nil {
		return nil, fmt.Errorf("cas: hold: %w", err)
	}
	return release, nil
}

// Collect takes the collector lock: it waits until no Hold is held, in any
// process, and keeps new ones waiting until release is called. A collector
// computes the live set and deletes unreferenced blobs while holding it, so
// no blob that a writer is about to reference can be deleted.
func (d *Disk) Collect(ctx context.Context) (func(), error) {
	if d.closed.Load() {
		return nil, fmt.Errorf("cas: collect: %w", ErrClosed)
	}
	release, err := d.gc.exclusive()
	if err != nil {
		return nil, fmt.Errorf("cas: collect: %w", err)
	}
	return release, nil
}

// Hold implements Store.Hold. A Memory store has no collector, so there is
// nothing to wait for.
func (m *Memory) Hold(ctx context.Context) (func(), error) { return func() {}, nil }

func gcLockPath(dir string) string { return filepath.Join(dir, "gc.lock") }
