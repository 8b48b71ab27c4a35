package controller

import (
	"context"
)

// CheckpointsPage is Checkpoints for one page of the active turns (see
// checkpoints.Page), with the same change kinds: the newest active turn is
// the open one, whose paths without a recorded end are compared with the
// files now. It reads only the page's rows.
func (c *Controller) CheckpointsPage(ctx context.Context, p Page) ([]Checkpoint, PageInfo, error) {
	cps, info, err := c.idx.CheckpointsPage(ctx, p)
	if err != nil {
		return nil, info, err
	}
	out := make([]Checkpoint, len(cps))
	for i, cp := range cps {
		open := cp.Turn == info.Last
		out[i] = Checkpoint{Checkpoint: cp, Kinds: make([]ChangeKind, len(cp.Files))}
		for j, f := range cp.Files {
			out[i].Kinds[j] = c.kind(ctx, f, open)
		}
	}
	return out, info, nil
}
