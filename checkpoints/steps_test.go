package checkpoints_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// TestStepsRecordFirstTouchPerStep: a path is recorded once per step that
// touches it (the turn's first in snaps, later steps in their own rows), a
// keyed step is found again, and every index reader sees the step rows:
// earliest events, refs (for gc), prune and mark-lost.
func TestStepsRecordFirstTouchPerStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	if _, _, err := x.BeginStep(ctx, "k", "Edit"); !errors.Is(err, checkpoints.ErrNoOpenTurn) {
		t.Fatalf("BeginStep with no turn: %v, want ErrNoOpenTurn", err)
	}
	t0, err := x.BeginTurn(ctx, "t0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A capture before any step is step 0.
	if added, err := x.AddSnaps(ctx, t0.ID, []checkpoints.FileSnap{{Path: "z", Content: id("z0")}}); err != nil || !added[0] {
		t.Fatalf("step 0 capture: %v %v", added, err)
	}
	s1, opened, err := x.BeginStep(ctx, "toolu_1", "Edit")
	if err != nil || !opened || s1.Number != 1 || s1.Turn != 0 {
		t.Fatalf("step 1: %+v %v %v", s1, opened, err)
	}
	again, opened, err := x.BeginStep(ctx, "toolu_1", "Edit")
	if err != nil || opened || again.Number != 1 || again.Seq != s1.Seq {
		t.Fatalf("step 1 by its key: %+v %v %v", again, opened, err)
	}
	add := func(step int, path, content string) bool {
		t.Helper()
		added, err := x.AddSnaps(ctx, t0.ID, []checkpoints.FileSnap{{Path: path, Content: id(content), Step: step}})
		if err != nil {
			t.Fatal(err)
		}
		return added[0]
	}
	if !add(1, "a", "a0") || add(1, "a", "a-again") {
		t.Fatal("step 1: the first touch of a is recorded, the second is not")
	}
	s2, _, err := x.BeginStep(ctx, "", "Bash")
	if err != nil || s2.Number != 2 {
		t.Fatalf("step 2: %+v %v", s2, err)
	}
	if s3, _, err := x.BeginStep(ctx, "", "Bash"); err != nil || s3.Number != 3 {
		t.Fatalf("an unkeyed step is always new: %+v %v", s3, err)
	}
	if !add(2, "a", "a1") || add(2, "a", "a1-again") || !add(2, "b", "b-absent") {
		t.Fatal("step 2: a (again) and b (new) are recorded once each")
	}
	if !add(3, "a", "a2") || !add(3, "z", "z1") {
		t.Fatal("step 3: a and z, captured in earlier steps, are recorded again")
	}

	cp, err := x.Turn(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Files) != 3 || *cp.Files[0].Content != *id("a0") || cp.Files[0].Step != 1 || cp.Files[2].Step != 0 {
		t.Fatalf("the turn keeps each path's first capture: %+v", cp.Files)
	}
	steps, err := x.Steps(ctx)
	if err != nil || len(steps) != 3 {
		t.Fatalf("steps: %+v %v", steps, err)
	}
	got := map[int][]string{}
	for _, st := range steps {
		for _, f := range st.Files {
			got[st.Number] = append(got[st.Number], f.Path+"="+f.Content.Short())
		}
	}
	want := map[int][]string{
		1: {"a=" + id("a0").Short()},
		2: {"a=" + id("a1").Short(), "b=" + id("b-absent").Short()},
		3: {"a=" + id("a2").Short(), "z=" + id("z1").Short()},
	}
	for n, w := range want {
		if g := got[n]; len(g) != len(w) || g[0] != w[0] || g[len(g)-1] != w[len(w)-1] {
			t.Errorf("step %d files %v, want %v", n, g, w)
		}
	}
	if st, err := x.StepOf(ctx, 0, 4); !errors.Is(err, checkpoints.ErrNoStep) {
		t.Errorf("StepOf 0.4: %+v %v, want ErrNoStep", st, err)
	}
	if _, err := x.StepOf(ctx, 7, 1); !errors.Is(err, checkpoints.ErrNotFound) {
		t.Errorf("StepOf 7.1: %v, want ErrNotFound", err)
	}

	// From step 2's clock value, a's first event is its step-2 record.
	ev, err := x.EarliestEvents(ctx, s2.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if e := ev["a"]; e.State.Content == nil || *e.State.Content != *id("a1") {
		t.Errorf("earliest a since step 2: %+v, want a1", e)
	}
	if e := ev["z"]; e.State.Content == nil || *e.State.Content != *id("z1") {
		t.Errorf("earliest z since step 2: %+v, want z1", e)
	}
	if ev, _ := x.EarliestEvents(ctx, t0.Seq); *ev["a"].State.Content != *id("a0") {
		t.Errorf("earliest a since the turn: %+v, want a0 (turn semantics unchanged)", ev["a"])
	}

	// Refs name the step records' blobs, so gc keeps them.
	refs := map[cas.ID]bool{}
	if err := x.Refs(ctx, func(r checkpoints.Ref) error { refs[r.Blob] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"a1", "a2", "z1", "b-absent"} {
		if !refs[*id(c)] {
			t.Errorf("Refs lacks step record %s", c)
		}
	}
	// verify --repair marks a lost step record.
	if n, err := x.MarkLost(ctx, []cas.ID{*id("a2")}); err != nil || n != 1 {
		t.Errorf("MarkLost of a step record: %d %v", n, err)
	}
	if ev, _ := x.EarliestEvents(ctx, s2.Seq+100); len(ev) != 0 {
		t.Errorf("events after the last: %v", ev)
	}
	ev, _ = x.EarliestEvents(ctx, s2.Seq+2) // after a's and b's step-2 records: a's step-3 one
	if !ev["a"].State.Lost {
		t.Errorf("a's step-3 record after MarkLost: %+v, want lost", ev["a"])
	}

	// Prune forgets the step records with the turn's snapshots.
	if _, err := x.BeginTurn(ctx, "t1", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := x.Prune(ctx, []int64{t0.ID}); err != nil {
		t.Fatal(err)
	}
	if ev, _ := x.EarliestEvents(ctx, 0); len(ev) != 0 {
		t.Errorf("after prune, events remain: %v", ev)
	}
}

// TestStepsOfManyTurns lists the steps of more turns than Steps reads one
// by one, so the one-pass query is used, hidden turns left out.
func TestStepsOfManyTurns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	for i := 0; i < 12; i++ {
		cp, err := x.BeginTurn(ctx, "t", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for s := 1; s <= 2; s++ {
			if _, _, err := x.BeginStep(ctx, "", "Edit"); err != nil {
				t.Fatal(err)
			}
			if _, err := x.AddSnaps(ctx, cp.ID, []checkpoints.FileSnap{{Path: "f", Content: id("c"), Step: s}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps, err := x.Steps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 24 {
		t.Fatalf("%d steps, want 24", len(steps))
	}
	for i, st := range steps {
		if st.Turn != i/2 || st.Number != i%2+1 || len(st.Files) != 1 || st.Files[0].Path != "f" || st.Files[0].Step != st.Number {
			t.Fatalf("step %d: %+v", i, st)
		}
	}
}

// TestBeginStepAcrossHandles: two handles on one index (the hook server's
// kept controller and a `ckpt hook` process) open steps in turn, each
// with its statements prepared once: each sees the steps and clock the
// other committed, a key opened by one is found by the other, and a
// schema change made meanwhile by a third connection (a newer ckpt's
// migration) does not stop them.
func TestBeginStepAcrossHandles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	if _, err := a.BeginTurn(ctx, "t0", nil, nil); err != nil {
		t.Fatal(err)
	}
	var last int64
	step := func(x *checkpoints.Index, key string, wantNumber int, wantOpened bool) checkpoints.Step {
		t.Helper()
		st, opened, err := x.BeginStep(ctx, key, "Edit")
		if err != nil || st.Number != wantNumber || opened != wantOpened {
			t.Fatalf("BeginStep(%q): %+v opened %v, %v; want step %d opened %v", key, st, opened, err, wantNumber, wantOpened)
		}
		if opened {
			if st.Seq <= last {
				t.Fatalf("BeginStep(%q): seq %d after %d", key, st.Seq, last)
			}
			last = st.Seq
		}
		return st
	}
	s1 := step(a, "toolu_1", 1, true)
	if again := step(b, "toolu_1", 1, false); again.Seq != s1.Seq || again.Tool != "Edit" || !again.Time.Equal(s1.Time) {
		t.Fatalf("the other handle's step 1 by its key: %+v, want %+v", again, s1)
	}
	step(b, "", 2, true)
	step(a, "toolu_3", 3, true)

	raw, err := sql.Open("sqlite", checkpoints.DSN(filepath.Join(dir, checkpoints.FileName)))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{`CREATE TABLE scratch (x)`, `DROP TABLE scratch`} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	step(b, "toolu_4", 4, true)
	step(a, "toolu_4", 4, false)
	step(a, "toolu_1", 1, false)
	if _, err := b.AddSnaps(ctx, s1.TurnID, []checkpoints.FileSnap{{Path: "a", Content: id("a0"), Step: 4}}); err != nil {
		t.Fatal(err)
	}
	step(a, "toolu_5", 5, true)
	if _, err := a.BeginTurn(ctx, "t1", nil, nil); err != nil {
		t.Fatal(err)
	}
	if st := step(b, "toolu_1", 1, true); st.Turn != 1 {
		t.Fatalf("a key of the turn before opens a step of the new turn: %+v", st)
	}
}
