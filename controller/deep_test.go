package controller_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// deepRoot opens e's workspace as a root: a path thousands of
// directories deep is longer than PATH_MAX, so the test reaches it
// through handles, as ckpt does.
func deepRoot(t testing.TB, e *env) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(e.ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// mkDeep makes depth nested directories d/d/… below r, each from its
// parent's handle, and returns the path of a file f at the bottom.
func mkDeep(t testing.TB, r *os.Root, depth int) string {
	t.Helper()
	mkDeepIn(t, r, "d", depth)
	return strings.Repeat("d/", depth) + "f"
}

func readIn(t testing.TB, r *os.Root, rel string) string {
	t.Helper()
	b, err := r.ReadFile(rel)
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// planByHand records a code rewind to turn 0 of paths as planned and
// not done: what a crash (or a kill) right after the plan leaves.
func planByHand(t *testing.T, e *env, paths ...string) {
	t.Helper()
	ctx := context.Background()
	targets, err := controller.IndexOf(e.c).Earliest(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var files []checkpoints.OpFile
	cap := capture.New(controller.WorkspaceOf(e.c), controller.IndexOf(e.c), controller.BlobsOf(e.c))
	for _, p := range paths {
		cur, err := cap.State(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, checkpoints.OpFile{Path: p, Before: cur, After: targets[p]})
	}
	if _, err := controller.IndexOf(e.c).PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Turn: 0, Scope: checkpoints.ScopeCode, Files: files}); err != nil {
		t.Fatal(err)
	}
}

// TestDeepTreeRewind rewinds, undoes, and finishes an interrupted rewind
// of files 2,000 directories deep: a created one (its directories go
// too) and an edited one. Each walk of the path used to open every
// directory on it again for each of its directories, so this ran for
// more than ten minutes, and the recovery of an interrupted one as long.
func TestDeepTreeRewind(t *testing.T) {
	t.Parallel() // its own workspaces and stores; no process state
	ctx := context.Background()
	e := newEnv(t)
	r := deepRoot(t, e)
	deep := mkDeep(t, r, 2000)
	if err := r.WriteFile(deep, []byte("v0"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.turn("t0")
	if _, errs := e.c.Capture(ctx, controller.CaptureOptions{Paths: []string{deep}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if err := r.WriteFile(deep, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	created := strings.Repeat("n/", 2000) + "new"
	if _, errs := e.c.Capture(ctx, controller.CaptureOptions{Paths: []string{created}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	mkDeepIn(t, r, "n", 2000)
	if err := r.WriteFile(created, []byte("made"), 0o644); err != nil {
		t.Fatal(err)
	}

	res, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeCode, controller.RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) > 0 {
		t.Fatalf("skipped %v", res.Skipped)
	}
	if got := readIn(t, r, deep); got != "v0" {
		t.Errorf("deep file = %q after the rewind, want v0", got)
	}
	if _, err := r.Lstat("n"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the created file's directories are still there: %v", err)
	}
	if _, err := e.c.Undo(ctx, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, made := readIn(t, r, deep), readIn(t, r, created); got != "v1" || made != "made" {
		t.Errorf("after undo: %q, %q; want v1, made", got, made)
	}

	// A rewind interrupted right after its plan is finished by the next
	// Open, at the same depth.
	planByHand(t, e, deep, created)
	e.reopen()
	if !strings.HasPrefix(e.recovered, "finished") {
		t.Errorf("recovered: %q, want finished", e.recovered)
	}
	if got, made := readIn(t, r, deep), readIn(t, r, created); got != "v0" || made != "<absent>" {
		t.Errorf("after recovery: %q, %q; want v0, <absent>", got, made)
	}
}

// mkDeepIn is mkDeep with a directory name of its own.
func mkDeepIn(t testing.TB, r *os.Root, name string, depth int) {
	t.Helper()
	cur := r
	for range depth {
		if err := cur.Mkdir(name, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := cur.OpenRoot(name)
		if cur != r {
			cur.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		cur = next
	}
	cur.Close()
}

// TestStoppedRecoveryResumes stops (as SIGTERM does) the recovery of an
// interrupted rewind that Open runs: Open fails with the context's error
// at once, changes no file and leaves the rewind pending, and the next
// Open finishes it. It used to take the stop for a failure and roll the
// whole rewind back, ignoring the stop while it did.
func TestStoppedRecoveryResumes(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.write("b.txt", "b0")
	e.turn("t0")
	e.edit("a.txt", "a1")
	e.edit("b.txt", "b1")
	e.edit("c.txt", "c1")
	planByHand(t, e, "a.txt", "b.txt", "c.txt")
	e.write("a.txt", "a0") // the crash came after a.txt was renamed into place
	e.c.Close()
	e.c = nil

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	controller.SetRecoverHook(func(string) {
		if seen++; seen == 2 {
			cancel()
		}
	})
	recovered := ""
	c, err := controller.Open(ctx, controller.Options{Workspace: e.ws, Store: e.store, Recovered: func(what string) { recovered = what }})
	controller.SetRecoverHook(nil)
	if err == nil {
		c.Close()
		t.Fatalf("Open went on after its context was cancelled (recovered: %q)", recovered)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Open = %v, want context.Canceled", err)
	}
	for p, want := range map[string]string{"a.txt": "a0", "b.txt": "b1", "c.txt": "c1"} {
		e.want(p, want)
	}

	e.reopen()
	if !strings.HasPrefix(e.recovered, "finished") {
		t.Errorf("recovered: %q, want finished", e.recovered)
	}
	for p, want := range map[string]string{"a.txt": "a0", "b.txt": "b0", "c.txt": "<absent>"} {
		e.want(p, want)
	}
	if _, err := controller.IndexOf(e.c).PendingOp(context.Background()); !errors.Is(err, checkpoints.ErrNotFound) {
		t.Errorf("op still pending after the second Open: %v", err)
	}
}

// BenchmarkDeepRewind rewinds one file depth directories deep (an undo
// between rounds, untimed, puts the edit back). Its time grows with the
// depth, not with its square.
func BenchmarkDeepRewind(b *testing.B) {
	for _, depth := range []int{100, 400, 1600} {
		b.Run(strconv.Itoa(depth), func(b *testing.B) {
			ctx := context.Background()
			e := newEnv(b)
			r := deepRoot(b, e)
			deep := mkDeep(b, r, depth)
			if err := r.WriteFile(deep, []byte("v0"), 0o644); err != nil {
				b.Fatal(err)
			}
			e.turn("t0")
			if _, errs := e.c.Capture(ctx, controller.CaptureOptions{Paths: []string{deep}}); errs[0] != nil {
				b.Fatal(errs[0])
			}
			if err := r.WriteFile(deep, []byte("v1"), 0o644); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeCode, controller.RewindOptions{}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := e.c.Undo(ctx, controller.RewindOptions{}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
