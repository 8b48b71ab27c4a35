package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ckpt/ckpt/controller"
)

// Agent is one coding agent ckpt hooks into. Every agent in the registry
// implements it; optional interfaces (Checker, Conversation, HTTPHooks,
// StatusLiner) add what only some agents have.
type Agent interface {
	// Name is the NAME in `ckpt hook|install|uninstall NAME`.
	Name() string
	// Title is the agent's product name, for messages.
	Title() string
	// Decode turns one of the agent's hook events into a Plan, touching
	// nothing. The plan's event is normalised: its HookEventName is
	// UserPromptSubmit, PreToolUse or SessionStart.
	Decode(event []byte) (Plan, *Failure)
	// Reply is what the agent expects on stdout after event, given how
	// the hook ended (f: nil when all went well). It is printed
	// whatever happened; "" prints nothing.
	Reply(event []byte, f *Failure) string
	// Install writes (install) or removes (!install) the agent's hook
	// configuration for env.Workspace, or the user's with env.User,
	// reporting each changed file through env.Report.
	Install(env *Env, install bool) error
	// Markers say how to tell that the agent is used and where Install
	// writes.
	Markers() Markers
}

// Markers are how `ckpt install` with no agent finds an agent, and where
// its hooks go in a workspace.
type Markers struct {
	// Workspace lists workspace-relative, slash-separated paths whose
	// presence says the project uses the agent.
	Workspace []string
	// Bins are the agent's commands: one on $PATH says it is installed.
	Bins []string
	// Home lists the agent's user configuration directories, relative to
	// the home directory: one that exists says the user runs the agent.
	Home []string
	// Writes says where Install writes in a workspace, for messages.
	Writes string
	// Config lists the workspace-relative files Install writes the hook
	// commands into, for finding what is installed.
	Config []string
	// Probe is a prompt event in the agent's own shape, @WORK@ standing
	// for the workspace, to send through an installed hook's command
	// (`ckpt install --check`); "" when there is none.
	Probe string
	// Subdir says whether the agent, started in a subdirectory of the
	// workspace, loads the workspace's hooks: "never", "git" (only when
	// the workspace is a git repository's root) or "" (yes).
	Subdir string
}

// Checker is implemented by an agent that can say, changing nothing,
// whether it will run what Install wrote (`ckpt install --check NAME`).
type Checker interface {
	Check(env *Env) (*CheckResult, error)
}

// CheckResult is what a Checker found: JSON for --json, Lines for people.
type CheckResult struct {
	JSON  any
	Lines []string
	// Refused, when not "", says why the agent will not load what Install
	// wrote here (pi: the project is not trusted): its hooks do not fire.
	Refused string
	// Note, when not "", is what the agent needs first before it runs
	// the hooks (pi: the user trusting the project).
	Note string
}

// Conversation is implemented by an agent whose conversation ckpt
// records beside the files, so that a rewind can fork the conversation as
// well (Claude Code): where each turn begins in the agent's transcript,
// and which earlier conversation a new session continues.
type Conversation interface {
	Agent
	// ProjectDir is the project directory the agent exports to its hooks
	// (read through getenv), "" when none.
	ProjectDir(getenv func(string) string) string
	// Workspace is the workspace for an event whose cwd is cwd, given
	// ProjectDir's answer.
	Workspace(cwd, projectDir string) string
	// Notice is what to print on stdout for the agent to show msg, a
	// warning, to the user.
	Notice(msg string) string
	// ResumePoint is where a turn that opens now begins in the
	// conversation whose transcript is at transcript: the id of its last
	// assistant entry ("" when there is none yet). It only reads.
	ResumePoint(transcript string) (string, error)
	// ForkPoint finds the user entry of prompt (its id and text) in the
	// transcript and returns the last assistant entry before it: found
	// says whether the prompt's entry is there as sent, written whether
	// the transcript holds the prompt's id at all (the agent writes it
	// behind its hook events). It only reads.
	ForkPoint(transcript, promptID, prompt string) (at string, found, written bool, err error)
}

// EnvSessioner is implemented by an agent that exports its session id to
// the processes it starts (Claude Code: $CLAUDE_CODE_SESSION_ID), so that
// an MCP server it starts records into the session its hooks record into
// (hook.MCPSession).
type EnvSessioner interface {
	Conversation
	// EnvSession is the agent's session id, read through getenv; "" when
	// the agent did not start this process.
	EnvSession(getenv func(string) string) string
}

// Plan is what one event asks for, decided from its JSON alone.
type Plan struct {
	// Event is the event, normalised to Claude Code's shape.
	Event Event
	// Paths are the files about to be written, to capture: absolute, or
	// relative to Event.Cwd.
	Paths []string
	// Shell says a shell command is about to run.
	Shell bool
	// Start marks a SessionStart; Event.Source says which.
	Start bool
	// None: nothing to do (a quiet event, a tool that does not write).
	None bool
	// Sync: the agent finished answering or the session ended, so a
	// background `ckpt sync` starts when the store has a remote.
	Sync bool
	// Label reads the prompt of a turn opened without it, labelled
	// LabelFrom (an agent whose events do not carry the prompt: the Cline
	// CLI): once the event's turn is open, the hook relabels it with what
	// Label returns ("" when it cannot be read yet).
	LabelFrom string
	Label     func() string
}

// Failure is a problem the hook reports as one line.
type Failure struct {
	Msg string
	// Block stops the tool call (only with --strict).
	Block bool
	// Refused: the event is outside what its token is good for (over
	// HTTP; answered 403).
	Refused bool
	// Show asks for the message where the agent shows it to the user as
	// well (Claude Code: a systemMessage), for what the user must know:
	// a prompt whose turn did not open.
	Show bool
}

// Error is the failure's message.
func (f *Failure) Error() string { return f.Msg }

// registry holds every agent by name; generic is looked up but not listed.
var registry = map[string]Agent{}

func register(a Agent) { registry[a.Name()] = a }

// Lookup returns the agent named name: one of Names, or "generic" (the
// Claude-shaped protocol any agent can speak; it installs nothing).
func Lookup(name string) (Agent, bool) {
	if name == generic.Name() {
		return generic, true
	}
	a, ok := registry[name]
	return a, ok
}

// Names lists the agents Install can wire up: claude first, then the
// others by name.
func Names() []string {
	var rest []string
	for n := range registry {
		if n != "claude" {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append([]string{"claude"}, rest...)
}

// All is every agent of Names, in its order.
func All() []Agent {
	var out []Agent
	for _, n := range Names() {
		out = append(out, registry[n])
	}
	return out
}

// generic is the Claude-shaped protocol any agent can speak
// (docs/agents/README.md): `ckpt hook generic`. It has no configuration
// to install.
var generic Agent = &spec{
	name:   "generic",
	title:  "an agent speaking the generic protocol",
	decode: func(data []byte) (Plan, *Failure) { return decodeHook(data, "generic") },
}

// spec is an agent made of its parts: every agent file in this package
// registers one (see doc.go).
type spec struct {
	name, title string
	// decode turns one event into a plan (Agent.Decode).
	decode func(data []byte) (Plan, *Failure)
	// reply is what the agent expects on stdout for the event named
	// event (its own name, "" when unknown). blocked is the failure that
	// blocks the tool call (--strict), else nil: the agent goes on. nil
	// prints nothing.
	reply func(event string, blocked *Failure) string
	// install writes or removes the agent's configuration.
	install func(env *Env, install bool) error
	// check, when set, makes the agent a Checker.
	check func(env *Env) (*CheckResult, error)
	// user is the file of a --user install that holds the hook commands
	// (UserInstalled).
	user    func() (string, error)
	markers Markers
}

func (s *spec) Name() string                        { return s.name }
func (s *spec) Title() string                       { return s.title }
func (s *spec) Decode(data []byte) (Plan, *Failure) { return s.decode(data) }
func (s *spec) Markers() Markers                    { return s.markers }
func (s *spec) userConfig() (string, error) {
	if s.user == nil {
		return "", fmt.Errorf("%s has nothing to install", s.name)
	}
	return s.user()
}
func (s *spec) Install(env *Env, install bool) error {
	if s.install == nil {
		return fmt.Errorf("%s has nothing to install", s.name)
	}
	return s.install(env, install)
}

func (s *spec) Reply(data []byte, f *Failure) string {
	if s.reply == nil {
		return ""
	}
	var names struct {
		A string `json:"hook_event_name"`
		B string `json:"hookName"`
		C string `json:"agent_action_name"`
	}
	json.Unmarshal(data, &names)
	var blocked *Failure
	if f != nil && f.Block {
		blocked = f
	}
	return s.reply(names.A+names.B+names.C, blocked)
}

// checkSpec is a spec with a check: a Checker.
type checkSpec struct{ *spec }

func (s checkSpec) Check(env *Env) (*CheckResult, error) { return s.check(env) }

// registerSpec registers s, as a Checker when it has a check.
func registerSpec(s *spec) {
	if s.check != nil {
		register(checkSpec{s})
		return
	}
	register(s)
}

// normEvent is what a decoder extracts from an agent's event before the
// checks every agent shares.
type normEvent struct {
	kind    string // "prompt", "tool", or "" (nothing to do)
	session string
	cwd     string
	prompt  string
	tool    string   // the agent's tool name, for messages
	paths   []string // about to be written: absolute, or relative to cwd
	shell   bool     // a shell command is about to run
}

// plan checks n the way decodeHook checks Claude's events and makes it a
// Plan. A tool event that writes nothing is nothing to do.
func (n normEvent) plan(agent string) (Plan, *Failure) {
	switch n.kind {
	case "":
		return Plan{None: true}, nil
	case "tool":
		if len(n.paths) == 0 && !n.shell {
			return Plan{None: true}, nil
		}
	}
	event := "PreToolUse"
	if n.kind == "prompt" {
		event = "UserPromptSubmit"
	}
	if n.session == "" || n.cwd == "" {
		return Plan{}, &Failure{Msg: fmt.Sprintf("%s event needs a session id and a working directory; nothing recorded", agent)}
	}
	if !controller.ValidSession(n.session) {
		return Plan{}, &Failure{Msg: fmt.Sprintf("session id %q: %v; nothing recorded", n.session, controller.ErrBadSession)}
	}
	cwd, abs := agentPath(n.cwd, onWindows)
	if !abs {
		return Plan{}, &Failure{Msg: fmt.Sprintf("working directory %q is not absolute; nothing recorded", n.cwd)}
	}
	ev := Event{SessionID: n.session, Cwd: cwd, HookEventName: event, ToolName: n.tool}
	if n.kind == "prompt" {
		p := n.prompt
		ev.Prompt = &p
		return Plan{Event: ev}, nil
	}
	var paths []string
	seen := map[string]bool{}
	for _, p := range n.paths {
		p, _ = agentPath(p, onWindows)
		if p != "" && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return Plan{Event: ev, Shell: true}, nil
	}
	// A shell command may name the files it writes too (an apply_patch
	// heredoc): both are recorded.
	return Plan{Event: ev, Paths: paths, Shell: n.shell}, nil
}

// syncPlan is the plan for an event that ends the agent's answer or its
// session: nothing to record, and a background `ckpt sync` when the store
// has a remote (handleHook starts it, as for Claude's Stop and
// SessionEnd).
func syncPlan() (Plan, *Failure) { return Plan{None: true, Sync: true}, nil }

// badJSON is the failure for an event that is not JSON.
func badJSON(err error) *Failure {
	return &Failure{Msg: fmt.Sprintf("event is not valid JSON (%v); nothing recorded", err)}
}

// unknownEvent is the failure for an event the agent's hook does not know.
func unknownEvent(name string) *Failure {
	if name == "" {
		return &Failure{Msg: "event names no hook event; nothing recorded"}
	}
	return &Failure{Msg: fmt.Sprintf("unknown event %q; nothing recorded", name)}
}

// shellPatchPaths returns the paths an apply_patch patch inside a shell
// command writes (`apply_patch <<'EOF' ... EOF`, as the Codex CLI's model
// may run it through its shell), or nil when the command holds no patch.
// They are relative to the event's cwd.
func shellPatchPaths(command string) []string {
	if !strings.Contains(command, "*** Begin Patch") {
		return nil
	}
	return patchPaths(command)
}

// patchPaths returns the paths an apply_patch patch writes: the files it
// adds, updates or deletes and the targets it moves files to, in order.
func patchPaths(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, pre := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if rest, ok := strings.CutPrefix(line, pre); ok {
				if p := strings.TrimSpace(rest); p != "" {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// jsonString reads raw as a string, or "" when it is not one.
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// objectArgs reads a tool's arguments: an object, or a JSON string
// holding one (some agents send them encoded).
func objectArgs(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		return m
	}
	if s := jsonString(raw); s != "" && json.Unmarshal([]byte(s), &m) == nil {
		return m
	}
	return nil
}

// firstString is the first of keys that holds a non-empty string in m.
func firstString(m map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		if s := jsonString(m[k]); s != "" {
			return s
		}
	}
	return ""
}

// derivedSession names a session for an agent whose events carry no
// session id: one per agent and workspace.
func derivedSession(agent, cwd string) string {
	sum := sha256.Sum256([]byte(cwd))
	return agent + "-" + hex.EncodeToString(sum[:6])
}

// processDir is the hook process's working directory (agents run hooks in
// the workspace), for events that carry none.
func processDir() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	return d
}
