package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/controller"
	"github.com/spf13/cobra"
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

func newStatusLineCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "statusline",
		Short: "Print one short line for Claude Code's statusLine (its JSON on stdin)",
		Long: `Read the JSON Claude Code sends its statusLine command on stdin and print
one line: the checkpoints in this session, whether scan mode is on,
whether "ckpt undo" has something to undo, and, inside Claude Code, how to
rewind: /ckpt-rewind TURN when "ckpt install claude" gave Claude Code that
command, and after it rewound the files to a turn, the command that
rewinds the conversation to that turn too. With no JSON on stdin it
reports the session the global flags select. It never fails: a problem
prints a short line and exits 0, so the status bar never shows an error.
"ckpt install claude --statusline" sets it up.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(a.stdout, a.statusLine(cmd.Context()))
			return nil
		},
	}
}

func (a *app) statusLine(ctx context.Context) string {
	var in statusInput
	if a.stdin != nil {
		if f, ok := a.stdin.(*os.File); !ok || !isatty.IsTerminal(f.Fd()) {
			data, _ := io.ReadAll(io.LimitReader(a.stdin, 1<<20))
			json.Unmarshal(data, &in)
		}
	}
	line := a.sessionStatus(ctx, in)
	proj := in.Workspace.ProjectDir
	if proj == "" {
		proj = in.Cwd
	}
	if p, _ := hookServerProblem(a.store, proj); p != "" {
		return "ckpt: " + p + " · " + strings.TrimPrefix(line, "ckpt: ")
	}
	return line
}

// statusSession is the session the status line is for: the one in's
// event names (or the one it continues), else --session, else the active
// session of the workspace in's directory is in; ok is false when there
// is no workspace.
func (a *app) statusSession(ctx context.Context, in statusInput) (session string, ok bool) {
	session = a.session
	dir := in.Workspace.ProjectDir
	if dir == "" {
		dir = in.Cwd
	}
	if dir == "" || !filepath.IsAbs(dir) {
		dir, _ = os.Getwd()
	}
	if in.SessionID != "" && controller.ValidSession(in.SessionID) {
		session = in.SessionID
		if loc, err := controller.OpenStore(a.store).Locate(ctx, dir, session); err == nil {
			session = loc.Session // the session a forked conversation continues
		}
	}
	if session != "" {
		return session, true
	}
	if dir == "" {
		return "", false
	}
	loc, err := controller.OpenStore(a.store).Locate(ctx, dir, "")
	if err != nil {
		return "", false
	}
	session = loc.Session
	if s, err := controller.OpenStore(a.store).ActiveSession(ctx, loc.Workspace); err == nil && s != "" {
		session = s
	}
	return session, true
}

// sessionStatus is the status line of the session in's event names.
func (a *app) sessionStatus(ctx context.Context, in statusInput) string {
	session, ok := a.statusSession(ctx, in)
	if !ok {
		return "ckpt: no workspace"
	}
	root, ok, err := controller.OpenStore(a.store).SessionWorkspace(ctx, session)
	if err != nil {
		return "ckpt: status unavailable"
	}
	if !ok {
		return "ckpt: no checkpoints yet"
	}
	c, err := controller.Open(ctx, controller.Options{Workspace: root, Session: session, Store: a.store, NoAutoRetention: true})
	if err != nil {
		return "ckpt: status unavailable"
	}
	defer a.closeController(c)
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{NoFiles: true})
	if err != nil {
		return "ckpt: status unavailable"
	}
	parts := []string{plural(len(cps), "checkpoint")}
	if on, err := c.ScanSetting(ctx); err == nil {
		parts = append(parts, map[bool]string{true: "scan on", false: "scan off"}[on])
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
	// Inside Claude Code, the way to rewind from there.
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
