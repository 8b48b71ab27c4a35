package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ckpt/ckpt/agent"
)

// installedAgents are the agents with ckpt's hooks in the workspace.
func (a *app) installedAgents() []string {
	var out []string
	for _, ag := range agent.All() {
		if cmds, http := agent.Installed(ag, a.workspace); len(cmds) > 0 || http {
			out = append(out, ag.Name())
		}
	}
	return out
}

type checkJSON struct {
	Agent   string `json:"agent"`
	Command string `json:"command"`
	Fires   bool   `json:"fires"`
	Error   string `json:"error,omitempty"`
	// Note is what else the agent needs before it runs the hook (pi:
	// trusting the project).
	Note string `json:"note,omitempty"`
}

// runInstallCheck is `ckpt install --check`: each installed hook command
// is run as the agent would run it, in the workspace, with a prompt event
// in the agent's shape and $CKPT_HOME a temporary store; it fires when it
// exits 0 having recorded the prompt's turn there. The workspace's own
// store is not touched.
func (a *app) runInstallCheck(ctx context.Context) error {
	if err := a.locate(ctx); err != nil {
		return err
	}
	var results []checkJSON
	for _, n := range a.installedAgents() {
		ag, _ := agent.Lookup(n)
		cmds, http := agent.Installed(ag, a.workspace)
		for _, c := range cmds {
			r := checkJSON{Agent: n, Command: c}
			if err := a.probeHook(ctx, ag, c); err != nil {
				r.Error = oneLine(err)
			} else {
				r.Fires = true
			}
			if c, ok := ag.(agent.Checker); ok && r.Fires {
				a.loadCheck(c, &r)
			}
			results = append(results, r)
		}
		if http {
			r := checkJSON{Agent: n, Command: "http hook (ckpt serve --hooks)", Fires: true}
			if p, _ := hookServerProblem(a.store, a.workspace); p != "" {
				r.Fires, r.Error = false, p
			}
			results = append(results, r)
		}
	}
	failed := slices.ContainsFunc(results, func(r checkJSON) bool { return !r.Fires })
	if a.json {
		if results == nil {
			results = []checkJSON{}
		}
		if err := a.printJSON(results); err != nil {
			return err
		}
	} else {
		if len(results) == 0 {
			return fmt.Errorf("no agent's hooks are installed in %s: run `ckpt install`", a.workspace)
		}
		for _, r := range results {
			if r.Fires {
				fmt.Fprintf(a.stdout, "%s: fires: %s\n", r.Agent, r.Command)
				if r.Note != "" {
					fmt.Fprintf(a.stdout, "%s: note: %s\n", r.Agent, r.Note)
				}
			} else {
				fmt.Fprintf(a.stdout, "%s: does not fire: %s: %s\n", r.Agent, r.Command, r.Error)
			}
		}
	}
	if failed {
		return silentError{exitFail}
	}
	return nil
}

// loadCheck turns r, the hook of c that fired, into one that does not
// when the agent will not load what install wrote here, or notes what it
// needs first (pi: trusting the project).
func (a *app) loadCheck(c agent.Checker, r *checkJSON) {
	res, err := c.Check(a.agentEnv(installOptions{}))
	switch {
	case err != nil:
		r.Fires, r.Error = false, oneLine(err)
	case res.Refused != "":
		r.Fires, r.Error = false, res.Refused
	default:
		r.Note = res.Note
	}
}

// probeHook runs command through the shell as agent's hook, with its
// prompt event, against a temporary store.
func (a *app) probeHook(ctx context.Context, ag agent.Agent, command string) error {
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
	cmd.Dir = a.workspace
	cmd.Env = append(os.Environ(), "CKPT_HOME="+store, "CKPT_SESSION=", "CKPT_WORKSPACE=", "CLAUDE_PROJECT_DIR="+a.workspace)
	cmd.Stdin = strings.NewReader(strings.ReplaceAll(ag.Markers().Probe, "@WORK@", jsonEscape(a.workspace)))
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

// warnSubdir says, for a command run below the workspace, which installed
// agents started here would not run ckpt's hooks.
func (a *app) warnSubdir() {
	cwd, err := os.Getwd()
	if err != nil {
		return
	}
	if cwd, err = filepath.EvalSymlinks(cwd); err != nil || cwd == a.workspace {
		return
	}
	for _, n := range a.installedAgents() {
		ag, _ := agent.Lookup(n)
		if note := agent.SubdirNote(ag, a.workspace); note != "" {
			a.say("ckpt: warning: %s", note)
		}
	}
}
