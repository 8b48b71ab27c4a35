package checkpoints

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

// BenchmarkLastKnownMany1000After10Rewinds reads what ckpt last knew of
// 1,000 paths in a session where each of ten turns captured all of them
// and a rewind then wrote all of them: the rewind planner's conflict
// lookup. "reference" is the per-path replay it replaced.
func BenchmarkLastKnownMany1000After10Rewinds(b *testing.B) {
	const n, rewinds = 1000, 10
	ctx := context.Background()
	x, err := Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	paths := make([]string, n)
	for j := range paths {
		paths[j] = fmt.Sprintf("d%02d/f%04d.go", j%20, j)
	}
	blob := func(j, k int) *cas.ID {
		id := cas.Sum(fmt.Appendf(nil, "%d/%d", j, k))
		return &id
	}
	var ends []PathEnd
	for k := 0; k <= rewinds; k++ {
		cp, err := x.BeginTurn(ctx, fmt.Sprint("turn ", k), ends, nil)
		if err != nil {
			b.Fatal(err)
		}
		if k == rewinds {
			break
		}
		snaps := make([]FileSnap, n)
		op := Op{Kind: OpRewind, Scope: ScopeCode, Turn: cp.Turn}
		ends = ends[:0]
		for j, p := range paths {
			snaps[j] = FileSnap{Path: p, Content: blob(j, 2*k), Mode: 0o644, Size: 8192}
			op.Files = append(op.Files, OpFile{Path: p, Before: State{Content: blob(j, 2*k+1), Mode: 0o644}, After: State{Content: blob(j, 2*k), Mode: 0o644}})
			ends = append(ends, PathEnd{Path: p, State: State{Content: blob(j, 2*k), Mode: 0o644}})
		}
		if _, err := x.AddSnaps(ctx, cp.ID, snaps); err != nil {
			b.Fatal(err)
		}
		if op, err = x.PlanOp(ctx, op); err != nil {
			b.Fatal(err)
		}
		if err := x.FinishOp(ctx, op.ID, Done{}); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		fn   func(context.Context, []string) (map[string]Known, error)
	}{
		{"set", x.LastKnownMany},
		{"reference", func(ctx context.Context, p []string) (map[string]Known, error) { return refLastKnownMany(ctx, x, p) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				m, err := c.fn(ctx, paths)
				if err != nil || len(m) != n {
					b.Fatalf("%d known, %v", len(m), err)
				}
			}
		})
	}
}
