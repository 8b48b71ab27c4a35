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
// session's own setting, else its workspace's default (Store.WorkspaceScan),
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
// session exists, and its workspace, a store-wide Resolve says; Store.Open
// with Options.NoCreate opens it to read its metadata and turns.
func (s *Store) SessionDir(id string) string { return checkpoints.SessionDir(s.dir, id) }

// hasIndex reports whether session id of the store has an index file.
func (s *Store) hasIndex(id string) bool {
	if !checkpoints.ValidSession(id) {
		return false
	}
	_, err := os.Stat(filepath.Join(checkpoints.SessionDir(s.dir, id), checkpoints.FileName))
	return err == nil
}
