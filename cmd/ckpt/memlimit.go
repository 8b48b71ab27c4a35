package main

import (
	"os"
	"runtime/debug"
)

// memoryLimit is the soft limit on the Go heap of one ckpt process. A scan
// allocates many short-lived buffers (a compressed copy of each file) while
// its live data stays around 30 MiB; with the default GOGC alone the heap
// goal trailed the allocation rate and a first scan of Go's source tree
// peaked at 160-180 MiB RSS. Near the limit the collector runs more often
// instead. It is soft: a command that truly needs more memory gets it.
// GOMEMLIMIT, when set, wins.
const memoryLimit = 48 << 20

func init() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}
