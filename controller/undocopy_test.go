package controller_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// The copy a rewind keeps of a file it replaces is stored raw (it is read
// only by an undo; cas.ReadRarely), while captures stay compressed; the
// undo puts the file back from it byte for byte, and a damaged copy fails
// the undo before any file changes.
func TestRewindUndoCopyStoredRaw(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	before, after := string(sourceLike(1, 8<<10)), string(sourceLike(2, 8<<10))
	e.write("a.go", before)
	e.turn("t0")
	e.edit("a.go", after) // captures before; after is stored only by the rewind
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.go", before)
	blobs := controller.BlobsOf(e.c)
	for _, c := range []struct {
		what, content string
		raw           bool
	}{{"the capture", before, false}, {"the undo copy", after, true}} {
		info, err := blobs.Stat(ctx, cas.Sum([]byte(c.content)))
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if raw := info.Stored == info.Size; raw != c.raw {
			t.Errorf("%s: stored in %d bytes of %d (raw %v, want %v)", c.what, info.Stored, info.Size, raw, c.raw)
		}
	}
	if _, err := e.c.Undo(ctx, controller.UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.go", after)
	if _, err := e.c.Redo(ctx, controller.UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.go", before)

	// A flipped byte in the raw copy is corruption: the next undo fails
	// and leaves the file alone.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.store, "blobs", "blobs.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := cas.Sum([]byte(after))
	var data []byte
	if err := db.QueryRow(`SELECT data FROM blobs WHERE substr(id, 1, 8) = substr(?1, 1, 8) AND id = ?1`, id).Scan(&data); err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if _, err := db.Exec(`UPDATE blobs SET data = ?2 WHERE substr(id, 1, 8) = substr(?1, 1, 8) AND id = ?1`, id, data); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Undo(ctx, controller.UndoOptions{}); !errors.Is(err, cas.ErrCorrupt) {
		t.Errorf("undo from a damaged copy: %v, want ErrCorrupt", err)
	}
	e.want("a.go", before)
}
