package setup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/internal/msg"
)

// Installed are the agents with ckpt's hooks in workspace ws.
func Installed(ws string) []string {
	var out []string
	for _, ag := range agent.All() {
		if cmds, http := agent.Installed(ag, ws); len(cmds) > 0 || http {
			out = append(out, ag.Name())
		}
	}
	return out
}

// SubdirNotes say, for a command run in cwd below workspace ws, which
// agents installed in ws would not run ckpt's hooks when started there.
func SubdirNotes(ws, cwd string) []string {
	cwd, err := filepath.EvalSymlinks(cwd)
	if err != nil || cwd == ws {
		return nil
	}
	var notes []string
	for _, n := range Installed(ws) {
		if note := agent.SubdirNote(Named(n), ws); note != "" {
			notes = append(notes, note)
		}
	}
	return notes
}

// Probe is what Check found of one installed hook.
type Probe struct {
	Agent   string `json:"agent"`
	Command string `json:"command"`
	// User: the hook is in the agent's configuration for every project
	// (an install with User), not the workspace's.
	User  bool   `json:"user,omitempty"`
	Fires bool   `json:"fires"`
	Error string `json:"error,omitempty"`
	// Note is what else the agent needs before it runs the hook (pi:
	// trusting the project).
	Note string `json:"note,omitempty"`
}

// ErrNothingInstalled is Check's error when no agent's hooks are
// installed, in the workspace or for every project.
var ErrNothingInstalled = errors.New("no agent's hooks are installed")

// Check runs each hook command installed in the workspace, and in the
// user's configuration for every project, as the agent would run it, in
// the workspace, with a prompt event in the agent's shape and $CKPT_HOME a
// temporary store: it fires when it exits 0 having recorded the prompt's
// turn there. An http hook fires when the hook server it posts to is this
// store's and answers. It changes nothing: the workspace's own store is
// not touched.
func Check(ctx context.Context, o Options) ([]Probe, error) {
	var results []Probe
	// In the home directory, the workspace's configuration is the user's.
	home, _ := os.UserHomeDir()
	if h, err := filepath.EvalSymlinks(home); err == nil {
		home = h
	}
	atHome := home != "" && o.Workspace == home
	for _, ag := range agent.All() {
		cmds, http := agent.Installed(ag, o.Workspace)
		results = append(results, o.probeAll(ctx, ag, cmds, http, false)...)
		if atHome {
			continue
		}
		ucmds, uhttp, err := agent.UserInstalled(ag)
		if err != nil {
			o.say("ckpt: warning: %s: %s", ag.Name(), msg.OneLine(err))
		}
		results = append(results, o.probeAll(ctx, ag, ucmds, uhttp, true)...)
	}
	if len(results) == 0 {
		return []Probe{}, ErrNothingInstalled
	}
	return results, nil
}

// probeAll probes ag's installed hook commands cmds, and its http hook.
func (o *Options) probeAll(ctx context.Context, ag agent.Agent, cmds []string, http, user bool) []Probe {
	var results []Probe
	for _, c := range cmds {
		r := Probe{Agent: ag.Name(), Command: c, User: user}
		if err := o.probe(ctx, ag, c); err != nil {
			r.Error = msg.OneLine(err)
		} else {
			r.Fires = true
		}
		if c, ok := ag.(agent.Checker); ok && r.Fires && !user {
			o.loadCheck(c, &r)
		}
		results = append(results, r)
	}
	if http {
		r := Probe{Agent: ag.Name(), Command: "http hook (ckpt serve --hooks)", User: user, Fires: true}
		if p, _ := hook.ServerProblem(o.Store, o.Workspace); p != "" {
			r.Fires, r.Error = false, p
		}
		results = append(results, r)
	}
	return results
}

// loadCheck turns r, the hook of c that fired, into one that does not
// when the agent will not load what install wrote in the workspace, or
// notes what it needs first (pi: trusting the project).
func (o *Options) loadCheck(c agent.Checker, r *Probe) {
	res, err := c.Check(o.env(nil))
	switch {
	case err != nil:
		r.Fires, r.Error = false, msg.OneLine(err)
	case res.Refused != "":
		r.Fires, r.Error = false, res.Refused
	default:
		r.Note = res.Note
	}
}

// probe runs command through the shell as ag's hook, with its prompt
// event, against a temporary store.
func (o *Options) probe(ctx context.Context, ag agent.Agent, command string) error {
	store, err := os.MkdirTemp("", "ckpt-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(store)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if runtime.GOOS == "windows" {
		cmd = exec.CommandContext(ctx, "cmd", "/C", command)
	} else {
		cmd = exec.CommandContext(ctx, "sh", "-c", command)
	}
	cmd.Dir = o.Workspace
	cmd.Env = append(os.Environ(), "CKPT_HOME="+store, "CKPT_SESSION=", "CKPT_WORKSPACE=", "CLAUDE_PROJECT_DIR="+o.Workspace)
	cmd.Stdin = strings.NewReader(strings.ReplaceAll(ag.Markers().Probe, "@WORK@", jsonEscape(o.Workspace)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if s := strings.TrimSpace(stderr.String()); s != "" {
			return fmt.Errorf("%v: %s", err, s)
		}
		return err
	}
	if s := strings.TrimSpace(stderr.String()); s != "" && strings.Contains(s, "ckpt: hook:") {
		return fmt.Errorf("%s", s)
	}
	if entries, _ := os.ReadDir(filepath.Join(store, "sessions")); len(entries) == 0 {
		return fmt.Errorf("it ran but recorded no turn (is it ckpt?)")
	}
	return nil
}

// jsonEscape is s as it goes inside a JSON string.
func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// checkers are the agents with a check of their own (agent.Checker:
// `ckpt install --check NAME`), by name.
func checkers() []string {
	var have []string
	for _, ag := range agent.All() {
		if _, ok := ag.(agent.Checker); ok {
			have = append(have, ag.Name())
		}
	}
	return have
}

// AgentCheck runs the check of the agent named name (one of checkers),
// which changes nothing.
func AgentCheck(name string, o Options) (*agent.CheckResult, error) {
	c, ok := Named(name).(agent.Checker)
	if !ok {
		return nil, fmt.Errorf("%s has no check of its own (%s have)", name, strings.Join(checkers(), ", "))
	}
	return c.Check(o.env(nil))
}
