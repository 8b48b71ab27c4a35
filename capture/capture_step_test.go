package capture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

// A capture with StepRef.Open opens the tool call's step and records its
// paths into it; the same key lands in the same step; a tool call whose
// paths are recorded already, or cannot be read, is still a step.
func TestCaptureOpensStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "a.txt", "one", 0o644)
	f.write(t, "b.txt", "two", 0o644)
	call := func(key string, paths ...string) ([]Result, []error) {
		return f.c.CaptureAllIn(ctx, checkpoints.StepRef{Open: true, Key: key, Tool: "Edit"}, paths)
	}
	res, errs := call("k1", "a.txt", "b.txt")
	for i, err := range errs {
		if err != nil || !res[i].Recorded || res[i].Step != 1 || res[i].Snap.Step != 1 {
			t.Fatalf("k1 %s: %+v, %v; want recorded in step 1", res[i].Path, res[i], err)
		}
	}
	f.write(t, "a.txt", "one, edited", 0o644)
	if res, errs = call("k1", "a.txt"); errs[0] != nil || res[0].Recorded || res[0].Step != 1 {
		t.Fatalf("k1 again: %+v, %v; want step 1, already recorded", res[0], errs[0])
	}
	if res, errs = call("k2", "a.txt"); errs[0] != nil || !res[0].Recorded || res[0].Step != 2 {
		t.Fatalf("k2: %+v, %v; want recorded in step 2", res[0], errs[0])
	}
	// k3 touches a.txt first in its own step too; k4 reads nothing and
	// is a step all the same.
	if _, errs = call("k3", "a.txt"); errs[0] != nil {
		t.Fatal(errs[0])
	}
	f.write(t, "c.txt", "three", 0o644)
	f.c.open = func(_ *opener, rel string) (*os.File, fs.FileInfo, error) {
		return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: fs.ErrPermission}
	}
	if _, errs = call("k4", "c.txt"); !errors.Is(errs[0], fs.ErrPermission) {
		t.Fatalf("k4: %v, want the read's error", errs[0])
	}
	steps, err := f.idx.Steps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		key   string
		files int
	}{{"k1", 2}, {"k2", 1}, {"k3", 1}, {"k4", 0}}
	if len(steps) != len(want) {
		t.Fatalf("%d steps %+v, want %d", len(steps), steps, len(want))
	}
	for i, w := range want {
		if steps[i].Key != w.key || steps[i].Number != i+1 || steps[i].Tool != "Edit" {
			t.Errorf("step %d: %+v, want key %s", i+1, steps[i], w.key)
		}
	}
	for i, w := range want {
		if len(steps[i].Files) != w.files {
			t.Errorf("step %d has %d files, want %d", i+1, len(steps[i].Files), w.files)
		}
	}
}

// A turn that opens between a capture's lookup and its index transaction
// (a prompt while the tool call's file is read): the step and its captures
// go into the turn open now, together, never the step into one turn and
// the captures into another.
func TestCaptureOpensStepTurnOpenedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "a.txt", "one", 0o644)
	var next checkpoints.Checkpoint
	f.c.open = func(o *opener, rel string) (*os.File, fs.FileInfo, error) {
		if next.ID == 0 {
			var err error
			if next, err = f.idx.BeginTurn(ctx, "next prompt", nil, nil); err != nil {
				t.Error(err)
			}
		}
		return o.open(rel)
	}
	res, errs := f.c.CaptureAllIn(ctx, checkpoints.StepRef{Open: true, Key: "k1"}, []string{"a.txt"})
	if errs[0] != nil || !res[0].Recorded || res[0].Turn != next.Turn || res[0].Step != 1 {
		t.Fatalf("%+v, %v; want recorded in step 1 of turn %d", res[0], errs[0], next.Turn)
	}
	if n := len(f.snaps(t)); n != 0 {
		t.Errorf("the first turn has %d snaps, want none", n)
	}
	steps, err := f.idx.Steps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].Turn != next.Turn || len(steps[0].Files) != 1 || steps[0].Files[0].Path != "a.txt" {
		t.Errorf("steps %+v; want turn %d's step 1 with a.txt", steps, next.Turn)
	}
}

// Another hook of the same tool call opens its step between a capture's
// lookup and its transaction: the capture lands in that step, and the
// call has one step, not two with its key.
func TestCaptureOpensStepOpenedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "a.txt", "one", 0o644)
	opened := false
	f.c.open = func(o *opener, rel string) (*os.File, fs.FileInfo, error) {
		if !opened {
			opened = true
			if _, _, err := f.idx.BeginStep(ctx, "k1", "Edit"); err != nil {
				t.Error(err)
			}
		}
		return o.open(rel)
	}
	res, errs := f.c.CaptureAllIn(ctx, checkpoints.StepRef{Open: true, Key: "k1", Tool: "Edit"}, []string{"a.txt"})
	if errs[0] != nil || !res[0].Recorded || res[0].Step != 1 {
		t.Fatalf("%+v, %v; want recorded in step 1", res[0], errs[0])
	}
	steps, err := f.idx.Steps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].Key != "k1" || len(steps[0].Files) != 1 {
		t.Errorf("steps %+v; want one, k1's, with a.txt", steps)
	}
}

// Parallel tool calls, and hooks of one call, capturing at once: each call
// gets one step of its own, with its files, whichever transaction opens it.
func TestCaptureOpensStepInParallel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	const calls, hooks = 6, 2
	for i := range calls {
		f.write(t, fmt.Sprintf("f%d.txt", i), fmt.Sprint("content ", i), 0o644)
	}
	var wg sync.WaitGroup
	for i := range calls {
		for range hooks {
			wg.Go(func() {
				ref := checkpoints.StepRef{Open: true, Key: fmt.Sprint("k", i), Tool: "Write"}
				if _, errs := f.c.CaptureAllIn(ctx, ref, []string{fmt.Sprintf("f%d.txt", i)}); errs[0] != nil {
					t.Error(errs[0])
				}
			})
		}
	}
	wg.Wait()
	steps, err := f.idx.Steps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != calls {
		t.Fatalf("%d steps, want %d (one per call): %+v", len(steps), calls, steps)
	}
	seen := map[string]bool{}
	for i, st := range steps {
		if st.Number != i+1 || seen[st.Key] || len(st.Files) != 1 || st.Files[0].Path != "f"+st.Key[1:]+".txt" {
			t.Errorf("step %d: %+v; want one step per key, with its own file", i+1, st)
		}
		seen[st.Key] = true
	}
}

// Another capture commits between a capture's lookup and its transaction
// (no step opened, the clock moved): the step opened then takes a clock
// value after it, never one already taken, so the session's order of
// events (a rewind to a step goes by it) stays true.
func TestCaptureOpensStepClockMovedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "a.txt", "one", 0o644)
	f.write(t, "b.txt", "two", 0o644)
	other := false
	f.c.open = func(o *opener, rel string) (*os.File, fs.FileInfo, error) {
		if rel == "a.txt" && !other {
			other = true
			if _, err := f.c.Capture(ctx, "b.txt"); err != nil {
				t.Error(err)
			}
		}
		return o.open(rel)
	}
	if _, errs := f.c.CaptureAllIn(ctx, checkpoints.StepRef{Open: true, Key: "k1"}, []string{"a.txt"}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	db, err := sql.Open("sqlite", filepath.Join(f.idx.Dir(), checkpoints.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var step, b int64
	if err := db.QueryRowContext(ctx, `SELECT seq FROM steps WHERE key = 'k1'`).Scan(&step); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT seq FROM named_snaps WHERE path = 'b.txt'`).Scan(&b); err != nil {
		t.Fatal(err)
	}
	if step <= b {
		t.Errorf("step k1 opened at clock %d, not after b.txt's capture at %d", step, b)
	}
	var dup int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT seq FROM (SELECT seq FROM turns UNION ALL SELECT seq FROM steps
		UNION ALL SELECT seq FROM snaps UNION ALL SELECT seq FROM step_snaps) GROUP BY seq HAVING count(*) > 1)`).Scan(&dup); err != nil {
		t.Fatal(err)
	}
	if dup != 0 {
		t.Errorf("%d clock values taken twice", dup)
	}
}
