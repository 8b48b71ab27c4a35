package controller

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

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
// written by BeginTurnWith only when it names another session, so the
// turn's cost is one small read. It is a hint: one that is missing (a
// store older than it), unreadable or naming a session the store no longer
// has gives way to the sessions' own last use, read from the catalog.
const activeSuffix = ".active"

// activePath is the file naming the session last active in root.
func activePath(store, root string) string {
	return filepath.Join(store, workspacesDir, WorkspaceSession(root)+activeSuffix)
}

// noteActive records that c's session is the one last active in its
// workspace. A failure costs only the hint: it is not the turn's.
func (c *Controller) noteActive() {
	path := activePath(c.st.Dir(), c.ws.Root())
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == c.session {
		return
	}
	if err := atomicfile.WriteFile(path, []byte(c.session+"\n"), 0o600); err != nil {
		c.log.Warn("controller: active session hint", "err", err)
	}
}

// HasSession reports whether store has had session id (it may be opened
// without creating it; its lost index is then an error). It creates
// nothing: a store directory that does not exist has no sessions.
func HasSession(store, id string) bool {
	if _, err := os.Stat(store); err != nil {
		return false
	}
	ok, _ := checkpoints.HasSession(store, id)
	return ok
}

// SessionUse is one session of a workspace, for a front-end choosing or
// listing them.
type SessionUse struct {
	ID      string
	Turns   int       // in the active history
	LastUse time.Time // zero for a session that never did anything
}

// WorkspaceSessions lists the sessions of store created for the workspace
// rooted at root (absolute, symlinks resolved), most recently used first.
// It reads the store's catalog (see Store.Sessions); sessions whose index
// cannot be read are left out. A store directory that does not exist has
// none, and is not created.
func WorkspaceSessions(ctx context.Context, store, root string) ([]SessionUse, error) {
	if _, err := os.Stat(store); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	ss, err := retention.Summaries(ctx, store)
	if err != nil {
		return nil, err
	}
	var out []SessionUse
	for _, s := range ss {
		if s.Err == nil && s.Workspace == root {
			out = append(out, SessionUse{ID: s.ID, Turns: s.Active(), LastUse: s.LastUse})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastUse.After(out[j].LastUse) })
	return out, nil
}

// ActiveSession returns the session of the workspace rooted at root that
// was active last, agent's or person's: the one that last opened a turn
// there, else the one whose last use is the latest. It is "" when the
// workspace has no session in store. It only reads.
func ActiveSession(ctx context.Context, store, root string) (string, error) {
	if b, err := os.ReadFile(activePath(store, root)); err == nil {
		if id := strings.TrimSpace(string(b)); ValidSession(id) && HasSession(store, id) {
			return id, nil
		}
	}
	ss, err := WorkspaceSessions(ctx, store, root)
	if err != nil || len(ss) == 0 {
		return "", err
	}
	return ss[0].ID, nil
}

// MatchSessions returns the ids of store's sessions that start with
// prefix, sorted: a front-end takes a unique one for a session named by
// the start of its id.
func MatchSessions(store, prefix string) ([]string, error) {
	if _, err := os.Stat(store); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	ids, err := checkpoints.Sessions(store)
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
