package hook

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A detached process (the resident hook server) starts with
// detachedTimerSlack (or the starting thread's, when larger), and the process that starts it keeps its own.
func TestStartDetachedTimerSlack(t *testing.T) {
	store := t.TempDir()
	// Stands in for the ckpt executable: run as `EXE --store STORE`, it
	// writes its own timer slack into the store.
	exe := filepath.Join(t.TempDir(), "report-slack")
	script := "#!/bin/sh\nread v < /proc/self/timerslack_ns\necho \"$v\" > \"$2/slack.tmp\" && mv \"$2/slack.tmp\" \"$2/slack\"\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// This goroutine's thread is the one that forks.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := StartDetached(store, exe, "slack.lock", "slack.log"); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for try := 0; try < 500; try++ {
		var err error
		if got, err = os.ReadFile(filepath.Join(store, "slack")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A larger slack of this thread's is what the child gets.
	if want := strconv.Itoa(max(before, int(detachedTimerSlack))); strings.TrimSpace(string(got)) != want {
		log, _ := os.ReadFile(filepath.Join(store, "slack.log"))
		t.Fatalf("detached process's timer slack %q, want %s ns (log: %s)", got, want, log)
	}
	if after, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err != nil || after != before {
		t.Errorf("the starting thread's timer slack is %d ns after it started the detached process, was %d ns (%v)", after, before, err)
	}
}
