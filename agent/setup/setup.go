// Package setup installs, removes and checks ckpt's hooks in the coding
// agents' configuration, for a list of agents at once, and returns what
// it did as a Report: what changed in each file, which agents were
// detected, what became of the workspace's scan mode, which installed
// hooks fire; the Report, its Files and Check's Probes word themselves
// for people (WriteText). It is what `ckpt install`, `ckpt uninstall` and
// `ckpt install --check` do, for a desktop app as for the CLI; each agent's own
// configuration format is package agent's, the resident hook server an
// http install posts to is package hook's.
package setup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/gofrs/flock"
)

// Options say where and how to install.
type Options struct {
	// Workspace is the workspace's root directory (controller's
	// WorkspaceRoot): where a workspace install writes, and the workspace
	// whose scan mode an install turns on.
	Workspace string
	// Store is the store's directory: it keeps the hook server's
	// configuration and what install changed, for uninstall to put back.
	Store string
	// User installs into the agents' configuration for every project
	// (under the home directory) instead of the workspace's.
	User bool
	// Strict installs hooks that block a tool call whose capture fails.
	Strict bool
	// StatusLine also sets the agent's status line (agents that are
	// agent.StatusLiners).
	StatusLine bool
	// HTTP makes the hot-path hook an HTTP hook to the resident hook
	// server at Addr (agents that are agent.HTTPHooks); "" Addr: the one
	// the store has, else a free port. Addr must be a loopback HOST:PORT
	// with a fixed port.
	HTTP bool
	Addr string
	// NoScan leaves the workspace's scan mode as it is.
	NoScan bool
	// Exe is the ckpt executable the hooks run; "" is this process's.
	Exe string
	// Say receives notes and warnings for the user, one line each; nil
	// discards them.
	Say func(format string, args ...any)
}

func (o *Options) say(format string, args ...any) {
	if o.Say != nil {
		o.Say(format, args...)
	}
}

// ErrNoAgent is Install's error when no agent is named and none is found.
var ErrNoAgent = errors.New("no agent found on $PATH, in your home directory or in the workspace")

// ErrRootToken is the error of an http install at a filesystem root: its
// token would be good for every directory.
var ErrRootToken = errors.New("a hook token for the filesystem root would be good for every directory")

// Named returns the agent of `ckpt install|uninstall NAME` (one of
// agent.Names), or nil.
func Named(name string) agent.Agent {
	if ag, ok := agent.Lookup(name); ok && slices.Contains(agent.Names(), name) {
		return ag
	}
	return nil
}

// installLockFile, in the store, is held by Install and Uninstall while
// they run: each reads, edits and writes back the agents' configuration
// files, the hook server's configuration (its tokens) and installDirsFile,
// and two at once would lose what the other added.
const installLockFile = "install.lock"

// lock waits for the store's other installs and uninstalls, and keeps
// them waiting until unlock.
func (o *Options) lock() (unlock func(), err error) {
	if err := os.MkdirAll(o.Store, 0o700); err != nil {
		return nil, err
	}
	l := flock.New(filepath.Join(o.Store, installLockFile))
	if err := l.Lock(); err != nil {
		return nil, fmt.Errorf("lock %s: %w", quote.Path(l.Path()), err)
	}
	return func() { l.Unlock() }, nil
}

// exe is the ckpt executable the hooks run: Options.Exe, else this
// process's.
func (o *Options) exe() string {
	if o.Exe != "" {
		return o.Exe
	}
	p, err := os.Executable()
	if err != nil {
		return "ckpt"
	}
	return p
}

// command is how hook command lines name the ckpt executable exe: the
// bare "ckpt" when the ckpt found on $PATH is that very file (it keeps
// working when a package manager upgrades the binary to a new versioned
// path), else its absolute path, quoted (Claude Code runs hooks through a
// shell whose $PATH may not hold a binary run from elsewhere).
func command(exe string) string {
	onPath, perr := exec.LookPath("ckpt")
	si, err1 := os.Stat(exe)
	pi, err2 := os.Stat(onPath)
	if perr != nil || err1 != nil || err2 != nil || !os.SameFile(si, pi) {
		return quote.Shell(exe)
	}
	return "ckpt"
}

// env is what an agent's Install or Check works with: the workspace, how
// hooks name ckpt, and where messages go; report receives each change.
func (o *Options) env(report func(agent.Change) error) *agent.Env {
	exe := o.exe()
	cmd := command(exe)
	if cmd == "ckpt" {
		exe = "ckpt" // a plugin names it with no shell in between
	}
	return &agent.Env{
		Workspace:  o.Workspace,
		User:       o.User,
		Strict:     o.Strict,
		Command:    cmd,
		Exe:        exe,
		StatusLine: o.StatusLine,
		Mkdir:      o.mkdir,
		Report:     report,
		Say:        o.Say,
	}
}
