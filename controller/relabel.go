package controller

import "context"

// RelabelOpenTurn gives the open turn the prompt to when its prompt is
// still from (see checkpoints.Index.Relabel), and reports whether it did.
func (c *Controller) RelabelOpenTurn(ctx context.Context, from, to string) (bool, error) {
	return c.idx.Relabel(ctx, from, to)
}
