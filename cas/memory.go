package cas

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// Memory is a Store that keeps blobs uncompressed in memory, for tests and
// for callers that need no persistence. It is safe for concurrent use.
type Memory struct {
	// Clock returns the creation time recorded for new blobs. Set it
	// before the first Put; nil means time.Now.
	Clock func() time.Time

	mu     sync.RWMutex
	blobs  map[ID]memBlob
	closed bool
}

type memBlob struct {
	data    []byte
	created time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty Memory store.
func NewMemory() *Memory { return &Memory{blobs: map[ID]memBlob{}} }

func (m *Memory) now() time.Time {
	if m.Clock != nil {
		return m.Clock()
	}
	return time.Now()
}

// read reads r whole and returns its ID.
func (m *Memory) read(ctx context.Context, r io.Reader) (ID, []byte, error) {
	b, err := io.ReadAll(ctxReader{ctx, r})
	if err != nil {
		return ID{}, nil, fmt.Errorf("cas: put: %w", err)
	}
	return Sum(b), b, nil
}

func (m *Memory) isClosed() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.closed
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, r io.Reader) (ID, int64, error) {
	id, b, err := m.read(ctx, r)
	if err != nil {
		return ID{}, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ID{}, 0, fmt.Errorf("cas: put %s: %w", id.Short(), ErrClosed)
	}
	if _, ok := m.blobs[id]; !ok {
		m.blobs[id] = memBlob{data: b, created: m.now()}
	}
	return id, int64(len(b)), nil
}

// lookup returns the blob named id; op names the operation for errors.
func (m *Memory) lookup(op string, id ID) (memBlob, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return memBlob{}, fmt.Errorf("cas: %s %s: %w", op, id.Short(), ErrClosed)
	}
	b, ok := m.blobs[id]
	if !ok {
		return memBlob{}, fmt.Errorf("cas: %s %s: %w", op, id.Short(), ErrNotFound)
	}
	return b, nil
}

func (m *Memory) open(op string, id ID) (*verifier, error) {
	b, err := m.lookup(op, id)
	if err != nil {
		return nil, err
	}
	return newVerifier(id, int64(len(b.data)), bytes.NewReader(b.data), nil, nil), nil
}

// Open implements Store.
func (m *Memory) Open(ctx context.Context, id ID) (io.ReadCloser, error) {
	v, err := m.open("open", id)
	if err != nil {
		return nil, err // not a nil *verifier in a non-nil interface
	}
	return v, nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, id ID) ([]byte, error) {
	v, err := m.open("get", id)
	if err != nil {
		return nil, err
	}
	return v.readAll()
}

// Has implements Store.
func (m *Memory) Has(ctx context.Context, id ID) (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return false, fmt.Errorf("cas: has %s: %w", id.Short(), ErrClosed)
	}
	_, ok := m.blobs[id]
	return ok, nil
}

// Stat implements Store. Stored equals Size: Memory does not compress.
func (m *Memory) Stat(ctx context.Context, id ID) (Info, error) {
	b, err := m.lookup("stat", id)
	if err != nil {
		return Info{}, err
	}
	return b.info(id), nil
}

func (b memBlob) info(id ID) Info {
	n := int64(len(b.data))
	return Info{ID: id, Size: n, Stored: n, Created: b.created}
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, id ID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("cas: delete %s: %w", id.Short(), ErrClosed)
	}
	if _, ok := m.blobs[id]; !ok {
		return fmt.Errorf("cas: delete %s: %w", id.Short(), ErrNotFound)
	}
	delete(m.blobs, id)
	return nil
}

// Walk implements Store. It walks a snapshot taken when it starts.
func (m *Memory) Walk(ctx context.Context, fn func(Info) error) error {
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return fmt.Errorf("cas: walk: %w", ErrClosed)
	}
	infos := make([]Info, 0, len(m.blobs))
	for id, b := range m.blobs {
		infos = append(infos, b.info(id))
	}
	m.mu.RUnlock()
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cas: walk: %w", err)
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// Close implements Store. It drops every blob.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.blobs = nil
	return nil
}

// NewBatch implements Store. The batch holds its blobs until Commit.
func (m *Memory) NewBatch() Batch { return &memBatch{m: m, blobs: map[ID][]byte{}} }

type memBatch struct {
	m     *Memory
	mu    sync.Mutex
	blobs map[ID][]byte
	done  bool
}

func (b *memBatch) Put(ctx context.Context, r io.Reader) (ID, int64, error) {
	id, data, err := b.m.read(ctx, r)
	if err != nil {
		return ID{}, 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done || b.m.isClosed() {
		return ID{}, 0, fmt.Errorf("cas: batch put %s: %w", id.Short(), ErrClosed)
	}
	b.blobs[id] = data
	return id, int64(len(data)), nil
}

func (b *memBatch) Commit(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return fmt.Errorf("cas: batch commit: %w", ErrClosed)
	}
	b.done = true
	m := b.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("cas: batch commit: %w", ErrClosed)
	}
	now := m.now()
	for id, data := range b.blobs {
		if _, ok := m.blobs[id]; !ok {
			m.blobs[id] = memBlob{data: data, created: now}
		}
	}
	b.blobs = nil
	return nil
}

func (b *memBatch) Abort() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	b.blobs = nil
}
