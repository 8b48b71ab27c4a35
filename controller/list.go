package controller

import (
	"context"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
)

// ChangeKind says what a turn did to a path.
type ChangeKind string

// The change kinds of DESIGN.md.
const (
	// Created: the path did not exist at the turn's start.
	Created ChangeKind = "created"
	// Deleted: it existed at the start and was gone at the end (when the
	// next turn opened; for the open turn, now).
	Deleted ChangeKind = "deleted"
	// Modified: anything else.
	Modified ChangeKind = "modified"
)

// Checkpoint is a turn's record with what the turn did to each file.
type Checkpoint struct {
	checkpoints.Checkpoint
	Kinds []ChangeKind // one per Files entry, same order
}

// Checkpoints returns the active turns, oldest first, with change kinds.
func (c *Controller) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	cps, err := c.idx.Checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Checkpoint, len(cps))
	for i, cp := range cps {
		open := i == len(cps)-1
		out[i] = Checkpoint{Checkpoint: cp, Kinds: make([]ChangeKind, len(cp.Files))}
		for j, f := range cp.Files {
			out[i].Kinds[j] = c.kind(f, open)
		}
	}
	return out, nil
}

func (c *Controller) kind(f checkpoints.FileSnap, open bool) ChangeKind {
	if f.Content == nil {
		return Created
	}
	gone := f.End != nil && !f.End.Exists()
	if open {
		e, err := c.ws.Inspect(f.Path)
		gone = err == nil && e.Kind == capture.Absent
	}
	if gone {
		return Deleted
	}
	return Modified
}
