package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// plan compares each target with what is on disk now. Paths that already
// match are dropped; unsafe paths are skipped with the reason; for the rest
// the current bytes are stored (unless dryRun), durably before plan
// returns, so the op can be undone. Every target blob must be present, or
// nothing is planned. Files are read by two workers (hashing and
// compressing is CPU work) and their bytes go into one batch commit.
//
// Obstacles are judged against the tree as the plan will leave it, since
// apply deletes before it writes: a file in the way of a path's parent
// directory is no obstacle when the plan deletes it (the path is then
// absent, and its parents are proven created later), and a directory in
// the way of a file is none when every file in it is deleted by the plan
// (apply removes the emptied directory).
func (c *Controller) plan(ctx context.Context, targets map[string]checkpoints.State, dryRun bool) ([]checkpoints.OpFile, []Skip, error) {
	files, skipped, commit, err := c.planUncommitted(ctx, targets, dryRun)
	if err == nil {
		err = commit()
	}
	if err != nil {
		return nil, nil, err
	}
	return files, skipped, nil
}

// planUncommitted is plan leaving the commit of the current bytes to the
// caller: commit makes them durable (it must be called, once, and return
// nil before an op naming them is recorded; it does nothing for a dry
// run), so a caller can run it while it does other work. A failed commit,
// or a failed plan, discards what was not committed.
func (c *Controller) planUncommitted(ctx context.Context, targets map[string]checkpoints.State, dryRun bool) (_ []checkpoints.OpFile, _ []Skip, commit func() error, _ error) {
	paths := make([]string, 0, len(targets))
	for p := range targets {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	put := capture.PutFunc(capture.Hash)
	var batch cas.Batch
	commit = func() error { return nil }
	if !dryRun {
		batch = c.store.NewBatch()
		put = batch.Put
		commit = func() error { return batch.Commit(ctx) }
	}
	fail := func(err error) ([]checkpoints.OpFile, []Skip, func() error, error) {
		if batch != nil {
			batch.Abort()
		}
		return nil, nil, nil, err
	}
	type found struct {
		cur  checkpoints.State
		seen *checkpoints.StatEntry // the read that found cur, for apply's last look
		err  error
	}
	cur := make([]found, len(paths))
	// Whether each target's blob is stored is asked in one query, not one
	// per file, while the workers read the files.
	missing := c.missingTargets(ctx, paths, targets)
	// The current bytes stored here are read again only by an undo: they
	// are compressed at zstd's fastest level (cas.ReadRarely).
	rarely := cas.ReadRarely(ctx)
	parallel(len(paths), func(i int) {
		cur[i].cur, cur[i].seen, cur[i].err = c.cap.StateSeen(rarely, paths[i], put)
	})
	absent, err := missing()
	if err != nil {
		return fail(err)
	}
	deleted := map[string]bool{} // files the plan deletes
	for i, p := range paths {
		if t := targets[p]; cur[i].err == nil && cur[i].cur.Exists() && !t.Exists() && !t.Lost {
			deleted[p] = true
		}
	}
	var files []checkpoints.OpFile
	skipped := []Skip{}
	for i, p := range paths {
		target := targets[p]
		if target.Lost {
			skipped = append(skipped, Skip{Path: p, Reason: "its recorded content is lost (verify --repair found the blob missing or corrupt)"})
			continue
		}
		if err := cur[i].err; errors.Is(err, capture.ErrVCSDir) {
			skipped = append(skipped, Skip{Path: p, Reason: reason(err)})
			continue
		} else if errors.Is(err, fs.ErrPermission) {
			// Another user's file: what is there now cannot be
			// recorded, so it is not replaced.
			skipped = append(skipped, Skip{Path: p, Reason: reason(err)})
			continue
		} else if errors.Is(err, capture.ErrSymlink) || errors.Is(err, capture.ErrNotRegular) {
			st, ok, why := c.obstacle(p, target, deleted)
			if !ok {
				if why != nil {
					skipped = append(skipped, Skip{Path: p, Reason: reason(why)})
				}
				continue
			}
			cur[i].cur = st
		} else if err != nil {
			return fail(err)
		}
		if cur[i].cur.Equal(target) {
			continue
		}
		if target.Exists() && absent[*target.Content] {
			return fail(fmt.Errorf("%s: blob %s is missing from the store: %w", p, target.Content.Short(), cas.ErrNotFound))
		}
		files = append(files, checkpoints.OpFile{Path: p, Before: cur[i].cur, After: target, Seen: cur[i].seen})
	}
	files, skipped = underWrites(files, skipped)
	return files, skipped, commit, nil
}

// missingTargets starts asking the store which of the blobs that the
// targets of paths name (those not lost) it lacks; the function it
// returns waits for the answer.
func (c *Controller) missingTargets(ctx context.Context, paths []string, targets map[string]checkpoints.State) func() (map[cas.ID]bool, error) {
	var ids []cas.ID
	for _, p := range paths {
		if t := targets[p]; t.Exists() && !t.Lost {
			ids = append(ids, *t.Content)
		}
	}
	var absent map[cas.ID]bool
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		var missing []cas.ID
		if missing, err = c.store.Missing(ctx, ids); err == nil {
			absent = make(map[cas.ID]bool, len(missing))
			for _, id := range missing {
				absent[id] = true
			}
		}
	}()
	return func() (map[cas.ID]bool, error) {
		<-done
		return absent, err
	}
}

// underWrites drops, as skipped, each file to write whose path the plan
// also writes files under: records of one point in time never hold both,
// but a rewind's targets come from several (a shell that turned a captured
// file into a directory, in a scanned turn). The files inside win: they
// are judged against the tree as it is, the file above them against the
// tree they make. files is sorted by path.
func underWrites(files []checkpoints.OpFile, skipped []Skip) ([]checkpoints.OpFile, []Skip) {
	out := files[:0]
	for i, f := range files {
		if f.After.Exists() {
			inside := false
			for _, g := range files[i+1:] {
				if !strings.HasPrefix(g.Path, f.Path+"/") {
					if g.Path > f.Path+"/" {
						break
					}
					continue
				}
				if g.After.Exists() {
					inside = true
					break
				}
			}
			if inside {
				skipped = append(skipped, Skip{Path: f.Path, Reason: "the rewind restores files under it: a directory is in the way"})
				continue
			}
		}
		out = append(out, f)
	}
	return out, skipped
}

// obstacle judges a path that is not a regular file or absent now against
// the tree the plan leaves (deleted: the files it deletes). It returns the
// path's state as the plan sees it and ok when the plan can go on with it;
// otherwise why it is skipped (nil: nothing to do, a directory where the
// target is absent).
func (c *Controller) obstacle(p string, target checkpoints.State, deleted map[string]bool) (checkpoints.State, bool, error) {
	if a, e, ok := c.ws.Blocker(p); ok {
		if e.Kind == capture.Regular && deleted[a] {
			// Absent once a is deleted, with every directory from p's
			// parent up to a (deepest first).
			var dirs []string
			for d := path.Dir(p); d != path.Dir(a); d = path.Dir(d) {
				dirs = append(dirs, d)
			}
			return checkpoints.State{Dirs: dirs}, true, nil
		}
		if e.Kind == capture.Regular {
			if !target.Exists() {
				return checkpoints.State{}, false, nil // no file can be there, as the target says
			}
			return checkpoints.State{}, false, fmt.Errorf("%s: parent %s is a file the rewind keeps: %w", p, a, capture.ErrNotRegular)
		}
		return checkpoints.State{}, false, fmt.Errorf("%s: parent %s: %w", p, a, e.Reason)
	}
	if !target.Exists() && c.ws.IsDir(p) {
		return checkpoints.State{}, false, nil // no file there, as the target says
	}
	inside, err := c.ws.DirFiles(p)
	if err != nil {
		e, ierr := c.ws.Inspect(p)
		if ierr == nil && e.Kind == capture.Unsafe {
			return checkpoints.State{}, false, fmt.Errorf("%s: %w", p, e.Reason)
		}
		return checkpoints.State{}, false, err
	}
	for _, f := range inside {
		if !deleted[f] {
			return checkpoints.State{}, false, fmt.Errorf("%s: a directory is in the way, holding %s which the rewind keeps: %w", p, f, capture.ErrNotRegular)
		}
	}
	return checkpoints.State{}, true, nil // the plan empties it; apply removes it
}

// workers is how many files are read or staged at once: the machines ckpt
// targets have two cores, and the work is hashing, compressing and fsync.
const workers = 2

// parallel calls fn(0..n-1) on up to workers goroutines, each taking the
// next index until none is left. A goroutine per call would start each
// on a small stack and grow it again through SQLite's and zstd's deep
// calls: in a rewind of 1,000 files that copying was 12% of the
// process's user-space instructions.
func parallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		})
	}
	wg.Wait()
}
