package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/controller"
	"github.com/spf13/cobra"
)

// noPromptLabel labels a turn the hook opens itself because a tool call
// came before any prompt it saw (ckpt installed mid-session).
const noPromptLabel = "(turn opened by ckpt: no prompt seen)"

// maxHookInput bounds what the hook reads from stdin; Claude's events are
// a few KiB (a Write carries the new content in tool_input).
const maxHookInput = 64 << 20

type hookOptions struct {
	agent  string // "claude" or "generic"
	strict bool
	// startServer makes sure the resident hook server (`ckpt serve
	// --hooks`) runs, proven, before the event is handled: what `ckpt
	// install claude --http` installs on the prompt and session-start
	// events.
	startServer bool
	// projectDir is Claude Code's project directory ($CLAUDE_PROJECT_DIR
	// of the hook process; "" over HTTP, where the session's workspace
	// decides).
	projectDir string
	// scope, over HTTP, is the directory the request's token is good
	// for: an event whose workspace is not at or below it is refused.
	scope string
	// scanTurn makes a prompt's turn record the whole workspace, as scan
	// mode does: the hook server its tool calls post to is not proven to
	// be running (ensureHookServer).
	scanTurn bool
}

func newHookCmd(a *app) *cobra.Command {
	var o hookOptions
	cmd := &cobra.Command{
		Use:   "hook claude|generic|AGENT",
		Short: "Handle one agent hook event (JSON on stdin); what `ckpt install AGENT` wires up",
		Long: `Read one agent hook event as JSON on stdin and record it. For claude (and
generic, the same JSON from any agent):

  UserPromptSubmit  open a turn labelled with "prompt" (its user message);
                    for claude, record its prompt_id and where it begins in
                    the transcript (read only), for "ckpt rewind"
  PreToolUse        Write, Edit, MultiEdit: capture tool_input.file_path;
                    NotebookEdit: capture tool_input.notebook_path;
                    Bash, PowerShell: in scan mode, make sure the turn has a
                    manifest
  SessionStart      startup/resume: in scan mode, a session with no
                    workspace manifest yet opens a turn that records one
                    (a resume checkpoint); fork: a new session continuing a
                    ckpt-recorded Claude conversation becomes a ckpt fork
  Stop, SessionEnd  when the store has a remote, start "ckpt sync" in the
                    background (one at a time; output in STORE/sync.log)
  PostToolUse and other known events: accepted, nothing to do

Events from a subagent (agent_id set) carry the parent's session_id and
land in its open turn.

The session is the event's session_id and the workspace its cwd (for
claude, $CLAUDE_PROJECT_DIR when cwd is inside it); --store or $CKPT_HOME
still chooses the store. Nothing is printed on stdout, except (claude
--start-server) a "systemMessage" for Claude Code to show when its tool
calls will not reach a proven hook server.

Other agents (codex, cursor, cline, copilot, gemini, opencode, pi,
windsurf) send their own events; "ckpt install AGENT" wires them up and
docs/agents/ says what each captures. For gemini, cursor
and cline the hook prints the JSON answer the agent expects on stdout.
Their end events start the same background sync as Stop: codex Stop;
gemini AfterAgent, SessionEnd; cursor stop, sessionEnd; copilot
agentStop, sessionEnd; cline TaskComplete (agent_end); windsurf
post_cascade_response; opencode the plugin's session.idle; pi the
extension's Stop (pi's agent_settled).

"generic" takes the same JSON from any agent; it captures
tool_input.file_path or notebook_path of every PreToolUse, whatever the
tool_name, and treats tool_name Bash, PowerShell or shell as a shell
command.

A problem never stops the agent: one line on stderr and exit 0. With
--strict a PreToolUse whose capture fails blocks the tool call (exit 2,
the reason on stderr). Paths outside the workspace or inside .git are
skipped with a warning even with --strict. Malformed JSON and unknown
events are reported on stderr and record nothing.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || (args[0] != "claude" && args[0] != "generic" && agents[args[0]] == nil) {
				return usagef("hook takes the agent: %s or generic (see ckpt hook --help)", strings.Join(agentNames(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.agent = args[0]
			return a.runHook(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.strict, "strict", false, "block the tool call (exit 2) when its capture fails")
	cmd.Flags().BoolVar(&o.startServer, "start-server", false, "first make sure the resident hook server (ckpt serve --hooks) runs and proves it is this store's, starting it when nothing answers; when it cannot be proven, warn and open the prompt's turn with a scan of the workspace")
	return cmd
}

// hookFailure is a problem the hook reports; block says whether it stops
// the tool call (only with --strict).
type hookFailure struct {
	msg   string
	block bool
	// refused: the event is outside what its token is good for (over
	// HTTP; answered 403).
	refused bool
	// show asks for the message where the agent shows it to the user as
	// well (Claude Code: a systemMessage), for what the user must know:
	// a prompt whose turn did not open.
	show bool
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

// hook reads one event from stdin, handles it (handleHook) with a
// controller opened for this one event, and prints what the agent expects
// on stdout.
func (a *app) hook(ctx context.Context, o hookOptions) (fail *hookFailure) {
	in := a.stdin
	if in == nil {
		in = strings.NewReader("")
	}
	data, err := io.ReadAll(io.LimitReader(in, maxHookInput))
	var shown string // a warning for the person, not only the log
	defer func() {
		// What the agent expects, whatever happens.
		fmt.Fprint(a.stdout, agentReply(o.agent, data, fail))
		if shown != "" && o.agent == "claude" {
			// Claude Code shows a hook's systemMessage to the user; the
			// stderr of a hook that exits 0 only in its verbose mode.
			json.NewEncoder(a.stdout).Encode(map[string]string{"systemMessage": "ckpt: warning: " + shown})
		}
	}()
	if err != nil {
		return &hookFailure{msg: fmt.Sprintf("read event: %v; nothing recorded", err)}
	}
	if o.agent == "claude" {
		o.projectDir = os.Getenv("CLAUDE_PROJECT_DIR")
	}
	if o.startServer {
		// Before the event: a prompt whose tool calls will not reach a
		// proven server records the whole workspace as its turn opens.
		// The hook server finds the tool calls' workspace from their cwd.
		var ev struct {
			Cwd string `json:"cwd"`
		}
		json.Unmarshal(data, &ev)
		if shown = a.ensureHookServer(ev.Cwd); shown != "" {
			o.scanTurn = true
			a.say("ckpt: hook: warning: %s", shown)
		}
	}
	ps := &processSessions{a: a}
	f := a.handleHook(ctx, o, data, ps)
	ps.done()
	return f
}

// sessions gives the hook the controller of a session: one opened for the
// event (processSessions, a `ckpt hook` process), or one a resident server
// keeps open across events (hookServer, in hook_serve.go).
type sessions interface {
	// locate is Store.Locate, or a faster answer from what is open.
	locate(ctx context.Context, dir, session string) (controller.Location, error)
	// open returns session's controller for workspace ws; release hands
	// it back.
	open(ctx context.Context, ws, session string) (c *controller.Controller, release func(), err error)
	// forget closes what is kept open for session: its index is about to
	// be replaced.
	forget(session string)
}

// processSessions opens a controller per event and closes it after. A
// session that exists is opened once: locate opens it for the workspace
// the store's markers give (a stat per ancestor), and open hands that
// controller on, where Store.Locate would open the session's index
// once more only to read its workspace.
type processSessions struct {
	a *app
	c *controller.Controller // opened by locate, for open
}

func (p *processSessions) locate(ctx context.Context, dir, session string) (controller.Location, error) {
	if controller.OpenStore(p.a.store).HasIndex(session) {
		if near, err := controller.OpenStore(p.a.store).Locate(ctx, dir, ""); err == nil && near.Found {
			c, err := p.openNow(ctx, near.Workspace, session)
			if err == nil {
				p.c = c
				return controller.Location{Workspace: near.Workspace, Session: session, Found: true, OfSession: true}, nil
			}
			// Another workspace's session (an enclosing one), or a
			// failure Locate and open report again.
		}
	}
	return controller.OpenStore(p.a.store).Locate(ctx, dir, session)
}

func (p *processSessions) open(ctx context.Context, ws, session string) (*controller.Controller, func(), error) {
	c := p.c
	p.c = nil
	if c == nil || c.WorkspaceRoot() != ws || c.Session() != session {
		if c != nil {
			c.Close()
		}
		var err error
		if c, err = p.openNow(ctx, ws, session); err != nil {
			return nil, nil, err
		}
	}
	return c, func() { p.a.closeController(c) }, nil
}

func (p *processSessions) openNow(ctx context.Context, ws, session string) (*controller.Controller, error) {
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Session: session, Store: p.a.store})
	if err != nil {
		return nil, err
	}
	if c.Recovered() != "" {
		p.a.say("ckpt: %s", c.Recovered())
	}
	return c, nil
}

// forget closes the controller locate opened: the session's index is
// about to be replaced.
func (p *processSessions) forget(string) {
	if p.c != nil {
		p.c.Close()
		p.c = nil
	}
}

// done closes what was opened and not used.
func (p *processSessions) done() { p.forget("") }

// handleHook decodes and classifies one event (decodeHook, in
// hook_decode.go, or the agent's own decoder, in agents.go), opens its
// session through ss and executes it (hookRun, in hook_exec.go). It is the
// one implementation of the hook: `ckpt hook` and the resident server
// (`ckpt serve`, POST /hook/AGENT) both call it.
func (a *app) handleHook(ctx context.Context, o hookOptions, data []byte, ss sessions) (fail *hookFailure) {
	plan, f := decodeFor(data, o.agent)
	if plan.sync {
		a.startSync()
	}
	if f != nil || plan.none {
		return f
	}
	ev, paths, shell := plan.ev, plan.paths, plan.shell
	blocking := o.strict && ev.HookEventName == "PreToolUse"
	// A Claude conversation forked by `ckpt rewind` continues the ckpt
	// session it was forked from.
	session, forkedAt, forkedIn := ev.SessionID, "", ""
	if o.agent == "claude" {
		session, forkedAt, forkedIn = continuedSession(a.store, ev.SessionID)
	}
	var ct claudeTurn // the prompt's place in Claude's conversation
	if ev.HookEventName == "UserPromptSubmit" {
		// A prompt whose turn did not open, whatever stopped it: the
		// user is told, and the agent's tool calls in answer to it never
		// land in the turn before (openFailedTurn).
		defer func() {
			if fail == nil {
				return
			}
			fail.show = true
			if _, err := os.Stat(controller.OpenStore(a.store).SessionDir(session)); err != nil {
				return // a session not created yet has no earlier turn
			}
			if ct.PromptID == "" {
				ct.PromptID = ev.PromptID
			}
			if err := markTurnFailed(a.store, session, failedTurn{Prompt: *ev.Prompt, Claude: ct, Agent: o.agent}); err != nil {
				fail.msg += "; this prompt has no checkpoint (" + oneLine(err) + ")"
				return
			}
			fail.msg += "; this prompt has no checkpoint yet: the next tool call tries again, and records nothing if it cannot"
		}()
	}

	// The workspace: the session's own when it exists and cwd is inside
	// it; for Claude Code, its project directory when cwd is inside that;
	// else the nearest enclosing workspace the store knows, else cwd.
	loc, err := ss.locate(ctx, ev.Cwd, session)
	if err != nil {
		return &hookFailure{msg: oneLine(err) + "; nothing recorded", block: blocking}
	}
	ws := loc.Workspace
	if o.agent == "claude" && !loc.OfSession {
		if p := claudeWorkspace(ev.Cwd, o.projectDir); p != ev.Cwd {
			ws = p
		}
	}
	if o.scope != "" {
		// Over HTTP: nothing outside the token's install, not even a
		// session created there (nor a fork, below).
		root, err := controller.WorkspaceRoot(ws)
		if err != nil || !within(o.scope, root) {
			return &hookFailure{msg: fmt.Sprintf("workspace %s is not inside %s, which this hook token was installed for; nothing recorded", ws, o.scope), refused: true}
		}
	}
	// A Claude Code session ckpt has not seen, whose transcript already
	// holds a conversation ckpt recorded (a fork: SessionStart source
	// "fork", or the first prompt of a session --fork-session made),
	// becomes a ckpt fork of the session it came from.
	if o.agent == "claude" && session == ev.SessionID && !loc.OfSession &&
		(ev.HookEventName == "UserPromptSubmit" || (plan.start && ev.Source == "fork")) {
		if root, err := filepath.EvalSymlinks(ws); err == nil {
			if _, err := forkFromParent(ctx, a.store, root, session, ev.TranscriptPath); err != nil {
				a.say("ckpt: hook: warning: fork of the parent session: %s; recording a new session", oneLine(err))
			}
		}
	}
	if plan.start && !loc.OfSession {
		// A session ckpt has no record of: nothing to fall back on, and
		// no reason to create it before its first prompt (a new session's
		// first turn takes its own manifest in scan mode).
		return nil
	}
	if o.agent == "claude" && loc.OfSession && ev.HookEventName == "PreToolUse" && adoptPending(a.store, session) {
		ss.forget(session) // adoptFork may replace the session's index
		adoptFork(ctx, a.store, session, ev.TranscriptPath, a.say)
	}
	c, release, err := ss.open(ctx, ws, session)
	if err != nil {
		return &hookFailure{msg: oneLine(err) + "; nothing recorded", block: blocking}
	}
	defer release()
	h := hookRun{a: a, c: c, session: session, strict: o.strict}

	switch {
	case plan.start:
		return h.resumeCheckpoint(ctx)
	case ev.HookEventName == "UserPromptSubmit":
		// Not blocking even with --strict: exit 2 here would erase the
		// user's prompt, which is worse than a turn without a checkpoint.
		if o.agent == "claude" {
			// Read before the turn opens: the transcript does not hold
			// this prompt yet, so its last assistant entry is where the
			// turn begins in Claude's conversation.
			ct.PromptID = ev.PromptID
			if ct.ResumeAt, err = lastAssistantUUID(ev.TranscriptPath); err != nil {
				a.say("ckpt: hook: warning: transcript: %s; `ckpt rewind` cannot fork Claude's conversation at this turn", oneLine(err))
			}
			// The entry is in the transcript of the Claude session that
			// sent the prompt: a fork `ckpt rewind` made records into
			// this session, but only its own transcript holds its entries.
			in := ev.SessionID
			if ct.ResumeAt == "" {
				// The first prompt of a fork `ckpt rewind` made: Claude
				// writes its transcript later, but ckpt chose where it
				// begins.
				ct.ResumeAt, in = forkedAt, forkedIn
			}
			if ct.ResumeAt != "" && in != session {
				ct.Session = in
			}
		}
		res, err := c.BeginTurn(ctx, *ev.Prompt, controller.TurnOptions{Scan: o.scanTurn})
		if err != nil {
			return &hookFailure{msg: "open turn: " + oneLine(err)}
		}
		clearTurnFailed(a.store, session)
		if res.Warning != "" {
			a.say("ckpt: warning: %s", res.Warning)
		}
		if res.Scan != nil {
			if s := skipNote(res.Scan.Manifest.Skips); s != "" {
				a.say("ckpt: warning: %s", s)
			}
		}
		if o.agent == "claude" {
			if err := recordClaudeTurn(ctx, c, res.ID, ct); err != nil {
				a.say("ckpt: hook: warning: record the turn's place in Claude's conversation: %s", oneLine(err))
			}
			if res.Turn == 0 && ct.ResumeAt == "" && session == ev.SessionID && ev.PromptID != "" {
				// A session's first prompt: if it is a fork, its
				// transcript appears later; the first tool call looks.
				// (Not only for a session this event created: Claude
				// runs SessionStart hooks alongside the first prompt.)
				if b, err := json.Marshal(pendingPrompt{PromptID: ev.PromptID, Prompt: *ev.Prompt}); err == nil {
					os.WriteFile(filepath.Join(controller.OpenStore(a.store).SessionDir(session), adoptFile), b, 0o644)
				}
			}
		}
		return nil
	case shell && len(paths) == 0:
		if f := h.openFailedTurn(ctx); f != nil {
			return f
		}
		f := h.ensureManifest(ctx)
		h.beginStep(ctx, ev.ToolUseID, ev.ToolName, false) // each tool call is a step
		return f
	default:
		if f := h.openFailedTurn(ctx); f != nil {
			return f
		}
		var fails []string
		if shell {
			// A shell command that names files too (an apply_patch
			// heredoc): the manifest in scan mode, and the files.
			if f := h.ensureManifest(ctx); f != nil {
				fails = append(fails, f.msg)
			}
		}
		h.step = h.beginStep(ctx, ev.ToolUseID, ev.ToolName, len(paths) > 0) // each tool call is a step
		abs := make([]string, len(paths))
		for i, p := range paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(ev.Cwd, p)
			}
			abs[i] = p
		}
		if fails = append(fails, h.capture(ctx, abs)...); len(fails) > 0 {
			return &hookFailure{msg: strings.Join(fails, "; "), block: o.strict}
		}
		return nil
	}
}
