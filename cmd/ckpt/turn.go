package main

import (
	"context"
	"fmt"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/spf13/cobra"
)

// turnOptions are turn's argument and flags.
type turnOptions struct {
	prompt string
	scan   bool
}

func newTurnCmd(a *app) *cobra.Command {
	var o turnOptions
	cmd := &cobra.Command{
		Use: "turn PROMPT|-",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("turn takes a PROMPT (see ckpt turn --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt, err := a.textArg(args, "the prompt")
			if err != nil {
				return err
			}
			o.prompt = prompt
			return a.runTurn(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.scan, "scan", false, "")
	return cmd
}

// runTurn opens the next turn and prints its number.
func (a *app) runTurn(ctx context.Context, o turnOptions) error {
	c, err := a.openRecord(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	bar := a.progress("scanning the workspace (files)", -1)
	res, err := c.BeginTurn(ctx, o.prompt, controller.TurnOptions{Scan: o.scan, Progress: bar.Count()})
	bar.Done()
	if err != nil {
		return err
	}
	if res.Warning != "" {
		a.say("ckpt: warning: %s", res.Warning)
	}
	if s := msg.SkipNote(res); s != "" {
		a.say("ckpt: warning: %s", s)
	}
	if a.json {
		out := map[string]any{"turn": res.Turn, "scanned": res.Scanned}
		if res.Scan != nil {
			out["scan"] = map[string]any{"files": len(res.Scan.Manifest.Files), "read": res.Scan.Read,
				"reused": res.Scan.Reused, "skipped": res.Scan.Manifest.Skips}
		}
		return a.printJSON(out)
	}
	fmt.Fprintln(a.stdout, res.Turn)
	return nil
}
