package remote

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/s3test"
	"github.com/ckpt/ckpt/remote/backend"
	"github.com/ckpt/ckpt/remote/backend/dir"
	"github.com/ckpt/ckpt/remote/backend/s3"
)

// TestSyncPullDeltas: a session whose file versions the local store keeps
// as deltas syncs and pulls whole, on a directory remote and on versitygw
// (skipped when it is not installed); a code rewind in the pulled copy
// restores every file.
func TestSyncPullDeltas(t *testing.T) {
	t.Parallel()
	t.Run("dir", func(t *testing.T) {
		b, err := dir.New(filepath.Join(t.TempDir(), "remote"))
		if err != nil {
			t.Fatal(err)
		}
		syncPullDeltas(t, b)
	})
	t.Run("versitygw", func(t *testing.T) {
		srv := s3test.Start(t)
		b, err := s3.New(srv.Config(t, "deltas", "p"))
		if err != nil {
			t.Fatal(err)
		}
		syncPullDeltas(t, b)
	})
}

func syncPullDeltas(t *testing.T, b backend.Backend) {
	ctx := context.Background()
	root := t.TempDir()
	ws, storeA, storeB, wsB := filepath.Join(root, "ws"), filepath.Join(root, "A"), filepath.Join(root, "B"), filepath.Join(root, "wsB")
	os.MkdirAll(ws, 0o755)
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: storeA, Session: "s1", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	files := map[string][]byte{}
	for j := 0; j < 3; j++ {
		var body bytes.Buffer
		for body.Len() < 12<<10 {
			fmt.Fprintf(&body, "\tv%d := call(%d, %d) // line %d\n", rng.IntN(1000), rng.IntN(1<<20), rng.IntN(1<<20), body.Len())
		}
		files[fmt.Sprintf("f%d.go", j)] = body.Bytes()
	}
	write := func() {
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(ws, name), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write()
	start := map[string][]byte{} // the files at turn 0's start
	for name, body := range files {
		start[name] = bytes.Clone(body)
	}
	const turns = 12
	for i := 0; i < turns; i++ {
		if _, err := c.BeginTurn(ctx, fmt.Sprintf("turn %d", i), controller.TurnOptions{}); err != nil {
			t.Fatal(err)
		}
		for name, body := range files {
			if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{filepath.Join(ws, name)}}); errs[0] != nil {
				t.Fatal(errs[0])
			}
			at := bytes.IndexByte(body[rng.IntN(len(body)):], '\n')
			if at < 0 {
				at = 0
			}
			at += len(body) - len(body[at:])
			files[name] = append(append(bytes.Clone(body[:at+1]), fmt.Sprintf("\t// turn %d edit\n", i)...), body[at+1:]...)
		}
		write()
	}
	if _, err := c.BeginTurn(ctx, "last", controller.TurnOptions{}); err != nil { // records the last edits as ends
		t.Fatal(err)
	}
	c.Close()

	blobsA, err := cas.OpenDisk(ctx, filepath.Join(storeA, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer blobsA.Close()
	deltas := 0
	blobsA.Walk(ctx, func(i cas.Info) error {
		if !i.Base.IsZero() {
			deltas++
		}
		return nil
	})
	if deltas < turns {
		t.Fatalf("store A holds %d deltas, want at least %d: the test needs them", deltas, turns)
	}

	ra, err := Open(ctx, storeA, "test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	if res, err := ra.Sync(ctx, nil, true); err != nil || len(res) != 1 || res[0].Status != "uploaded" {
		t.Fatalf("sync: %+v %v", res, err)
	}
	rb, err := Open(ctx, storeB, "test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if _, err := rb.Pull(ctx, PullOptions{Session: "s1", As: "copy", Workspace: wsB}); err != nil {
		t.Fatalf("pull: %v", err)
	}
	// Every blob of A reads back the same in B.
	err = blobsA.Walk(ctx, func(i cas.Info) error {
		want, err := blobsA.Get(ctx, i.ID)
		if err != nil {
			return err
		}
		got, err := rb.blobs.Get(ctx, i.ID)
		if err != nil || !bytes.Equal(got, want) {
			return fmt.Errorf("blob %s in B: %v", i.ID.Short(), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rb.Close()
	// Rewinding B's copy (an empty workspace: forced) to turn 0 puts the
	// first versions back.
	os.MkdirAll(wsB, 0o755)
	cb, err := controller.Open(ctx, controller.Options{Workspace: wsB, Store: storeB, Session: "copy", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	if _, err := cb.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeCode, controller.RewindOptions{Force: true}); err != nil {
		t.Fatalf("rewind in B: %v", err)
	}
	for name, want := range start {
		got, err := os.ReadFile(filepath.Join(wsB, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s after rewind in B: %d bytes, %v; want the %d bytes of turn 0", name, len(got), err, len(want))
		}
	}
}
