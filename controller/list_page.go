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
		if out[i], err = c.listed(ctx, cp, cp.Turn == info.Last); err != nil {
			return nil, info, err
		}
	}
	return out, info, nil
}
