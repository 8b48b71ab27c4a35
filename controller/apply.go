package controller

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
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
	// Writing is CPU work (decompressing, hashing) for a few workers. Where
	// the file system has a barrier (capture.Barrier: one syncfs), the
	// files are written and closed, and made durable together once all
	// are written. Elsewhere each file written goes to a larger pool that
	// fsyncs it, so the file system commits many files per journal
	// transaction.
	barrier := c.ws.NewBarrier()
	if barrier != nil {
		defer barrier.Close()
	}
	order := byDirTurns(op.Files)
	staged, late, skipped, err := c.stageAll(ctx, op, tag, order, barrier)
	if err != nil {
		return nil, err
	}
	skipped = c.applyDeletes(ctx, op, staged, skipped)
	// The writes touch one path each, so two workers share them: every
	// staged file's directory exists (the temp file is in it), a late
	// file's parents are made by whoever comes first, and a directory in
	// a file's way holds nothing the plan keeps.
	why := make([]error, len(op.Files))
	parallel(len(op.Files), func(k int) {
		i := order[k]
		if f := op.Files[i]; f.After.Exists() && (staged[i].Rel != "" || late[i]) {
			why[i] = c.replace(ctx, f, tag, &staged[i], late[i])
		}
	})
	for i, err := range why {
		if err != nil {
			skipped = append(skipped, Skip{Path: op.Files[i].Path, Reason: reason(err)})
		}
	}
	return skipped, nil
}

// stageAll stages the new content of every file of op that exists after
// it, in the given order, made durable through barrier (nil: each file
// fsynced by a pool of syncWorkers). A file to restore below a path that
// is a file now (a type change) is left for later (late): it is staged
// only once the plan's deletes have removed that file and its parents are
// made, so staging never writes outside the directory the file will live
// in. A file whose parent turned unsafe since the plan is skipped. Any
// other error discards every staged file and removes the directories
// staging created.
func (c *Controller) stageAll(ctx context.Context, op checkpoints.Op, tag string, order []int, barrier *capture.Barrier) (staged []capture.Staged, late []bool, skipped []Skip, err error) {
	staged = make([]capture.Staged, len(op.Files))
	errs := make([]error, len(op.Files))
	late = make([]bool, len(op.Files))
	syncs := make(chan int, syncWorkers)
	var synced sync.WaitGroup
	for w := 0; barrier == nil && w < syncWorkers; w++ {
		synced.Add(1)
		go func() {
			defer synced.Done()
			for i := range syncs {
				errs[i] = c.ws.SyncStaged(&staged[i])
			}
		}()
	}
	underFile := c.underFile()
	// The blobs' rows are read stageChunk at a time, each chunk with one
	// query (cas.Prefetch), instead of one query per file.
	for lo := 0; lo < len(order); lo += stageChunk {
		part := order[lo:min(len(order), lo+stageChunk)]
		var ids []cas.ID
		for _, i := range part {
			if f := op.Files[i]; f.After.Exists() {
				ids = append(ids, *f.After.Content)
			}
		}
		pf, err := c.store.Prefetch(ctx, ids)
		if err != nil {
			pf = nil // each file's own Open reads its row, and says what fails
		}
		parallel(len(part), func(k int) {
			i := part[k]
			if !op.Files[i].After.Exists() {
				return
			}
			if underFile(op.Files[i].Path) {
				late[i] = true
				return
			}
			if staged[i], errs[i] = c.stage(ctx, op.Files[i], tag, barrier, false, pf); errs[i] == nil && barrier == nil {
				syncs <- i
			}
		})
	}
	close(syncs)
	synced.Wait()
	for i, err := range errs {
		if skippable(err) { // a parent turned unsafe since the plan: leave the path
			skipped = append(skipped, Skip{Path: op.Files[i].Path, Reason: reason(err)})
			errs[i] = nil
		}
	}
	err = firstOf(errs)
	if err == nil && barrier != nil && slices.ContainsFunc(staged, func(s capture.Staged) bool { return s.Rel != "" }) {
		err = barrier.Sync() // when it fails none is durable: the op fails whole
	}
	if err != nil {
		for i, f := range op.Files {
			c.ws.Discard(staged[i])
			if !f.Before.Exists() {
				c.ws.Remove(f.Path, f.Before.Dirs) // only empty directories staging made
			}
		}
		return nil, nil, nil, err
	}
	return staged, late, skipped, nil
}

// underFile returns a test, safe for concurrent use, of whether a path's
// parent is a file now. Files share directories: each directory is
// looked at once.
func (c *Controller) underFile() func(p string) bool {
	var mu sync.Mutex
	blocked := map[string]bool{} // directory -> a parent of it is a file now
	return func(p string) bool {
		dir := path.Dir(p)
		mu.Lock()
		b, ok := blocked[dir]
		mu.Unlock()
		if !ok {
			_, e, found := c.ws.Blocker(p)
			b = found && e.Kind == capture.Regular
			mu.Lock()
			blocked[dir] = b
			mu.Unlock()
		}
		return b
	}
}

// applyDeletes deletes every file of op that is absent after it, with
// the directories the index proves were created later once empty. A
// file that changed since the plan, or cannot be removed, is skipped
// (its staged content, if any, discarded) and added to skipped.
func (c *Controller) applyDeletes(ctx context.Context, op checkpoints.Op, staged []capture.Staged, skipped []Skip) []Skip {
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
	return skipped
}

// replace puts the file f in place: it removes an emptied directory in the
// way, looks at the path once more (through the rename's own directory
// handle, or for a late file recheck, before it is staged), and renames
// the staged file over the path. An error says why the path was
// skipped; the staged file is gone then.
func (c *Controller) replace(ctx context.Context, f checkpoints.OpFile, tag string, st *capture.Staged, late bool) error {
	// Only a path the plan found absent can be a directory in the way: the
	// plan records a directory to remove as absent.
	if !f.Before.Exists() && c.ws.IsDir(f.Path) {
		if err := c.ws.RemoveEmptyDir(f.Path); err != nil {
			c.ws.Discard(*st)
			return err
		}
	}
	if !late {
		// The last look goes through the directory handle of the rename.
		c.beforeLastLook(f.Path)
		return c.ws.CommitIf(*st, f.Seen, func(cur checkpoints.State) error { return unchanged(f, cur) })
	}
	if err := c.recheck(ctx, f); err != nil {
		c.ws.Discard(*st)
		return err
	}
	if err := c.ws.MakeParents(f.Path); err != nil {
		return err
	}
	s, err := c.stage(ctx, f, tag, nil, true, nil)
	if err != nil {
		return err
	}
	*st = s
	return c.ws.Commit(*st)
}

// errChangedMeanwhile is a Skip's reason for a path edited between a
// rewind's plan and its rename.
var errChangedMeanwhile = errors.New("changed while the rewind ran (left as it is, not recorded in the rewind)")

// recheck fails when f's path, just before it is replaced, is not in the
// state the plan recorded (nor already in the target state). Paths that
// are not regular files now pass: Commit and Remove judge them.
func (c *Controller) recheck(ctx context.Context, f checkpoints.OpFile) error {
	c.beforeLastLook(f.Path)
	cur, err := c.cap.StateWith(ctx, f.Path, capture.Hash)
	if err != nil {
		if errors.Is(err, capture.ErrSymlink) || errors.Is(err, capture.ErrNotRegular) {
			return nil
		}
		return err
	}
	return unchanged(f, cur)
}

// unchanged fails when cur, f's path's state now, is neither the state the
// plan recorded nor the target.
func unchanged(f checkpoints.OpFile, cur checkpoints.State) error {
	if !cur.Equal(f.Before) && !cur.Equal(f.After) {
		return fmt.Errorf("%s: %w", f.Path, errChangedMeanwhile)
	}
	return nil
}

// beforeLastLook calls the test hook (SetBeforeReplace), if any.
func (c *Controller) beforeLastLook(rel string) {
	if c.beforeReplace != nil {
		c.hookMu.Lock()
		c.beforeReplace(rel)
		c.hookMu.Unlock()
	}
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

// stage writes f's new content to a temp file next to it: synced (sync),
// left for barrier's Sync, or else for capture.Workspace.SyncStaged. The
// content is read through pf when it is not nil.
func (c *Controller) stage(ctx context.Context, f checkpoints.OpFile, tag string, barrier *capture.Barrier, sync bool, pf *cas.Prefetch) (capture.Staged, error) {
	open := c.store.Open
	if pf != nil {
		open = pf.Open
	}
	r, err := open(ctx, *f.After.Content)
	if err != nil {
		return capture.Staged{}, fmt.Errorf("%s: %w", f.Path, err)
	}
	defer r.Close()
	switch {
	case sync:
		return c.ws.Stage(f.Path, tag, r, f.After.Mode)
	case barrier != nil:
		return c.ws.StageFor(barrier, f.Path, tag, r, f.After.Mode)
	}
	return c.ws.StageUnsynced(f.Path, tag, r, f.After.Mode)
}

// syncWorkers is how many staged files are fsynced at once. A file
// system commits the fsyncs that wait together in one journal
// transaction: on ext4, 1,000 files of 8 KiB took 0.35-0.5 s to sync two
// at a time and 0.05-0.07 s thirty-two at a time. Each worker holds one
// open file, and the queue as many again.
const syncWorkers = 32

// stageChunk is how many files' blob rows are read with one query while
// staging: the rows held at once are at most 64 KiB each.
const stageChunk = 256

// byDirTurns orders files so that consecutive ones are in different
// directories where it can: one from each directory in turn. Creating or
// renaming a file locks its directory, so two workers going through one
// directory's files side by side mostly wait for each other (the kernel
// spins on the lock); taking directories in turns lets them work apart.
func byDirTurns(files []checkpoints.OpFile) []int {
	var dirs [][]int
	at := map[string]int{}
	for i, f := range files {
		d := path.Dir(f.Path)
		j, ok := at[d]
		if !ok {
			j = len(dirs)
			at[d] = j
			dirs = append(dirs, nil)
		}
		dirs[j] = append(dirs[j], i)
	}
	out := make([]int, 0, len(files))
	for len(out) < len(files) {
		for j, q := range dirs {
			if len(q) > 0 {
				out = append(out, q[0])
				dirs[j] = q[1:]
			}
		}
	}
	return out
}
