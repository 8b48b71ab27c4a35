package controller_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

type env struct {
	t     testing.TB
	ws    string
	store string
	c     *controller.Controller
	// recovered is what the last reopen's Open said it recovered.
	recovered string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, ws: t.TempDir(), store: t.TempDir()}
	e.reopen()
	return e
}

func (e *env) reopen() {
	e.t.Helper()
	if e.c != nil {
		e.c.Close()
	}
	e.recovered = ""
	c, err := controller.Open(context.Background(), controller.Options{Workspace: e.ws, Store: e.store, Recovered: func(what string) { e.recovered = what }})
	if err != nil {
		e.t.Fatal(err)
	}
	e.c = c
	e.t.Cleanup(func() { c.Close() })
}

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// edit is an agent's edit tool: capture, then write.
func (e *env) edit(rel, content string) {
	e.t.Helper()
	if _, errs := e.c.Capture(context.Background(), controller.CaptureOptions{Paths: []string{rel}}); errs[0] != nil {
		e.t.Fatal(errs[0])
	}
	e.write(rel, content)
}

func (e *env) turn(prompt string) checkpoints.Checkpoint {
	e.t.Helper()
	cp, err := e.c.BeginTurn(context.Background(), prompt, controller.TurnOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return cp.Checkpoint.Checkpoint
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.ws, rel))
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) want(rel, content string) {
	e.t.Helper()
	if got := e.read(rel); got != content {
		e.t.Errorf("%s = %q, want %q", rel, got, content)
	}
}

func TestConversationOnlyRewindKeepsHiddenTurnHistory(t *testing.T) {
	// Turn 1's edit survives a conversation-only rewind; a later code
	// rewind to turn 0 must still undo it although turn 1 is hidden.
	ctx := context.Background()
	e := newEnv(t)
	e.write("q.txt", "X")
	e.turn("t0")
	e.edit("p.txt", "B")
	e.turn("t1")
	e.edit("q.txt", "Y")
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 1}, checkpoints.ScopeConversation, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("q.txt", "Y")
	e.turn("t1 again")
	e.edit("p.txt", "C")
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("p.txt", "<absent>")
	e.want("q.txt", "X")
}

func TestRewindAfterRewindUsesRewindAsHistory(t *testing.T) {
	// A code rewind is itself an event: rewinding to a later turn after it
	// restores the state that turn really began with.
	ctx := context.Background()
	e := newEnv(t)
	e.write("p.txt", "A")
	e.turn("t0")
	e.edit("p.txt", "B")
	e.turn("t1") // p.txt is B when t1 begins; t1 does not touch it
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("p.txt", "A")
	res, err := e.c.Rewind(ctx, controller.Target{Turn: 1}, checkpoints.ScopeCode, controller.RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.want("p.txt", "B")
	if len(res.Restored) != 1 {
		t.Errorf("restored %v, want [p.txt]", res.Restored)
	}
}

func TestCrashAfterPlanIsFinishedOnOpen(t *testing.T) {
	// Simulate a crash after the plan was recorded and one file was moved
	// into place: the next Open completes the rewind.
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.write("b.txt", "b0")
	e.turn("t0")
	e.edit("a.txt", "a1")
	e.edit("b.txt", "b1")
	e.edit("c.txt", "c1")
	targets, err := controller.IndexOf(e.c).Earliest(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var files []checkpoints.OpFile
	for _, p := range []string{"a.txt", "b.txt", "c.txt"} {
		cur, err := capture.New(controller.WorkspaceOf(e.c), controller.IndexOf(e.c), controller.BlobsOf(e.c)).State(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, checkpoints.OpFile{Path: p, Before: cur, After: targets[p]})
	}
	op, err := controller.IndexOf(e.c).PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Turn: 0, Scope: checkpoints.ScopeCode, Files: files})
	if err != nil {
		t.Fatal(err)
	}
	_ = op
	e.write("a.txt", "a0") // the crash came after a.txt was renamed into place
	e.reopen()
	e.want("a.txt", "a0")
	e.want("b.txt", "b0")
	e.want("c.txt", "<absent>")
	if _, err := controller.IndexOf(e.c).PendingOp(ctx); !errors.Is(err, checkpoints.ErrNotFound) {
		t.Fatalf("op still pending after reopen: %v", err)
	}
	// And the finished rewind undoes like any other.
	if _, err := e.c.Undo(ctx, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.txt", "a1")
	e.want("b.txt", "b1")
	e.want("c.txt", "c1")
}

func TestCorruptBlobAbortsBeforeTouchingFiles(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.write("b.txt", "b0")
	e.turn("t0")
	e.edit("a.txt", "a1")
	e.edit("b.txt", "b1")
	cps, _ := controller.IndexOf(e.c).Checkpoints(ctx)
	// Delete b's original blob from the store behind ckpt's back.
	for _, f := range cps[0].Files {
		if f.Path == "b.txt" {
			if err := controller.BlobsOf(e.c).Delete(ctx, *f.Content); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("rewind with a missing blob: %v, want an error naming it", err)
	}
	e.want("a.txt", "a1")
	e.want("b.txt", "b1")
	if _, err := e.c.Undo(ctx, controller.RewindOptions{}); !errors.Is(err, checkpoints.ErrNothingToUndo) {
		t.Fatalf("a failed rewind left something to undo: %v", err)
	}
}

func TestWorkspaceMismatchAndBadSession(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	_, err := controller.Open(ctx, controller.Options{Workspace: t.TempDir(), Store: e.store, Session: e.session()})
	if !errors.Is(err, controller.ErrWorkspaceMismatch) {
		t.Fatalf("other workspace, same session: %v", err)
	}
	// With no session named, another workspace gets its own default.
	other, err := controller.Open(ctx, controller.Options{Workspace: t.TempDir(), Store: e.store})
	if err != nil {
		t.Fatalf("other workspace, its default session: %v", err)
	}
	if other.Session() == e.session() {
		t.Errorf("two workspaces share the default session %s", other.Session())
	}
	other.Close()
	for _, id := range []string{"../x", "a/b", ".hidden", "", strings.Repeat("x", 200)} {
		if id == "" {
			continue // empty means the default session
		}
		if _, err := controller.Open(ctx, controller.Options{Workspace: e.ws, Store: e.store, Session: id}); !errors.Is(err, checkpoints.ErrBadSession) {
			t.Errorf("session %q: %v, want ErrBadSession", id, err)
		}
	}
}

func TestDiffShowsCurrentToRewound(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "old line\n")
	e.turn("t0")
	e.edit("a.txt", "new line\n")
	diffs, _, err := e.c.Diff(ctx, controller.Target{Turn: 0})
	if err != nil || len(diffs) != 1 {
		t.Fatalf("Diff = %v, %v", diffs, err)
	}
	if !strings.Contains(diffs[0].Unified, "-new line") || !strings.Contains(diffs[0].Unified, "+old line") {
		t.Errorf("diff:\n%s\nwant -new line / +old line", diffs[0].Unified)
	}
	if !bytes.Equal([]byte(e.read("a.txt")), []byte("new line\n")) {
		t.Errorf("Diff changed the file")
	}
}

func TestUndoRefusesToOverwriteLaterWork(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "v0")
	e.turn("p0")
	e.edit("a.txt", "v1")
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.turn("p1")
	e.edit("a.txt", "work done after the rewind")
	_, err := e.c.Undo(ctx, controller.RewindOptions{})
	if !errors.Is(err, controller.ErrConflict) || !strings.Contains(err.Error(), "a.txt") {
		t.Fatalf("undo over later work: %v, want ErrConflict naming a.txt", err)
	}
	e.want("a.txt", "work done after the rewind")
	if _, err := e.c.Undo(ctx, controller.RewindOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	e.want("a.txt", "v1")

	// A conversation rewind followed by a new turn: undo would hide it.
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 1}, checkpoints.ScopeConversation, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.turn("p1, resent")
	if _, err := e.c.Undo(ctx, controller.RewindOptions{}); !errors.Is(err, controller.ErrConflict) || !strings.Contains(err.Error(), "p1, resent") {
		t.Fatalf("undo hiding a newer turn: %v, want ErrConflict naming the turn", err)
	}
}

func TestListKindsSurviveConversationRewind(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "v0")
	e.turn("p0")
	e.edit("a.txt", "v1")
	e.turn("p1")
	if _, errs := e.c.Capture(ctx, controller.CaptureOptions{Paths: []string{"a.txt"}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	os.Remove(filepath.Join(e.ws, "a.txt"))
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 1}, checkpoints.ScopeConversation, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.turn("p1 again") // must not rewrite how turn 0 ended
	cps, _, err := e.c.Checkpoints(ctx, controller.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cps[0].Changes[0].Kind; got != controller.Modified {
		t.Errorf("turn 0 a.txt kind = %s, want modified (it existed when turn 0 ended)", got)
	}
}

// session is the id of the env's session: its workspace's default.
func (e *env) session() string {
	e.t.Helper()
	root, err := filepath.EvalSymlinks(e.ws)
	if err != nil {
		e.t.Fatal(err)
	}
	return controller.WorkspaceSession(root)
}

// TestOpenTurnAndRelabel: Turn(-1) is the open turn (ErrNoOpenTurn before
// the first); BeginTurn with Relabel opens no turn and renames the open
// one, turn and user message, only while its prompt is still the label.
func TestOpenTurnAndRelabel(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := e.c.Turn(ctx, -1); !errors.Is(err, controller.ErrNoOpenTurn) {
		t.Fatalf("open turn of a new session: %v, want ErrNoOpenTurn", err)
	}
	e.turn("first")
	e.turn("(no prompt yet)")
	if _, err := e.c.BeginTurn(ctx, "ignored", controller.TurnOptions{Relabel: "other label"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.BeginTurn(ctx, "fix the tests", controller.TurnOptions{Relabel: "(no prompt yet)"}); err != nil {
		t.Fatal(err)
	}
	open, err := e.c.Turn(ctx, -1)
	if err != nil || open.Turn != 1 || open.Prompt != "fix the tests" {
		t.Fatalf("open turn after relabel: %+v, %v; want turn 1 \"fix the tests\"", open.Checkpoint, err)
	}
	msgs, err := e.c.Conversation(ctx)
	if err != nil || len(msgs) != 2 || msgs[1].Text != "fix the tests" {
		t.Fatalf("conversation after relabel: %+v, %v", msgs, err)
	}
}

// TestReplaced: a Controller knows when the session's index file is no
// longer the one it opened (another process removed the session and
// recorded a new one under its id), and not before.
func TestReplaced(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.turn("t0")
	if e.c.Replaced() {
		t.Fatal("a fresh Controller says its index was replaced")
	}
	if _, _, err := controller.OpenStore(e.store).RemoveSession(ctx, e.session(), true, false); err != nil {
		t.Fatal(err)
	}
	if !e.c.Replaced() {
		t.Error("the index was removed; Replaced says it is still there")
	}
	again, err := controller.Open(ctx, controller.Options{Workspace: e.ws, Store: e.store, Session: e.session()})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !e.c.Replaced() || again.Replaced() {
		t.Errorf("after a new index under the id: old Controller replaced=%v, new one %v; want true, false", e.c.Replaced(), again.Replaced())
	}
}
