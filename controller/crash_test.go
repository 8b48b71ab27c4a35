package controller_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// TestCrashHelperProcess is the process TestCrashRewind kills. With
// CKPT_TEST_CRASH_OP and CKPT_TEST_CRASH_AT set it runs one op (a rewind,
// or an undo after a rewind) and SIGKILLs itself at a named point of it:
// just before the AT-th path is replaced (1: every new content staged and
// durable, nothing renamed yet), through the test-only hook of
// export_test.go. Without them it rewinds and undoes in a loop until it is
// killed from outside (the soak, CKPT_SOAK_CRASH).
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
	rewind := func() {
		if _, err := c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeBoth, controller.RewindOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	undo := func() {
		if _, err := c.Undo(ctx, controller.RewindOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	if op := os.Getenv("CKPT_TEST_CRASH_OP"); op != "" {
		at, err := strconv.Atoi(os.Getenv("CKPT_TEST_CRASH_AT"))
		if err != nil || at < 1 {
			fmt.Fprintln(os.Stderr, "CKPT_TEST_CRASH_AT: want a number from 1")
			os.Exit(3)
		}
		if op == "undo" {
			rewind()
		}
		n := 0
		controller.SetBeforeReplace(c, func(string) {
			if n++; n == at {
				p, _ := os.FindProcess(os.Getpid())
				p.Kill()
				select {} // the kill lands; nothing more of the op runs
			}
		})
		if op == "undo" {
			undo()
		} else {
			rewind()
		}
		fmt.Fprintf(os.Stderr, "the %s ended before replacing path %d\n", op, at)
		os.Exit(3)
	}
	for {
		rewind()
		undo()
	}
}

// TestCrashRewind SIGKILLs a process in the middle of a rewind or an undo
// of 150 files, at named points: before the first rename, after one, after
// half, before the last. The next Open must leave the workspace wholly at
// one side of the interrupted op (never half-rewound), no temp file
// behind, nothing pending, and rewind and undo must still work to exact
// bytes. CKPT_SOAK_CRASH=N adds N kills at random moments of a
// rewind/undo loop (a soak; how many land in flight is luck, so it is
// logged, not asserted).
func TestCrashRewind(t *testing.T) {
	t.Parallel()
	type point struct {
		op string
		at int // 0: a kill from outside at a random moment
	}
	var points []point
	for _, op := range []string{"rewind", "undo"} {
		for _, at := range []int{1, 2, crashFiles / 2, crashFiles} {
			points = append(points, point{op, at})
		}
	}
	if n, _ := strconv.Atoi(os.Getenv("CKPT_SOAK_CRASH")); n > 0 {
		for range n {
			points = append(points, point{"loop", 0})
		}
	}
	ctx := context.Background()
	interrupted := 0
	for round, pt := range points {
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
		if pt.at > 0 {
			cmd.Env = append(cmd.Env, "CKPT_TEST_CRASH_OP="+pt.op, "CKPT_TEST_CRASH_AT="+strconv.Itoa(pt.at))
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if pt.at == 0 {
			time.Sleep(time.Duration(20+rand.Intn(300)) * time.Millisecond)
			cmd.Process.Kill()
		}
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d (%s at %d): helper ended on its own (%v): %s", round, pt.op, pt.at, err, stderr.String())
		}

		pending := false
		if idx, err := checkpoints.Open(ctx, checkpoints.SessionDir(e.store, e.session())); err == nil {
			_, err := idx.PendingOp(ctx)
			pending = err == nil
			idx.Close()
		}
		if pending {
			interrupted++
		} else if pt.at > 0 {
			t.Fatalf("round %d: killed before replacing path %d of the %s, yet no op is pending", round, pt.at, pt.op)
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
			if _, err := e.c.Undo(ctx, controller.RewindOptions{}); err != nil {
				t.Fatalf("round %d: undo after recovery: %v", round, err)
			}
			e.checkAll(t, round, 1)
		}
		if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
			t.Fatalf("round %d: rewind after recovery: %v", round, err)
		}
		e.checkAll(t, round, 0)
	}
	t.Logf("%d of %d kills interrupted an op in flight", interrupted, len(points))
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
