package main

import (
	"context"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/spf13/cobra"
)

// diffOptions are diff's arguments.
type diffOptions struct {
	turn int
	step int // a step of turn (TURN.STEP), 0 for its start
}

func newDiffCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:  "diff TURN[.STEP]",
		Args: exactArgs(1, "one TURN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := parsePoint(args[0])
			if err != nil {
				return err
			}
			return a.runDiff(cmd.Context(), diffOptions{turn: p.Turn, step: p.Step})
		},
	}
}

// runDiff prints what a code rewind to o.turn would change.
func (a *app) runDiff(ctx context.Context, o diffOptions) error {
	turn := o.turn
	c, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	pt := controller.Target{Turn: turn, Step: o.step}
	diffs, skipped, err := c.Diff(ctx, pt)
	if err != nil {
		return err
	}
	doc := wire.NewDiff(pt, diffs, skipped)
	if a.json {
		return a.printJSON(doc)
	}
	wire.WriteDiff(a.stdout, a.stderr, pt, diffs, skipped)
	return nil
}
