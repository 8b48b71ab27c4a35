package cas_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/cas/castest"
)

// row is what the blobs table says of one blob's encoding; base is the id
// of the row the base column's key names.
type row struct {
	enc, depth int
	stored     int64
	base       cas.ID // zero when NULL
}

func rowOf(t testing.TB, db *sql.DB, id cas.ID) row {
	t.Helper()
	var r row
	var base []byte
	if err := db.QueryRow(`SELECT enc, depth, stored, (SELECT b.id FROM blobs b WHERE b.k = blobs.base) FROM blobs WHERE id = ?`, id[:]).Scan(&r.enc, &r.depth, &r.stored, &base); err != nil {
		t.Fatalf("row of %s: %v", id.Short(), err)
	}
	copy(r.base[:], base)
	return r
}

// edit returns b with a line inserted after its n-th line: a new version
// of a source file, as an agent's edit makes it.
func edit(b []byte, n int) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	at := n % len(lines)
	ins := []byte(fmt.Sprintf("\t// edit %d: x := compute(%d) + offset\n", n, n*7))
	out := slices.Concat(lines[:at]...)
	out = append(out, ins...)
	return append(out, slices.Concat(lines[at:]...)...)
}

// source returns about n bytes of source-like text whose lines rarely
// repeat, as real source's do not.
func source(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	words := []string{"ctx", "err", "id", "store", "blob", "path", "turn", "size", "base", "depth", "chain", "row"}
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "	%s%d := %s.%s(%d, %q)\n", words[rng.IntN(len(words))], rng.IntN(100),
			words[rng.IntN(len(words))], words[rng.IntN(len(words))], rng.IntN(1<<20), words[rng.IntN(len(words))])
	}
	return b.Bytes()
}

// versions returns n successive versions of a ~16 KiB source file.
func versions(n int) [][]byte {
	v := [][]byte{source(7, 16<<10)}
	for i := 1; i < n; i++ {
		v = append(v, edit(v[i-1], i*13))
	}
	return v
}

// putChain puts every version with the previous one as its base hint.
func putChain(t testing.TB, s cas.Store, vs [][]byte) []cas.ID {
	t.Helper()
	ids := make([]cas.ID, len(vs))
	for i, v := range vs {
		ctx := context.Background()
		if i > 0 {
			ctx = cas.WithBase(ctx, ids[i-1])
		}
		id, n, err := s.Put(ctx, bytes.NewReader(v))
		if err != nil {
			t.Fatalf("Put version %d: %v", i, err)
		}
		if id != cas.Sum(v) || n != int64(len(v)) {
			t.Fatalf("Put version %d = %s, %d; want %s, %d", i, id.Short(), n, cas.Sum(v).Short(), len(v))
		}
		ids[i] = id
	}
	return ids
}

// TestDeltaRoundTrip: versions put with their predecessor as hint are
// stored as deltas, much smaller than whole frames, read back verified,
// and no chain is deeper than the bound.
func TestDeltaRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	db := rawDB(t, dir)
	vs := versions(40)
	ids := putChain(t, d, vs)
	full := rowOf(t, db, ids[0])
	if full.enc != 1 || !full.base.IsZero() {
		t.Fatalf("first version: %+v, want a whole zstd frame", full)
	}
	deltas := 0
	for i, id := range ids {
		castest.Check(t, d, id, vs[i])
		r := rowOf(t, db, id)
		if r.enc == 2 {
			deltas++
			if r.stored*8 > full.stored {
				t.Errorf("version %d: delta of %d bytes, whole frame %d: want at most 1/8", i, r.stored, full.stored)
			}
		}
		// Follow the chain as a read does: never deeper than 16.
		depth := 0
		for r.enc == 2 {
			depth++
			if depth > 16 {
				t.Fatalf("version %d: chain deeper than 16", i)
			}
			r = rowOf(t, db, r.base)
		}
		if got := rowOf(t, db, id).depth; got != depth {
			t.Errorf("version %d: depth column %d, chain %d", i, got, depth)
		}
	}
	// New deltas are stored bare: a 0x00 byte, then the frame's blocks.
	var framed int
	if err := db.QueryRow(`SELECT count(*) FROM blobs WHERE enc = 2 AND substr(data, 1, 1) != x'00'`).Scan(&framed); err != nil || framed != 0 {
		t.Errorf("%d deltas stored with their frame header (%v), want none", framed, err)
	}
	if deltas < len(ids)-5 {
		t.Errorf("%d of %d versions stored as deltas, want nearly all", deltas, len(ids))
	}
	// Past the depth bound a version goes against the ancestor at depth 8.
	if r := rowOf(t, db, ids[17]); r.enc != 2 || r.depth != 9 || r.base != ids[8] {
		t.Errorf("version 17: %+v, want a delta of depth 9 against version 8", r)
	}
}

// TestDeltaBatch: the hint works through a batch, including a base put
// earlier in the same batch's life but committed before.
func TestDeltaBatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	db := rawDB(t, dir)
	vs := versions(3)
	base := castest.Put(t, d, vs[0])
	b := d.NewBatch()
	id, _, err := b.Put(cas.WithBase(context.Background(), base), bytes.NewReader(vs[1]))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	castest.Check(t, d, id, vs[1])
	if r := rowOf(t, db, id); r.enc != 2 || r.base != base {
		t.Errorf("batch put: %+v, want a delta against %s", r, base.Short())
	}
}

// TestDeltaOnlyWhenSmaller: a hint at unrelated, absent, tiny or
// identical content stores the blob whole.
func TestDeltaOnlyWhenSmaller(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	db := rawDB(t, dir)
	other := castest.Put(t, d, random(9, 16<<10))
	tiny := castest.Put(t, d, []byte("tiny"))
	tests := []struct {
		name    string
		hint    cas.ID
		content []byte
	}{
		{"unrelated base", other, castest.Bytes(11, 16<<10)},
		{"absent base", cas.Sum([]byte("never stored")), castest.Bytes(12, 16<<10)},
		{"tiny base", tiny, castest.Bytes(13, 16<<10)},
		{"tiny content", other, []byte("short")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, _, err := d.Put(cas.WithBase(context.Background(), tt.hint), bytes.NewReader(tt.content))
			if err != nil {
				t.Fatal(err)
			}
			castest.Check(t, d, id, tt.content)
			if r := rowOf(t, db, id); r.enc == 2 || !r.base.IsZero() {
				t.Errorf("got %+v, want the blob stored whole", r)
			}
		})
	}
}

// TestDeltaDeleteKeepsBase: DeleteMany, what the collector calls, never
// removes a base that a remaining blob's chain needs, and removes a whole
// chain given all of it.
func TestDeltaDeleteKeepsBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	vs := versions(5)
	ids := putChain(t, d, vs)
	// The live blob is the last version; every earlier one is doomed.
	n, _, err := d.DeleteMany(ctx, ids[:4])
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("DeleteMany of the bases of a live delta removed %d, want 0", n)
	}
	for i, id := range ids {
		castest.Check(t, d, id, vs[i])
	}
	// A middle version goes when nothing depends on it... but it is a base.
	if n, _, err := d.DeleteMany(ctx, ids[2:3]); err != nil || n != 0 {
		t.Errorf("DeleteMany(middle) = %d, %v; want 0 (version 3 needs it)", n, err)
	}
	// The whole chain, given in base-first order, goes entirely.
	if n, _, err := d.DeleteMany(ctx, ids); err != nil || n != len(ids) {
		t.Errorf("DeleteMany(all) = %d, %v; want %d", n, err, len(ids))
	}
	if got := castest.IDs(t, d); len(got) != 0 {
		t.Errorf("%d blobs left, want none", len(got))
	}
}

// TestDeltaCorruptBase: a damaged or missing base makes its deltas
// corrupt, never absent; putting the content again heals a delta whose
// base is gone.
func TestDeltaCorruptBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vs := versions(3)
	t.Run("damaged", func(t *testing.T) {
		dir := t.TempDir()
		d := openDisk(t, dir)
		defer d.Close()
		ids := putChain(t, d, vs)
		db := rawDB(t, dir)
		if _, err := db.Exec(`UPDATE blobs SET data = ? WHERE id = ?`, zstdFrame(t, vs[1]), ids[0][:]); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids[1:] {
			_, err := d.Get(ctx, id)
			if !errors.Is(err, cas.ErrCorrupt) || errors.Is(err, cas.ErrNotFound) {
				t.Errorf("Get(%s) with a damaged base = %v, want ErrCorrupt", id.Short(), err)
			}
		}
	})
	t.Run("base not a key", func(t *testing.T) {
		dir := t.TempDir()
		d := openDisk(t, dir)
		defer d.Close()
		ids := putChain(t, d, vs)
		db := rawDB(t, dir)
		if _, err := db.Exec(`UPDATE blobs SET base = ? WHERE id = ?`, ids[0][:], ids[1][:]); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids[1:] {
			if _, err := d.Get(ctx, id); !errors.Is(err, cas.ErrCorrupt) {
				t.Errorf("Get(%s) with a base column that is no key = %v, want ErrCorrupt", id.Short(), err)
			}
		}
	})
	t.Run("size changed", func(t *testing.T) {
		dir := t.TempDir()
		d := openDisk(t, dir)
		defer d.Close()
		ids := putChain(t, d, vs)
		db := rawDB(t, dir)
		// A bare delta's frame header is rebuilt from the row's size.
		for _, delta := range []int{-1, 1} {
			if _, err := db.Exec(`UPDATE blobs SET size = size + ? WHERE id = ?`, delta, ids[1][:]); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Get(ctx, ids[1]); !errors.Is(err, cas.ErrCorrupt) {
				t.Errorf("Get of a delta whose size is off by %d = %v, want ErrCorrupt", delta, err)
			}
			if _, err := db.Exec(`UPDATE blobs SET size = size - ? WHERE id = ?`, delta, ids[1][:]); err != nil {
				t.Fatal(err)
			}
		}
		castest.Check(t, d, ids[1], vs[1])
	})
	t.Run("missing", func(t *testing.T) {
		dir := t.TempDir()
		d := openDisk(t, dir)
		defer d.Close()
		ids := putChain(t, d, vs)
		db := rawDB(t, dir)
		if _, err := db.Exec(`DELETE FROM blobs WHERE id = ?`, ids[0][:]); err != nil {
			t.Fatal(err)
		}
		_, err := d.Get(ctx, ids[1])
		if !errors.Is(err, cas.ErrCorrupt) || errors.Is(err, cas.ErrNotFound) || !strings.Contains(err.Error(), "base") {
			t.Fatalf("Get with a missing base = %v, want ErrCorrupt naming the base", err)
		}
		r, err := d.Open(ctx, ids[2])
		if err != nil {
			t.Fatalf("Open = %v, want the damage reported by Read", err)
		}
		if _, err := r.Read(make([]byte, 10)); !errors.Is(err, cas.ErrCorrupt) {
			t.Errorf("Read with a missing base two links down = %v, want ErrCorrupt", err)
		}
		r.Close()
		// The next Put of the content sees the broken row and stores it
		// afresh (the hint names the broken chain: it is stored whole).
		castest.Put(t, d, vs[1])
		castest.Check(t, d, ids[1], vs[1])
		castest.Check(t, d, ids[2], vs[2])
	})
}

// TestDeltaCycle: a chain that loops (only damage from outside can make
// one) is reported corrupt, not followed forever.
func TestDeltaCycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	ids := putChain(t, d, versions(3))
	db := rawDB(t, dir)
	if _, err := db.Exec(`UPDATE blobs SET enc = 2, base = (SELECT k FROM blobs WHERE id = ?), depth = 3 WHERE id = ?`, ids[2][:], ids[0][:]); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := d.Get(ctx, id); !errors.Is(err, cas.ErrCorrupt) {
			t.Errorf("Get(%s) in a cycle = %v, want ErrCorrupt", id.Short(), err)
		}
	}
}

// zstdFrame compresses b whole, as the store's frames are.
func zstdFrame(t testing.TB, b []byte) []byte {
	t.Helper()
	w, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	return w.EncodeAll(b, nil)
}

// TestDeltaBaseDeletedBeforeCommit: a delta encoded against a base that is
// deleted before the batch commits (no Hold was taken) fails the commit
// and records nothing: a delta row never exists without its base.
func TestDeltaBaseDeletedBeforeCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openDisk(t, t.TempDir())
	defer d.Close()
	vs := versions(2)
	base := castest.Put(t, d, vs[0])
	b := d.NewBatch()
	id, _, err := b.Put(cas.WithBase(ctx, base), bytes.NewReader(vs[1]))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, base); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err == nil {
		t.Fatal("Commit of a delta whose base was deleted succeeded")
	}
	if ok, err := d.Has(ctx, id); err != nil || ok {
		t.Errorf("Has(delta) = %v, %v; want false", ok, err)
	}
	// Without the hint's base the content is stored whole.
	castest.Check(t, d, castest.Put(t, d, vs[1]), vs[1])
}

// TestDeltaStoredForm: a delta's stored form, as a remote copies it, is a
// self-contained frame another store accepts.
func TestDeltaStoredForm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := openDisk(t, t.TempDir())
	defer a.Close()
	b := openDisk(t, t.TempDir())
	defer b.Close()
	vs := versions(12)
	ids := putChain(t, a, vs)
	for i, id := range ids {
		s, rc, err := a.OpenStored(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Enc > 1 {
			t.Fatalf("stored form of version %d has encoding %d, want 0 or 1", i, s.Enc)
		}
		err = b.PutStored(ctx, s, rc) // verifies: decodes and hashes
		rc.Close()
		if err != nil {
			t.Fatalf("PutStored(version %d): %v", i, err)
		}
		castest.Check(t, b, id, vs[i])
	}
}
