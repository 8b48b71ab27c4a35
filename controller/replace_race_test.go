package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// Issue 10, defect 9a: a file edited between a rewind's plan and its
// rename is not overwritten: it is skipped with the reason, left byte for
// byte as the editor left it, and not recorded in the rewind (so an undo
// does not touch it); the other files are restored.
func TestEditBetweenPlanAndRenameIsNotOverwritten(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(e *env)
	}{
		{"modified", func(e *env) { e.write("a.txt", "typed while the rewind ran") }},
		{"created", func(e *env) { e.write("new.txt", "typed while the rewind ran") }},
		// The files were last changed long before the rewind, so the
		// plan's stat of a.txt could vouch for it at the rename; the edit
		// keeps its size and puts its mtime back (its ctime moves).
		{"modified keeping size and mtime", func(e *env) {
			e.write("a.txt", "typed while the rewind ran")
			ageFiles(e, "a.txt")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("a.txt", "a0")
			e.write("b.txt", "b0")
			e.turn("t0")
			e.edit("a.txt", "a1")
			e.edit("b.txt", "b1")
			e.edit("new.txt", "n1")
			e.turn("t1")
			var o controller.RewindOptions
			if tc.name == "modified keeping size and mtime" {
				e.write("a.txt", strings.Repeat("x", len("typed while the rewind ran")))
				ageFiles(e, "a.txt", "b.txt", "new.txt")
				o.Force = true // a.txt changed since ckpt last saw it
			}
			raced := false
			controller.SetBeforeReplace(e.c, func(rel string) {
				if !raced && (rel == "a.txt" && tc.name != "created" || rel == "new.txt" && tc.name == "created") {
					raced = true
					tc.edit(e)
				}
			})
			res, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, o)
			if err != nil {
				t.Fatal(err)
			}
			controller.SetBeforeReplace(e.c, nil)
			edited := map[string]string{"modified": "a.txt", "created": "new.txt", "modified keeping size and mtime": "a.txt"}[tc.name]
			e.want(edited, "typed while the rewind ran")
			e.want("b.txt", "b0")
			if len(res.Skipped) != 1 || res.Skipped[0].Path != edited {
				t.Fatalf("skipped = %+v, want just %s", res.Skipped, edited)
			}
			for _, p := range append(res.Restored, res.Deleted...) {
				if p == edited {
					t.Errorf("%s reported as rewound: %+v", edited, res)
				}
			}
			if _, err := e.c.Undo(ctx, controller.RewindOptions{}); err != nil {
				t.Fatal(err)
			}
			e.want(edited, "typed while the rewind ran")
			e.want("b.txt", "b1")
		})
	}
}

// ageFiles sets the modification times of the workspace files rels to
// one moment long ago, the same every call.
func ageFiles(e *env, rels ...string) {
	e.t.Helper()
	long := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, rel := range rels {
		if err := os.Chtimes(filepath.Join(e.ws, rel), long, long); err != nil {
			e.t.Fatal(err)
		}
	}
}

// Issue 10, defect 2 at the controller: a directory the plan empties is
// removed to make way for the file the target has there, and a file in the
// way of a directory the target has is deleted first.
func TestTypeChangesAreJudgedAgainstThePlannedTree(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("config", "key=value")
	e.write("lib/one", "one")
	e.turn("t0")
	e.edit("config", "")
	os.Remove(filepath.Join(e.ws, "config"))
	e.edit("config/a", "a")
	e.edit("lib/one", "")
	os.RemoveAll(filepath.Join(e.ws, "lib"))
	e.edit("lib", "a file now")
	e.turn("t1")
	res, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 {
		t.Errorf("skipped %+v", res.Skipped)
	}
	e.want("config", "key=value")
	e.want("lib/one", "one")
	if _, err := e.c.Undo(ctx, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("config/a", "a")
	e.want("lib", "a file now")

	// A directory holding a file the rewind keeps stays, and says why.
	e.write("config/keep", "not the agent's, never captured")
	res, err = e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	e.want("config/keep", "not the agent's, never captured")
	if len(res.Skipped) != 1 || res.Skipped[0].Path != "config" {
		t.Errorf("skipped = %+v, want config", res.Skipped)
	}
}

// A crash left an op half done and a blob it needs is gone: Open rolls it
// back, and the file already renamed into place goes back too (the
// re-check before each replace accepts the op's After state there).
func TestInterruptedRewindRollsBackRenamedFiles(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.write("b.txt", "b0")
	e.turn("t0")
	e.edit("a.txt", "a1")
	e.edit("b.txt", "b1")
	targets, err := controller.IndexOf(e.c).Earliest(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var files []checkpoints.OpFile
	for _, p := range []string{"a.txt", "b.txt"} {
		cur, err := capture.New(controller.WorkspaceOf(e.c), controller.IndexOf(e.c), controller.BlobsOf(e.c)).State(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, checkpoints.OpFile{Path: p, Before: cur, After: targets[p]})
	}
	if _, err := controller.IndexOf(e.c).PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Turn: 0, Scope: checkpoints.ScopeCode, Files: files}); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "a0") // the crash came after a.txt was renamed into place
	if err := controller.BlobsOf(e.c).Delete(ctx, *targets["b.txt"].Content); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	if !strings.Contains(e.recovered, "rolled back") {
		t.Fatalf("recovered: %q, want a roll back", e.recovered)
	}
	e.want("a.txt", "a1")
	e.want("b.txt", "b1")
}
