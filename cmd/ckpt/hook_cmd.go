package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/remote"
	"github.com/spf13/cobra"
)

type hookOptions struct {
	ag agent.Agent
	hook.RunOptions
}

func newHookCmd(a *app) *cobra.Command {
	var o hookOptions
	cmd := &cobra.Command{
		Use: "hook claude|generic|AGENT",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if _, ok := agent.Lookup(args[0]); ok {
					return nil
				}
			}
			return usagef("hook takes the agent: %s or generic (see ckpt hook --help)", strings.Join(agent.Names(), ", "))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ag, _ = agent.Lookup(args[0])
			return a.runHook(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "")
	cmd.Flags().BoolVar(&o.StartServer, "start-server", false, "")
	return cmd
}

// runHook handles one event (hook.Handler's Run). Every problem ends as
// one stderr line; only a blocking one changes the exit code (2, which
// Claude Code reads as "block the tool call and show stderr to the
// model").
func (a *app) runHook(ctx context.Context, o hookOptions) error {
	exe, _ := os.Executable()
	o.Exe, o.Getenv = exe, os.Getenv
	f := a.hookHandler().Run(ctx, o.ag, o.RunOptions, a.stdin, a.stdout)
	if f == nil {
		return nil
	}
	a.say("ckpt: hook: %s", f.Msg)
	if f.Block {
		return silentError{exitUsage}
	}
	return nil
}

// hookHandler is the hook of this process's store: its warnings go to
// stderr, its syncs start `ckpt sync` in the background.
func (a *app) hookHandler() *hook.Handler {
	return &hook.Handler{Store: a.store, Say: a.say, Sync: a.startSync, ExitAfterClose: exitAfterRun}
}

// startSync starts `ckpt sync` in the background (hook.StartDetached)
// when the store has a remote and no background sync of it is running.
// No remote configured: nothing happens.
func (a *app) startSync() {
	if _, err := remote.LoadConfig(a.store); err != nil {
		if !errors.Is(err, remote.ErrNoRemote) {
			a.say("ckpt: hook: warning: remote: %s; not syncing", msg.OneLine(err))
		}
		return
	}
	exe, err := os.Executable()
	if err == nil {
		err = hook.StartDetached(a.store, exe, hook.SyncLockFile, hook.SyncLogFile, "sync")
	}
	if err != nil {
		a.say("ckpt: hook: warning: background sync: %s", msg.OneLine(err))
	}
}
