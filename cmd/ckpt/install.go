package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/gofrs/flock"
	"github.com/spf13/cobra"
)

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
		Short: "Wire ckpt into an agent's hooks: claude, codex, gemini, cursor, copilot, cline, windsurf, opencode, pi, qwen, kilo, amp",
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
  qwen      .qwen/settings.json (~/.qwen/settings.json)
  kilo      .kilo/plugin/ckpt.js (~/.config/kilo/plugin/)
  amp       .amp/plugins/ckpt.ts (~/.config/amp/plugins/)

With no AGENT, it installs for every agent it finds: its command on $PATH,
its configuration directory in your home directory, or its files in the
workspace, and says which it found and why. Several AGENTs install each.
--check runs each installed hook's command (pi's extension's too) with a
made-up prompt event, against a temporary store, and says which fire, and
whether pi will load its extension here; --check pi says more about pi
(where the extension is, whether it is this ckpt's version, whether pi
trusts the project). --strict installs hooks
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
workspace (--user: of the directories below your home directory, not of
the home directory itself nor of its hidden directories), so it goes in
.claude/settings.local.json (kept out of version control). The prompt and
session-start hooks check that the server answering there proves it is this
ckpt's (they send it no token before), and start it when nothing answers;
when it cannot be proven they warn and the prompt's turn records the whole
workspace instead. "ckpt statusline" says when the server is down or its
port is held by another program. Installing with or without --http
switches in place.`,
		Args: func(cmd *cobra.Command, args []string) error {
			for _, n := range args {
				if agentNamed(n) == nil {
					return usagef("install takes agents: %s (none: every agent found on $PATH, in your home directory or in this workspace)", strings.Join(agent.Names(), ", "))
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return a.runInstallCmd(cmd.Context(), args, o) },
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
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error { return checkInstallFlags(&o, port, args) }
	return cmd
}

// installLockFile, in the store, is held by `ckpt install` and `ckpt
// uninstall` while they run: each reads, edits and writes back the
// agents' configuration files, the hook server's configuration (its
// tokens) and installDirsFile, and two at once would lose what the other
// added.
const installLockFile = "install.lock"

// lockInstall waits for the store's other installs and uninstalls, and
// keeps them waiting until unlock.
func (a *app) lockInstall() (unlock func(), err error) {
	if err := os.MkdirAll(a.store, 0o700); err != nil {
		return nil, err
	}
	l := flock.New(filepath.Join(a.store, installLockFile))
	if err := l.Lock(); err != nil {
		return nil, fmt.Errorf("lock %s: %w", quote.Path(l.Path()), err)
	}
	return func() { l.Unlock() }, nil
}

// runInstallCmd is `ckpt install [AGENT...]`: --check, or an install for
// each named agent (none: each one found).
func (a *app) runInstallCmd(ctx context.Context, args []string, o installOptions) error {
	if o.check {
		if len(args) == 1 && isChecker(args[0]) {
			return a.runCheck(args) // pi: whether pi will load the extension
		}
		return a.runInstallCheck(ctx)
	}
	if err := a.locate(context.Background()); err != nil {
		return err
	}
	names := args
	if len(names) == 0 {
		found := agent.Detect(a.workspace)
		if len(found) == 0 {
			return usagef("no agent found on $PATH, in your home directory or in %s: name one (%s)", a.workspace, strings.Join(agent.Names(), ", "))
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
	unlock, err := a.lockInstall()
	if err != nil {
		return err
	}
	defer unlock()
	if err := a.installScan(o); err != nil {
		return err
	}
	return a.eachAgent(names, func(name string) error {
		defer func() { a.scanNote = "" }() // said once
		if err := a.installAgent(name, o, true); err != nil {
			return err
		}
		if note := agent.SubdirNote(agentNamed(name), a.workspace); note != "" && !o.user {
			a.say("ckpt: note: %s", note)
		}
		return nil
	})
}

// checkInstallFlags checks install's flags together, and sets o.addr
// from --port.
func checkInstallFlags(o *installOptions, port int, args []string) error {
	if port != 0 {
		if o.addr != "" {
			return usagef("--addr and --port: give one")
		}
		if port < 1 || port > 65535 {
			return usagef("--port %d: want 1 to 65535", port)
		}
		o.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	piCheck := len(args) == 1 && isChecker(args[0])
	if o.check && ((len(args) > 0 && !piCheck) || o.http || o.statusLine || o.user || o.strict || o.noScan) {
		return usagef("--check takes no agent (but pi) and no other install flag: it checks the hooks installed here")
	}
	if (o.addr != "") && !o.http {
		return usagef("--addr and --port go with --http")
	}
	if o.http && !slices.ContainsFunc(args, hasHTTPHooks) {
		return usagef("--http is for claude (Claude Code's http hooks): name it")
	}
	if o.statusLine && !slices.ContainsFunc(args, func(n string) bool { _, ok := agentNamed(n).(agent.StatusLiner); return ok }) {
		return usagef("--statusline is for claude (Claude Code's status line)")
	}
	return nil
}

// isChecker says whether the agent named name has a check of its own
// (`ckpt install --check NAME`).
func isChecker(name string) bool {
	_, ok := agentNamed(name).(agent.Checker)
	return ok
}

// hasHTTPHooks says whether the agent named name can post its tool calls
// to the resident hook server (`ckpt install NAME --http`).
func hasHTTPHooks(name string) bool {
	_, ok := agentNamed(name).(agent.HTTPHooks)
	return ok
}

// installAgent installs (or uninstalls) the hooks of the agent named
// name for the workspace. For an agent with http hooks, --http first
// configures the hook server and gives the install its token; the hook
// server starts after, and an uninstall drops the token (stopping the
// server when no install uses it).
func (a *app) installAgent(name string, o installOptions, install bool) error {
	if err := a.locate(context.Background()); err != nil {
		return err
	}
	ag := agentNamed(name)
	env := a.agentEnv(o)
	_, http := ag.(agent.HTTPHooks)
	if http && install && o.http {
		addr, token, err := a.hookServerFor(o)
		if err != nil {
			return err
		}
		env.HTTP = &agent.HookServer{Addr: addr, Token: token}
	}
	if err := ag.Install(env, install); err != nil {
		return err
	}
	if http && install && o.http {
		if p := a.ensureHookServer(""); p != "" {
			a.say("ckpt: warning: %s", p)
		}
	}
	if http && !install {
		// The hooks are gone: so is their token.
		if root, err := a.hookRoot(o); err == nil {
			if err := hook.DropToken(a.store, root); err != nil {
				a.say("ckpt: warning: hook server configuration: %s", oneLine(err))
			}
			if cfg, ok, err := hook.LoadConfig(a.store); err == nil && ok && len(cfg.Tokens) == 0 {
				stopHookServer(a.store, cfg)
			}
		}
	}
	return nil
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
			if len(args) == 0 || slices.ContainsFunc(args, func(n string) bool { return agentNamed(n) == nil }) {
				return usagef("uninstall takes agents: %s", strings.Join(agent.Names(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			unlock, err := a.lockInstall()
			if err != nil {
				return err
			}
			defer unlock()
			err = a.eachAgent(args, func(name string) error { return a.installAgent(name, o, false) })
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

// selfCommand is how hook command lines name this binary: the bare
// "ckpt" when the ckpt found on $PATH is this very binary (it keeps
// working when a package manager upgrades the binary to a new versioned
// path), else the absolute path of this binary (Claude Code runs hooks
// through a shell whose $PATH may not hold a binary run from elsewhere).
func selfCommand() string {
	bin := "ckpt"
	self, err := os.Executable()
	if err == nil {
		onPath, perr := exec.LookPath("ckpt")
		si, err1 := os.Stat(self)
		pi, err2 := os.Stat(onPath)
		if perr != nil || err1 != nil || err2 != nil || !os.SameFile(si, pi) {
			bin = quote.Shell(self)
		}
	}
	return bin
}

// selfPath is this binary as a plugin names it (no shell in between):
// "ckpt" when that is this binary on $PATH, else its absolute path.
func selfPath() string {
	if selfCommand() == "ckpt" {
		return "ckpt"
	}
	p, err := os.Executable()
	if err != nil {
		return "ckpt"
	}
	return p
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
	return atomicfile.WriteFile(path, append(b, '\n'), 0o600)
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
	cur, had, err := hook.LoadConfig(a.store)
	if err != nil && !errors.Is(err, hook.ErrOldConfig) {
		return "", "", err
	}
	addr = o.addr
	if addr == "" && had {
		addr = cur.Addr
	}
	if addr == "" {
		// A store new to --http, or one an older ckpt set up (whose
		// server may still hold its port).
		if addr, err = hook.FreePort(); err != nil {
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
	_, token, err = hook.Configure(a.store, addr, root, o.user)
	return addr, token, err
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
