package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/internal/quote"
)

// History, undo and redo: "nothing lost" means every recorded state is
// reachable by a command.
//
// The history is the session's op journal (checkpoints.Journal), newest
// first: every rewind, revert, summarize, undo and redo. A redo
// is recorded as an undo of an undo, so an op's depth, the number of undo
// links from it to its base rewind or summarize, says what it does: an even
// depth applies the base (a rewind, a summarize, a redo), an odd depth
// reverses it (an undo). An op is in effect (state "done") until a later op
// undoes it ("undone").
//
// Undo (no RewindOptions.Op) reverses the newest op in effect that applies a
// base: `ckpt undo` keeps its stack meaning, a redo counting as the rewind it
// re-applies, and repeating it walks further back. Redo re-applies the
// most recently undone op by undoing the undo that reversed it, and
// repeating it walks forward again; a new rewind or summarize ends the redo
// chain, as in an editor (see nextRedo). RewindOptions.Op names any op: Undo
// reverses that op itself, in effect or not (`ckpt undo --op ID` puts back
// the state just before it), and Redo brings back an op whose effect was
// undone, by undoing the newest undo of its chain (`ckpt redo --op ID`).
//
// Reversing op X puts back X's before state: for each path X rewrote, the
// bytes and mode it held just before X (for a forced op: what X overwrote),
// and for each turn or message whose visibility X changed, that visibility
// (turns opened since X are hidden too when X changed turns: they did not
// exist before it). It is itself an op, so it is undone the same way.
//
// Why every recorded state is reachable: ckpt records each turn's start
// and, for every op, the state just before it and the state it wrote. A
// turn's start is reached by `ckpt rewind TURN`. The state before op X is
// reached by `ckpt undo --op X` (by plain `ckpt undo` when X is the newest
// op in effect). The state X wrote is a turn's start (X a rewind or revert),
// or the state before the op X reversed (X an undo or a redo), or the
// conversation with X's summary (X a summarize: the state before X's undo,
// so `ckpt redo`). A forced op's overwritten bytes are its before state, so
// they are in the second case. No state is kept only in a record.
//
// Refusals: reversing X overwrites X's paths, which must still be as X
// left them, and hides the turns opened since X when X changed turns. When
// a path changed since (an edit, a hand edit, a later op) or turns were
// opened since, Undo and Redo refuse naming them (ErrConflict), unless
// forced; the forced op records what it overwrites
// as its own before state. A path or conversation row that already holds
// X's before state is left alone. Ops finished
// before the index recorded conversation changes (migration 0005) that
// changed the conversation can only be reversed as the newest rewind, the
// way they always could (ErrNotInEffect otherwise: "op cannot be reversed
// exactly").

// HistoryEntry is one op of the journal as History reports it.
type HistoryEntry struct {
	ID    int64     `json:"id"`
	Time  time.Time `json:"time"`
	Kind  string    `json:"kind"` // "rewind", "revert", "summarize", "undo" or "redo"
	Scope Scope     `json:"scope"`
	Turn  int       `json:"turn"` // the target turn of the base rewind or summarize
	// Step is the step of Turn a code rewind went back to (0: the turn's
	// start; see Target).
	Step int `json:"step,omitempty"`
	// Undoes is the op an undo or redo reverses (0 for a rewind or summarize).
	Undoes int64 `json:"undoes"`
	// State is "done" (in effect), "undone", or "planned" (interrupted;
	// the next Open finishes it).
	State string `json:"state"`
	// UndoneBy is the op that undid this one (0 while in effect).
	UndoneBy int64    `json:"undone_by"`
	Paths    []string `json:"paths"`
	// Files are the paths it rewrote, each with its recorded state just
	// before and just after it (a state without Content: absent).
	Files []checkpoints.OpFile `json:"files"`
	// HiddenTurns and ShownTurns are the turn numbers the op took out of
	// or put back into the active history (empty for ops finished before
	// they were recorded).
	HiddenTurns []int `json:"hidden_turns"`
	ShownTurns  []int `json:"shown_turns"`
	// InEffect: what the op did is in effect (it is not undone, or a redo
	// re-applied it).
	InEffect bool `json:"in_effect"`
	// CanUndo: it is in effect, and Undo with Op: ID reverses it (Undo
	// with Op accepts an op not in effect too: it puts back the state
	// before it again).
	CanUndo bool `json:"can_undo"`
	// CanRedo: it is not in effect, and Redo with Op: ID brings it back.
	CanRedo bool `json:"can_redo"`
	// NextUndo marks the op a plain Undo reverses; NextRedo the op a plain
	// Redo re-applies.
	NextUndo bool `json:"next_undo"`
	NextRedo bool `json:"next_redo"`
}

// journal indexes the op journal for picking and describing ops.
type journal struct {
	ops   []checkpoints.Entry // oldest first
	byID  map[int64]int
	undid map[int64]int64 // op id -> the newest op that undoes it
}

func newJournal(ops []checkpoints.Entry) *journal {
	j := &journal{ops: ops, byID: map[int64]int{}, undid: map[int64]int64{}}
	for i, e := range ops {
		j.byID[e.ID] = i
		if e.Kind == checkpoints.OpUndo && e.State != "planned" {
			j.undid[e.Undoes] = e.ID
		}
	}
	return j
}

func (j *journal) get(id int64) (checkpoints.Entry, bool) {
	i, ok := j.byID[id]
	if !ok {
		return checkpoints.Entry{}, false
	}
	return j.ops[i], true
}

// base returns the rewind or summarize at the end of e's undo links, and
// how many links there are.
func (j *journal) base(e checkpoints.Entry) (checkpoints.Entry, int) {
	depth := 0
	for e.Kind == checkpoints.OpUndo && depth <= len(j.ops) {
		next, ok := j.get(e.Undoes)
		if !ok {
			break
		}
		e, depth = next, depth+1
	}
	return e, depth
}

func (j *journal) applies(e checkpoints.Entry) bool {
	_, d := j.base(e)
	return d%2 == 0
}

// nextUndo is the newest op in effect that applies a base.
func (j *journal) nextUndo() (checkpoints.Entry, bool) {
	for i := len(j.ops) - 1; i >= 0; i-- {
		if e := j.ops[i]; e.State == "done" && j.applies(e) {
			return e, true
		}
	}
	return checkpoints.Entry{}, false
}

// nextRedo returns the undo a plain Redo reverses: the one that undid the
// op on top of the redo stack. The stack is replayed from the journal as
// an editor keeps it: an undo pushes the op it undid, a redo pops the op it
// re-applied, and a new rewind or summarize empties it (the ops it held
// stay in the history, reachable with RewindOptions.Op).
func (j *journal) nextRedo() (checkpoints.Entry, bool) {
	var stack []int64
	for _, e := range j.ops {
		if e.State == "planned" {
			continue
		}
		if e.Kind == checkpoints.OpRewind {
			stack = stack[:0]
			continue
		}
		if t, ok := j.get(e.Undoes); ok && t.Kind == checkpoints.OpUndo {
			stack = without(stack, t.Undoes)
		}
		if !j.applies(e) {
			stack = append(stack, e.Undoes)
		}
	}
	for i := len(stack) - 1; i >= 0; i-- {
		x, _ := j.get(stack[i])
		if u, ok := j.get(j.undid[x.ID]); ok && x.State == "undone" && u.State == "done" {
			return u, true
		}
	}
	return checkpoints.Entry{}, false
}

func without(ids []int64, id int64) []int64 {
	out := ids[:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// touchesConversation reports whether reversing e changes the conversation.
func (j *journal) touchesConversation(e checkpoints.Entry) bool {
	if e.Recorded {
		return len(e.Changes) > 0
	}
	b, _ := j.base(e)
	return b.Scope.Conversation()
}

// reversible says whether e, in effect, can be reversed exactly: its
// conversation change is recorded, or it has none, or it is an unrecorded
// rewind that is the newest (the undo FinishOp has always done).
func (j *journal) reversible(e checkpoints.Entry) bool {
	if e.Recorded || !j.touchesConversation(e) {
		return true
	}
	next, ok := j.nextUndo()
	return ok && next.ID == e.ID && e.Kind == checkpoints.OpRewind
}

// Undo reverses an op (see the comment at the top of history.go): by
// default the newest rewind, summarize or redo in effect, so repeated
// undos walk back; o.Op names another. The files it rewrote get the bytes
// and mode they had just before it (hand edits included), and its
// conversation change is reverted. It fails with an error wrapping
// ErrNothingToUndo when there is nothing to undo, and with one
// wrapping ErrConflict (naming what would be lost) when work was done
// since, unless o.Force. With o.DryRun it reports the plan and its
// conflicts and changes nothing.
func (c *Controller) Undo(ctx context.Context, o RewindOptions) (Result, error) {
	return c.reverse(ctx, o, false)
}

// Redo re-applies the newest undone op by undoing the undo that reversed
// it: every path and conversation row that undo changed gets back exactly
// what the undo replaced, including what a forced undo overwrote. o.Op
// names another undone op. It fails with an error wrapping
// ErrNothingToUndo ("nothing to redo") when there is nothing to redo, and
// with one wrapping ErrConflict when work was done since the undo, unless o.Force (what
// a forced redo overwrites is kept: Undo brings it back). o.DryRun as in
// Undo.
func (c *Controller) Redo(ctx context.Context, o RewindOptions) (Result, error) {
	return c.reverse(ctx, o, true)
}

// pick finds the op to reverse.
func (j *journal) pick(id int64, redo bool) (checkpoints.Entry, error) {
	if id == 0 {
		if redo {
			if e, ok := j.nextRedo(); ok {
				return e, nil
			}
			return checkpoints.Entry{}, errNothingToRedo
		}
		if e, ok := j.nextUndo(); ok {
			return e, nil
		}
		return checkpoints.Entry{}, fmt.Errorf("no rewind in effect: %w", ErrNothingToUndo)
	}
	e, ok := j.get(id)
	if !ok {
		return checkpoints.Entry{}, fmt.Errorf("op %d: %w", id, checkpoints.ErrNotFound)
	}
	if !redo { // the op itself, whatever happened since: its before state
		if e.State == "planned" {
			return checkpoints.Entry{}, fmt.Errorf("op %d is unfinished: %w", id, ErrNotInEffect)
		}
		return e, nil
	}
	t, inEffect, ok := j.tip(e)
	switch {
	case !ok:
		return checkpoints.Entry{}, fmt.Errorf("op %d is unfinished: %w", id, ErrNotInEffect)
	case inEffect:
		return checkpoints.Entry{}, fmt.Errorf("op %d is in effect (undo --op %d reverses it): %w", id, id, ErrNotInEffect)
	}
	return t, nil
}

// tip follows the undo links from e (e, the op that undid it, the op that
// undid that, ...) to the one in effect: reversing the tip is how e's
// effect is taken out (when inEffect) or brought back. ok is false when
// the chain ends in an unfinished op.
func (j *journal) tip(e checkpoints.Entry) (t checkpoints.Entry, inEffect, ok bool) {
	links := 0
	for e.State == "undone" && links <= len(j.ops) {
		u, found := j.get(j.undid[e.ID])
		if !found {
			return e, false, false
		}
		e, links = u, links+1
	}
	return e, links%2 == 0, e.State == "done"
}

// reverse undoes one op (redo: the default pick and the meaning of o.Op
// are Redo's).
func (c *Controller) reverse(ctx context.Context, o RewindOptions, redo bool) (Result, error) {
	verb := "undo"
	if redo {
		verb = "redo"
	}
	var res Result
	var reapplies bool
	err := c.withLock(ctx, func() error {
		release, err := c.store.Hold(ctx) // before-states' blobs until the plan commits
		if err != nil {
			return err
		}
		defer release()
		j, x, err := c.pickReversal(ctx, o.Op, redo)
		if err != nil {
			return err
		}
		base, depth := j.base(x)
		reapplies = depth%2 == 1 // x is an undo: reversing it re-applies the base
		res = reversalResult(base, reapplies, o.DryRun)
		files, skipped, err := c.planReversal(ctx, x, o.DryRun, &res)
		if err != nil {
			return err
		}
		conv, convChanges, err := c.convConflicts(ctx, j, x)
		if err != nil {
			return err
		}
		res.Conflicts = append(res.Conflicts, conv...)
		if o.Op != 0 && len(files) == 0 && convChanges == 0 {
			res.Changed = false // the state before x is there already
			res.Skipped = skipped
			return nil
		}
		if len(res.Conflicts) > 0 && !o.Force && !o.DryRun {
			sentinel := errUndoConflict
			if reapplies {
				sentinel = errRedoConflict
			}
			return fmt.Errorf("%w: %s", sentinel, quote.List(res.Conflicts))
		}
		res.Skipped = skipped
		res.fill(files)
		if o.DryRun {
			return nil
		}
		op, err := c.idx.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpUndo, Turn: base.Turn, Step: base.Step, Scope: base.Scope, Undoes: x.ID, Files: files})
		if err != nil {
			return err
		}
		return c.run(ctx, op, &res)
	})
	if err != nil {
		return Result{Turn: res.Turn, Step: res.Step, Scope: res.Scope, DryRun: res.DryRun, Of: res.Of,
			Restored: []string{}, Deleted: []string{}, Skipped: []Skip{}, Conflicts: res.Conflicts}, fmt.Errorf("controller: %s: %w", verb, err)
	}
	return res, nil
}

// pickReversal returns the session's journal and, with its files, the op
// an undo (redo: a redo) of op reverses (0: the default pick). It fails
// with errNotReversible for an op that cannot be reversed.
func (c *Controller) pickReversal(ctx context.Context, op int64, redo bool) (*journal, checkpoints.Entry, error) {
	ops, err := c.idx.Journal(ctx, false)
	if err != nil {
		return nil, checkpoints.Entry{}, err
	}
	j := newJournal(ops)
	x, err := j.pick(op, redo)
	if err != nil {
		return nil, x, err
	}
	if x, err = c.idx.Entry(ctx, x.ID); err != nil { // with its files
		return nil, x, err
	}
	if !j.reversible(x) {
		return nil, x, fmt.Errorf("op %d changed the conversation before ckpt recorded such changes; only the newest rewind of that time can be undone: %w", x.ID, errNotReversible)
	}
	return j, x, nil
}

// reversalResult is the result reversing an op whose base is base starts
// from: what base was, and its prompt when reversing re-applies a cut.
func reversalResult(base checkpoints.Entry, reapplies, dryRun bool) Result {
	res := Result{Turn: base.Turn, Step: base.Step, Scope: base.Scope, DryRun: dryRun, Changed: true,
		Restored: []string{}, Deleted: []string{}, Skipped: []Skip{}, Conflicts: []string{}}
	switch {
	case base.Summarizes():
		res.Of = "summarize"
	case base.Revert:
		res.Of = "revert"
	default:
		res.Of = "rewind"
	}
	if reapplies && base.Scope.Conversation() && !base.Summarizes() {
		res.Prompt = base.Prompt // the cut is back: its prompt is handed back again
	}
	return res
}

// planReversal plans putting back the files x changed, and adds to
// res.Conflicts each file that is no longer as x left it.
func (c *Controller) planReversal(ctx context.Context, x checkpoints.Entry, dryRun bool, res *Result) ([]checkpoints.OpFile, []Skip, error) {
	targets := map[string]checkpoints.State{}
	left := map[string]checkpoints.State{}
	for _, f := range x.Files {
		targets[f.Path] = f.Before
		left[f.Path] = f.After
	}
	files, skipped, err := c.plan(ctx, targets, dryRun)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		if !f.Before.Equal(left[f.Path]) {
			res.Conflicts = append(res.Conflicts, f.Path)
		}
	}
	return files, skipped, nil
}

// convConflicts lists what reversing x would hide that x did not leave as
// it is: the turns opened since x, when x changed turns; and counts the
// conversation rows reversing x would change. A row already at its state
// before x needs nothing and is no conflict. It fails with
// errNotReversible when the result would show two turns with one number.
func (c *Controller) convConflicts(ctx context.Context, j *journal, x checkpoints.Entry) (what []string, changes int, err error) {
	if !j.touchesConversation(x) {
		return nil, 0, nil
	}
	st, err := c.idx.ConvState(ctx)
	if err != nil {
		return nil, 0, err
	}
	turnDesc := func(t checkpoints.TurnRow) string {
		return fmt.Sprintf("turn %d (%s)", t.Number, shortPrompt(t.Prompt))
	}
	if !x.Recorded { // the newest rewind, unrecorded: the turns opened since
		if !x.Summarizes() {
			for _, t := range st.Turns {
				if t.Shown && t.Seq > x.Seq {
					what = append(what, turnDesc(t))
				}
			}
		}
		return what, 1, nil
	}
	shown := map[int64]bool{} // turn id -> in the active history after the reversal
	for _, t := range st.Turns {
		shown[t.ID] = t.Shown
	}
	turns := false
	for _, v := range x.Changes {
		if v.Message {
			if now := !st.HiddenMessages[v.ID]; now != v.ShownBefore {
				changes++
			}
			continue
		}
		turns = true
	}
	if turns {
		for _, t := range st.Turns {
			if t.Shown && t.Seq > x.Seq {
				what = append(what, turnDesc(t))
				shown[t.ID] = false
			}
		}
	}
	for _, v := range x.Changes {
		if !v.Message {
			shown[v.ID] = v.ShownBefore
		}
	}
	numbers := map[int]bool{}
	for _, t := range st.Turns {
		if shown[t.ID] != t.Shown {
			changes++
		}
		if shown[t.ID] {
			if numbers[t.Number] {
				return nil, 0, fmt.Errorf("op %d: turn %d would be in the active history twice; reverse the later op that opened or showed it first: %w", x.ID, t.Number, errNotReversible)
			}
			numbers[t.Number] = true
		}
	}
	return what, changes, nil
}

// History returns the session's op journal, newest first (see the comment
// at the top of history.go). Lists in entries are never nil.
func (c *Controller) History(ctx context.Context) ([]HistoryEntry, error) {
	ops, err := c.idx.Journal(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("controller: history: %w", err)
	}
	st, err := c.idx.ConvState(ctx)
	if err != nil {
		return nil, fmt.Errorf("controller: history: %w", err)
	}
	number := map[int64]int{}
	for _, t := range st.Turns {
		number[t.ID] = t.Number
	}
	j := newJournal(ops)
	nu, hasNU := j.nextUndo()
	nr, hasNR := j.nextRedo()
	out := make([]HistoryEntry, 0, len(ops))
	for i := len(ops) - 1; i >= 0; i-- {
		e := ops[i]
		h := HistoryEntry{ID: e.ID, Time: e.Time.UTC(), Scope: e.Scope, Turn: e.Turn, Step: e.Step, Undoes: e.Undoes, State: e.State,
			Paths: []string{}, Files: []checkpoints.OpFile{}, HiddenTurns: []int{}, ShownTurns: []int{}}
		switch {
		case e.Kind == checkpoints.OpRewind && e.Summarizes():
			h.Kind = "summarize"
		case e.Kind == checkpoints.OpRewind && e.Revert:
			h.Kind = "revert"
		case e.Kind == checkpoints.OpRewind:
			h.Kind = "rewind"
		case j.applies(e):
			h.Kind = "redo"
		default:
			h.Kind = "undo"
		}
		if e.State == "undone" {
			h.UndoneBy = j.undid[e.ID]
		}
		for _, f := range e.Files {
			h.Paths = append(h.Paths, f.Path)
			h.Files = append(h.Files, checkpoints.OpFile{Path: f.Path, Before: f.Before, After: f.After})
		}
		for _, v := range e.Changes {
			if v.Message {
				continue
			}
			if v.ShownBefore {
				h.HiddenTurns = append(h.HiddenTurns, number[v.ID])
			} else {
				h.ShownTurns = append(h.ShownTurns, number[v.ID])
			}
		}
		if t, inEffect, ok := j.tip(e); ok {
			h.InEffect = inEffect
			h.CanUndo = inEffect && j.reversible(e)
			h.CanRedo = !inEffect && j.reversible(t)
		}
		h.NextUndo = hasNU && nu.ID == e.ID
		h.NextRedo = hasNR && nr.Undoes == e.ID
		out = append(out, h)
	}
	return out, nil
}
