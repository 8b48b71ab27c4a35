package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"

	"github.com/spf13/cobra"
)

func newStatusLineCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "statusline",
		Short: "Print one short line for Claude Code's statusLine (its JSON on stdin)",
		Long: `Read the JSON Claude Code sends its statusLine command on stdin and print
one line: the checkpoints in this session, whether scan mode is on,
whether "ckpt undo" has something to undo, and, inside Claude Code, how to
rewind: /ckpt-rewind TURN when "ckpt install claude" gave Claude Code that
command, and after it rewound the files to a turn, the command that
rewinds the conversation to that turn too. With no JSON on stdin it
reports the session the global flags select. It never fails: a problem
prints a short line and exits 0, so the status bar never shows an error.
"ckpt install claude --statusline" sets it up.`,
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
		if f, ok := a.stdin.(*os.File); !ok || !isatty.IsTerminal(f.Fd()) {
			data, _ = io.ReadAll(io.LimitReader(a.stdin, 1<<20))
		}
	}
	return a.hookHandler().StatusLine(ctx, a.session, data)
}
