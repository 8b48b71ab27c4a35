package checkpoints

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
)

// goSrcLikeStats returns a stat cache shaped like Go's source tree:
// about 1,300 directories of nine files each, paths three levels deep.
func goSrcLikeStats() []StatEntry {
	now := time.Now().UnixNano()
	var es []StatEntry
	for d := 0; d < 1300; d++ {
		dir := fmt.Sprintf("cmd/compile%02d/internal%02d/pkg%04d", d%7, d%13, d)
		for f := 0; f < 9; f++ {
			p := fmt.Sprintf("%s/file_%02d_source.go", dir, f)
			mt := now - int64(time.Hour) + int64(d*9+f)*1000
			es = append(es, StatEntry{Path: p, Size: int64(1000 + d*f), MTime: mt, CTime: mt + 12345,
				Inode: uint64(2_000_000 + d*9 + f), Mode: 0o644, Blob: cas.Sum([]byte(p)), Checked: now})
		}
	}
	return es
}

// BenchmarkLoadScanCache loads a Go-source-sized stat cache and decodes
// every directory, as an unchanged re-scan does.
func BenchmarkLoadScanCache(b *testing.B) {
	ctx := context.Background()
	x, err := Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	if err := x.SaveScanCache(ctx, nil, StatsByDir(goSrcLikeStats()), nil, nil); err != nil {
		b.Fatal(err)
	}
	var buf []StatEntry
	for b.Loop() {
		sc, err := x.LoadScanCache(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range sc.DirNames() {
			buf = sc.Dir(d, buf)
		}
	}
}

// TestEntryPathAgreesWithDecode checks that loading (entryPath) accepts
// exactly the entries decodeEntry accepts, with the same length and path,
// over truncated and corrupted encodings.
func TestEntryPathAgreesWithDecode(t *testing.T) {
	t.Parallel()
	es := goSrcLikeStats()[:50]
	es[3].Size, es[4].MTime, es[5].Inode = -1, 0, 1<<63
	b := encodeDir(es)
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(b []byte) {
		t.Helper()
		e, n := decodeEntry(b)
		p, m := entryPath(b)
		if n != m || n > 0 && p != e.Path {
			t.Fatalf("decodeEntry: %q %d, entryPath: %q %d, of % x", e.Path, n, p, m, b[:min(len(b), 64)])
		}
	}
	for i := 0; i <= len(b); i++ {
		check(b[i:])
		check(b[:i])
	}
	for range 20000 {
		c := bytes.Clone(b[:min(len(b), 300)])
		for range 1 + rng.IntN(4) {
			c[rng.IntN(len(c))] = byte(rng.Uint32())
		}
		check(c[:rng.IntN(len(c)+1)])
		check(c)
	}
}

// TestLoadScanCacheUnmaps checks that the connection LoadScanCache mapped
// the index on goes back to the pool unmapped, and that the load sees the
// cache as saved.
func TestLoadScanCacheUnmaps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	x.db.SetMaxOpenConns(1) // the load's connection is the one checked below
	es := goSrcLikeStats()
	if err := x.SaveScanCache(ctx, nil, StatsByDir(es), nil, nil); err != nil {
		t.Fatal(err)
	}
	sc, err := x.LoadScanCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Entries(); len(got) != len(es) || got[es[100].Path] != es[100] {
		t.Fatalf("loaded %d entries, want %d; %+v", len(got), len(es), got[es[100].Path])
	}
	var size int64
	if err := x.db.QueryRowContext(ctx, `PRAGMA mmap_size`).Scan(&size); err != nil || size != 0 {
		t.Fatalf("mmap_size after the load = %d, %v; want 0", size, err)
	}
}
