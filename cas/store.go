package cas

import (
	"context"
	"errors"
	"io"
	"time"
)

// Errors returned by stores. Callers test for them with errors.Is; the
// returned errors wrap them and name the blob.
var (
	// ErrNotFound is wrapped when a blob is not in the store.
	ErrNotFound = errors.New("blob not found")
	// ErrCorrupt is wrapped when stored bytes do not match their ID: a hash
	// mismatch, fewer or more bytes than recorded, undecodable data, or a
	// missing object file. It is never reported as ErrNotFound.
	ErrCorrupt = errors.New("corrupt blob")
	// ErrClosed is wrapped by every call on a closed store, and by Put and
	// Commit on a finished batch.
	ErrClosed = errors.New("store closed")
)

// Info describes a stored blob.
type Info struct {
	ID      ID
	Size    int64     // uncompressed bytes
	Stored  int64     // bytes the blob takes in the store (compressed or raw)
	Created time.Time // when this store first recorded the blob
	// Base is the blob this one is stored as a delta against (doc.go,
	// "Deltas"), zero when it is stored whole. Reading the blob needs its
	// base, so a blob that is some live blob's base is live too.
	Base ID
}

// Store is a content-addressed blob store. It is implemented by *Disk and
// *Memory; both are safe for concurrent use. Operations that fail wrap
// ErrNotFound, ErrCorrupt or ErrClosed where those apply.
type Store interface {
	// Put stores everything r yields and returns its ID and uncompressed
	// size. It streams: r is never held whole in memory by Disk. Putting
	// content that is already stored is a no-op. When Put returns, the
	// blob is durable.
	Put(ctx context.Context, r io.Reader) (ID, int64, error)
	// Open returns a reader of the blob's bytes. It returns an error
	// wrapping ErrNotFound if the blob is absent. The reader verifies as it
	// goes: Read returns an error wrapping ErrCorrupt, naming the blob, on a
	// hash mismatch, a truncated blob or one longer than its recorded size.
	// Bytes read before such an error must not be trusted. Close releases
	// the reader.
	Open(ctx context.Context, id ID) (io.ReadCloser, error)
	// Get returns the blob's bytes, verified; errors as for Open.
	Get(ctx context.Context, id ID) ([]byte, error)
	// Has reports whether the blob is stored.
	Has(ctx context.Context, id ID) (bool, error)
	// Stat describes the blob, or returns an error wrapping ErrNotFound.
	Stat(ctx context.Context, id ID) (Info, error)
	// Delete removes the blob, or returns an error wrapping ErrNotFound.
	Delete(ctx context.Context, id ID) error
	// Walk calls fn for every blob, in no particular order, without
	// reading blob contents. fn may call other methods of the store,
	// Delete included. Walk stops at and returns fn's first error.
	Walk(ctx context.Context, fn func(Info) error) error
	// NewBatch starts a batch of Puts committed together.
	NewBatch() Batch
	// Hold keeps a collector (Disk.Collect) from deleting any blob until
	// release is called. Hold it from a Put whose id will be referenced
	// until that reference is committed: the collector then cannot sweep
	// the blob in between, even when the Put found it already stored and
	// unreferenced, and did nothing. Holds are shared, by goroutines and
	// processes alike; calling release again is a no-op.
	Hold(ctx context.Context) (release func(), err error)
	// Close releases the store. Calls after Close fail with ErrClosed;
	// calling Close again returns nil. Close does not wait for calls in
	// flight.
	Close() error
}

// Batch groups many Puts into one durable commit, for scanning thousands of
// files. Put is safe for concurrent use, and does its hashing and
// compression outside any lock, so several goroutines can feed one batch.
// Blobs put in a batch are durable and visible once Commit returns. An
// implementation may commit part of a large batch early to bound its memory
// (Disk does); Abort discards only what is not committed yet, and blobs
// committed early are ordinary unreferenced blobs. A batch is finished by
// Commit or Abort; after that Put and Commit fail with ErrClosed and Abort
// does nothing.
type Batch interface {
	// Put adds r's content to the batch and returns its ID and size.
	Put(ctx context.Context, r io.Reader) (ID, int64, error)
	// Commit makes every blob put in the batch durable and visible. If it
	// fails, blobs not yet committed are discarded.
	Commit(ctx context.Context) error
	// Abort discards the blobs not yet committed.
	Abort()
}

// ctxReader fails reads once ctx is done, so a long Put can be cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
