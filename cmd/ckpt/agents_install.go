package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// runAgentInstall installs (or uninstalls) agent's hooks for the current
// workspace.
func (a *app) runAgentInstall(s *agentSpec, o installOptions, install bool) error {
	if err := a.locate(context.Background()); err != nil {
		return err
	}
	return s.install(a, a.workspace, o, install)
}

// claudeDetect is how `ckpt install` with no agent finds Claude Code.
var claudeDetect = &agentSpec{name: "claude", title: "Claude Code", detect: []string{".claude", "CLAUDE.md"},
	writes: ".claude/settings.json", bins: []string{"claude"}, home: []string{".claude"}}

// foundAgent is an agent `ckpt install` with no name found, and where.
type foundAgent struct {
	Agent string   `json:"agent"`
	Found []string `json:"found"`
}

// detectAgents finds the agents to install for: those whose command is
// on $PATH, whose user configuration directory exists, or whose files
// are in the workspace, in agentNames' order.
func (a *app) detectAgents() []foundAgent {
	home, _ := os.UserHomeDir()
	list := []foundAgent{}
	for _, n := range agentNames() {
		s := agents[n]
		if n == "claude" {
			s = claudeDetect
		}
		var hits []string
		for _, b := range s.bins {
			if _, err := exec.LookPath(b); err == nil {
				hits = append(hits, b+" on $PATH")
				break
			}
		}
		for _, d := range s.home {
			if home == "" {
				break
			}
			if fi, err := os.Stat(filepath.Join(home, filepath.FromSlash(d))); err == nil && fi.IsDir() {
				hits = append(hits, "~/"+d)
			}
		}
		for _, p := range s.detect {
			if _, err := os.Lstat(filepath.Join(a.workspace, filepath.FromSlash(p))); err == nil {
				hits = append(hits, p)
			}
		}
		if len(hits) > 0 {
			list = append(list, foundAgent{Agent: n, Found: hits})
		}
	}
	return list
}

// runCheck is `ckpt install --check [AGENT]`: each named agent's check
// (every agent that has one, when none is named). It changes nothing.
func (a *app) runCheck(args []string) error {
	var list []*agentSpec
	for _, n := range agentNames()[1:] {
		if s := agents[n]; s.check != nil && (len(args) == 0 || args[0] == n) {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		var have []string
		for _, n := range agentNames()[1:] {
			if agents[n].check != nil {
				have = append(have, n)
			}
		}
		return usagef("install --check checks %s", strings.Join(have, ", "))
	}
	if err := a.locate(context.Background()); err != nil {
		return err
	}
	for _, s := range list {
		if err := s.check(a, a.workspace); err != nil {
			return err
		}
	}
	return nil
}

// agentCommand is the hook command line ckpt installs for agent.
func agentCommand(agent string, strict bool) string {
	cmd := selfCommand() + " hook " + agent
	if strict {
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
	// mkdir creates the file's directory (app.mkdirForInstall).
	mkdir func(dir string) error
}

func (a *app) openSettings(path string) (*settingsEdit, error) {
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
	return &settingsEdit{path: path, mode: mode, exist: data != nil, root: root, hooks: hooks, mkdir: a.mkdirForInstall}, nil
}

// save writes the settings back (indented, as install.go writes Claude's).
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

// groupWant is one event ckpt hooks in a Claude-style settings file
// (event → matcher groups → hooks), as Codex and Gemini CLI read them.
type groupWant struct{ event, matcher string }

// installGroups merges command into path's Claude-style hooks for each of
// wants (install) or removes every hook own recognises (!install),
// keeping everything else byte for byte.
func installGroups(a *app, path string, wants []groupWant, command string, own func(string) bool, install bool) error {
	e, err := a.openSettings(path)
	if err != nil {
		return err
	}
	if !install && !e.exist {
		return a.reportInstall(path, install, nil, nil)
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
		if len(kept) == 0 {
			if had {
				e.hooks.del(w.event)
			}
		} else {
			b, err := marshalNoEscape(kept)
			if err != nil {
				return err
			}
			e.hooks.set(w.event, b)
		}
	}
	if len(added)+len(removed) == 0 {
		return a.reportInstall(path, install, nil, nil)
	}
	if err := e.save(!install, nil); err != nil {
		return err
	}
	return a.reportInstall(path, install, added, removed)
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
func installFlat(a *app, path string, events []string, command, cmdKey string, entry func(string) any, top map[string]string, own func(string) bool, install bool) error {
	e, err := a.openSettings(path)
	if err != nil {
		return err
	}
	if !install && !e.exist {
		return a.reportInstall(path, install, nil, nil)
	}
	var added, removed []string
	for _, ev := range events {
		raw, had := e.hooks.vals[ev]
		list, err := parseGroups(raw)
		if err != nil {
			return fmt.Errorf("%s: hooks.%s: %w (left unchanged)", path, ev, err)
		}
		var kept []json.RawMessage
		var gone []string
		exact, other := false, false
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
		if len(kept) == 0 {
			if had {
				e.hooks.del(ev)
			}
		} else {
			b, err := marshalNoEscape(kept)
			if err != nil {
				return err
			}
			e.hooks.set(ev, b)
		}
	}
	if len(added)+len(removed) == 0 {
		return a.reportInstall(path, install, nil, nil)
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
	return a.reportInstall(path, install, added, removed)
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
func installFiles(a *app, dir string, files []ownFile, install bool) error {
	added, removed, err := a.writeOwnFiles(files, install)
	if err != nil {
		return err
	}
	return a.reportInstall(dir, install, added, removed)
}

// writeOwnFiles writes (install) or removes (!install) files ckpt owns
// whole, and returns what it added and removed.
func (a *app) writeOwnFiles(files []ownFile, install bool) (added, removed []string, err error) {
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
		if err := a.mkdirForInstall(filepath.Dir(f.path)); err != nil {
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

// installDirsFile, in the store, lists the directories `ckpt install`
// created for agents' configuration, so that uninstall removes those it
// leaves empty, and only those.
const installDirsFile = "install-dirs.json"

// mkdirForInstall creates dir and its missing parents, recording in the
// store the ones it created.
func (a *app) mkdirForInstall(dir string) error {
	// Only directories below the workspace or the home directory are
	// recorded, never those themselves (nor what holds them).
	home, _ := os.UserHomeDir()
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d || d == home || d == a.workspace {
			break
		}
		made = append(made, d)
	}
	if !within(a.workspace, dir) && (home == "" || !within(home, dir)) {
		made = nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if len(made) == 0 || a.store == "" {
		return nil
	}
	dirs := readInstallDirs(a.store)
	for _, d := range made {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return writeInstallDirs(a.store, dirs)
}

func readInstallDirs(store string) []string {
	var dirs []string
	if b, err := os.ReadFile(filepath.Join(store, installDirsFile)); err == nil {
		json.Unmarshal(b, &dirs)
	}
	return dirs
}

func writeInstallDirs(store string, dirs []string) error {
	if len(dirs) == 0 {
		if err := os.Remove(filepath.Join(store, installDirsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(dirs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(store, 0o700); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(store, installDirsFile), append(b, '\n'), 0o600)
}

// removeInstallDirs removes the directories install created under root
// (the workspace, or the home directory for --user) that are now empty,
// deepest first, and returns them; a directory that holds anything stays,
// and stays recorded, as do those elsewhere.
func (a *app) removeInstallDirs(root string) []string {
	dirs := readInstallDirs(a.store)
	if len(dirs) == 0 {
		return nil
	}
	// Deepest first: a parent empties once its children go.
	slices.SortFunc(dirs, func(x, y string) int { return len(y) - len(x) })
	var kept, removed []string
	for _, d := range dirs {
		if !within(root, d) {
			kept = append(kept, d)
			continue
		}
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && fi.IsDir() && os.Remove(d) == nil {
			removed = append(removed, d)
			continue
		}
		kept = append(kept, d)
	}
	if err := writeInstallDirs(a.store, kept); err != nil {
		a.say("ckpt: warning: %s: %s", installDirsFile, oneLine(err))
	}
	return removed
}
