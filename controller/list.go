package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
)

// ChangeKind says what a turn did to a path.
type ChangeKind string

// The change kinds of docs/design.md and docs/json.md, and Unchanged.
const (
	// Created: the path did not exist at the turn's start.
	Created ChangeKind = "created"
	// Deleted: it existed at the start and was gone at the end (when the
	// next turn opened; for the open turn, now).
	Deleted ChangeKind = "deleted"
	// Modified: anything else.
	Modified ChangeKind = "modified"
	// Unchanged: captured, but at the turn's end it held the same bytes
	// and mode as at its start (a file created and removed again within
	// the turn included). A rewind to the turn leaves it alone unless a
	// later turn changed it.
	Unchanged ChangeKind = "unchanged"
)

// Mark is how every front-end shows the kind beside a path: + created,
// - deleted, = unchanged, ~ modified (the web page's app.js keeps the same
// table; a test holds the two together).
func (k ChangeKind) Mark() string {
	switch k {
	case Created:
		return "+"
	case Deleted:
		return "-"
	case Unchanged:
		return "="
	}
	return "~"
}

// Checkpoint is a turn's record with what the turn did to each file.
type Checkpoint struct {
	checkpoints.Checkpoint
	Kinds []ChangeKind // one per Files entry, same order
}

// Checkpoints returns the active turns, oldest first, with change kinds.
// A scanned turn's files include those its manifest and the next turn's
// disagree on (a shell's changes), with the manifests' states as start and
// end.
//
// A turn's kinds compare its start with its end: the state recorded when
// the next turn opened (recorded once, never overwritten), or, for a path
// of the open turn with no end recorded yet, the file now. After a
// conversation rewind the last active turn is open again, but the ends its
// hidden successor recorded still stand, so its kinds never reflect what
// the hidden turns did.
func (c *Controller) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	cps, err := c.idx.Checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Checkpoint, len(cps))
	for i, cp := range cps {
		if out[i], err = c.listed(ctx, cp, i == len(cps)-1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// listed is a turn as the listings show it: its captures, and the files
// its manifests say a shell changed (a scanned turn whose end the next
// turn's manifest recorded), each with its change kind.
func (c *Controller) listed(ctx context.Context, cp checkpoints.Checkpoint, open bool) (Checkpoint, error) {
	if err := c.withScanChanges(ctx, &cp); err != nil {
		return Checkpoint{}, err
	}
	out := Checkpoint{Checkpoint: cp, Kinds: make([]ChangeKind, len(cp.Files))}
	for j, f := range cp.Files {
		out.Kinds[j] = c.kind(ctx, f, open)
	}
	return out, nil
}

func (c *Controller) kind(ctx context.Context, f checkpoints.FileSnap, open bool) ChangeKind {
	end := f.End
	if end == nil && open {
		if st, err := c.cap.StateWith(ctx, f.Path, capture.Hash); err == nil {
			end = &st
		}
	}
	switch {
	case end == nil && f.Content == nil:
		return Created
	case end == nil:
		return Modified
	case end.Equal(f.State()):
		return Unchanged
	case f.Content == nil:
		return Created
	case !end.Exists():
		return Deleted
	}
	return Modified
}

// Turn returns the active turn numbered n with its file snapshots, or an
// error wrapping ErrNoTurn.
func (c *Controller) Turn(ctx context.Context, n int) (Record, error) {
	cp, err := c.idx.Turn(ctx, n)
	if errors.Is(err, checkpoints.ErrNotFound) {
		return checkpoints.Checkpoint{}, fmt.Errorf("controller: turn %d: %w", n, c.noTurn(ctx, n))
	}
	return cp, err
}

// noTurn is the error for turn n, which is not in the active history:
// ErrNoTurn, and ErrTurnHidden as well when a turn numbered n is hidden.
func (c *Controller) noTurn(ctx context.Context, n int) error {
	turns, err := c.idx.TurnRecords(ctx)
	if err != nil {
		return ErrNoTurn
	}
	for _, t := range turns {
		if t.Number == n && t.Hidden {
			return hiddenTurn{}
		}
	}
	return ErrNoTurn
}

// hiddenTurn is ErrTurnHidden that is also ErrNoTurn.
type hiddenTurn struct{}

func (hiddenTurn) Error() string { return ErrTurnHidden.Error() }

func (hiddenTurn) Is(target error) bool { return target == ErrTurnHidden || target == ErrNoTurn }

// Turns returns the active turns, oldest first, as recorded: without their
// files or change kinds, so cheaper than Checkpoints (for a count, or a
// status line).
func (c *Controller) Turns(ctx context.Context) ([]Record, error) {
	return c.idx.Checkpoints(ctx)
}
