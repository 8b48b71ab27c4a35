package controller_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

const crashFiles = 150

func crashContent(i, version int) string {
	return fmt.Sprintf("file %d version %d\n%s", i, version, strings.Repeat("x", 100+i*37%4000))
}

// TestCrashHelperProcess is the process TestCrashRewind kills: it rewinds
// and undoes the session in a loop until it is killed.
func TestCrashHelperProcess(t *testing.T) {
	ws, store := os.Getenv("CKPT_CRASH_WS"), os.Getenv("CKPT_CRASH_STORE")
	if ws == "" {
		t.Skip("run by TestCrashRewind")
	}
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for {
		if _, err := c.Rewind(ctx, 0, checkpoints.ScopeBoth, controller.RewindOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		if _, err := c.Undo(ctx, controller.UndoOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
}

// TestCrashRewind SIGKILLs a process in the middle of rewinds and undos of
// 150 files, many times. After each kill the next Open must leave the
// workspace wholly at one side of the interrupted op (never half-rewound),
// no temp file behind, nothing pending, and rewind and undo must still work
// to exact bytes.
func TestCrashRewind(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	ctx := context.Background()
	interrupted := 0 // rounds killed between an op's plan and its finish
	defer func() {
		t.Logf("%d of %d kills interrupted an op in flight", interrupted, rounds)
		if interrupted == 0 && !t.Failed() {
			t.Errorf("no kill landed while an op was in flight: the test exercised no recovery")
		}
	}()
	for round := 0; round < rounds; round++ {
		e := newEnv(t)
		for i := 0; i < crashFiles; i++ {
			e.write(fmt.Sprintf("d%d/f%03d.txt", i%7, i), crashContent(i, 0))
		}
		e.turn("rewrite everything")
		for i := 0; i < crashFiles; i++ {
			e.edit(fmt.Sprintf("d%d/f%03d.txt", i%7, i), crashContent(i, 1))
		}
		e.c.Close()
		e.c = nil

		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelperProcess$")
		cmd.Env = append(os.Environ(), "CKPT_CRASH_WS="+e.ws, "CKPT_CRASH_STORE="+e.store)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+rand.Intn(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: helper ended on its own (%v): %s", round, err, stderr.String())
		}

		if idx, err := checkpoints.Open(ctx, checkpoints.SessionDir(e.store, e.session())); err == nil {
			if _, err := idx.PendingOp(ctx); err == nil {
				interrupted++
			}
			idx.Close()
		}
		e.reopen() // recovery runs here
		if _, err := controller.IndexOf(e.c).PendingOp(ctx); err == nil {
			t.Fatalf("round %d: an op is still pending after reopen", round)
		}
		version := 1
		if _, err := controller.IndexOf(e.c).LastRewind(ctx); err == nil {
			version = 0
		}
		e.checkAll(t, round, version)
		if version == 0 {
			if _, err := e.c.Undo(ctx, controller.UndoOptions{}); err != nil {
				t.Fatalf("round %d: undo after recovery: %v", round, err)
			}
			e.checkAll(t, round, 1)
		}
		if _, err := e.c.Rewind(ctx, 0, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
			t.Fatalf("round %d: rewind after recovery: %v", round, err)
		}
		e.checkAll(t, round, 0)
	}
}

// checkAll asserts every file holds the given version and no temp file is
// left in the workspace.
func (e *env) checkAll(t *testing.T, round, version int) {
	t.Helper()
	for i := 0; i < crashFiles; i++ {
		rel := fmt.Sprintf("d%d/f%03d.txt", i%7, i)
		if got := e.read(rel); got != crashContent(i, version) {
			t.Fatalf("round %d: %s holds %.20q, want version %d: a half-applied op", round, rel, got, version)
		}
	}
	filepath.WalkDir(e.ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".ckpt-") {
			t.Errorf("round %d: temp file left behind: %s", round, p)
		}
		return nil
	})
}
