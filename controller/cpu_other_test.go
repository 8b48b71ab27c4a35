//go:build !unix

package controller_test

import (
	"testing"
	"time"
)

// processCPU is 0 where getrusage is missing: the benchmarks then report
// no CPU of their own.
func processCPU(*testing.B) time.Duration { return 0 }
