package agent

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// pi (npm @earendil-works/pi-coding-agent): an extension file,
// .pi/extensions/ckpt-rewind.ts ($PI_CODING_AGENT_DIR/extensions, else
// ~/.pi/agent/extensions, with --user), which pi discovers and loads with
// jiti. It hands pi's events to `ckpt hook pi` as Claude-shaped JSON:
// before_agent_start (once per user prompt) as UserPromptSubmit,
// tool_call as PreToolUse with pi's tool names and arguments (write and
// edit with path, bash with command; one step per call, keyed by pi's
// toolCallId), session_start as SessionStart (its reason as source: a
// resume checkpoint in scan mode) and agent_settled as Stop (a background
// sync when the store has a remote). Every rule is the hook's; the
// extension also gives pi /rewind, its /fork and /tree restore options,
// undo and redo, all through the ckpt command line.
func init() {
	registerSpec(&spec{
		name:    "pi",
		title:   "pi",
		decode:  decodePi,
		install: installPi,
		user:    piUser,
		check:   checkPi,
		markers: Markers{
			Workspace: []string{".pi"},
			Bins:      []string{"pi"},
			Home:      []string{".pi/agent"},
			Writes:    ".pi/extensions/ckpt-rewind.ts",
			Config:    []string{".pi/extensions/" + piExtensionName},
			Probe:     `{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","prompt":"ckpt install --check"}`,
			Subdir:    "never",
		},
	})
}

// piExtension is the extension ckpt installs; CKPT_ARGV becomes this
// binary's argv as a JSON array.
//
//go:embed pi/ckpt-rewind.ts
var piExtension string

// piEvent is what the extension sends: Claude's shape, plus the fields
// the pi dialect adds.
type piEvent struct {
	claudeStyleEvent
	ToolUseID string `json:"tool_use_id"`
	Source    string `json:"source"`
}

func decodePi(data []byte) (Plan, *Failure) {
	var ev piEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return Plan{}, badJSON(err)
	}
	plan, f := planClaudeStyle("pi", ev.claudeStyleEvent, piPath, func() (Plan, *Failure) {
		if ev.HookEventName != "SessionStart" {
			return Plan{}, unknownEvent(ev.HookEventName)
		}
		switch ev.Source {
		case "startup", "resume", "fork", "reload", "new":
		default:
			return Plan{}, &Failure{Msg: "SessionStart event has no known source; nothing recorded"}
		}
		// Checked as a prompt is, then made a session start.
		n := normEvent{session: ev.SessionID, cwd: ev.Cwd, kind: "prompt"}
		plan, f := n.plan("pi")
		if f != nil {
			return plan, f
		}
		plan.Event.Prompt, plan.Event.HookEventName, plan.Event.Source = nil, "SessionStart", ev.Source
		plan.Start = true
		return plan, nil
	})
	if ev.HookEventName == "UserPromptSubmit" || ev.HookEventName == "PreToolUse" {
		plan.Event.ToolUseID = ev.ToolUseID
	}
	return plan, f
}

// piPath is a path argument of pi's file tools as the tools resolve it: a
// leading @ (a file reference the model copied) is dropped, and ~ is the
// home directory (outside the workspace: the hook then skips it).
func piPath(p string) string {
	p = strings.TrimPrefix(p, "@")
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// piAgentDir is pi's user configuration directory: $PI_CODING_AGENT_DIR,
// else ~/.pi/agent.
func piAgentDir() (string, error) {
	if d := os.Getenv("PI_CODING_AGENT_DIR"); d != "" {
		return d, nil
	}
	return userPath(".pi", "agent")
}

// piExtensionName is the extension's file name in an extensions directory.
const piExtensionName = "ckpt-rewind.ts"

// piExtensionFor is the extension as this binary installs it.
func piExtensionFor(exe string, strict bool) (string, error) {
	b, err := marshalNoEscape([]string{exe})
	if err != nil {
		return "", err
	}
	content := strings.Replace(piExtension, "CKPT_ARGV", strings.TrimSpace(string(b)), 1)
	if strict {
		content = strings.Replace(content, "const STRICT = false;", "const STRICT = true;", 1)
	}
	return content, nil
}

func installPi(e *Env, install bool) error {
	ws := e.Workspace
	dir := filepath.Join(ws, ".pi", "extensions")
	if e.User {
		p, err := piUser()
		if err != nil {
			return err
		}
		dir = filepath.Dir(p)
	}
	content, err := piExtensionFor(e.Exe, e.Strict)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, piExtensionName)
	err = installFiles(e, path, []ownFile{{path: path, content: []byte(content), mode: 0o644}}, install)
	if err == nil && install && !e.User {
		// Checked with pi 1.6.0: a project's .pi/extensions load only in
		// a project the user trusted; print, json and rpc modes cannot ask.
		e.say("ckpt: note: pi loads .pi/extensions only in a trusted project: accept pi's trust prompt (or run /trust in pi); for one run, pi --approve; or install for every project with `ckpt install pi --user`; `ckpt install --check pi` says whether pi will load it")
	}
	return err
}

// piPlace is one place pi loads ckpt's extension from, as --check sees it.
type piPlace struct {
	Path string `json:"path"`
	// State: "absent", "current" (what this ckpt installs), "older"
	// (another ckpt version: install again), "other" (not ckpt's file).
	State string `json:"state"`
}

func piPlaceAt(exe, path string) piPlace {
	b, err := os.ReadFile(path)
	if err != nil {
		return piPlace{Path: path, State: "absent"}
	}
	if !strings.Contains(string(b), ownFileMark) {
		return piPlace{Path: path, State: "other"}
	}
	for _, strict := range []bool{false, true} {
		if want, err := piExtensionFor(exe, strict); err == nil && string(b) == want {
			return piPlace{Path: path, State: "current"}
		}
	}
	return piPlace{Path: path, State: "older"}
}

// piTrust is pi's decision on loading the project's .pi resources for
// ws, as pi 1.6.0 makes it without a command-line override: the nearest
// saved decision in AGENT_DIR/trust.json for ws or a parent, else the
// defaultProjectTrust setting of AGENT_DIR/settings.json ("ask" unless
// set). It returns "trusted", "declined", "ask", "always" or "never", and
// where a saved decision is.
func piTrust(agentDir, ws string) (decision, savedFor string, err error) {
	dir, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return "", "", err
	}
	data, err := os.ReadFile(filepath.Join(agentDir, "trust.json"))
	if err == nil {
		var saved map[string]*bool
		if err := json.Unmarshal(data, &saved); err != nil {
			return "", "", fmt.Errorf("%s: %w", filepath.Join(agentDir, "trust.json"), err)
		}
		for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
			if v := saved[d]; v != nil {
				if *v {
					return "trusted", d, nil
				}
				return "declined", d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	var settings struct {
		DefaultProjectTrust string `json:"defaultProjectTrust"`
	}
	if b, err := os.ReadFile(filepath.Join(agentDir, "settings.json")); err == nil {
		json.Unmarshal(b, &settings)
	}
	switch settings.DefaultProjectTrust {
	case "always", "never":
		return settings.DefaultProjectTrust, "", nil
	}
	return "ask", "", nil
}

// piLoad is whether pi will load ckpt's extension in a workspace, as
// `ckpt install --check` reports it.
type piLoad struct {
	Agent    string  `json:"agent"`
	Project  piPlace `json:"project"`
	User     piPlace `json:"user"`
	Trust    string  `json:"trust"`
	SavedFor string  `json:"trust_saved_for,omitempty"`
	// Loads: "yes", "no", or "ask" (pi asks when it starts on a terminal;
	// print, json and rpc modes do not load it without --approve).
	Loads    string `json:"loads"`
	agentDir string
}

// piLoads finds where ckpt's extension is for ws, whether it is this
// ckpt's, and whether pi will load the project's copy.
func piLoads(exe, ws string) (piLoad, error) {
	agentDir, err := piAgentDir()
	if err != nil {
		return piLoad{}, err
	}
	l := piLoad{Agent: "pi", agentDir: agentDir,
		Project: piPlaceAt(exe, filepath.Join(ws, ".pi", "extensions", piExtensionName)),
		User:    piPlaceAt(exe, filepath.Join(agentDir, "extensions", piExtensionName))}
	if l.Trust, l.SavedFor, err = piTrust(agentDir, ws); err != nil {
		return piLoad{}, err
	}
	l.Loads = "no"
	switch {
	case l.User.State == "current" || l.User.State == "older":
		l.Loads = "yes"
	case l.Project.State == "current" || l.Project.State == "older":
		l.Loads = map[string]string{"trusted": "yes", "always": "yes", "ask": "ask"}[l.Trust]
		if l.Loads == "" {
			l.Loads = "no"
		}
	}
	return l, nil
}

// checkPi is `ckpt install --check pi`: where ckpt's extension is, whether
// it is this ckpt's, and whether pi will load the project's copy.
func checkPi(e *Env) (*CheckResult, error) {
	l, err := piLoads(e.Exe, e.Workspace)
	if err != nil {
		return nil, err
	}
	r := &CheckResult{JSON: l}
	switch l.Loads {
	case "no":
		r.Refused = "pi does not load this project's .pi/extensions: the project is not trusted (`ckpt install --check pi` says why)"
	case "ask":
		r.Note = "pi loads the extension once you trust the project (accept pi's prompt, or run /trust in pi; `ckpt install --check pi` says more)"
	}
	say := func(format string, args ...any) { r.Lines = append(r.Lines, fmt.Sprintf(format, args...)) }
	state := map[string]string{
		"absent":  "not installed",
		"current": "installed (this ckpt's version)",
		"older":   "installed by another ckpt version (run `ckpt install pi` again)",
		"other":   "a file that is not ckpt's",
	}
	say("pi: project %s: %s", l.Project.Path, state[l.Project.State])
	say("pi: user %s: %s", l.User.Path, state[l.User.State])
	switch l.Trust {
	case "trusted":
		say("pi: the project is trusted (saved for %s in %s)", l.SavedFor, filepath.Join(l.agentDir, "trust.json"))
	case "declined":
		say("pi: the project is not trusted (declined for %s in %s): pi skips its .pi/extensions; run /trust in pi to change it", l.SavedFor, filepath.Join(l.agentDir, "trust.json"))
	case "always":
		say(`pi: every project is trusted (defaultProjectTrust "always")`)
	case "never":
		say(`pi: no project is trusted (defaultProjectTrust "never"): pi skips .pi/extensions unless run with --approve`)
	default:
		say("pi: no trust decision saved for the project: pi asks when it starts on a terminal; print, json and rpc modes skip .pi/extensions unless run with --approve")
	}
	say("pi: loads ckpt's extension: %s", map[string]string{"yes": "yes", "no": "no", "ask": "once you trust the project"}[l.Loads])
	return r, nil
}

// piUser is the extension a --user install writes, in pi's user
// configuration directory.
func piUser() (string, error) {
	d, err := piAgentDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "extensions", piExtensionName), nil
}
