//go:build unix

package capture

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/retention"
)

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
	t.Parallel()
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
