package controller

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
)

// TestFirstScanSavesWhatAScanSees: a turn's first scan saves as its stat
// cache exactly the entries a scan without a cache finds, and as the
// turn's manifest exactly that scan's files, in path order across
// directories whose names sort around "/"; the cache vouches for that
// manifest, so an unchanged re-scan rewrites nothing and stores the same
// manifest.
func TestFirstScanSavesWhatAScanSees(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []string{"a!", "a.b", "a-b/x", "a/b!", "a/b/c/d", "a/b.c", "a/b-", "a0/e", "b", "z/y/x"} {
		f := filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("content of "+p), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, old, old); err != nil { // not racy: a re-scan trusts it
			t.Fatal(err)
		}
	}
	c, err := Open(ctx, Options{Workspace: ws, Store: t.TempDir(), NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	manifest := func() *checkpoints.Manifest {
		t.Helper()
		open, err := c.idx.OpenTurn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := c.idx.Turn(ctx, open.Turn)
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.idx.Manifest(ctx, cp.ID)
		if err != nil || m == nil {
			t.Fatalf("turn %d: manifest %v, %v", open.Turn, m, err)
		}
		return m
	}
	if _, err := c.BeginTurn(ctx, "first", TurnOptions{Scan: true}); err != nil {
		t.Fatal(err)
	}
	fresh, err := c.cap.Scan(ctx, c.scan, nil, capture.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if m := manifest(); !slices.Equal(m.Files, fresh.Manifest.Files) || len(m.Files) != 10 {
		t.Fatalf("manifest %v\nwant (a scan without cache) %v", m.Files, fresh.Manifest.Files)
	}
	sc, err := c.idx.LoadScanCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]checkpoints.StatEntry{}
	for _, es := range fresh.Stats {
		for _, e := range es {
			e.Checked = 0
			want[e.Path] = e
		}
	}
	got := sc.Entries()
	for p, e := range got {
		e.Checked = 0
		got[p] = e
	}
	if !maps.Equal(got, want) {
		t.Fatalf("stat cache %v\nwant %v", got, want)
	}
	if sc.Manifest.IsZero() {
		t.Fatal("the stat cache vouches for no manifest")
	}
	if _, err := c.BeginTurn(ctx, "again", TurnOptions{Scan: true}); err != nil {
		t.Fatal(err)
	}
	if m := manifest(); !slices.Equal(m.Files, fresh.Manifest.Files) {
		t.Fatalf("re-scan manifest %v, want %v", m.Files, fresh.Manifest.Files)
	}
	sc2, err := c.idx.LoadScanCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sc2.Manifest != sc.Manifest || !maps.Equal(sc2.Entries(), sc.Entries()) {
		t.Fatal("an unchanged re-scan changed the stat cache")
	}
}
