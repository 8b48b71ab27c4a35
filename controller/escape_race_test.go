//go:build linux

package controller_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// TestEscapeRace runs rewinds, undos, captures and scans on a workspace
// whose directory d is swapped, atomically and over and over, for a
// symlink to a directory outside the workspace and back. The outside
// directory holds files named like d's, each with unique random bytes.
// After every trial nothing outside may have changed (no file deleted,
// overwritten or created there), no outside file's bytes may be in the
// store, and every rewind and undo must finish (skipping paths with a
// reason is fine).
//
// It runs 200 trials; CKPT_LONG=1 runs 2,000.
func TestEscapeRace(t *testing.T) {
	t.Parallel() // its own workspaces and stores; no process state
	swapHold, swapGap := envInt("CKPT_RACE_HOLD", 10), envInt("CKPT_RACE_GAP", 100)
	trials := 200
	if os.Getenv("CKPT_LONG") != "" {
		trials = 2000
	}
	ctx := context.Background()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	store := filepath.Join(base, "store")

	// The names an agent works on under d/; the outside directory has a
	// file at each of them, so any write, delete or read that goes through
	// the symlink lands on one.
	var names []string
	for i := range 6 {
		names = append(names, fmt.Sprintf("f%d", i), fmt.Sprintf("n%d", i))
	}
	for i := range 3 {
		names = append(names, fmt.Sprintf("sub/g%d", i), fmt.Sprintf("sub/m%d", i))
	}
	for _, n := range names {
		writeFile(t, filepath.Join(outside, n), randomBytes(64))
		if !strings.Contains(n, "n") && !strings.Contains(n, "m") {
			writeFile(t, filepath.Join(ws, "d", n), []byte("start "+n+"\n"))
		}
	}
	writeFile(t, filepath.Join(ws, "top.txt"), []byte("top\n"))
	// The swapped-out directory waits under .git, which ckpt never scans.
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	swapLink := filepath.Join(ws, ".git", "swap")
	if err := os.Symlink(outside, swapLink); err != nil {
		t.Fatal(err)
	}
	before := snapshotTree(t, outside)

	ctl, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()

	// swapMu is held while d is the symlink: the test's own edits (the
	// agent's tool writes) take it, ckpt never does.
	var swapMu sync.Mutex
	var stop atomic.Bool
	var swaps atomic.Int64
	done := make(chan error, 1)
	go func() {
		rng := mrand.New(mrand.NewPCG(1, 2))
		d := filepath.Join(ws, "d")
		for !stop.Load() {
			swapMu.Lock()
			err := unix.Renameat2(unix.AT_FDCWD, swapLink, unix.AT_FDCWD, d, unix.RENAME_EXCHANGE)
			if err == nil {
				spin(rng.IntN(swapHold))
				err = unix.Renameat2(unix.AT_FDCWD, swapLink, unix.AT_FDCWD, d, unix.RENAME_EXCHANGE)
			}
			swapMu.Unlock()
			if err != nil {
				done <- fmt.Errorf("swap: %w", err)
				return
			}
			swaps.Add(1)
			spin(rng.IntN(swapGap))
		}
		done <- nil
	}()

	rng := mrand.New(mrand.NewPCG(3, 4))
	var (
		outsideChanges, leaked, rewindErrs, undoErrs, otherErrs int
		rewinds, undos, skips                                   int
		leakedSeen                                              = map[string]bool{}
	)
	edit := func(rel string) {
		swapMu.Lock()
		defer swapMu.Unlock()
		p := filepath.Join(ws, filepath.FromSlash(rel))
		if rng.IntN(4) == 0 {
			os.Remove(p)
			return
		}
		writeFile(t, p, []byte(fmt.Sprintf("edit %s %d\n", rel, rng.Int64())))
	}
	for trial := range trials {
		cp, err := ctl.BeginTurn(ctx, fmt.Sprintf("trial %d", trial), controller.TurnOptions{Scan: rng.IntN(3) == 0})
		if err != nil {
			otherErrs++
			t.Logf("trial %d: turn: %v", trial, err)
		}
		for range 3 {
			rel := "d/" + names[rng.IntN(len(names))]
			if _, errs := ctl.Capture(ctx, controller.CaptureOptions{Paths: []string{rel}}); errs[0] != nil && !expectedCaptureErr(errs[0]) {
				otherErrs++
				t.Logf("trial %d: capture %s: %v", trial, rel, errs[0])
			}
			edit(rel)
		}
		if rng.IntN(2) == 0 && cp.Turn >= 0 {
			to := rng.IntN(cp.Turn + 1)
			res, err := ctl.Rewind(ctx, controller.Target{Turn: to}, checkpoints.ScopeCode, controller.RewindOptions{Force: true})
			rewinds++
			if err != nil {
				rewindErrs++
				t.Logf("trial %d: rewind %d: %v", trial, to, err)
			}
			skips += checkSkips(t, res.Skipped)
			if err == nil && res.Changed && rng.IntN(2) == 0 {
				res, err := ctl.Undo(ctx, controller.RewindOptions{Force: true})
				undos++
				if err != nil {
					undoErrs++
					t.Logf("trial %d: undo: %v", trial, err)
				}
				skips += checkSkips(t, res.Skipped)
			}
		}
		if diff := diffTrees(before, snapshotTree(t, outside)); len(diff) > 0 {
			outsideChanges += len(diff)
			t.Logf("trial %d: outside changed: %s", trial, strings.Join(diff, "; "))
			restoreTree(t, outside, before)
		}
		for name, b := range before {
			if b == nil || leakedSeen[name] {
				continue
			}
			ok, err := controller.BlobsOf(ctl).Has(ctx, cas.Sum(b))
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				leakedSeen[name] = true
				leaked++
				t.Logf("trial %d: the bytes of outside/%s are in the store", trial, name)
			}
		}
	}
	stop.Store(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Every rewind left in place stays undoable: walk back the stack.
	for range 100 {
		res, err := ctl.Undo(ctx, controller.RewindOptions{Force: true})
		if errors.Is(err, checkpoints.ErrNothingToUndo) {
			break
		}
		undos++
		if err != nil {
			undoErrs++
			t.Logf("final undo: %v", err)
			break
		}
		skips += checkSkips(t, res.Skipped)
	}
	if diff := diffTrees(before, snapshotTree(t, outside)); len(diff) > 0 {
		outsideChanges += len(diff)
		t.Logf("final undos: outside changed: %s", strings.Join(diff, "; "))
	}
	t.Logf("%d trials, %d swaps, %d rewinds, %d undos, %d skipped paths; %d outside changes, %d outside files in the store, %d rewind errors, %d undo errors, %d other errors",
		trials, swaps.Load(), rewinds, undos, skips, outsideChanges, leaked, rewindErrs, undoErrs, otherErrs)
	if outsideChanges+leaked+rewindErrs+undoErrs+otherErrs > 0 {
		t.Errorf("escape race: %d outside changes, %d outside files in the store, %d rewind errors, %d undo errors, %d other errors over %d trials; want all 0",
			outsideChanges, leaked, rewindErrs, undoErrs, otherErrs, trials)
	}
}

// expectedCaptureErr reports whether a capture refused the path because
// of what the swap made of it: a symlinked parent, or one leading out.
func expectedCaptureErr(err error) bool {
	return errors.Is(err, capture.ErrOutsideWorkspace) || errors.Is(err, capture.ErrSymlink) || errors.Is(err, capture.ErrNotRegular)
}

// checkSkips fails the test for a skip without a reason and counts them.
func checkSkips(t *testing.T, skips []controller.Skip) int {
	t.Helper()
	for _, s := range skips {
		if s.Reason == "" {
			t.Errorf("skipped %s without a reason", s.Path)
		}
	}
	return len(skips)
}

// spin waits about n microseconds without sleeping (a sleep would round
// up to the scheduler's tick and make the swaps rare).
func spin(n int) {
	end := time.Now().Add(time.Duration(n) * time.Microsecond)
	for time.Now().Before(end) {
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func writeFile(t testing.TB, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshotTree maps every entry under dir to its bytes (files) or nil
// (directories); anything else is recorded as a marker.
func snapshotTree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".":
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = b
		case d.IsDir():
			out[rel] = nil
		default:
			out[rel] = []byte("<" + d.Type().String() + ">")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffTrees describes how got differs from want.
func diffTrees(want, got map[string][]byte) []string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			out = append(out, "deleted "+p)
		case (w == nil) != (g == nil) || string(w) != string(g):
			out = append(out, "changed "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, "created "+p)
		}
	}
	sort.Strings(out)
	return out
}

// restoreTree puts dir back to snapshot want, so the next trial starts clean.
func restoreTree(t testing.TB, dir string, want map[string][]byte) {
	t.Helper()
	got := snapshotTree(t, dir)
	for p := range got {
		if _, ok := want[p]; !ok {
			os.RemoveAll(filepath.Join(dir, p))
		}
	}
	for p, b := range want {
		if b != nil {
			writeFile(t, filepath.Join(dir, p), b)
		}
	}
}
