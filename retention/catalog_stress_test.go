//go:build unix

package retention_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestCatalogGCStress runs the real binary: several sessions capture in
// their own processes, resting now and then for longer than the
// catalog's margin so that gc's mark takes their summaries from the
// catalog, while gc and prune run over and over in others. A capture
// often stores content an earlier, pruned turn held (an unreferenced blob
// that the capture's dedup brings back to life). Afterwards verify must
// find every blob an index references. CKPT_CATALOG_STRESS sets how long
// it runs (a Go duration; default 8s).
func TestCatalogGCStress(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs ckpt processes for seconds")
	}
	run := 8 * time.Second
	if v := os.Getenv("CKPT_CATALOG_STRESS"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		run = d
	}
	store := t.TempDir()
	const sessions = 4
	clis := make([]cli, sessions)
	for i := range clis {
		ws := t.TempDir()
		clis[i] = newCLI(t, store, ws, "stress"+strconv.Itoa(i))
	}
	deadline := time.Now().Add(run)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	count := func(k string) {
		mu.Lock()
		counts[k]++
		mu.Unlock()
	}
	for i, c := range clis {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			f := filepath.Join(c.ws, "f.txt")
			for turn := 0; time.Now().Before(deadline); turn++ {
				switch rng.IntN(4) {
				case 0: // settle: the catalog vouches for this index
					time.Sleep(3200*time.Millisecond + time.Duration(rng.IntN(800))*time.Millisecond)
				case 1:
					time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
				}
				content := fmt.Sprintf("session %d turn %d\n", i, turn)
				if turn > 3 && rng.IntN(2) == 0 {
					// What an earlier turn held: likely pruned, its
					// blob unreferenced until this capture.
					content = fmt.Sprintf("session %d turn %d\n", i, rng.IntN(turn-2))
				}
				if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
					t.Error(err)
					return
				}
				if r := c.exec("turn", "t"+strconv.Itoa(turn)); r.code != 0 {
					t.Errorf("%s", r)
					return
				}
				if r := c.exec("capture", "f.txt"); r.code != 0 {
					t.Errorf("%s", r)
					return
				}
				count("capture")
				if rng.IntN(3) == 0 {
					if r := c.exec("prune", "--keep", "2", "--max-age", "0"); r.code != 0 {
						t.Errorf("%s", r)
						return
					}
					count("prune")
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			if r := clis[0].exec("gc"); r.code != 0 {
				t.Errorf("%s", r)
				return
			}
			count("gc")
		}
	}()
	wg.Wait()
	if t.Failed() {
		return
	}
	clis[0].verifyClean(t)
	t.Logf("ran %v: %v", run, counts)
}
