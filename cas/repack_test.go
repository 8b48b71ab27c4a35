package cas_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

// storedSum is the stored bytes of ids' rows.
func storedSum(t testing.TB, d *cas.Disk, ids []cas.ID) int64 {
	t.Helper()
	var n int64
	for _, id := range ids {
		i, err := d.Stat(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		n += i.Stored
	}
	return n
}

// readAll checks that every version reads back as put.
func readAll(t testing.TB, d *cas.Disk, ids []cas.ID, vs [][]byte) {
	t.Helper()
	for i, id := range ids {
		b, err := d.Get(context.Background(), id)
		if err != nil || !bytes.Equal(b, vs[i]) {
			t.Fatalf("Get version %d: %v (equal %v)", i, err, bytes.Equal(b, vs[i]))
		}
	}
}

// TestRepackReversesChains: after Repack a chain's newest version is whole
// and each older one a delta against the next newer one, every version
// reads back, fewer bytes are stored, and a second Repack has nothing to do.
func TestRepackReversesChains(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	ctx := context.Background()
	vs := versions(12)
	ids := putChain(t, d, vs)
	before := storedSum(t, d, ids)
	st, err := d.Repack(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Chains != 1 || st.Blobs != len(ids) || st.Saved <= 0 {
		t.Fatalf("Repack = %+v, want one chain of %d blobs rewritten, bytes saved", st, len(ids))
	}
	db := rawDB(t, dir)
	last := len(ids) - 1
	if r := rowOf(t, db, ids[last]); r.enc == 2 || r.depth != 0 {
		t.Fatalf("newest version after repack: %+v, want whole", r)
	}
	for i := 0; i < last; i++ {
		if r := rowOf(t, db, ids[i]); r.enc != 2 || r.base != ids[i+1] || r.depth != last-i {
			t.Fatalf("version %d after repack: %+v, want a delta against version %d at depth %d", i, r, i+1, last-i)
		}
	}
	readAll(t, d, ids, vs)
	if after := storedSum(t, d, ids); after != before-st.Saved || after >= before {
		t.Fatalf("stored %d bytes after repack, %d before, %d saved", after, before, st.Saved)
	}
	if st, err := d.Repack(ctx); err != nil || st.Blobs != 0 {
		t.Fatalf("second Repack = %+v, %v; want nothing to do", st, err)
	}
	// A new version is a delta against the (now whole) newest one, and
	// the next Repack moves the whole version to it.
	next := edit(vs[last], 3)
	id, _, err := d.Put(cas.WithBase(ctx, ids[last]), bytes.NewReader(next))
	if err != nil {
		t.Fatal(err)
	}
	if r := rowOf(t, db, id); r.enc != 2 || r.depth != 1 {
		t.Fatalf("version after repack: %+v, want a delta at depth 1", r)
	}
	if st, err := d.Repack(ctx); err != nil || st.Chains != 1 {
		t.Fatalf("third Repack = %+v, %v; want the grown chain repacked", st, err)
	}
	if r := rowOf(t, db, id); r.enc == 2 {
		t.Fatalf("newest version after the third repack: %+v, want whole", r)
	}
	readAll(t, d, append(ids, id), append(vs, next))
}

// TestRepackFailureLeavesStore: a repack whose transaction fails before it
// commits leaves every row as it was and every blob readable.
func TestRepackFailureLeavesStore(t *testing.T) {
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	vs := versions(8)
	ids := putChain(t, d, vs)
	db := rawDB(t, dir)
	rows := map[cas.ID]any{}
	for _, id := range ids {
		rows[id] = rowOf(t, db, id)
	}
	injected := errors.New("injected before commit")
	undo := cas.SetRepackHook(func() error { return injected })
	_, err := d.Repack(context.Background())
	undo()
	if !errors.Is(err, injected) {
		t.Fatalf("Repack with a failing commit = %v, want the injected error", err)
	}
	for _, id := range ids {
		if r := rowOf(t, db, id); r != rows[id] {
			t.Fatalf("row of %s after a failed repack: %+v, want %+v", id.Short(), r, rows[id])
		}
	}
	readAll(t, d, ids, vs)
	if st, err := d.Repack(context.Background()); err != nil || st.Blobs != len(ids) {
		t.Fatalf("Repack after the failure = %+v, %v", st, err)
	}
	readAll(t, d, ids, vs)
}

// TestRepackLeavesDamage: a chain with a corrupt row is not rewritten, and
// the corrupt blob still reads as corrupt, never as absent.
func TestRepackLeavesDamage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	vs := versions(8)
	ids := putChain(t, d, vs)
	db := rawDB(t, dir)
	// Flip bits in the middle of version 5's delta: same length, wrong bytes.
	var data []byte
	if err := db.QueryRow(`SELECT data FROM blobs WHERE id = ?`, ids[5][:]).Scan(&data); err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x55
	if _, err := db.Exec(`UPDATE blobs SET data = ? WHERE id = ?`, data, ids[5][:]); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(context.Background(), ids[5]); !errors.Is(err, cas.ErrCorrupt) {
		t.Fatalf("Get of the damaged version = %v, want ErrCorrupt", err)
	}
	rows := map[cas.ID]any{}
	for _, id := range ids {
		rows[id] = rowOf(t, db, id)
	}
	if st, err := d.Repack(context.Background()); err != nil || st.Blobs != 0 {
		t.Fatalf("Repack of a damaged chain = %+v, %v; want it left alone", st, err)
	}
	for _, id := range ids {
		if r := rowOf(t, db, id); r != rows[id] {
			t.Fatalf("row of %s: %+v, want %+v", id.Short(), r, rows[id])
		}
	}
	if _, err := d.Get(context.Background(), ids[5]); !errors.Is(err, cas.ErrCorrupt) {
		t.Fatalf("Get of the damaged version after Repack = %v, want ErrCorrupt", err)
	}
	readAll(t, d, ids[:5], vs[:5])
}

// TestRepackBetweenEncodeAndRecord: a delta encoded before a Repack and
// recorded after it is recorded at its base's new depth, and one whose
// base the repack moved to the deepest place fails its commit rather than
// be written unreadable.
func TestRepackBetweenEncodeAndRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	ctx := context.Background()
	vs := versions(17) // a forward chain 16 deep
	ids := putChain(t, d, vs)
	db := rawDB(t, dir)
	if r := rowOf(t, db, ids[16]); r.depth != 16 {
		t.Fatalf("version 16 at depth %d, want 16", r.depth)
	}
	// Encoded against version 12 (depth 12) and against the root.
	fromMid, fromRoot := edit(vs[12], 5), edit(vs[0], 5)
	mid, root := d.NewBatch(), d.NewBatch()
	midID, _, err := mid.Put(cas.WithBase(ctx, ids[12]), bytes.NewReader(fromMid))
	if err != nil {
		t.Fatal(err)
	}
	rootID, _, err := root.Put(cas.WithBase(ctx, ids[0]), bytes.NewReader(fromRoot))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Repack(ctx); err != nil {
		t.Fatal(err)
	}
	// Version 12 is now 4 deep, the root 16.
	if err := mid.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := rowOf(t, db, midID); r.enc != 2 || r.base != ids[12] || r.depth != 5 {
		t.Fatalf("delta recorded after the repack: %+v, want depth 5 against version 12", r)
	}
	if b, err := d.Get(ctx, midID); err != nil || !bytes.Equal(b, fromMid) {
		t.Fatalf("Get of the delta recorded after the repack: %v", err)
	}
	if err := root.Commit(ctx); err == nil {
		b, err := d.Get(ctx, rootID)
		t.Fatalf("a delta against a base now 16 deep was recorded; Get = %v, equal %v", err, bytes.Equal(b, fromRoot))
	}
	if ok, err := d.Has(ctx, rootID); err != nil || ok {
		t.Fatalf("Has of the refused delta = %v, %v", ok, err)
	}
	readAll(t, d, ids, vs)
}

// TestRepackConcurrentReaders: readers running while chains are rewritten
// always get the right bytes, from the old form or the new.
func TestRepackConcurrentReaders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	ctx := context.Background()
	var ids []cas.ID
	var vs [][]byte
	for f := 0; f < 6; f++ {
		fv := versions(10)
		for i := range fv {
			fv[i] = append([]byte{byte('a' + f)}, fv[i]...) // six different files
		}
		ids = append(ids, putChain(t, d, fv)...)
		vs = append(vs, fv...)
	}
	stop := make(chan struct{})
	errs := make(chan error, 2)
	for r := 0; r < 2; r++ {
		go func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				i := (n*7 + r) % len(ids)
				if b, err := d.Get(ctx, ids[i]); err != nil || !bytes.Equal(b, vs[i]) {
					errs <- fmt.Errorf("Get of version %d during the repack: %v", i, err)
					return
				}
			}
		}()
	}
	st, err := d.Repack(ctx)
	close(stop)
	for r := 0; r < 2; r++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if err != nil || st.Chains != 6 {
		t.Fatalf("Repack = %+v, %v; want 6 chains", st, err)
	}
	readAll(t, d, ids, vs)
}
