package checkpoints_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

func open(t testing.TB, dir string) *checkpoints.Index {
	t.Helper()
	x, err := checkpoints.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func id(s string) *cas.ID {
	v := cas.Sum([]byte(s))
	return &v
}

func TestTurnsSnapsAndFirstCaptureWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	if _, err := x.OpenTurn(ctx); !errors.Is(err, checkpoints.ErrNoOpenTurn) {
		t.Fatalf("OpenTurn on empty index: got %v, want ErrNoOpenTurn", err)
	}
	t0, err := x.BeginTurn(ctx, "first", nil, nil)
	if err != nil || t0.Turn != 0 {
		t.Fatalf("BeginTurn = %+v, %v; want turn 0", t0, err)
	}
	added, err := x.AddSnap(ctx, t0.ID, checkpoints.FileSnap{Path: "a.txt", Content: id("A"), Mode: 0o644, Size: 1})
	if err != nil || !added {
		t.Fatalf("AddSnap = %v, %v", added, err)
	}
	added, err = x.AddSnap(ctx, t0.ID, checkpoints.FileSnap{Path: "a.txt", Content: id("B"), Mode: 0o755, Size: 1})
	if err != nil || added {
		t.Fatalf("second AddSnap of same path = %v, %v; want false (first capture wins)", added, err)
	}
	if _, err := x.AddSnap(ctx, t0.ID, checkpoints.FileSnap{Path: "new/b.txt", Dirs: []string{"new"}}); err != nil {
		t.Fatal(err)
	}
	t1, err := x.BeginTurn(ctx, "second", []checkpoints.PathEnd{{Path: "a.txt", State: checkpoints.State{}}}, nil)
	if err != nil || t1.Turn != 1 {
		t.Fatalf("BeginTurn = %+v, %v; want turn 1", t1, err)
	}
	cps, err := x.Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 2 || cps[0].Prompt != "first" || cps[1].Prompt != "second" {
		t.Fatalf("Checkpoints = %+v", cps)
	}
	files := cps[0].Files
	if len(files) != 2 || files[0].Path != "a.txt" || *files[0].Content != *id("A") || files[0].Mode != 0o644 {
		t.Fatalf("turn 0 files = %+v; want a.txt with A, 0644", files)
	}
	if files[0].End == nil || files[0].End.Exists() {
		t.Errorf("a.txt end = %+v, want recorded absent", files[0].End)
	}
	if files[1].Content != nil || len(files[1].Dirs) != 1 || files[1].Dirs[0] != "new" {
		t.Errorf("new/b.txt = %+v, want nil content with dirs [new]", files[1])
	}
	msgs, err := x.Conversation(ctx)
	if err != nil || len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Text != "first" {
		t.Fatalf("Conversation = %+v, %v; want the two prompts as user messages", msgs, err)
	}
}

func TestEarliestAcrossTurnsAndOps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	t0, _ := x.BeginTurn(ctx, "t0", nil, nil)
	x.AddSnap(ctx, t0.ID, checkpoints.FileSnap{Path: "f", Content: id("v0")})
	t1, _ := x.BeginTurn(ctx, "t1", nil, nil)
	x.AddSnap(ctx, t1.ID, checkpoints.FileSnap{Path: "f", Content: id("v1")})
	x.AddSnap(ctx, t1.ID, checkpoints.FileSnap{Path: "g"}) // created in t1

	for _, tc := range []struct {
		since int64
		want  map[string]*cas.ID
	}{
		{t0.Seq, map[string]*cas.ID{"f": id("v0"), "g": nil}},
		{t1.Seq, map[string]*cas.ID{"f": id("v1"), "g": nil}},
	} {
		got, err := x.Earliest(ctx, tc.since)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("Earliest(%d) = %v, want %d paths", tc.since, got, len(tc.want))
		}
		for p, w := range tc.want {
			g, ok := got[p]
			if !ok || (w == nil) != (g.Content == nil) || (w != nil && *w != *g.Content) {
				t.Errorf("Earliest(%d)[%s] = %+v, want %v", tc.since, p, g, w)
			}
		}
	}

	// A finished op after t1 is history too: a later turn sees the op's
	// before-state as the earliest.
	op, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Turn: 1, Scope: checkpoints.ScopeCode,
		Files: []checkpoints.OpFile{{Path: "h", Before: checkpoints.State{Content: id("h-before")}, After: checkpoints.State{}}}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := x.Earliest(ctx, t1.Seq)
	if _, ok := got["h"]; ok {
		t.Errorf("a planned op must not count as history yet")
	}
	if err := x.FinishOp(ctx, op.ID, checkpoints.Done{}); err != nil {
		t.Fatal(err)
	}
	got, _ = x.Earliest(ctx, t1.Seq)
	if h, ok := got["h"]; !ok || *h.Content != *id("h-before") {
		t.Errorf("Earliest after op: h = %+v, want h-before", h)
	}
}

func TestConversationRewindAndUndo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	for i := 0; i < 3; i++ {
		x.BeginTurn(ctx, fmt.Sprintf("p%d", i), nil, nil)
		x.AppendMessage(ctx, "assistant", fmt.Sprintf("a%d", i))
	}
	rw, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Turn: 1, Scope: checkpoints.ScopeConversation, Prompt: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.FinishOp(ctx, rw.ID, checkpoints.Done{}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := x.Conversation(ctx)
	if len(msgs) != 2 || msgs[1].Text != "a0" {
		t.Fatalf("after rewind to 1: %+v; want p0, a0", msgs)
	}
	// The next turn gets number 1.
	nt, err := x.BeginTurn(ctx, "p1-bis", nil, nil)
	if err != nil || nt.Turn != 1 {
		t.Fatalf("next turn = %+v, %v; want number 1", nt, err)
	}
	last, err := x.LastRewind(ctx)
	if err != nil || last.ID != rw.ID {
		t.Fatalf("LastRewind = %+v, %v", last, err)
	}
	undo, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpUndo, Turn: 1, Scope: checkpoints.ScopeConversation, Undoes: rw.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.FinishOp(ctx, undo.ID, checkpoints.Done{}); err != nil {
		t.Fatal(err)
	}
	msgs, _ = x.Conversation(ctx)
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	if fmt.Sprint(texts) != "[p0 a0 p1 a1 p2 a2]" {
		t.Fatalf("after undo: %v; want the original conversation", texts)
	}
	if _, err := x.LastRewind(ctx); !errors.Is(err, checkpoints.ErrNothingToUndo) {
		t.Fatalf("LastRewind after undo: %v, want ErrNothingToUndo", err)
	}
}

func TestPendingAndAbort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	if _, err := x.PendingOp(ctx); !errors.Is(err, checkpoints.ErrNotFound) {
		t.Fatalf("PendingOp on fresh index: %v", err)
	}
	op, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Scope: checkpoints.ScopeCode,
		Files: []checkpoints.OpFile{{Path: "x", After: checkpoints.State{Content: id("x")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Scope: checkpoints.ScopeCode}); err == nil {
		t.Fatal("a second op was planned while one is pending")
	}
	p, err := x.PendingOp(ctx)
	if err != nil || p.ID != op.ID || len(p.Files) != 1 || *p.Files[0].After.Content != *id("x") {
		t.Fatalf("PendingOp = %+v, %v", p, err)
	}
	if err := x.AbortOp(ctx, op.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := x.PendingOp(ctx); !errors.Is(err, checkpoints.ErrNotFound) {
		t.Fatalf("PendingOp after abort: %v", err)
	}
}

func TestOpenVerifiesPragmasAndReopens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	x := open(t, dir)
	x.BeginTurn(ctx, "kept", nil, nil)
	x.Close()
	y := open(t, dir)
	cps, err := y.Checkpoints(ctx)
	if err != nil || len(cps) != 1 || cps[0].Prompt != "kept" {
		t.Fatalf("reopen: %+v, %v", cps, err)
	}
	if _, err := y.AppendMessage(ctx, "robot", "hi"); !errors.Is(err, checkpoints.ErrBadRole) {
		t.Fatalf("bad role: %v", err)
	}
}

// TestConcurrentWriters: two Index handles on one file (as two processes
// have) add snaps at once; none is lost and no "database is locked" escapes.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	cp, err := a.BeginTurn(ctx, "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for w, x := range []*checkpoints.Index{a, b} {
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(w, g int, x *checkpoints.Index) {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					_, err := x.AddSnap(ctx, cp.ID, checkpoints.FileSnap{Path: fmt.Sprintf("w%d/g%d/f%d", w, g, i), Content: id("c")})
					if err != nil {
						errs <- err
					}
				}
			}(w, g, x)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("AddSnap: %v", err)
	}
	got, err := a.Turn(ctx, cp.Turn)
	if err != nil || len(got.Files) != 400 {
		t.Fatalf("files = %d, %v; want 400", len(got.Files), err)
	}
}

func BenchmarkList10000(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "s")
	x, err := checkpoints.Open(ctx, dir, checkpoints.WithClock(func() time.Time { return time.Unix(1700000000, 0) }))
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	for i := 0; i < 10000; i++ {
		cp, err := x.BeginTurn(ctx, fmt.Sprintf("prompt %d", i), nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		x.AddSnap(ctx, cp.ID, checkpoints.FileSnap{Path: fmt.Sprintf("f%d.go", i%50), Content: id("x")})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cps, err := x.Checkpoints(ctx)
		if err != nil || len(cps) != 10000 {
			b.Fatalf("%d, %v", len(cps), err)
		}
	}
}

// Every list gives each turn's snapshots in path order, whatever order
// they were captured in.
func TestListsSortSnapshotsByPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	captured := [][]string{{"c.go", "a.go", "b/x.go", "B.go"}, {"z", "m", "a.go"}}
	for i, paths := range captured {
		cp, err := x.BeginTurn(ctx, fmt.Sprint("turn ", i), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths { // one capture each, in this order
			if _, err := x.AddSnaps(ctx, cp.ID, []checkpoints.FileSnap{{Path: p, Content: id(p)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []string{"B.go a.go b/x.go c.go", "a.go m z"}
	check := func(how string, cps []checkpoints.Checkpoint, want []string) {
		t.Helper()
		if len(cps) != len(want) {
			t.Fatalf("%s: %d turns, want %d", how, len(cps), len(want))
		}
		for i, cp := range cps {
			var got []string
			for _, f := range cp.Files {
				got = append(got, f.Path)
			}
			if g := strings.Join(got, " "); g != want[i] {
				t.Errorf("%s: turn %d files %q, want %q", how, cp.Turn, g, want[i])
			}
		}
	}
	cps, err := x.Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("Checkpoints", cps, want)
	cps, _, err = x.CheckpointsPage(ctx, checkpoints.Page{Since: 0})
	if err != nil {
		t.Fatal(err)
	}
	check("CheckpointsPage", cps, want)
	cps = nil
	if _, err := x.EachCheckpoint(ctx, 0, func(cp checkpoints.Checkpoint, _ bool) error {
		cps = append(cps, cp)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	check("EachCheckpoint", cps, want)
	for i := range want {
		cp, err := x.Turn(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		check("Turn", []checkpoints.Checkpoint{cp}, want[i:i+1])
	}
}
