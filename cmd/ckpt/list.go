package main

import (
	"context"
	"errors"
	"os"
	"runtime/debug"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/spf13/cobra"
)

// listPage is how many turns `ckpt list` shows on a terminal when neither
// --limit nor --since is given.
const listPage = 50

func newListCmd(a *app) *cobra.Command {
	var limit, since int
	var steps bool
	cmd := &cobra.Command{
		Use:  "list",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := listOptions{limit: limit, since: -1, steps: steps}
			if limit < 0 {
				return usagef("list: --limit must be 0 (all) or more, not %d", limit)
			}
			if cmd.Flags().Changed("since") {
				if since < 0 {
					return usagef("list: --since must be a turn number, not %d", since)
				}
				o.since = since
			}
			// On a terminal, with neither flag, one screenful.
			o.page = !a.json && !cmd.Flags().Changed("limit") && !cmd.Flags().Changed("since") && terminal(a.stdout, false)
			return a.runList(cmd.Context(), o)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "")
	cmd.Flags().IntVar(&since, "since", 0, "")
	cmd.Flags().BoolVar(&steps, "steps", false, "")
	return cmd
}

// listOptions are list's flags: limit turns (0: all) from turn since (-1:
// the newest limit); page shows the newest listPage when limit is 0.
type listOptions struct {
	limit, since int
	page         bool
	steps        bool
}

// runList prints the active turns, oldest first, with their files. A list
// of every turn (no --limit, not a terminal's page) is printed as it is
// read, so its memory does not grow with the history.
func (a *app) runList(ctx context.Context, o listOptions) error {
	page := controller.ListOptions{Since: o.since, Limit: o.limit, Steps: o.steps}
	if o.page {
		page.Limit = listPage
	}
	c, err := a.open(ctx)
	if errors.As(err, new(noSessionYet)) {
		return a.emptyList(err)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	out := wire.NewCheckpointList(a.stdout, a.json)
	var total, last int // of the active history: its turns, the newest one's number
	if page.Limit <= 0 {
		if exitAfterRun && os.Getenv("GOGC") == "" {
			// main's GOGC of 400 lets the heap grow to 16 MiB of
			// garbage before the first collection; printed as it is
			// read, the list's live heap stays near 1 MiB, so at 100
			// the collector keeps peak RSS about 10 MiB lower (50,000
			// turns: 39 -> 30 MiB, for ~10% more CPU).
			debug.SetGCPercent(100)
		}
		_, info, err := c.Checkpoints(ctx, controller.ListOptions{Since: max(page.Since, 0), Each: out.Add, Steps: o.steps})
		if err != nil {
			return err
		}
		total, last = info.Total, info.Last
	} else {
		cps, info, err := c.Checkpoints(ctx, page)
		for i := 0; err == nil && i < len(cps); i++ {
			err = out.Add(cps[i])
		}
		if err != nil {
			return err
		}
		total, last = info.Total, info.Last
	}
	return out.Finish(a.stderr, total, last, page.Since)
}
