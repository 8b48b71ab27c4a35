package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ckpt/ckpt/internal/quote"
)

// Found is an agent Detect found, and what gave it away.
type Found struct {
	Agent string   `json:"agent"`
	Found []string `json:"found"`
}

// Detect finds the agents to install for in workspace ws: those whose
// command is on $PATH, whose user configuration directory exists, or
// whose files are in ws (Markers), in Names' order.
func Detect(ws string) []Found {
	home, _ := os.UserHomeDir()
	list := []Found{}
	for _, a := range All() {
		m := a.Markers()
		var hits []string
		for _, b := range m.Bins {
			if _, err := exec.LookPath(b); err == nil {
				hits = append(hits, b+" on $PATH")
				break
			}
		}
		for _, d := range m.Home {
			if home == "" {
				break
			}
			if fi, err := os.Stat(filepath.Join(home, filepath.FromSlash(d))); err == nil && fi.IsDir() {
				hits = append(hits, "~/"+d)
			}
		}
		for _, p := range m.Workspace {
			if _, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(p))); err == nil {
				hits = append(hits, p)
			}
		}
		if len(hits) > 0 {
			list = append(list, Found{Agent: a.Name(), Found: hits})
		}
	}
	return list
}

// Installed returns the distinct ckpt hook commands installed for a in
// workspace ws (in the files of its Markers.Config), and whether an http
// hook to ckpt's hook server is among its hooks. It only reads.
func Installed(a Agent, ws string) (cmds []string, http bool) {
	var files []string
	for _, rel := range a.Markers().Config {
		files = append(files, filepath.Join(ws, filepath.FromSlash(rel)))
	}
	return installedIn(a, files)
}

// userConfigurer is an agent that knows which file of a --user install
// holds its hook commands.
type userConfigurer interface {
	userConfig() (string, error)
}

// UserInstalled is Installed for the agent's configuration for every
// project (an install with Env.User). It only reads.
func UserInstalled(a Agent) (cmds []string, http bool, err error) {
	u, ok := a.(userConfigurer)
	if !ok {
		return nil, false, nil
	}
	p, err := u.userConfig()
	if err != nil {
		return nil, false, err
	}
	cmds, http = installedIn(a, []string{p})
	return cmds, http, nil
}

// installedIn is Installed for the files holding a's hook commands.
func installedIn(a Agent, files []string) (cmds []string, http bool) {
	own := ownAgentCommand(a.Name())
	_, hasHTTP := a.(HTTPHooks)
	add := func(c string) {
		if own(c) && !slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var v any
		if json.Unmarshal(data, &v) == nil {
			walkStrings(v, func(s string) {
				add(s)
				http = http || (hasHTTP && isOwnHookURL(s))
			})
			continue
		}
		// A hook script (cline), the plugin (opencode) or the extension
		// (pi, whose CKPT argv is the binary's alone: the extension adds
		// `hook NAME`, and --strict when STRICT is set).
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if c, ok := strings.CutPrefix(line, "exec "); ok {
				add(c)
			}
			rest, ok := strings.CutPrefix(line, "const argv = ")
			bare := false
			if !ok {
				rest, ok = strings.CutPrefix(line, "const CKPT: string[] = ")
				bare = ok
			}
			var argv []string
			if ok && json.Unmarshal([]byte(strings.TrimSuffix(rest, ";")), &argv) == nil {
				if bare {
					argv = append(argv, "hook", a.Name())
					if strings.Contains(string(data), "\nconst STRICT = true;") {
						argv = append(argv, "--strict")
					}
				}
				q := make([]string, len(argv))
				for i, s := range argv {
					q[i] = quote.Shell(s)
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

// SubdirNote is what to tell the user about a started in a subdirectory
// of the workspace ws (Markers.Subdir), or "" when it loads ws's hooks
// there.
func SubdirNote(a Agent, ws string) string {
	switch a.Markers().Subdir {
	case "never":
		return fmt.Sprintf("%s loads this workspace's hooks only when started in %s itself, not in a subdirectory (`ckpt install %s --user` covers every directory)", a.Title(), ws, a.Name())
	case "git":
		if _, err := os.Stat(filepath.Join(ws, ".git")); err != nil {
			return fmt.Sprintf("%s started in a subdirectory loads this workspace's hooks only when %s is a git repository's root; start it in %s", a.Title(), ws, ws)
		}
	}
	return ""
}
