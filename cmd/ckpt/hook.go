package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/agent"
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
	ag     agent.Agent
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
			if len(args) != 1 {
				return usagef("hook takes the agent: %s or generic (see ckpt hook --help)", strings.Join(agent.Names(), ", "))
			}
			if _, ok := agent.Lookup(args[0]); !ok {
				return usagef("hook takes the agent: %s or generic (see ckpt hook --help)", strings.Join(agent.Names(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ag, _ = agent.Lookup(args[0])
			return a.runHook(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.strict, "strict", false, "block the tool call (exit 2) when its capture fails")
	cmd.Flags().BoolVar(&o.startServer, "start-server", false, "first make sure the resident hook server (ckpt serve --hooks) runs and proves it is this store's, starting it when nothing answers; when it cannot be proven, warn and open the prompt's turn with a scan of the workspace")
	return cmd
}

// runHook handles one event. Every problem ends as one stderr line; only a
// blocking one changes the exit code (2, which Claude Code reads as "block
// the tool call and show stderr to the model").
func (a *app) runHook(ctx context.Context, o hookOptions) error {
	f := a.hook(ctx, o)
	if f == nil {
		return nil
	}
	a.say("ckpt: hook: %s", f.Msg)
	if f.Block {
		return silentError{exitUsage}
	}
	return nil
}

// hook reads one event from stdin, handles it (handleHook) with a
// controller opened for this one event, and prints what the agent expects
// on stdout.
func (a *app) hook(ctx context.Context, o hookOptions) (fail *agent.Failure) {
	in := a.stdin
	if in == nil {
		in = strings.NewReader("")
	}
	data, err := io.ReadAll(io.LimitReader(in, maxHookInput))
	var shown string // a warning for the person, not only the log
	defer func() {
		// What the agent expects, whatever happens.
		fmt.Fprint(a.stdout, o.ag.Reply(data, fail))
		if conv, ok := o.ag.(agent.Conversation); ok && shown != "" {
			// Shown to the user (Claude Code: a systemMessage); the
			// stderr of a hook that exits 0 only in its verbose mode.
			fmt.Fprint(a.stdout, conv.Notice("warning: "+shown))
		}
	}()
	if err != nil {
		return &agent.Failure{Msg: fmt.Sprintf("read event: %v; nothing recorded", err)}
	}
	if conv, ok := o.ag.(agent.Conversation); ok {
		o.projectDir = conv.ProjectDir(os.Getenv)
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
	// locate is controller.Locate, or a faster answer from what is open.
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
// controller on, where controller.Locate would open the session's index
// once more only to read its workspace.
type processSessions struct {
	a *app
	c *controller.Controller // opened by locate, for open
}

func (p *processSessions) locate(ctx context.Context, dir, session string) (controller.Location, error) {
	if controller.HasIndex(p.a.store, session) {
		if near, err := controller.Locate(ctx, p.a.store, dir, ""); err == nil && near.Found {
			c, err := p.openNow(ctx, near.Workspace, session)
			if err == nil {
				p.c = c
				return controller.Location{Workspace: near.Workspace, Session: session, Found: true, OfSession: true}, nil
			}
			// Another workspace's session (an enclosing one), or a
			// failure Locate and open report again.
		}
	}
	return controller.Locate(ctx, p.a.store, dir, session)
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

// handleHook decodes and classifies one event (the agent's Decode),
// opens its session through ss and executes it (hookRun, in
// hook_exec.go). It is the one implementation of the hook: `ckpt hook` and
// the resident server (`ckpt serve`, POST /hook/AGENT) both call it.
func (a *app) handleHook(ctx context.Context, o hookOptions, data []byte, ss sessions) (fail *agent.Failure) {
	plan, f := o.ag.Decode(data)
	if plan.Sync {
		a.startSync()
	}
	if f != nil || plan.None {
		return f
	}
	ev := plan.Event
	conv, _ := o.ag.(agent.Conversation)
	e := hookEvent{plan: plan, conv: conv, session: ev.SessionID, blocking: o.strict && ev.HookEventName == "PreToolUse"}
	if conv != nil {
		// A conversation forked by `ckpt rewind` continues the ckpt
		// session it was forked from.
		e.session, e.forkedAt, e.forkedIn = continuedSession(a.store, ev.SessionID)
	}
	if ev.HookEventName == "UserPromptSubmit" {
		defer func() { a.promptFailed(o, &e, fail) }()
	}
	ws, loc, f := a.hookWorkspace(ctx, o, &e, ss)
	if f != nil {
		return f
	}
	if plan.Start && !loc.OfSession {
		// A session ckpt has no record of: nothing to fall back on, and
		// no reason to create it before its first prompt (a new session's
		// first turn takes its own manifest in scan mode).
		return nil
	}
	if conv != nil && loc.OfSession && ev.HookEventName == "PreToolUse" && adoptPending(a.store, e.session) {
		ss.forget(e.session) // adoptFork may replace the session's index
		adoptFork(ctx, conv, a.store, e.session, ev.TranscriptPath, a.say)
	}
	c, release, err := ss.open(ctx, ws, e.session)
	if err != nil {
		return &agent.Failure{Msg: oneLine(err) + "; nothing recorded", Block: e.blocking}
	}
	defer release()
	h := hookRun{a: a, c: c, session: e.session, strict: o.strict}
	switch {
	case plan.Start:
		return h.resumeCheckpoint(ctx)
	case ev.HookEventName == "UserPromptSubmit":
		return h.prompt(ctx, o, &e)
	case plan.Shell && len(plan.Paths) == 0:
		if f := h.openFailedTurn(ctx); f != nil {
			return f
		}
		f := h.ensureManifest(ctx)
		h.beginStep(ctx, ev.ToolUseID, ev.ToolName, false) // each tool call is a step
		return f
	default:
		return h.toolCall(ctx, plan)
	}
}

// hookEvent is one decoded event as handleHook carries it through its
// steps.
type hookEvent struct {
	plan agent.Plan
	// conv is the agent as a Conversation, or nil.
	conv agent.Conversation
	// session is the ckpt session: the event's, or the one a forked
	// conversation continues (forkedAt, forkedIn: where the fork began,
	// continuedSession).
	session, forkedAt, forkedIn string
	blocking                    bool
	// ct is the prompt's place in the agent's conversation.
	ct claudeTurn
}

// isConversation says whether ag records its conversation with the
// files (agent.Conversation).
func isConversation(ag agent.Agent) bool {
	_, ok := ag.(agent.Conversation)
	return ok
}

// promptFailed runs when the hook of a prompt ends with fail: a prompt
// whose turn did not open, whatever stopped it. The user is told, and
// the agent's tool calls in answer to it never land in the turn before
// (openFailedTurn).
func (a *app) promptFailed(o hookOptions, e *hookEvent, fail *agent.Failure) {
	if fail == nil {
		return
	}
	fail.Show = true
	if _, err := os.Stat(controller.SessionDir(a.store, e.session)); err != nil {
		return // a session not created yet has no earlier turn
	}
	ev := e.plan.Event
	if e.ct.PromptID == "" {
		e.ct.PromptID = ev.PromptID
	}
	if err := markTurnFailed(a.store, e.session, failedTurn{Prompt: *ev.Prompt, Claude: e.ct, Agent: o.ag.Name()}); err != nil {
		fail.Msg += "; this prompt has no checkpoint (" + oneLine(err) + ")"
		return
	}
	fail.Msg += "; this prompt has no checkpoint yet: the next tool call tries again, and records nothing if it cannot"
}

// hookWorkspace finds the event's workspace: the session's own when it
// exists and cwd is inside it; for a Conversation agent, its project
// directory when cwd is inside that; else the nearest enclosing
// workspace the store knows, else cwd. Over HTTP it refuses one outside
// the token's scope. A conversation ckpt has not seen that continues one
// it recorded becomes a ckpt fork of it here.
func (a *app) hookWorkspace(ctx context.Context, o hookOptions, e *hookEvent, ss sessions) (string, controller.Location, *agent.Failure) {
	ev := e.plan.Event
	loc, err := ss.locate(ctx, ev.Cwd, e.session)
	if err != nil {
		return "", loc, &agent.Failure{Msg: oneLine(err) + "; nothing recorded", Block: e.blocking}
	}
	ws := loc.Workspace
	if e.conv != nil && !loc.OfSession {
		if p := e.conv.Workspace(ev.Cwd, o.projectDir); p != ev.Cwd {
			ws = p
		}
	}
	if o.scope != "" {
		// Over HTTP: nothing outside the token's install, not even a
		// session created there (nor a fork, below).
		root, err := controller.WorkspaceRoot(ws)
		if err != nil || !within(o.scope, root) {
			return "", loc, &agent.Failure{Msg: fmt.Sprintf("workspace %s is not inside %s, which this hook token was installed for; nothing recorded", ws, o.scope), Refused: true}
		}
	}
	// A session ckpt has not seen, whose transcript already holds a
	// conversation ckpt recorded (a fork: SessionStart source "fork", or
	// the first prompt of a session --fork-session made), becomes a ckpt
	// fork of the session it came from.
	if e.conv != nil && e.session == ev.SessionID && !loc.OfSession &&
		(ev.HookEventName == "UserPromptSubmit" || (e.plan.Start && ev.Source == "fork")) {
		if root, err := filepath.EvalSymlinks(ws); err == nil {
			if _, err := forkFromParent(ctx, e.conv, a.store, root, e.session, ev.TranscriptPath); err != nil {
				a.say("ckpt: hook: warning: fork of the parent session: %s; recording a new session", oneLine(err))
			}
		}
	}
	return ws, loc, nil
}

// prompt opens the turn of a UserPromptSubmit. Not blocking even with
// --strict: exit 2 here would erase the user's prompt, which is worse than
// a turn without a checkpoint.
func (h hookRun) prompt(ctx context.Context, o hookOptions, e *hookEvent) *agent.Failure {
	a, ev := h.a, e.plan.Event
	if e.conv != nil {
		e.ct = h.turnPlace(e)
	}
	res, err := h.c.BeginTurnWith(ctx, *ev.Prompt, controller.TurnOptions{Scan: o.scanTurn})
	if err != nil {
		return &agent.Failure{Msg: "open turn: " + oneLine(err)}
	}
	clearTurnFailed(a.store, e.session)
	if res.Warning != "" {
		a.say("ckpt: warning: %s", res.Warning)
	}
	if res.Scan != nil {
		if s := skipNote(res.Scan.Manifest.Skips); s != "" {
			a.say("ckpt: warning: %s", s)
		}
	}
	if e.conv == nil {
		return nil
	}
	if err := recordClaudeTurn(ctx, h.c, res.ID, e.ct); err != nil {
		a.say("ckpt: hook: warning: record the turn's place in Claude's conversation: %s", oneLine(err))
	}
	if res.Turn == 0 && e.ct.ResumeAt == "" && e.session == ev.SessionID && ev.PromptID != "" {
		// A session's first prompt: if it is a fork, its transcript
		// appears later; the first tool call looks. (Not only for a
		// session this event created: Claude runs SessionStart hooks
		// alongside the first prompt.)
		if b, err := json.Marshal(pendingPrompt{PromptID: ev.PromptID, Prompt: *ev.Prompt}); err == nil {
			os.WriteFile(filepath.Join(controller.SessionDir(a.store, e.session), adoptFile), b, 0o644)
		}
	}
	return nil
}

// turnPlace is where the prompt's turn begins in the agent's
// conversation, read before the turn opens: the transcript does not hold
// this prompt yet, so its last assistant entry is where the turn begins.
func (h hookRun) turnPlace(e *hookEvent) claudeTurn {
	ev := e.plan.Event
	ct := claudeTurn{PromptID: ev.PromptID}
	var err error
	if ct.ResumeAt, err = e.conv.ResumePoint(ev.TranscriptPath); err != nil {
		h.a.say("ckpt: hook: warning: transcript: %s; `ckpt rewind` cannot fork Claude's conversation at this turn", oneLine(err))
	}
	// The entry is in the transcript of the session that sent the
	// prompt: a fork `ckpt rewind` made records into this session, but
	// only its own transcript holds its entries.
	in := ev.SessionID
	if ct.ResumeAt == "" {
		// The first prompt of a fork `ckpt rewind` made: the agent
		// writes its transcript later, but ckpt chose where it begins.
		ct.ResumeAt, in = e.forkedAt, e.forkedIn
	}
	if ct.ResumeAt != "" && in != e.session {
		ct.Session = in
	}
	return ct
}

// toolCall records a tool call that writes files: each is captured
// before the tool writes it, as a step of its own.
func (h hookRun) toolCall(ctx context.Context, plan agent.Plan) *agent.Failure {
	if f := h.openFailedTurn(ctx); f != nil {
		return f
	}
	ev := plan.Event
	var fails []string
	if plan.Shell {
		// A shell command that names files too (an apply_patch
		// heredoc): the manifest in scan mode, and the files.
		if f := h.ensureManifest(ctx); f != nil {
			fails = append(fails, f.Msg)
		}
	}
	h.step = h.beginStep(ctx, ev.ToolUseID, ev.ToolName, len(plan.Paths) > 0) // each tool call is a step
	abs := make([]string, len(plan.Paths))
	for i, p := range plan.Paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(ev.Cwd, p)
		}
		abs[i] = p
	}
	if fails = append(fails, h.capture(ctx, abs)...); len(fails) > 0 {
		return &agent.Failure{Msg: strings.Join(fails, "; "), Block: h.strict}
	}
	return nil
}
