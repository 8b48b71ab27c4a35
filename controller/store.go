package controller

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// Store is a store directory: the root object of the API. Sessions are
// opened from it (Open), found (Resolve), listed (Sessions) and kept within
// a retention policy (Retain, RemoveSession, Verify); it keeps each
// workspace's scan-mode default (WorkspaceScan) and what an agent's forked
// conversations continue (Continue, Adopt). It is safe for concurrent use.
//
// OpenStore touches nothing on disk: the blob store (STORE/blobs) is
// opened when something first needs it, once, and every Controller opened
// from the Store shares that one handle. It is released when the Store and
// every Controller opened from it are closed, in any order.
type Store struct {
	dir string
	now func() time.Time
	log *slog.Logger
	b   *blobStore
}

// blobStore is a Store's blob store handle, shared by the Store and the
// Controllers opened from it, and opened on first use.
type blobStore struct {
	mu      sync.Mutex
	disk    *cas.Disk
	warning string
	refs    int  // Controllers open on it
	closed  bool // the Store was closed: the last Controller closes the handle
}

// OpenStore returns the store in directory dir (created when a session is
// first opened in it). Close it when done.
func OpenStore(dir string) *Store {
	return &Store{dir: dir, now: time.Now, log: slog.New(slog.DiscardHandler), b: &blobStore{}}
}

// disk returns the blob store, opening it (creating the store directory)
// on first use; with ref set the caller holds a reference (a Controller),
// which release gives back.
func (s *Store) disk(ctx context.Context, ref bool) (*cas.Disk, error) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed && (b.disk == nil || b.refs == 0) {
		return nil, errors.New("controller: the store is closed")
	}
	if b.disk == nil {
		if s.dir == "" {
			return nil, errors.New("controller: a store directory is required")
		}
		d, err := cas.OpenDisk(ctx, checkpoints.BlobDir(s.dir))
		if err != nil {
			return nil, err
		}
		warning, err := checkpoints.CheckStore(s.dir)
		if err != nil {
			d.Close()
			return nil, err
		}
		b.disk, b.warning = d, warning
	}
	if ref {
		b.refs++
	}
	return b.disk, nil
}

// release gives back a reference disk took, closing the handle when it
// was the last and the Store is closed; forExit closes it as
// cas.Disk.CloseForExit does.
func (s *Store) release(forExit bool) error {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refs--
	return b.closeIfDone(forExit)
}

// closeIfDone closes the handle once the Store is closed and no Controller
// holds it. b.mu is held.
func (b *blobStore) closeIfDone(forExit bool) error {
	if !b.closed || b.refs > 0 || b.disk == nil {
		return nil
	}
	d := b.disk
	b.disk = nil
	if forExit {
		return d.CloseForExit()
	}
	return d.Close()
}

// Close closes the store. The blob store stays open for the Controllers
// opened from it that are still open, and closes with the last of them.
func (s *Store) Close() error {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return b.closeIfDone(false)
}

// Dir returns the store directory.
func (s *Store) Dir() string { return s.dir }

// Warning is a message for people about the store as it was found when
// first used (its directory readable by other users), or "". Front-ends
// show it once.
func (s *Store) Warning() string {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.disk == nil && !b.closed {
		w, _ := checkpoints.CheckStore(s.dir) // an unusable store fails the first real use
		return w
	}
	return b.warning
}

// withClock is the store as a Controller opened with clock and logger sees
// it: retention reads that clock and logs there. It shares s's blob store.
func (s *Store) withClock(now func() time.Time, log *slog.Logger) *Store {
	return &Store{dir: s.dir, now: now, log: log, b: s.b}
}
