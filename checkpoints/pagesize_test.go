package checkpoints_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
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
	// WAL or shared-memory file is left behind, and the index is 45 pages
	// (28 tables and indexes, the schema's text, the auto-vacuum map). A
	// schema change that makes every session bigger should say so here:
	// migration 10's paths table, its index and the named_snaps view took
	// 3 pages (1.5 KB) more, which ~20 snapshots of 30-character paths
	// give back (each names its path by number instead of carrying its
	// text in the row and in two index entries).
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
	if size > 45*checkpoints.PageSize {
		t.Errorf("session of one turn takes %d bytes, want at most %d", size, 45*checkpoints.PageSize)
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

// End states are written in the order the snapshots were taken, whatever
// order the caller gives them in: each row grows by its end state, and
// rows grown in the order they were appended leave snaps' pages full
// where another order splits them half-empty.
func TestEndStatesKeepSnapsPagesFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	x, err := checkpoints.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var ends []checkpoints.PathEnd
	for turn := 0; turn < 30; turn++ {
		cp, err := x.BeginTurn(ctx, "p", ends, nil)
		if err != nil {
			t.Fatal(err)
		}
		ends = ends[:0]
		var snaps []checkpoints.FileSnap
		for _, i := range rng.Perm(300)[:60] {
			p := fmt.Sprintf("dir%d/file%03d.go", i%7, i)
			c := cas.Sum(fmt.Appendf(nil, "%s at %d", p, turn))
			e := cas.Sum(fmt.Appendf(nil, "%s after %d", p, turn))
			snaps = append(snaps, checkpoints.FileSnap{Path: p, Content: &c, Mode: 0o644, Size: 9000})
			ends = append(ends, checkpoints.PathEnd{Path: p, State: checkpoints.State{Content: &e, Mode: 0o644}})
		}
		if _, err := x.AddSnaps(ctx, cp.ID, snaps); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(ends, func(a, b checkpoints.PathEnd) int { return strings.Compare(a.Path, b.Path) })
	}
	if _, err := x.BeginTurn(ctx, "last", ends, nil); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", checkpoints.DSN(filepath.Join(dir, checkpoints.FileName)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pages, ended int
	var unused float64
	if err := db.QueryRow(`SELECT count(*), sum(unused) FROM dbstat WHERE name = 'snaps' AND pagetype = 'leaf'`).Scan(&pages, &unused); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM snaps WHERE end_state = 1`).Scan(&ended); err != nil || ended != 1800 {
		t.Fatalf("%d snapshots with an end state, %v; want 1800", ended, err)
	}
	// Five rows of ~94 bytes fill a 512-byte page to ~93% whatever the
	// order; grown in another order, a fifth of the pages is empty.
	if share := unused / float64(pages*checkpoints.PageSize); share > 0.13 {
		t.Errorf("snaps' leaf pages are %.0f%% empty (%d pages); want at most 13%%", share*100, pages)
	}
}
