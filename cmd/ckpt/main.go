// Command ckpt is the rewind safety net for coding agents: it captures files
// before an agent edits them and rewinds code, conversation or both to any
// earlier turn, undoably. Run `ckpt --help`, or `ckpt demo` for a tour.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/ckpt/ckpt/internal/termquiet"
)

// init runs after every package's init: Bubble Tea's has found the
// terminal unqueried (see termquiet), and the commands see the TERM they
// were started with. It sets the heap's soft limit (memoryLimit) too.
func init() {
	termquiet.Release()
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}

// memoryLimit is the soft limit on the Go heap of one ckpt process. A scan
// allocates many short-lived buffers (a compressed copy of each file) while
// its live data stays around 30 MiB; with the default GOGC alone the heap
// goal trailed the allocation rate and a first scan of Go's source tree
// peaked at 160-180 MiB RSS. Near the limit the collector runs more often
// instead. It is soft: a command that truly needs more memory gets it.
// GOMEMLIMIT, when set, wins.
const memoryLimit = 48 << 20

func main() {
	// Nothing reads a heap profile of the CLI: sampling one keeps ~1.4 MiB
	// of profiling buckets in every command's peak memory.
	runtime.MemProfileRate = 0
	// A ckpt process lives for milliseconds: collecting garbage at 4x the
	// live heap instead of 2x saves ~15% of `ckpt list` on 10,000 turns.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	exitAfterRun = true
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
