package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
)

// run applies a planned op's files and finishes it. If staging fails,
// nothing has been renamed yet: the op is dropped and the error returned.
// Dropping and finishing do not heed ctx: once files may have moved, the
// record must be written even if the caller gave up (Ctrl-C).
func (c *Controller) run(ctx context.Context, op checkpoints.Op, res *Result) error {
	skipped, err := c.apply(ctx, op)
	ctx = context.WithoutCancel(ctx)
	if err != nil {
		if aerr := c.idx.AbortOp(ctx, op.ID); aerr != nil {
			return errors.Join(err, aerr)
		}
		return err
	}
	for _, s := range skipped {
		res.Skipped = append(res.Skipped, s)
		res.Restored = remove(res.Restored, s.Path)
		res.Deleted = remove(res.Deleted, s.Path)
	}
	paths := make([]string, len(skipped))
	for i, s := range skipped {
		paths[i] = s.Path
	}
	// The renames are durable before the op is recorded done; if that
	// fails the files have still moved, so the op is recorded all the same.
	serr := c.ws.SyncDirs(opPaths(op))
	return errors.Join(serr, c.idx.FinishOp(ctx, op.ID, checkpoints.Done{Skipped: paths}))
}

// apply puts every file of op in its After state: first it stages all new
// contents as verified temp files (any error: temps and the directories
// staging created removed, nothing changed), then deletes what must go
// (with the directories the index proves were created later, once empty)
// and then renames the staged files into place, removing first an emptied
// directory in a file's way and creating missing parents. Just before a
// path is replaced or deleted it is looked at once more: a path that
// turned unsafe, or whose content is neither what the plan recorded nor
// the target (someone edited it meanwhile), is skipped, not overwritten.
func (c *Controller) apply(ctx context.Context, op checkpoints.Op) ([]Skip, error) {
	tag := strconv.FormatInt(op.ID, 10)
	staged := make([]capture.Staged, len(op.Files))
	errs := make([]error, len(op.Files))
	// A file to restore below a path that is a file now (a type change)
	// is staged only once the plan's deletes have removed that file and
	// its parents are made: staging never writes outside the directory the
	// file will live in.
	late := make([]bool, len(op.Files))
	parallel(len(op.Files), func(i int) {
		if !op.Files[i].After.Exists() {
			return
		}
		if _, e, ok := c.blockingParent(op.Files[i].Path); ok && e.Kind == capture.Regular {
			late[i] = true
			return
		}
		staged[i], errs[i] = c.stage(ctx, op.Files[i], tag)
	})
	var skipped []Skip
	for i, err := range errs {
		if skippable(err) { // a parent turned unsafe since the plan: leave the path
			skipped = append(skipped, Skip{Path: op.Files[i].Path, Reason: reason(err)})
			errs[i] = nil
		}
	}
	if err := firstOf(errs); err != nil {
		for i, f := range op.Files {
			c.ws.Discard(staged[i])
			if !f.Before.Exists() {
				c.ws.Remove(f.Path, f.Before.Dirs) // only empty directories staging made
			}
		}
		return nil, err
	}
	skip := func(i int, err error) {
		c.ws.Discard(staged[i])
		skipped = append(skipped, Skip{Path: op.Files[i].Path, Reason: reason(err)})
	}
	for i, f := range op.Files {
		if f.After.Exists() {
			continue
		}
		if err := c.recheck(ctx, f); err != nil {
			skip(i, err)
		} else if err := c.ws.Remove(f.Path, f.After.Dirs); err != nil {
			skip(i, err)
		}
	}
	for i, f := range op.Files {
		if !f.After.Exists() || (staged[i].Rel == "" && !late[i]) {
			continue // deleted above, or skipped while staging
		}
		if c.ws.IsDir(f.Path) {
			if err := c.ws.RemoveEmptyDir(f.Path); err != nil {
				skip(i, err)
				continue
			}
		}
		if err := c.recheck(ctx, f); err != nil {
			skip(i, err)
		} else if err := c.ws.MakeParents(f.Path); err != nil {
			skip(i, err)
		} else if late[i] && c.stageLate(ctx, f, tag, &staged[i], skip, i) {
			continue
		} else if err := c.ws.Commit(staged[i]); err != nil {
			skipped = append(skipped, Skip{Path: f.Path, Reason: reason(err)})
		}
	}
	return skipped, nil
}

// stageLate stages a file apply deferred (see apply), reporting through
// skip and returning true when that failed.
func (c *Controller) stageLate(ctx context.Context, f checkpoints.OpFile, tag string, st *capture.Staged, skip func(int, error), i int) bool {
	s, err := c.stage(ctx, f, tag)
	if err != nil {
		skip(i, err)
		return true
	}
	*st = s
	return false
}

// errChangedMeanwhile is a Skip's reason for a path edited between a
// rewind's plan and its rename.
var errChangedMeanwhile = errors.New("changed while the rewind ran (left as it is, not recorded in the rewind)")

// recheck fails when f's path, just before it is replaced, is not in the
// state the plan recorded (nor already in the target state). Paths that
// are not regular files now pass: Commit and Remove judge them.
func (c *Controller) recheck(ctx context.Context, f checkpoints.OpFile) error {
	if c.beforeReplace != nil {
		c.beforeReplace(f.Path)
	}
	cur, err := c.cap.StateWith(ctx, f.Path, capture.Hash)
	if err != nil {
		if errors.Is(err, capture.ErrSymlink) || errors.Is(err, capture.ErrNotRegular) {
			return nil
		}
		return err
	}
	if !cur.Equal(f.Before) && !cur.Equal(f.After) {
		return fmt.Errorf("%s: %w", f.Path, errChangedMeanwhile)
	}
	return nil
}

// firstOf returns the first non-nil error, with how many others there were.
func firstOf(errs []error) error {
	var first error
	n := 0
	for _, err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("%w (and %d more errors)", first, n-1)
	}
	return first
}

// reason words an error for a Skip: without the package prefixes.
func reason(err error) string { return strings.TrimPrefix(err.Error(), "capture: ") }

// stage writes f's new content to a temp file next to it or, when a
// parent of it is a file the op deletes first, next to that file.
func (c *Controller) stage(ctx context.Context, f checkpoints.OpFile, tag string) (capture.Staged, error) {
	r, err := c.store.Open(ctx, *f.After.Content)
	if err != nil {
		return capture.Staged{}, fmt.Errorf("%s: %w", f.Path, err)
	}
	defer r.Close()
	return c.ws.Stage(f.Path, tag, r, f.After.Mode)
}
