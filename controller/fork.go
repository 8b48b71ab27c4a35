package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ckpt/ckpt/checkpoints"
)

// ForkOptions modify Fork.
type ForkOptions struct {
	// To is the new session's id; empty picks "<session>-fork-<n>".
	To string
	// Restore also puts the workspace's files back to turn's start, in the
	// fork, as an undoable code rewind.
	Restore bool
	// Force lets Restore overwrite files changed since the agent left them.
	Force bool
	// lockHeld says the caller holds the rewind lock of session To (Adopt).
	lockHeld bool
}

// Fork creates a new session in the same store and workspace whose
// active history is this session's turns before turn (turn itself is not
// in it: the fork's next turn gets number turn, and turn's prompt is handed
// back), with their checkpoints and conversation. The fork is a copy of the
// whole index, blob ids and not blob bytes, followed by a conversation
// rewind of the fork to turn (scope both with o.Restore): so the fork
// rewinds and undoes on its own, with every earlier state it needs, and
// `undo` in the fork brings back the later turns it hid. This session is
// not changed. Turn may also be the number this session's next turn would
// get (one past its last active turn; 0 for a session with none): the fork
// then holds the whole active history, nothing is rewound and the result
// is empty but for Session, as an agent's fork of its session after the last turn
// (ACP session/fork). It fails with ErrNoTurn for any other turn not in
// the active history and ErrSessionExists when o.To names an existing
// session; if the fork's rewind fails (a conflict, unless forced), the
// fork is removed. The fork records this session and turn as its origin
// (its parent in the session tree, see Store.Sessions); a fork can be
// rewound and forked like any session. The Result is the fork's own
// rewind to turn (its Prompt is turn's prompt, to edit and resend; with
// Restore, the files it put back), with Session the fork's id.
func (c *Controller) Fork(ctx context.Context, turn int, o ForkOptions) (Result, error) {
	fail := func(err error) (Result, error) {
		return Result{}, fmt.Errorf("controller: fork turn %d: %w", turn, err)
	}
	if err := c.forkable(ctx, turn); err != nil {
		return fail(err)
	}
	id := o.To
	if id == "" {
		id = c.forkID()
	}
	if !checkpoints.ValidSession(id) {
		return fail(fmt.Errorf("session %q: %w", id, checkpoints.ErrBadSession))
	}
	dir := checkpoints.SessionDir(c.st.Dir(), id)
	if has, err := checkpoints.HasSession(c.st.Dir(), id); err != nil {
		return fail(err)
	} else if has { // even one whose index is lost: its blobs are not the fork's to take
		return fail(fmt.Errorf("%s: %w", id, ErrSessionExists))
	}
	created := false
	if _, err := os.Stat(dir); err != nil {
		created = true
	}
	err := c.withLock(ctx, func() error {
		// The copy names this session's blobs; until it is renamed into
		// sessions/ no collection sees it, and a prune of this session
		// meanwhile would leave them unreferenced: hold the store.
		release, err := c.store.Hold(ctx)
		if err != nil {
			return err
		}
		defer release()
		return c.idx.CopyTo(ctx, dir)
	})
	if errors.Is(err, checkpoints.ErrExists) {
		return fail(fmt.Errorf("%s: %w", id, ErrSessionExists))
	}
	if err != nil {
		return fail(err)
	}
	cleanup := func() {
		checkpoints.Unregister(c.st.Dir(), id) // Open registered the fork
		if created {
			os.RemoveAll(dir)
		} else {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				os.Remove(filepath.Join(dir, checkpoints.FileName+suffix))
			}
		}
	}
	f, err := c.root.Open(ctx, Options{Workspace: c.ws.Root(), Session: id, NoAutoRetention: true, Clock: c.now, Logger: c.log, Scan: c.scan, lockHeld: o.lockHeld})
	if err != nil {
		cleanup()
		return fail(err)
	}
	// The fork's place in the session tree. The copy carries this
	// session's own origin; the fork's is this session.
	if err := f.idx.RecordOrigin(ctx, checkpoints.Origin{Session: c.session, Turn: turn}); err != nil {
		f.Close()
		cleanup()
		return fail(err)
	}
	scope := checkpoints.ScopeConversation
	if o.Restore {
		scope = checkpoints.ScopeBoth
	}
	// The copy holds turn unless turn was the next one (and no turn began
	// meanwhile): then there is nothing to cut.
	res := Result{Turn: turn, Scope: scope, Restored: []string{}, Deleted: []string{}, Skipped: []Skip{}, Conflicts: []string{}}
	_, err = f.idx.Turn(ctx, turn)
	switch {
	case err == nil:
		res, err = f.Rewind(ctx, Target{Turn: turn}, scope, RewindOptions{Force: o.Force})
	case errors.Is(err, checkpoints.ErrNotFound):
		err = nil
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return fail(err)
	}
	res.Session = id
	return res, nil
}

// forkable fails with ErrNoTurn unless turn is in the active history or
// is the number the next turn would get.
func (c *Controller) forkable(ctx context.Context, turn int) error {
	_, err := c.idx.Turn(ctx, turn)
	if !errors.Is(err, checkpoints.ErrNotFound) {
		return err
	}
	next := 0
	if last, err := c.idx.OpenTurn(ctx); err == nil {
		next = last.Turn + 1
	} else if !errors.Is(err, checkpoints.ErrNoOpenTurn) {
		return err
	}
	if turn != next {
		return ErrNoTurn
	}
	return nil
}

// forkID returns the first free "<session>-fork-<n>".
func (c *Controller) forkID() string {
	base := c.session
	if len(base) > 100 {
		base = base[:100]
	}
	base = strings.TrimRight(base, ".") + "-fork-"
	for n := 1; ; n++ {
		id := base + strconv.Itoa(n)
		_, err := os.Stat(checkpoints.SessionDir(c.st.Dir(), id))
		if has, _ := checkpoints.HasSession(c.st.Dir(), id); err != nil && !has {
			return id
		}
	}
}

// Summarize replaces part of the active conversation with one system
// message holding summary, written by the caller (ckpt calls no model):
// the messages of turn and later turns, or with upTo the messages of the
// turns before turn (turn must then be at least 1). The summary takes the
// place of the first (or, with upTo, the last) summarized turn's
// messages. Turns and file checkpoints are unchanged; the messages are
// hidden, not deleted. It is recorded as a conversation rewind, so Undo
// reverses it exactly: the messages come back and the summary goes. It
// fails with ErrNoTurn when turn (or, with upTo, turn-1) is not in the
// active history (or, with upTo, is 0), and fails when summary is empty (or only spaces).
func (c *Controller) Summarize(ctx context.Context, turn int, upTo bool, summary string) (Result, error) {
	res := Result{Turn: turn, Scope: checkpoints.ScopeConversation, Restored: []string{}, Deleted: []string{}, Skipped: []Skip{}, Conflicts: []string{}, Changed: true}
	err := c.withLock(ctx, func() error {
		action := checkpoints.ActionSummarizeFrom
		if upTo {
			action = checkpoints.ActionSummarizeUpTo
			if turn < 1 {
				return fmt.Errorf("nothing before turn %d: %w", turn, ErrNoTurn)
			}
		}
		if strings.TrimSpace(summary) == "" {
			return errEmptySummary
		}
		if _, err := c.idx.Turn(ctx, turn); errors.Is(err, checkpoints.ErrNotFound) {
			return ErrNoTurn
		} else if err != nil {
			return err
		}
		// Turn existing does not mean turn-1 does: undoing an older
		// conversation rewind by its id shows again the turns it hid, while
		// the turns before them stay hidden by a newer rewind.
		if upTo {
			if _, err := c.idx.Turn(ctx, turn-1); errors.Is(err, checkpoints.ErrNotFound) {
				return fmt.Errorf("nothing before turn %d (no turn %d): %w", turn, turn-1, ErrNoTurn)
			} else if err != nil {
				return err
			}
		}
		op, err := c.idx.PlanOp(ctx, checkpoints.Op{Kind: checkpoints.OpRewind, Turn: turn, Scope: checkpoints.ScopeConversation, Prompt: summary, Action: action})
		if err != nil {
			return err
		}
		ctx := context.WithoutCancel(ctx)
		if err := c.idx.FinishOp(ctx, op.ID, checkpoints.Done{}); err != nil {
			return errors.Join(err, c.idx.AbortOp(ctx, op.ID))
		}
		return nil
	})
	if err != nil {
		return Result{Turn: turn, Scope: checkpoints.ScopeConversation}, fmt.Errorf("controller: summarize %s turn %d: %w", map[bool]string{false: "from", true: "up to"}[upTo], turn, err)
	}
	return res, nil
}
