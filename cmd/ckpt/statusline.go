package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newStatusLineCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:  "statusline",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(a.stdout, a.statusLine(cmd.Context()))
			return nil
		},
	}
}

// statusLine reads the agent's JSON on stdin (not from a terminal) and
// returns the line for it (hook.Handler's StatusLine).
func (a *app) statusLine(ctx context.Context) string {
	var data []byte
	if a.stdin != nil {
		if !terminal(a.stdin, false) {
			data, _ = io.ReadAll(io.LimitReader(a.stdin, 1<<20))
		}
	}
	return a.hookHandler().StatusLine(ctx, a.session, data)
}
