package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/controller"
)

// TestVersionsStoredAsDeltas: a file's end state at the next turn, and its
// content captured after someone else changed it between turns, are
// stored as deltas of the session's previous version of that file.
func TestVersionsStoredAsDeltas(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: t.TempDir(), NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b strings.Builder
	for i := 0; b.Len() < 16<<10; i++ {
		fmt.Fprintf(&b, "\tv%d := compute(%d, %d)\n", i, i*7919%10007, i*104729%65537)
	}
	v0 := b.String()
	v1 := strings.Replace(v0, "\tv10 :=", "\t// agent edit\n\tv10 :=", 1)
	v2 := strings.Replace(v1, "\tv90 :=", "\t// user edit\n\tv90 :=", 1)
	p := filepath.Join(ws, "a.go")
	write := func(s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(v0)
	if _, err := c.BeginTurn(ctx, "t0", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	write(v1) // the agent's edit
	// Opening the next turn records v1 as t0's end.
	if _, err := c.BeginTurn(ctx, "t1", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	write(v2) // someone else's edit between turns
	if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	bases := map[cas.ID]cas.ID{}
	if err := controller.BlobsOf(c).Walk(ctx, func(i cas.Info) error {
		bases[i.ID] = i.Base
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	id := func(s string) cas.ID { return cas.Sum([]byte(s)) }
	for _, tt := range []struct {
		name       string
		blob, base cas.ID
	}{
		{"turn end", id(v1), id(v0)},
		{"capture after an outside edit", id(v2), id(v1)},
	} {
		got, ok := bases[tt.blob]
		if !ok || got != tt.base {
			t.Errorf("%s: blob %s stored with base %s (present %v), want base %s", tt.name, tt.blob.Short(), got.Short(), ok, tt.base.Short())
		}
	}
}

// TestScanStoresDeltas: a file changed between two scans is stored as a
// delta of its content at the first.
func TestScanStoresDeltas(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: t.TempDir(), NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b strings.Builder
	for i := 0; b.Len() < 16<<10; i++ {
		fmt.Fprintf(&b, "\tw%d := other(%d, %d)\n", i, i*7919%10007, i*104729%65537)
	}
	v0 := b.String()
	v1 := strings.Replace(v0, "\tw50 :=", "\t// an edit\n\tw50 :=", 1)
	p := filepath.Join(ws, "b.go")
	if err := os.WriteFile(p, []byte(v0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BeginTurn(ctx, "t0", controller.TurnOptions{Scan: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(v1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BeginTurn(ctx, "t1", controller.TurnOptions{Scan: true}); err != nil {
		t.Fatal(err)
	}
	var base cas.ID
	found := false
	controller.BlobsOf(c).Walk(ctx, func(i cas.Info) error {
		if i.ID == cas.Sum([]byte(v1)) {
			base, found = i.Base, true
		}
		return nil
	})
	if !found || base != cas.Sum([]byte(v0)) {
		t.Errorf("second scan's version: found %v, base %s; want a delta of the first scan's %s", found, base.Short(), cas.Sum([]byte(v0)).Short())
	}
}
