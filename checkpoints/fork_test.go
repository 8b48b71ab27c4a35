package checkpoints_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

func TestCopyToCopiesEverythingAndRefusesExisting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	t0, err := x.BeginTurn(ctx, "first", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.AddSnap(ctx, t0.ID, checkpoints.FileSnap{Path: "a.txt", Content: id("A"), Mode: 0o644, Size: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.AppendMessage(ctx, "assistant", "done"); err != nil {
		t.Fatal(err)
	}
	if err := x.SetMeta(ctx, "workspace", "/w"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "fork")
	if err := x.CopyTo(ctx, dir); err != nil {
		t.Fatal(err)
	}
	y := open(t, dir)
	for _, f := range []func(*checkpoints.Index) (any, error){
		func(i *checkpoints.Index) (any, error) { return i.Checkpoints(ctx) },
		func(i *checkpoints.Index) (any, error) { return i.Conversation(ctx) },
		func(i *checkpoints.Index) (any, error) { return i.Meta(ctx, "workspace") },
	} {
		got, err := f(y)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := f(x)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("copy: got %+v, want %+v", got, want)
		}
	}
	if err := x.CopyTo(ctx, dir); !errors.Is(err, checkpoints.ErrExists) {
		t.Errorf("CopyTo onto an index: got %v, want ErrExists", err)
	}
}

func TestSummarizeOpAndUndo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	for _, p := range []string{"p0", "p1", "p2"} {
		if _, err := x.BeginTurn(ctx, p, nil, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := x.AppendMessage(ctx, "assistant", "a"+p[1:]); err != nil {
			t.Fatal(err)
		}
	}
	before, err := x.Conversation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	texts := func() []string {
		t.Helper()
		ms, err := x.Conversation(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Text)
		}
		return out
	}
	op, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Turn: 2, Scope: checkpoints.ScopeConversation,
		Prompt: "S", Action: checkpoints.ActionSummarizeUpTo})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.FinishOp(ctx, op.ID, checkpoints.Done{}); err != nil {
		t.Fatal(err)
	}
	if got, want := texts(), []string{"S", "p2", "a2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after summarize: got %q, want %q", got, want)
	}
	if cps, _ := x.Checkpoints(ctx); len(cps) != 3 {
		t.Errorf("summarize hid turns: %d left, want 3", len(cps))
	}
	rw, err := x.LastRewind(ctx)
	if err != nil || rw.ID != op.ID || rw.Action != checkpoints.ActionSummarizeUpTo || !rw.Summarizes() {
		t.Fatalf("LastRewind = %+v, %v; want the summarize", rw, err)
	}
	undo, err := x.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpUndo, Turn: rw.Turn, Scope: rw.Scope, Undoes: rw.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.FinishOp(ctx, undo.ID, checkpoints.Done{}); err != nil {
		t.Fatal(err)
	}
	after, err := x.Conversation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) {
		t.Errorf("after undo:\ngot  %+v\nwant %+v", after, before)
	}
}
