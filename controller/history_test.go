package controller_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// tree is the workspace as bytes and permission bits, path by path.
type tree map[string]string

func (e *env) tree() tree {
	e.t.Helper()
	out := tree{}
	err := filepath.WalkDir(e.ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.ws, p)
		out[filepath.ToSlash(rel)] = fi.Mode().Perm().String() + " " + string(b)
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// state is everything a user can observe of a session: files, checkpoints,
// conversation.
type state struct {
	files tree
	sess  session
}

func (e *env) state() state {
	e.t.Helper()
	return state{e.tree(), snapshot(e.t, e.c)}
}

func (e *env) wantState(step string, want state) {
	e.t.Helper()
	got := e.state()
	if !reflect.DeepEqual(got.files, want.files) {
		e.t.Errorf("%s: files\ngot  %v\nwant %v", step, got.files, want.files)
	}
	if !reflect.DeepEqual(got.sess, want.sess) {
		e.t.Errorf("%s: session\ngot  %+v\nwant %+v", step, got.sess, want.sess)
	}
}

func (e *env) history() []controller.HistoryEntry {
	e.t.Helper()
	h, err := e.c.History(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *env) undo(o controller.RewindOptions) controller.Result {
	e.t.Helper()
	res, err := e.c.Undo(context.Background(), o)
	if err != nil {
		e.t.Fatalf("undo %+v: %v", o, err)
	}
	return res
}

func (e *env) redo(o controller.RewindOptions) controller.Result {
	e.t.Helper()
	res, err := e.c.Redo(context.Background(), o)
	if err != nil {
		e.t.Fatalf("redo %+v: %v", o, err)
	}
	return res
}

func TestUndoDryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	e.rewind(1, checkpoints.ScopeBoth, controller.RewindOptions{})
	e.write("a.txt", "a hand edit nobody stored")
	before, hist, blobs := e.state(), e.history(), blobCount(t, e.c)

	res, err := e.c.Undo(ctx, controller.RewindOptions{DryRun: true})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if !res.DryRun || !reflect.DeepEqual(res.Restored, []string{"a.txt", "b.txt"}) || !reflect.DeepEqual(res.Conflicts, []string{"a.txt"}) {
		t.Errorf("dry run result %+v, want a.txt and b.txt restored, a.txt in conflict", res)
	}
	e.wantState("after undo --dry-run", before)
	if got := e.history(); !reflect.DeepEqual(got, hist) {
		t.Errorf("dry run changed the history:\ngot  %+v\nwant %+v", got, hist)
	}
	if got := blobCount(t, e.c); got != blobs {
		t.Errorf("dry run stored blobs: %d, had %d", got, blobs)
	}
	// The real undo still refuses the hand edit, and does the planned
	// thing when forced.
	if _, err := e.c.Undo(ctx, controller.RewindOptions{}); !errors.Is(err, controller.ErrConflict) || !strings.Contains(err.Error(), "since that rewind") {
		t.Fatalf("undo over a hand edit: %v, want ErrConflict, since that rewind", err)
	}
	e.undo(controller.RewindOptions{Force: true})
	e.want("a.txt", "a3")
	e.want("b.txt", "b")

	// Redo has a dry run too.
	mid, blobs := e.state(), blobCount(t, e.c)
	res, err = e.c.Redo(ctx, controller.RewindOptions{DryRun: true})
	if err != nil || !res.DryRun || len(res.Restored) != 1 || len(res.Deleted) != 1 {
		t.Fatalf("redo dry run: %+v, %v", res, err)
	}
	e.wantState("after redo --dry-run", mid)
	if got := blobCount(t, e.c); got != blobs {
		t.Errorf("redo dry run stored blobs: %d, had %d", got, blobs)
	}
}

func TestRedoRestoresTheRewoundStateExactly(t *testing.T) {
	for _, scope := range []checkpoints.Scope{checkpoints.ScopeCode, checkpoints.ScopeConversation, checkpoints.ScopeBoth} {
		t.Run(string(scope), func(t *testing.T) {
			e := newEnv(t)
			threeTurns(e)
			// Bytes a text tool would mangle, and an executable bit.
			e.turn("fourth")
			e.edit("bin.dat", "\x00\xff\r\n\x80 not utf-8\r\n")
			os.Chmod(filepath.Join(e.ws, "bin.dat"), 0o755)
			e.edit("a.txt", "a4\r\n")
			e.turn("fifth")
			start := e.state()
			e.rewind(1, scope, controller.RewindOptions{})
			rewound := e.state()
			if reflect.DeepEqual(rewound, start) {
				t.Fatal("the rewind changed nothing")
			}
			e.undo(controller.RewindOptions{})
			e.wantState("after undo", start)
			res := e.redo(controller.RewindOptions{})
			if res.Turn != 1 || res.Scope != scope || !res.Changed {
				t.Errorf("redo result %+v", res)
			}
			e.wantState("after redo", rewound)
			if scope.Code() {
				e.want("bin.dat", "<absent>")
			}
			// The redo is undone like the rewind it re-applies.
			e.undo(controller.RewindOptions{})
			e.wantState("after undoing the redo", start)
			e.redo(controller.RewindOptions{})
			e.wantState("after the second redo", rewound)
			if _, err := e.c.Redo(context.Background(), controller.RewindOptions{}); !errors.Is(err, controller.ErrNothingToUndo) || !strings.Contains(err.Error(), "nothing to redo") {
				t.Errorf("redo with nothing undone: %v, want ErrNothingToUndo, nothing to redo", err)
			}
		})
	}
}

func TestForcedUndoThenRedoReturnsTheHandEdits(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "v0")
	e.turn("p0")
	e.edit("a.txt", "v1")
	e.edit("new.txt", "made by the agent")
	e.turn("p1")
	e.rewind(0, checkpoints.ScopeCode, controller.RewindOptions{})
	e.want("new.txt", "<absent>")
	// By hand, after the rewind: edit a file and create the deleted one.
	e.write("a.txt", "hand edit\r\n\x00")
	e.write("new.txt", "hand-made")
	handMade := e.state()

	_, err := e.c.Undo(ctx, controller.RewindOptions{})
	if !errors.Is(err, controller.ErrConflict) || !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "new.txt") || !strings.Contains(err.Error(), "since that rewind") {
		t.Fatalf("undo over hand edits: %v, want ErrConflict, since that rewind naming both", err)
	}
	e.undo(controller.RewindOptions{Force: true})
	e.want("a.txt", "v1")
	e.want("new.txt", "made by the agent")

	// The hand edits the forced undo overwrote come back with redo.
	e.redo(controller.RewindOptions{})
	e.wantState("after redo", handMade)

	// A forced redo keeps what it overwrites too: undo brings it back.
	e.undo(controller.RewindOptions{})
	e.write("a.txt", "second hand edit")
	secondHand := e.state()
	if _, err := e.c.Redo(ctx, controller.RewindOptions{}); !errors.Is(err, controller.ErrConflict) || !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "since that undo") {
		t.Fatalf("redo over a hand edit: %v, want ErrConflict, since that undo naming a.txt", err)
	}
	e.redo(controller.RewindOptions{Force: true})
	e.wantState("after forced redo", handMade)
	e.undo(controller.RewindOptions{})
	e.wantState("after undoing the forced redo", secondHand)
}

func TestRedoOfConversationRewind(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	start := e.state()
	e.rewind(1, checkpoints.ScopeConversation, controller.RewindOptions{})
	cut := e.state()
	if len(cut.sess.list) != 1 {
		t.Fatalf("after the cut: %d turns, want 1", len(cut.sess.list))
	}
	e.undo(controller.RewindOptions{})
	e.wantState("after undo", start)
	// A turn opened since the undo is work a redo would hide.
	e.turn("a new fourth turn")
	e.message("user", "new message")
	withNew := e.state()
	_, err := e.c.Redo(ctx, controller.RewindOptions{})
	if !errors.Is(err, controller.ErrConflict) || !strings.Contains(err.Error(), "a new fourth turn") || !strings.Contains(err.Error(), "since that undo") {
		t.Fatalf("redo hiding a newer turn: %v, want ErrConflict, since that undo naming it", err)
	}
	e.wantState("after the refused redo", withNew)
	e.redo(controller.RewindOptions{Force: true})
	e.wantState("after the forced redo", cut)
	// The hidden turn is reachable: undoing the redo shows it again.
	e.undo(controller.RewindOptions{})
	e.wantState("after undoing the forced redo", withNew)
	// And the next turn after a redo gets the number the cut freed.
	e.redo(controller.RewindOptions{Force: true})
	if cp := e.turn("resent"); cp.Turn != 1 {
		t.Errorf("turn after redo = %d, want 1", cp.Turn)
	}
}

func TestRedoOfSummarize(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	if _, err := e.c.Summarize(ctx, 1, false, "SUMMARY"); err != nil {
		t.Fatal(err)
	}
	summarized := e.state()
	e.undo(controller.RewindOptions{})
	e.redo(controller.RewindOptions{})
	e.wantState("after redo of summarize", summarized)
	e.undo(controller.RewindOptions{})
	e.redo(controller.RewindOptions{})
	e.wantState("after the second redo of summarize", summarized)
}

func TestUndoRedoWalks(t *testing.T) {
	e := newEnv(t)
	threeTurns(e)
	e.turn("fourth")
	s := []state{e.state()} // s[i]: after i rewinds
	e.rewind(2, checkpoints.ScopeBoth, controller.RewindOptions{})
	s = append(s, e.state())
	e.rewind(1, checkpoints.ScopeCode, controller.RewindOptions{})
	s = append(s, e.state())
	e.rewind(0, checkpoints.ScopeConversation, controller.RewindOptions{})
	s = append(s, e.state())

	// Walk back to the start, forward to the end, back and forth again.
	at := 3
	for _, step := range []int{-1, -1, -1, +1, +1, +1, -1, -1, +1, -1, +1, +1} {
		if step < 0 {
			e.undo(controller.RewindOptions{})
		} else {
			e.redo(controller.RewindOptions{})
		}
		at += step
		e.wantState("walk", s[at])
		h := e.history()
		next := map[string]int{}
		for _, x := range h {
			if x.NextUndo {
				next["undo"]++
			}
			if x.NextRedo {
				next["redo"]++
			}
		}
		if want := map[bool]int{true: 1, false: 0}; next["undo"] != want[at > 0] || next["redo"] != want[at < 3] {
			t.Fatalf("at %d: next undo/redo marks %v", at, next)
		}
	}
	if _, err := e.c.Redo(context.Background(), controller.RewindOptions{}); !errors.Is(err, controller.ErrNothingToUndo) || !strings.Contains(err.Error(), "nothing to redo") {
		t.Errorf("redo at the end: %v, want ErrNothingToUndo, nothing to redo", err)
	}
	// A new rewind ends the redo chain; the undone ops stay in the
	// history and --op re-applies one of them.
	e.undo(controller.RewindOptions{})
	e.undo(controller.RewindOptions{}) // at 1
	e.rewind(0, checkpoints.ScopeCode, controller.RewindOptions{})
	if _, err := e.c.Redo(context.Background(), controller.RewindOptions{}); !errors.Is(err, controller.ErrNothingToUndo) || !strings.Contains(err.Error(), "nothing to redo") {
		t.Errorf("redo after a new rewind: %v, want ErrNothingToUndo, nothing to redo", err)
	}
	e.undo(controller.RewindOptions{})
	e.wantState("after undoing the new rewind", s[1])
	var second int64
	for _, x := range e.history() {
		if x.Kind == "rewind" && x.Turn == 1 {
			second = x.ID
			if x.State != "undone" || !x.CanRedo {
				t.Errorf("the rewind to turn 1 in history: %+v, want undone and redoable", x)
			}
		}
	}
	e.redo(controller.RewindOptions{Op: second})
	e.wantState("after redo --op", s[2])
}

func TestUndoOpReversesAnOlderCodeRewind(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.write("b.txt", "b0")
	e.turn("t0")
	e.edit("a.txt", "a1")
	e.turn("t1")
	e.edit("b.txt", "b1")
	e.turn("t2")
	e.rewind(0, checkpoints.ScopeCode, controller.RewindOptions{Only: []string{"a.txt"}})
	e.rewind(1, checkpoints.ScopeCode, controller.RewindOptions{Only: []string{"b.txt"}})
	h := e.history()
	if len(h) != 2 || h[0].Turn != 1 || h[1].Turn != 0 || !h[0].NextUndo || h[1].NextUndo {
		t.Fatalf("history %+v", h)
	}
	// Undo the older one out of order: only a.txt comes back.
	e.undo(controller.RewindOptions{Op: h[1].ID})
	e.want("a.txt", "a1")
	e.want("b.txt", "b0")
	// Again: the state before it is there already, so nothing is done
	// nor recorded.
	if res, err := e.c.Undo(ctx, controller.RewindOptions{Op: h[1].ID}); err != nil || res.Changed {
		t.Errorf("undo --op of an undone op: %+v, %v; want nothing changed", res, err)
	}
	if _, err := e.c.Redo(ctx, controller.RewindOptions{Op: h[0].ID}); !errors.Is(err, controller.ErrNotInEffect) {
		t.Errorf("redo --op of an op in effect: %v, want ErrNotInEffect", err)
	}
	if _, err := e.c.Undo(ctx, controller.RewindOptions{Op: 999}); !errors.Is(err, checkpoints.ErrNotFound) {
		t.Errorf("undo --op 999: %v, want ErrNotFound", err)
	}
	h = e.history()
	if len(h) != 3 || h[0].Kind != "undo" || h[0].Undoes != h[2].ID || h[2].UndoneBy != h[0].ID || !h[2].CanRedo || h[2].CanUndo || h[2].InEffect || !h[1].InEffect {
		t.Errorf("history after undo --op: %+v", h)
	}
}

func TestHistoryEntries(t *testing.T) {
	e := newEnv(t)
	threeTurns(e)
	if h := e.history(); h == nil || len(h) != 0 {
		t.Fatalf("history of a session without ops: %#v, want empty, not nil", h)
	}
	e.rewind(1, checkpoints.ScopeBoth, controller.RewindOptions{})
	e.undo(controller.RewindOptions{})
	e.redo(controller.RewindOptions{})
	h := e.history()
	var kinds []string
	for _, x := range h {
		kinds = append(kinds, x.Kind)
		if x.Paths == nil || x.Files == nil || x.HiddenTurns == nil || x.ShownTurns == nil {
			t.Errorf("entry %d has a nil list: %+v", x.ID, x)
		}
	}
	if want := []string{"redo", "undo", "rewind"}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	redo, undo, rw := h[0], h[1], h[2]
	if !reflect.DeepEqual(rw.Paths, []string{"a.txt", "b.txt"}) || !reflect.DeepEqual(rw.HiddenTurns, []int{1, 2}) {
		t.Errorf("rewind entry %+v", rw)
	}
	if !reflect.DeepEqual(undo.ShownTurns, []int{1, 2}) || undo.UndoneBy != redo.ID || rw.UndoneBy != undo.ID {
		t.Errorf("undo entry %+v", undo)
	}
	// The rewind's effect is in effect again (by the redo); the undo's is
	// not: undo --op on the rewind and redo --op on the undo both mean
	// "undo the redo".
	if !redo.CanUndo || !redo.NextUndo || redo.CanRedo || !undo.CanRedo || undo.CanUndo || !rw.CanUndo || rw.CanRedo || undo.NextRedo {
		t.Errorf("can/next flags: redo %+v undo %+v", redo, undo)
	}
	for _, f := range rw.Files {
		if f.Path == "b.txt" && (!f.Before.Exists() || f.After.Exists() || f.Before.Mode.Perm() != 0o644 || f.Before.Content == nil) {
			t.Errorf("b.txt in the rewind: %+v, want present before, absent after", f)
		}
	}
}

// forgetConvRecords makes the session's ops look finished before
// migration 0005: no recorded conversation changes.
func (e *env) forgetConvRecords() {
	e.t.Helper()
	e.c.Close()
	e.c = nil
	db, err := sql.Open("sqlite", "file:"+filepath.Join(checkpoints.SessionDir(e.store, e.session()), checkpoints.FileName))
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM op_conv; UPDATE ops SET conv_recorded = 0`); err != nil {
		e.t.Fatal(err)
	}
	e.reopen()
}

func TestOpsFromBeforeTheConversationRecord(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	start := e.state()
	e.rewind(2, checkpoints.ScopeConversation, controller.RewindOptions{})
	mid := e.state()
	e.rewind(1, checkpoints.ScopeBoth, controller.RewindOptions{})
	e.forgetConvRecords()

	// Undoing the newest old rewind works as it always did; an older one
	// out of order would need the record, and is refused.
	h := e.history()
	if !h[0].CanUndo || h[1].CanUndo {
		t.Errorf("can_undo of old ops: newest %v, older %v; want true, false", h[0].CanUndo, h[1].CanUndo)
	}
	if _, err := e.c.Undo(ctx, controller.RewindOptions{Op: h[1].ID}); !errors.Is(err, controller.ErrNotInEffect) || !strings.Contains(err.Error(), "cannot be reversed exactly") {
		t.Fatalf("undo --op of an older unrecorded conversation rewind: %v, want ErrNotInEffect, cannot be reversed exactly", err)
	}
	e.undo(controller.RewindOptions{})
	e.wantState("after undo of the old rewind", mid)
	e.undo(controller.RewindOptions{})
	e.wantState("after undo of the older rewind", start)
	// Those undos are recorded: redo is exact.
	e.redo(controller.RewindOptions{})
	e.wantState("after redo", mid)

	// An undo finished before the record cannot be redone exactly.
	e.undo(controller.RewindOptions{})
	e.forgetConvRecords()
	if _, err := e.c.Redo(ctx, controller.RewindOptions{}); !errors.Is(err, controller.ErrNotInEffect) || !strings.Contains(err.Error(), "cannot be reversed exactly") {
		t.Fatalf("redo of an unrecorded undo: %v, want ErrNotInEffect, cannot be reversed exactly", err)
	}
	e.wantState("after the refused redo", start)
	for _, x := range e.history() {
		if x.CanRedo {
			t.Errorf("entry %d (%s) claims it can be redone", x.ID, x.Kind)
		}
	}
	// The state stays reachable by rewinding again.
	e.rewind(2, checkpoints.ScopeConversation, controller.RewindOptions{})
	e.wantState("after rewinding again", mid)
}

func TestForcedRedoOutOfOrderInTheConversation(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	e.rewind(1, checkpoints.ScopeConversation, controller.RewindOptions{})
	e.turn("1b")
	if _, err := e.c.Undo(ctx, controller.RewindOptions{}); !errors.Is(err, controller.ErrConflict) || !strings.Contains(err.Error(), "since that rewind") {
		t.Fatalf("undo hiding turn 1b: %v, want ErrConflict, since that rewind", err)
	}
	e.undo(controller.RewindOptions{Force: true}) // hides 1b, shows 1 and 2
	first := e.history()[1].ID                    // the first rewind
	e.rewind(1, checkpoints.ScopeConversation, controller.RewindOptions{})
	e.turn("1c")
	prompts := func() []string {
		var out []string
		for _, cp := range e.state().sess.list {
			out = append(out, cp.Prompt)
		}
		return out
	}
	before := prompts()
	// Re-applying the first rewind now would hide 1c, opened since.
	_, err := e.c.Redo(ctx, controller.RewindOptions{Op: first})
	if !errors.Is(err, controller.ErrConflict) || !strings.Contains(err.Error(), "1c") || !strings.Contains(err.Error(), "since that undo") {
		t.Fatalf("redo --op over a newer turn: %v, want ErrConflict, since that undo naming 1c", err)
	}
	if got := prompts(); !reflect.DeepEqual(got, before) {
		t.Fatalf("refused redo changed turns: %v, want %v", got, before)
	}
	e.redo(controller.RewindOptions{Op: first, Force: true})
	if got, want := prompts(), []string{"first", "1b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the forced redo: turns %v, want %v", got, want)
	}
	// And undoing that redo brings back 1c, hidden by it.
	e.undo(controller.RewindOptions{})
	if got := prompts(); !reflect.DeepEqual(got, before) {
		t.Errorf("after undoing the forced redo: %v, want %v", got, before)
	}
}

func TestRevertInHistoryUndoAndRedo(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.write("b.txt", "b0")
	e.turn("t0")
	e.edit("a.txt", "a1")
	e.turn("t1")
	e.edit("b.txt", "b1")
	e.turn("t2")
	before := e.state()
	if _, err := e.c.Rewind(context.Background(), controller.Target{Turn: 0}, controller.ScopeCode, controller.RewindOptions{Revert: true}); err != nil {
		t.Fatal(err)
	}
	reverted := e.state()
	e.want("a.txt", "a0")
	e.want("b.txt", "b1")
	e.undo(controller.RewindOptions{})
	e.wantState("after undo of the revert", before)
	e.redo(controller.RewindOptions{})
	e.wantState("after redo of the revert", reverted)
	h := e.history()
	if len(h) != 3 || h[2].Kind != "revert" || h[2].Turn != 0 || !reflect.DeepEqual(h[2].Paths, []string{"a.txt"}) {
		t.Errorf("history %+v, want the revert of turn 0 of a.txt last", h)
	}
}

// TestEveryOpBeforeStateIsReachable: a forced rewind over a hand edit, its
// undo, another hand edit and a forced redo over it. Each hand edit was
// recorded as some op's before state, and each is restored by a command.
func TestEveryOpBeforeStateIsReachable(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "v0")
	e.turn("p0")
	e.edit("a.txt", "v1")
	e.turn("p1")
	e.write("a.txt", "first hand edit")
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); !errors.Is(err, controller.ErrConflict) {
		t.Fatalf("rewind over a hand edit: %v, want ErrConflict", err)
	}
	e.rewind(0, checkpoints.ScopeCode, controller.RewindOptions{Force: true})
	rw := e.history()[0].ID
	e.undo(controller.RewindOptions{})
	e.want("a.txt", "first hand edit")
	e.write("a.txt", "second hand edit")
	e.redo(controller.RewindOptions{Force: true})
	e.want("a.txt", "v0")

	// The second hand edit: the state before the redo, plain undo.
	e.undo(controller.RewindOptions{})
	e.want("a.txt", "second hand edit")
	e.redo(controller.RewindOptions{})
	e.want("a.txt", "v0")
	// The first: the state before the rewind, whatever happened since.
	e.undo(controller.RewindOptions{Op: rw})
	e.want("a.txt", "first hand edit")
	// And what the rewind wrote is a turn's start: rewind reaches it. The
	// undo put back what ckpt knew before the rewind, so the first hand
	// edit is again a change since the agent: refused, then forced.
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); !errors.Is(err, controller.ErrConflict) {
		t.Fatalf("rewind over the restored hand edit: %v, want ErrConflict", err)
	}
	e.rewind(0, checkpoints.ScopeCode, controller.RewindOptions{Force: true})
	e.want("a.txt", "v0")
	for _, x := range e.history() {
		if x.State == "planned" {
			t.Errorf("op %d left planned", x.ID)
		}
	}
}
