package controller

import (
	"context"
	"os"
	"path/filepath"

	"github.com/ckpt/ckpt/checkpoints"
)

// Session metadata: short key/value rows in a session's index that a
// front-end keeps about its agent (which agent recorded the session, where
// each turn begins in the agent's own conversation). The controller
// neither reads nor interprets them.

// Meta returns the session's value for key, or ErrNotFound.
func (c *Controller) Meta(ctx context.Context, key string) (string, error) {
	return c.idx.Meta(ctx, key)
}

// SetMeta sets the session's value for key.
func (c *Controller) SetMeta(ctx context.Context, key, value string) error {
	return c.idx.SetMeta(ctx, key, value)
}

// SessionDir is session id's directory in the store: a front-end may keep
// its own small files there, beside the index.
func (s *Store) SessionDir(id string) string { return checkpoints.SessionDir(s.dir, id) }

// HasIndex reports whether session id of the store has an index.
func (s *Store) HasIndex(id string) bool {
	if !checkpoints.ValidSession(id) {
		return false
	}
	_, err := os.Stat(s.IndexPath(id))
	return err == nil
}

// IndexPath is the file of session id's index: a server that keeps a
// session open compares it with the file it opened, to tell that another
// process replaced the index (Adopt, a fork into the id).
func (s *Store) IndexPath(id string) string {
	return filepath.Join(checkpoints.SessionDir(s.dir, id), checkpoints.FileName)
}

// SessionView reads a session's index without its workspace or a
// controller: its metadata and turns, for a front-end looking across the
// store's sessions.
type SessionView struct{ x *checkpoints.Index }

// View opens session id of the store for reading. It does not create a
// session: one the store never had is ErrNotFound, and one whose index is
// lost a *NoIndexError.
func (s *Store) View(ctx context.Context, id string) (*SessionView, error) {
	if ok, err := checkpoints.HasSession(s.dir, id); err != nil {
		return nil, err
	} else if !ok {
		return nil, checkpoints.ErrNotFound
	}
	x, err := checkpoints.OpenSession(ctx, s.dir, id, false)
	if err != nil {
		return nil, err
	}
	return &SessionView{x: x}, nil
}

// Close closes the view.
func (v *SessionView) Close() error { return v.x.Close() }

// Meta returns the session's value for key, or ErrNotFound.
func (v *SessionView) Meta(ctx context.Context, key string) (string, error) {
	return v.x.Meta(ctx, key)
}

// Turns lists the turns of the active history, oldest first, without
// their files.
func (v *SessionView) Turns(ctx context.Context) ([]Checkpoint, error) {
	cps, err := v.x.Checkpoints(ctx)
	out := make([]Checkpoint, len(cps))
	for i, cp := range cps {
		out[i] = Checkpoint{Checkpoint: cp}
	}
	return out, err
}
