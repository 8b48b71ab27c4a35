//go:build unix

package retention_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// captureContent is what path k of a worker holds: most contents are
// shared by every worker and session (so processes store the same blob at
// the same moment), the rest are the path's own; the first two paths of
// each worker hold one of two contents over 1 MiB (a file blob each).
func captureContent(session, worker, k int) string {
	switch {
	case k < 2:
		return strings.Repeat(fmt.Sprintf("large shared %d\n", k), (1<<20)/14+1)
	case k%2 == 0:
		return fmt.Sprintf("shared content %d\n", k%40)
	default:
		return fmt.Sprintf("session %d worker %d path %d\r\n", session, worker, k)
	}
}

// TestConcurrentCapture runs many ckpt processes capturing into one
// session at once (agent hooks run in parallel), into one session the same
// paths at once, and into several sessions sharing one store at once, with
// and without gc running all along. Every process must succeed with
// nothing on stderr (no "database is locked" reaching a user), every
// capture must be in the index with the right blob (no row lost), each
// path recorded once, and verify must be clean.
func TestConcurrentCapture(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		sessions int
		workers  int  // per session, each its own stream of processes
		captures int  // per worker
		perCall  int  // paths per ckpt capture process
		same     bool // every worker captures the same paths: each must be recorded once
		gc       bool // run `ckpt gc` in a loop meanwhile, and rewind after
	}{
		{name: "8 processes x 200 captures, one session", sessions: 1, workers: 8, captures: 200, perCall: 200},
		{name: "8 processes x the same 200 paths, one session", sessions: 1, workers: 8, captures: 200, perCall: 200, same: true},
		{name: "8 workers x 200 captures in 10-path processes, one session", sessions: 1, workers: 8, captures: 200, perCall: 10},
		{name: "4 sessions x 2 workers x 200 captures, one store", sessions: 4, workers: 2, captures: 200, perCall: 25},
		{name: "4 sessions x 2 workers x 200 captures, one store, gc looping", sessions: 4, workers: 2, captures: 200, perCall: 25, gc: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner := func(w int) int { // whose paths worker w captures
				if tc.same {
					return 0
				}
				return w
			}
			store := t.TempDir()
			sessions := make([]cli, tc.sessions)
			files := make([]tree, tc.sessions) // what each session's workspace holds
			for s := range sessions {
				sessions[s] = newCLI(t, store, t.TempDir(), fmt.Sprintf("s%d", s))
				files[s] = tree{}
				for w := range tc.workers {
					for k := range tc.captures {
						files[s][capturePath(owner(w), k)] = &file{data: captureContent(s, owner(w), k), mode: 0o644}
					}
				}
				writeTree(t, sessions[s].ws, files[s])
			}
			var mu sync.Mutex
			var failures []result
			fail := func(r result) {
				mu.Lock()
				failures = append(failures, r)
				mu.Unlock()
			}
			// runOK runs a command that must succeed; capture and turn must
			// also say nothing on stderr (gc reports there).
			runOK := func(c cli, args ...string) result {
				r := c.exec(args...)
				if r.code != 0 || (args[0] != "gc" && r.stderr != "") || strings.Contains(r.stderr, "database is locked") {
					fail(r)
				}
				return r
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			captured := make([][]int, tc.sessions) // lines printed, by session and worker
			for s, c := range sessions {
				captured[s] = make([]int, tc.workers)
				turnDone := make(chan struct{})
				wg.Go(func() {
					<-start
					runOK(c, "turn", "parallel tools") // sessions are created at once too
					close(turnDone)
				})
				for w := range tc.workers {
					wg.Go(func() {
						<-turnDone
						for k := 0; k < tc.captures; k += tc.perCall {
							args := []string{"capture"}
							for j := k; j < min(k+tc.perCall, tc.captures); j++ {
								args = append(args, capturePath(owner(w), j))
							}
							r := runOK(c, args...)
							captured[s][w] += strings.Count(r.stdout, ": captured ")
						}
					})
				}
			}
			gcRuns := 0
			stop := make(chan struct{})
			var gcDone sync.WaitGroup
			if tc.gc {
				gcDone.Go(func() {
					<-start
					for {
						select {
						case <-stop:
							return
						default:
						}
						runOK(sessions[0], "gc")
						gcRuns++
					}
				})
			}
			close(start)
			wg.Wait()
			close(stop)
			gcDone.Wait()
			for _, r := range failures {
				t.Errorf("%s", r)
			}
			if t.Failed() {
				t.FailNow()
			}
			if tc.gc {
				t.Logf("gc ran %d times meanwhile", gcRuns)
			}
			for s, c := range sessions {
				total := 0
				for w, n := range captured[s] {
					total += n
					if n != tc.captures && !tc.same {
						t.Errorf("session %d worker %d: %d paths reported captured, want %d", s, w, n, tc.captures)
					}
				}
				if total != len(files[s]) { // with the same paths, the first capture of each wins
					t.Errorf("session %d: %d captures reported recorded, want %d", s, total, len(files[s]))
				}
				if cps := c.list(t); len(cps) != 1 || len(cps[0].Files) != len(files[s]) {
					t.Fatalf("session %s: list shows %+v; want one turn with %d files", c.session, cps, len(files[s]))
				}
				x := c.index(t)
				checkSnaps(t, x, 0, files[s])
				x.Close()
			}
			sessions[0].verifyClean(t)
			if !tc.gc {
				return
			}
			// gc deleted none of the blobs: a rewind puts every file's
			// captured bytes back.
			last := len(sessions) - 1
			edited := tree{}
			for p := range files[last] {
				edited[p] = &file{data: "edited " + p, mode: 0o600}
			}
			writeTree(t, sessions[last].ws, edited)
			checkRewinds(t, sessions[last], []tree{files[last]}, 0, edited)
		})
	}
}

func capturePath(worker, k int) string { return fmt.Sprintf("w%d/f%03d.txt", worker, k) }
