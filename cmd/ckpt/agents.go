package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/ckpt/ckpt/controller"
)

// agentSpec is one coding agent besides Claude Code: how its hook events
// become what ckpt records, what it expects on stdout, and how its hook
// configuration is installed.
type agentSpec struct {
	name  string // the NAME in `ckpt hook|install|uninstall NAME`
	title string // the agent's product name
	// decode turns one event of the agent into a plan. The plan's event
	// is normalised: hook_event_name is UserPromptSubmit or PreToolUse.
	decode func(data []byte) (hookPlan, *hookFailure)
	// reply is what the agent expects on stdout for the event named
	// event (its own name, "" when unknown): printed after every event,
	// whatever happened. blocked is the failure that blocks the tool call
	// (--strict), else nil: the agent goes on.
	reply func(event string, blocked *hookFailure) string
	// install writes (install) or removes (!install) the agent's hook
	// configuration for ws (the workspace), or the user's with o.user.
	install func(a *app, ws string, o installOptions, install bool) error
	// check, when set, reports without changing anything whether the
	// agent will run what `ckpt install NAME` wrote (`ckpt install
	// --check`).
	check func(a *app, ws string) error
	// detect lists workspace-relative paths whose presence says the
	// project uses the agent.
	detect []string
	// writes says where `ckpt install NAME` writes, for the detection
	// report.
	writes string
	// bins are the agent's commands: one on $PATH says it is installed.
	bins []string
	// home lists the agent's user configuration directories, relative to
	// the home directory: one that exists says the user runs the agent.
	home []string
}

// agents is every agent `ckpt hook|install|uninstall NAME` takes besides
// claude (hook.go, install.go) and generic.
var agents = map[string]*agentSpec{}

func registerAgent(s *agentSpec) { agents[s.name] = s }

// agentNames lists the agent names for messages: claude first.
func agentNames() []string {
	names := []string{"claude"}
	var rest []string
	for n := range agents {
		rest = append(rest, n)
	}
	sort.Strings(rest)
	return append(names, rest...)
}

// decodeFor decodes one event of agent: Claude Code's and the generic
// protocol in hook.go, the others through their table entry.
func decodeFor(data []byte, agent string) (hookPlan, *hookFailure) {
	if s := agents[agent]; s != nil {
		return s.decode(data)
	}
	return decodeHook(data, agent)
}

// agentReply is what agent expects on stdout after data's event, given
// how the hook ended (f): for Claude Code nothing, or the message of a
// failure the user must see.
func agentReply(agent string, data []byte, f *hookFailure) string {
	if agent == "claude" && f != nil && f.show && !f.block {
		// Claude Code shows a hook's systemMessage to the user; stderr
		// of a hook that exits 0 only in its transcript view.
		b, _ := json.Marshal(map[string]string{"systemMessage": "ckpt: " + f.msg})
		return string(b) + "\n"
	}
	s := agents[agent]
	if s == nil || s.reply == nil {
		return ""
	}
	var names struct {
		A string `json:"hook_event_name"`
		B string `json:"hookName"`
		C string `json:"agent_action_name"`
	}
	json.Unmarshal(data, &names)
	var blocked *hookFailure
	if f != nil && f.block {
		blocked = f
	}
	return s.reply(names.A+names.B+names.C, blocked)
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
// hookPlan. A tool event that writes nothing is nothing to do.
func (n normEvent) plan(agent string) (hookPlan, *hookFailure) {
	switch n.kind {
	case "":
		return hookPlan{none: true}, nil
	case "tool":
		if len(n.paths) == 0 && !n.shell {
			return hookPlan{none: true}, nil
		}
	}
	event := "PreToolUse"
	if n.kind == "prompt" {
		event = "UserPromptSubmit"
	}
	if n.session == "" || n.cwd == "" {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("%s event needs a session id and a working directory; nothing recorded", agent)}
	}
	if !controller.ValidSession(n.session) {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("session id %q: %v; nothing recorded", n.session, controller.ErrBadSession)}
	}
	cwd, abs := agentPath(n.cwd, onWindows)
	if !abs {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("working directory %q is not absolute; nothing recorded", n.cwd)}
	}
	ev := hookEvent{SessionID: n.session, Cwd: cwd, HookEventName: event, ToolName: n.tool}
	if n.kind == "prompt" {
		p := n.prompt
		ev.Prompt = &p
		return hookPlan{ev: ev}, nil
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
		return hookPlan{ev: ev, shell: true}, nil
	}
	// A shell command may name the files it writes too (an apply_patch
	// heredoc): both are recorded.
	return hookPlan{ev: ev, paths: paths, shell: n.shell}, nil
}

// syncPlan is the plan for an event that ends the agent's answer or its
// session: nothing to record, and a background `ckpt sync` when the store
// has a remote (handleHook starts it, as for Claude's Stop and
// SessionEnd).
func syncPlan() (hookPlan, *hookFailure) { return hookPlan{none: true, sync: true}, nil }

// badJSON is the failure for an event that is not JSON.
func badJSON(err error) *hookFailure {
	return &hookFailure{msg: fmt.Sprintf("event is not valid JSON (%v); nothing recorded", err)}
}

// unknownEvent is the failure for an event the agent's hook does not know.
func unknownEvent(name string) *hookFailure {
	if name == "" {
		return &hookFailure{msg: "event names no hook event; nothing recorded"}
	}
	return &hookFailure{msg: fmt.Sprintf("unknown event %q; nothing recorded", name)}
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
