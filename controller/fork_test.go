package controller_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// session is everything a user sees of a session's index.
type session struct {
	list []checkpoints.Checkpoint
	log  []checkpoints.Message
}

func snapshot(t testing.TB, c *controller.Controller) session {
	t.Helper()
	ctx := context.Background()
	list, err := controller.IndexOf(c).Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	log, err := c.Conversation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return session{list, log}
}

func (e *env) message(role, text string) {
	e.t.Helper()
	if _, err := e.c.AppendMessage(context.Background(), role, text); err != nil {
		e.t.Fatal(err)
	}
}

// threeTurns: a.txt goes 0 → 1 → 2 → 3 over turns 0..2, b.txt is created
// in turn 1; each turn has an assistant message.
func threeTurns(e *env) {
	e.t.Helper()
	e.write("a.txt", "a0")
	for i, p := range []string{"first", "second", "third"} {
		e.turn(p)
		e.edit("a.txt", "a"+string(rune('1'+i)))
		if i == 1 {
			e.edit("b.txt", "b")
		}
		e.message("assistant", "did "+p)
	}
}

func blobCount(t testing.TB, c *controller.Controller) int64 {
	t.Helper()
	n, _, err := controller.BlobsOf(c).Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) open(session string) *controller.Controller {
	e.t.Helper()
	c, err := controller.Open(context.Background(), controller.Options{Workspace: e.ws, Store: e.store, Session: session})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

func TestForkLeavesOriginalAndRewindsOnItsOwn(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	before := snapshot(t, e.c)
	blobs := blobCount(t, e.c)

	fr, err := e.c.Fork(ctx, 2, controller.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := fr.Session
	if id != e.session()+"-fork-1" {
		t.Errorf("fork id = %q, want %s-fork-1", id, e.session())
	}
	if got := blobCount(t, e.c); got != blobs {
		t.Errorf("blobs after fork = %d, want %d (no copies)", got, blobs)
	}
	if got := snapshot(t, e.c); !reflect.DeepEqual(got, before) {
		t.Errorf("original changed by fork:\ngot  %+v\nwant %+v", got, before)
	}
	e.want("a.txt", "a3") // no --restore: files untouched

	f := e.open(id)
	fs := snapshot(t, f)
	if !reflect.DeepEqual(fs.list, before.list[:2]) {
		t.Errorf("fork checkpoints:\ngot  %+v\nwant %+v", fs.list, before.list[:2])
	}
	if !reflect.DeepEqual(fs.log, before.log[:4]) {
		t.Errorf("fork conversation:\ngot  %+v\nwant %+v", fs.log, before.log[:4])
	}

	// The fork rewinds and undoes on its own; the original keeps its
	// history and has nothing to undo.
	res, err := f.Rewind(ctx, controller.Target{Turn: 1}, checkpoints.ScopeCode, controller.RewindOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed {
		t.Fatalf("fork rewind changed nothing: %+v", res)
	}
	e.want("a.txt", "a1")
	e.want("b.txt", "<absent>")
	if _, err := f.Undo(ctx, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.txt", "a3")
	e.want("b.txt", "b")
	if _, err := e.c.Undo(ctx, controller.RewindOptions{}); !errors.Is(err, checkpoints.ErrNothingToUndo) {
		t.Errorf("undo in original: got %v, want ErrNothingToUndo", err)
	}
	if got := snapshot(t, e.c); !reflect.DeepEqual(got, before) {
		t.Errorf("original changed by the fork's rewind:\ngot  %+v\nwant %+v", got, before)
	}

	// A new turn in the fork takes number 2 and leaves the original alone.
	cp, err := f.BeginTurn(ctx, "third, differently", controller.TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Turn != 2 {
		t.Errorf("fork's next turn = %d, want 2", cp.Turn)
	}
	if got := snapshot(t, e.c); !reflect.DeepEqual(got, before) {
		t.Errorf("original changed by a turn in the fork")
	}
	if res, err := e.c.Fork(ctx, 1, controller.ForkOptions{}); err != nil || res.Session != e.session()+"-fork-2" {
		t.Errorf("second fork = %q, %v; want default-fork-2", res.Session, err)
	}
}

func TestForkRestoreIsUndoableInTheFork(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	before := snapshot(t, e.c)
	res, err := e.c.Fork(ctx, 1, controller.ForkOptions{To: "other", Restore: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Session != "other" || res.Prompt != "second" {
		t.Errorf("fork = %+v, want session other, prompt second", res)
	}
	e.want("a.txt", "a1")
	e.want("b.txt", "<absent>")
	if got := snapshot(t, e.c); !reflect.DeepEqual(got, before) {
		t.Errorf("original changed by fork --restore")
	}
	f := e.open("other")
	if got := snapshot(t, f); !reflect.DeepEqual(got.list, before.list[:1]) {
		t.Errorf("fork checkpoints = %+v, want turn 0 only", got.list)
	}
	if _, err := f.Undo(ctx, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.txt", "a3")
	e.want("b.txt", "b")
}

func TestForkRefuses(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	if _, err := e.c.Fork(ctx, 7, controller.ForkOptions{To: "x", Restore: false}); !errors.Is(err, controller.ErrNoTurn) {
		t.Errorf("fork of a missing turn: got %v, want ErrNoTurn", err)
	}
	if _, err := os.Stat(checkpoints.SessionDir(e.store, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused fork left a session directory: %v", err)
	}
	if _, err := e.c.Fork(ctx, 1, controller.ForkOptions{To: e.session(), Restore: false}); !errors.Is(err, controller.ErrSessionExists) {
		t.Errorf("fork onto an existing session: got %v, want ErrSessionExists", err)
	}
	if _, err := e.c.Fork(ctx, 1, controller.ForkOptions{To: "../x", Restore: false}); !errors.Is(err, checkpoints.ErrBadSession) {
		t.Errorf("fork to a bad id: got %v, want ErrBadSession", err)
	}
	// A restore that conflicts removes the fork again.
	e.turn("fourth") // records where the agent left a.txt
	e.write("a.txt", "by hand")
	if _, err := e.c.Fork(ctx, 1, controller.ForkOptions{To: "y", Restore: true}); !errors.Is(err, controller.ErrConflict) {
		t.Errorf("conflicting restore: got %v, want ErrConflict", err)
	}
	if _, err := os.Stat(checkpoints.SessionDir(e.store, "y")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed fork left a session directory: %v", err)
	}
	e.want("a.txt", "by hand")
}

func TestSummarizeIsUndoneExactly(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  direction
		turn int
		want []string // the conversation's texts after summarizing
	}{
		{"from 1", sumFrom, 1, []string{"first", "did first", "SUMMARY"}},
		{"from 0", sumFrom, 0, []string{"SUMMARY"}},
		{"up to 2", sumUpTo, 2, []string{"SUMMARY", "third", "did third"}},
		{"up to 1", sumUpTo, 1, []string{"SUMMARY", "second", "did second", "third", "did third"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			threeTurns(e)
			before := snapshot(t, e.c)
			res, err := e.c.Summarize(ctx, tc.turn, bool(tc.dir), "SUMMARY")
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed || res.Scope != checkpoints.ScopeConversation {
				t.Errorf("result = %+v", res)
			}
			after := snapshot(t, e.c)
			var texts []string
			for _, m := range after.log {
				texts = append(texts, m.Text)
				if m.Text == "SUMMARY" && m.Role != "system" {
					t.Errorf("summary role = %q, want system", m.Role)
				}
			}
			if !reflect.DeepEqual(texts, tc.want) {
				t.Errorf("conversation = %q, want %q", texts, tc.want)
			}
			if !reflect.DeepEqual(after.list, before.list) {
				t.Errorf("summarize changed the checkpoints")
			}
			e.want("a.txt", "a3")
			if _, err := e.c.Undo(ctx, controller.RewindOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := snapshot(t, e.c); !reflect.DeepEqual(got, before) {
				t.Errorf("after undo:\ngot  %+v\nwant %+v", got, before)
			}
			// Undo and the summary's messages both stay on the stack:
			// nothing more to undo.
			if _, err := e.c.Undo(ctx, controller.RewindOptions{}); !errors.Is(err, checkpoints.ErrNothingToUndo) {
				t.Errorf("second undo: got %v, want ErrNothingToUndo", err)
			}
		})
	}
}

func TestSummarizeStacksWithRewinds(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	before := snapshot(t, e.c)
	if _, err := e.c.Summarize(ctx, 1, true, "S1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 2}, checkpoints.ScopeBoth, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Summarize(ctx, 0, false, "S2"); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, e.c).log; len(got) != 1 || got[0].Text != "S2" {
		t.Errorf("conversation = %+v, want S2 only", got)
	}
	// A turn opened after a summarize does not block its undo.
	e.turn("later")
	for i := 0; i < 3; i++ {
		if _, err := e.c.Undo(ctx, controller.RewindOptions{Force: i == 1}); err != nil {
			t.Fatalf("undo %d: %v", i, err)
		}
		if i == 1 {
			e.want("a.txt", "a3")
		}
	}
	if got := snapshot(t, e.c); !reflect.DeepEqual(got.log, before.log) {
		t.Errorf("after three undos:\ngot  %+v\nwant %+v", got.log, before.log)
	}
}

func TestSummarizeRefuses(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	before := snapshot(t, e.c)
	for _, tc := range []struct {
		turn int
		dir  direction
		text string
		want error
	}{
		{3, sumFrom, "s", controller.ErrNoTurn},
		{0, sumUpTo, "s", controller.ErrNoTurn},
		{1, sumFrom, " ", nil},
	} {
		_, err := e.c.Summarize(ctx, tc.turn, bool(tc.dir), tc.text)
		if tc.want == nil && (err == nil || !strings.Contains(err.Error(), "summary text is empty")) || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("summarize %d %s %q: got %v, want %v", tc.turn, tc.dir, tc.text, err, tc.want)
		}
	}
	if got := snapshot(t, e.c); !reflect.DeepEqual(got, before) {
		t.Errorf("a refused summarize changed the session")
	}
}

// direction is which part of the conversation a test summarizes
// (Summarize's upTo), named as the CLI and the HTTP API name it.
type direction bool

const (
	sumFrom direction = false
	sumUpTo direction = true
)

func (d direction) String() string {
	if d {
		return "up_to"
	}
	return "from"
}
