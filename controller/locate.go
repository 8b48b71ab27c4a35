package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/internal/atomicfile"
)

// A store keeps one small marker file per workspace it has a session for:
//
//	STORE/workspaces/ID   the workspace's root path, one line; then
//	                      "scan on" or "scan off" when the workspace has a
//	                      scan-mode default (SetWorkspaceScan)
//
// where ID is WorkspaceSession(root). The markers let Locate find the
// workspace enclosing a directory with one stat per ancestor, as git finds
// its repository, without opening any session's index.
const workspacesDir = checkpoints.WorkspacesDir

// WorkspaceSession returns the id of the default session of the workspace
// rooted at root (absolute, symlinks resolved, as Workspace.Root gives it):
// the root's base name, made safe for a session id and cut to 40
// characters, then a dash and 12 hex digits of the SHA-256 of the whole
// root. Two workspaces get two default sessions; the name keeps `ckpt
// sessions` readable.
func WorkspaceSession(root string) string {
	sum := sha256.Sum256([]byte(root))
	var b strings.Builder
	for _, r := range filepath.Base(root) {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	name := strings.TrimLeft(b.String(), ".")
	if name == "" || name == "-" {
		name = "root"
	}
	return name + "-" + hex.EncodeToString(sum[:6])
}

// WorkspaceRoot returns the root of the workspace dir names: absolute,
// symlinks resolved, as Open and WorkspaceSession take it. It fails when
// dir is not a directory.
func WorkspaceRoot(dir string) (string, error) {
	ws, err := capture.NewWorkspace(dir)
	if err != nil {
		return "", err
	}
	defer ws.Close()
	return ws.Root(), nil
}

// Location is where a command runs: its workspace root and session.
type Location struct {
	Workspace string // absolute, symlinks resolved
	Session   string
	// Found says the workspace was found as an enclosing directory that
	// has a session in the store (or as the named session's workspace),
	// rather than taken as dir itself.
	Found bool
	// OfSession says the workspace is the one the named session, which
	// exists, was created for.
	OfSession bool
	// Continued says the session named is an agent session that
	// continues Session (Store.Continue): ContinuedAt is the agent's
	// conversation entry its fork began after ("" when unknown), and
	// ContinuedIn the agent session whose transcript holds it.
	Continued                bool
	ContinuedAt, ContinuedIn string
	// Picked says Resolve chose the workspace's most recently active
	// session, which is neither named nor its default: a front-end says
	// which session it uses.
	Picked bool
}

// Locate decides the workspace and session for a command started in dir
// with the session named session (empty for the workspace's default):
//   - a named session that exists keeps the workspace it was created for
//     when dir is inside it;
//   - otherwise the workspace is the nearest directory enclosing dir
//     (dir included) that is the workspace of a session in the store, as
//     git finds its repository, else dir itself;
//   - with no session named, the session is the workspace's default
//     (WorkspaceSession of its root);
//   - a named session that is an agent session continuing another
//     (Store.Continue) is that other session (Location.Continued).
//
// Locate only reads (but for recording, once, what an older ckpt kept as
// link files: see Store.Continue). An explicit workspace (a flag, $CKPT_WORKSPACE) skips
// it: call WorkspaceSession for the default session instead.
func (s *Store) Locate(ctx context.Context, dir, session string) (Location, error) {
	ws, err := capture.NewWorkspace(dir)
	if err != nil {
		return Location{}, err
	}
	start := ws.Root()
	loc := Location{Workspace: start, Session: session}
	if co, ok, err := s.continuation(ctx, session); err != nil {
		return Location{}, err
	} else if ok {
		session = co.Session
		loc.Session, loc.Continued, loc.ContinuedAt, loc.ContinuedIn = co.Session, true, co.At, co.In
	}
	if session != "" {
		root, ok, err := s.SessionWorkspace(ctx, session)
		if err != nil {
			return Location{}, err
		}
		if ok && within(root, start) {
			loc.Workspace, loc.Found, loc.OfSession = root, true, true
			return loc, nil
		}
	}
	for d := start; ; d = filepath.Dir(d) {
		if s.known(d) {
			loc.Workspace, loc.Found = d, true
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if loc.Session == "" {
		loc.Session = WorkspaceSession(loc.Workspace)
	}
	return loc, nil
}

// known reports whether root is the workspace of a session in the store.
func (s *Store) known(root string) bool {
	_, ok := s.readMarker(root)
	return ok
}

// readMarker reads root's marker: ok is false when there is none (or it
// names another root, whose id collides), scan is its scan line's value.
func (s *Store) readMarker(root string) (scan string, ok bool) {
	b, err := os.ReadFile(filepath.Join(s.dir, workspacesDir, WorkspaceSession(root)))
	if err != nil {
		return "", false
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	if first != root {
		return "", false
	}
	scan, _ = strings.CutPrefix(strings.TrimSpace(rest), "scan ")
	return scan, true
}

// SetWorkspaceScan sets the scan-mode default of the workspace rooted at
// root (absolute, symlinks resolved, as WorkspaceRoot gives it) to on:
// every session of the workspace whose own setting was never made
// (SetMeta "scan") takes it, sessions of any agent, new ones included. With set
// false it removes the default instead, if there is one (on is not read):
// the sessions go back to their own settings (off when never set). Either
// way root is then a workspace of the store, as its first session makes
// it: Locate finds it from any directory below it (what `ckpt install
// --no-scan` asks, so that an agent's hook from a subdirectory records
// into the workspace's session). It mirrors WorkspaceScan. Turning it on
// fails wrapping ErrScanRefused for a home directory or a filesystem root.
func (s *Store) SetWorkspaceScan(root string, on, set bool) error {
	if !set {
		if _, set := s.WorkspaceScan(root); !set {
			return s.markWorkspace(root)
		}
		if err := atomicfile.WriteFile(filepath.Join(s.dir, workspacesDir, WorkspaceSession(root)), []byte(root+"\n"), 0o600); err != nil {
			return fmt.Errorf("controller: workspace marker: %w", err)
		}
		return nil
	}
	if on {
		if err := scanAllowedAt(root); err != nil {
			return err
		}
	}
	dir := filepath.Join(s.dir, workspacesDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("controller: workspace marker: %w", err)
	}
	v := map[bool]string{true: "on", false: "off"}[on]
	if err := atomicfile.WriteFile(filepath.Join(dir, WorkspaceSession(root)), []byte(root+"\nscan "+v+"\n"), 0o600); err != nil {
		return fmt.Errorf("controller: workspace marker: %w", err)
	}
	return nil
}

// WorkspaceScan reports the scan-mode default of the workspace rooted at
// root; set is false when it has none.
func (s *Store) WorkspaceScan(root string) (on, set bool) {
	v, ok := s.readMarker(root)
	return v == "on", ok && (v == "on" || v == "off")
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// SessionWorkspace returns the workspace root session id was created for;
// ok is false when the store has no such session. A session the store has
// had whose index is lost is an error (a *NoIndexError).
func (s *Store) SessionWorkspace(ctx context.Context, id string) (root string, ok bool, err error) {
	if !checkpoints.ValidSession(id) {
		return "", false, fmt.Errorf("controller: session %q: %w", id, checkpoints.ErrBadSession)
	}
	if !s.HasSession(id) {
		return "", false, nil
	}
	idx, err := checkpoints.OpenSession(ctx, s.dir, id, false)
	if err != nil {
		return "", false, err
	}
	defer idx.Close()
	root, err = idx.Meta(ctx, "workspace")
	if errors.Is(err, checkpoints.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return root, true, nil
}

// markWorkspace records root as a workspace of the store, once, as its
// first session does: Locate then finds it from any directory below it.
func (s *Store) markWorkspace(root string) error {
	if s.known(root) {
		return nil
	}
	dir := filepath.Join(s.dir, workspacesDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("controller: workspace marker: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, WorkspaceSession(root)), []byte(root+"\n"), 0o600); err != nil {
		return fmt.Errorf("controller: workspace marker: %w", err)
	}
	return nil
}
