package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/msg"
)

// statusInput is the part of the JSON Claude Code sends a statusLine
// command on stdin that ckpt reads.
type statusInput struct {
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd"`
	Workspace struct {
		CurrentDir string `json:"current_dir"`
		ProjectDir string `json:"project_dir"`
	} `json:"workspace"`
}

// StatusLine is the one line `ckpt statusline` prints for an agent's
// status line, given the JSON the agent sends it (input; nil or not JSON:
// none): the checkpoints of the session the input names (else session,
// else the active session of the workspace it is in), whether scan mode
// is on, whether undo has something to undo, how to rewind from inside
// the agent, and what is wrong with the hook server. It never fails: a
// problem is said in the line.
func (hd *Handler) StatusLine(ctx context.Context, session string, input []byte) string {
	var in statusInput
	json.Unmarshal(input, &in)
	line := hd.sessionStatus(ctx, session, in)
	proj := in.Workspace.ProjectDir
	if proj == "" {
		proj = in.Cwd
	}
	if p, _ := ServerProblem(hd.Store, proj); p != "" {
		return "ckpt: " + p + " · " + strings.TrimPrefix(line, "ckpt: ")
	}
	return line
}

// statusSession settles the session the status line is for by
// Store.Resolve's rule: the one in's event names (or the one it
// continues), else session, else the most recently active session of the
// workspace in's directory is in. ok is false when there is no directory
// to look from; a *controller.SessionError means the session has no
// checkpoints yet.
func (hd *Handler) statusSession(ctx context.Context, session string, in statusInput) (loc controller.Location, ok bool, err error) {
	dir := in.Workspace.ProjectDir
	if dir == "" {
		dir = in.Cwd
	}
	if dir == "" || !filepath.IsAbs(dir) {
		dir, _ = os.Getwd()
	}
	if _, err := os.Stat(dir); err != nil {
		dir = "" // no place to look from: a named session is settled store-wide
	}
	if in.SessionID != "" && controller.ValidSession(in.SessionID) {
		session = in.SessionID
	}
	if session == "" && dir == "" {
		return controller.Location{}, false, nil
	}
	loc, err = hd.store().Resolve(ctx, controller.ResolveOptions{Dir: dir, Session: session})
	return loc, true, err
}

// sessionStatus is the status line of the session in's event names.
func (hd *Handler) sessionStatus(ctx context.Context, session string, in statusInput) string {
	loc, ok, err := hd.statusSession(ctx, session, in)
	if !ok {
		return "ckpt: no workspace"
	}
	if se := (*controller.SessionError)(nil); errors.As(err, &se) {
		return "ckpt: no checkpoints yet"
	}
	if err != nil {
		return "ckpt: status unavailable"
	}
	own, err := hd.store().Resolve(ctx, controller.ResolveOptions{Session: loc.Session, Create: true})
	if err != nil {
		return "ckpt: status unavailable"
	}
	if !own.OfSession {
		return "ckpt: no checkpoints yet"
	}
	root := own.Workspace
	session = loc.Session
	c, err := controller.Open(ctx, controller.Options{Workspace: root, Session: session, Store: hd.Store, NoAutoRetention: true, ExitAfterClose: hd.ExitAfterClose})
	if err != nil {
		return "ckpt: status unavailable"
	}
	defer c.Close()
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{NoFiles: true})
	if err != nil {
		return "ckpt: status unavailable"
	}
	parts := []string{msg.Plural(len(cps), "checkpoint")}
	if scan, err := c.Meta(ctx, "scan"); err == nil {
		parts = append(parts, "scan "+scan)
	}
	hint := ""
	if hist, err := c.History(ctx); err == nil {
		undo := "nothing to undo"
		for _, h := range hist {
			if !h.NextUndo {
				continue
			}
			undo = "undo ready"
			// Files rewound (/ckpt-rewind): the conversation follows
			// in one step, from a terminal.
			if h.Kind == "rewind" && h.Scope == controller.ScopeCode && h.Step == 0 {
				hint = fmt.Sprintf("chat too: ckpt rewind %d --scope both --resume-claude", h.Turn)
			}
		}
		parts = append(parts, undo)
	}
	// Inside the agent, the way to rewind from there.
	if in.SessionID != "" {
		if hint == "" && len(cps) > 0 {
			hint = rewindHint(root)
		}
		if hint != "" {
			parts = append(parts, hint)
		}
	}
	return "ckpt: " + strings.Join(parts, " · ")
}

// rewindHint is how to rewind from inside the agent whose status line
// this is, for the workspace ws, or "".
func rewindHint(ws string) string {
	for _, ag := range agent.All() {
		if sl, ok := ag.(agent.StatusLiner); ok {
			if h := sl.RewindHint(ws); h != "" {
				return h
			}
		}
	}
	return ""
}
