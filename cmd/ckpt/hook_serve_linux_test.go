package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The hook server an install starts runs with a timer slack of at least 1 ms on
// every thread, the Go runtime's monitor thread among them (issue 27):
// it polls every 20 µs while the server works, and wakes about once a
// millisecond with that slack.
func TestHookServerRunsWithTimerSlack(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	pid := r.waitServer()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("the hook server's threads: %v", err)
	}
	for _, task := range tasks {
		// Each thread's slack is at /proc/TID, not under task/.
		b, err := os.ReadFile(filepath.Join("/proc", filepath.Base(task), "timerslack_ns"))
		if errors.Is(err, fs.ErrPermission) {
			t.Skipf("another process's timer slack is not readable here (ptrace scope): %v", err)
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread ended
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil || got < int64(time.Millisecond) {
			t.Errorf("hook server thread %s: timer slack %q ns, want at least 1 ms", filepath.Base(task), b)
		}
	}
}
