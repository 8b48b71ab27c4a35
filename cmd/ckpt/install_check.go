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
)

// agentConfig is where `ckpt install AGENT` puts an agent's hooks in a
// workspace, and a prompt event in the agent's own shape (@WORK@ stands
// for the workspace) for `ckpt install --check` to send through them.
type agentConfig struct {
	files []string // workspace-relative, slash-separated
	probe string
}

var agentConfigs = map[string]agentConfig{
	"claude": {[]string{".claude/settings.json", ".claude/settings.local.json"},
		`{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","prompt":"ckpt install --check"}`},
	"codex": {[]string{".codex/hooks.json"},
		`{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","turn_id":"t1","prompt":"ckpt install --check"}`},
	"gemini": {[]string{".gemini/settings.json"},
		`{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"BeforeAgent","prompt":"ckpt install --check"}`},
	"cursor": {[]string{".cursor/hooks.json"},
		`{"conversation_id":"ckpt-check","generation_id":"g1","workspace_roots":["@WORK@"],"hook_event_name":"beforeSubmitPrompt","prompt":"ckpt install --check"}`},
	"copilot": {[]string{".github/hooks/ckpt.json"},
		`{"sessionId":"ckpt-check","timestamp":0,"cwd":"@WORK@","prompt":"ckpt install --check"}`},
	"cline": {[]string{".clinerules/hooks/UserPromptSubmit"},
		`{"taskId":"ckpt-check","workspaceRoots":["@WORK@"],"hookName":"UserPromptSubmit","userPromptSubmit":{"prompt":"ckpt install --check"}}`},
	"windsurf": {[]string{".windsurf/hooks.json"},
		`{"trajectory_id":"ckpt-check","execution_id":"e1","agent_action_name":"pre_user_prompt","tool_info":{"user_prompt":"ckpt install --check"}}`},
	"opencode": {[]string{".opencode/plugin/ckpt.js"},
		`{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","prompt":"ckpt install --check"}`},
	"pi": {[]string{".pi/extensions/" + piExtensionName},
		`{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","prompt":"ckpt install --check"}`},
}

// installedCommands are the distinct ckpt hook commands installed for
// agent in the workspace, and whether an http hook (Claude Code's, to the
// hook server) is among its hooks.
func (a *app) installedCommands(agent string) (cmds []string, http bool) {
	own := ownAgentCommand(agent)
	add := func(c string) {
		if own(c) && !slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	for _, rel := range agentConfigs[agent].files {
		data, err := os.ReadFile(filepath.Join(a.workspace, filepath.FromSlash(rel)))
		if err != nil {
			continue
		}
		var v any
		if json.Unmarshal(data, &v) == nil {
			walkStrings(v, func(s string) {
				add(s)
				http = http || (agent == "claude" && isOwnHookURL(s))
			})
			continue
		}
		// A hook script (cline), the plugin (opencode) or the extension
		// (pi, whose argv is the binary's alone: it adds hook pi).
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if c, ok := strings.CutPrefix(line, "exec "); ok {
				add(c)
			}
			rest, ok := strings.CutPrefix(line, "const argv = ")
			if !ok {
				rest, ok = strings.CutPrefix(line, "const CKPT: string[] = ")
			}
			var argv []string
			if ok && json.Unmarshal([]byte(strings.TrimSuffix(rest, ";")), &argv) == nil {
				if agent == "pi" {
					argv = append(argv, "hook", "pi")
					if strings.Contains(string(data), "\nconst STRICT = true;") {
						argv = append(argv, "--strict")
					}
				}
				q := make([]string, len(argv))
				for i, s := range argv {
					q[i] = shellQuote(s)
				}
				add(strings.Join(q, " "))
			}
		}
	}
	return cmds, http
}

func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case map[string]any:
		for _, e := range v {
			walkStrings(e, f)
		}
	}
}

// installedAgents are the agents with ckpt's hooks in the workspace.
func (a *app) installedAgents() []string {
	var out []string
	for _, n := range agentNames() {
		if cmds, http := a.installedCommands(n); len(cmds) > 0 || http {
			out = append(out, n)
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
		cmds, http := a.installedCommands(n)
		for _, c := range cmds {
			r := checkJSON{Agent: n, Command: c}
			if err := a.probeHook(ctx, n, c); err != nil {
				r.Error = oneLine(err)
			} else {
				r.Fires = true
			}
			if n == "pi" && r.Fires {
				a.piTrustCheck(&r)
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

// piTrustCheck turns r, pi's extension's hook that fired, into one that
// does not when pi will not load the project's extension, or notes that
// pi asks first.
func (a *app) piTrustCheck(r *checkJSON) {
	l, err := piLoads(a.workspace)
	switch {
	case err != nil:
		r.Fires, r.Error = false, oneLine(err)
	case l.Loads == "no":
		r.Fires, r.Error = false, "pi does not load this project's .pi/extensions: the project is not trusted (`ckpt install --check pi` says why)"
	case l.Loads == "ask":
		r.Note = "pi loads the extension once you trust the project (accept pi's prompt, or run /trust in pi; `ckpt install --check pi` says more)"
	}
}

// probeHook runs command through the shell as agent's hook, with its
// prompt event, against a temporary store.
func (a *app) probeHook(ctx context.Context, agent, command string) error {
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
	cmd.Stdin = strings.NewReader(strings.ReplaceAll(agentConfigs[agent].probe, "@WORK@", jsonEscape(a.workspace)))
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

// subdirLoad says whether an agent started in a subdirectory of the
// workspace loads the hooks `ckpt install` wrote there (tried with each
// agent's real CLI: TestAgentsInSubdirRealBinary): "never" (Claude Code
// and Gemini CLI read project settings, and pi its .pi/extensions, only in
// the directory they start in, git repository or not), "git" (only when
// the workspace is the git repository's root, which they look for), else
// yes. Their hooks carry the directory, and ckpt records an event from a
// subdirectory into the workspace's session.
var subdirLoad = map[string]string{"claude": "never", "gemini": "never", "pi": "never", "codex": "git", "copilot": "git", "cline": "git"}

// subdirNote is what to tell the user about agent started below the
// workspace ws, or "".
func subdirNote(agent, ws string) string {
	title := claudeDetect.title
	if s := agents[agent]; s != nil {
		title = s.title
	}
	switch subdirLoad[agent] {
	case "never":
		return fmt.Sprintf("%s loads this workspace's hooks only when started in %s itself, not in a subdirectory (`ckpt install %s --user` covers every directory)", title, ws, agent)
	case "git":
		if _, err := os.Stat(filepath.Join(ws, ".git")); err != nil {
			return fmt.Sprintf("%s started in a subdirectory loads this workspace's hooks only when %s is a git repository's root; start it in %s", title, ws, ws)
		}
	}
	return ""
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
		if note := subdirNote(n, a.workspace); note != "" {
			a.say("ckpt: warning: %s", note)
		}
	}
}
