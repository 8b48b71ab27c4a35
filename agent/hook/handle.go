package hook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/quote"
)

// noPromptLabel labels a turn the hook opens itself because a tool call
// came before any prompt it saw (ckpt installed mid-session).
const noPromptLabel = "(turn opened by ckpt: no prompt seen)"

// MaxEvent bounds what the hook reads of one event; Claude's events are
// a few KiB (a Write carries the new content in tool_input).
const MaxEvent = 64 << 20

// Handler applies agents' hook events to the sessions of one store: a
// prompt opens a turn, a tool call captures the files it is about to
// write, a session start records a resume checkpoint in scan mode.
type Handler struct {
	// Store is the store's directory.
	Store string
	// Say receives warnings for the user, one line each; nil discards
	// them.
	Say func(format string, args ...any)
	// Sync, when set, is called for an event that ends the agent's answer
	// or session: the moment to upload what was recorded (`ckpt sync` in
	// the background, when the store has a remote).
	Sync func()
	// ExitAfterClose says the process exits once Handle returns: the
	// controllers it opens are opened with it (see
	// controller.Options.ExitAfterClose).
	ExitAfterClose bool
}

// store is the Handler's store, for the paths of its sessions (opening
// no file).
func (hd *Handler) store() *controller.Store { return controller.OpenStore(hd.Store) }

// Options are how one event is handled.
type Options struct {
	// Strict makes a PreToolUse whose capture fails block the tool call
	// (the Failure's Block).
	Strict bool
	// ProjectDir is the agent's project directory for the event
	// (agent.Conversation's ProjectDir; "" when none).
	ProjectDir string
	// Scope, over HTTP, is the install the request's token is of: an
	// event whose workspace it does not cover is refused, and does
	// nothing at all (nil: a command hook, which the agent itself runs).
	Scope *Token
	// ScanTurn makes a prompt's turn record the whole workspace, as scan
	// mode does (its tool calls may not reach the hook server).
	ScanTurn bool
}

// Handle handles one event of ag (its JSON: data), with a controller
// opened for it and closed after. The failure, if any, is what the hook
// reports: one line, blocking the tool call when it says so.
func (hd *Handler) Handle(ctx context.Context, ag agent.Agent, o Options, data []byte) *agent.Failure {
	ps := &processSessions{hd: hd}
	defer ps.done()
	return hd.handle(ctx, ag, o, data, ps)
}

func (hd *Handler) say(format string, args ...any) {
	if hd.Say != nil {
		hd.Say(format, args...)
	}
}

func (hd *Handler) sync() {
	if hd.Sync != nil {
		hd.Sync()
	}
}

// sessions gives the hook the controller of a session: one opened for the
// event (processSessions, a `ckpt hook` process), or one a resident server
// keeps open across events (Server, in server.go).
type sessions interface {
	// locate is Store.Resolve for a hook (which records), or a faster
	// answer from what is open.
	locate(ctx context.Context, dir, session string) (controller.Location, error)
	// open returns session's controller for workspace ws; release hands
	// it back.
	open(ctx context.Context, ws, session string) (c *controller.Controller, release func(), err error)
	// forget closes what is kept open for session: its index is about to
	// be replaced.
	forget(session string)
}

// processSessions opens a controller per event and closes it after. A
// session that exists is opened once: locate opens it (creating nothing)
// for the workspace the store's markers give (a stat per ancestor), and
// open hands that controller on, where Store.Resolve would open the
// session's index once more only to read its workspace.
type processSessions struct {
	hd *Handler
	c  *controller.Controller // opened by locate, for open
}

func (p *processSessions) locate(ctx context.Context, dir, session string) (controller.Location, error) {
	st := controller.OpenStore(p.hd.Store)
	// The workspace alone: with no session named Resolve reads no index
	// (the workspace's last active session comes from a hint).
	if near, err := st.Resolve(ctx, controller.ResolveOptions{Dir: dir, Create: true}); err == nil && near.Found {
		c, err := p.openNow(ctx, near.Workspace, session, false)
		if err == nil {
			p.c = c
			return controller.Location{Workspace: near.Workspace, Session: session, Found: true, OfSession: true}, nil
		}
		// A session the store does not have (new, or an agent session
		// that continues another), another workspace's session (an
		// enclosing one), or a failure Resolve and open report again.
	}
	return st.Resolve(ctx, controller.ResolveOptions{Dir: dir, Session: session, Create: true})
}

func (p *processSessions) open(ctx context.Context, ws, session string) (*controller.Controller, func(), error) {
	c := p.c
	p.c = nil
	if c == nil || c.WorkspaceRoot() != ws || c.Session() != session {
		if c != nil {
			c.Close()
		}
		var err error
		if c, err = p.openNow(ctx, ws, session, true); err != nil {
			return nil, nil, err
		}
	}
	return c, func() { c.Close() }, nil
}

// openNow opens session in workspace ws; unless create, only a session
// the store has.
func (p *processSessions) openNow(ctx context.Context, ws, session string, create bool) (*controller.Controller, error) {
	return controller.Open(ctx, controller.Options{Workspace: ws, Session: session, Store: p.hd.Store, NoCreate: !create, ExitAfterClose: p.hd.ExitAfterClose,
		Recovered: func(what string) { p.hd.say("ckpt: %s", what) }})
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

// handle decodes and classifies one event (the agent's Decode), opens
// its session through ss and executes it (hookRun, in exec.go). It is the
// one implementation of the hook: Handle (`ckpt hook`) and the resident
// Server (`ckpt serve`, POST /hook/AGENT) both call it.
func (hd *Handler) handle(ctx context.Context, ag agent.Agent, o Options, data []byte, ss sessions) (fail *agent.Failure) {
	plan, f := ag.Decode(data)
	if f != nil {
		return f
	}
	covered, f := hd.inScope(o, &plan.Event)
	if f != nil {
		return f
	}
	if plan.Sync {
		hd.sync()
	}
	if plan.None {
		return nil
	}
	ev := plan.Event
	conv, _ := ag.(agent.Conversation)
	e := hookEvent{plan: plan, conv: conv, session: ev.SessionID, blocking: o.Strict && ev.HookEventName == "PreToolUse", covered: covered}
	if ev.HookEventName == "UserPromptSubmit" {
		defer func() { hd.promptFailed(ag, &e, fail) }()
	}
	ws, loc, f := hd.hookWorkspace(ctx, o, &e, ss)
	if f != nil {
		return f
	}
	if plan.Start && !loc.OfSession {
		// A session ckpt has no record of: nothing to fall back on, and
		// no reason to create it before its first prompt (a new session's
		// first turn takes its own manifest in scan mode).
		return nil
	}
	c, release, err := ss.open(ctx, ws, e.session)
	if err == nil && conv != nil && loc.OfSession && ev.HookEventName == "PreToolUse" && ev.TranscriptPath != "" && adoptPending(ctx, c) {
		release()
		ss.forget(e.session) // adoptFork may replace the session's index
		adoptFork(ctx, conv, hd.Store, e.session, ev.TranscriptPath, hd.say)
		c, release, err = ss.open(ctx, ws, e.session)
	}
	if err != nil {
		return &agent.Failure{Msg: msg.OneLine(err) + "; nothing recorded", Block: e.blocking}
	}
	defer release()
	h := hookRun{hd: hd, c: c, session: e.session, strict: o.Strict}
	if plan.Label != nil {
		// Once the turn is open (or was): see agent.Plan.Label.
		defer h.relabel(ctx, plan.LabelFrom, plan.Label)
	}
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
		h.beginStep(ctx, ev.ToolUseID, ev.ToolName) // each tool call is a step
		return f
	default:
		return h.toolCall(ctx, plan)
	}
}

// inScope checks, over HTTP (o.Scope set), that ev comes from inside
// the install its token is of: an event from outside does nothing at all,
// not even the end-of-answer sync. A transcript_path is kept only where
// Claude Code keeps the transcripts of this install's projects: any other
// file is not read. It returns the root of the event's cwd it checked
// ("" without a scope).
func (hd *Handler) inScope(o Options, ev *agent.Event) (string, *agent.Failure) {
	if o.Scope == nil {
		return "", nil
	}
	root, err := controller.WorkspaceRoot(ev.Cwd)
	if err != nil || !o.Scope.Covers(root) {
		return "", outOfScope(ev.Cwd, o.Scope)
	}
	if ev.TranscriptPath != "" && !claudeTranscriptOf(ev.TranscriptPath, ev.Cwd, root, *o.Scope) {
		hd.say("ckpt: hook: warning: transcript_path %s is not a Claude Code transcript of a project this hook token was installed for; not read", quote.Path(ev.TranscriptPath))
		ev.TranscriptPath = ""
	}
	return root, nil
}

// hookEvent is one decoded event as handleHook carries it through its
// steps.
type hookEvent struct {
	plan agent.Plan
	// conv is the agent as a Conversation, or nil.
	conv agent.Conversation
	// session is the ckpt session: the event's, or the one a forked
	// conversation continues (forkedAt, forkedIn: where the fork began,
	// Location.Continued).
	session, forkedAt, forkedIn string
	blocking                    bool
	// covered is the root of the event's cwd that inScope found the
	// token covers ("" for a command hook).
	covered string
	// ct is the prompt's place in the agent's conversation.
	ct TurnPlace
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
func (hd *Handler) promptFailed(ag agent.Agent, e *hookEvent, fail *agent.Failure) {
	if fail == nil {
		return
	}
	fail.Show = true
	if _, err := os.Stat(controller.OpenStore(hd.Store).SessionDir(e.session)); err != nil {
		return // a session not created yet has no earlier turn
	}
	ev := e.plan.Event
	if e.ct.PromptID == "" {
		e.ct.PromptID = ev.PromptID
	}
	if err := markTurnFailed(hd.Store, e.session, failedTurn{Prompt: *ev.Prompt, Claude: e.ct, Agent: ag.Name()}); err != nil {
		fail.Msg += "; this prompt has no checkpoint (" + msg.OneLine(err) + ")"
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
func (hd *Handler) hookWorkspace(ctx context.Context, o Options, e *hookEvent, ss sessions) (string, controller.Location, *agent.Failure) {
	ev := e.plan.Event
	loc, err := ss.locate(ctx, ev.Cwd, e.session)
	if err != nil {
		return "", loc, &agent.Failure{Msg: msg.OneLine(err) + "; nothing recorded", Block: e.blocking}
	}
	if e.conv != nil && loc.Continued {
		// A conversation forked by `ckpt rewind` continues the ckpt
		// session it was forked from.
		e.session, e.forkedAt, e.forkedIn = loc.Session, loc.ContinuedAt, loc.ContinuedIn
	}
	ws := loc.Workspace
	if e.conv != nil && !loc.OfSession {
		if p := e.conv.Workspace(ev.Cwd, o.ProjectDir); p != ev.Cwd {
			ws = p
		}
	}
	if o.Scope != nil && ws != e.covered {
		// Over HTTP: nothing outside the token's install, not even a
		// session created there (nor a fork, below). A workspace that is
		// the root inScope resolved and checked is not resolved again.
		if root, err := controller.WorkspaceRoot(ws); err != nil || !o.Scope.Covers(root) {
			return "", loc, outOfScope(ws, o.Scope)
		}
	}
	// A session ckpt has not seen, whose transcript already holds a
	// conversation ckpt recorded (a fork: SessionStart source "fork", or
	// the first prompt of a session --fork-session made), becomes a ckpt
	// fork of the session it came from.
	if e.conv != nil && e.session == ev.SessionID && !loc.OfSession &&
		(ev.HookEventName == "UserPromptSubmit" || (e.plan.Start && ev.Source == "fork")) {
		if root, err := filepath.EvalSymlinks(ws); err == nil {
			if _, err := forkFromParent(ctx, e.conv, hd.Store, root, e.session, ev.TranscriptPath); err != nil {
				hd.say("ckpt: hook: warning: fork of the parent session: %s; recording a new session", msg.OneLine(err))
			}
		}
	}
	return ws, loc, nil
}

// prompt opens the turn of a UserPromptSubmit. Not blocking even with
// --strict: exit 2 here would erase the user's prompt, which is worse than
// a turn without a checkpoint.
func (h hookRun) prompt(ctx context.Context, o Options, e *hookEvent) *agent.Failure {
	hd, ev := h.hd, e.plan.Event
	if e.conv != nil {
		e.ct = h.turnPlace(e)
	}
	res, err := h.c.BeginTurn(ctx, *ev.Prompt, controller.TurnOptions{Scan: o.ScanTurn})
	if err != nil {
		return &agent.Failure{Msg: "open turn: " + msg.OneLine(err)}
	}
	clearTurnFailed(hd.Store, e.session)
	if res.Warning != "" {
		hd.say("ckpt: warning: %s", res.Warning)
	}
	if s := msg.SkipNote(res); s != "" {
		hd.say("ckpt: warning: %s", s)
	}
	if e.conv == nil {
		return nil
	}
	if err := recordClaudeTurn(ctx, h.c, res.ID, e.ct); err != nil {
		hd.say("ckpt: hook: warning: record the turn's place in Claude's conversation: %s", msg.OneLine(err))
	}
	if res.Turn == 0 && e.ct.ResumeAt == "" && e.session == ev.SessionID && ev.PromptID != "" {
		// A session's first prompt: if it is a fork, its transcript
		// appears later; the first tool call looks. (Not only for a
		// session this event created: Claude runs SessionStart hooks
		// alongside the first prompt.)
		if b, err := json.Marshal(pendingPrompt{PromptID: ev.PromptID, Prompt: *ev.Prompt}); err == nil {
			if err := h.c.SetMeta(ctx, adoptKey, string(b)); err != nil {
				hd.say("ckpt: hook: warning: record the first prompt for a fork's adoption: %s", msg.OneLine(err))
			}
		}
	}
	return nil
}

// turnPlace is where the prompt's turn begins in the agent's
// conversation, read before the turn opens: the transcript does not hold
// this prompt yet, so its last assistant entry is where the turn begins.
func (h hookRun) turnPlace(e *hookEvent) TurnPlace {
	ev := e.plan.Event
	ct := TurnPlace{PromptID: ev.PromptID}
	var err error
	if ct.ResumeAt, err = e.conv.ResumePoint(ev.TranscriptPath); err != nil {
		h.hd.say("ckpt: hook: warning: transcript: %s; `ckpt rewind` cannot fork Claude's conversation at this turn", msg.OneLine(err))
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
	if len(plan.Paths) == 0 {
		h.beginStep(ctx, ev.ToolUseID, ev.ToolName) // each tool call is a step
	}
	abs := make([]string, len(plan.Paths))
	for i, p := range plan.Paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(ev.Cwd, p)
		}
		abs[i] = p
	}
	// The step of the call is opened with the capture of its paths.
	step := controller.StepOptions{Key: ev.ToolUseID, Tool: ev.ToolName}
	if fails = append(fails, h.capture(ctx, step, abs)...); len(fails) > 0 {
		return &agent.Failure{Msg: strings.Join(fails, "; "), Block: h.strict}
	}
	return nil
}
