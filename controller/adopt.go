package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/gofrs/flock"
)

// An agent whose conversation a rewind forks (Claude Code) starts the fork
// under a session id of its own, and may start a conversation that
// continues one ckpt recorded before ckpt can tell. The store keeps both in
// the session indexes, never in files of their own:
//
//   - Continue records that an agent session id continues a session: a row
//     of that session's index, which the store's catalog finds by id;
//     Resolve resolves id to the session (Location.Continued);
//   - Adopt replaces a session opened at an agent's first prompt by a fork
//     of the session the conversation turns out to continue, once, under
//     the session's rewind lock, while a row of its index (the front-end's
//     pending prompt) says it may.

// Continue records that the agent's session id, which has no index of its
// own, continues session of the store: Resolve resolves id to session from
// then on (Location.Continued), so every event of the agent's session is
// recorded there. at is the agent's conversation entry the fork began
// after and in the agent session whose transcript holds it ("" for
// session itself). The record is a row of session's index, written in one
// transaction; the store's catalog finds it by id without opening every
// index, and rebuilds what it knows from the indexes (and from the link
// files of stores an older ckpt made) whenever it cannot vouch for it. An
// empty session forgets what id continues (a rewind that did not happen).
func (s *Store) Continue(ctx context.Context, id, session, at, in string) error {
	if !checkpoints.ValidSession(id) {
		return fmt.Errorf("controller: session %q: %w", id, checkpoints.ErrBadSession)
	}
	// A session whose index is lost is that session still.
	if has, err := checkpoints.HasSession(s.dir, id); err != nil {
		return fmt.Errorf("controller: session %s: %w", id, err)
	} else if has {
		return fmt.Errorf("controller: session %s: %w", id, ErrSessionExists)
	}
	forget := session == ""
	prev, had, err := s.continuation(ctx, id)
	if err != nil || (forget && !had) {
		return err
	}
	if forget {
		session = prev.Session
	}
	x, err := checkpoints.OpenSession(ctx, s.dir, session, false)
	if err != nil {
		return fmt.Errorf("controller: continue session %s: %w", session, err)
	}
	co := checkpoints.Continuation{ID: id, Session: session, At: at, In: in}
	if forget {
		err, co.Session = x.RemoveContinuation(ctx, id), ""
	} else {
		err = x.AddContinuation(ctx, co)
	}
	if err = errors.Join(err, x.Close()); err != nil {
		return fmt.Errorf("controller: continue session %s: %w", session, err)
	}
	if had && prev.Session != session {
		// id continued another session until now: one index records it,
		// so that a rebuilt catalog gives the same answer.
		if x, err = checkpoints.OpenSession(ctx, s.dir, prev.Session, false); err == nil {
			err = errors.Join(x.RemoveContinuation(ctx, id), x.Close())
		}
		if err != nil {
			return fmt.Errorf("controller: continue session %s: %w", session, err)
		}
	}
	cat, err := checkpoints.OpenCatalog(ctx, s.dir)
	if err != nil {
		return err
	}
	defer cat.Close()
	return cat.NoteContinuation(ctx, co)
}

// continuation returns what agent session id continues, when id has no
// index of its own and the continued session has one.
func (s *Store) continuation(ctx context.Context, id string) (checkpoints.Continuation, bool, error) {
	if !checkpoints.ValidSession(id) {
		return checkpoints.Continuation{}, false, nil
	}
	if _, err := os.Stat(s.dir); err != nil {
		return checkpoints.Continuation{}, false, nil // no store yet: nothing to continue
	}
	// A session whose index is lost is that session still.
	if has, err := checkpoints.HasSession(s.dir, id); err != nil || has {
		return checkpoints.Continuation{}, false, err
	}
	cat, err := checkpoints.OpenCatalog(ctx, s.dir)
	if err != nil {
		return checkpoints.Continuation{}, false, err
	}
	defer cat.Close()
	co, ok, err := cat.Continuation(ctx, id, func(ctx context.Context, id string) (*checkpoints.Index, error) {
		return checkpoints.OpenSession(ctx, s.dir, id, false)
	})
	if err != nil || !ok || !s.hasIndex(co.Session) {
		return checkpoints.Continuation{}, false, err
	}
	if co.In == "" {
		co.In = co.Session
	}
	return co, true, nil
}

// Adopt makes session id a fork of the session its agent's conversation
// turns out to continue: an agent's front-end opens a session at the
// agent's first prompt, before the agent shows (in its transcript) that
// the conversation continues one another session recorded. It does
// anything only while id's index holds the meta row key (the pending
// prompt the front-end recorded with SetMeta), and holds id's rewind lock,
// so that parallel hooks adopt once and wait for it. decide is called with
// the row's value and id's workspace root, and returns either keep, the
// row's new value (look again later), or parent and turn: the session, of
// the same workspace, and the turn whose prompt the conversation continues
// before. With neither the row goes. When id then holds nothing but one
// turn, without files, and no op, its index is replaced by a fork of
// parent before turn, and that one turn's prompt is opened again in it:
// TurnResult.Opened says so, and Checkpoint is the turn. It fails, the
// session left as it is, while another connection has id's index open (a
// hook that opened it before: its writes would go to the replaced file).
func (s *Store) Adopt(ctx context.Context, id, key string, decide func(value, workspace string) (keep, parent string, turn int)) (TurnResult, error) {
	var res TurnResult
	if !checkpoints.ValidSession(id) || !s.hasIndex(id) {
		return res, nil
	}
	err := lockSession(ctx, flock.New(filepath.Join(checkpoints.SessionDir(s.dir, id), "ops.lock")), id, func() error {
		x, err := checkpoints.OpenSession(ctx, s.dir, id, false)
		if err != nil {
			return err
		}
		root, prompt, parent, turn, err := adoption(ctx, x, key, decide)
		if err = errors.Join(err, x.Close()); err != nil || parent == "" {
			return err
		}
		if err := s.discardIndex(ctx, id); err != nil {
			return fmt.Errorf("controller: replace session %s by a fork: %w", id, err)
		}
		c, err := s.Open(ctx, Options{Workspace: root, Session: parent, NoAutoRetention: true})
		if err != nil {
			return err
		}
		_, err = c.Fork(ctx, turn, ForkOptions{To: id, lockHeld: true})
		if err = errors.Join(err, c.Close()); err != nil {
			return fmt.Errorf("controller: fork of session %s at turn %d: %w", parent, turn, err)
		}
		if c, err = s.Open(ctx, Options{Workspace: root, Session: id, NoAutoRetention: true, lockHeld: true}); err != nil {
			return err
		}
		res, err = c.BeginTurn(ctx, prompt, TurnOptions{})
		return errors.Join(err, c.Close())
	})
	return res, err
}

// adoption reads, in session index x, the row key and asks decide what to
// do about it; it returns the parent and turn to fork, with the session's
// workspace and its one turn's prompt, when the session may be replaced:
// it holds that one turn, without files, and no op. The row is rewritten
// (keep) or removed.
func adoption(ctx context.Context, x *checkpoints.Index, key string, decide func(value, workspace string) (keep, parent string, turn int)) (root, prompt, parent string, turn int, err error) {
	v, err := x.Meta(ctx, key)
	if errors.Is(err, checkpoints.ErrNotFound) {
		return "", "", "", 0, nil // another hook adopted it, or decided
	}
	if err != nil {
		return "", "", "", 0, err
	}
	root, err = x.Meta(ctx, "workspace")
	if err != nil {
		return "", "", "", 0, err
	}
	keep, parent, turn := decide(v, root)
	if keep != "" {
		return "", "", "", 0, x.SetMeta(ctx, key, keep)
	}
	if err := x.DeleteMeta(ctx, key); err != nil || parent == "" {
		return "", "", "", 0, err
	}
	cps, err := x.Checkpoints(ctx)
	if err != nil || len(cps) != 1 {
		return "", "", "", 0, err
	}
	ops, err := x.Journal(ctx, false)
	if err != nil || len(ops) != 0 {
		return "", "", "", 0, err
	}
	cp, err := x.Turn(ctx, cps[0].Turn)
	if err != nil || len(cp.Files) != 0 {
		return "", "", "", 0, err
	}
	return root, cp.Prompt, parent, turn, nil
}

// lockSession runs fn holding lock, a session's rewind lock, waiting up to
// two minutes for it (then failing wrapping ErrBusy).
func lockSession(ctx context.Context, lock *flock.Flock, session string, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ok, err := lock.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			err = ErrBusy
		}
		return fmt.Errorf("controller: lock session %s: %w", session, err)
	}
	defer lock.Unlock()
	return fn()
}

// discardIndex deletes session id's index (and its SQLite side files), and
// its registration, so that a fork can be made into the id. The caller
// holds the session's rewind lock and has made sure it holds nothing worth
// keeping.
func (s *Store) discardIndex(ctx context.Context, id string) error {
	// A connection another hook opened before the adoption would write
	// into the deleted file: what it recorded would be lost.
	if err := checkpoints.Unshared(ctx, s.dir, id); err != nil {
		return err
	}
	if err := checkpoints.Unregister(s.dir, id); err != nil {
		return err
	}
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm"} {
		err := os.Remove(filepath.Join(checkpoints.SessionDir(s.dir, id), checkpoints.FileName+suffix))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
