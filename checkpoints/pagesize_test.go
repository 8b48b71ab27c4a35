package checkpoints_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

// A new index has the small page size and incremental auto-vacuum, keeps
// them when reopened, and an index of one turn with one capture stays
// small on disk.
func TestNewIndexPageSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		x, err := checkpoints.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			cp, err := x.BeginTurn(ctx, "one", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := x.AddSnaps(ctx, cp.ID, []checkpoints.FileSnap{{Path: "a.txt"}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Everything the session directory holds once the index is closed: no
	// WAL or shared-memory file is left behind, and the index is 42 pages
	// (26 tables and indexes, the schema's text, the auto-vacuum map). A
	// schema change that makes every session bigger should say so here.
	var size int64
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() != checkpoints.FileName {
			t.Errorf("%s left in the session directory (%d bytes)", e.Name(), fi.Size())
		}
		size += fi.Size()
	}
	if size > 42*checkpoints.PageSize {
		t.Errorf("session of one turn takes %d bytes, want at most %d", size, 42*checkpoints.PageSize)
	}
	db, err := sql.Open("sqlite", checkpoints.DSN(filepath.Join(dir, checkpoints.FileName)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pageSize, autoVacuum int
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA auto_vacuum`).Scan(&autoVacuum); err != nil {
		t.Fatal(err)
	}
	if pageSize != checkpoints.PageSize || autoVacuum != 2 {
		t.Errorf("page_size %d, auto_vacuum %d; want %d, 2 (incremental)", pageSize, autoVacuum, checkpoints.PageSize)
	}
}
