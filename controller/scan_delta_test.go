package controller_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// TestScanDeltasAcrossControllers opens scanned turns from two controllers
// of one session in turn, each over a workspace edited a little in between
// (the manifests are stored as deltas, from each scan's changes against a
// stat cache the other controller rewrote meanwhile), then rewinds to each
// turn and checks the workspace is exactly as that turn found it.
func TestScanDeltasAcrossControllers(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 60 {
		e.write(fmt.Sprintf("d%d/f%02d.txt", i%5, i), fmt.Sprint("v0 ", i))
	}
	other := e.open(e.session())
	var want []tree
	for k := range 12 {
		for range 1 + rng.IntN(4) {
			p := fmt.Sprintf("d%d/f%02d.txt", rng.IntN(6), rng.IntN(70))
			switch rng.IntN(3) {
			case 0:
				os.Remove(filepath.Join(e.ws, p))
			default:
				e.write(p, fmt.Sprint("v", k+1, " ", p))
			}
		}
		c := e.c
		if k%2 == 1 {
			c = other
		}
		want = append(want, e.tree())
		if _, err := c.BeginTurn(ctx, fmt.Sprint("t", k), controller.TurnOptions{Scan: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range rng.Perm(len(want)) {
		res, err := e.c.Rewind(ctx, controller.Target{Turn: k}, checkpoints.ScopeCode, controller.RewindOptions{Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.tree(); !maps.Equal(got, want[k]) {
			t.Fatalf("rewind to turn %d: workspace has %d files, want %d as that turn found it", k, len(got), len(want[k]))
		}
		if !res.Changed {
			continue
		}
		if _, err := e.c.Undo(ctx, controller.RewindOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
	}
}
