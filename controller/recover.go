package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
)

// recoverPending finishes an op a crash interrupted: it re-applies the
// files not yet in their After state. If a blob can no longer be read it
// rolls the op back instead, putting every file back to its Before state.
// Its work is linear in the op's files and their depth. It heeds ctx
// until files start moving: a recovery stopped before then returns
// ctx's error and leaves the op pending, and the next Open goes on with
// it from the files not yet in place.
func (c *Controller) recoverPending(ctx context.Context) error {
	if _, err := c.idx.PendingOp(ctx); errors.Is(err, checkpoints.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	return c.withLock(ctx, func() error {
		op, err := c.idx.PendingOp(ctx) // again, under the lock
		if errors.Is(err, checkpoints.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		// Staging may have put a temp file in any directory on a file's
		// way (see stage): each is listed once.
		c.ws.CleanStaged(opPaths(op), strconv.FormatInt(op.ID, 10))
		todo := op
		todo.Files = nil
		for _, f := range op.Files {
			if recoverHook != nil {
				recoverHook(f.Path)
			}
			if err := ctx.Err(); err != nil {
				return interrupted(err)
			}
			cur, err := c.cap.StateWith(ctx, f.Path, capture.Hash)
			if err == nil && cur.Equal(f.After) {
				continue
			}
			todo.Files = append(todo.Files, f)
		}
		c.recovered = fmt.Sprintf("finished an interrupted %s of turn %d (scope %s)", op.Kind, op.Turn, op.Scope)
		skipped, err := c.apply(ctx, todo)
		if err != nil && ctx.Err() != nil {
			// Stopped (Ctrl-C, SIGTERM), not failed: the op stays pending
			// and the next command goes on from the files not yet done.
			return interrupted(ctx.Err())
		}
		ctx = context.WithoutCancel(ctx)
		if err != nil {
			c.recovered = fmt.Sprintf("rolled back an interrupted %s of turn %d (scope %s)", op.Kind, op.Turn, op.Scope)
			back := op
			for i := range back.Files {
				// The files already renamed hold After: that is what
				// apply's re-check must find before putting Before back.
				back.Files[i].Before, back.Files[i].After = back.Files[i].After, back.Files[i].Before
			}
			if _, berr := c.apply(ctx, back); berr != nil {
				return fmt.Errorf("an interrupted rewind can neither be finished nor rolled back: %w", errors.Join(err, berr))
			}
			return errors.Join(c.ws.SyncDirs(opPaths(back)), c.idx.AbortOp(ctx, op.ID))
		}
		paths := make([]string, len(skipped))
		for i, s := range skipped {
			paths[i] = s.Path
		}
		// Every file's directory, not only todo's: the crashed process may
		// have renamed some files without syncing their directories, and
		// the op is recorded done only once every rename is durable.
		serr := c.ws.SyncDirs(opPaths(op))
		return errors.Join(serr, c.idx.FinishOp(ctx, op.ID, checkpoints.Done{Skipped: paths}))
	})
}

// recoverHook, when not nil, is called with each file recoverPending looks
// at (tests stop a recovery midway with it).
var recoverHook func(rel string)

// interrupted is the error of a recovery stopped by its context.
func interrupted(err error) error {
	return fmt.Errorf("controller: finishing an interrupted rewind stopped; the next command goes on with it: %w", err)
}

// skippable reports whether err is about a path ckpt leaves alone (a
// symlink, a non-regular file, a VCS directory): skipped with its reason.
func skippable(err error) bool {
	return errors.Is(err, capture.ErrSymlink) || errors.Is(err, capture.ErrNotRegular) || errors.Is(err, capture.ErrVCSDir)
}

// opPaths returns the paths of an op's files.
func opPaths(op checkpoints.Op) []string {
	out := make([]string, len(op.Files))
	for i, f := range op.Files {
		out[i] = f.Path
	}
	return out
}

func remove(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
