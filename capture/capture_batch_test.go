package capture

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

// A path that cannot be read fails alone: the batch's other paths are
// recorded, the failed one records nothing (never "absent").
func TestCaptureAllUnreadablePathInBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "a.txt", "a", 0o644)
	f.write(t, "secret.txt", "s", 0o644)
	f.write(t, "c.txt", "c", 0o644)
	f.c.open = func(_ *opener, rel string) (*os.File, fs.FileInfo, error) {
		if rel == "secret.txt" {
			return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: fs.ErrPermission}
		}
		return f.ws.OpenFile(rel)
	}
	paths := []string{"a.txt", "secret.txt", "c.txt", "new.txt"}
	res, errs := f.c.CaptureAll(ctx, paths)
	for i, p := range paths {
		if p == "secret.txt" {
			if !errors.Is(errs[i], fs.ErrPermission) || res[i].Recorded {
				t.Errorf("%s: recorded %v, error %v; want not recorded, a permission error", p, res[i].Recorded, errs[i])
			}
			continue
		}
		if errs[i] != nil || !res[i].Recorded {
			t.Errorf("%s: recorded %v, error %v; want recorded", p, res[i].Recorded, errs[i])
		}
	}
	got := map[string]bool{}
	for _, s := range f.snaps(t) {
		got[s.Path] = s.Content != nil
	}
	want := map[string]bool{"a.txt": true, "c.txt": true, "new.txt": false}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("snaps (path: has content) = %v, want %v", got, want)
	}
}

// failingBatches is a store whose batches take content but fail to commit.
type failingBatches struct{ cas.Store }

var errCommit = errors.New("disk full")

func (s failingBatches) NewBatch() cas.Batch { return failingBatch{s.Store.NewBatch()} }

type failingBatch struct{ cas.Batch }

func (b failingBatch) Commit(context.Context) error { b.Abort(); return errCommit }

// When the blob commit fails, the index commit does not happen: no path of
// the call is recorded, not even one that needed no blob, and each error
// says why.
func TestCaptureAllBlobCommitFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.c.store = failingBatches{f.c.store}
	f.write(t, "a.txt", "a", 0o644)
	f.write(t, "b.txt", "b", 0o644)
	paths := []string{"a.txt", "b.txt", "new.txt"}
	res, errs := f.c.CaptureAll(ctx, paths)
	for i, p := range paths {
		if !errors.Is(errs[i], errCommit) || res[i].Recorded {
			t.Errorf("%s: recorded %v, error %v; want not recorded, %v", p, res[i].Recorded, errs[i], errCommit)
		}
	}
	if n := len(f.snaps(t)); n != 0 {
		t.Errorf("%d snaps recorded after a failed blob commit, want 0", n)
	}
	if _, err := f.c.Capture(ctx, "a.txt"); !errors.Is(err, errCommit) {
		t.Errorf("Capture with a failing blob commit = %v, want %v", err, errCommit)
	}
}

// TestCaptureAllOpensEachDirectoryOnce: CaptureAll of many files in one
// directory opens the directories on their way a bounded number of times
// (Rel's walk once per directory, each reader's walk once), not once per
// file for each walk: a capture of 2,000 files of Go's source made 6,446
// openat and 16,885 newfstatat, five calls per directory level per file.
// Run alone (not parallel): countOpens counts every directory opened.
func TestCaptureAllOpensEachDirectoryOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	const files = 40
	var paths []string
	for i := range files {
		p := fmt.Sprintf("a/b/f%02d.go", i)
		f.write(t, p, fmt.Sprintf("package b // %d\n", i), 0o644)
		paths = append(paths, p)
	}
	var res []Result
	var errs []error
	n := countOpens(func() { res, errs = f.c.CaptureAll(ctx, paths) })
	for i := range paths {
		if errs[i] != nil || !res[i].Recorded || res[i].Snap.Content == nil {
			t.Fatalf("CaptureAll(%s) = %+v, %v: want it recorded", paths[i], res[i], errs[i])
		}
	}
	// Rel opens a (to look at b in it); each reader opens a and a/b.
	if max := 1 + 2*readers; n > max {
		t.Errorf("CaptureAll of %d files in a/b opened %d directories, want at most %d", files, n, max)
	}
}
