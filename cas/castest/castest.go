// Package castest holds the conformance suite every cas.Store must pass,
// and deterministic content for tests and benchmarks of stores.
package castest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/zeebo/blake3"

	"github.com/ckpt/ckpt/cas"
)

// Run runs the conformance suite. open is called once per subtest and must
// return an empty store; Run closes it when the subtest ends. The 100 MiB
// round trip is skipped with -short.
func Run(t *testing.T, open func(t testing.TB) cas.Store) {
	newStore := func(t *testing.T) cas.Store {
		t.Helper()
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s cas.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Dedup", testDedup},
		{"NotFound", testNotFound},
		{"Delete", testDelete},
		{"Walk", testWalk},
		{"WalkDelete", testWalkDelete},
		{"BatchCommit", testBatchCommit},
		{"BatchAbort", testBatchAbort},
		{"Concurrent", testConcurrent},
		{"Cancel", testCancel},
		{"Closed", testClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

// Content returns a reader of n bytes determined by seed: runs of
// source-like lines from a small vocabulary (compressible) mixed with runs
// of random bytes (not). It generates as it is read, so large contents
// never sit in memory.
func Content(seed uint64, n int64) io.Reader {
	return &generator{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), left: n}
}

// Bytes returns Content(seed, n) read whole.
func Bytes(seed uint64, n int) []byte {
	b, _ := io.ReadAll(Content(seed, int64(n)))
	return b
}

var lines = func() [][]byte {
	words := []string{"func", "return", "err", "nil", "if", "for", "range", "ctx", "id", "store",
		"blob", ":=", "!=", "{", "}", "(", ")", "byte", "int64", "string", "fmt.Errorf", "//", "the", "a"}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, 64)
	for i := range out {
		var b bytes.Buffer
		b.WriteString("\t")
		for j := 0; j < 3+rng.IntN(8); j++ {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d\n", rng.IntN(1000))
		out[i] = b.Bytes()
	}
	return out
}()

type generator struct {
	rng  *rand.Rand
	left int64
	buf  []byte
	run  [4096]byte
}

func (g *generator) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	if len(g.buf) == 0 {
		g.fill()
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	g.left -= int64(n)
	return n, nil
}

// fill makes the next run: one time in four random bytes, else lines.
func (g *generator) fill() {
	b := g.run[:0]
	if g.rng.IntN(4) == 0 {
		b = b[:256+g.rng.IntN(len(g.run)-256)]
		for i := 0; i+8 <= len(b); i += 8 {
			v := g.rng.Uint64()
			for j := range 8 {
				b[i+j] = byte(v >> (8 * j))
			}
		}
	} else {
		for {
			l := lines[g.rng.IntN(len(lines))]
			if len(b)+len(l) > cap(b) {
				break
			}
			b = append(b, l...)
		}
	}
	g.buf = b
}

// Hash returns the ID of everything r yields, streaming it.
func Hash(t testing.TB, r io.Reader) cas.ID {
	t.Helper()
	h := blake3.New()
	if _, err := io.Copy(h, r); err != nil {
		t.Fatalf("hash: %v", err)
	}
	return cas.ID(h.Sum(nil))
}

// Put puts b and fails t on error.
func Put(t testing.TB, s cas.Store, b []byte) cas.ID {
	t.Helper()
	id, n, err := s.Put(context.Background(), bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Put(%d bytes): %v", len(b), err)
	}
	if want := cas.Sum(b); id != want || n != int64(len(b)) {
		t.Fatalf("Put(%d bytes) = %s, %d; want %s, %d", len(b), id.Short(), n, want.Short(), len(b))
	}
	return id
}

// Check fails t unless the blob id reads back, verified, as want.
func Check(t testing.TB, s cas.Store, id cas.ID, want []byte) {
	t.Helper()
	got, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id.Short(), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%s) = %d bytes, want %d bytes (content differs)", id.Short(), len(got), len(want))
	}
}

// IDs returns the IDs Walk lists, failing t on a repeat.
func IDs(t testing.TB, s cas.Store) map[cas.ID]cas.Info {
	t.Helper()
	ids := map[cas.ID]cas.Info{}
	err := s.Walk(context.Background(), func(info cas.Info) error {
		if _, dup := ids[info.ID]; dup {
			return fmt.Errorf("walk listed %s twice", info.ID.Short())
		}
		ids[info.ID] = info
		return nil
	})
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	return ids
}

func testRoundTrip(t *testing.T, s cas.Store) {
	ctx := context.Background()
	tests := []struct {
		name string
		size int64
	}{
		{"empty", 0},
		{"one byte", 1},
		{"tiny", 63},
		{"small", 8 << 10},
		{"1MiB", 1 << 20},
		{"1MiB+1", 1<<20 + 1},
		{"5MiB", 5 << 20},
		{"100MiB", 100 << 20},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.size > 32<<20 && testing.Short() {
				t.Skip("large round trip skipped with -short")
			}
			seed := uint64(i)
			want := Hash(t, Content(seed, tt.size))
			id, n, err := s.Put(ctx, Content(seed, tt.size))
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			if id != want || n != tt.size {
				t.Fatalf("Put = %s, %d; want %s, %d", id.Short(), n, want.Short(), tt.size)
			}
			info, err := s.Stat(ctx, id)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			if info.ID != id || info.Size != tt.size || info.Created.IsZero() || (tt.size > 0) != (info.Stored > 0) {
				t.Errorf("Stat = %+v, want ID %s, Size %d, Created set, Stored > 0 iff Size > 0", info, id.Short(), tt.size)
			}
			rc, err := s.Open(ctx, id)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if got := Hash(t, rc); got != id {
				t.Errorf("Open read content hashing to %s, want %s", got.Short(), id.Short())
			}
			if err := rc.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if tt.size <= 8<<20 {
				Check(t, s, id, Bytes(seed, int(tt.size)))
			}
		})
	}
}

func testDedup(t *testing.T, s cas.Store) {
	for _, size := range []int{10, 100 << 10, 2 << 20} {
		b := Bytes(7, size)
		id1 := Put(t, s, b)
		id2 := Put(t, s, b)
		if id1 != id2 {
			t.Fatalf("same %d bytes put twice: ids %s and %s", size, id1.Short(), id2.Short())
		}
	}
	if got := len(IDs(t, s)); got != 3 {
		t.Errorf("Walk listed %d blobs after putting 3 contents twice each, want 3", got)
	}
}

func testNotFound(t *testing.T, s cas.Store) {
	ctx := context.Background()
	Put(t, s, []byte("present"))
	id := cas.Sum([]byte("absent"))
	if ok, err := s.Has(ctx, id); ok || err != nil {
		t.Errorf("Has(absent) = %v, %v; want false, nil", ok, err)
	}
	ops := []struct {
		name string
		fn   func() error
	}{
		{"Open", func() error {
			rc, err := s.Open(ctx, id)
			if rc != nil {
				return fmt.Errorf("returned a non-nil reader with %v", err)
			}
			return err
		}},
		{"Get", func() error { _, err := s.Get(ctx, id); return err }},
		{"Stat", func() error { _, err := s.Stat(ctx, id); return err }},
		{"Delete", func() error { return s.Delete(ctx, id) }},
	}
	for _, op := range ops {
		err := op.fn()
		if !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("%s(absent) = %v, want ErrNotFound", op.name, err)
		}
		if errors.Is(err, cas.ErrCorrupt) {
			t.Errorf("%s(absent) = %v, must not be ErrCorrupt", op.name, err)
		}
	}
}

func testDelete(t *testing.T, s cas.Store) {
	ctx := context.Background()
	for _, size := range []int{0, 100, 3 << 20} {
		b := Bytes(11, size)
		id := Put(t, s, b)
		keep := Put(t, s, Bytes(12, size+1))
		if err := s.Delete(ctx, id); err != nil {
			t.Fatalf("Delete(%d bytes): %v", size, err)
		}
		if ok, err := s.Has(ctx, id); ok || err != nil {
			t.Errorf("Has after Delete = %v, %v; want false, nil", ok, err)
		}
		if _, err := s.Get(ctx, id); !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("Get after Delete = %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, id); !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("second Delete = %v, want ErrNotFound", err)
		}
		Check(t, s, keep, Bytes(12, size+1))
		Put(t, s, b) // deleted content can be stored again
		Check(t, s, id, b)
	}
}

func testWalk(t *testing.T, s cas.Store) {
	if got := len(IDs(t, s)); got != 0 {
		t.Fatalf("Walk of an empty store listed %d blobs", got)
	}
	want := map[cas.ID]int64{}
	for i := range 30 {
		size := 100 * i
		if i%10 == 9 {
			size = 1<<20 + i
		}
		want[Put(t, s, Bytes(uint64(100+i), size))] = int64(size)
	}
	got := IDs(t, s)
	if len(got) != len(want) {
		t.Errorf("Walk listed %d blobs, want %d", len(got), len(want))
	}
	for id, size := range want {
		if info, ok := got[id]; !ok || info.Size != size || info.Created.IsZero() {
			t.Errorf("Walk info for %s = %+v (listed %v), want Size %d and Created set", id.Short(), info, ok, size)
		}
	}
	stop := errors.New("stop")
	n := 0
	err := s.Walk(context.Background(), func(cas.Info) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("Walk with a failing callback = %v after %d calls, want %v after 1", err, n, stop)
	}
}

// testWalkDelete deletes every blob from inside Walk, as a collector does.
func testWalkDelete(t *testing.T, s cas.Store) {
	ctx := context.Background()
	for i := range 20 {
		Put(t, s, Bytes(uint64(200+i), 50+i))
	}
	err := s.Walk(ctx, func(info cas.Info) error { return s.Delete(ctx, info.ID) })
	if err != nil {
		t.Fatalf("Walk deleting: %v", err)
	}
	if got := len(IDs(t, s)); got != 0 {
		t.Errorf("%d blobs left after deleting all from Walk", got)
	}
}

func testBatchCommit(t *testing.T, s cas.Store) {
	ctx := context.Background()
	var contents [][]byte
	for i := range 40 {
		size := 10 * i
		if i%8 == 7 {
			size = 1<<20 + 100*i
		}
		contents = append(contents, Bytes(uint64(300+i), size))
	}
	contents = append(contents, contents[3], contents[7]) // repeats within the batch
	Put(t, s, contents[5])                                // already in the store
	b := s.NewBatch()
	ids := make([]cas.ID, len(contents))
	var wg sync.WaitGroup
	errs := make(chan error, len(contents))
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < len(contents); i += 2 {
				id, n, err := b.Put(ctx, bytes.NewReader(contents[i]))
				if err == nil && (id != cas.Sum(contents[i]) || n != int64(len(contents[i]))) {
					err = fmt.Errorf("batch Put(%d) = %s, %d; want %s, %d", i, id.Short(), n, cas.Sum(contents[i]).Short(), len(contents[i]))
				}
				ids[i] = id
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	for i, id := range ids {
		Check(t, s, id, contents[i])
	}
	if got, want := len(IDs(t, s)), 40; got != want {
		t.Errorf("Walk listed %d blobs after committing 40 distinct contents, want %d", got, want)
	}
	if _, _, err := b.Put(ctx, bytes.NewReader([]byte("late"))); !errors.Is(err, cas.ErrClosed) {
		t.Errorf("Put after Commit = %v, want ErrClosed", err)
	}
	if err := b.Commit(ctx); !errors.Is(err, cas.ErrClosed) {
		t.Errorf("second Commit = %v, want ErrClosed", err)
	}
}

func testBatchAbort(t *testing.T, s cas.Store) {
	ctx := context.Background()
	b := s.NewBatch()
	var ids []cas.ID
	for i, size := range []int{0, 5, 5000, 2 << 20} {
		id, _, err := b.Put(ctx, bytes.NewReader(Bytes(uint64(400+i), size)))
		if err != nil {
			t.Fatalf("batch Put: %v", err)
		}
		ids = append(ids, id)
	}
	b.Abort()
	b.Abort() // a no-op
	for _, id := range ids {
		if ok, err := s.Has(ctx, id); ok || err != nil {
			t.Errorf("Has(%s) after Abort = %v, %v; want false, nil", id.Short(), ok, err)
		}
	}
	if err := b.Commit(ctx); !errors.Is(err, cas.ErrClosed) {
		t.Errorf("Commit after Abort = %v, want ErrClosed", err)
	}
	if got := len(IDs(t, s)); got != 0 {
		t.Errorf("Walk listed %d blobs after Abort, want 0", got)
	}
}

// testConcurrent has 8 goroutines put overlapping content at once.
func testConcurrent(t *testing.T, s cas.Store) {
	ctx := context.Background()
	const distinct = 24
	sizes := make([]int, distinct)
	for i := range sizes {
		sizes[i] = 1000 * i
		if i%6 == 5 {
			sizes[i] = 1<<20 + 1000*i
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for k := range distinct {
				i := (k + 3*g) % distinct
				b := Bytes(uint64(500+i), sizes[i])
				id, _, err := s.Put(ctx, bytes.NewReader(b))
				if err == nil && id != cas.Sum(b) {
					err = fmt.Errorf("Put(content %d) = %s, want %s", i, id.Short(), cas.Sum(b).Short())
				}
				if err == nil {
					_, err = s.Get(ctx, id)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, size := range sizes {
		b := Bytes(uint64(500+i), size)
		Check(t, s, cas.Sum(b), b)
	}
	if got := len(IDs(t, s)); got != distinct {
		t.Errorf("Walk listed %d blobs, want %d", got, distinct)
	}
}

func testCancel(t *testing.T, s cas.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, size := range []int64{10, 3 << 20} {
		if _, _, err := s.Put(ctx, Content(600, size)); !errors.Is(err, context.Canceled) {
			t.Errorf("Put(%d bytes) with a cancelled context = %v, want context.Canceled", size, err)
		}
	}
	if got := len(IDs(t, s)); got != 0 {
		t.Errorf("Walk listed %d blobs after cancelled Puts, want 0", got)
	}
}

func testClosed(t *testing.T, s cas.Store) {
	ctx := context.Background()
	id := Put(t, s, []byte("x"))
	b := s.NewBatch()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	ops := []struct {
		name string
		fn   func() error
	}{
		{"Put", func() error { _, _, err := s.Put(ctx, bytes.NewReader([]byte("y"))); return err }},
		{"Open", func() error { _, err := s.Open(ctx, id); return err }},
		{"Get", func() error { _, err := s.Get(ctx, id); return err }},
		{"Has", func() error { _, err := s.Has(ctx, id); return err }},
		{"Stat", func() error { _, err := s.Stat(ctx, id); return err }},
		{"Delete", func() error { return s.Delete(ctx, id) }},
		{"Walk", func() error { return s.Walk(ctx, func(cas.Info) error { return nil }) }},
		{"Batch.Put", func() error { _, _, err := b.Put(ctx, bytes.NewReader([]byte("z"))); return err }},
		{"Batch.Commit", func() error { return b.Commit(ctx) }},
	}
	for _, op := range ops {
		if err := op.fn(); !errors.Is(err, cas.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", op.name, err)
		}
	}
}
