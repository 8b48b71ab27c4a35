package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/ckpt/ckpt/internal/loopback"
)

// Claude Code: hooks in .claude/settings.json (~/.claude/settings.json
// with --user; an --http install's in .claude/settings.local.json, as
// they carry a token), matcher groups per event. Its events are the
// generic protocol's shape (decodeHook). Beyond the other agents it is a
// Conversation (ckpt records where each turn begins in Claude's
// transcript, so a rewind can fork the conversation too) and HTTPHooks
// (PreToolUse may post to the resident hook server).
func init() { register(claude{}) }

// claude is Claude Code.
type claude struct{}

func (claude) Name() string  { return "claude" }
func (claude) Title() string { return "Claude Code" }

// StatusLineCommand is `ckpt statusline`.
func (claude) StatusLineCommand(e *Env) string { return e.Command + " statusline" }

// RewindHint is "/ckpt-rewind TURN" when Claude Code has ckpt's rewind
// command in the workspace ws, or for every project.
func (claude) RewindHint(ws string) string {
	dirs := []string{filepath.Join(ws, ".claude")}
	if d, err := userPath(".claude"); err == nil {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "commands", claudeRewindCommand+".md"))
		if err == nil && strings.Contains(string(b), ownFileMark) {
			return "/" + claudeRewindCommand + " TURN"
		}
	}
	return ""
}

// HTTPBlock denies the tool call in a PreToolUse http hook's answer.
func (claude) HTTPBlock(f *Failure) []byte {
	b, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]string{
		"hookEventName":            "PreToolUse",
		"permissionDecision":       "deny",
		"permissionDecisionReason": "ckpt: " + f.Msg,
	}})
	return append(b, '\n')
}

func (claude) Decode(data []byte) (Plan, *Failure) { return decodeHook(data, "claude") }

// Reply is nothing, or the message of a failure the user must see:
// Claude Code shows a hook's systemMessage to the user, the stderr of a
// hook that exits 0 only in its transcript view.
func (c claude) Reply(_ []byte, f *Failure) string {
	if f != nil && f.Show && !f.Block {
		return c.Notice(f.Msg)
	}
	return ""
}

// Notice is a systemMessage, which Claude Code shows the user.
func (claude) Notice(msg string) string {
	b, _ := json.Marshal(map[string]string{"systemMessage": "ckpt: " + msg})
	return string(b) + "\n"
}

func (claude) Markers() Markers {
	return Markers{
		Workspace: []string{".claude", "CLAUDE.md"},
		Bins:      []string{"claude"},
		Home:      []string{".claude"},
		Writes:    ".claude/settings.json",
		Config:    []string{".claude/settings.json", ".claude/settings.local.json"},
		Probe:     `{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","prompt":"ckpt install --check"}`,
		Subdir:    "never",
	}
}

// ProjectDir is $CLAUDE_PROJECT_DIR, which Claude Code exports to hooks.
func (claude) ProjectDir(getenv func(string) string) string { return getenv("CLAUDE_PROJECT_DIR") }

// EnvSession is $CLAUDE_CODE_SESSION_ID, which Claude Code exports to the
// processes it starts (an MCP server among them).
func (claude) EnvSession(getenv func(string) string) string { return getenv("CLAUDE_CODE_SESSION_ID") }

// Workspace is the workspace for an event whose cwd is cwd: the project
// directory when cwd is inside it (claudeWorkspace).
func (claude) Workspace(cwd, projectDir string) string { return claudeWorkspace(cwd, projectDir) }

// ResumePoint is the uuid of the last assistant entry of the main
// conversation in the transcript (lastAssistantUUID).
func (claude) ResumePoint(transcript string) (string, error) { return lastAssistantUUID(transcript) }

// ForkPoint reads the end of the transcript (a transcript it cannot read
// is one not written yet) for the user entry that is the prompt (its
// promptId and text) and returns the last assistant entry before it.
func (claude) ForkPoint(transcript, promptID, prompt string) (at string, found, written bool, err error) {
	data, err := readTail(transcript, maxTranscriptTail)
	if err != nil {
		return "", false, false, nil
	}
	written = bytes.Contains(data, []byte(promptID))
	at, found, err = lastAssistantIn(bytes.NewReader(data), &transcriptPrompt{ID: promptID, Text: prompt})
	return at, found, written, err
}

// Install writes Claude Code's settings: ckpt's hooks (command hooks,
// or with env.HTTP an http PreToolUse), its status line with
// env.StatusLine, and the /ckpt-rewind command; or removes them all.
func (claude) Install(e *Env, install bool) error {
	target, other, err := claudeSettings(e)
	if err != nil {
		return err
	}
	var wants []claudeWant
	if install {
		wants = claudeWants(e)
	}
	var added, removed []string
	if other != "" {
		// Switching between command and http hooks: the other file's
		// hooks go (uninstall: both files).
		_, rm, err := e.editClaudeSettings(other, nil, false, false)
		if err != nil {
			return err
		}
		for _, r := range rm {
			removed = append(removed, other+": "+r)
		}
		if _, err := os.Lstat(other); err != nil && len(rm) > 0 {
			removed = append(removed, other) // left with nothing else
		}
	}
	ad, rm, err := e.editClaudeSettings(target, wants, install && e.StatusLine, !install)
	if err != nil {
		return err
	}
	added, removed = append(added, ad...), append(removed, rm...)
	rewind := filepath.Join(filepath.Dir(target), "commands", claudeRewindCommand+".md")
	ad, rm, err = e.writeOwnFiles([]ownFile{{path: rewind, content: claudeRewindFile(e.Command), mode: 0o644}}, install)
	if err != nil {
		return err
	}
	added, removed = append(added, ad...), append(removed, rm...)
	return e.report(target, install, added, removed)
}

// hookURL is the URL Claude Code's http hook posts to on the hook server
// at addr.
func hookURL(addr string, strict bool) string {
	u := "http://" + addr + "/hook/claude"
	if strict {
		u += "?strict=1"
	}
	return u
}

// claudeMatcher is the PreToolUse matcher ckpt installs: the tools that
// write files, and the shells (Bash; PowerShell on Windows) for scan mode.
// Claude Code's Edit covers what MultiEdit did; the hook still accepts
// MultiEdit events from older versions. An install with an older matcher
// is replaced in place.
const claudeMatcher = "Write|Edit|NotebookEdit|Bash|PowerShell"

// ownCommand recognises a hook command ckpt installed: a binary named
// ckpt (bare, absolute or quoted) followed by "hook claude". Uninstall
// removes exactly these, whatever binary path an older install wrote.
// Compiled on first use: every ckpt process would pay for it at start-up.
var ownCommand = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(?:'([^']*)'|"([^"]*)"|(\S+))\s+hook\s+claude(?:\s|$)`)
})

func isOwnCommand(cmd string) bool {
	m := ownCommand().FindStringSubmatch(cmd)
	if m == nil {
		return false
	}
	bin := m[1] + m[2] + m[3]
	base := filepath.Base(bin)
	return base == "ckpt" || base == "ckpt.exe"
}

// claudeWant is one hook ckpt installs into Claude Code's settings.
type claudeWant struct {
	event, matcher string
	entry          hookEntry
}

// claudeWants are the hooks `ckpt install claude` writes: command hooks
// for every event, or (http) an http hook for PreToolUse, the hot path,
// with the prompt and session-start command hooks starting the resident
// server when it is not running. Stop and SessionEnd start a background
// sync when the store has a remote.
func claudeWants(e *Env) []claudeWant {
	cmd := command(e.agentCommand("claude"))
	pre, start := cmd, cmd
	if e.HTTP != nil {
		pre = hookEntry{Type: "http", URL: hookURL(e.HTTP.Addr, e.Strict), Headers: map[string]string{"Authorization": "Bearer " + e.HTTP.Token}}
		start = command(e.agentCommand("claude") + " --start-server")
	}
	return []claudeWant{
		{"UserPromptSubmit", "", start},
		{"PreToolUse", claudeMatcher, pre},
		{"SessionStart", "", start},
		{"Stop", "", cmd},
		{"SessionEnd", "", cmd},
	}
}

func command(c string) hookEntry { return hookEntry{Type: "command", Command: c} }

// claudeEvents are the events ckpt may have hooks in.
var claudeEvents = []string{"UserPromptSubmit", "PreToolUse", "SessionStart", "Stop", "SessionEnd"}

// isOwnClaudeHook recognises a hook ckpt installed for Claude Code: a
// command running "ckpt hook claude", or an http hook posting to a hook
// server's /hook/claude.
func isOwnClaudeHook(h hookEntry) bool {
	switch h.Type {
	case "http":
		return isOwnHookURL(h.URL)
	case "command", "":
		return isOwnCommand(h.Command)
	}
	return false
}

// isOwnHookURL recognises the URL of ckpt's hook server on loopback.
func isOwnHookURL(u string) bool {
	rest, ok := strings.CutPrefix(u, "http://")
	if !ok {
		return false
	}
	host, path, _ := strings.Cut(rest, "/")
	path, _, _ = strings.Cut(path, "?")
	h, _, err := net.SplitHostPort(host)
	return err == nil && loopback.Host(h) && path == "hook/claude"
}

// claudeSettings are the settings files of a Claude install: target gets
// the hooks, other loses any of ckpt's (an install of the other kind
// there). Command hooks go in the project's .claude/settings.json; http
// hooks carry the hook server's token, so they go in
// .claude/settings.local.json, the project's settings Claude Code keeps
// out of version control. --user: ~/.claude/settings.json for both kinds.
func claudeSettings(e *Env) (target, other string, err error) {
	if e.User {
		p, err := claude{}.userConfig()
		return p, "", err
	}
	shared := filepath.Join(e.Workspace, ".claude", "settings.json")
	local := filepath.Join(e.Workspace, ".claude", "settings.local.json")
	if e.HTTP != nil {
		return local, shared, nil
	}
	return shared, local, nil
}

// claudeRewindCommand is the custom slash command install gives Claude
// Code: /ckpt-rewind TURN rewinds the files to the start of TURN from
// inside Claude Code (its own /rewind is Claude's checkpoints, not
// ckpt's, so the name is ckpt's).
const claudeRewindCommand = "ckpt-rewind"

// claudeRewindFile is the command's file: Claude Code runs the !`…` line
// itself, before the model sees the command, in the session the command
// was typed in (${CLAUDE_SESSION_ID}); the model only reports it. The
// conversation cannot be rewound from inside the running conversation:
// the text says how to, from a terminal, in one step.
func claudeRewindFile(self string) []byte {
	return []byte(`---
# ` + ownFileMark + ` (ckpt uninstall claude removes it)
description: Rewind the files to the start of a ckpt turn (ckpt undo brings them back)
argument-hint: TURN[.STEP]
allowed-tools: Bash(` + self + `:*)
---
!` + "`" + self + ` --session ${CLAUDE_SESSION_ID} rewind $ARGUMENTS --scope code 2>&1 || ` + self + ` --session ${CLAUDE_SESSION_ID} list 2>&1` + "`" + `

ckpt has just run the command above, outside this conversation; its output is above. Do not change any file now. In one or two lines, tell the user what ckpt rewound (or why it did not), that ` + "`ckpt undo`" + ` in a terminal brings the files back, and that ` + "`ckpt rewind TURN --scope both --resume-claude`" + ` in a terminal rewinds this conversation as well and reopens Claude there.
`)
}

// editClaudeSettings makes path's ckpt hooks exactly wants (none: remove
// them) and sets or removes ckpt's statusLine, keeping everything else byte
// for byte. It writes the file only when something changed, and returns
// what it added and removed.
func (env *Env) editClaudeSettings(path string, wants []claudeWant, addStatus, removeStatus bool) (added, removed []string, err error) {
	e, err := env.openSettings(path)
	if err != nil {
		return nil, nil, err
	}
	if !e.exist && len(wants) == 0 && !addStatus {
		return nil, nil, nil
	}
	wanted := map[string]claudeWant{}
	for _, w := range wants {
		wanted[w.event] = w
	}
	for _, event := range claudeEvents {
		w, want := wanted[event]
		ad, rm, err := e.claudeEvent(event, w, want)
		if err != nil {
			return nil, nil, err
		}
		added, removed = append(added, ad...), append(removed, rm...)
	}
	ad, rm, err := env.statusLineChange(e.root, addStatus, removeStatus)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: statusLine: %w (left unchanged)", path, err)
	}
	added, removed = append(added, ad...), append(removed, rm...)
	// An http hook holds the hook server's token: the file is the
	// user's alone, new or not (Claude Code creates settings.local.json
	// with the umask's mode, often world-readable).
	secret := false
	for _, w := range wants {
		secret = secret || w.entry.Type == "http"
	}
	if secret {
		e.mode &^= 0o077
	}
	if len(added) == 0 && len(removed) == 0 {
		if secret && e.exist {
			if err := tightenSettings(path, e.mode); err != nil {
				return nil, nil, err
			}
		}
		return nil, nil, nil
	}
	// Left with no hook to add: a file with nothing else goes.
	if err := e.save(len(wants) == 0 && !addStatus, nil); err != nil {
		return nil, nil, err
	}
	return added, removed, nil
}

// claudeEvent makes ckpt's hooks of event exactly w (want), or none
// (!want), and returns what it added and removed.
func (e *settingsEdit) claudeEvent(event string, w claudeWant, want bool) (added, removed []string, err error) {
	raw, had := e.hooks.vals[event]
	groups, err := parseGroups(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: hooks.%s: %w (left unchanged)", e.path, event, err)
	}
	if want && groupsHaveExactly(groups, w.matcher, w.entry, isOwnClaudeHook) {
		return nil, nil, nil
	}
	kept, gone, err := removeOwnGroups(groups, isOwnClaudeHook)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: hooks.%s: %w (left unchanged)", e.path, event, err)
	}
	for _, c := range gone {
		removed = append(removed, describeHook(event, c))
	}
	if want {
		b, err := marshalNoEscape(hookGroup{Matcher: w.matcher, Hooks: []hookEntry{w.entry}})
		if err != nil {
			return nil, nil, err
		}
		kept = append(kept, b)
		added = append(added, describeHook(event, w.entry.describe()))
	}
	if len(gone) == 0 && !want {
		return nil, nil, nil
	}
	return added, removed, e.setList(event, kept, had)
}

// tightenSettings takes group and world access away from the settings
// file at path (a regular file, never followed if a symlink).
func tightenSettings(path string, mode fs.FileMode) error {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
		return err
	}
	if err := os.Chmod(path, mode.Perm()); err != nil {
		return fmt.Errorf("%s holds the hook server's token, but making it private failed: %w", path, err)
	}
	return nil
}

// statusLineCommand recognises the statusLine command ckpt installs.
var statusLineCommand = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(?:'([^']*)'|"([^"]*)"|(\S+))\s+statusline\s*$`)
})

func isOwnStatusLine(cmd string) bool {
	m := statusLineCommand().FindStringSubmatch(cmd)
	if m == nil {
		return false
	}
	base := filepath.Base(m[1] + m[2] + m[3])
	return base == "ckpt" || base == "ckpt.exe"
}

// statusLineChange sets (add) or removes (remove) ckpt's statusLine in the
// settings root. A statusLine that is not ckpt's is never replaced or
// removed: adding over it says so on stderr and leaves it.
func (e *Env) statusLineChange(root *object, add, remove bool) (added, removed []string, err error) {
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
				e.say("ckpt: statusLine in the settings is not ckpt's; left as it is")
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
		e.say("ckpt: statusLine is set to %q already; left as it is", cur.Command)
		return nil, nil, nil
	}
	want := claude{}.StatusLineCommand(e)
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

// userConfig is the settings file of a --user install.
func (claude) userConfig() (string, error) { return userPath(".claude", "settings.json") }
