package controller_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// The copy a rewind keeps of a file it replaces is compressed at zstd's
// fastest level (it is read only by an undo; cas.ReadRarely), as a put
// with that hint stores it and not as a capture does; the undo puts the
// file back from it byte for byte, and a damaged copy fails the undo
// before any file changes.
func TestRewindUndoCopyCompressedFast(t *testing.T) {
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
	// The same bytes put into a scratch store with and without the hint.
	scratch, err := cas.OpenDisk(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	stored := func(s *cas.Disk, id cas.ID) int64 {
		t.Helper()
		info, err := s.Stat(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return info.Stored
	}
	id := cas.Sum([]byte(after))
	if _, _, err := scratch.Put(ctx, strings.NewReader(after)); err != nil {
		t.Fatal(err)
	}
	captured := stored(scratch, id)
	if err := scratch.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := scratch.Put(cas.ReadRarely(ctx), strings.NewReader(after)); err != nil {
		t.Fatal(err)
	}
	fast := stored(scratch, id)
	if fast == captured {
		t.Fatalf("the hint made no difference to these bytes (%d stored): the test cannot tell", fast)
	}
	if got := stored(controller.BlobsOf(e.c), id); got != fast {
		t.Errorf("the undo copy is stored in %d bytes; with the hint %d, as a capture %d", got, fast, captured)
	}
	if _, err := e.c.Undo(ctx, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.go", after)
	if _, err := e.c.Redo(ctx, controller.RewindOptions{}); err != nil {
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
	var data []byte
	if err := db.QueryRow(`SELECT data FROM blobs WHERE substr(id, 1, 8) = substr(?1, 1, 8) AND id = ?1`, id).Scan(&data); err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if _, err := db.Exec(`UPDATE blobs SET data = ?2 WHERE substr(id, 1, 8) = substr(?1, 1, 8) AND id = ?1`, id, data); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Undo(ctx, controller.RewindOptions{}); !errors.Is(err, cas.ErrCorrupt) {
		t.Errorf("undo from a damaged copy: %v, want ErrCorrupt", err)
	}
	e.want("a.go", before)
}
