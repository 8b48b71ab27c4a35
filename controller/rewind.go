package controller

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// RewindOptions modify a rewind or a revert (Undo and Redo take
// UndoOptions).
type RewindOptions struct {
	// DryRun computes what would change and changes nothing.
	DryRun bool
	// Force lets a rewind or revert overwrite files someone else changed
	// since the agent (see ErrConflict; undo brings them back).
	Force bool
	// Only restricts a code rewind to these paths (absolute, or relative
	// to the workspace root).
	Only []string
}

// ErrConflict is wrapped when a code rewind would overwrite files changed
// since the agent left them (by a person, or another session); the Result
// lists them. Nothing is changed unless forced.
var ErrConflict = errors.New("files changed since the agent left them (force to overwrite; undo brings them back)")

// ErrLaterChanges is wrapped by Revert when a later turn changed a file the
// reverted turn changed too: reverting would lose that later change.
var ErrLaterChanges = errors.New("a later turn changed these files too")

// ErrUndoConflict is wrapped by Undo when work was done since the rewind it
// would reverse: a file it would overwrite changed since (an edit in a
// later turn, or by hand), or turns were opened since (an undo of a
// conversation rewind hides them). Undo then changes nothing unless forced.
var ErrUndoConflict = errors.New("work was done since that rewind; undo would overwrite it (force to undo anyway)")

// Skip is a path a rewind or undo left alone, and why.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Result says what a rewind or undo did (or, for a dry run, would do).
type Result struct {
	Turn     int      `json:"turn"`
	Scope    Scope    `json:"scope"`
	Restored []string `json:"restored"` // written back (content and mode)
	Deleted  []string `json:"deleted"`  // removed: they did not exist at the target
	Skipped  []Skip   `json:"skipped"`
	Prompt   string   `json:"prompt"` // the prompt handed back by a conversation scope
	// Conflicts lists files changed since the agent left them (by a person,
	// another session): a rewind refuses them unless forced.
	Conflicts []string `json:"conflicts"`
	DryRun    bool     `json:"dry_run"`
	// Changed is false when there was nothing to do.
	Changed bool `json:"changed"`
	// NotRecorded lists paths named by RewindOptions.Only of which ckpt
	// has no record at or after the target turn (never captured or
	// scanned): it cannot say what they held, so it leaves them alone.
	NotRecorded []string `json:"not_recorded,omitempty"`
}

// Rewind puts the session back to the start of turn: its files, its
// conversation, or both (see the package doc). It fails before touching
// anything when the turn is not in the active history (ErrNoTurn) or when a
// blob it needs cannot be read.
func (c *Controller) Rewind(ctx context.Context, turn int, scope Scope, o RewindOptions) (Result, error) {
	if _, err := checkpoints.ParseScope(string(scope)); err != nil {
		return Result{}, fmt.Errorf("controller: rewind: %w", err)
	}
	return c.rewindOp(ctx, rewindJob{verb: "rewind to turn", turn: turn, scope: scope, o: o, targets: c.targets})
}

// rewindJob is one op of the rewind pipeline: a Rewind or a Revert.
type rewindJob struct {
	verb   string // for errors: "rewind to turn" N
	turn   int
	scope  Scope
	revert bool
	o      RewindOptions
	// targets says what a code rewind puts each path back to.
	targets func(context.Context, checkpoints.Checkpoint) (map[string]checkpoints.State, error)
}

// rewindOp is the pipeline Rewind and Revert share: lock the session, load
// the turn, choose the targets, plan (storing what is there now), refuse
// conflicts, record the op and run it, then tell subscribers.
func (c *Controller) rewindOp(ctx context.Context, j rewindJob) (Result, error) {
	turn, scope, o := j.turn, j.scope, j.o
	res := Result{Turn: turn, Scope: scope, DryRun: o.DryRun, Restored: []string{}, Deleted: []string{}, Skipped: []Skip{}, Conflicts: []string{}}
	err := c.withLock(ctx, func() error {
		release, err := c.store.Hold(ctx) // before-states' blobs until the plan commits
		if err != nil {
			return err
		}
		defer release()
		cp, err := c.idx.Turn(ctx, turn)
		if errors.Is(err, checkpoints.ErrNotFound) {
			return ErrNoTurn
		}
		if err != nil {
			return err
		}
		var files []checkpoints.OpFile
		if scope.Code() && cp.Pruned {
			return fmt.Errorf("turn %d: %w", turn, checkpoints.ErrPruned)
		}
		if scope.Code() {
			targets, err := j.targets(ctx, cp)
			if err != nil {
				return err
			}
			if targets, res.NotRecorded, err = c.only(targets, o.Only); err != nil {
				return err
			}
			if files, res.Skipped, err = c.plan(ctx, targets, o.DryRun); err != nil {
				return err
			}
			if res.Conflicts, err = c.conflicts(ctx, files); err != nil {
				return err
			}
			if len(res.Conflicts) > 0 && !o.Force && !o.DryRun {
				return fmt.Errorf("%w: %s", ErrConflict, strings.Join(res.Conflicts, ", "))
			}
		}
		if scope.Conversation() {
			res.Prompt = cp.Prompt
		}
		res.fill(files)
		res.Changed = len(files) > 0 || scope.Conversation()
		if o.DryRun || !res.Changed {
			return nil
		}
		op := checkpoints.Op{Kind: checkpoints.OpRewind, Turn: turn, Scope: scope, Files: files, Revert: j.revert}
		if !j.revert {
			op.Prompt = cp.Prompt
		}
		if op, err = c.idx.PlanOp(ctx, op); err != nil {
			return err
		}
		return c.run(ctx, op, &res)
	})
	if err != nil {
		return Result{Turn: turn, Scope: scope, Conflicts: res.Conflicts}, fmt.Errorf("controller: %s %d: %w", j.verb, turn, err)
	}
	if !o.DryRun && res.Changed {
		c.emit(Event{Kind: EventRewound, Turn: turn, Result: &res})
	}
	return res, nil
}

// only keeps the targets named by paths (all of them when paths is empty),
// and returns the named paths that are not targets: ckpt has no record of
// them from the target turn on.
func (c *Controller) only(targets map[string]checkpoints.State, paths []string) (map[string]checkpoints.State, []string, error) {
	if len(paths) == 0 {
		return targets, nil, nil
	}
	out := map[string]checkpoints.State{}
	var missing []string
	for _, p := range paths {
		rel, err := c.ws.Rel(p)
		if err != nil {
			return nil, nil, err
		}
		st, ok := targets[rel]
		if !ok {
			missing = append(missing, rel)
			continue
		}
		out[rel] = st
	}
	return out, missing, nil
}

var ErrNotRecorded = errors.New("not recorded at or after that turn: ckpt never captured or scanned it")

// conflicts lists the planned files whose current state (Before) is not
// the state ckpt last saw the agent or ckpt leave them in.
func (c *Controller) conflicts(ctx context.Context, files []checkpoints.OpFile) ([]string, error) {
	out := []string{}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	known, err := c.idx.LastKnownMany(ctx, paths)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if last, ok := known[f.Path]; ok && !last.State.Equal(f.Before) {
			out = append(out, f.Path)
		}
	}
	return out, nil
}

// Revert undoes the changes of one turn only: every file the turn captured
// goes back to its state when the turn began, while later turns' changes
// to other files stay. It refuses (ErrLaterChanges, naming them) when a
// later turn changed one of the same files, and (ErrConflict) when someone
// changed one since the agent, unless forced. It is undoable like a rewind.
func (c *Controller) Revert(ctx context.Context, turn int, o RewindOptions) (Result, error) {
	return c.rewindOp(ctx, rewindJob{verb: "revert turn", turn: turn, scope: checkpoints.ScopeCode, revert: true, o: o, targets: c.revertTargets})
}

// revertTargets returns the turn's own captures at its start, or
// ErrLaterChanges when a later turn changed one of them.
func (c *Controller) revertTargets(ctx context.Context, cp checkpoints.Checkpoint) (map[string]checkpoints.State, error) {
	targets := map[string]checkpoints.State{}
	var paths []string
	for _, f := range cp.Files {
		targets[f.Path] = f.State()
		paths = append(paths, f.Path)
	}
	later, err := c.idx.ChangedAfter(ctx, cp.Seq, paths)
	if err != nil {
		return nil, err
	}
	if len(later) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrLaterChanges, strings.Join(later, ", "))
	}
	return targets, nil
}

// targets returns what a code rewind to cp puts each path back to: the
// state at cp's start of every path with a recorded event since, and
// "absent" for the files the manifest of a scanned turn since proves were
// created later (see absentSince).
func (c *Controller) targets(ctx context.Context, cp checkpoints.Checkpoint) (map[string]checkpoints.State, error) {
	ev, err := c.idx.EarliestEvents(ctx, cp.Seq)
	if err != nil {
		return nil, err
	}
	scanned, err := c.idx.ScannedSince(ctx, cp.Seq)
	if err != nil {
		return nil, err
	}
	if len(scanned) > 0 {
		if err := c.absentSince(ctx, ev, scanned); err != nil {
			return nil, fmt.Errorf("turn %d: %w", cp.Turn, err)
		}
	}
	targets := make(map[string]checkpoints.State, len(ev))
	for p, e := range ev {
		targets[p] = e.State
	}
	return targets, nil
}

func shortPrompt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 40 {
		return string(r[:39]) + "…"
	}
	return s
}

func (r *Result) fill(files []checkpoints.OpFile) {
	for _, f := range files {
		if f.After.Exists() {
			r.Restored = append(r.Restored, f.Path)
		} else {
			r.Deleted = append(r.Deleted, f.Path)
		}
	}
}

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
	paths := make([]string, 0, len(targets))
	for p := range targets {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	put := capture.PutFunc(capture.Hash)
	var batch cas.Batch
	if !dryRun {
		batch = c.store.NewBatch()
		defer batch.Abort()
		put = batch.Put
	}
	type found struct {
		cur checkpoints.State
		err error
	}
	cur := make([]found, len(paths))
	parallel(len(paths), func(i int) {
		cur[i].cur, cur[i].err = c.cap.StateWith(ctx, paths[i], put)
	})
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
			return nil, nil, err
		}
		if cur[i].cur.Equal(target) {
			continue
		}
		if target.Exists() {
			ok, err := c.store.Has(ctx, *target.Content)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				return nil, nil, fmt.Errorf("%s: blob %s is missing from the store: %w", p, target.Content.Short(), cas.ErrNotFound)
			}
		}
		files = append(files, checkpoints.OpFile{Path: p, Before: cur[i].cur, After: target})
	}
	files, skipped = underWrites(files, skipped)
	if batch != nil {
		if err := batch.Commit(ctx); err != nil {
			return nil, nil, err
		}
	}
	return files, skipped, nil
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
	if a, e, ok := c.blockingParent(p); ok {
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

// blockingParent returns the shallowest parent directory of p that is not
// a real directory (a file, a symlink, a special file), with what Inspect
// says of it.
func (c *Controller) blockingParent(p string) (string, capture.Entry, bool) {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		a := strings.Join(parts[:i], "/")
		e, err := c.ws.Inspect(a)
		if err != nil {
			return a, capture.Entry{Kind: capture.Unsafe, Reason: err}, true
		}
		switch e.Kind {
		case capture.Absent:
			return "", capture.Entry{}, false
		case capture.Regular:
			return a, e, true
		}
		if !c.ws.IsDir(a) {
			return a, e, true
		}
	}
	return "", capture.Entry{}, false
}

// workers is how many files are read or staged at once: the machines ckpt
// targets have two cores, and the work is hashing, compressing and fsync.
const workers = 2

// parallel calls fn(0..n-1) on workers goroutines.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

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

// recoverPending finishes an op a crash interrupted: it re-applies the
// files not yet in their After state. If a blob can no longer be read it
// rolls the op back instead, putting every file back to its Before state.
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
		todo := op
		todo.Files = nil
		for _, f := range op.Files {
			cur, err := c.cap.StateWith(ctx, f.Path, capture.Hash)
			// Staging may have put the temp file next to a parent (see stage).
			for p := f.Path; p != "."; p = path.Dir(p) {
				c.ws.CleanStaged(p, strconv.FormatInt(op.ID, 10))
			}
			if err == nil && cur.Equal(f.After) {
				continue
			}
			todo.Files = append(todo.Files, f)
		}
		c.recovered = fmt.Sprintf("finished an interrupted %s of turn %d (scope %s)", op.Kind, op.Turn, op.Scope)
		skipped, err := c.apply(ctx, todo)
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
		serr := c.ws.SyncDirs(opPaths(todo))
		return errors.Join(serr, c.idx.FinishOp(ctx, op.ID, checkpoints.Done{Skipped: paths}))
	})
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
