package cas

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// NewBatch implements Store.
func (d *Disk) NewBatch() Batch { return &diskBatch{d: d, seen: map[ID]bool{}} }

// A batch commits early when it holds this much, to bound its memory and
// its open temp files. Each row costs about 200 bytes besides its data
// (the pending entry and its id in seen), so rows are bounded too: a scan
// of 100,000 files of a few hundred bytes held 40,000 rows, 18 MiB, per
// commit with the byte bound alone.
const (
	batchBytes = 2 << 20 // inline bytes
	batchRows  = 4096    // blobs of any kind
	batchFiles = 64      // file blobs
)

// diskBatch collects pending blobs. An early commit runs outside mu, so the
// other goroutines feeding the batch keep hashing and compressing; Commit
// waits for early commits in flight.
type diskBatch struct {
	d        *Disk
	mu       sync.Mutex
	pending  []pending
	bytes    int64
	files    int
	seen     map[ID]bool // put in this batch and not yet committed
	done     bool        // Commit or Abort was called
	failed   error       // the first early commit's failure
	flushing sync.WaitGroup
}

func (b *diskBatch) Put(ctx context.Context, r io.Reader) (ID, int64, error) {
	if b.d.closed.Load() {
		return ID{}, 0, fmt.Errorf("cas: batch put: %w", ErrClosed)
	}
	p, stored, err := b.d.prepare(ctx, r)
	if err != nil {
		return ID{}, 0, fmt.Errorf("cas: batch put: %w", err)
	}
	if stored {
		return p.id, p.size, nil
	}
	b.mu.Lock()
	if b.done || b.failed != nil {
		b.mu.Unlock()
		p.discard()
		return ID{}, 0, fmt.Errorf("cas: batch put %s: %w", p.id.Short(), b.finished())
	}
	if b.seen[p.id] {
		b.mu.Unlock()
		p.discard()
		return p.id, p.size, nil
	}
	b.seen[p.id] = true
	b.pending = append(b.pending, p)
	b.bytes += int64(len(p.data))
	if p.file != nil {
		b.files++
	}
	var early []pending
	if b.bytes >= batchBytes || b.files >= batchFiles || len(b.pending) >= batchRows {
		early = b.take()
		b.flushing.Add(1)
	}
	b.mu.Unlock()
	if early != nil {
		defer b.flushing.Done()
		err := b.d.record(ctx, early)
		b.mu.Lock()
		if err != nil && b.failed == nil {
			b.failed = err
		}
		if err == nil {
			// Committed: a later Put of the same content finds its row,
			// so seen need not remember it (and stays as small as a
			// commit). A Put that checked before the commit may still
			// add it again; the row is inserted OR IGNOREd and a second
			// temp file of it discarded, so that costs only the work.
			for _, q := range early {
				delete(b.seen, q.id)
			}
		}
		b.mu.Unlock()
		if err != nil {
			return ID{}, 0, fmt.Errorf("cas: batch put %s: %w", p.id.Short(), err)
		}
	}
	return p.id, p.size, nil
}

// finished returns the error for using a finished or failed batch. The
// caller holds mu.
func (b *diskBatch) finished() error {
	if b.failed != nil {
		return fmt.Errorf("batch failed earlier: %w", b.failed)
	}
	return ErrClosed
}

// take empties the batch and returns what it held. The caller holds mu.
func (b *diskBatch) take() []pending {
	ps := b.pending
	b.pending, b.bytes, b.files = nil, 0, 0
	return ps
}

func (b *diskBatch) Commit(ctx context.Context) error {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return fmt.Errorf("cas: batch commit: %w", ErrClosed)
	}
	b.done = true
	ps := b.take()
	b.mu.Unlock()
	var err error
	if b.d.closed.Load() {
		err = ErrClosed
		for _, p := range ps {
			p.discard()
		}
	} else if len(ps) > 0 { // nothing new (all deduplicated): no transaction
		err = b.d.record(ctx, ps)
	}
	b.flushing.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && b.failed != nil {
		err = b.finished()
	}
	if err != nil {
		return fmt.Errorf("cas: batch commit: %w", err)
	}
	return nil
}

func (b *diskBatch) Abort() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	for _, p := range b.take() {
		p.discard()
	}
}
