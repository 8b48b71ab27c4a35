package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/controller"
	"github.com/spf13/cobra"
)

func init() {
	extraCommands = append(extraCommands, newHookCmd, newInstallCmd, newUninstallCmd)
}

// noPromptLabel labels a turn the hook opens itself because a tool call
// came before any prompt it saw (ckpt installed mid-session).
const noPromptLabel = "(turn opened by ckpt: no prompt seen)"

// maxHookInput bounds what the hook reads from stdin; Claude's events are
// a few KiB (a Write carries the new content in tool_input).
const maxHookInput = 64 << 20

// hookEvent is one agent hook event: Claude Code's JSON, which is also the
// generic protocol documented in the README ("Agent hooks").
type hookEvent struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	Prompt         *string         `json:"prompt"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	Source         string          `json:"source"`
}

// toolPaths is the part of tool_input the hook reads.
type toolPaths struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
}

// quietEvents are Claude Code events the hook accepts and has nothing to
// do for: they are not installed, but a hand-written settings file may
// route them here, and that is not a mistake worth a message.
var quietEvents = map[string]bool{
	"SessionStart": true, "PostToolUse": true, "Stop": true, "SubagentStop": true, "Notification": true,
	"PreCompact": true, "SessionEnd": true,
}

type hookOptions struct {
	agent  string // "claude" or "generic"
	strict bool
}

func newHookCmd(a *app) *cobra.Command {
	var o hookOptions
	cmd := &cobra.Command{
		Use:   "hook claude|generic",
		Short: "Handle one agent hook event (JSON on stdin); what `ckpt install claude` wires up",
		Long: `Read one agent hook event as JSON on stdin and record it:

  UserPromptSubmit  open a turn labelled with "prompt" (its user message)
  PreToolUse        Write, Edit, MultiEdit: capture tool_input.file_path;
                    NotebookEdit: capture tool_input.notebook_path;
                    Bash: in scan mode, make sure the turn has a manifest
  SessionStart, PostToolUse and other known events: accepted, nothing to do

The session is the event's session_id and the workspace its cwd (for
claude, $CLAUDE_PROJECT_DIR when cwd is inside it); --store or $CKPT_HOME
still chooses the store. Nothing is ever printed on stdout.

"generic" takes the same JSON from any agent; it captures
tool_input.file_path or notebook_path of every PreToolUse, whatever the
tool_name, and treats tool_name Bash or shell as a shell command.

A problem never stops the agent: one line on stderr and exit 0. With
--strict a PreToolUse whose capture fails blocks the tool call (exit 2,
the reason on stderr). Paths outside the workspace or inside .git are
skipped with a warning even with --strict. Malformed JSON and unknown
events are reported on stderr and record nothing.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || (args[0] != "claude" && args[0] != "generic") {
				return usagef("hook takes the agent: claude or generic (see ckpt hook --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.agent = args[0]
			return a.runHook(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.strict, "strict", false, "block the tool call (exit 2) when its capture fails")
	return cmd
}

// hookFailure is a problem the hook reports; block says whether it stops
// the tool call (only with --strict).
type hookFailure struct {
	msg   string
	block bool
}

// runHook handles one event. Every problem ends as one stderr line; only a
// blocking one changes the exit code (2, which Claude Code reads as "block
// the tool call and show stderr to the model").
func (a *app) runHook(ctx context.Context, o hookOptions) error {
	f := a.hook(ctx, o)
	if f == nil {
		return nil
	}
	a.say("ckpt: hook: %s", f.msg)
	if f.block {
		return silentError{exitUsage}
	}
	return nil
}

func (a *app) hook(ctx context.Context, o hookOptions) *hookFailure {
	in := a.stdin
	if in == nil {
		in = strings.NewReader("")
	}
	data, err := io.ReadAll(io.LimitReader(in, maxHookInput))
	if err != nil {
		return &hookFailure{msg: fmt.Sprintf("read event: %v; nothing recorded", err)}
	}
	plan, f := decodeHook(data, o.agent)
	if f != nil || plan.none {
		return f
	}
	ev, paths, shell := plan.ev, plan.paths, plan.shell

	// The workspace: the session's own when it exists and cwd is inside
	// it; for Claude Code, its project directory when cwd is inside that;
	// else the nearest enclosing workspace the store knows, else cwd.
	loc, err := controller.Locate(ctx, a.store, ev.Cwd, ev.SessionID)
	if err != nil {
		return &hookFailure{msg: oneLine(err) + "; nothing recorded", block: o.strict && ev.HookEventName == "PreToolUse"}
	}
	ws := loc.Workspace
	if o.agent == "claude" && !loc.OfSession {
		if p := claudeWorkspace(ev.Cwd); p != ev.Cwd {
			ws = p
		}
	}
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Session: ev.SessionID, Store: a.store})
	if err != nil {
		return &hookFailure{msg: oneLine(err) + "; nothing recorded", block: o.strict && ev.HookEventName == "PreToolUse"}
	}
	defer c.Close()
	if c.Recovered() != "" {
		a.say("ckpt: %s", c.Recovered())
	}
	h := hookRun{a: a, c: c, session: ev.SessionID, strict: o.strict}

	switch {
	case ev.HookEventName == "UserPromptSubmit":
		// Not blocking even with --strict: exit 2 here would erase the
		// user's prompt, which is worse than a turn without a checkpoint.
		res, err := c.BeginTurnWith(ctx, *ev.Prompt, controller.TurnOptions{})
		if err != nil {
			return &hookFailure{msg: "open turn: " + oneLine(err)}
		}
		if res.Warning != "" {
			a.say("ckpt: warning: %s", res.Warning)
		}
		return nil
	case shell:
		return h.ensureManifest(ctx)
	default:
		var fails []string
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(ev.Cwd, p)
			}
			if f := h.capture(ctx, p); f != nil {
				fails = append(fails, f.msg)
			}
		}
		if len(fails) > 0 {
			return &hookFailure{msg: strings.Join(fails, "; "), block: o.strict}
		}
		return nil
	}
}

// hookPlan is what one event asks for, decided from its JSON alone.
type hookPlan struct {
	ev    hookEvent
	paths []string // to capture: absolute, or relative to ev.Cwd
	shell bool     // a shell command is about to run
	none  bool     // nothing to do (a quiet event, a tool that does not write)
}

// decodeHook parses one event of agent ("claude" or "generic") and decides
// what it asks for, before any store is opened. It touches nothing.
func decodeHook(data []byte, agent string) (hookPlan, *hookFailure) {
	var ev hookEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("event is not valid JSON (%v); nothing recorded", err)}
	}
	if ev.HookEventName == "" {
		return hookPlan{}, &hookFailure{msg: "event has no hook_event_name; nothing recorded"}
	}
	switch ev.HookEventName {
	case "UserPromptSubmit", "PreToolUse":
	default:
		if quietEvents[ev.HookEventName] {
			return hookPlan{none: true}, nil
		}
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("unknown event %q; nothing recorded", ev.HookEventName)}
	}
	if ev.SessionID == "" || ev.Cwd == "" {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("%s event needs session_id and cwd; nothing recorded", ev.HookEventName)}
	}
	if !controller.ValidSession(ev.SessionID) {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("session_id %q: %v; nothing recorded", ev.SessionID, controller.ErrBadSession)}
	}
	if !filepath.IsAbs(ev.Cwd) {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("cwd %q is not absolute; nothing recorded", ev.Cwd)}
	}

	var paths []string
	shell := false
	if ev.HookEventName == "PreToolUse" {
		var tp toolPaths
		switch {
		case agent == "claude" && (ev.ToolName == "Write" || ev.ToolName == "Edit" || ev.ToolName == "MultiEdit"):
			if err := json.Unmarshal(ev.ToolInput, &tp); err != nil || tp.FilePath == "" {
				return hookPlan{}, &hookFailure{msg: fmt.Sprintf("%s event has no tool_input.file_path; nothing recorded", ev.ToolName)}
			}
			paths = append(paths, tp.FilePath)
		case agent == "claude" && ev.ToolName == "NotebookEdit":
			if err := json.Unmarshal(ev.ToolInput, &tp); err != nil || tp.NotebookPath == "" {
				return hookPlan{}, &hookFailure{msg: "NotebookEdit event has no tool_input.notebook_path; nothing recorded"}
			}
			paths = append(paths, tp.NotebookPath)
		case ev.ToolName == "Bash" || (agent == "generic" && ev.ToolName == "shell"):
			shell = true
		case agent == "generic":
			if len(ev.ToolInput) > 0 && json.Unmarshal(ev.ToolInput, &tp) == nil {
				for _, p := range []string{tp.FilePath, tp.NotebookPath} {
					if p != "" {
						paths = append(paths, p)
					}
				}
			}
		}
		if len(paths) == 0 && !shell {
			return hookPlan{none: true}, nil // a tool that does not write (Read, Grep, …)
		}
	}
	if ev.HookEventName == "UserPromptSubmit" && ev.Prompt == nil {
		return hookPlan{}, &hookFailure{msg: "UserPromptSubmit event has no prompt; nothing recorded"}
	}

	return hookPlan{ev: ev, paths: paths, shell: shell}, nil
}

// claudeWorkspace is the workspace for a Claude Code event: the project
// directory Claude Code exports to hooks when cwd is inside it (the agent's
// shell may have cd'd into a subdirectory, and a session has one
// workspace), else cwd.
func claudeWorkspace(cwd string) string {
	proj := os.Getenv("CLAUDE_PROJECT_DIR")
	if proj == "" || !filepath.IsAbs(proj) {
		return cwd
	}
	if rel, err := filepath.Rel(proj, cwd); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return proj
	}
	return cwd
}

type hookRun struct {
	a       *app
	c       *controller.Controller
	session string
	strict  bool
}

// capture records path into the open turn, opening one first when there
// is none. A path the design refuses to record (outside the workspace,
// inside .git) is skipped with a warning and is never a failure.
func (h hookRun) capture(ctx context.Context, path string) *hookFailure {
	_, err := h.c.Capture(ctx, path)
	if errors.Is(err, controller.ErrNoOpenTurn) {
		if err = h.ensureTurn(ctx); err == nil {
			_, err = h.c.Capture(ctx, path)
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, controller.ErrOutsideWorkspace) || errors.Is(err, controller.ErrVCSDir):
		h.a.say("ckpt: hook: warning: skipped %s: %s", path, oneLine(err))
		return nil
	default:
		return &hookFailure{msg: "capture " + oneLine(err)}
	}
}

// ensureTurn opens a turn when the session has none (see
// Controller.EnsureTurn: parallel tool hooks open one turn, not two).
func (h hookRun) ensureTurn(ctx context.Context) error {
	res, _, err := h.c.EnsureTurn(ctx, noPromptLabel)
	if err != nil {
		return err
	}
	if res.Warning != "" {
		h.a.say("ckpt: warning: %s", res.Warning)
	}
	return nil
}

// ensureManifest runs before a shell command. Outside scan mode there is
// nothing to record (a shell command's writes are not known in advance).
// In scan mode every turn takes its manifest when it opens (the
// UserPromptSubmit that opened it), so this only opens a turn when there
// is none; a turn opened before scan mode was turned on keeps having no
// manifest, which it says once per shell command.
func (h hookRun) ensureManifest(ctx context.Context) *hookFailure {
	on, err := h.c.ScanSetting(ctx)
	if err != nil {
		return &hookFailure{msg: "scan setting: " + oneLine(err), block: h.strict}
	}
	if !on {
		return nil
	}
	cp, err := h.c.OpenTurn(ctx)
	if errors.Is(err, controller.ErrNoOpenTurn) {
		if err := h.ensureTurn(ctx); err != nil {
			return &hookFailure{msg: "open turn: " + oneLine(err), block: h.strict}
		}
		return nil
	}
	if err != nil {
		return &hookFailure{msg: oneLine(err), block: h.strict}
	}
	if !cp.Scanned {
		h.a.say("ckpt: hook: warning: turn %d opened without a workspace manifest (scan mode came on later, or its scan was refused); this shell command's changes are rewound from the next prompt on", cp.Turn)
	}
	return nil
}
