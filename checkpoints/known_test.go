package checkpoints_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

func st(s string) checkpoints.State { return checkpoints.State{Content: id(s), Mode: 0o644} }

// LastKnown's timeline: a capture's end once the next turn opens, a
// rewind's after state, an undo putting back what was known before its
// rewind, and a scanned turn making everything unknown.
func TestLastKnownTimeline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	want := func(what string, wantSt checkpoints.State, wantKnown bool) {
		t.Helper()
		got, known, err := x.LastKnown(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if known != wantKnown || known && !got.Equal(wantSt) {
			t.Fatalf("%s: LastKnown = %v known=%v, want %v known=%v", what, got.Content, known, wantSt.Content, wantKnown)
		}
	}
	t0, err := x.BeginTurn(ctx, "t0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.AddSnap(ctx, t0.ID, checkpoints.FileSnap{Path: "a", Content: id("orig"), Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	want("captured in the open turn", checkpoints.State{}, false)
	if _, err := x.BeginTurn(ctx, "t1", []checkpoints.PathEnd{{Path: "a", State: st("agent")}}, nil); err != nil {
		t.Fatal(err)
	}
	want("after the turn ended", st("agent"), true)

	rw, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Scope: checkpoints.ScopeCode, Files: []checkpoints.OpFile{{Path: "a", Before: st("hand"), After: st("orig")}}})
	if err != nil {
		t.Fatal(err)
	}
	want("a planned rewind does not count", st("agent"), true)
	if err := x.FinishOp(ctx, rw.ID, checkpoints.Done{}); err != nil {
		t.Fatal(err)
	}
	want("after the rewind", st("orig"), true)
	un, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpUndo, Scope: checkpoints.ScopeCode, Undoes: rw.ID, Files: []checkpoints.OpFile{{Path: "a", Before: st("orig"), After: st("hand")}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.FinishOp(ctx, un.ID, checkpoints.Done{}); err != nil {
		t.Fatal(err)
	}
	want("after the undo: what was known before the rewind, not the hand edit it wrote", st("agent"), true)

	if _, err := x.BeginTurn(ctx, "t2", nil, &checkpoints.Manifest{}); err != nil {
		t.Fatal(err)
	}
	want("a scanned turn opened since", checkpoints.State{}, false)
}

// ScannedSince returns the scanned turns from a clock value on, oldest
// first, sharing identical manifests; ManifestByID reads one.
func TestScannedSince(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	m := &checkpoints.Manifest{Files: []checkpoints.ManifestEntry{{Path: "a", Blob: *id("a"), Mode: 0o644, Size: 1}}}
	t0, err := x.BeginTurn(ctx, "t0", nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.BeginTurn(ctx, "t1", nil, nil); err != nil {
		t.Fatal(err)
	}
	t2, err := x.BeginTurn(ctx, "t2", nil, m)
	if err != nil {
		t.Fatal(err)
	}
	all, err := x.ScannedSince(ctx, t0.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Seq != t0.Seq || all[1].Seq != t2.Seq || all[0].ManifestID != all[1].ManifestID {
		t.Fatalf("ScannedSince(t0) = %+v", all)
	}
	got, err := x.ManifestByID(ctx, all[0].ManifestID)
	if err != nil || len(got.Files) != 1 || got.Files[0].Path != "a" {
		t.Fatalf("ManifestByID = %+v, %v", got, err)
	}
	if _, err := x.ManifestByID(ctx, all[0].ManifestID+100); !errors.Is(err, checkpoints.ErrNotFound) {
		t.Fatalf("ManifestByID of no manifest: %v, want ErrNotFound", err)
	}
	later, err := x.ScannedSince(ctx, t0.Seq+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(later) != 1 || later[0].Seq != t2.Seq {
		t.Fatalf("ScannedSince(after t0) = %+v", later)
	}
}
