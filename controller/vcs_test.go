package controller_test

import (
	"context"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// An index written before case variants of VCS names were refused may
// hold a path such as .Git/config: a rewind skips it with the reason and
// leaves the file alone, and restores the rest.
func TestRewindSkipsVCSCaseVariants(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write(".Git/config", "[core]\n")
	e.write("a.txt", "a1")
	cp := e.turn("t0")
	// Record .Git/config as created in t0, as an older ckpt could have.
	if _, err := controller.IndexOf(e.c).AddSnap(ctx, cp.ID, checkpoints.FileSnap{Path: ".Git/config"}); err != nil {
		t.Fatal(err)
	}
	e.edit("a.txt", "a2")
	res, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.read(".Git/config"); got != "[core]\n" {
		t.Errorf(".Git/config = %q, want it untouched", got)
	}
	if got := e.read("a.txt"); got != "a1" {
		t.Errorf("a.txt = %q, want a1", got)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Path != ".Git/config" || res.Skipped[0].Reason == "" {
		t.Errorf("skipped = %+v, want .Git/config with a reason", res.Skipped)
	}
}
