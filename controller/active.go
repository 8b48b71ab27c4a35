package controller

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/ckpt/ckpt/retention"
)

// A workspace's sessions are its default one (WorkspaceSession) and every
// session an agent or a person recorded there under an id of their own.
// Beside each workspace marker the store keeps the id of the session that
// last opened a turn in the workspace:
//
//	STORE/workspaces/ID.active   a session id, one line
//
// written by BeginTurn only when it names another session, so the
// turn's cost is one small read. It is a hint: one that is missing (a
// store older than it), unreadable or naming a session the store no longer
// has gives way to the sessions' own last use, read from the catalog.
const activeSuffix = ".active"

// activePath is the file naming the session last active in root.
func (s *Store) activePath(root string) string {
	return filepath.Join(s.dir, workspacesDir, WorkspaceSession(root)+activeSuffix)
}

// noteActive records that c's session is the one last active in its
// workspace. A failure costs only the hint: it is not the turn's.
func (c *Controller) noteActive() {
	path := c.st.activePath(c.ws.Root())
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == c.session {
		return
	}
	if err := atomicfile.WriteFile(path, []byte(c.session+"\n"), 0o600); err != nil {
		c.log.Warn("controller: active session hint", "err", err)
	}
}

// hasSession reports whether the store has had session id: registered, or
// with an index file (see checkpoints.HasSession), readable or not. It may
// be opened without creating it (its lost index is then an error). It
// creates nothing: a store directory that does not exist has no sessions.
func (s *Store) hasSession(id string) bool {
	if _, err := os.Stat(s.dir); err != nil {
		return false
	}
	ok, _ := checkpoints.HasSession(s.dir, id) // an unreadable registry: the command fails on it next
	return ok
}

// workspaceSessions lists the sessions of the workspace rooted at root
// (Sessions with a workspace).
func (s *Store) workspaceSessions(ctx context.Context, root string) ([]SessionInfo, error) {
	if _, err := os.Stat(s.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	ss, err := retention.Summaries(ctx, s.dir)
	if err != nil {
		return nil, err
	}
	var out []SessionInfo
	for _, sum := range ss {
		if sum.Err == nil && sum.Workspace == root {
			out = append(out, sessionInfo(sum))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastUse.After(out[j].LastUse) })
	return out, nil
}

// activeSession returns the session of the workspace rooted at root that
// was active last, agent's or person's: the one that last opened a turn
// there, else the one whose last use is the latest. It is "" when the
// workspace has no session in the store. It only reads.
func (s *Store) activeSession(ctx context.Context, root string) (string, error) {
	if b, err := os.ReadFile(s.activePath(root)); err == nil {
		if id := strings.TrimSpace(string(b)); ValidSession(id) && s.hasSession(id) {
			return id, nil
		}
	}
	ss, err := s.workspaceSessions(ctx, root)
	if err != nil || len(ss) == 0 {
		return "", err
	}
	return ss[0].ID, nil
}

// sessionIDs returns the ids of the store's session directories that
// start with prefix ("" for all), sorted: Resolve takes a unique one for a
// session named by the start of its id. It only reads.
func (s *Store) sessionIDs(prefix string) ([]string, error) {
	if _, err := os.Stat(s.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	ids, err := checkpoints.Sessions(s.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	return out, nil
}
