package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// BenchmarkUndoRedo1000 times an undo and a redo of a code rewind of 1,000
// modified 8 KiB files (each reads the journal, plans, stores the current
// bytes and applies), and History once the journal holds 20 such ops.
func BenchmarkUndoRedo1000(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	var undo, redo, hist time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newEnv(b)
		for j := 0; j < n; j++ {
			e.write(fmt.Sprintf("d%02d/f%04d.go", j%20, j), string(sourceLike(int64(j), 8<<10)))
		}
		e.turn("edit everything")
		for j := 0; j < n; j++ {
			e.edit(fmt.Sprintf("d%02d/f%04d.go", j%20, j), string(sourceLike(int64(j+n), 8<<10)))
		}
		e.rewind(0, checkpoints.ScopeCode, controller.RewindOptions{})
		for k := 0; k < 9; k++ {
			e.undo(controller.RewindOptions{})
			e.redo(controller.RewindOptions{})
		}
		b.StartTimer()
		start := time.Now()
		if res, err := e.c.Undo(ctx, controller.RewindOptions{}); err != nil || len(res.Restored) != n {
			b.Fatalf("undo: %d restored, %v", len(res.Restored), err)
		}
		undo += time.Since(start)
		start = time.Now()
		if res, err := e.c.Redo(ctx, controller.RewindOptions{}); err != nil || len(res.Restored) != n {
			b.Fatalf("redo: %d restored, %v", len(res.Restored), err)
		}
		redo += time.Since(start)
		start = time.Now()
		if h, err := e.c.History(ctx); err != nil || len(h) != 21 {
			b.Fatalf("history: %d entries, %v", len(h), err)
		}
		hist += time.Since(start)
	}
	b.ReportMetric(float64(undo.Milliseconds())/float64(b.N), "undo-ms")
	b.ReportMetric(float64(redo.Milliseconds())/float64(b.N), "redo-ms")
	b.ReportMetric(float64(hist.Milliseconds())/float64(b.N), "history-ms")
}
