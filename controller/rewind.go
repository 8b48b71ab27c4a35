package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/internal/quote"
)

// RewindOptions modify the ops that change the workspace: a Rewind (or a
// revert), an Undo and a Redo.
type RewindOptions struct {
	// DryRun computes what would change, conflicts included, and changes
	// nothing.
	DryRun bool
	// Force lets the op overwrite work done since: files someone else
	// changed since the agent left them (ErrConflict), or, for an undo or
	// redo, since the op it reverses (ErrConflict too).
	// What it overwrites is kept as the new op's before state, so undoing
	// the new op brings it back.
	Force bool
	// Only restricts a code rewind or a revert to these paths (absolute,
	// or relative to the workspace root).
	Only []string
	// Revert makes a Rewind to a turn's start undo that turn's changes
	// only: every file the turn captured (or, in a scanned turn, its shell
	// changed) goes back to its state when the turn began, while later
	// turns' changes to other files stay. It refuses (force does not override it,
	// naming them) when a later turn changed one of the same files. Code
	// only: the scope must be ScopeCode, the target a turn, not a step.
	Revert bool
	// Op, for an Undo or a Redo, names an op by its history id instead of
	// the newest one: Undo reverses that op itself, in effect or not
	// (putting back the state just before it); Redo brings back an op
	// whose effect was undone, by reversing the op of its chain (the op,
	// its undo, the redo, ...) that is in effect. With Op, an Undo or Redo
	// that would change nothing records nothing (Result.Changed false).
	Op int64
}

// Skip is a path a rewind or undo left alone, and why.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	// holds: the skip is of a directory the scan skips now, so it
	// stands for every path under it too (RewindOptions.Only names
	// them); any other skip is of its path alone.
	holds bool
}

// Result says what a rewind or undo did (or, for a dry run, would do).
type Result struct {
	Turn int `json:"turn"`
	// Step is the step of Turn a code rewind went back to (0: the turn's
	// start; see Target).
	Step     int      `json:"step,omitempty"`
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
	// Of names what an undo or redo reverses or re-applies: "rewind",
	// "revert" or "summarize"; empty for other results.
	Of string `json:"of,omitempty"`
	// Session is, for a Fork, the new session: the result is its rewind.
	Session string `json:"session,omitempty"`
}

// Rewind puts the session back to target: the start of a turn (Step 0)
// or the moment just before the turn's Step-th tool call (see Step). To a
// turn's start it restores its files, its conversation, or both (see the
// package doc). A step rewind restores code only: ckpt records the
// conversation by turns, so ScopeConversation or ScopeBoth with a step
// fails with ErrStepScope (rewind the turn, or the turn after it, for
// that). It fails before touching anything when the turn is not in the
// active history (ErrNoTurn), the turn has no such step (ErrNoStep), or a
// blob it needs cannot be read. With RewindOptions.Revert it undoes the
// turn's own changes instead (see there). Every rewind is undoable.
func (c *Controller) Rewind(ctx context.Context, p Target, scope Scope, o RewindOptions) (Result, error) {
	if _, err := checkpoints.ParseScope(string(scope)); err != nil {
		return Result{}, fmt.Errorf("controller: rewind: %w", err)
	}
	if o.Revert {
		if p.Step != 0 || scope != ScopeCode {
			return Result{Turn: p.Turn, Step: p.Step, Scope: scope}, fmt.Errorf("controller: revert turn %s: a revert is of one whole turn's code (scope code, no step)", p)
		}
		return c.rewindOp(ctx, rewindJob{verb: "revert turn", turn: p.Turn, scope: scope, revert: true, o: o, targets: c.revertTargets})
	}
	if p.Step == 0 {
		return c.rewindOp(ctx, rewindJob{verb: "rewind to turn", turn: p.Turn, scope: scope, o: o, targets: c.targets})
	}
	if scope != ScopeCode {
		return Result{Turn: p.Turn, Step: p.Step, Scope: scope}, fmt.Errorf("controller: rewind to %s: %w", p, ErrStepScope)
	}
	return c.rewindOp(ctx, rewindJob{verb: "rewind to turn", turn: p.Turn, step: p.Step, scope: scope, o: o, targets: c.targets})
}

// rewindJob is one op of the rewind pipeline: a Rewind or a Revert.
type rewindJob struct {
	verb   string // for errors: "rewind to turn" N
	turn   int
	step   int // a code rewind to this step of turn (0: its start)
	scope  Scope
	revert bool
	o      RewindOptions
	// targets says what a code rewind puts each path back to, from the
	// clock value of the turn's start or of its step, and what it leaves
	// alone that the plan cannot see (paths scans skip).
	targets func(context.Context, checkpoints.Checkpoint) (map[string]checkpoints.State, []Skip, error)
}

// rewindOp is the pipeline Rewind and Revert share: lock the session, load
// the turn, choose the targets, plan (storing what is there now), refuse
// conflicts, record the op and run it, then tell subscribers.
func (c *Controller) rewindOp(ctx context.Context, j rewindJob) (Result, error) {
	turn, scope, o := j.turn, j.scope, j.o
	res := Result{Turn: turn, Step: j.step, Scope: scope, DryRun: o.DryRun, Restored: []string{}, Deleted: []string{}, Skipped: []Skip{}, Conflicts: []string{}}
	err := c.withLock(ctx, func() error {
		release, err := c.store.Hold(ctx) // before-states' blobs until the plan commits
		if err != nil {
			return err
		}
		defer release()
		cp, err := c.rewindPoint(ctx, j)
		if err != nil {
			return err
		}
		var files []checkpoints.OpFile
		// The current bytes the plan stores commit (an fsync) while the
		// conflicts are looked up and the op's rows inserted; the op
		// commits only once they are durable.
		stored := func() error { return nil }
		defer func() { stored() }() // committed (or discarded) before the hold is released
		if scope.Code() {
			if files, stored, err = c.planCode(ctx, j, cp, &res); err != nil {
				return err
			}
		}
		if scope.Conversation() {
			res.Prompt = cp.Prompt
		}
		res.fill(files)
		res.Changed = len(files) > 0 || scope.Conversation()
		if o.DryRun || !res.Changed {
			return stored()
		}
		op := checkpoints.Op{Kind: checkpoints.OpRewind, Turn: turn, Step: j.step, Scope: scope, Files: files, Revert: j.revert}
		if !j.revert && j.step == 0 {
			op.Prompt = cp.Prompt
		}
		if op, err = c.idx.PlanOpAfter(ctx, op, stored); err != nil {
			return err
		}
		return c.run(ctx, op, &res)
	})
	if err != nil {
		return Result{Turn: turn, Step: j.step, Scope: scope, Conflicts: res.Conflicts}, fmt.Errorf("controller: %s %s: %w", j.verb, Target{turn, j.step}, err)
	}
	return res, nil
}

// rewindPoint loads the checkpoint job j rewinds to: its turn's, with
// the step's clock value in place of the turn's when j names a step.
func (c *Controller) rewindPoint(ctx context.Context, j rewindJob) (checkpoints.Checkpoint, error) {
	cp, err := c.idx.Turn(ctx, j.turn)
	if errors.Is(err, checkpoints.ErrNotFound) {
		return cp, c.noTurn(ctx, j.turn)
	}
	if err != nil {
		return cp, err
	}
	if j.scope.Code() && cp.Pruned {
		return cp, fmt.Errorf("turn %d: %w", j.turn, checkpoints.ErrPruned)
	}
	if j.step > 0 {
		// The step's clock value stands in for the turn's: events after
		// it are what a rewind to the step undoes.
		st, err := c.idx.StepOf(ctx, j.turn, j.step)
		if errors.Is(err, checkpoints.ErrNoStep) {
			return cp, ErrNoStep
		}
		if err != nil {
			return cp, err
		}
		cp.Seq, cp.Scanned = st.Seq, false
	}
	return cp, nil
}

// planCode plans the code side of job j's rewind to cp: its targets
// (narrowed to o.Only), the plan of each file, the skips and the
// conflicts, recorded in res. The current bytes the plan stores commit in
// the background; stored waits for that commit and returns its error.
// stored is never nil, even with an error: the caller waits for it before
// it releases its hold on the store.
func (c *Controller) planCode(ctx context.Context, j rewindJob, cp checkpoints.Checkpoint, res *Result) (files []checkpoints.OpFile, stored func() error, err error) {
	o := j.o
	stored = func() error { return nil }
	targets, limited, err := j.targets(ctx, cp)
	if err != nil {
		return nil, stored, err
	}
	if targets, limited, res.NotRecorded, err = c.only(targets, limited, o.Only); err != nil {
		return nil, stored, err
	}
	// What ckpt last knew of each path is read from the index
	// while the plan reads the files.
	known := c.lastKnown(ctx, targets)
	var commit func() error
	if files, res.Skipped, commit, err = c.planUncommitted(ctx, targets, o.DryRun); err != nil {
		known()
		return nil, stored, err
	}
	res.Skipped = withSkips(res.Skipped, limited)
	committed := make(chan error, 1)
	go func() { committed <- commit() }()
	var once sync.Once
	var cerr error
	stored = func() error {
		once.Do(func() { cerr = <-committed })
		return cerr
	}
	if res.Conflicts, err = conflicts(known, files); err != nil {
		return files, stored, err
	}
	if len(res.Conflicts) > 0 && !o.Force && !o.DryRun {
		return files, stored, fmt.Errorf("%w: %s", ErrConflict, quote.List(res.Conflicts))
	}
	return files, stored, nil
}

// only keeps the targets named by paths (all of them when paths is empty),
// and the skips of paths named or of directories the scan now skips
// holding one (not a skip of a path recorded as a file that is a
// directory now: that skip holds no paths); it
// returns the named paths that are neither: ckpt has no record of them
// from the target turn on.
func (c *Controller) only(targets map[string]checkpoints.State, skips []Skip, paths []string) (map[string]checkpoints.State, []Skip, []string, error) {
	if len(paths) == 0 {
		return targets, skips, nil, nil
	}
	out := map[string]checkpoints.State{}
	var kept []Skip
	var missing []string
	for _, p := range paths {
		rel, err := c.ws.Rel(p)
		if err != nil {
			return nil, nil, nil, err
		}
		if st, ok := targets[rel]; ok {
			out[rel] = st
			continue
		}
		i := slices.IndexFunc(skips, func(sk Skip) bool {
			return rel == sk.Path || sk.holds && strings.HasPrefix(rel, sk.Path+"/")
		})
		if i < 0 {
			missing = append(missing, rel)
			continue
		}
		if !slices.Contains(kept, skips[i]) {
			kept = append(kept, skips[i])
		}
	}
	return out, kept, missing, nil
}

// withSkips adds more to a plan's skips, in path order.
func withSkips(skipped, more []Skip) []Skip {
	if len(more) == 0 {
		return skipped
	}
	out := append(slices.Clone(skipped), more...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// lastKnown starts reading the state ckpt last saw the agent or ckpt leave
// each target path in; the function it returns waits for the reading and
// returns it.
func (c *Controller) lastKnown(ctx context.Context, targets map[string]checkpoints.State) func() (map[string]checkpoints.Known, error) {
	paths := make([]string, 0, len(targets))
	for p := range targets {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var known map[string]checkpoints.Known
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		known, err = c.idx.LastKnownMany(ctx, paths)
	}()
	return func() (map[string]checkpoints.Known, error) {
		<-done
		return known, err
	}
}

// conflicts lists the planned files whose current state (Before) is not
// the state ckpt last saw the agent or ckpt leave them in (known, from
// lastKnown).
func conflicts(lastKnown func() (map[string]checkpoints.Known, error), files []checkpoints.OpFile) ([]string, error) {
	out := []string{}
	known, err := lastKnown()
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

// revertTargets returns the turn's own changes at its start: its captures,
// and for a scanned turn the files its manifest and the one that recorded
// its end disagree on (a shell's changes; for the open turn, the files a
// scan finds changed now). It fails with errLaterChanges when a later
// turn captured one of them, or a file a shell changed is no longer as
// the turn left it.
func (c *Controller) revertTargets(ctx context.Context, cp checkpoints.Checkpoint) (map[string]checkpoints.State, []Skip, error) {
	targets := map[string]checkpoints.State{}
	var paths []string
	for _, f := range cp.Files {
		targets[f.Path] = f.State()
		paths = append(paths, f.Path)
	}
	changes, err := c.turnScanChanges(ctx, cp)
	if err != nil {
		return nil, nil, err
	}
	var later []string
	for _, ch := range changes {
		if _, ok := targets[ch.Path]; ok {
			continue // captured: the capture is the turn's record of it
		}
		targets[ch.Path] = ch.Start
		paths = append(paths, ch.Path)
		if now, err := c.cap.StateWith(ctx, ch.Path, capture.Hash); err == nil && !now.Equal(ch.End) {
			later = append(later, ch.Path)
		}
	}
	captured, err := c.idx.ChangedAfter(ctx, cp.Seq, paths)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range captured {
		if !slices.Contains(later, p) {
			later = append(later, p)
		}
	}
	if len(later) > 0 {
		sort.Strings(later)
		return nil, nil, fmt.Errorf("%w: %s", errLaterChanges, strings.Join(later, ", "))
	}
	return targets, nil, nil
}

// targets returns what a code rewind to cp puts each path back to: the
// state at cp's start of every path with a recorded event since, and
// "absent" for the files the manifest of a scanned turn since proves were
// created later (see absentSince). What scans skip now is left alone and
// returned as skipped (see overLimit; when no scan can run now,
// noScanNow).
func (c *Controller) targets(ctx context.Context, cp checkpoints.Checkpoint) (map[string]checkpoints.State, []Skip, error) {
	ev, err := c.idx.EarliestEvents(ctx, cp.Seq)
	if err != nil {
		return nil, nil, err
	}
	scanned, err := c.idx.ScannedSince(ctx, cp.Seq)
	if err != nil {
		return nil, nil, err
	}
	var skipped []Skip
	if len(scanned) > 0 {
		now, err := c.scanNow(ctx)
		if what, unreadable := unscannable(err); unreadable {
			skipped = noScanNow(ev, scanned, what)
		} else if err != nil {
			return nil, nil, fmt.Errorf("turn %d: scan for files created since: %w", cp.Turn, err)
		} else {
			if skipped, err = c.overLimit(ctx, ev, scanned, &now.Manifest); err != nil {
				return nil, nil, fmt.Errorf("turn %d: %w", cp.Turn, err)
			}
			if err := c.absentSince(ctx, ev, scanned, &now); err != nil {
				return nil, nil, fmt.Errorf("turn %d: %w", cp.Turn, err)
			}
		}
	}
	targets := make(map[string]checkpoints.State, len(ev))
	for p, e := range ev {
		targets[p] = e.State
	}
	return targets, skipped, nil
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
