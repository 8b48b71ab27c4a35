package checkpoints_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

// readOpen is what a process opening a turn does first: read the open turn
// with its snapshots, and (here) invent the end state it read from disk
// for each path.
func readOpen(t *testing.T, x *checkpoints.Index, state string) (checkpoints.Seen, []checkpoints.PathEnd) {
	t.Helper()
	ctx := context.Background()
	cp, err := x.OpenTurn(ctx)
	if errors.Is(err, checkpoints.ErrNoOpenTurn) {
		return checkpoints.SeenOf(nil), nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if cp, err = x.Turn(ctx, cp.Turn); err != nil {
		t.Fatal(err)
	}
	var ends []checkpoints.PathEnd
	for _, f := range cp.Files {
		ends = append(ends, checkpoints.PathEnd{Path: f.Path, State: checkpoints.State{Content: id(state), Mode: 0o644}})
	}
	return checkpoints.SeenOf(&cp), ends
}

func endOf(t *testing.T, x *checkpoints.Index, turn int, path string) *checkpoints.State {
	t.Helper()
	cp, err := x.Turn(context.Background(), turn)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cp.Files {
		if f.Path == path {
			return f.End
		}
	}
	t.Fatalf("turn %d has no snapshot of %s", turn, path)
	return nil
}

// TestBeginTurnAfterRefusesStaleEnds plays the interleavings of issue 10's
// 9b on two handles of one index, as two processes have them: end states
// read for a turn that is no longer open, or before a capture into it, are
// refused with ErrStale and nothing is recorded; read again, they go in.
func TestBeginTurnAfterRefusesStaleEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	t0, err := a.BeginTurnAfter(ctx, "t0", checkpoints.SeenOf(nil), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddSnap(ctx, t0.ID, checkpoints.FileSnap{Path: "f", Content: id("v0"), Mode: 0o644}); err != nil {
		t.Fatal(err)
	}

	t.Run("another turn opened meanwhile", func(t *testing.T) {
		seenB, endsB := readOpen(t, b, "v1 as b read it")
		seenA, endsA := readOpen(t, a, "v1")
		t1, err := a.BeginTurnAfter(ctx, "t1 by a", seenA, endsA, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The agent goes on in t1: captures f (v1), writes v2.
		if _, err := a.AddSnap(ctx, t1.ID, checkpoints.FileSnap{Path: "f", Content: id("v1"), Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		_, err = b.BeginTurnAfter(ctx, "t2 by b", seenB, endsB, nil)
		if !errors.Is(err, checkpoints.ErrStale) {
			t.Fatalf("BeginTurnAfter with ends read for turn 0 while turn 1 is open: %v, want ErrStale", err)
		}
		if end := endOf(t, b, 1, "f"); end != nil {
			t.Errorf("turn 1's f got the end state b read during turn 0: %+v", end)
		}
		if cp, _ := b.OpenTurn(ctx); cp.Turn != 1 {
			t.Errorf("open turn %d after the refusal, want 1: nothing may be recorded", cp.Turn)
		}
		seenB, endsB = readOpen(t, b, "v2")
		if _, err := b.BeginTurnAfter(ctx, "t2 by b", seenB, endsB, nil); err != nil {
			t.Fatal(err)
		}
		if end := endOf(t, b, 1, "f"); end == nil || *end.Content != *id("v2") {
			t.Errorf("turn 1's f ends %+v, want v2", end)
		}
		if end := endOf(t, b, 0, "f"); end == nil || *end.Content != *id("v1") {
			t.Errorf("turn 0's f ends %+v, want v1", end)
		}
	})

	t.Run("a capture into the open turn meanwhile", func(t *testing.T) {
		cur, err := b.OpenTurn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seenB, endsB := readOpen(t, b, "nothing")
		if _, err := a.AddSnap(ctx, cur.ID, checkpoints.FileSnap{Path: "g", Content: id("g0"), Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.BeginTurnAfter(ctx, "t3", seenB, endsB, nil); !errors.Is(err, checkpoints.ErrStale) {
			t.Fatalf("BeginTurnAfter missing the end of a path captured meanwhile: %v, want ErrStale", err)
		}
		seenB, endsB = readOpen(t, b, "g1")
		if _, err := b.BeginTurnAfter(ctx, "t3", seenB, endsB, nil); err != nil {
			t.Fatal(err)
		}
		if end := endOf(t, b, cur.Turn, "g"); end == nil || *end.Content != *id("g1") {
			t.Errorf("turn %d's g ends %+v, want g1", cur.Turn, end)
		}
	})

	t.Run("no open turn seen, one opened meanwhile", func(t *testing.T) {
		d := t.TempDir()
		x, y := open(t, d), open(t, d)
		if _, err := x.BeginTurnAfter(ctx, "first", checkpoints.SeenOf(nil), nil, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := y.BeginTurnAfter(ctx, "first again", checkpoints.SeenOf(nil), nil, nil); !errors.Is(err, checkpoints.ErrStale) {
			t.Fatalf("BeginTurnAfter seeing no open turn while one is: %v, want ErrStale", err)
		}
	})
}
