package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/controller"
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
	if err := a.claudeSession(ctx); err != nil {
		return err
	}
	open := a.open
	if a.record {
		open = a.openRecord // Claude's own session, which its hooks record into
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

// claudeSession, under Claude Code with no session named, takes Claude's
// session id, which ckpt's Claude hooks use as the ckpt session, and, while
// that session does not exist yet, Claude's project directory as the
// workspace when the current directory is inside it (as the hooks do).
func (a *app) claudeSession(ctx context.Context) error {
	id := os.Getenv("CLAUDE_CODE_SESSION_ID")
	if a.session != "" || id == "" || !controller.ValidSession(id) {
		return nil
	}
	a.session, a.named, a.record = id, true, true
	if a.workspace != "" {
		return nil
	}
	if loc, err := controller.OpenStore(a.store).Resolve(ctx, controller.ResolveOptions{Session: id, Create: true}); err != nil || loc.OfSession {
		return err
	}
	proj := os.Getenv("CLAUDE_PROJECT_DIR")
	wd, err := os.Getwd()
	if proj == "" || !filepath.IsAbs(proj) || err != nil {
		return nil
	}
	if rel, err := filepath.Rel(proj, wd); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		a.workspace = proj
	}
	return nil
}
