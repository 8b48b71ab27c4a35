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
// neither reads nor interprets them, but for one key of its own: scanKey.

// scanKey is the session's setting the controller reads: scan mode.
const scanKey = "scan"

// Meta returns the session's value for key, or ErrNotFound. Key "scan"
// is the session's scan mode, "on" or "off" (never ErrNotFound): the
// session's own setting, else its workspace's default (SetWorkspaceScan),
// else "off".
func (c *Controller) Meta(ctx context.Context, key string) (string, error) {
	if key == scanKey {
		on, _, err := c.scanSetting(ctx)
		if on {
			return "on", err
		}
		return "off", err
	}
	return c.idx.Meta(ctx, key)
}

// SetMeta sets the session's value for key. Key "scan" turns scan mode
// "on" or "off" for every turn of the session (see TurnOptions.Scan);
// "on" fails with ErrScanRefused where no scan may run (a home directory,
// a filesystem root).
func (c *Controller) SetMeta(ctx context.Context, key, value string) error {
	if key == scanKey {
		return c.setScan(ctx, value)
	}
	return c.idx.SetMeta(ctx, key, value)
}

// SessionDir is session id's directory in the store: a front-end may keep
// its own small files there, beside the session's index, the file
// index.db (which a server keeping the session open may stat to tell that
// another process replaced it: Adopt, a fork into the id). Whether the
// session exists is HasSession.
func (s *Store) SessionDir(id string) string { return checkpoints.SessionDir(s.dir, id) }

// hasIndex reports whether session id of the store has an index file.
func (s *Store) hasIndex(id string) bool {
	if !checkpoints.ValidSession(id) {
		return false
	}
	_, err := os.Stat(filepath.Join(checkpoints.SessionDir(s.dir, id), checkpoints.FileName))
	return err == nil
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
