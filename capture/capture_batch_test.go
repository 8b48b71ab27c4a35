package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/retention"
)

// A path that cannot be read fails alone: the batch's other paths are
// recorded, the failed one records nothing (never "absent").
func TestCaptureAllUnreadablePathInBatch(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "a.txt", "a", 0o644)
	f.write(t, "secret.txt", "s", 0o644)
	f.write(t, "c.txt", "c", 0o644)
	f.c.open = func(rel string) (*os.File, fs.FileInfo, error) {
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

// crashEnv tells TestCaptureCrashHelper where to capture.
const crashEnv = "CKPT_CAPTURE_CRASH"

// TestCaptureCrashHelper is the process TestCrashBetweenCommits kills: it
// captures three files and SIGKILLs itself once their blobs are committed,
// before the index commit.
func TestCaptureCrashHelper(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("run by TestCrashBetweenCommits")
	}
	ctx := context.Background()
	ws, err := NewWorkspace(filepath.Join(dir, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := cas.OpenDisk(ctx, filepath.Join(dir, "store", "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := checkpoints.Open(ctx, checkpoints.SessionDir(filepath.Join(dir, "store"), "s"))
	if err != nil {
		t.Fatal(err)
	}
	c := New(ws, idx, blobs)
	c.blobsCommitted = func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	c.CaptureAll(ctx, []string{"a.txt", "b.txt", "c.txt"})
	t.Fatal("the capture returned: the crash point was never reached")
}

// A crash between the blob commit and the index commit leaves the blobs
// stored, durable and named by no row: nothing is recorded, the collector
// deletes them, and the next capture of the same files stores them again.
func TestCrashBetweenCommits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	contents := map[string]string{"a.txt": "alpha\n", "b.txt": "bravo\n", "c.txt": "charlie\n"}
	for name, s := range contents {
		p := filepath.Join(dir, "ws", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := checkpoints.Open(ctx, checkpoints.SessionDir(store, "s"))
	if err != nil {
		t.Fatal(err)
	}
	turn, err := idx.BeginTurn(ctx, "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	idx.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestCaptureCrashHelper$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper: %v, want killed at the crash point\n%s", err, out)
	}

	blobs, err := cas.OpenDisk(ctx, filepath.Join(store, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	idx, err = checkpoints.Open(ctx, checkpoints.SessionDir(store, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	cp, err := idx.Turn(ctx, turn.Turn)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Files) != 0 {
		t.Fatalf("turn has %d snaps after the crash, want none: %+v", len(cp.Files), cp.Files)
	}
	for name, s := range contents {
		b, err := blobs.Get(ctx, cas.Sum([]byte(s)))
		if err != nil || string(b) != s {
			t.Fatalf("%s: blob after the crash: %q, %v; want it stored whole", name, b, err)
		}
	}
	rep, err := retention.Collect(ctx, store, blobs, retention.CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != len(contents) {
		t.Errorf("collector deleted %d blobs, want the %d no row names", rep.Deleted, len(contents))
	}
	for name, s := range contents {
		if ok, err := blobs.Has(ctx, cas.Sum([]byte(s))); err != nil || ok {
			t.Errorf("%s: blob still stored after collection (%v)", name, err)
		}
	}

	ws, err := NewWorkspace(filepath.Join(dir, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	c := New(ws, idx, blobs)
	for name, s := range contents {
		r, err := c.Capture(ctx, name)
		if err != nil || !r.Recorded {
			t.Fatalf("capture %s after the crash: %+v, %v", name, r, err)
		}
		rc, err := blobs.Open(ctx, *r.Snap.Content)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != s {
			t.Errorf("%s: stored %q, %v; want %q", name, b, err, s)
		}
	}
}
