//go:build unix

package retention_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// The GC race: turn r of the session starts with f.txt holding raceOrphan(r),
// content that was put in the store just before, unreferenced, as an old
// blob nothing needs any more is. Capturing f.txt then stores that content
// again, which finds it stored and does nothing (dedup), and commits a row
// naming it. A collector running at any moment in between must not leave
// the row naming a deleted blob.

func raceOrphan(r int) string {
	return fmt.Sprintf("f.txt at the start of turn %d: an old unreferenced blob\n", r)
}
func raceOther(r int) string { return fmt.Sprintf("g.txt at the start of turn %d\n", r) }

// raceStart is what turn r starts with.
func raceStart(r int) tree {
	return tree{"f.txt": {data: raceOrphan(r), mode: 0o644}, "g.txt": {data: raceOther(r), mode: 0o644}}
}

// raceEdit is what the agent leaves at the end of turn r.
func raceEdit(r int) tree {
	if r%3 == 2 {
		return tree{"f.txt": {data: fmt.Sprintf("edited in turn %d\n", r), mode: 0o755}, "g.txt": nil}
	}
	return tree{"f.txt": {data: fmt.Sprintf("edited in turn %d\n", r), mode: 0o644}, "g.txt": {data: fmt.Sprintf("g edited %d", r), mode: 0o600}}
}

// plantOrphan puts content in the store without referencing it.
func plantOrphan(ctx context.Context, blobs cas.Store, content string) error {
	_, _, err := blobs.Put(ctx, strings.NewReader(content))
	return err
}

// TestGCRaceHelperProcess is not a test: it is the capturing process of
// TestGCRacingCapture's "api" case. It drives the session through the
// controller API for rounds 1..N as raceStart and raceEdit describe,
// rewinding and undoing now and then, and exits 0 when done.
func TestGCRaceHelperProcess(t *testing.T) {
	ws, store := os.Getenv("CKPT_GCRACE_WS"), os.Getenv("CKPT_GCRACE_STORE")
	if ws == "" {
		t.Skip("run by TestGCRacingCapture")
	}
	rounds, _ := strconv.Atoi(os.Getenv("CKPT_GCRACE_ROUNDS"))
	ctx := context.Background()
	ctl, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: os.Getenv("CKPT_GCRACE_SESSION"), NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	blobs, err := cas.OpenDisk(ctx, checkpoints.BlobDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	for r := 1; r <= rounds; r++ {
		if err := raceRoundAPI(ctx, t, ctl, blobs, r); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
}

// raceRoundAPI is round r through ctl, planting the orphan through blobs,
// the store's blobs opened beside the controller.
func raceRoundAPI(ctx context.Context, t testing.TB, ctl *controller.Controller, blobs cas.Store, r int) error {
	cp, err := ctl.BeginTurn(ctx, fmt.Sprintf("turn %d", r), controller.TurnOptions{})
	if err != nil {
		return err
	}
	if cp.Turn != r {
		return fmt.Errorf("opened turn %d, want %d", cp.Turn, r)
	}
	if err := plantOrphan(ctx, blobs, raceOrphan(r)); err != nil {
		return err
	}
	writeTree(t, ctl.WorkspaceRoot(), raceStart(r))
	for _, p := range []string{"f.txt", "g.txt"} {
		if _, errs := ctl.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
			return errs[0]
		}
	}
	writeTree(t, ctl.WorkspaceRoot(), raceEdit(r))
	if r%10 == 0 { // a rewind and its undo store the current bytes, holding the store too
		if _, err := ctl.Rewind(ctx, controller.Target{Turn: r / 2}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
			return err
		}
		if _, err := ctl.Undo(ctx, controller.RewindOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// raceRoundCLI is raceRoundAPI through the binary.
func raceRoundCLI(tb testing.TB, c cli, r int) {
	tb.Helper()
	if got := strings.TrimSpace(c.run(tb, "turn", fmt.Sprintf("turn %d", r))); got != strconv.Itoa(r) {
		tb.Fatalf("opened turn %s, want %d", got, r)
	}
	ctx := context.Background()
	blobs, err := cas.OpenDisk(ctx, checkpoints.BlobDir(c.store))
	if err != nil {
		tb.Fatal(err)
	}
	err = plantOrphan(ctx, blobs, raceOrphan(r))
	blobs.Close()
	if err != nil {
		tb.Fatal(err)
	}
	writeTree(tb, c.ws, raceStart(r))
	c.run(tb, "capture", "f.txt", "g.txt")
	writeTree(tb, c.ws, raceEdit(r))
	if r%10 == 0 {
		c.run(tb, "rewind", strconv.Itoa(r/2), "--scope", "code")
		c.run(tb, "undo")
	}
}

// TestGCRacingCapture runs two processes at once on one store: one opens
// turns, captures (content that was an unreferenced blob a moment before)
// and now and then rewinds and undoes; the other runs `ckpt gc` in a loop.
// Every gc must succeed, verify must be clean afterwards, every turn's
// snapshots must name exactly the captured bytes, and rewinding to each
// turn must restore them. It reports how often gc swept a planted blob
// before its capture stored it again (the race was run, not dodged).
// 30 turns through the CLI and 150 through the API (60 and 400 with
// CKPT_LONG=1).
func TestGCRacingCapture(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		rounds int // turns opened while gc loops
		long   int // with CKPT_LONG=1
	}{
		{"cli", 30, 60},
		{"api", 150, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rounds := tc.rounds
			if os.Getenv("CKPT_LONG") != "" {
				rounds = tc.long
			}
			if testing.Short() {
				rounds /= 4
			}
			c := newCLI(t, t.TempDir(), t.TempDir(), "default")
			// Turn 0 before gc starts: a store with blobs and no reference
			// at all is one gc refuses to touch.
			writeTree(t, c.ws, raceStart(0))
			c.run(t, "turn", "turn 0")
			c.run(t, "capture", "f.txt", "g.txt")
			writeTree(t, c.ws, raceEdit(0))

			var wg sync.WaitGroup
			done := make(chan struct{})
			var gcErrs []result
			gcRuns, swept := 0, 0
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					r := c.exec("--json", "gc")
					if r.code != 0 {
						gcErrs = append(gcErrs, r)
						continue
					}
					var rep struct {
						Deleted int `json:"deleted"`
					}
					if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
						r.stderr += err.Error()
						gcErrs = append(gcErrs, r)
					}
					gcRuns++
					swept += rep.Deleted
				}
			})
			stopGC := sync.OnceFunc(func() { close(done); wg.Wait() })
			defer stopGC() // also when the capturing side fails the test
			if tc.name == "cli" {
				for r := 1; r <= rounds; r++ {
					raceRoundCLI(t, c, r)
				}
			} else {
				cmd := exec.Command(os.Args[0], "-test.run=^TestGCRaceHelperProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(), "CKPT_GCRACE_WS="+c.ws, "CKPT_GCRACE_STORE="+c.store, "CKPT_GCRACE_ROUNDS="+strconv.Itoa(rounds), "CKPT_GCRACE_SESSION="+c.session)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("capturing process: %v\n%s", err, out)
				}
			}
			stopGC()
			for _, r := range gcErrs {
				t.Errorf("%s", r)
			}
			if t.Failed() {
				t.FailNow()
			}
			t.Logf("%d turns captured while gc ran %d times; gc swept %d blobs, planted ones before their capture among them", rounds, gcRuns, swept)

			c.verifyClean(t)
			starts := make([]tree, rounds+1)
			x := c.index(t)
			for r := range starts {
				starts[r] = raceStart(r)
				checkSnaps(t, x, r, starts[r])
			}
			x.Close()
			checkRewinds(t, c, starts, 0, raceEdit(rounds))
		})
	}
}
