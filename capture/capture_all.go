package capture

import (
	"context"
	"fmt"

	"github.com/ckpt/ckpt/checkpoints"
)

// CaptureAll is Capture for many paths as one durable step: the new blobs
// of all of them go into one blob-store commit, made durable before one
// index transaction records the snapshots that name them, so n paths cost
// two commits rather than 2n. errs[i] is nil when paths[i] was captured
// (or was already), else what Capture would have returned for it; a path
// that fails records nothing, and the others are still captured. Giving a
// path twice records it once (the first wins). It is safe for concurrent
// use.
func (c *Capturer) CaptureAll(ctx context.Context, paths []string) ([]Result, []error) {
	return c.CaptureAllIn(ctx, checkpoints.StepRef{}, paths)
}

// CaptureAllIn is CaptureAll into the step ref names (see CaptureIn).
func (c *Capturer) CaptureAllIn(ctx context.Context, ref checkpoints.StepRef, paths []string) ([]Result, []error) {
	res := make([]Result, len(paths))
	errs := make([]error, len(paths))
	release, err := c.store.Hold(ctx) // the new blobs until their rows commit
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return res, errs
	}
	defer release()
	batch := c.store.NewBatch()
	defer batch.Abort()
	var (
		turnID  int64
		pending []int // indexes of paths to record
		snaps   []checkpoints.FileSnap
	)
	for i, p := range paths {
		rel, err := c.ws.Rel(p)
		if err != nil {
			errs[i] = err
			continue
		}
		cg, err := c.idx.CapturingIn(ctx, rel, ref)
		turn := cg.Turn
		if err != nil {
			errs[i] = fmt.Errorf("capture: %s: %w", rel, err)
			continue
		}
		if len(pending) > 0 && turn.ID != turnID {
			// Another process opened a turn meanwhile: record what was
			// read so far into its turn first, then go on in the new one.
			c.record(ctx, batch, turnID, pending, snaps, res, errs)
			batch, pending, snaps = c.store.NewBatch(), nil, nil
			defer batch.Abort()
		}
		turnID = turn.ID
		res[i] = Result{Path: rel, Turn: turn.Turn, Step: cg.Step}
		if !cg.Needed() {
			res[i].Snap = *cg.Snap
			continue
		}
		st, err := c.StateWith(c.withPrevious(ctx, rel), rel, batch.Put)
		if err != nil {
			errs[i] = err
			continue
		}
		res[i].Snap = checkpoints.FileSnap{Path: rel, Content: st.Content, Mode: st.Mode, Size: st.Size, Dirs: st.Dirs, Step: cg.Step}
		pending = append(pending, i)
		snaps = append(snaps, res[i].Snap)
	}
	c.record(ctx, batch, turnID, pending, snaps, res, errs)
	return res, errs
}

// record commits batch, then records snaps (of paths[pending[k]]) in one
// transaction, and says in res and errs what became of each.
func (c *Capturer) record(ctx context.Context, batch interface{ Commit(context.Context) error }, turnID int64, pending []int, snaps []checkpoints.FileSnap, res []Result, errs []error) {
	if len(pending) == 0 {
		return
	}
	fail := func(err error) {
		for _, i := range pending {
			errs[i] = fmt.Errorf("capture: %s: %w", res[i].Path, err)
		}
	}
	if err := batch.Commit(ctx); err != nil {
		fail(err)
		return
	}
	added, err := c.idx.AddSnaps(ctx, turnID, snaps)
	if err != nil {
		fail(err)
		return
	}
	for k, i := range pending {
		res[i].Recorded = added[k]
	}
}
