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
	// store, else Dir itself (see Locate). Ignored when Workspace is set.
	// With neither Dir nor Workspace, Resolve settles a named session
	// store-wide (for a command on the store, such as removing a
	// session): the Location's Workspace is empty.
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

// Resolve settles the session a front-end serves, by one rule for every
// front-end: a named session is that session, or the one whose id starts
// with the name (unless o.Create); with none named, the workspace's most
// recently active session (ActiveSession), agent's or person's, else its
// default one (WorkspaceSession), and Location.Picked says when it is
// neither named nor the default, for the front-end to say which it uses.
//
// Unless o.Create, the session must exist: Resolve fails with a
// *SessionError listing the workspace's sessions when it does not, and
// with one listing the matches for a prefix of several ids. It only
// reads; Open the Location's session next (with Options.NoCreate unless
// o.Create).
func (s *Store) Resolve(ctx context.Context, o ResolveOptions) (Location, error) {
	named := o.Session != ""
	if named && !o.Create && !s.HasSession(o.Session) {
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
		loc = Location{Session: o.Session}
		if o.Create || s.HasSession(loc.Session) {
			return loc, nil
		}
		return loc, &SessionError{Location: loc, Store: s.dir, Named: true}
	case o.Workspace != "":
		root, err := WorkspaceRoot(o.Workspace)
		if err != nil {
			return Location{}, err
		}
		loc = Location{Workspace: root, Session: o.Session}
	default:
		var err error
		if loc, err = s.Locate(ctx, o.Dir, o.Session); err != nil {
			return Location{}, err
		}
	}
	if !named {
		loc.Session = WorkspaceSession(loc.Workspace)
		active, err := s.ActiveSession(ctx, loc.Workspace)
		if err != nil {
			return Location{}, err
		}
		if active != "" && active != loc.Session {
			loc.Session, loc.Picked = active, true
		}
	}
	if o.Create || s.HasSession(loc.Session) {
		return loc, nil
	}
	ss, err := s.WorkspaceSessions(ctx, loc.Workspace)
	if err != nil {
		return Location{}, err
	}
	return loc, &SessionError{Location: loc, Store: s.dir, Named: named, Sessions: ss}
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
