package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ckpt/ckpt/controller"
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

type installOptions struct {
	user       bool
	strict     bool
	statusLine bool
	http       bool   // Claude Code: PreToolUse as an http hook to `ckpt serve --hooks`
	addr       string // the hook server's address (--addr, --port)
	noScan     bool
	check      bool // install --check: run the installed hooks, change nothing
}

func newInstallCmd(a *app) *cobra.Command {
	var o installOptions
	cmd := &cobra.Command{
		Use:   "install [AGENT...]",
		Short: "Wire ckpt into an agent's hooks: claude, codex, gemini, cursor, copilot, cline, windsurf, opencode, pi",
		Long: `Write ckpt's hooks into AGENT's configuration for this workspace (--user:
the agent's configuration for every project), so that every prompt opens a
turn and every file is captured before a tool writes it. Other settings and
hooks are kept; running it again changes nothing; an older ckpt entry is
replaced in place. Prints what it changed. "ckpt uninstall AGENT" removes
exactly what install added.

  AGENT     writes (--user)
  claude    .claude/settings.json (~/.claude/settings.json)
  codex     .codex/hooks.json ($CODEX_HOME/hooks.json or ~/.codex/hooks.json)
  gemini    .gemini/settings.json (~/.gemini/settings.json)
  cursor    .cursor/hooks.json (~/.cursor/hooks.json)
  copilot   .github/hooks/ckpt.json ($COPILOT_HOME/hooks/ or ~/.copilot/hooks/)
  cline     .clinerules/hooks/ (~/Documents/Cline/Hooks/)
  windsurf  .windsurf/hooks.json (~/.codeium/windsurf/hooks.json)
  opencode  .opencode/plugin/ckpt.js (~/.config/opencode/plugin/)
  pi        .pi/extensions/ckpt-rewind.ts (~/.pi/agent/extensions/): also pi's /rewind

With no AGENT, it installs for every agent it finds: its command on $PATH,
its configuration directory in your home directory, or its files in the
workspace, and says which it found and why. Several AGENTs install each.
--check runs each installed hook's command with a made-up prompt event,
against a temporary store, and says which fire; --check pi says whether pi will load the extension
(where it is, whether it is this ckpt's version, whether pi trusts the
project). --strict installs hooks
that block a tool call whose capture fails. docs/agents/ has a page per
agent.

Installing also turns scan mode on for the workspace (every session of it,
of any agent, inherits it), so a rewind also undoes shell edits; --no-scan
leaves it off, and a tree too big to scan at every prompt turns it off again
with one warning. Not with --user.

Claude Code: UserPromptSubmit opens a turn per
prompt, PreToolUse captures each file before Write, Edit or NotebookEdit
changes it (and Bash or PowerShell keeps scan mode's manifest), SessionStart
records a resume checkpoint in scan mode and links forked conversations,
Stop and SessionEnd start a background "ckpt sync" when the store has a
remote. Other settings and hooks are kept; running it again changes
nothing; an older ckpt install (another matcher, another binary path) is
replaced in place. --statusline also sets Claude Code's statusLine to "ckpt
statusline" (not over a status line of your own). Prints what it changed.

--http makes PreToolUse an http hook: Claude Code posts each tool call to
"ckpt serve --hooks" on loopback (--port or --addr; default: a free port
chosen at the first install), with no process started per call. The hook
carries a token of this install's own, good only for hook events of this
workspace (--user: of your home directory), so it goes in
.claude/settings.local.json (kept out of version control). The prompt and
session-start hooks check that the server answering there proves it is this
ckpt's (they send it no token before), and start it when nothing answers;
when it cannot be proven they warn and the prompt's turn records the whole
workspace instead. "ckpt statusline" says when the server is down or its
port is held by another program. Installing with or without --http
switches in place.`,
		Args: func(cmd *cobra.Command, args []string) error {
			for _, n := range args {
				if n != "claude" && agents[n] == nil {
					return usagef("install takes agents: %s (none: every agent found on $PATH, in your home directory or in this workspace)", strings.Join(agentNames(), ", "))
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.check {
				if len(args) == 1 && agents[args[0]] != nil && agents[args[0]].check != nil {
					return a.runCheck(args) // pi: whether pi will load the extension
				}
				return a.runInstallCheck(cmd.Context())
			}
			if err := a.locate(context.Background()); err != nil {
				return err
			}
			names := args
			if len(names) == 0 {
				found := a.detectAgents()
				if len(found) == 0 {
					return usagef("no agent found on $PATH, in your home directory or in %s: name one (%s)", a.workspace, strings.Join(agentNames(), ", "))
				}
				var parts []string
				for _, f := range found {
					names = append(names, f.Agent)
					parts = append(parts, f.Agent+" ("+strings.Join(f.Found, ", ")+")")
				}
				if !a.json {
					fmt.Fprintf(a.stdout, "found %s\n", strings.Join(parts, ", "))
				}
			}
			if err := a.installScan(o); err != nil {
				return err
			}
			return a.eachAgent(names, func(name string) error {
				defer func() { a.scanNote = "" }() // said once
				if err := a.installAgent(name, o, true); err != nil {
					return err
				}
				if note := subdirNote(name, a.workspace); note != "" && !o.user {
					a.say("ckpt: note: %s", note)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&o.check, "check", false, "run each installed hook with a made-up prompt event (in a temporary store) and say which fire; changes nothing")
	cmd.Flags().BoolVar(&o.noScan, "no-scan", false, "leave scan mode as it is (install turns it on for the workspace)")
	cmd.Flags().BoolVar(&o.user, "user", false, "install into the agent's configuration for every project (claude: ~/.claude/settings.json) instead of the workspace's")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "install the hooks with --strict: a failed capture blocks the edit")
	cmd.Flags().BoolVar(&o.statusLine, "statusline", false, `claude: also set Claude Code's statusLine to "ckpt statusline"`)
	cmd.Flags().BoolVar(&o.http, "http", false, "claude: send tool calls to a resident ckpt (ckpt serve --hooks) over loopback HTTP instead of starting a process per call")
	cmd.Flags().StringVar(&o.addr, "addr", "", "with --http: the hook server's loopback HOST:PORT (default: the store's current one, or a free port)")
	var port int
	cmd.Flags().IntVar(&port, "port", 0, "with --http: the hook server's port on 127.0.0.1")
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if port != 0 {
			if o.addr != "" {
				return usagef("--addr and --port: give one")
			}
			if port < 1 || port > 65535 {
				return usagef("--port %d: want 1 to 65535", port)
			}
			o.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
		piCheck := len(args) == 1 && agents[args[0]] != nil && agents[args[0]].check != nil
		if o.check && ((len(args) > 0 && !piCheck) || o.http || o.statusLine || o.user || o.strict || o.noScan) {
			return usagef("--check takes no agent (but pi) and no other install flag: it checks the hooks installed here")
		}
		if (o.addr != "") && !o.http {
			return usagef("--addr and --port go with --http")
		}
		if o.http && !slices.Contains(args, "claude") {
			return usagef("--http is for claude (Claude Code's http hooks): name it")
		}
		if o.statusLine && !slices.Contains(args, "claude") {
			return usagef("--statusline is for claude (Claude Code's status line)")
		}
		return nil
	}
	return cmd
}

// installAgent installs (or uninstalls) the hooks of the agent named
// name for the workspace.
func (a *app) installAgent(name string, o installOptions, install bool) error {
	if s := agents[name]; s != nil {
		return a.runAgentInstall(s, o, install)
	}
	return a.runInstall(o, install)
}

// eachAgent runs do for each of names, once each; with several and
// --json, their reports are printed together as one array.
func (a *app) eachAgent(names []string, do func(name string) error) error {
	var uniq []string
	for _, n := range names {
		if !slices.Contains(uniq, n) {
			uniq = append(uniq, n)
		}
	}
	names = uniq
	if len(names) > 1 && a.json {
		all := []installJSON{}
		a.installs = &all
		defer func() { a.installs = nil }()
	}
	for _, n := range names {
		if err := do(n); err != nil {
			if len(names) > 1 {
				return fmt.Errorf("%s: %w", n, err)
			}
			return err
		}
		if a.installs != nil {
			for i := range *a.installs {
				if (*a.installs)[i].Agent == "" {
					(*a.installs)[i].Agent = n
				}
			}
		}
	}
	if a.installs != nil {
		return a.printJSON(*a.installs)
	}
	return nil
}

func newUninstallCmd(a *app) *cobra.Command {
	var o installOptions
	cmd := &cobra.Command{
		Use:   "uninstall AGENT...",
		Short: "Remove exactly the hooks `ckpt install AGENT` added",
		Long: `Remove the entries "ckpt install AGENT" added to the agent's configuration
in this workspace (--user: the agent's configuration for every project; see
"ckpt install --help" for where each agent's lives), leaving every other
setting and hook as it was. A file left with nothing else is removed, and
so are the directories install created, once empty; a file of that name
that is not ckpt's is left alone. For claude that is .claude/settings.json
and .claude/settings.local.json (or ~/.claude/settings.json), including a
statusLine running "ckpt statusline", and the /rewind command; the hook
server of an --http install is stopped when no install uses it. Once no
agent's hooks are left in the workspace, its scan mode goes back to what
it was before install turned it on. Several AGENTs uninstall each.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || slices.ContainsFunc(args, func(n string) bool { return n != "claude" && agents[n] == nil }) {
				return usagef("uninstall takes agents: %s", strings.Join(agentNames(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			err := a.eachAgent(args, func(name string) error { return a.installAgent(name, o, false) })
			if err != nil {
				return err
			}
			// What install made around the hooks: the directories it
			// created, now empty, and the workspace's scan mode.
			root := a.workspace
			if o.user {
				if root, err = os.UserHomeDir(); err != nil {
					return err
				}
			}
			for _, d := range a.removeInstallDirs(root) {
				if !a.json {
					fmt.Fprintf(a.stdout, "removed %s%c\n", d, filepath.Separator)
				}
			}
			if o.user {
				return nil
			}
			return a.restoreScan()
		},
	}
	cmd.Flags().BoolVar(&o.user, "user", false, "uninstall from the agent's configuration for every project (claude: ~/.claude/settings.json) instead of the workspace's")
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
	Agent    string   `json:"agent,omitempty"` // with several agents
	Settings string   `json:"settings"`
	Changed  bool     `json:"changed"`
	Added    []string `json:"added"`
	Removed  []string `json:"removed"`
	// Scan is the workspace's scan mode after an install: "on", "off"
	// (--no-scan, --user) or "refused" (a home directory or a
	// filesystem root).
	Scan string `json:"scan,omitempty"`
}

// installScan turns scan mode on for the workspace, the default every
// session of it inherits (sessions of any agent, new ones included), so a
// code rewind also undoes what the agent did through its shell. Not with
// --no-scan, nor with --user (hooks for every project; scan mode is per
// workspace). A workspace too big for the scan budget turns it off again
// at its first prompt, with one warning (Store.SetWorkspaceScan).
func (a *app) installScan(o installOptions) error {
	a.scanState, a.scanNote = "off", ""
	if o.user {
		return nil
	}
	if err := a.locate(context.Background()); err != nil {
		return err
	}
	root, err := controller.WorkspaceRoot(a.workspace)
	if err != nil {
		return err
	}
	if o.noScan {
		// The workspace is known all the same: hooks from an agent
		// started below it record into its session.
		return controller.OpenStore(a.store).MarkWorkspace(root)
	}
	on, set := controller.OpenStore(a.store).WorkspaceScan(root)
	if on && set {
		a.scanState = "on"
		return nil
	}
	before := "unset"
	if set {
		before = "off"
	}
	err = controller.OpenStore(a.store).SetWorkspaceScan(root, true, true)
	if errors.Is(err, controller.ErrScanRefused) {
		a.scanState = "refused"
		a.scanNote = fmt.Sprintf("scan mode stays off: %s is a home directory or a filesystem root; edit-tool captures only", root)
		return nil
	}
	if err != nil {
		return err
	}
	if err := a.editInstallScan(func(m map[string]string) {
		if _, ok := m[root]; !ok {
			m[root] = before
		}
	}); err != nil {
		return err
	}
	a.scanState = "on"
	a.scanNote = fmt.Sprintf("scan mode on for %s: each prompt records the workspace, so a rewind also undoes shell edits (install --no-scan leaves it off)", root)
	return nil
}

// installScanFile, in the store, holds the scan mode each workspace had
// before an install turned it on ("unset" or "off"), for uninstall to put
// back.
const installScanFile = "install-scan.json"

// editInstallScan changes the record of installScanFile.
func (a *app) editInstallScan(edit func(map[string]string)) error {
	path := filepath.Join(a.store, installScanFile)
	m := map[string]string{}
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &m)
	}
	edit(m)
	if len(m) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'), 0o600)
}

// restoreScan puts back the workspace's scan mode as it was before an
// install turned it on, once no agent's hooks are left in the workspace
// (installedAgents), and says so.
func (a *app) restoreScan() error {
	root, err := controller.WorkspaceRoot(a.workspace)
	if err != nil {
		return err
	}
	if len(a.installedAgents()) > 0 {
		return nil
	}
	var before string
	if err := a.editInstallScan(func(m map[string]string) {
		before = m[root]
		delete(m, root)
	}); err != nil || before == "" {
		return err
	}
	if on, set := controller.OpenStore(a.store).WorkspaceScan(root); !on || !set {
		return nil // changed since: left as it is
	}
	if before == "off" {
		err = controller.OpenStore(a.store).SetWorkspaceScan(root, false, true)
	} else {
		err = controller.OpenStore(a.store).SetWorkspaceScan(root, false, false)
	}
	if err != nil {
		return err
	}
	if !a.json {
		fmt.Fprintf(a.stdout, "scan mode for %s back as before install (%s)\n", root, map[string]string{"off": "off", "unset": "not set: off unless a session turns it on"}[before])
	}
	return nil
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
func claudeWants(o installOptions, addr, token string) []claudeWant {
	cmd := command(hookCommand(o.strict))
	pre, start := cmd, cmd
	if o.http {
		pre = hookEntry{Type: "http", URL: hookURL(addr, o.strict), Headers: map[string]string{"Authorization": "Bearer " + token}}
		start = command(hookCommand(o.strict) + " --start-server")
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
	return err == nil && isLoopbackHost(h) && path == "hook/claude"
}

// claudeSettings are the settings files of a Claude install: target gets
// the hooks, other loses any of ckpt's (an install of the other kind
// there). Command hooks go in the project's .claude/settings.json; http
// hooks carry the hook server's token, so they go in
// .claude/settings.local.json, the project's settings Claude Code keeps
// out of version control. --user: ~/.claude/settings.json for both kinds.
func (a *app) claudeSettings(o installOptions) (target, other string, err error) {
	if o.user {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "", fmt.Errorf("home directory: %w", err)
		}
		return filepath.Join(home, ".claude", "settings.json"), "", nil
	}
	shared := filepath.Join(a.workspace, ".claude", "settings.json")
	local := filepath.Join(a.workspace, ".claude", "settings.local.json")
	if o.http {
		return local, shared, nil
	}
	return shared, local, nil
}

func (a *app) runInstall(o installOptions, install bool) error {
	if err := a.locate(context.Background()); err != nil {
		return err
	}
	target, other, err := a.claudeSettings(o)
	if err != nil {
		return err
	}
	var wants []claudeWant
	if install {
		var addr, token string
		if o.http {
			if addr, token, err = a.hookServerFor(o); err != nil {
				return err
			}
		}
		wants = claudeWants(o, addr, token)
	}
	var added, removed []string
	if other != "" {
		// Switching between command and http hooks: the other file's
		// hooks go (uninstall: both files).
		_, rm, err := a.editClaudeSettings(other, nil, false, false)
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
	ad, rm, err := a.editClaudeSettings(target, wants, install && o.statusLine, !install)
	if err != nil {
		return err
	}
	added, removed = append(added, ad...), append(removed, rm...)
	rewind := filepath.Join(filepath.Dir(target), "commands", claudeRewindCommand+".md")
	ad, rm, err = a.writeOwnFiles([]ownFile{{path: rewind, content: claudeRewindFile(), mode: 0o644}}, install)
	if err != nil {
		return err
	}
	added, removed = append(added, ad...), append(removed, rm...)
	if err := a.reportInstall(target, install, added, removed); err != nil {
		return err
	}
	if install && o.http {
		if p := a.ensureHookServer(""); p != "" {
			a.say("ckpt: warning: %s", p)
		}
	}
	if !install {
		// The hooks are gone: so is their token.
		if root, err := a.hookRoot(o); err == nil {
			if err := dropHookToken(a.store, root); err != nil {
				a.say("ckpt: warning: hook server configuration: %s", oneLine(err))
			}
			if cfg, ok, err := loadHookServer(a.store); err == nil && ok && len(cfg.Tokens) == 0 {
				stopHookServer(a.store, cfg)
			}
		}
	}
	return nil
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
func claudeRewindFile() []byte {
	self := selfCommand()
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

// hookRoot is the directory an http install's token is good for: the
// workspace, or the home directory with --user.
func (a *app) hookRoot(o installOptions) (string, error) {
	dir := a.workspace
	if o.user {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("home directory: %w", err)
		}
		dir = home
	}
	root, err := controller.WorkspaceRoot(dir)
	if err == nil && filepath.Dir(root) == root {
		return "", usagef("%s is the filesystem root: a hook token for it would be good for every directory", root)
	}
	return root, err
}

// hookServerFor configures the store's hook server for an http install
// and returns its address and this install's token: --addr or --port when
// given, else the address it has, else a free port. A server still
// listening at the old address is stopped, so the one the hooks start
// next listens at the new one.
func (a *app) hookServerFor(o installOptions) (addr, token string, err error) {
	cur, had, err := loadHookServer(a.store)
	if err != nil && !errors.Is(err, errOldHookServer) {
		return "", "", err
	}
	addr = o.addr
	if addr == "" && had {
		addr = cur.Addr
	}
	if addr == "" {
		// A store new to --http, or one an older ckpt set up (whose
		// server may still hold its port).
		if addr, err = freeHookPort(); err != nil {
			return "", "", err
		}
	}
	if had && addr != cur.Addr {
		defer stopHookServer(a.store, cur)
	}
	if err := checkAddr(addr, false); err != nil {
		return "", "", err
	}
	if _, port, _ := net.SplitHostPort(addr); port == "0" {
		return "", "", usagef("--addr %q: the hook server needs a fixed port", addr)
	}
	root, err := a.hookRoot(o)
	if err != nil {
		return "", "", err
	}
	_, token, err = configureHookServer(a.store, addr, root)
	return addr, token, err
}

// editClaudeSettings makes path's ckpt hooks exactly wants (none: remove
// them) and sets or removes ckpt's statusLine, keeping everything else byte
// for byte. It writes the file only when something changed, and returns
// what it added and removed.
func (a *app) editClaudeSettings(path string, wants []claudeWant, addStatus, removeStatus bool) (added, removed []string, err error) {
	e, err := a.openSettings(path)
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
		raw, had := e.hooks.vals[event]
		groups, err := parseGroups(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: hooks.%s: %w (left unchanged)", path, event, err)
		}
		if want && groupsHaveExactly(groups, w.matcher, w.entry, isOwnClaudeHook) {
			continue
		}
		kept, gone, err := removeOwnGroups(groups, isOwnClaudeHook)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: hooks.%s: %w (left unchanged)", path, event, err)
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
			continue
		}
		if len(kept) == 0 {
			if had {
				e.hooks.del(event)
			}
		} else {
			b, err := marshalNoEscape(kept)
			if err != nil {
				return nil, nil, err
			}
			e.hooks.set(event, b)
		}
	}
	ad, rm, err := statusLineChange(e.root, addStatus, removeStatus, a)
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
		scan := ""
		if install {
			scan = a.scanState
		}
		r := installJSON{Settings: path, Changed: changed || a.scanNote != "", Added: nonNil(added), Removed: nonNil(removed), Scan: scan}
		if a.installs != nil {
			*a.installs = append(*a.installs, r)
			return nil
		}
		return a.printJSON(r)
	}
	if a.scanNote != "" && install {
		defer fmt.Fprintln(a.stdout, a.scanNote)
		defer func() { a.scanNote = "" }() // said once
	}
	if !changed {
		if install && a.scanNote != "" {
			fmt.Fprintf(a.stdout, "ckpt hooks already installed in %s\n", path)
		} else if install {
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
	files := true // every entry a file under path (installFiles)
	for _, e := range append(slices.Clone(added), removed...) {
		files = files && (e == path || strings.HasPrefix(e, path+string(filepath.Separator)))
	}
	switch _, err := os.Lstat(path); {
	case files:
		// said
	case err != nil && !install:
		fmt.Fprintf(a.stdout, "removed %s\n", path)
	default:
		fmt.Fprintf(a.stdout, "updated %s\n", path)
	}
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

// hookEntry is one hook: a command, or (Claude Code) an http hook.
type hookEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// describe names the hook for install's report; an http hook's headers
// (its token) are not shown.
func (h hookEntry) describe() string {
	if h.Type == "http" {
		return "POST " + h.URL
	}
	return h.Command
}

// same reports whether h is exactly want.
func (h hookEntry) same(want hookEntry) bool {
	return h.Type == want.Type && h.Command == want.Command && h.URL == want.URL && maps.Equal(h.Headers, want.Headers)
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
