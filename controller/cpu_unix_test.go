//go:build unix

package controller_test

import (
	"syscall"
	"testing"
	"time"
)

// processCPU returns the CPU time (user+sys) this process has used: on a
// shared machine it moves far less than wall time with other load.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
