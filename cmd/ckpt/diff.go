package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// diffOptions are diff's arguments.
type diffOptions struct {
	turn int
}

func newDiffCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "diff TURN",
		Short: "Show the unified diff of what `rewind TURN --scope code` would change",
		Long: `Show, as a unified diff from the current files (a/) to the rewound ones (b/),
what "ckpt rewind TURN --scope code" would change. Nothing is changed.`,
		Args: exactArgs(1, "one TURN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			turn, err := parseTurn(args[0])
			if err != nil {
				return err
			}
			return a.runDiff(cmd.Context(), diffOptions{turn: turn})
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
	diffs, skipped, err := c.Diff(ctx, turn)
	if err != nil {
		return err
	}
	if a.json {
		doc := map[string]any{"turn": turn, "files": diffs, "skipped": skipped}
		var paths []string
		for _, d := range diffs {
			paths = append(paths, d.Path)
		}
		for _, sk := range skipped {
			paths = append(paths, sk.Path)
		}
		if m := pathBytesMap(paths); m != nil {
			doc["path_bytes"] = m
		}
		return a.printJSON(doc)
	}
	for _, d := range diffs {
		// A git-style header: the path, and mode lines when the
		// mode changes (old mode 100644 / new mode 100755).
		fmt.Fprintf(a.stdout, "diff --git %s %s\n%s", qpath("a/"+d.Path), qpath("b/"+d.Path), d.Header())
		switch {
		case d.Unified != "":
			fmt.Fprint(a.stdout, d.Unified)
		case d.Note != "":
			fmt.Fprintf(a.stdout, "%s %s: %s\n", d.Action, qpath(d.Path), d.Note)
		}
	}
	for _, s := range skipped {
		a.say("skip %s: %s", qpath(s.Path), s.Reason)
	}
	if len(diffs) == 0 {
		a.say("rewinding code to turn %d would change nothing", turn)
	}
	return nil
}
