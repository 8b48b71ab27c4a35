package checkpoints_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

// TestEachCheckpoint: the streamed walk gives what Checkpoints gives, in
// the same order, from any turn on, with hidden turns left out: after a
// conversation rewind and new turns in place of the hidden ones, and after
// its undo hides those again.
func TestEachCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	each := func(since int) ([]checkpoints.Checkpoint, []bool, checkpoints.PageInfo) {
		t.Helper()
		var got []checkpoints.Checkpoint
		var open []bool
		info, err := x.EachCheckpoint(ctx, since, func(cp checkpoints.Checkpoint, o bool) error {
			got = append(got, cp)
			open = append(open, o)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, open, info
	}
	if got, _, info := each(0); len(got) != 0 || info.Last != -1 || info.Total != 0 {
		t.Fatalf("empty index: %d turns, %+v; want none, Last -1", len(got), info)
	}
	for i := 0; i < 5; i++ {
		cp, err := x.BeginTurn(ctx, fmt.Sprintf("p%d", i), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"z.txt", "a.txt", "m/b.txt"}[:i%3+1] {
			if _, err := x.AddSnap(ctx, cp.ID, checkpoints.FileSnap{Path: p, Content: id(p + cp.Prompt), Mode: 0o644, Size: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Hide turns 2..4 and open 2' and 3' in their place; then undo the
	// rewind, which shows 2..4 again and hides 2' and 3'.
	rw, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Turn: 2, Scope: checkpoints.ScopeConversation, Prompt: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.FinishOp(ctx, rw.ID, checkpoints.Done{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"p2-bis", "p3-bis"} {
		cp, err := x.BeginTurn(ctx, p, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.AddSnap(ctx, cp.ID, checkpoints.FileSnap{Path: "q.txt", Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
	}
	for _, stage := range []string{"rewound", "undone"} {
		if stage == "undone" {
			undo, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpUndo, Turn: 2, Scope: checkpoints.ScopeConversation, Undoes: rw.ID})
			if err != nil {
				t.Fatal(err)
			}
			if err := x.FinishOp(ctx, undo.ID, checkpoints.Done{}); err != nil {
				t.Fatal(err)
			}
		}
		want, err := x.Checkpoints(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, since := range []int{0, 1, 3, len(want) - 1, len(want)} {
			got, open, info := each(since)
			if len(want) < since {
				t.Fatalf("%s: too few turns for the test: %d", stage, len(want))
			}
			if !reflect.DeepEqual(got, want[since:]) && !(len(got) == 0 && len(want[since:]) == 0) {
				t.Errorf("%s, since %d:\n got %+v\nwant %+v", stage, since, got, want[since:])
			}
			if info.Total != len(want) || info.Last != want[len(want)-1].Turn {
				t.Errorf("%s, since %d: info %+v; want Total %d, Last %d", stage, since, info, len(want), want[len(want)-1].Turn)
			}
			for i, o := range open {
				if o != (got[i].Turn == info.Last) {
					t.Errorf("%s, since %d: turn %d open = %v", stage, since, got[i].Turn, o)
				}
			}
		}
	}
	stop := errors.New("stop")
	n := 0
	if _, err := x.EachCheckpoint(ctx, 0, func(checkpoints.Checkpoint, bool) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("fn's error: got %v after %d calls; want it as is after 1", err, n)
	}
}
