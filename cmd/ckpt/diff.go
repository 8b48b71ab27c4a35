package main

import (
	"context"
	"fmt"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/quote"
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
	for _, d := range doc.Files {
		// A git-style header: the path, and mode lines when the
		// mode changes (old mode 100644 / new mode 100755).
		fmt.Fprintf(a.stdout, "diff --git %s %s\n%s", quote.Path("a/"+d.Path), quote.Path("b/"+d.Path), d.Header())
		switch {
		case d.Unified != "":
			fmt.Fprint(a.stdout, d.Unified)
		case d.Note != "":
			fmt.Fprintf(a.stdout, "%s %s: %s\n", d.Action, quote.Path(d.Path), d.Note)
		}
	}
	for _, s := range skipped {
		a.say("skip %s: %s", quote.Path(s.Path), s.Reason)
	}
	switch {
	case len(diffs) == 0 && len(skipped) > 0:
		a.say("rewinding code to %s would restore nothing: every path that differs would be skipped (above)", pointName(pt))
	case len(diffs) == 0:
		a.say("rewinding code to %s would change nothing", pointName(pt))
	case len(skipped) > 0:
		a.say("rewinding code to %s would leave %d path(s) as they are (above)", pointName(pt), len(skipped))
	}
	return nil
}
