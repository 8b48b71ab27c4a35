package cas_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/cas/castest"
	"github.com/ckpt/ckpt/migrations"
)

func openDisk(t testing.TB, dir string) *cas.Disk {
	t.Helper()
	d, err := cas.OpenDisk(context.Background(), dir)
	if err != nil {
		t.Fatalf("OpenDisk: %v", err)
	}
	return d
}

func TestDisk(t *testing.T) {
	t.Parallel()
	castest.Run(t, func(t testing.TB) cas.Store { return openDisk(t, t.TempDir()) })
}

// rawDB opens the store's index directly, as damage from outside would.
func rawDB(t testing.TB, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "blobs.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func objectPath(dir string, id cas.ID) string {
	return filepath.Join(dir, "objects", id.String()[:2], id.String())
}

func random(seed uint64, n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed)}).Read(b)
	return b
}

func TestDiskLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	db := rawDB(t, dir)
	tests := []struct {
		name    string
		content []byte
		enc     int
		inFile  bool
	}{
		{"empty", nil, 0, false},
		{"below 64 bytes", []byte(strings.Repeat("a", 63)), 0, false},
		{"compressible", castest.Bytes(1, 100<<10), 1, false},
		{"incompressible", random(1, 100<<10), 0, false},
		{"over one block compressible", castest.Bytes(4, 128<<10+1), 1, false},
		{"over one block incompressible", random(3, 200<<10), 0, false},
		{"1MiB compressible", castest.Bytes(2, 1<<20), 1, false},
		{"over 1MiB compressible", castest.Bytes(3, 1<<20+1), 1, true},
		{"over 1MiB incompressible", random(2, 3<<20), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := castest.Put(t, d, tt.content)
			var size, stored int64
			var enc int
			var inFile bool
			var dataLen sql.NullInt64
			err := db.QueryRow(`SELECT size, stored, enc, data IS NULL, length(data) FROM blobs WHERE id = ?`, id).
				Scan(&size, &stored, &enc, &inFile, &dataLen)
			if err != nil {
				t.Fatal(err)
			}
			if size != int64(len(tt.content)) || enc != tt.enc || inFile != tt.inFile {
				t.Errorf("row: size %d, enc %d, in file %v; want %d, %d, %v", size, enc, inFile, len(tt.content), tt.enc, tt.inFile)
			}
			fi, err := os.Stat(objectPath(dir, id))
			switch {
			case tt.inFile && err != nil:
				t.Errorf("object file: %v", err)
			case tt.inFile && fi.Size() != stored:
				t.Errorf("object file has %d bytes, row says stored %d", fi.Size(), stored)
			case !tt.inFile && err == nil:
				t.Errorf("inline blob also has an object file")
			case !tt.inFile && dataLen.Int64 != stored:
				t.Errorf("inline data has %d bytes, row says stored %d", dataLen.Int64, stored)
			}
			if enc == 1 && stored >= size {
				t.Errorf("compressed blob stored in %d bytes, not less than its %d", stored, size)
			}
			castest.Check(t, d, id, tt.content)
		})
	}
}

func TestDiskReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	contents := [][]byte{nil, []byte("x"), castest.Bytes(1, 5000), castest.Bytes(2, 2<<20)}
	for _, c := range contents {
		castest.Put(t, d, c)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openDisk(t, dir)
	defer d.Close()
	for _, c := range contents {
		castest.Check(t, d, cas.Sum(c), c)
	}
	if got := len(castest.IDs(t, d)); got != len(contents) {
		t.Errorf("Walk after reopen listed %d blobs, want %d", got, len(contents))
	}
}

func TestDiskClock(t *testing.T) {
	t.Parallel()
	d := openDisk(t, t.TempDir())
	defer d.Close()
	when := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	d.Clock = func() time.Time { return when }
	for _, c := range [][]byte{[]byte("small"), castest.Bytes(1, 2<<20)} {
		info, err := d.Stat(context.Background(), castest.Put(t, d, c))
		if err != nil {
			t.Fatal(err)
		}
		if !info.Created.Equal(when) {
			t.Errorf("Created = %v, want %v", info.Created, when)
		}
	}
}

// TestDiskOrphanObject: an object file without a row, as a crash between
// rename and commit leaves, is replaced by the next Put of that content.
func TestDiskOrphanObject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	content := castest.Bytes(1, 2<<20)
	id := cas.Sum(content)
	path := objectPath(dir, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("half-written garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	castest.Put(t, d, content)
	castest.Check(t, d, id, content)
}

// zstdBomb returns a valid zstd frame of RLE blocks that decompresses to n
// zero bytes in 4 bytes per 128 KiB. With declare the header states n as
// the content size (a single-segment frame, whose window is n).
func zstdBomb(n int64, declare bool) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if declare {
		b = append(b, 0xe0) // 8-byte content size, single segment
		b = binary.LittleEndian.AppendUint64(b, uint64(n))
	} else {
		b = append(b, 0x00, 7<<3) // no content size; window 2^(10+7)
	}
	const block = 128 << 10
	for left := n; left > 0; left -= block {
		h := uint32(min(left, block))<<3 | 1<<1 // RLE block
		if left <= block {
			h |= 1 // last
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	return b
}

func TestZstdBombIsValid(t *testing.T) {
	t.Parallel()
	for _, declare := range []bool{false, true} {
		dec, err := zstd.NewReader(bytes.NewReader(zstdBomb(300<<10, declare)))
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, dec)
		dec.Close()
		if err != nil || n != 300<<10 {
			t.Errorf("bomb (declare %v) decoded to %d bytes, %v; want %d, nil", declare, n, err, 300<<10)
		}
	}
}

// TestDiskCorrupt does not run in parallel: it bounds a damaged read's
// allocation by the process's TotalAlloc, which counts other tests too.
func TestDiskCorrupt(t *testing.T) {
	type damage func(t *testing.T, db *sql.DB, dir string, id cas.ID)
	exec := func(t *testing.T, db *sql.DB, q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	editInline := func(edit func([]byte) []byte) damage {
		return func(t *testing.T, db *sql.DB, dir string, id cas.ID) {
			var data []byte
			if err := db.QueryRow(`SELECT data FROM blobs WHERE id = ?`, id).Scan(&data); err != nil {
				t.Fatal(err)
			}
			exec(t, db, `UPDATE blobs SET data = ? WHERE id = ?`, edit(data), id)
		}
	}
	editFile := func(edit func([]byte) []byte) damage {
		return func(t *testing.T, db *sql.DB, dir string, id cas.ID) {
			path := objectPath(dir, id)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, edit(b), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	flip := func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b }
	halve := func(b []byte) []byte { return b[:len(b)/2] }
	sizeMinusOne := func(t *testing.T, db *sql.DB, dir string, id cas.ID) {
		exec(t, db, `UPDATE blobs SET size = size - 1 WHERE id = ?`, id)
	}
	sizeHuge := func(t *testing.T, db *sql.DB, dir string, id cas.ID) {
		exec(t, db, `UPDATE blobs SET size = ? WHERE id = ?`, int64(1)<<40, id)
	}
	bomb := func(inFile, declare bool) damage {
		return func(t *testing.T, db *sql.DB, dir string, id cas.ID) {
			z := zstdBomb(2<<30, declare)
			if inFile {
				if err := os.WriteFile(objectPath(dir, id), z, 0o600); err != nil {
					t.Fatal(err)
				}
				exec(t, db, `UPDATE blobs SET size = 10, stored = ?, enc = 1 WHERE id = ?`, len(z), id)
				return
			}
			exec(t, db, `UPDATE blobs SET size = 10, stored = ?, enc = 1, data = ? WHERE id = ?`, len(z), z, id)
		}
	}
	var (
		tiny       = []byte("a blob too small to compress")
		inlineZstd = castest.Bytes(1, 100<<10)
		inlineRaw  = random(1, 100<<10)
		fileZstd   = castest.Bytes(2, 3<<20)
		fileRaw    = random(2, 3<<20)
	)
	// Reading a damaged blob may allocate up to its recorded size, capped at
	// 64 MiB; a bomb must cost far less than what it would expand to.
	const bounded, bombBound = 96 << 20, 16 << 20
	// heals says a Put of the same content repairs the damage: Put's dedup
	// check sees it without reading content (doc.go). Damage inside bytes
	// of the right length is left to readers and verify --repair.
	tests := []struct {
		name     string
		content  []byte
		damage   damage
		maxAlloc uint64
		heals    bool
	}{
		{"inline raw flipped", tiny, editInline(flip), bounded, false},
		{"inline zstd flipped", inlineZstd, editInline(flip), bounded, false},
		{"inline raw truncated", inlineRaw, editInline(halve), bounded, true},
		{"inline zstd truncated", inlineZstd, editInline(halve), bounded, true},
		{"inline longer than recorded", tiny, sizeMinusOne, bounded, true},
		{"inline zstd longer than recorded", inlineZstd, sizeMinusOne, bounded, true},
		{"inline impossible size", tiny, sizeHuge, bounded, true},
		{"inline bomb", tiny, bomb(false, false), bombBound, true},
		{"inline bomb declaring its size", tiny, bomb(false, true), bombBound, true},
		{"file raw flipped", fileRaw, editFile(flip), bounded, false},
		{"file zstd flipped", fileZstd, editFile(flip), bounded, false},
		{"file raw truncated", fileRaw, editFile(halve), bounded, true},
		{"file zstd truncated", fileZstd, editFile(halve), bounded, true},
		{"file longer than recorded", fileZstd, sizeMinusOne, bounded, true},
		{"file shorter than recorded", fileRaw, sizeHuge, bounded, true},
		{"file missing", fileZstd, func(t *testing.T, db *sql.DB, dir string, id cas.ID) {
			if err := os.Remove(objectPath(dir, id)); err != nil {
				t.Fatal(err)
			}
		}, bounded, true},
		{"file bomb", fileZstd, bomb(true, false), bombBound, true},
		{"file bomb declaring its size", fileZstd, bomb(true, true), bombBound, true},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			d := openDisk(t, dir)
			defer d.Close()
			id := castest.Put(t, d, tt.content)
			tt.damage(t, rawDB(t, dir), dir, id)

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := d.Get(ctx, id)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, cas.ErrCorrupt) || !strings.Contains(err.Error(), id.Short()) {
				t.Errorf("Get = %v, want an error wrapping ErrCorrupt naming %s", err, id.Short())
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > tt.maxAlloc {
				t.Errorf("Get allocated %d MiB; decompression must be bounded", alloc>>20)
			}

			rc, err := d.Open(ctx, id)
			if err != nil {
				t.Fatalf("Open = %v; damage must be reported by Read, not as absence", err)
			}
			defer rc.Close()
			if _, err := io.Copy(io.Discard, rc); !errors.Is(err, cas.ErrCorrupt) {
				t.Errorf("reading = %v, want ErrCorrupt", err)
			}
			if ok, err := d.Has(ctx, id); !ok || err != nil {
				t.Errorf("Has = %v, %v; want true, nil", ok, err)
			}
			if !tt.heals {
				return
			}
			// A Put of the content heals the blob, alone or in a batch,
			// as a fresh process would see it.
			for _, viaBatch := range []bool{false, true} {
				if viaBatch {
					tt.damage(t, rawDB(t, dir), dir, id) // again, once healed
					b := d.NewBatch()
					if _, _, err := b.Put(ctx, bytes.NewReader(tt.content)); err != nil {
						t.Fatal(err)
					}
					if err := b.Commit(ctx); err != nil {
						t.Fatal(err)
					}
				} else if got := castest.Put(t, d, tt.content); got != id {
					t.Fatalf("Put gave %s, want %s", got.Short(), id.Short())
				}
				d2 := openDisk(t, dir)
				castest.Check(t, d2, id, tt.content)
				d2.Close()
				castest.Check(t, d, id, tt.content)
			}
		})
	}
}

func TestDiskDeleteRemovesObject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	id := castest.Put(t, d, castest.Bytes(1, 2<<20))
	if _, err := os.Stat(objectPath(dir, id)); err != nil {
		t.Fatalf("object file after Put: %v", err)
	}
	if err := d.Delete(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(objectPath(dir, id)); !os.IsNotExist(err) {
		t.Errorf("object file after Delete: Stat = %v, want it removed", err)
	}
}

// TestDiskOddPath: the directory name reaches SQLite inside a URI.
func TestDiskOddPath(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a b?c#d%20e&f=g")
	d := openDisk(t, dir)
	id := castest.Put(t, d, []byte("odd"))
	d.Close()
	if _, err := os.Stat(filepath.Join(dir, "blobs.db")); err != nil {
		t.Fatalf("blobs.db not where expected: %v", err)
	}
	d = openDisk(t, dir)
	defer d.Close()
	castest.Check(t, d, id, []byte("odd"))
}

// TestBatchEarlyCommits puts more blobs than one commit holds, each
// content four times (by two goroutines at once, then both again after
// its first commit): every content ends up in exactly one row.
func TestBatchEarlyCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	const n = 10_000
	content := func(i int) []byte { return []byte(fmt.Sprintf("blob %d %s", i, strings.Repeat("x", i%300))) }
	b := d.NewBatch()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			for i := range 2 * n {
				c := content(i % n)
				if id, _, err := b.Put(ctx, bytes.NewReader(c)); err != nil || id != cas.Sum(c) {
					errs <- fmt.Errorf("Put: %s, %v", id.Short(), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := rawDB(t, dir).QueryRow(`SELECT count(*) FROM blobs`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != n {
		t.Errorf("%d rows after putting %d distinct contents, want %d", rows, n, n)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		castest.Check(t, d, cas.Sum(content(i)), content(i))
	}
}

// blobsPageSize reads the page size of dir's blobs.db from the file.
func blobsPageSize(t *testing.T, dir string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "blobs.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A new store's blobs.db has 2048-byte pages (doc.go: a third fewer page
// writes than 512 for a capture of 2,000 files); a store made earlier with
// 512-byte pages keeps them and works as before.
func TestDiskPageSize(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir)
	castest.Put(t, d, castest.Bytes(1, 8<<10))
	d.Close()
	if got := blobsPageSize(t, dir); got != 2048 {
		t.Errorf("new store: page_size %d, want 2048", got)
	}

	old := t.TempDir()
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Create(ctx, filepath.Join(old, "blobs.db"), 512); err != nil {
		t.Fatal(err)
	}
	d = openDisk(t, old)
	contents := [][]byte{castest.Bytes(2, 100), castest.Bytes(3, 8<<10), castest.Bytes(4, 300<<10)}
	for _, c := range contents {
		castest.Put(t, d, c)
	}
	d.Close()
	d = openDisk(t, old)
	defer d.Close()
	for _, c := range contents {
		castest.Check(t, d, cas.Sum(c), c)
	}
	if got := blobsPageSize(t, old); got != 512 {
		t.Errorf("store made with 512-byte pages: page_size %d after use, want 512", got)
	}
}

// Content put with the ReadRarely hint (a rewind's copies of the files it
// replaces) is compressed at zstd's fastest level up to one block, alone
// or in a batch, and as usual above it; it reads back verified, and
// damage to its bytes is corruption, never an absent blob.
func TestReadRarelyCompressesFast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	frame := func(level zstd.EncoderLevel, b []byte) int64 {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(false),
			zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(128<<10), zstd.WithLowerEncoderMem(true))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		return int64(len(e.EncodeAll(b, nil)))
	}
	rarely := cas.ReadRarely(ctx)
	small, batched, big, plain := castest.Bytes(11, 8<<10), castest.Bytes(12, 128<<10), castest.Bytes(13, 128<<10+1), castest.Bytes(14, 8<<10)
	put := func(ctx context.Context, b []byte) cas.ID {
		id, _, err := d.Put(ctx, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	batch := d.NewBatch()
	bid, _, err := batch.Put(rarely, bytes.NewReader(batched))
	if err != nil {
		t.Fatal(err)
	}
	if err := batch.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		id      cas.ID
		content []byte
		level   zstd.EncoderLevel
	}{
		{"8 KiB", put(rarely, small), small, zstd.SpeedFastest},
		{"one block, in a batch", bid, batched, zstd.SpeedFastest},
		{"8 KiB without the hint", put(ctx, plain), plain, zstd.SpeedDefault},
	} {
		info, err := d.Stat(ctx, tt.id)
		if err != nil {
			t.Fatal(err)
		}
		fast, def := frame(zstd.SpeedFastest, tt.content), frame(zstd.SpeedDefault, tt.content)
		if fast == def {
			t.Fatalf("%s: the levels give frames of one size (%d bytes): the test cannot tell them apart", tt.name, fast)
		}
		if want := map[zstd.EncoderLevel]int64{zstd.SpeedFastest: fast, zstd.SpeedDefault: def}[tt.level]; info.Stored != want {
			t.Errorf("%s: stored in %d bytes; %s gives %d, %s %d", tt.name, info.Stored, zstd.SpeedFastest, fast, zstd.SpeedDefault, def)
		}
		castest.Check(t, d, tt.id, tt.content)
	}
	// Over one block the hint changes nothing: the stream is compressed as
	// any other.
	bigID := put(rarely, big)
	if info, err := d.Stat(ctx, bigID); err != nil || info.Stored >= info.Size {
		t.Errorf("over one block: %+v, %v; want compressed", info, err)
	}
	castest.Check(t, d, bigID, big)
	db := rawDB(t, dir)
	var data []byte
	if err := db.QueryRow(`SELECT data FROM blobs WHERE id = ?`, cas.Sum(small)).Scan(&data); err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if _, err := db.Exec(`UPDATE blobs SET data = ? WHERE id = ?`, data, cas.Sum(small)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, cas.Sum(small)); !errors.Is(err, cas.ErrCorrupt) || errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Get of a damaged copy: %v, want ErrCorrupt", err)
	}
}
