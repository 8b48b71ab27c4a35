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
//	                      scan-mode default (WorkspaceScan)
//
// where ID is WorkspaceSession(root). The markers let Resolve find the
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

// locate decides the workspace and session for a command started in dir
// with the session named session (empty for the workspace's default), for
// Resolve:
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
// It only reads (but for recording, once, what an older ckpt kept as
// link files: see Store.Continue).
func (s *Store) locate(ctx context.Context, dir, session string) (Location, error) {
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
		root, ok, err := s.sessionWorkspace(ctx, session)
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

// WorkspaceScan reads and sets the scan-mode default of the workspace
// rooted at root (absolute, symlinks resolved, as WorkspaceRoot gives it):
// the setting every session of the workspace whose own was never made
// (Controller.SetMeta "scan") takes, sessions of any agent, new ones included.
// It returns the default as it was before the call: "on", "off", or ""
// when there was none.
//
// to says what to do: "" only reads (which cannot fail: a marker that
// cannot be read is no default); "on" or "off" sets the default;
// "none" removes it, if there is one, and the sessions go back to their
// own settings (off when never set). Unless it only reads, root is then a
// workspace of the store, as its first session makes it: Resolve finds it
// from any directory below it (what `ckpt install --no-scan` asks, so that
// an agent's hook from a subdirectory records into the workspace's
// session). Turning it on fails wrapping ErrScanRefused for a home
// directory or a filesystem root.
func (s *Store) WorkspaceScan(root, to string) (was string, err error) {
	v, ok := s.readMarker(root)
	if v != "on" && v != "off" || !ok {
		v = ""
	}
	switch to {
	case "":
		return v, nil
	case "none":
		if v == "" {
			return v, s.markWorkspace(root)
		}
		if err := atomicfile.WriteFile(filepath.Join(s.dir, workspacesDir, WorkspaceSession(root)), []byte(root+"\n"), 0o600); err != nil {
			return v, fmt.Errorf("controller: workspace marker: %w", err)
		}
		return v, nil
	case "on":
		if err := scanAllowedAt(root); err != nil {
			return v, err
		}
	case "off":
	default:
		return v, fmt.Errorf("controller: workspace scan mode %q: want on, off or none", to)
	}
	dir := filepath.Join(s.dir, workspacesDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return v, fmt.Errorf("controller: workspace marker: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, WorkspaceSession(root)), []byte(root+"\nscan "+to+"\n"), 0o600); err != nil {
		return v, fmt.Errorf("controller: workspace marker: %w", err)
	}
	return v, nil
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// sessionWorkspace returns the workspace root session id was created for;
// ok is false when the store has no such session. A session the store has
// had whose index is lost is an error (a *retention.NoIndexError).
func (s *Store) sessionWorkspace(ctx context.Context, id string) (root string, ok bool, err error) {
	if !checkpoints.ValidSession(id) {
		return "", false, fmt.Errorf("controller: session %q: %w", id, checkpoints.ErrBadSession)
	}
	if !s.hasSession(id) {
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
// first session does: Resolve then finds it from any directory below it.
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
