package retention_test

import (
	"context"
	"encoding/binary"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

// diskUsage returns the bytes the store's blob directory takes on disk.
func diskUsage(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestQuotaBoundsALoopRewritingA36MBFile is the runaway case peers hit
// (one 36 MB file rewritten in a loop filling hundreds of GB): 40 turns
// (1.4 GB written: the quota is reached by the 14th, and retention keeps
// working from then on; 200 turns, 7 GB, with CKPT_LONG=1), each rewriting
// the file with different, incompressible content, under a 500 MB quota
// set in config.json. Automatic retention must keep the store under the
// quota after every turn opens, with no gc run by hand.
func TestQuotaBoundsALoopRewritingA36MBFile(t *testing.T) {
	t.Parallel()
	rounds := 40
	if os.Getenv("CKPT_LONG") != "" {
		rounds = 200
	}
	if testing.Short() {
		rounds = 30
	}
	const size, quota = 36 << 20, 500 << 20
	ctx := context.Background()
	store := t.TempDir()
	if err := os.WriteFile(filepath.Join(store, retention.ConfigFile), []byte(`{"max_bytes": "500MiB"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	content := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(content)
	path := filepath.Join(ws, "big.bin")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	var peak int64
	for i := 0; i < rounds; i++ {
		if _, err := c.BeginTurn(ctx, "rewrite big.bin", controller.TurnOptions{}); err != nil {
			t.Fatal(err)
		}
		if used := diskUsage(t, filepath.Join(store, "blobs")); used > peak {
			peak = used
		}
		if used := diskUsage(t, filepath.Join(store, "blobs")); used > quota {
			t.Fatalf("turn %d: store holds %d MB, over the %d MB quota", i, used>>20, quota>>20)
		}
		if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{"big.bin"}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		for k := 0; k < 64; k++ { // different content each turn, still incompressible
			binary.LittleEndian.PutUint64(content[k*(size/64):], uint64(i)<<32|uint64(k))
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d turns of a 36 MB file: peak store %d MB under a %d MB quota", rounds, peak>>20, quota>>20)
	// Retention pruned the oldest turns, not the recent ones.
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{})
	if err != nil || len(cps) != rounds {
		t.Fatalf("%d checkpoints, %v", len(cps), err)
	}
	if cps[rounds-2].Pruned {
		t.Errorf("the turn before the open one was pruned; the quota leaves room for more")
	}
}
