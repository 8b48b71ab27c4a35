package retention_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

// TestForkRacesPruneAndGC: a fork copies the source's index (blob ids,
// not bytes) into a staging directory and renames it into sessions/. If
// the source's turns are pruned after the copy and a collection marks
// before the rename, the blobs only the fork names would be swept. Forks,
// prunes of the source's older turns, new turns and collections run
// together; then every session must verify. CKPT_FORK_RACE sets how long
// (default 10s).
func TestForkRacesPruneAndGC(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	run := 10 * time.Second
	if v := os.Getenv("CKPT_FORK_RACE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		run = d
	}
	ctx := context.Background()
	store := t.TempDir()
	src := newFixture(t, store, "src")
	src.write("f.txt", "start")
	blobs, err := cas.OpenDisk(ctx, checkpoints.BlobDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	deadline := time.Now().Add(run)
	var mu sync.Mutex // the source's controller is used by one goroutine at a time
	var wg sync.WaitGroup
	forks, prunes, gcs := 0, 0, 0
	n := 0
	step := func() {
		mu.Lock()
		defer mu.Unlock()
		src.turn(fmt.Sprintf("t%d", n))
		src.edit("f.txt", fmt.Sprintf("content of turn %d", n))
		n++
	}
	for i := 0; i < 3; i++ {
		step()
	}
	wg.Add(3)
	go func() { // new turns, and forks of the source
		defer wg.Done()
		for k := 0; time.Now().Before(deadline); k++ {
			step()
			mu.Lock()
			_, err := src.c.Fork(ctx, n-1, controller.ForkOptions{To: fmt.Sprintf("fork%d", k), Restore: false})
			mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			forks++
		}
	}()
	go func() { // prune every source turn: a new blob is then named only by the fork being made
		defer wg.Done()
		for time.Now().Before(deadline) {
			x, err := checkpoints.Open(ctx, checkpoints.SessionDir(store, "src"))
			if err != nil {
				t.Error(err)
				return
			}
			ts, err := x.TurnRecords(ctx)
			var ids []int64
			for _, tr := range ts {
				if !tr.Pruned {
					ids = append(ids, tr.ID)
				}
			}
			if err == nil && len(ids) > 0 {
				err = x.Prune(ctx, ids)
				prunes++
			}
			x.Close()
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			if _, err := retention.Collect(ctx, store, blobs, retention.CollectOptions{}); err != nil {
				t.Error(err)
				return
			}
			gcs++
		}
	}()
	wg.Wait()
	src.c.Close()
	rep, err := retention.Verify(ctx, store, blobs, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d forks, %d prunes, %d collections", forks, prunes, gcs)
	if !rep.OK() {
		t.Errorf("verify after forks raced prunes and collections: %+v", rep)
	}
}
