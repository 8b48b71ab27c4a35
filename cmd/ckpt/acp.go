package main

import (
	"context"
	"log/slog"
	"os/exec"
	"sync"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/acpproxy"
)

func newACPCmd(a *app) *cobra.Command {
	var noScan bool
	cmd := &cobra.Command{
		Use: "acp [--no-scan] -- AGENT_CMD [ARGS]",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("acp takes the agent's command after -- (ckpt acp -- gemini --acp)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.serveACP(cmd.Context(), args, noScan)
		},
	}
	cmd.Flags().BoolVar(&noScan, "no-scan", false, "")
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// serveACP runs the agent behind the proxy until the agent's output ends.
func (a *app) serveACP(ctx context.Context, agent []string, noScan bool) error {
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store := controller.OpenStore(a.store) // one blob store for every session of the proxy
	defer store.Close()
	var mu sync.Mutex // the proxy opens sessions from both streams' goroutines
	p := acpproxy.New(acpproxy.Options{Store: store, Logger: log, NoScan: noScan,
		Open: func(ctx context.Context, ws, id string) (*controller.Controller, error) {
			mu.Lock()
			defer mu.Unlock()
			recovered := ""
			c, err := store.Open(ctx, controller.Options{Workspace: ws, Session: id, Recovered: func(what string) { recovered = what }})
			return a.opened(c, err, recovered)
		}})
	cmd := exec.CommandContext(ctx, agent[0], agent[1:]...)
	cmd.Stderr = a.stderr
	return p.Run(ctx, cmd, a.stdin, a.stdout)
}
