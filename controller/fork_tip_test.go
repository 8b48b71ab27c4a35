package controller_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// parentOf is the parent, and the turn forked before, the store's session
// list gives session id.
func parentOf(t *testing.T, c *controller.Controller, id string) (string, int) {
	t.Helper()
	infos, err := c.Store().Sessions(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if i.ID == id {
			return i.Parent, i.ParentTurn
		}
	}
	t.Fatalf("no session %s in %+v", id, infos)
	return "", 0
}

// TestForkAfterTheLastTurn: a fork at the number the next turn would get
// holds the whole history (an agent forking its session as it stands),
// rewinds nothing, links to this session and that turn, and goes on on its
// own; any later number is still no turn.
func TestForkAfterTheLastTurn(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	before := snapshot(t, e.c)

	if _, err := e.c.Fork(ctx, 4, controller.ForkOptions{To: "far"}); !errors.Is(err, controller.ErrNoTurn) {
		t.Errorf("fork two past the last turn: got %v, want ErrNoTurn", err)
	}
	res, err := e.c.Fork(ctx, 3, controller.ForkOptions{To: "tip", Restore: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Session != "tip" || res.Changed || res.Prompt != "" || len(res.Restored)+len(res.Deleted) != 0 {
		t.Errorf("fork after the last turn = %+v, want session tip and nothing rewound", res)
	}
	e.want("a.txt", "a3")
	e.want("b.txt", "b")
	if got := snapshot(t, e.c); !reflect.DeepEqual(got, before) {
		t.Errorf("original changed by the fork")
	}
	if p, turn := parentOf(t, e.c, "tip"); p != e.session() || turn != 3 {
		t.Errorf("fork's parent = %s turn %d, want %s turn 3", p, turn, e.session())
	}
	f := e.open("tip")
	if got := snapshot(t, f); !reflect.DeepEqual(got, before) {
		t.Errorf("fork's history:\ngot  %+v\nwant %+v", got, before)
	}
	if _, err := f.Undo(ctx, controller.RewindOptions{}); !errors.Is(err, checkpoints.ErrNothingToUndo) {
		t.Errorf("undo in the fork: got %v, want nothing to undo", err)
	}
	// The fork rewinds every turn it copied and goes on with turn 3.
	if _, err := f.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.txt", "a0")
	e.want("b.txt", "<absent>")
	if _, err := f.Undo(ctx, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.txt", "a3")
	if cp, err := f.BeginTurn(ctx, "fourth, in the fork", controller.TurnOptions{}); err != nil || cp.Turn != 3 {
		t.Errorf("fork's next turn = %d, %v; want 3", cp.Turn, err)
	}
	if got := snapshot(t, e.c); !reflect.DeepEqual(got, before) {
		t.Errorf("original changed by a turn in the fork")
	}

	// After a conversation rewind to turn 1 the next turn is 1 again:
	// that is where the fork goes, and turn 2 is hidden, not forkable.
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 1}, checkpoints.ScopeConversation, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Fork(ctx, 2, controller.ForkOptions{To: "hidden"}); !errors.Is(err, controller.ErrNoTurn) {
		t.Errorf("fork at a hidden turn: got %v, want ErrNoTurn", err)
	}
	if _, err := e.c.Fork(ctx, 1, controller.ForkOptions{To: "cut"}); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, e.open("cut")); !reflect.DeepEqual(got.list, before.list[:1]) {
		t.Errorf("fork after the rewound history = %+v, want turn 0 only", got.list)
	}
}

// TestForkOfASessionWithoutTurns: a session with no turn yet forks at
// turn 0 into an empty fork linked to it.
func TestForkOfASessionWithoutTurns(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := e.c.Fork(ctx, 1, controller.ForkOptions{To: "x"}); !errors.Is(err, controller.ErrNoTurn) {
		t.Errorf("fork at turn 1 of an empty session: got %v, want ErrNoTurn", err)
	}
	if _, err := e.c.Fork(ctx, 0, controller.ForkOptions{To: "empty"}); err != nil {
		t.Fatal(err)
	}
	if p, turn := parentOf(t, e.c, "empty"); p != e.session() || turn != 0 {
		t.Errorf("fork's parent = %s turn %d, want %s turn 0", p, turn, e.session())
	}
	if got := snapshot(t, e.open("empty")); len(got.list) != 0 || len(got.log) != 0 {
		t.Errorf("fork of an empty session holds %+v", got)
	}
}
