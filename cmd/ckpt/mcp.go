package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller/mcpserver"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/ckpt/ckpt/internal/version"
)

func newMCPCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:  "mcp",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.serveMCP(cmd)
		},
	}
}

// serveMCP runs the MCP server on a's streams until the client hangs up
// or the context ends, with one controller for its whole life.
func (a *app) serveMCP(cmd *cobra.Command) error {
	ctx := cmd.Context()
	if err := a.agentSession(ctx); err != nil {
		return err
	}
	open := a.open
	if a.record {
		open = a.openRecord // the agent's own session, which its hooks record into
	}
	c, err := open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := mcpserver.New(c, mcpserver.Options{Version: version.Read().Version, Logger: log})
	a.say("ckpt: serving session %s of %s (store %s) as MCP tools on stdio", c.Session(), quote.Path(c.WorkspaceRoot()), quote.Path(c.Store().Dir()))
	err = srv.Run(ctx, mcpserver.Stdio(ctx, a.stdin, a.stdout))
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil // the client hung up, or we were told to stop
	}
	return err
}

// agentSession, under an agent that exports its session id (Claude
// Code) and with no session named, takes that id and, while that session
// does not exist yet, the agent's project directory as the workspace when
// the current directory is inside it (hook.MCPSession, as the hooks do).
func (a *app) agentSession(ctx context.Context) error {
	if a.session != "" {
		return nil
	}
	var wd string
	if a.workspace == "" {
		wd, _ = os.Getwd()
	}
	id, ws, ok, err := hook.MCPSession(ctx, a.store, wd, os.Getenv)
	if ok {
		a.session, a.named, a.record = id, true, true
	}
	if a.workspace == "" {
		a.workspace = ws
	}
	return err
}
