package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// Env is what an Install (or a Check) works with: where to write, how
// hooks run ckpt, and where what it changed and says goes.
type Env struct {
	// Workspace is the workspace's root directory, for a workspace
	// install.
	Workspace string
	// User installs into the agent's configuration for every project
	// (under the home directory) instead of the workspace's.
	User bool
	// Strict installs hooks that block a tool call whose capture fails.
	Strict bool
	// Command is how a hook command line names the ckpt executable,
	// quoted for a shell ("ckpt" when that is it on $PATH).
	Command string
	// Exe is the ckpt executable as an argv element (no shell in
	// between): "ckpt", or its absolute path.
	Exe string
	// StatusLine also sets the agent's status line to `ckpt statusline`
	// (agents that are StatusLiners).
	StatusLine bool
	// HTTP, when set, makes the hot-path hook an HTTP hook to the
	// resident hook server (agents that are HTTPHooks).
	HTTP *HookServer
	// Mkdir creates a directory and its parents for a configuration
	// file; nil is os.MkdirAll.
	Mkdir func(dir string) error
	// Report receives what Install changed in (or found unchanged at)
	// each configuration path; nil discards it.
	Report func(Change) error
	// Say receives notes and warnings for the user, one line each; nil
	// discards them.
	Say func(format string, args ...any)
}

// HookServer is where an HTTP hook posts: the server's loopback address
// and the install's bearer token.
type HookServer struct{ Addr, Token string }

// HTTPHooks is implemented by an agent whose hot-path hook can be an HTTP
// hook to the resident hook server (Claude Code): Install honours
// Env.HTTP, and the server answers the agent's events in its dialect.
type HTTPHooks interface {
	Agent
	// HTTPBlock is the body of the answer (200 OK) that blocks the tool
	// call for f.
	HTTPBlock(f *Failure) []byte
}

// StatusLiner is implemented by an agent whose status line Install can
// set to `ckpt statusline` (Claude Code): it honours Env.StatusLine.
type StatusLiner interface {
	Agent
	// StatusLineCommand is the status line command Install sets.
	StatusLineCommand(env *Env) string
	// RewindHint is how to rewind from inside the agent, for its status
	// line in workspace ws (Claude Code: "/ckpt-rewind TURN" when that
	// command is installed there or for every project), or "".
	RewindHint(ws string) string
}

// Change is what one Install did at Path: the entries it added and
// removed (empty when nothing changed).
type Change struct {
	Path           string
	Install        bool
	Added, Removed []string
}

func (e *Env) say(format string, args ...any) {
	if e.Say != nil {
		e.Say(format, args...)
	}
}

func (e *Env) report(path string, install bool, added, removed []string) error {
	if e.Report == nil {
		return nil
	}
	return e.Report(Change{Path: path, Install: install, Added: added, Removed: removed})
}

func (e *Env) mkdir(dir string) error {
	if e.Mkdir != nil {
		return e.Mkdir(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// agentCommand is the hook command line ckpt installs for agent.
func (e *Env) agentCommand(agent string) string {
	cmd := e.Command + " hook " + agent
	if e.Strict {
		cmd += " --strict"
	}
	return cmd
}

// ownAgentCommand recognises a hook command ckpt installed for agent,
// whatever binary path an older install wrote.
func ownAgentCommand(agent string) func(string) bool {
	re := regexp.MustCompile(`^\s*(?:'([^']*)'|"([^"]*)"|(\S+))\s+hook\s+` + regexp.QuoteMeta(agent) + `(?:\s|$)`)
	return func(cmd string) bool {
		m := re.FindStringSubmatch(cmd)
		if m == nil {
			return false
		}
		base := filepath.Base(m[1] + m[2] + m[3])
		return base == "ckpt" || base == "ckpt.exe"
	}
}

// userPath is path under the home directory.
func userPath(parts ...string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("home directory: %w", err)
	}
	return filepath.Join(append([]string{home}, parts...)...), nil
}

// settingsEdit is one JSON settings file being changed: its root object
// and its "hooks" object, kept in their keys' order and bytes.
type settingsEdit struct {
	path  string
	mode  fs.FileMode
	exist bool
	root  *object
	hooks *object
	// mkdir creates the file's directory (Env.Mkdir).
	mkdir func(dir string) error
}

func (e *Env) openSettings(path string) (*settingsEdit, error) {
	data, mode, err := readSettings(path)
	if err != nil {
		return nil, err
	}
	root, err := parseObject(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (left unchanged)", path, err)
	}
	hooks := &object{vals: map[string]json.RawMessage{}}
	if raw, ok := root.vals["hooks"]; ok {
		if hooks, err = parseObject(raw); err != nil {
			return nil, fmt.Errorf("%s: hooks: %w (left unchanged)", path, err)
		}
	}
	return &settingsEdit{path: path, mode: mode, exist: data != nil, root: root, hooks: hooks, mkdir: e.mkdir}, nil
}

// save writes the settings back, indented.
// An uninstall that leaves nothing but the keys ckpt adds when it creates
// the file (top) removes the file: ckpt created it.
func (e *settingsEdit) save(uninstall bool, top map[string]string) error {
	if len(e.hooks.keys) == 0 {
		e.root.del("hooks")
	} else {
		e.root.set("hooks", e.hooks.marshal())
	}
	if uninstall {
		only := true
		for _, k := range e.root.keys {
			if v, ok := top[k]; !ok || string(e.root.vals[k]) != v {
				only = false
			}
		}
		if only {
			if err := os.Remove(e.path); err != nil {
				return fmt.Errorf("remove %s: %w", e.path, err)
			}
			return nil
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, e.root.marshal(), "", "  "); err != nil {
		return fmt.Errorf("%s: %w", e.path, err)
	}
	out.WriteByte('\n')
	if err := e.mkdir(filepath.Dir(e.path)); err != nil {
		return err
	}
	return writeFileAtomic(e.path, out.Bytes(), e.mode)
}

// setList makes kept the hooks of event (had: the event was there),
// removing the event when nothing is kept.
func (e *settingsEdit) setList(event string, kept []json.RawMessage, had bool) error {
	if len(kept) == 0 {
		if had {
			e.hooks.del(event)
		}
		return nil
	}
	b, err := marshalNoEscape(kept)
	if err != nil {
		return err
	}
	e.hooks.set(event, b)
	return nil
}

// groupWant is one event ckpt hooks in a Claude-style settings file
// (event → matcher groups → hooks), as Codex and Gemini CLI read them.
type groupWant struct{ event, matcher string }

// installGroups merges command into path's Claude-style hooks for each of
// wants (install) or removes every hook own recognises (!install),
// keeping everything else byte for byte.
func installGroups(env *Env, path string, wants []groupWant, command string, own func(string) bool, install bool) error {
	e, err := env.openSettings(path)
	if err != nil {
		return err
	}
	if !install && !e.exist {
		return env.report(path, install, nil, nil)
	}
	ownEntry := func(h hookEntry) bool { return h.Command != "" && own(h.Command) }
	var added, removed []string
	for _, w := range wants {
		raw, had := e.hooks.vals[w.event]
		groups, err := parseGroups(raw)
		if err != nil {
			return fmt.Errorf("%s: hooks.%s: %w (left unchanged)", path, w.event, err)
		}
		if install && groupsHaveExactly(groups, w.matcher, hookEntry{Type: "command", Command: command}, ownEntry) {
			continue
		}
		kept, gone, err := removeOwnGroups(groups, ownEntry)
		if err != nil {
			return err
		}
		for _, c := range gone {
			removed = append(removed, w.event+": "+c)
		}
		if install {
			b, err := marshalNoEscape(hookGroup{Matcher: w.matcher, Hooks: []hookEntry{{Type: "command", Command: command}}})
			if err != nil {
				return err
			}
			kept = append(kept, b)
			added = append(added, w.event+describeMatcher(w.matcher)+": "+command)
		}
		if len(gone) == 0 && !install {
			continue
		}
		if err := e.setList(w.event, kept, had); err != nil {
			return err
		}
	}
	if len(added)+len(removed) == 0 {
		return env.report(path, install, nil, nil)
	}
	if err := e.save(!install, nil); err != nil {
		return err
	}
	return env.report(path, install, added, removed)
}

func describeMatcher(m string) string {
	if m == "" {
		return ""
	}
	return " (" + m + ")"
}

// groupsHaveExactly reports whether groups hold want under matcher and
// no other hook own recognises as ckpt's.
func groupsHaveExactly(groups []json.RawMessage, matcher string, want hookEntry, own func(hookEntry) bool) bool {
	found, other := false, false
	for _, raw := range groups {
		var g struct {
			Matcher string      `json:"matcher"`
			Hooks   []hookEntry `json:"hooks"`
		}
		if json.Unmarshal(raw, &g) != nil {
			continue
		}
		for _, h := range g.Hooks {
			if !own(h) {
				continue
			}
			if h.same(want) && g.Matcher == matcher {
				found = true
			} else {
				other = true
			}
		}
	}
	return found && !other
}

// removeOwnGroups drops the hooks own recognises as ckpt's from groups,
// and groups left without hooks; everything else is kept byte for byte. It
// returns the removed hooks, described.
func removeOwnGroups(groups []json.RawMessage, own func(hookEntry) bool) (kept []json.RawMessage, gone []string, err error) {
	for _, raw := range groups {
		obj, err := parseObject(raw)
		if err != nil {
			kept = append(kept, raw) // not ours to judge
			continue
		}
		var hooks []json.RawMessage
		if json.Unmarshal(obj.vals["hooks"], &hooks) != nil {
			kept = append(kept, raw)
			continue
		}
		var keep []json.RawMessage
		for _, h := range hooks {
			var e hookEntry
			if json.Unmarshal(h, &e) == nil && own(e) {
				gone = append(gone, e.describe())
				continue
			}
			keep = append(keep, h)
		}
		switch {
		case len(keep) == len(hooks):
			kept = append(kept, raw)
		case len(keep) == 0:
			// the group was ckpt's alone
		default:
			b, err := marshalNoEscape(keep)
			if err != nil {
				return nil, nil, err
			}
			obj.set("hooks", b)
			kept = append(kept, obj.marshal())
		}
	}
	return kept, gone, nil
}

// installFlat merges ckpt's entry into path's hooks.EVENT arrays of flat
// entries (Cursor's and Windsurf's hooks.json: no matcher groups), or
// removes them. entry builds the JSON entry for command; cmdKey names the
// field holding an entry's command; top sets root keys the format
// requires when ckpt creates the file (never over the user's).
func installFlat(env *Env, path string, events []string, command, cmdKey string, entry func(string) any, top map[string]string, own func(string) bool, install bool) error {
	e, err := env.openSettings(path)
	if err != nil {
		return err
	}
	if !install && !e.exist {
		return env.report(path, install, nil, nil)
	}
	var added, removed []string
	for _, ev := range events {
		raw, had := e.hooks.vals[ev]
		list, err := parseGroups(raw)
		if err != nil {
			return fmt.Errorf("%s: hooks.%s: %w (left unchanged)", path, ev, err)
		}
		kept, gone, exact, other := splitFlat(list, cmdKey, command, own)
		if install && exact && !other && len(gone) == 1 {
			continue
		}
		for _, c := range gone {
			removed = append(removed, ev+": "+c)
		}
		if install {
			b, err := marshalNoEscape(entry(command))
			if err != nil {
				return err
			}
			kept = append(kept, b)
			added = append(added, ev+": "+command)
		}
		if len(gone) == 0 && !install {
			continue
		}
		if err := e.setList(ev, kept, had); err != nil {
			return err
		}
	}
	if len(added)+len(removed) == 0 {
		return env.report(path, install, nil, nil)
	}
	if install {
		for k, v := range top {
			if _, ok := e.root.vals[k]; !ok {
				e.root.set(k, json.RawMessage(v))
			}
		}
	}
	if err := e.save(!install, top); err != nil {
		return err
	}
	return env.report(path, install, added, removed)
}

// splitFlat sorts flat hook entries into those own does not recognise
// (kept) and the commands of ckpt's (gone); exact says command is among
// them, other that another of ckpt's is.
func splitFlat(list []json.RawMessage, cmdKey, command string, own func(string) bool) (kept []json.RawMessage, gone []string, exact, other bool) {
	for _, r := range list {
		var m map[string]json.RawMessage
		c := ""
		if json.Unmarshal(r, &m) == nil {
			c = jsonString(m[cmdKey])
		}
		if c != "" && own(c) {
			gone = append(gone, c)
			if c == command {
				exact = true
			} else {
				other = true
			}
			continue
		}
		kept = append(kept, r)
	}
	return kept, gone, exact, other
}

// ownFileMark is the line that marks a file ckpt wrote whole (a hook
// script, a plugin): uninstall removes only a file that carries it, and
// install never overwrites a file without it.
const ownFileMark = "written by `ckpt install`"

// ownFile is one file ckpt owns whole.
type ownFile struct {
	path    string
	content []byte
	mode    fs.FileMode
	// own recognises a version of the file ckpt wrote; nil means it
	// carries ownFileMark.
	own func([]byte) bool
}

// installFiles writes (install) or removes (!install) files ckpt owns
// whole, reported together under dir.
func installFiles(e *Env, dir string, files []ownFile, install bool) error {
	added, removed, err := e.writeOwnFiles(files, install)
	if err != nil {
		return err
	}
	return e.report(dir, install, added, removed)
}

// writeOwnFiles writes (install) or removes (!install) files ckpt owns
// whole, and returns what it added and removed.
func (e *Env) writeOwnFiles(files []ownFile, install bool) (added, removed []string, err error) {
	for _, f := range files {
		fi, err := os.Lstat(f.path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("read %s: %w", f.path, err)
		}
		var cur []byte
		if exists {
			if !fi.Mode().IsRegular() {
				return nil, nil, fmt.Errorf("%s is not a regular file; left unchanged", f.path)
			}
			if cur, err = os.ReadFile(f.path); err != nil {
				return nil, nil, fmt.Errorf("read %s: %w", f.path, err)
			}
			own := f.own
			if own == nil {
				own = func(b []byte) bool { return bytes.Contains(b, []byte(ownFileMark)) }
			}
			if !own(cur) {
				if install {
					return nil, nil, fmt.Errorf("%s exists and is not ckpt's; left unchanged (remove or rename it, or add `ckpt hook` to it by hand)", f.path)
				}
				continue
			}
		}
		if !install {
			if exists {
				if err := os.Remove(f.path); err != nil {
					return nil, nil, fmt.Errorf("remove %s: %w", f.path, err)
				}
				removed = append(removed, f.path)
			}
			continue
		}
		if exists && bytes.Equal(cur, f.content) && fi.Mode().Perm() == f.mode {
			continue
		}
		if err := e.mkdir(filepath.Dir(f.path)); err != nil {
			return nil, nil, err
		}
		if err := writeFileAtomic(f.path, f.content, f.mode); err != nil {
			return nil, nil, err
		}
		if exists {
			removed = append(removed, f.path+" (older version)")
		}
		added = append(added, f.path)
	}
	return added, removed, nil
}
