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
	"strings"

	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/spf13/cobra"
)

// claudeMatcher is the PreToolUse matcher ckpt installs: the tools that
// write files, and the shells (Bash; PowerShell on Windows) for scan mode.
// Claude Code's Edit covers what MultiEdit did; the hook still accepts
// MultiEdit events from older versions. An install with an older matcher
// is replaced in place.
const claudeMatcher = "Write|Edit|NotebookEdit|Bash|PowerShell"

// ownCommand recognises a hook command ckpt installed: a binary named
// ckpt (bare, absolute or quoted) followed by "hook claude". Uninstall
// removes exactly these, whatever binary path an older install wrote.
var ownCommand = regexp.MustCompile(`^\s*(?:'([^']*)'|"([^"]*)"|(\S+))\s+hook\s+claude(?:\s|$)`)

func isOwnCommand(cmd string) bool {
	m := ownCommand.FindStringSubmatch(cmd)
	if m == nil {
		return false
	}
	bin := m[1] + m[2] + m[3]
	base := filepath.Base(bin)
	return base == "ckpt" || base == "ckpt.exe"
}

type installOptions struct {
	user       bool
	strict     bool
	statusLine bool
}

func newInstallCmd(a *app) *cobra.Command {
	var o installOptions
	cmd := &cobra.Command{
		Use:   "install [claude|AGENT]",
		Short: "Wire ckpt into Claude Code's hooks (.claude/settings.json)",
		Long: `Merge ckpt's hooks into the workspace's .claude/settings.json (or
~/.claude/settings.json with --user): UserPromptSubmit opens a turn per
prompt, PreToolUse captures each file before Write, Edit or NotebookEdit
changes it (and Bash or PowerShell keeps scan mode's manifest), SessionStart
records a resume checkpoint in scan mode and links forked conversations.
Other settings and hooks are kept; running it again changes nothing; an
older ckpt install (another matcher, another binary path) is replaced in
place. --statusline also sets Claude Code's statusLine to "ckpt
statusline" (not over a status line of your own). Prints what it changed.
"ckpt uninstall claude" removes exactly these entries.

Other agents: codex (.codex/hooks.json), gemini (.gemini/settings.json),
cursor (.cursor/hooks.json), copilot (.github/hooks/ckpt.json), cline
(.clinerules/hooks/), windsurf (.windsurf/hooks.json), opencode
(.opencode/plugin/ckpt.js); --user writes the agent's user-level file.
With no agent, it says which agents the workspace is set up for and
what it would write, and changes nothing.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 || (len(args) == 1 && args[0] != "claude" && agents[args[0]] == nil) {
				return usagef("install takes the agent: %s (none: detect the agents configured here)", strings.Join(agentNames(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return a.runDetect()
			}
			if s := agents[args[0]]; s != nil {
				return a.runAgentInstall(s, o, true)
			}
			return a.runInstall(o, true)
		},
	}
	cmd.Flags().BoolVar(&o.user, "user", false, "install into ~/.claude/settings.json instead of the workspace's")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "install the hook with --strict: a failed capture blocks the edit")
	cmd.Flags().BoolVar(&o.statusLine, "statusline", false, `also set Claude Code's statusLine to "ckpt statusline"`)
	return cmd
}

func newUninstallCmd(a *app) *cobra.Command {
	var o installOptions
	cmd := &cobra.Command{
		Use:   "uninstall claude|AGENT",
		Short: "Remove ckpt's hooks from Claude Code's settings",
		Long: `Remove the hook entries "ckpt install claude" added from the workspace's
.claude/settings.json (or ~/.claude/settings.json with --user), and a
statusLine running "ckpt statusline", leaving every other setting and hook
as it was.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || (args[0] != "claude" && agents[args[0]] == nil) {
				return usagef("uninstall takes the agent: %s", strings.Join(agentNames(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if s := agents[args[0]]; s != nil {
				return a.runAgentInstall(s, o, false)
			}
			return a.runInstall(o, false)
		},
	}
	cmd.Flags().BoolVar(&o.user, "user", false, "uninstall from ~/.claude/settings.json instead of the workspace's")
	return cmd
}

// hookCommand is the command line installed into the settings. It is the
// bare "ckpt" when the ckpt found on $PATH is this very binary (it keeps
// working when a package manager upgrades the binary to a new versioned
// path), else the absolute path of this binary (Claude Code runs hooks
// through a shell whose $PATH may not hold a binary run from elsewhere).
func hookCommand(strict bool) string {
	cmd := selfCommand() + " hook claude"
	if strict {
		cmd += " --strict"
	}
	return cmd
}

// selfCommand is how settings name this binary (see hookCommand).
func selfCommand() string {
	bin := "ckpt"
	self, err := os.Executable()
	if err == nil {
		onPath, perr := exec.LookPath("ckpt")
		si, err1 := os.Stat(self)
		pi, err2 := os.Stat(onPath)
		if perr != nil || err1 != nil || err2 != nil || !os.SameFile(si, pi) {
			bin = shellQuote(self)
		}
	}
	return bin
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type installJSON struct {
	Settings string   `json:"settings"`
	Changed  bool     `json:"changed"`
	Added    []string `json:"added"`
	Removed  []string `json:"removed"`
}

func (a *app) runInstall(o installOptions, install bool) error {
	if err := a.locate(context.Background()); err != nil {
		return err
	}
	path := filepath.Join(a.workspace, ".claude", "settings.json")
	if o.user {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("home directory: %w", err)
		}
		path = filepath.Join(home, ".claude", "settings.json")
	}
	data, mode, err := readSettings(path)
	if err != nil {
		return err
	}
	if !install && data == nil {
		return a.reportInstall(path, install, nil, nil)
	}
	root, err := parseObject(data)
	if err != nil {
		return fmt.Errorf("%s: %w (left unchanged)", path, err)
	}
	hooks := &object{vals: map[string]json.RawMessage{}}
	if raw, ok := root.vals["hooks"]; ok {
		if hooks, err = parseObject(raw); err != nil {
			return fmt.Errorf("%s: hooks: %w (left unchanged)", path, err)
		}
	}
	var added, removed []string
	want := []struct{ event, matcher string }{{"UserPromptSubmit", ""}, {"PreToolUse", claudeMatcher}, {"SessionStart", ""}}
	command := hookCommand(o.strict)
	for _, w := range want {
		groups, err := parseGroups(hooks.vals[w.event])
		if err != nil {
			return fmt.Errorf("%s: hooks.%s: %w (left unchanged)", path, w.event, err)
		}
		if install && groupsHaveExactly(groups, w.matcher, command, isOwnCommand) {
			continue
		}
		kept, gone, err := removeOwnGroups(groups, isOwnCommand)
		if err != nil {
			return fmt.Errorf("%s: hooks.%s: %w (left unchanged)", path, w.event, err)
		}
		for _, c := range gone {
			removed = append(removed, describeHook(w.event, c))
		}
		if install {
			b, err := marshalNoEscape(hookGroup{Matcher: w.matcher, Hooks: []hookEntry{{Type: "command", Command: command}}})
			if err != nil {
				return err
			}
			kept = append(kept, b)
			added = append(added, describeHook(w.event, command))
		}
		if len(gone) == 0 && !install {
			continue
		}
		if len(kept) == 0 {
			hooks.del(w.event)
		} else {
			b, err := marshalNoEscape(kept)
			if err != nil {
				return err
			}
			hooks.set(w.event, b)
		}
	}
	ad, rm, err := statusLineChange(root, install && o.statusLine, !install, a)
	if err != nil {
		return fmt.Errorf("%s: statusLine: %w (left unchanged)", path, err)
	}
	added, removed = append(added, ad...), append(removed, rm...)
	if len(added) == 0 && len(removed) == 0 {
		return a.reportInstall(path, install, nil, nil)
	}
	if len(hooks.keys) == 0 {
		root.del("hooks")
	} else {
		root.set("hooks", hooks.marshal())
	}
	var out bytes.Buffer
	if err := json.Indent(&out, root.marshal(), "", "  "); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out.WriteByte('\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := writeFileAtomic(path, out.Bytes(), mode); err != nil {
		return err
	}
	return a.reportInstall(path, install, added, removed)
}

// statusLineCommand recognises the statusLine command ckpt installs.
var statusLineCommand = regexp.MustCompile(`^\s*(?:'([^']*)'|"([^"]*)"|(\S+))\s+statusline\s*$`)

func isOwnStatusLine(cmd string) bool {
	m := statusLineCommand.FindStringSubmatch(cmd)
	if m == nil {
		return false
	}
	base := filepath.Base(m[1] + m[2] + m[3])
	return base == "ckpt" || base == "ckpt.exe"
}

// statusLineChange sets (add) or removes (remove) ckpt's statusLine in the
// settings root. A statusLine that is not ckpt's is never replaced or
// removed: adding over it says so on stderr and leaves it.
func statusLineChange(root *object, add, remove bool, a *app) (added, removed []string, err error) {
	if !add && !remove {
		return nil, nil, nil
	}
	var cur struct {
		Type    string `json:"type"`
		Command string `json:"command"`
	}
	raw, has := root.vals["statusLine"]
	if has {
		if json.Unmarshal(raw, &cur) != nil {
			if add {
				a.say("ckpt: statusLine in the settings is not ckpt's; left as it is")
			}
			return nil, nil, nil
		}
	}
	own := has && cur.Type == "command" && isOwnStatusLine(cur.Command)
	if remove {
		if own {
			root.del("statusLine")
			return nil, []string{"statusLine: " + cur.Command}, nil
		}
		return nil, nil, nil
	}
	if has && !own {
		a.say("ckpt: statusLine is set to %q already; left as it is", cur.Command)
		return nil, nil, nil
	}
	want := selfCommand() + " statusline"
	if own && cur.Command == want {
		return nil, nil, nil
	}
	b, err := marshalNoEscape(hookEntry{Type: "command", Command: want})
	if err != nil {
		return nil, nil, err
	}
	if own {
		removed = []string{"statusLine: " + cur.Command}
	}
	root.set("statusLine", b)
	return []string{"statusLine: " + want}, removed, nil
}

func describeHook(event, command string) string {
	if event == "PreToolUse" {
		return fmt.Sprintf("PreToolUse (%s): %s", claudeMatcher, command)
	}
	return event + ": " + command
}

func (a *app) reportInstall(path string, install bool, added, removed []string) error {
	changed := len(added)+len(removed) > 0
	if a.json {
		return a.printJSON(installJSON{Settings: path, Changed: changed, Added: nonNil(added), Removed: nonNil(removed)})
	}
	if !changed {
		if install {
			fmt.Fprintf(a.stdout, "ckpt hooks already installed in %s; nothing changed\n", path)
		} else {
			fmt.Fprintf(a.stdout, "no ckpt hooks in %s; nothing changed\n", path)
		}
		return nil
	}
	for _, r := range removed {
		fmt.Fprintf(a.stdout, "removed %s\n", r)
	}
	for _, ad := range added {
		fmt.Fprintf(a.stdout, "added %s\n", ad)
	}
	fmt.Fprintf(a.stdout, "updated %s\n", path)
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// readSettings returns the file's bytes (nil when it does not exist) and
// the mode to write it back with.
func readSettings(path string) ([]byte, fs.FileMode, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o644, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file (a symlink?); edit it by hand", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	return data, fi.Mode().Perm(), nil
}

func parseGroups(raw json.RawMessage) ([]json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var groups []json.RawMessage
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, errors.New("not an array of matcher groups")
	}
	return groups, nil
}

// hookGroup is one matcher group as ckpt installs it.
type hookGroup struct {
	Matcher string      `json:"matcher,omitempty"`
	Hooks   []hookEntry `json:"hooks"`
}

type hookEntry struct {
	Type    string `json:"type"`
	Command string `json:"command"`
}

// object is a JSON object that keeps its keys' order and its values' bytes,
// so a merge leaves what it does not own as the user wrote it.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func parseObject(data []byte) (*object, error) {
	o := &object{vals: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		o.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return nil, errors.New("not valid JSON: data after the object")
	}
	return o, nil
}

func (o *object) set(key string, v json.RawMessage) {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

func (o *object) del(key string) {
	if _, ok := o.vals[key]; !ok {
		return
	}
	delete(o.vals, key)
	for i, k := range o.keys {
		if k == key {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

func (o *object) marshal() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := marshalNoEscape(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

func marshalNoEscape(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// writeFileAtomic replaces path with data: a temp file in the same
// directory, fsync, rename, fsync of the directory. On error the temp file
// is removed and path is unchanged.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	return atomicfile.WriteFile(path, data, mode)
}
