package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/agent/setup"
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
		Use: "install [AGENT...]",
		Args: func(cmd *cobra.Command, args []string) error {
			for _, n := range args {
				if setup.Named(n) == nil {
					return usagef("install takes agents: %s (none: every agent found on $PATH, in your home directory or in this workspace)", strings.Join(agent.Names(), ", "))
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return a.runInstallCmd(cmd.Context(), args, o) },
	}
	cmd.Flags().BoolVar(&o.check, "check", false, "")
	cmd.Flags().BoolVar(&o.noScan, "no-scan", false, "")
	cmd.Flags().BoolVar(&o.user, "user", false, "")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "")
	cmd.Flags().BoolVar(&o.statusLine, "statusline", false, "")
	cmd.Flags().BoolVar(&o.http, "http", false, "")
	cmd.Flags().StringVar(&o.addr, "addr", "", "")
	var port int
	cmd.Flags().IntVar(&port, "port", 0, "")
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error { return checkInstallFlags(&o, port, args) }
	return cmd
}

func newUninstallCmd(a *app) *cobra.Command {
	var o installOptions
	cmd := &cobra.Command{
		Use: "uninstall AGENT...",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || slices.ContainsFunc(args, func(n string) bool { return setup.Named(n) == nil }) {
				return usagef("uninstall takes agents: %s", strings.Join(agent.Names(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runUninstall(cmd.Context(), args, o)
		},
	}
	cmd.Flags().BoolVar(&o.user, "user", false, "")
	return cmd
}

// setupOptions are what package setup installs with, for the located
// workspace.
func (a *app) setupOptions(o installOptions) setup.Options {
	return setup.Options{Workspace: a.workspace, Store: a.store, User: o.user, Strict: o.strict, StatusLine: o.statusLine,
		HTTP: o.http, Addr: o.addr, NoScan: o.noScan, Say: a.say}
}

// runInstallCmd is `ckpt install [AGENT...]`: --check, or an install for
// each named agent (none: each one found).
func (a *app) runInstallCmd(ctx context.Context, args []string, o installOptions) error {
	if o.check {
		if len(args) == 1 && isChecker(args[0]) {
			return a.runCheck(args[0]) // pi: whether pi will load the extension
		}
		return a.runInstallCheck(ctx)
	}
	if err := a.locate(ctx); err != nil {
		return err
	}
	r, err := setup.Install(ctx, args, a.setupOptions(o))
	switch {
	case errors.Is(err, setup.ErrNoAgent):
		return usagef("no agent found on $PATH, in your home directory or in %s: name one (%s)", a.workspace, strings.Join(agent.Names(), ", "))
	case errors.Is(err, setup.ErrRootToken):
		return usageError{err}
	}
	if !a.json {
		r.WriteText(a.stdout)
		return err
	}
	return errors.Join(a.printInstallFiles(r.Files, len(r.Agents) > 1, err), err)
}

// runUninstall is `ckpt uninstall AGENT...`.
func (a *app) runUninstall(ctx context.Context, args []string, o installOptions) error {
	if err := a.locate(ctx); err != nil {
		return err
	}
	r, err := setup.Uninstall(ctx, args, a.setupOptions(o))
	switch {
	case a.json:
		return errors.Join(a.printInstallFiles(r.Files, len(r.Agents) > 1, err), err)
	case err != nil: // what it changed, not what it would have tidied after
		r.RemovedDirs, r.ScanRestored = nil, ""
	}
	r.WriteText(a.stdout)
	return err
}

// printInstallFiles prints with --json what an install or uninstall
// changed in each file: one document per file, or for several agents one
// array of them naming each agent (none when one failed: err).
func (a *app) printInstallFiles(files []setup.File, several bool, err error) error {
	if several && err == nil {
		return a.printJSON(files)
	}
	if several {
		return nil
	}
	for _, f := range files {
		f.Agent = ""
		if err := a.printJSON(f); err != nil {
			return err
		}
	}
	return nil
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
	if o.addr != "" {
		if err := checkAddr(o.addr, false); err != nil {
			return err
		}
		if _, port, _ := net.SplitHostPort(o.addr); port == "0" {
			return usagef("--addr %q: the hook server needs a fixed port", o.addr)
		}
	}
	if o.http && !slices.ContainsFunc(args, hasHTTPHooks) {
		return usagef("--http is for claude (Claude Code's http hooks): name it")
	}
	if o.statusLine && !slices.ContainsFunc(args, func(n string) bool { _, ok := setup.Named(n).(agent.StatusLiner); return ok }) {
		return usagef("--statusline is for claude (Claude Code's status line)")
	}
	return nil
}

// isChecker says whether the agent named name has a check of its own
// (`ckpt install --check NAME`).
func isChecker(name string) bool {
	_, ok := setup.Named(name).(agent.Checker)
	return ok
}

// hasHTTPHooks says whether the agent named name can post its tool calls
// to the resident hook server (`ckpt install NAME --http`).
func hasHTTPHooks(name string) bool {
	_, ok := setup.Named(name).(agent.HTTPHooks)
	return ok
}

// runCheck is `ckpt install --check NAME` for an agent with a check of
// its own. It changes nothing.
func (a *app) runCheck(name string) error {
	if err := a.locate(context.Background()); err != nil {
		return err
	}
	r, err := setup.AgentCheck(name, a.setupOptions(installOptions{}))
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(r.JSON)
	}
	for _, l := range r.Lines {
		fmt.Fprintln(a.stdout, l)
	}
	return nil
}

// runInstallCheck is `ckpt install --check`: each installed hook, in the
// workspace and for every project, run with a made-up prompt event
// against a temporary store (setup.Check); exit 1 when one does not fire.
func (a *app) runInstallCheck(ctx context.Context) error {
	if err := a.locate(ctx); err != nil {
		return err
	}
	results, err := setup.Check(ctx, a.setupOptions(installOptions{}))
	switch {
	case errors.Is(err, setup.ErrNothingInstalled) && !a.json:
		return fmt.Errorf("no agent's hooks are installed in %s: run `ckpt install`", a.workspace)
	case err != nil && !errors.Is(err, setup.ErrNothingInstalled):
		return err
	}
	if a.json {
		if err := a.printJSON(results); err != nil {
			return err
		}
	}
	failed := false
	for _, r := range results {
		failed = failed || !r.Fires
		if !a.json {
			r.WriteText(a.stdout)
		}
	}
	if failed {
		return silentError{exitFail}
	}
	return nil
}

// warnSubdir says, for a command run below the workspace, which
// installed agents started here would not run ckpt's hooks.
func (a *app) warnSubdir() {
	cwd, err := os.Getwd()
	if err != nil {
		return
	}
	for _, n := range setup.SubdirNotes(a.workspace, cwd) {
		a.say("ckpt: warning: %s", n)
	}
}
