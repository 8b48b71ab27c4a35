package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// BenchmarkRewind1000After10Rewinds rewinds 1,000 modified 8 KiB files in
// a session that rewound the same 1,000 files ten times before: the
// rewind's reading of what ckpt last knew of each path must not grow with
// that history. Reported as ckpt-ms per rewind (setup excluded).
func BenchmarkRewind1000After10Rewinds(b *testing.B) {
	const n, earlier = 1000, 10
	ctx := context.Background()
	paths := make([]string, n)
	for j := range paths {
		paths[j] = fmt.Sprintf("d%02d/f%04d.go", j%20, j)
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newEnv(b)
		for j, p := range paths {
			e.write(p, string(sourceLike(int64(j), 8<<10)))
		}
		prepare := func(k int) int {
			cp := e.turn(fmt.Sprintf("edit everything, %d", k))
			_, errs := e.c.Capture(ctx, controller.CaptureOptions{Paths: paths})
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			for j, p := range paths {
				e.write(p, string(sourceLike(int64(j+(k+1)*n), 8<<10)))
			}
			return cp.Turn
		}
		for k := 0; k < earlier; k++ {
			res, err := e.c.Rewind(ctx, controller.Target{Turn: prepare(k)}, checkpoints.ScopeCode, controller.RewindOptions{})
			if err != nil || len(res.Restored) != n {
				b.Fatalf("earlier rewind %d: %d restored, %v", k, len(res.Restored), err)
			}
		}
		turn := prepare(earlier)
		b.StartTimer()
		start := time.Now()
		res, err := e.c.Rewind(ctx, controller.Target{Turn: turn}, checkpoints.ScopeCode, controller.RewindOptions{})
		d := time.Since(start)
		b.StopTimer()
		if err != nil || len(res.Restored) != n {
			b.Fatalf("rewind: %d restored, %v", len(res.Restored), err)
		}
		total += d
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ckpt-ms")
}
