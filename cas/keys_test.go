package cas_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/cas/castest"
)

// TestMigrateBlobKeys: a store written with schema version 2 (deltas name
// their base by id) reads the same after OpenDisk moves it to integer keys:
// raw and zstd blobs, a delta chain, and a delta whose base row was gone
// before the upgrade, which stays corrupt and never reads as absent. A Put
// of that delta's content then heals it.
func TestMigrateBlobKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := rawDB(t, dir)
	for _, name := range []string{"0001_blobs.sql", "0002_delta.sql"} {
		sqlText, err := os.ReadFile(filepath.Join("..", "migrations", "cas", name))
		if err != nil {
			t.Fatal(err)
		}
		execSQL(t, db, string(sqlText))
	}
	execSQL(t, db, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied INTEGER NOT NULL)`)
	execSQL(t, db, `INSERT INTO schema_migrations VALUES (1, '0001_blobs.sql', 0), (2, '0002_delta.sql', 0)`)

	vs := versions(5)
	ids := make([]cas.ID, len(vs))
	for i, v := range vs {
		ids[i] = cas.Sum(v)
	}
	insert := `INSERT INTO blobs (id, size, stored, enc, data, created, base, depth) VALUES (?, ?, ?, ?, ?, 1, ?, ?)`
	z := zstdFrame(t, vs[0])
	execSQL(t, db, insert, ids[0][:], len(vs[0]), len(z), 1, z, nil, 0)
	for i := 1; i < 4; i++ { // versions 1-3: a chain on version 0
		f := deltaFrame(t, vs[i-1], vs[i])
		execSQL(t, db, insert, ids[i][:], len(vs[i]), len(f), 2, f, ids[i-1][:], i)
	}
	// Version 4 is a delta against content whose row is gone.
	gone := append([]byte("gone "), vs[3]...)
	goneID := cas.Sum(gone)
	f := deltaFrame(t, gone, vs[4])
	execSQL(t, db, insert, ids[4][:], len(vs[4]), len(f), 2, f, goneID[:], 1)
	raw := []byte("short")
	rawID := cas.Sum(raw)
	execSQL(t, db, insert, rawID[:], len(raw), len(raw), 0, raw, nil, 0)
	db.Close()

	d := openDisk(t, dir)
	defer d.Close()
	castest.Check(t, d, rawID, raw)
	for i := range 4 {
		castest.Check(t, d, ids[i], vs[i])
	}
	if _, err := d.Get(ctx, ids[4]); !errors.Is(err, cas.ErrCorrupt) {
		t.Fatalf("Get of a delta whose base was missing before the upgrade = %v, want ErrCorrupt", err)
	}
	db = rawDB(t, dir)
	for i := 1; i < 4; i++ {
		if r := rowOf(t, db, ids[i]); r.enc != 2 || r.base != ids[i-1] || r.depth != i {
			t.Errorf("version %d after the upgrade: %+v, want a delta of depth %d against version %d", i, r, i, i-1)
		}
	}
	if id, _, err := d.Put(ctx, bytes.NewReader(vs[4])); err != nil || id != ids[4] {
		t.Fatalf("healing Put = %s, %v", id.Short(), err)
	}
	castest.Check(t, d, ids[4], vs[4])
}

// deltaFrame encodes b against dict as a store's delta frame.
func deltaFrame(t testing.TB, dict, b []byte) []byte {
	t.Helper()
	w, err := zstd.NewWriter(nil, zstd.WithEncoderDictRaw(1, dict), zstd.WithEncoderCRC(false))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	return w.EncodeAll(b, nil)
}

func execSQL(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestIDPrefixShared: blobs.db indexes ids by their first 8 bytes, so two
// blobs may share an index entry. A row whose id shares a blob's prefix
// (made here by hand; BLAKE3 gives no such pair on demand) must never be
// taken for that blob: Put stores the blob beside it, reads and Stat find
// the right row, Delete removes only the blob.
func TestIDPrefixShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	content := source(7, 4096)
	id := cas.Sum(content)
	other := id
	for i := 8; i < len(other); i++ {
		other[i] ^= 0xff
	}
	db := rawDB(t, dir)
	execSQL(t, db, `INSERT INTO blobs (id, size, stored, enc, depth, created, data) VALUES (?, 5, 5, 0, 0, 1, 'other')`, other[:])
	if ok, err := d.Has(ctx, id); err != nil || ok {
		t.Fatalf("Has before Put = %v, %v; want false: the other row shares only the prefix", ok, err)
	}
	if _, err := d.Get(ctx, id); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Get before Put = %v, want ErrNotFound", err)
	}
	castest.Put(t, d, content)
	castest.Check(t, d, id, content)
	if info, err := d.Stat(ctx, id); err != nil || info.Size != int64(len(content)) {
		t.Fatalf("Stat = %+v, %v; want size %d", info, err, len(content))
	}
	if info, err := d.Stat(ctx, other); err != nil || info.Size != 5 {
		t.Fatalf("Stat of the other row = %+v, %v; want size 5", info, err)
	}
	if err := d.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM blobs WHERE id = ?`, other[:]).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows of the other id after Delete = %d, %v; want 1", n, err)
	}
	if ok, err := d.Has(ctx, id); err != nil || ok {
		t.Fatalf("Has after Delete = %v, %v; want false", ok, err)
	}
}

// TestPutStoredInlineTwice: the id index is not unique, so dedup is the
// insert's own check; one call naming a blob twice records one row.
func TestPutStoredInlineTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	b := []byte("the same blob, twice in one call")
	s := cas.Stored{ID: cas.Sum(b), Size: int64(len(b)), Enc: 0, Stored: int64(len(b))}
	if err := d.PutStoredInline(ctx, []cas.Stored{s, s}, [][]byte{b, b}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rawDB(t, dir).QueryRow(`SELECT count(*) FROM blobs WHERE id = ?`, s.ID[:]).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows = %d, %v; want 1", n, err)
	}
	castest.Check(t, d, s.ID, b)
}
