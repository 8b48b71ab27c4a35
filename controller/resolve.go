package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ckpt/ckpt/internal/quote"
)

// ResolveOptions say where a front-end runs and what it was told, for
// Store.Resolve.
type ResolveOptions struct {
	// Dir is the directory the front-end runs in: the workspace is the
	// nearest enclosing directory that is a session's workspace in the
	// store, else Dir itself (see Resolve). Ignored when Workspace is set.
	// With neither Dir nor Workspace, Resolve settles a named session
	// store-wide (for a command on the store, such as removing a
	// session): the Location's Workspace is the one the session was
	// created for, when it exists.
	Dir string
	// Workspace is a workspace given explicitly (a flag, a variable, a
	// folder a person chose): it is used as given, not searched upward.
	Workspace string
	// Session is the session named, or "" for the workspace's most
	// recently active one. Unless Create is set, it may be a unique
	// prefix of the session's id.
	Session string
	// Create says the front-end records (a turn, a capture, a hook): the
	// session may not exist yet, and a name is taken as the whole id
	// (a new id may start like an old one). Without it the session must
	// exist.
	Create bool
}

// Location is where a command runs: its workspace root and session.
type Location struct {
	Workspace string // absolute, symlinks resolved
	Session   string
	// Found says the workspace was found as an enclosing directory that
	// has a session in the store (or as the named session's workspace),
	// rather than taken as the directory itself.
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

// Resolve settles the workspace and the session a front-end serves, by
// one rule for every front-end (the CLI, agent hooks, a server):
//   - a named session is that session, or the one whose id starts with
//     the name (unless o.Create); one that is an agent session continuing
//     another (Store.Continue) is that other session (Location.Continued);
//   - an explicit o.Workspace is used as given; else a named session that
//     exists keeps the workspace it was created for when o.Dir is inside
//     it; else the workspace is the nearest directory enclosing o.Dir
//     (o.Dir included) that is the workspace of a session in the store,
//     as git finds its repository (Location.Found), else o.Dir itself;
//   - with no session named, the session is the workspace's most recently
//     active one, agent's or person's (the one that last opened a turn
//     there, else the one last used), else its default one
//     (WorkspaceSession), and Location.Picked says when it is neither
//     named nor the default, for the front-end to say which it uses;
//   - with neither o.Dir nor o.Workspace, a named session is settled
//     store-wide, with the workspace it was created for when it exists
//     (Location.OfSession). Its index is read for that: one that cannot
//     be read fails (as Open would) with o.Create, and leaves the
//     Workspace empty without it (a command on the store may remove it).
//
// Unless o.Create, the session must exist: Resolve fails with a
// *SessionError listing the workspace's sessions when it does not, and
// with one listing the matches for a prefix of several ids. It only reads
// (but for recording, once, what an older ckpt kept as link files: see
// Store.Continue); Open the Location's session next (with
// Options.NoCreate unless o.Create).
func (s *Store) Resolve(ctx context.Context, o ResolveOptions) (Location, error) {
	named := o.Session != ""
	if named && !o.Create && !s.hasSession(o.Session) {
		ids, err := s.sessionIDs(o.Session)
		if err != nil {
			return Location{}, err
		}
		switch {
		case len(ids) == 1:
			o.Session = ids[0]
		case len(ids) > 1:
			return Location{}, &SessionError{Location: Location{Session: o.Session}, Store: s.dir, Named: true, Ambiguous: ids}
		}
	}
	var loc Location
	switch {
	case o.Workspace == "" && o.Dir == "" && !named:
		return Location{}, errors.New("controller: Resolve needs a directory, a workspace or a session")
	case o.Workspace == "" && o.Dir == "":
		return s.storeWide(ctx, o.Session, o.Create)
	case o.Workspace != "":
		root, err := WorkspaceRoot(o.Workspace)
		if err != nil {
			return Location{}, err
		}
		loc = Location{Workspace: root, Session: o.Session}
	default:
		var err error
		if loc, err = s.locate(ctx, o.Dir, o.Session); err != nil {
			return Location{}, err
		}
	}
	if !named {
		loc.Session = WorkspaceSession(loc.Workspace)
		active, err := s.activeSession(ctx, loc.Workspace)
		if err != nil {
			return Location{}, err
		}
		if active != "" && active != loc.Session {
			loc.Session, loc.Picked = active, true
		}
	}
	if o.Create || s.hasSession(loc.Session) {
		return loc, nil
	}
	ss, err := s.workspaceSessions(ctx, loc.Workspace)
	if err != nil {
		return Location{}, err
	}
	return loc, &SessionError{Location: loc, Store: s.dir, Named: named, Sessions: ss}
}

// storeWide is Resolve of session with neither a directory nor a
// workspace.
func (s *Store) storeWide(ctx context.Context, session string, create bool) (Location, error) {
	loc := Location{Session: session}
	root, ok, err := s.sessionWorkspace(ctx, session)
	switch {
	case err != nil && create:
		return Location{}, err
	case ok:
		loc.Workspace, loc.Found, loc.OfSession = root, true, true
	}
	if create || ok || s.hasSession(session) {
		return loc, nil
	}
	return loc, &SessionError{Location: loc, Store: s.dir, Named: true}
}

// SessionError is what Resolve fails with when the session it settled on
// does not exist (Sessions lists the workspace's, most recently used
// first; none named and none there means the workspace has recorded
// nothing yet), or when the name given is the start of several sessions'
// ids (Ambiguous lists them). Location is where Resolve got to.
type SessionError struct {
	Location
	Store     string
	Named     bool // the session was named, not chosen
	Sessions  []SessionInfo
	Ambiguous []string
}

// Error says what is missing, and what there is instead, in one line.
func (e *SessionError) Error() string {
	if len(e.Ambiguous) > 0 {
		return fmt.Sprintf("session %q is the start of %d sessions: %s", e.Session, len(e.Ambiguous), strings.Join(e.Ambiguous, ", "))
	}
	if !e.Named && len(e.Sessions) == 0 {
		return fmt.Sprintf("%s has no session in store %s", quote.Path(e.Workspace), quote.Path(e.Store))
	}
	msg := fmt.Sprintf("no session %s in store %s", e.Session, quote.Path(e.Store))
	if e.Workspace == "" {
		return msg
	}
	if len(e.Sessions) == 0 {
		return fmt.Sprintf("%s, and %s has none", msg, quote.Path(e.Workspace))
	}
	var b strings.Builder
	for i, s := range e.Sessions {
		if i == 5 {
			fmt.Fprintf(&b, ", and %d more", len(e.Sessions)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%d turns)", s.ID, s.Turns)
	}
	return fmt.Sprintf("%s; sessions of %s, last active first: %s", msg, quote.Path(e.Workspace), b.String())
}
