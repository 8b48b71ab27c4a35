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

// Checkpoint is a turn as the index records it (number, time, prompt,
// pin, and the files it captured with their state at its start) and, as
// Checkpoints lists it, what the turn did to each file and its steps.
type Checkpoint struct {
	checkpoints.Checkpoint
	// Changes say what the turn did to each file: one per Files entry, in
	// the same order. Nil when not listed (Turn, ListOptions.NoFiles).
	Changes []FileChange
	// Steps are the turn's tool calls, in order, when listed with
	// ListOptions.Steps (then never nil); nil otherwise.
	Steps []Step
}

// ListOptions say which turns Checkpoints lists, and how.
type ListOptions struct {
	// Since, when at least 0, starts the list at the first active turn
	// numbered Since or later; Limit then counts forward from it.
	// Negative means no lower bound, and Limit counts back from the newest
	// turn. Limit is the most turns listed; 0 or less means all. Only the
	// page's rows are read: the newest 50 of 50,000 turns cost what 50 do.
	Since, Limit int
	// Each, when set, is called with every active turn numbered Since or
	// later, oldest first, one turn at a time, and Checkpoints returns no
	// turns: `ckpt list` of 50,000 turns prints as it reads. The index's
	// snapshot is held until the last call returns; an error from Each
	// stops the walk and is returned as is. Limit is not read.
	Each func(Checkpoint) error
	// NoFiles lists every active turn as recorded, without its files or
	// changes: cheaper (for a count, or a status line). Since, Limit,
	// Each, Lines and Steps are not read, and the page info is zero.
	NoFiles bool
	// Lines also counts the lines each file's change added and removed
	// (FileChange.Added, ...): it reads both sides of every file.
	Lines bool
	// Steps lists each turn's steps with it (Checkpoint.Steps).
	Steps bool
}

// Checkpoints returns the active turns, oldest first, each with what it
// did to each of its files (Checkpoint.Changes), and the page info of the whole active history (the turns there are, the
// newest one's number). A scanned turn's files include those its manifest
// and the next turn's disagree on (a shell's changes), with the manifests'
// states as start and end.
//
// A turn's kinds compare its start with its end: the state recorded when
// the next turn opened (recorded once, never overwritten), or, for a path
// of the open turn with no end recorded yet, the file now. After a
// conversation rewind the last active turn is open again, but the ends its
// hidden successor recorded still stand, so its kinds never reflect what
// the hidden turns did.
//
// The newest active turn is the open one, whose paths without a recorded
// end are compared with the files now.
func (c *Controller) Checkpoints(ctx context.Context, o ListOptions) ([]Checkpoint, checkpoints.PageInfo, error) {
	if o.NoFiles {
		cps, err := c.idx.Checkpoints(ctx)
		out := make([]Checkpoint, len(cps))
		for i, cp := range cps {
			out[i] = Checkpoint{Checkpoint: cp}
		}
		return out, checkpoints.PageInfo{}, err
	}
	steps, err := c.steps(ctx, o.Steps)
	if err != nil {
		return nil, checkpoints.PageInfo{}, err
	}
	listed := func(cp checkpoints.Checkpoint, open bool) (Checkpoint, error) {
		out, err := c.listed(ctx, cp, open, o.Lines)
		if steps != nil {
			out.Steps = append([]Step{}, steps[cp.Turn]...)
		}
		return out, err
	}
	switch {
	case o.Each != nil:
		info, err := c.idx.EachCheckpoint(ctx, max(o.Since, 0), func(cp checkpoints.Checkpoint, open bool) error {
			out, err := listed(cp, open)
			if err != nil {
				return err
			}
			return o.Each(out)
		})
		return nil, info, err
	case o.Since == 0 && o.Limit <= 0:
		cps, err := c.idx.Checkpoints(ctx)
		if err != nil {
			return nil, checkpoints.PageInfo{}, err
		}
		info := checkpoints.PageInfo{Total: len(cps), Last: -1}
		out := make([]Checkpoint, len(cps))
		for i, cp := range cps {
			if out[i], err = listed(cp, i == len(cps)-1); err != nil {
				return nil, info, err
			}
			info.Last = cp.Turn
		}
		return out, info, nil
	}
	cps, info, err := c.idx.CheckpointsPage(ctx, checkpoints.Page{Since: o.Since, Limit: o.Limit})
	if err != nil {
		return nil, info, err
	}
	out := make([]Checkpoint, len(cps))
	for i, cp := range cps {
		if out[i], err = listed(cp, cp.Turn == info.Last); err != nil {
			return nil, info, err
		}
	}
	return out, info, nil
}

// listed is a turn as the listings show it: its captures, and the files
// its manifests say a shell changed (a scanned turn whose end the next
// turn's manifest recorded), each with its change kind and, with lines,
// its line counts.
func (c *Controller) listed(ctx context.Context, cp checkpoints.Checkpoint, open, lines bool) (Checkpoint, error) {
	if err := c.withScanChanges(ctx, &cp); err != nil {
		return Checkpoint{}, err
	}
	out := Checkpoint{Checkpoint: cp, Changes: make([]FileChange, len(cp.Files))}
	for j, f := range cp.Files {
		out.Changes[j] = FileChange{Path: f.Path, Kind: c.kind(ctx, f, open)}
		if lines {
			c.lineCounts(ctx, f, open, &out.Changes[j])
		}
	}
	return out, nil
}

// steps returns the active turns' steps by turn number when want says so
// (nil otherwise).
func (c *Controller) steps(ctx context.Context, want bool) (map[int][]Step, error) {
	if !want {
		return nil, nil
	}
	all, err := c.idx.Steps(ctx)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	out := map[int][]Step{}
	for _, st := range all {
		out[st.Turn] = append(out[st.Turn], st)
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
// error wrapping ErrNoTurn. A negative n asks for the open turn (the
// active turn with the highest number), without its file snapshots: an
// error wrapping ErrNoOpenTurn when the session has none.
func (c *Controller) Turn(ctx context.Context, n int) (Checkpoint, error) {
	if n < 0 {
		cp, err := c.idx.OpenTurn(ctx)
		return Checkpoint{Checkpoint: cp}, err
	}
	cp, err := c.idx.Turn(ctx, n)
	if errors.Is(err, checkpoints.ErrNotFound) {
		return Checkpoint{}, fmt.Errorf("controller: turn %d: %w", n, c.noTurn(ctx, n))
	}
	return Checkpoint{Checkpoint: cp}, err
}

// noTurn is the error for turn n, which is not in the active history:
// ErrNoTurn, said as errTurnHidden when a turn numbered n is hidden.
func (c *Controller) noTurn(ctx context.Context, n int) error {
	turns, err := c.idx.TurnRecords(ctx)
	if err != nil {
		return ErrNoTurn
	}
	for _, t := range turns {
		if t.Number == n && t.Hidden {
			return errTurnHidden
		}
	}
	return ErrNoTurn
}
