package controller

import (
	"context"

	"github.com/ckpt/ckpt/checkpoints"
)

// EachCheckpoint calls fn with every active turn numbered since or later,
// oldest first, with change kinds as Checkpoints gives them, one turn at a
// time (see checkpoints.Index.EachCheckpoint): `ckpt list` of 50,000 turns
// prints as it reads. The index's snapshot is held until the last call
// returns. The PageInfo describes the whole active history, as
// CheckpointsPage's does; an error from fn stops the walk and is returned
// as is.
func (c *Controller) EachCheckpoint(ctx context.Context, since int, fn func(Checkpoint) error) (PageInfo, error) {
	return c.idx.EachCheckpoint(ctx, since, func(cp checkpoints.Checkpoint, open bool) error {
		out, err := c.listed(ctx, cp, open)
		if err != nil {
			return err
		}
		return fn(out)
	})
}
